//! `backline sim`.

use std::process::ExitCode;

/// Flags of `backline sim`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `backline sim`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`backline sim` is not implemented yet")
}
