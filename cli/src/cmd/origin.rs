//! Settings that have both a flag and an environment variable (`--token-file` and
//! `BACKLINE_TOKEN_FILE`, `--spin-us` and `BACKLINE_SPIN_US`, `--dem-limits` and
//! `BACKLINE_DEM_LIMITS`, the rdma and GPU flags …): the flag given always wins. clap already
//! takes the flag's value over the variable's; this module says where a value came from
//! ([`given`]), so that no command mistakes a flag for the environment, and says once on
//! stderr, when both are given and differ, which one is used. [`remember`] reads every
//! argument of the command that runs that has an `env = …`: one place for every command.

use std::ffi::OsStr;
use std::sync::OnceLock;

use backline_decoders::io::excerpt;
use clap::parser::ValueSource;

/// The matches of the subcommand that runs (the innermost one).
static MATCHES: OnceLock<clap::ArgMatches> = OnceLock::new();

/// Keeps the matches of the subcommand that runs for [`given`], and says on stderr, for each
/// argument given as a flag whose environment variable holds another value, that the flag is
/// used: `backline: --token-file A is used; BACKLINE_TOKEN_FILE names B`.
pub fn remember(command: &clap::Command, matches: &clap::ArgMatches) {
    let (mut cmd, mut m) = (command, matches);
    while let Some((name, sub)) = m.subcommand() {
        let Some(c) = cmd.find_subcommand(name) else {
            break;
        };
        (cmd, m) = (c, sub);
    }
    for arg in cmd.get_arguments() {
        let (Some(var), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        if let Some(note) = note(m, arg.get_id().as_str(), long, var) {
            eprintln!("{note}");
        }
    }
    let _ = MATCHES.set(m.clone());
}

/// The note for one argument, when its flag was given and its variable holds another value.
fn note(m: &clap::ArgMatches, id: &str, long: &str, var: &OsStr) -> Option<String> {
    if m.value_source(id) != Some(ValueSource::CommandLine) {
        return None;
    }
    let env = std::env::var_os(var)?;
    let flag: Vec<&OsStr> = m.get_raw(id)?.collect();
    if flag.len() == 1 && flag[0] == env.as_os_str() {
        return None;
    }
    let shown = |v: &OsStr| excerpt(&v.to_string_lossy());
    let flag = flag.iter().map(|v| shown(v)).collect::<Vec<_>>().join(",");
    Some(format!(
        "backline: --{long} {flag} is used; {} names {}",
        var.to_string_lossy(),
        shown(&env)
    ))
}

/// Whether the argument `id` (its field name) of the subcommand that runs was given as a
/// flag on the command line (not taken from its environment variable, not a default).
pub fn given(id: &str) -> bool {
    MATCHES
        .get()
        .and_then(|m| m.value_source(id))
        .is_some_and(|s| s == ValueSource::CommandLine)
}
