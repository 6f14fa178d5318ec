//! A run's edges: a bad scenario refused before anything is created, and nothing left behind
//! (processes, namespaces, root-namespace state) after a run or a killed one.

use super::*;

#[test]
fn invalid_scenario_is_refused_with_file_line_and_field_before_anything_is_created() {
    let _g = lock();
    let dir = scratch("invalid");
    let file = dir.join("bad.toml");
    std::fs::write(&file, UDP_DT300.replace("\"droptail\"", "\"blue\"")).unwrap();
    let out = dir.join("out");
    let o = netlab()
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml:6:"), "{err}");
    assert!(err.contains("blue"), "{err}");
    assert!(
        !out.exists(),
        "nothing may be created for an invalid scenario"
    );
    // A flow without endpoints.
    std::fs::write(&file, UDP_DT300.replace("from = \"s1\"\n", "")).unwrap();
    let o = netlab()
        .args(["check", file.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("flows[0].from"), "{err}");
    cleanup("invalid");
}

#[test]
fn a_killed_run_leaves_no_process_or_namespace_behind() {
    let _g = lock();
    let dir = scratch("kill");
    let file = dir.join("long.toml");
    std::fs::write(&file, UDP_DT300.replace("\"12s\"", "\"60s\"")).unwrap();
    let out = dir.join("out");
    let needle = out.to_str().unwrap().to_owned();
    let mut child = netlab()
        .args(["run", file.to_str().unwrap(), "--out", &needle, "--quiet"])
        .spawn()
        .unwrap();
    // Wait until the forwarder and traffic run inside the namespaces.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let p = processes_mentioning(&needle);
        if p.iter().any(|l| l.contains("__forward")) && out.join("raw/bottleneck.log").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        processes_mentioning(&needle)
            .iter()
            .any(|l| l.contains("__forward")),
        "the run should be going"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let start = Instant::now();
    let mut left = processes_mentioning(&needle);
    while !left.is_empty() && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
        left = processes_mentioning(&needle);
    }
    assert!(left.is_empty(), "left behind: {left:?}");
    // The namespaces lived only in the run's private mount namespace.
    if let Ok(entries) = std::fs::read_dir("/run/netns") {
        for e in entries.flatten() {
            assert!(!e.file_name().to_string_lossy().starts_with("nl"), "{e:?}");
        }
    }
    cleanup("kill");
}

#[test]
fn nothing_is_left_in_the_root_namespace_after_runs() {
    let _g = lock();
    let links = || {
        std::fs::read_dir("/sys/class/net")
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let before = links();
    let (_, out) = run("clean", &UDP_DT300.replace("\"12s\"", "\"2s\""));
    assert_eq!(
        links(),
        before,
        "no interface may leak into the root namespace"
    );
    assert!(processes_mentioning(out.to_str().unwrap()).is_empty());
    cleanup("clean");
}
