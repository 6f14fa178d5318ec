//! cg media flows: the project's own sender and receiver binaries (`cg-send`, `cg-recv`),
//! run in the hosts' namespaces with the flow's controller and ECN mode.
//!
//! They are looked up next to the `netlab` executable (a workspace build puts them there),
//! then on `PATH`. The sender is started at its start time by `netlab __exec-at`, which sleeps
//! until t0 + start and then executes it; the receiver runs for the whole run and is stopped
//! with SIGTERM (it then ends its session cleanly).

use std::path::PathBuf;

/// Paths of `cg-send` and `cg-recv`.
pub fn binaries() -> Result<(PathBuf, PathBuf), String> {
    let find = |name: &str| -> Option<PathBuf> {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|d| d.join(name)))
            .filter(|p| p.is_file());
        beside.or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
    };
    match (find("cg-send"), find("cg-recv")) {
        (Some(s), Some(r)) => Ok((s, r)),
        _ => Err(
            "kind `cg` needs the cg-send and cg-recv binaries (issue #9): build them \
                  (`cargo build --release -p cg-sender -p cg-receiver`) so they sit next to \
                  netlab, or put them on PATH"
                .to_owned(),
        ),
    }
}

/// The `--ecn` value cg-send takes for a scenario ECN setting.
pub fn ecn_arg(e: crate::scenario::EcnSetting) -> &'static str {
    match e {
        crate::scenario::EcnSetting::NotEct => "off",
        crate::scenario::EcnSetting::Ect0 => "ect0",
        crate::scenario::EcnSetting::Ect1 => "l4s",
    }
}

/// Debian's `chromium` (installed by `cargo xtask setup`).
pub fn chromium() -> Result<PathBuf, String> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
                .find(|p| p.is_file())
        })
        .ok_or_else(|| {
            "webrtc = \"chromium\" needs Chromium: `cargo xtask setup` installs Debian's \
             `chromium`"
                .to_owned()
        })
}

/// Headless Chromium as root in a namespace, playing a page without a user gesture, with
/// `profile` as its throw-away profile directory. Its host candidates stay hidden behind mDNS
/// names, as for any user: cg does not resolve them, and ICE learns Chromium's address from
/// its connectivity checks (a peer-reflexive candidate) — the case a real viewer brings.
pub fn chromium_args(profile: &std::path::Path) -> Vec<String> {
    [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--autoplay-policy=no-user-gesture-required",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect()
}
