use clap::Parser;

/// `netlab` — not yet implemented; see the issue tracker.
#[derive(Parser)]
#[command(version, about)]
struct Args {}

fn main() -> anyhow::Result<()> {
    let _args = Args::parse();
    anyhow::bail!("netlab is not implemented yet")
}
