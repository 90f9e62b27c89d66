//! The exit statuses of `backline` and `backline-apu`, defined once:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | ok |
//! | 1 | a run that failed its checks (wrong or refused replies, a failed hardware run) |
//! | 2 | bad input or a set-up failure (flags, files, a peer that cannot be reached, a run that stopped on an error) |
//! | 130 | interrupted (SIGINT): what completed was written |

/// Everything went as asked.
pub const OK: u8 = 0;
/// The run ran, and failed its checks.
pub const FAILED: u8 = 1;
/// Bad input or a set-up failure.
pub const BAD_INPUT: u8 = 2;
/// Stopped by SIGINT after writing what completed (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// An error that means "the run failed its checks": the edge exits with [`FAILED`] for it
/// (and [`BAD_INPUT`] for any other error).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ChecksFailed(pub String);

/// The exit status for an error: [`FAILED`] when it is (or wraps) [`ChecksFailed`],
/// [`BAD_INPUT`] otherwise.
pub fn status_of(e: &(dyn std::error::Error + 'static)) -> u8 {
    let mut cur = Some(e);
    while let Some(x) = cur {
        if x.is::<ChecksFailed>() {
            return FAILED;
        }
        cur = x.source();
    }
    BAD_INPUT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_checks_and_other_errors_have_their_statuses() {
        let e = ChecksFailed("3 of 10 replies were wrong".into());
        assert_eq!(status_of(&e), FAILED);
        let io = std::io::Error::other("no such file");
        assert_eq!(status_of(&io), BAD_INPUT);
    }
}
