//! `backline bench`.

use std::process::ExitCode;

/// Flags of `backline bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `backline bench`.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`backline bench` is not implemented yet")
}
