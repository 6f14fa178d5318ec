use clap::Parser;

/// `cg-send` — not yet implemented; see the issue tracker.
#[derive(Parser)]
#[command(version, about)]
struct Args {}

fn main() -> anyhow::Result<()> {
    let _args = Args::parse();
    anyhow::bail!("cg-send is not implemented yet")
}
