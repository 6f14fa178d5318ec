//! A sweep through a real single-node Slurm: the test starts Debian's munge and slurm-wlm
//! (installed by `cargo xtask setup`) in a temporary directory of its own — its key, socket,
//! state, spool, logs and ports — submits `crates/netlab/sweeps/sweep.sbatch` as a job array,
//! waits for it, and collects the points. Where Slurm cannot start, the failure says why
//! (the daemon's own log). Every daemon is stopped and the directory removed on success,
//! failure and panic.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The daemons and the directory of one test cluster, torn down on drop.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first (their tasks are children of slurmd), then the daemons.
        let _ = Command::new("scancel")
            .env("SLURM_CONF", &self.conf)
            .args(["--user", "root"])
            .stderr(Stdio::null())
            .status();
        for (_, child) in self.daemons.iter_mut().rev() {
            // SAFETY: kill(2) on a child we spawned.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| format!("({e})"));
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

fn installed(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn slurm(cluster: &Cluster, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .env("SLURM_CONF", &cluster.conf)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// Starts munged, slurmctld and slurmd for one node named after this host.
fn start() -> Cluster {
    for p in ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"] {
        assert!(
            installed(p),
            "{p} is not installed: Slurm needs Debian's slurm-wlm and munge (`cargo xtask setup` installs them)"
        );
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("netlab-slurm-{}-{stamp}", std::process::id()));
    for sub in ["munge", "state", "spool", "log"] {
        std::fs::create_dir_all(dir.join(sub)).expect("a temporary directory");
    }
    let conf = dir.join("slurm.conf");
    let mut cluster = Cluster {
        dir: dir.clone(),
        conf: conf.clone(),
        daemons: Vec::new(),
    };
    // munge: a fresh key (munged wants it private), our own socket.
    use std::os::unix::fs::PermissionsExt;
    let munge = dir.join("munge");
    std::fs::set_permissions(&munge, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut key = vec![0u8; 1024];
    {
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .expect("random bytes for the munge key");
    }
    let key_file = munge.join("munge.key");
    std::fs::write(&key_file, &key).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o400)).unwrap();
    let socket = munge.join("sock");
    let munged = Command::new("munged")
        .arg("--force")
        .arg("--foreground")
        .arg(format!("--key-file={}", key_file.display()))
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--pid-file={}", munge.join("pid").display()))
        .arg(format!("--log-file={}", munge.join("log").display()))
        .arg(format!("--seed-file={}", munge.join("seed").display()))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("log/munged.out")).unwrap())
        .spawn()
        .expect("munged starts");
    cluster.daemons.push(("munged", munged));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "munged did not create its socket within 10 s:\n{}",
            tail(&dir.join("log/munged.out"))
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let d = dir.display();
    let conf_text = format!(
        "ClusterName=netlabtest\n\
         SlurmctldHost={host}(127.0.0.1)\n\
         SlurmctldPort={ctld}\n\
         SlurmdPort={slurmd}\n\
         SlurmUser=root\n\
         SlurmdUser=root\n\
         AuthType=auth/munge\n\
         CredType=cred/munge\n\
         AuthInfo=socket={sock}\n\
         StateSaveLocation={d}/state\n\
         SlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\n\
         SlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldLogFile={d}/log/slurmctld.log\n\
         SlurmdLogFile={d}/log/slurmd.log\n\
         ProctrackType=proctrack/linuxproc\n\
         TaskPlugin=task/none\n\
         JobAcctGatherType=jobacct_gather/none\n\
         AccountingStorageType=accounting_storage/none\n\
         SelectType=select/cons_tres\n\
         SelectTypeParameters=CR_CPU\n\
         SchedulerType=sched/builtin\n\
         MpiDefault=none\n\
         ReturnToService=2\n\
         NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
         PartitionName=netlab Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
        ctld = free_port(),
        slurmd = free_port(),
        sock = socket.display(),
    );
    std::fs::write(&conf, conf_text).unwrap();
    for daemon in ["slurmctld", "slurmd"] {
        let child = Command::new(daemon)
            .arg("-D")
            .arg("-f")
            .arg(&conf)
            .env("SLURM_CONF", &conf)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("log/{daemon}.out"))).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{daemon}: {e}"));
        cluster.daemons.push((daemon, child));
    }
    // The node comes up idle.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = slurm(&cluster, "sinfo", &["-h", "-o", "%T"]);
        let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if state == "idle" {
            break;
        }
        for (name, child) in cluster.daemons.iter_mut() {
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "{name} exited ({st}) while the test cluster started:\n{}\n{}",
                    tail(&dir.join(format!("log/{name}.out"))),
                    tail(&dir.join(format!("log/{name}.log")))
                );
            }
        }
        assert!(
            Instant::now() < deadline,
            "the Slurm node is not idle after 30 s (sinfo: {state:?}, {}):\nslurmctld:\n{}\nslurmd:\n{}",
            String::from_utf8_lossy(&out.stderr).trim(),
            tail(&dir.join("log/slurmctld.log")),
            tail(&dir.join("log/slurmd.log"))
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    cluster
}

const SCENARIO: &str = include_str!("data/short-gcc.toml");

const GRID: &str = r#"
name = "slurm-test"
scenarios = ["short.toml"]
[[axis]]
name = "ku"
recv_arg = "--gcc-ku"
log = { from = 1e-4, to = 0.1, n = 3 }
[[axis]]
name = "kd"
recv_arg = "--gcc-kd"
log = { from = 1e-4, to = 0.1, n = 2 }
"#;

#[test]
fn a_sweep_runs_as_a_slurm_job_array_and_collects() {
    let cluster = start();
    let work = cluster.dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("short.toml"), SCENARIO).unwrap();
    std::fs::write(work.join("grid.toml"), GRID).unwrap();
    let out = work.join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/sweep.sbatch");
    let netlab = env!("CARGO_BIN_EXE_netlab");
    let submit = slurm(
        &cluster,
        "sbatch",
        &[
            "--parsable",
            "--array=0-2",
            &format!("--output={}/task-%a.out", work.display()),
            &format!("--export=ALL,NETLAB={netlab}"),
            &script.display().to_string(),
            &work.join("grid.toml").display().to_string(),
            &out.display().to_string(),
        ],
    );
    assert!(
        submit.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&submit.stderr)
    );
    let job = String::from_utf8_lossy(&submit.stdout).trim().to_owned();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let q = slurm(&cluster, "squeue", &["-h", "-j", &job]);
        if q.status.success() && q.stdout.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "job {job} still queued after 300 s: {}\nslurmctld:\n{}",
            String::from_utf8_lossy(&q.stdout),
            tail(&cluster.dir.join("log/slurmctld.log"))
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    for task in 0..3 {
        let log = work.join(format!("task-{task}.out"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            text.contains(&format!("shard {task}/3: 2 run, 0 already done, 0 failed")),
            "array task {task}:\n{text}"
        );
    }
    let collect = Command::new(netlab)
        .arg("collect")
        .arg(&out)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&collect.stdout);
    assert!(
        collect.status.success() && md.contains("6 of 6 points collected."),
        "{md}{}",
        String::from_utf8_lossy(&collect.stderr)
    );
    assert!(out.join("heatmap.png").exists());
    let dir = cluster.dir.clone();
    drop(cluster);
    assert!(!dir.exists(), "the test cluster's directory is removed");
}
