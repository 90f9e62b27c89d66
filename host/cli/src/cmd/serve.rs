//! `backline serve`.

use std::process::ExitCode;

/// Flags of `backline serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `backline serve`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`backline serve` is not implemented yet")
}
