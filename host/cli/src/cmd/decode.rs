//! `backline decode`.

use std::process::ExitCode;

/// Flags of `backline decode`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `backline decode`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`backline decode` is not implemented yet")
}
