use clap::Parser;

/// `cg-recv` — not yet implemented; see the issue tracker.
#[derive(Parser)]
#[command(version, about)]
struct Args {}

fn main() -> anyhow::Result<()> {
    let _args = Args::parse();
    anyhow::bail!("cg-recv is not implemented yet")
}
