//! For the workspace's tests: the cg programs an end-to-end test runs, built from the code
//! under test ([`build_next_to`]), and the judge of a scenario's figures over many seeds or
//! runs ([`Spread`]), which the simulated and the end-to-end scenarios share.

mod spread;

pub use spread::{Spread, repetitions};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The environment variable with the `cargo build` arguments for [`build_next_to`] (see
/// there); the test's own profile is added.
pub const BUILD_ARGS_ENV: &str = "CG_TEST_PROGRAMS_BUILD_ARGS";

/// Builds the cargo `packages` (their binaries: `cg-sender` gives `cg-send`) with `cargo`
/// (a test passes `env!("CARGO")`) into the directory of `next_to`, a binary of the test's
/// own crate (`env!("CARGO_BIN_EXE_…")`) — so they come from the same target directory and
/// profile — and returns that directory. Always through cargo, a no-op when they are up to
/// date, because a binary left from an older build would test old code; once per process
/// for each set of packages.
///
/// `features` (`package/feature`) are those the test needs of the programs, e.g. a fault to
/// inject. With [`BUILD_ARGS_ENV`] set (by `cargo xtask test`),
/// cargo gets those arguments instead of `-p` for each package and the features: the same
/// package selection and features as the `cargo test` that runs the test, so this build is
/// up to date already rather than resolving features for the two packages alone and
/// compiling most of the tree again. The arguments must build `packages`' binaries with
/// `features`.
///
/// # Panics
/// If cargo cannot run or the build fails: the test cannot go on without the programs.
pub fn build_next_to(cargo: &str, next_to: &Path, packages: &[&str], features: &[&str]) -> PathBuf {
    static BUILT: Mutex<Vec<Vec<String>>> = Mutex::new(Vec::new());
    let dir = next_to
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let key: Vec<String> = packages
        .iter()
        .chain(features)
        .map(|p| (*p).to_owned())
        .collect();
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if built.contains(&key) {
        return dir;
    }
    let mut cmd = Command::new(cargo);
    // cargo runs a test with its package's variables set (`CARGO_PKG_NAME`,
    // `CARGO_MANIFEST_DIR`, …); a build script that watches one (ring's does) would see it
    // differ from the `cargo test` that built it and rerun, rebuilding ring and all above it.
    // `cargo xtask` starts its cargo commands without them too, so neither side has them.
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(crate::is_per_package_cargo_var) {
            cmd.env_remove(key);
        }
    }
    cmd.arg("build");
    match std::env::var(BUILD_ARGS_ENV) {
        Ok(args) if !args.trim().is_empty() => {
            cmd.args(args.split_whitespace());
        }
        _ => {
            for p in packages {
                cmd.args(["-p", p]);
            }
            if !features.is_empty() {
                cmd.args(["--features", &features.join(",")]);
            }
        }
    }
    // The profile is the directory's name, `debug` standing for `dev`.
    match dir.file_name().and_then(|n| n.to_str()) {
        Some(profile) if profile != "debug" => {
            cmd.args(["--profile", profile]);
        }
        _ => {}
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
