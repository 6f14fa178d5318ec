//! For the workspace's end-to-end tests: the cg programs a test runs, built from the code
//! under test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Builds the cargo `packages` (their binaries: `cg-sender` gives `cg-send`) with `cargo`
/// (a test passes `env!("CARGO")`) into the directory of `next_to`, a binary of the test's
/// own crate (`env!("CARGO_BIN_EXE_…")`) — so they come from the same target directory and
/// profile — and returns that directory. Always through cargo, a no-op when they are up to
/// date, because a binary left from an older build would test old code; once per process
/// for each set of packages.
///
/// # Panics
/// If cargo cannot run or the build fails: the test cannot go on without the programs.
pub fn build_next_to(cargo: &str, next_to: &Path, packages: &[&str]) -> PathBuf {
    static BUILT: Mutex<Vec<Vec<String>>> = Mutex::new(Vec::new());
    let dir = next_to
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let key: Vec<String> = packages.iter().map(|p| (*p).to_owned()).collect();
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.contains(&key) {
        return dir;
    }
    let mut cmd = Command::new(cargo);
    // cargo runs a test with its package's `CARGO_MANIFEST_DIR` set; a build script that
    // watches that variable (ring's does) would see it change from the outer build and rerun,
    // rebuilding ring and all above it (about a minute in CI).
    cmd.env_remove("CARGO_MANIFEST_DIR");
    cmd.arg("build");
    for p in packages {
        cmd.args(["-p", p]);
    }
    if dir.ends_with("release") {
        cmd.arg("--release");
    }
    let ok = cmd.status().map(|s| s.success());
    assert!(
        matches!(ok, Ok(true)),
        "building {packages:?} next to {} failed: {ok:?}",
        next_to.display()
    );
    built.push(key);
    dir
}
