//! `backline plot`.

use std::process::ExitCode;

/// Flags of `backline plot`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `backline plot`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`backline plot` is not implemented yet")
}
