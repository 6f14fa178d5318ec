//! `netlab`: run network-namespace testbeds (see the crate docs and crates/netlab/README.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use cg_netlab::scenario::{Scenario, presets};
use cg_netlab::{Error, bench, emu, report, reproduce, runner, sweep, traffic};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    version,
    about = "Network-namespace testbeds with emulated and kernel bottlenecks"
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario (a TOML file, or `preset:NAME`) and write results to --out.
    Run {
        /// Scenario file or `preset:NAME`.
        scenario: String,
        /// Output directory (created).
        #[arg(long, default_value = "out/run")]
        out: PathBuf,
        /// Forwarder wake-up coalescing, µs.
        #[arg(long, default_value_t = 100)]
        coalesce_us: u64,
        /// Skip the start-up RTT check.
        #[arg(long)]
        skip_rtt_check: bool,
        /// No progress output (the summary table is still printed).
        #[arg(long)]
        quiet: bool,
        /// SCHED_FIFO priority of the emulated bottleneck's forwarder when netlab runs as root
        /// (a kernel qdisc runs ahead of every process; 0 leaves the forwarder at normal
        /// priority, competing with the endpoints' encoders).
        #[arg(long, default_value_t = cg_netlab::rt::DEFAULT_PRIORITY)]
        forwarder_priority: u8,
        /// In simulated time (`cg_netlab::simrun`): cg-cc's controllers with the model
        /// encoder's frame sizes, cg-cc's TCP (CUBIC, Reno, BBR v1) and CBR flows, the
        /// scenario's own bottleneck; no namespaces. Same outputs, backend `simulated`.
        #[arg(long)]
        sim: bool,
    },
    /// Run the papers' experiments (every preset a paper's figure names, or those matching
    /// --only) and write a report of our numbers beside the papers' (report.md, report.html).
    /// Runs already in --out are reused: an interrupted reproduction resumes.
    Reproduce {
        /// Only presets whose name matches (`*` matches anything; else a substring; several
        /// patterns separated by commas).
        #[arg(long, value_name = "PATTERN")]
        only: Option<String>,
        /// In simulated time: the same controllers and bottleneck, the model encoder and
        /// simulated TCP; no namespaces (seconds per preset).
        #[arg(long)]
        sim: bool,
        /// A finished two-axis sweep (netlab sweep's --out) whose best cell and heat map join
        /// the report (MMSys16 Fig. 8: ku × kd).
        #[arg(long, value_name = "DIR")]
        sweep: Option<PathBuf>,
        /// Output directory: one sub-directory per preset, and the report (default
        /// out/reproduce, or out/reproduce-sim with --sim).
        #[arg(long)]
        out: Option<PathBuf>,
        /// SCHED_FIFO priority of the emulated bottleneck's forwarder (as for `run`).
        #[arg(long, default_value_t = cg_netlab::rt::DEFAULT_PRIORITY)]
        forwarder_priority: u8,
        /// Runs per preset, each with the next seed: `paper` (as many as the paper averaged,
        /// MMSys16 10, CCR16 6, one where it does not say) or a count. The report gives the
        /// mean and spread and judges the mean.
        #[arg(long, default_value = "paper", value_parser = reproduce::Runs::parse)]
        runs: reproduce::Runs,
        /// Every GCC flow runs this published GCC (`mmsys16`, `2013`; `cg`, cg's, is what
        /// the presets run without it), given to both programs with GCC-REMB
        /// (docs/gcc-variants.md).
        #[arg(long, value_name = "NAME")]
        gcc_variant: Option<cg_cc::gcc::GccVariant>,
        /// Every SCReAM flow runs this published SCReAM v2 (`draft`, `reference`; `cg`, cg's,
        /// is what the presets run without it) (docs/scream-variants.md).
        #[arg(long, value_name = "NAME")]
        scream_variant: Option<cg_cc::scream::ScreamVariant>,
        /// With --gcc-variant or --scream-variant: also run every preset as shipped (cg's
        /// algorithms) into OUT/cg-default/, and give its number and verdict beside the
        /// variant's in every row of the report.
        #[arg(long)]
        beside_default: bool,
    },
    /// Run a parameter grid (GRID.toml: scenarios × axes), in simulated time by default; with
    /// --shard I/N only the points numbered I modulo N (one task of a Slurm job array).
    /// Finished points are not run again.
    Sweep {
        /// The grid file.
        grid: PathBuf,
        /// Run one share: I/N (e.g. `--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`).
        #[arg(long, value_parser = sweep::parse_shard, default_value = "0/1")]
        shard: (usize, usize),
        /// Output directory (shared by every shard).
        #[arg(long, default_value = "out/sweep")]
        out: PathBuf,
    },
    /// Merge a sweep's finished points into collect.csv, collect.md and (two axes) heatmap.png.
    Collect {
        /// The sweep's output directory.
        dir: PathBuf,
    },
    /// Check a scenario without running it.
    Check {
        /// Scenario file or `preset:NAME`.
        scenario: String,
    },
    /// List the shipped presets, or print one.
    Presets {
        /// Print this preset's TOML.
        name: Option<String>,
    },
    /// Run the built-in demo scenario (MMSys16 §6.1 shortened: one GCC flow, cg-send → cg-recv).
    Demo {
        /// Output directory.
        #[arg(long, default_value = "out/demo")]
        out: PathBuf,
        /// Seconds per capacity step (default 20).
        #[arg(long, default_value_t = 20)]
        step_s: u64,
        /// SCHED_FIFO priority of the emulated bottleneck's forwarder when netlab runs as root
        /// (a kernel qdisc runs ahead of every process; 0 leaves the forwarder at normal
        /// priority, competing with the endpoints' encoders).
        #[arg(long, default_value_t = cg_netlab::rt::DEFAULT_PRIORITY)]
        forwarder_priority: u8,
    },
    /// Whole-process benchmark of the emulator: UDP through the forwarder at several rates.
    Bench {
        /// Rates in Mb/s.
        #[arg(long, value_delimiter = ',', default_values_t = [10u64, 50, 100, 200])]
        rates: Vec<u64>,
        /// Seconds per rate.
        #[arg(long, default_value_t = 8)]
        seconds: u64,
        /// Output directory.
        #[arg(long, default_value = "out/bench")]
        out: PathBuf,
    },
    #[command(name = "__runner", hide = true)]
    Runner {
        #[arg(long)]
        scenario: PathBuf,
        #[arg(long)]
        base: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        coalesce_us: u64,
        #[arg(long)]
        skip_rtt_check: bool,
        #[arg(long)]
        quiet: bool,
    },
    #[command(name = "__forward", hide = true)]
    Forward {
        #[arg(long)]
        scenario: PathBuf,
        #[arg(long)]
        base: PathBuf,
        #[arg(long)]
        t0_ns: u64,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        coalesce_us: u64,
    },
    #[command(name = "__tcp-send", hide = true)]
    TcpSend(SendArgs),
    #[command(name = "__udp-send", hide = true)]
    UdpSend(SendArgs),
    #[command(name = "__tcp-sink", hide = true)]
    TcpSink(SinkArgs),
    #[command(name = "__udp-sink", hide = true)]
    UdpSink(SinkArgs),
    #[command(name = "__echo", hide = true)]
    Echo,
    #[command(name = "__exec-at", hide = true)]
    ExecAt {
        #[arg(long)]
        t0_ns: u64,
        #[arg(long)]
        start: f64,
        /// The nice value to run the command at (`[load] endpoint_nice`).
        #[arg(long, allow_hyphen_values = true)]
        nice: Option<i32>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    #[command(name = "__hog", hide = true)]
    Hog {
        #[arg(long, allow_hyphen_values = true)]
        nice: i32,
        #[arg(long)]
        duty: f64,
    },
    #[command(name = "__probe", hide = true)]
    Probe {
        #[arg(long)]
        dst: std::net::SocketAddr,
        #[arg(long)]
        count: u32,
        #[arg(long)]
        gap_ms: u64,
    },
}

#[derive(clap::Args)]
struct SendArgs {
    #[arg(long)]
    dst: std::net::SocketAddr,
    #[arg(long)]
    t0_ns: u64,
    #[arg(long)]
    bin_ms: u64,
    #[arg(long)]
    start: f64,
    #[arg(long)]
    stop: f64,
    #[arg(long)]
    on: Option<f64>,
    #[arg(long)]
    off: Option<f64>,
    #[arg(long, default_value = "")]
    steps: String,
    #[arg(long, default_value = "cubic")]
    cc: String,
    #[arg(long, default_value_t = 1200)]
    size: usize,
    #[arg(long, default_value = "not-ect")]
    ecn: String,
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct SinkArgs {
    #[arg(long)]
    port: u16,
    #[arg(long)]
    t0_ns: u64,
    #[arg(long)]
    bin_ms: u64,
    #[arg(long)]
    out: PathBuf,
}

fn load(spec: &str) -> Result<(Scenario, PathBuf), Error> {
    if let Some(name) = spec.strip_prefix("preset:") {
        let sc = presets::load(name).ok_or_else(|| {
            Error::NotAvailable(format!("no preset `{name}`; `netlab presets` lists them"))
        })??;
        Ok((sc, presets::trace_dir().to_path_buf()))
    } else {
        let p = Path::new(spec);
        let sc = Scenario::load(p)?;
        let base = p.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        Ok((sc, std::fs::canonicalize(&base).unwrap_or(base)))
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    match real_main(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netlab: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main(args: Args) -> Result<(), Error> {
    match args.cmd {
        Cmd::Run {
            scenario,
            out,
            coalesce_us,
            skip_rtt_check,
            quiet,
            forwarder_priority,
            sim,
        } => {
            let (sc, base) = load(&scenario)?;
            if sim {
                let summary = report::run_simulated(&sc, &out)?;
                print!("{}", report::table(&summary));
                return Ok(());
            }
            let opts = report::RunRequest {
                out,
                base,
                coalesce: Duration::from_micros(coalesce_us),
                skip_rtt_check,
                quiet,
                forwarder_rt: (forwarder_priority > 0).then_some(forwarder_priority),
            };
            let summary = report::run_and_report(&sc, &opts)?;
            print!("{}", report::table(&summary));
            Ok(())
        }
        Cmd::Reproduce {
            only,
            sim,
            sweep,
            out,
            forwarder_priority,
            runs,
            gcc_variant,
            scream_variant,
            beside_default,
        } => {
            if beside_default && gcc_variant.is_none() && scream_variant.is_none() {
                return Err(cg_netlab::Error::NotAvailable(
                    "--beside-default puts cg's default beside a variant: give --gcc-variant \
                     or --scream-variant"
                        .into(),
                ));
            }
            let out = out.unwrap_or_else(|| {
                PathBuf::from(if sim {
                    "out/reproduce-sim"
                } else {
                    "out/reproduce"
                })
            });
            let run = report::RunRequest {
                out: out.clone(),
                base: presets::trace_dir().to_path_buf(),
                coalesce: Duration::from_micros(100),
                skip_rtt_check: false,
                quiet: false,
                forwarder_rt: (forwarder_priority > 0).then_some(forwarder_priority),
            };
            reproduce::run(&reproduce::Options {
                out,
                only,
                sim,
                sweep,
                run,
                runs,
                gcc_variant,
                scream_variant,
                beside_default,
            })?;
            Ok(())
        }
        Cmd::Sweep { grid, shard, out } => {
            let template = report::RunRequest {
                out: out.clone(),
                base: PathBuf::from("."),
                coalesce: Duration::from_micros(100),
                skip_rtt_check: false,
                quiet: true,
                forwarder_rt: Some(cg_netlab::rt::DEFAULT_PRIORITY),
            };
            let (_, _, failed) = sweep::run(&grid, shard, &out, &template)?;
            if failed > 0 {
                return Err(Error::Process(format!(
                    "{failed} point(s) failed; see above"
                )));
            }
            Ok(())
        }
        Cmd::Collect { dir } => {
            print!("{}", sweep::collect(&dir)?);
            Ok(())
        }
        Cmd::Check { scenario } => {
            let (sc, _) = load(&scenario)?;
            report::preflight(&sc)?;
            println!(
                "{}: ok ({} hosts, {} flows, {:.0} s)",
                sc.name,
                sc.hosts.len(),
                sc.flows.len(),
                sc.duration.as_secs_f64()
            );
            Ok(())
        }
        Cmd::Presets { name } => {
            match name {
                Some(n) => print!(
                    "{}",
                    presets::text(&n)
                        .ok_or_else(|| Error::NotAvailable(format!("no preset `{n}`")))?
                ),
                None => {
                    for n in presets::names() {
                        println!("{n}");
                    }
                }
            }
            Ok(())
        }
        Cmd::Demo {
            out,
            step_s,
            forwarder_priority,
        } => {
            let sc = report::demo_scenario(step_s)?;
            let opts = report::RunRequest {
                out,
                base: PathBuf::from("."),
                coalesce: Duration::from_micros(100),
                skip_rtt_check: false,
                quiet: false,
                forwarder_rt: (forwarder_priority > 0).then_some(forwarder_priority),
            };
            let summary = report::run_and_report(&sc, &opts)?;
            print!("{}", report::table(&summary));
            println!("plots and CSVs in {}", opts.out.display());
            Ok(())
        }
        Cmd::Bench {
            rates,
            seconds,
            out,
        } => bench::run(&rates, seconds, &out),
        Cmd::Runner {
            scenario,
            base,
            out,
            coalesce_us,
            skip_rtt_check,
            quiet,
        } => runner::run(&runner::RunOptions {
            out,
            scenario,
            base,
            coalesce: Duration::from_micros(coalesce_us),
            skip_rtt_check,
            progress: !quiet,
        }),
        Cmd::Forward {
            scenario,
            base,
            t0_ns,
            out,
            coalesce_us,
        } => {
            let text = std::fs::read_to_string(&scenario)
                .map_err(|e| Error::io(format!("read {}", scenario.display()), e))?;
            let sc = Scenario::parse(&text, &scenario.display().to_string(), "scenario", &base)?;
            emu::forwarder::run(emu::forwarder::ForwarderConfig {
                forward: emu::linkcfg::link_config(&sc.forward, sc.seed, "forward")?,
                reverse: emu::linkcfg::link_config(
                    &sc.reverse,
                    sc.seed.wrapping_add(1),
                    "reverse",
                )?,
                overhead: 0,
                t0_ns,
                coalesce: Duration::from_micros(coalesce_us),
                out,
                tun_forward: cg_netlab::topology::TUN_FORWARD.into(),
                tun_reverse: cg_netlab::topology::TUN_REVERSE.into(),
            })
        }
        Cmd::TcpSend(a) => traffic::tcp::send(&traffic::tcp::TcpSend {
            dst: a.dst,
            cc: a.cc,
            t0_ns: a.t0_ns,
            start: a.start,
            stop: a.stop,
            on_off: a.on.zip(a.off),
            steps: traffic::parse_steps(&a.steps),
            out: a.out.unwrap_or_else(|| PathBuf::from("/dev/null")),
        }),
        Cmd::UdpSend(a) => traffic::udp::send(&traffic::udp::UdpSend {
            dst: a.dst,
            size: a.size,
            steps: traffic::parse_steps(&a.steps),
            ecn: a.ecn.parse().unwrap_or_default(),
            t0_ns: a.t0_ns,
            start: a.start,
            stop: a.stop,
        }),
        Cmd::TcpSink(a) => {
            let stop = traffic::stop_on_stdin_eof();
            traffic::tcp::sink(
                a.port,
                a.t0_ns,
                Duration::from_millis(a.bin_ms),
                &a.out,
                stop,
            )
        }
        Cmd::UdpSink(a) => {
            let stop = traffic::stop_on_stdin_eof();
            traffic::udp::sink(
                a.port,
                a.t0_ns,
                Duration::from_millis(a.bin_ms),
                &a.out,
                stop,
            )
        }
        Cmd::Echo => traffic::probe::echo(traffic::stop_on_stdin_eof()),
        Cmd::ExecAt {
            t0_ns,
            start,
            nice,
            command,
        } => {
            use std::os::unix::process::CommandExt;
            if let Some(n) = nice {
                cg_netlab::rt::set_nice(n)?;
            }
            traffic::sleep_until_mono(t0_ns + (start.max(0.0) * 1e9) as u64);
            let (prog, rest) = command
                .split_first()
                .ok_or_else(|| Error::Process("__exec-at: no command".into()))?;
            let e = std::process::Command::new(prog).args(rest).exec();
            Err(Error::io(format!("exec {prog}"), e))
        }
        Cmd::Hog { nice, duty } => {
            cg_netlab::rt::set_nice(nice)?;
            cg_netlab::rt::hog(duty, traffic::stop_on_stdin_eof());
            Ok(())
        }
        Cmd::Probe { dst, count, gap_ms } => {
            let r = traffic::probe::probe(dst, count, Duration::from_millis(gap_ms))?;
            println!(
                "{}",
                serde_json::to_string(&r).expect("probe result serialises")
            );
            Ok(())
        }
    }
}
