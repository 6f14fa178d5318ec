//! The environment cargo gives one package's build, run or test.

/// Whether `key` is one of the variables cargo sets for one package's build, `cargo run` or
/// test (not the user's cargo configuration such as `CARGO_HOME` or `CARGO_TARGET_DIR`),
/// `OUT_DIR` included where the package has a build script. A
/// cargo started from such a process must not inherit them: build scripts that watch one
/// (ring's does) would see it differ from a cargo started from a shell and rebuild.
pub fn is_per_package_cargo_var(key: &str) -> bool {
    [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
    ]
    .iter()
    .any(|p| key.starts_with(p))
        || matches!(
            key,
            "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR"
        )
}

#[cfg(test)]
mod tests {
    use super::is_per_package_cargo_var;

    #[test]
    fn only_the_per_package_variables_are_dropped() {
        for k in [
            "CARGO_PKG_NAME",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
            "CARGO_BIN_EXE_netlab",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            // A package with a build script runs its tests with it set; ring's build script
            // watches it.
            "OUT_DIR",
        ] {
            assert!(is_per_package_cargo_var(k), "{k}");
        }
        for k in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_JOBS",
            "PATH",
        ] {
            assert!(!is_per_package_cargo_var(k), "{k}");
        }
    }
}
