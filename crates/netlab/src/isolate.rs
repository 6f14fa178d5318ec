//! Isolation: every run happens inside a fresh user + network + mount + PID namespace
//! (`unshare --user --map-root-user --net --mount --pid --fork --kill-child --mount-proc`).
//!
//! The runner is PID 1 of that PID namespace; every namespace, veth, TUN and helper process
//! of the run lives below it, and `/run/netns` is a private tmpfs. When the runner exits —
//! normally, by error, by panic, or because `netlab` itself was SIGKILLed (the `unshare`
//! child is tied to us with `PR_SET_PDEATHSIG`, and `--kill-child` ties the runner to
//! `unshare`) — the kernel kills every process of the PID namespace and frees every network
//! namespace, so nothing is left behind. `unshare(CLONE_NEWUSER)` is refused to
//! multi-threaded processes (the cargo test harness is one), which is why the runner is a
//! separate process rather than a call.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use crate::{Error, Result};

/// Starts `netlab ARGS…` (this executable) isolated as described above.
pub fn spawn(args: &[String]) -> Result<Child> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current_exe", e))?;
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--user",
        "--map-root-user",
        "--net",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
    ])
    .arg(exe)
    .args(args)
    .stdin(Stdio::null());
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            crate::sys::die_with_parent();
            // The whole run at a high priority (nice −15, inherited by everything below) when
            // we may (root): the forwarder's timing should not suffer from compile jobs.
            // Unprivileged, this fails harmlessly.
            libc::setpriority(libc::PRIO_PROCESS, 0, -15);
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| Error::io("cannot start unshare (util-linux)", e))
}

/// Inside the isolated runner: gives `ip netns` a private, writable `/run/netns`.
pub fn private_netns_dir() -> Result<()> {
    let mount_tmpfs = |target: &str| -> Result<()> {
        let t = std::ffi::CString::new(target).expect("static path without NUL");
        let fstype = c"tmpfs";
        // SAFETY: all pointers are valid NUL-terminated strings; data is null.
        let rc = unsafe {
            libc::mount(
                fstype.as_ptr(),
                t.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            return Err(Error::last_os(format!("mount tmpfs on {target}")));
        }
        Ok(())
    };
    if std::fs::create_dir_all("/run/netns").is_ok() {
        mount_tmpfs("/run/netns")
    } else {
        // Unprivileged: /run is not writable; shadow it in our private mount namespace.
        mount_tmpfs("/run")?;
        std::fs::create_dir_all("/run/netns").map_err(|e| Error::io("mkdir /run/netns", e))
    }
}
