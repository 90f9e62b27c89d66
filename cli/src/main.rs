//! `backline`: the user's front door. Thin: clap parses, each subcommand turns its flags into a
//! library configuration, calls the library, and prints. Errors are rendered once, here, as one
//! line on stderr with a non-zero exit. Exit statuses ([`backline_bench::exit`]): 0 ok, 1 a run
//! that failed its checks, 2 bad input or a set-up failure, 130 interrupted.

use std::process::ExitCode;

use backline_bench::exit;
use clap::{Parser, Subcommand};

mod cmd;

/// Quantum error-correction syndromes from a controller to decoders and back, in microseconds.
#[derive(Debug, Parser)]
#[command(
    name = "backline",
    version,
    about,
    propagate_version = true,
    after_help = "Example:\n  backline bench --transport shm --compare echo,steane\n\n\
                  Exit status: 0 ok, 1 a run that failed its checks, 2 bad input or set-up \
                  failure, 130 interrupted."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run sw-loop rounds over a placement and report round-trip latency.
    Bench(cmd::bench::Args),
    /// Serve coprocessor functions to controllers (shm, udp, rdma).
    Serve(cmd::serve::Args),
    /// Decode syndromes from a file with BP(+OSD) for a parity-check matrix.
    Decode(cmd::decode::Args),
    /// Run the HWHS engine's generated RTL under Verilator against an ERNIC model, and an
    /// in-simulation responder or a real coprocessor.
    Sim(cmd::sim::Args),
    /// Draw SVG and PNG plots from any number of CSV traces (CCDFs overlaid).
    Plot(cmd::plot::Args),
    /// Write a new pre-shared key for --token-file (32 random bytes as hex, mode 0600).
    Token {
        /// The file to create (it must not exist).
        file: std::path::PathBuf,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `backline man > backline.1`.
    Man,
}

/// Two or three examples at the end of each subcommand's --help.
const EXAMPLES: [(&str, &str); 8] = [
    (
        "bench",
        "  backline bench --compare echo,steane --rounds 100000\n  \
         backline bench --transport udp --json --no-plots --csv run.csv\n  \
         backline bench --cadence random-delayed --freq 20000 --span 0xffff",
    ),
    (
        "serve",
        "  backline serve --transport udp --bind 127.0.0.1:7878 --fn 0=steane\n  \
         backline serve --transport shm --name dec --fn 0=bposd:hgp13 --pin 1\n  \
         backline serve --protocol cuqr --fn 0=stream:m.dem --fn 1=stream:m.dem --ring 0=7979 --ring 1=7980",
    ),
    (
        "decode",
        "  backline decode --checks hx.alist --syndromes shots.txt --error-rate 0.05\n  \
         backline decode --dem model.dem --dets dets.b8 --obs obs.b8 --decoder relay-bp",
    ),
    (
        "sim",
        "  backline sim --mode hw-loop --rounds 100000 --responder steane --json\n  \
         backline sim --cadence random-delayed --rounds 1000",
    ),
    (
        "plot",
        "  backline plot backline-out/bench-memcpy-echo.csv backline-out/bench-memcpy-floor.csv\n  \
         backline plot b2b.csv random-delayed.csv --out-dir plots --title 'RTT CCDF'",
    ),
    (
        "token",
        "  backline token ~/.config/backline/key && scp ~/.config/backline/key server:.config/backline/key\n  \
         backline serve --transport udp --bind 0.0.0.0:7878 --token-file ~/.config/backline/key",
    ),
    (
        "completions",
        "  backline completions bash > /etc/bash_completion.d/backline\n  \
         backline completions zsh > ~/.zfunc/_backline",
    ),
    ("man", "  backline man > backline.1 && man ./backline.1"),
];

/// Library warnings and errors (`log`) as lines like every other message: `backline: warning:
/// …`. `BACKLINE_LOG` (env_logger's filter syntax, e.g. `debug` or `backline_transport=info`)
/// shows more; the default is warnings and errors.
fn init_logging() {
    use std::io::Write as _;
    env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .parse_env(env_logger::Env::new().filter("BACKLINE_LOG"))
        .format(|buf, record| {
            let level = match record.level() {
                log::Level::Error => "error",
                log::Level::Warn => "warning",
                log::Level::Info => "info",
                log::Level::Debug => "debug",
                log::Level::Trace => "trace",
            };
            writeln!(buf, "backline: {level}: {}", record.args())
        })
        .init();
}

/// The command line, with `--version` and `sim --help` saying whether this build has the
/// simulator.
fn command() -> clap::Command {
    use clap::CommandFactory;
    let v: &'static str = Box::leak(
        format!(
            "{} (simulator: {})",
            env!("CARGO_PKG_VERSION"),
            backline_sim::BUILD
        )
        .into_boxed_str(),
    );
    let mut cmd = Cli::command().version(v);
    for (name, examples) in EXAMPLES {
        let note = if name == "sim" {
            format!("\n\n{}", backline_sim::build_note())
        } else {
            String::new()
        };
        cmd = cmd.mut_subcommand(name, |c| {
            c.after_help(format!("Examples:\n{examples}{note}"))
        });
    }
    cmd
}

fn main() -> ExitCode {
    init_logging();
    use clap::FromArgMatches;
    let parsed = command()
        .try_get_matches()
        .ok()
        .and_then(|m| Cli::from_arg_matches(&m).ok().map(|c| (c, m)));
    let cli: Cli = match parsed {
        Some((c, m)) => {
            // An explicit flag wins over its environment variable: say so where they differ.
            cmd::origin::remember(&command(), &m);
            c
        }
        // clap's refusal, its help or version, rendered as every front end renders them.
        None => match backline_bench::cli::parse("backline", command()) {
            Ok(c) => c,
            Err(code) => return code,
        },
    };
    let result = match cli.command {
        Command::Bench(a) => cmd::bench::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Decode(a) => cmd::decode::run(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Plot(a) => cmd::plot::run(a),
        Command::Token { file } => backline_transport::AdmissionKey::create_file(&file)
            .map(|()| {
                eprintln!(
                    "backline token: wrote a new key to {} (mode 0600); copy it to the other side over a channel you trust",
                    file.display()
                );
                ExitCode::SUCCESS
            })
            .map_err(anyhow::Error::from),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut command(), "backline", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => clap_mangen::Man::new(command())
            .render(&mut std::io::stdout())
            .map(|()| ExitCode::SUCCESS)
            .map_err(anyhow::Error::from),
    };
    match result {
        Ok(code) => code,
        // A closed pipe (`backline man | head`) ends the output, not in error.
        Err(e) if backline_bench::cli::broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("backline: error: {}", one_line(&e));
            ExitCode::from(if e.downcast_ref::<exit::ChecksFailed>().is_some() {
                exit::FAILED
            } else {
                exit::BAD_INPUT
            })
        }
    }
}

/// An error and its causes on one line, outermost first; a cause that an error already prints
/// at the end of its own message (`{source}` in a thiserror message) is not said twice.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !msg.ends_with(&cause) {
            msg.push_str(&format!(": {cause}"));
        }
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::one_line;

    /// An error whose message ends with its source's, as a thiserror `{0}` with `#[source]`.
    #[derive(Debug)]
    struct SaysItsSource(std::io::Error);

    impl std::fmt::Display for SaysItsSource {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "reading the model: {}", self.0)
        }
    }

    impl std::error::Error for SaysItsSource {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_error_chain_is_one_line_and_says_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        // Context over a plain cause: both parts.
        let e = anyhow::Error::new(io()).context("opening x.dem");
        assert_eq!(one_line(&e), "opening x.dem: no such file");
        // A cause the message already ends with: once.
        let e = anyhow::Error::new(SaysItsSource(io())).context("decode");
        assert_eq!(one_line(&e), "decode: reading the model: no such file");
    }
}
