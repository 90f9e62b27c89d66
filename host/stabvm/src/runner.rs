//! A placement's run: the shots of a program over a [`Fabric`] (the sessions to the
//! coprocessors, or a board), with its failures sorted into what a user can act on
//! (unreachable, timed out, decoder id not served, interrupted).

use crate::{RoundError, Rounds, SessionRounds, VmError};
use backline_wire::Status;

/// Why a run failed, sorted for the user.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A coprocessor could not be reached when the run opened its session.
    #[error("coprocessor {coprocessor} cannot be reached at {peer}: {source}")]
    Unreachable {
        /// Coprocessor number.
        coprocessor: u32,
        /// Where it was looked for.
        peer: String,
        /// Why.
        source: backline_transport::Error,
    },
    /// A reply did not come in time, or the coprocessor's end of the session is gone (it died
    /// or hangs): which of the two a dead coprocessor gives depends on whether a request
    /// reached it before it died.
    #[error("shot {shot}: coprocessor {coprocessor} ({peer}) did not answer: {source}")]
    Timeout {
        /// Shot.
        shot: u64,
        /// Coprocessor number.
        coprocessor: u32,
        /// Its peer.
        peer: String,
        /// The transport's error.
        source: backline_transport::Error,
    },
    /// The coprocessor serves no function for a decoder id the program uses.
    #[error(
        "coprocessor {coprocessor} ({peer}) serves no function for decoder_id {decoder_id} (reply status {status})"
    )]
    UnservedDecoder {
        /// Coprocessor number.
        coprocessor: u32,
        /// Its peer.
        peer: String,
        /// The decoder id.
        decoder_id: u32,
        /// The status.
        status: &'static str,
    },
    /// The observer stopped the run (e.g. Ctrl-C).
    #[error("interrupted after {0} shots")]
    Interrupted(u64),
    /// Anything else the VM or transport reported.
    #[error("{0}")]
    Vm(VmError),
}

/// Where the run's rounds go: the VM's rounds trait plus the timings of the rounds made.
pub trait Fabric: Rounds {
    /// Round-trip time of every completed round, ns, in order.
    fn rtts_ns(&self) -> &[f64];
    /// The peer of coprocessor `c`, for errors.
    fn peer(&self, c: u32) -> String;
}

impl Fabric for SessionRounds {
    fn rtts_ns(&self) -> &[f64] {
        &self.rtts_ns
    }
    fn peer(&self, c: u32) -> String {
        self.endpoint(c)
            .map(|e| format!("{} {}", e.config.transport, e.peer))
            .unwrap_or_else(|| "nowhere".into())
    }
}

/// Remembers the last call and session of a failing round, to say which coprocessor failed.
struct Tracked<'a> {
    inner: &'a mut dyn Fabric,
    last: Option<(&'static str, u32)>,
}

impl Tracked<'_> {
    fn note<T>(
        &mut self,
        call: &'static str,
        s: u32,
        r: Result<T, RoundError>,
    ) -> Result<T, RoundError> {
        if r.is_err() {
            self.last = Some((call, s));
        }
        r
    }
}

impl Rounds for Tracked<'_> {
    fn open(&mut self, session: u32, coprocessor: u32) -> Result<(), RoundError> {
        let r = self.inner.open(session, coprocessor);
        self.note("open", coprocessor, r)
    }
    fn stage(&mut self, session: u32, decoder_id: u32, payload: &[u8]) -> Result<(), RoundError> {
        let r = self.inner.stage(session, decoder_id, payload);
        self.note("stage", session, r)
    }
    fn post(&mut self, session: u32) -> Result<(), RoundError> {
        let r = self.inner.post(session);
        self.note("post", session, r)
    }
    fn collect(&mut self, session: u32) -> Result<u64, RoundError> {
        let r = self.inner.collect(session);
        self.note("collect", session, r)
    }
    fn close(&mut self, session: u32) -> Result<(), RoundError> {
        let r = self.inner.close(session);
        self.note("close", session, r)
    }
}

/// The samples of a run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Output bits, one byte (0/1) each, shot-major.
    pub bits: Vec<u8>,
    /// Bits per shot.
    pub width: usize,
    /// Shots run.
    pub shots: u64,
    /// RTT of every decode round, ns, in order.
    pub rtts_ns: Vec<f64>,
}

/// Runs `program` for `shots` shots over `fabric`, sorting failures into [`RunError`].
pub fn run(
    program: &crate::Program,
    shots: u64,
    seed: u64,
    fabric: &mut dyn Fabric,
    observer: &mut dyn FnMut(u64) -> bool,
) -> Result<RunOutput, RunError> {
    let mut t = Tracked {
        inner: fabric,
        last: None,
    };
    let r = crate::run_observed(program, shots, seed, &mut t, observer);
    let last = t.last;
    match r {
        Ok(s) => Ok(RunOutput {
            bits: s.bits.iter().map(|&b| b as u8).collect(),
            width: s.width,
            shots: s.shots,
            rtts_ns: fabric.rtts_ns().to_vec(),
        }),
        Err(VmError::Stopped(n)) => Err(RunError::Interrupted(n)),
        Err(VmError::Round {
            shot,
            index,
            source,
        }) => {
            let c = last.map_or(0, |(_, s)| s);
            let peer = fabric.peer(c);
            Err(match (last, source) {
                (Some(("open", _)), RoundError::Transport(source)) => RunError::Unreachable {
                    coprocessor: c,
                    peer,
                    source,
                },
                (_, RoundError::Transport(source))
                    if source.is_timeout()
                        || matches!(source, backline_transport::Error::PeerGone(_)) =>
                {
                    RunError::Timeout {
                        shot,
                        coprocessor: c,
                        peer,
                        source,
                    }
                }
                (_, RoundError::Status { decoder_id, status })
                    if status == Status::UnknownDecoder.name() =>
                {
                    RunError::UnservedDecoder {
                        coprocessor: c,
                        peer,
                        decoder_id,
                        status,
                    }
                }
                (_, source) => RunError::Vm(VmError::Round {
                    shot,
                    index,
                    source,
                }),
            })
        }
        Err(e) => Err(RunError::Vm(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Gate1, Instr, Program};

    /// Rounds that answer word 0, except at `call`, which fails with `error()`.
    struct Failing {
        call: &'static str,
        error: fn() -> RoundError,
        rtts: Vec<f64>,
    }

    impl Failing {
        fn at(&mut self, call: &'static str) -> Result<(), RoundError> {
            if call == self.call {
                return Err((self.error)());
            }
            if call == "collect" {
                self.rtts.push(1.0);
            }
            Ok(())
        }
    }

    impl Rounds for Failing {
        fn open(&mut self, _: u32, _: u32) -> Result<(), RoundError> {
            self.at("open")
        }
        fn stage(&mut self, _: u32, _: u32, _: &[u8]) -> Result<(), RoundError> {
            self.at("stage")
        }
        fn post(&mut self, _: u32) -> Result<(), RoundError> {
            self.at("post")
        }
        fn collect(&mut self, _: u32) -> Result<u64, RoundError> {
            self.at("collect").map(|()| 0)
        }
        fn close(&mut self, _: u32) -> Result<(), RoundError> {
            self.at("close")
        }
    }

    impl Fabric for Failing {
        fn rtts_ns(&self) -> &[f64] {
            &self.rtts
        }
        fn peer(&self, c: u32) -> String {
            format!("peer-{c}")
        }
    }

    /// One qubit measured, its bit sent as one decode round per shot.
    fn one_decode() -> Program {
        let mut p = Program {
            num_qubits: 1,
            num_bits: 1,
            num_words: 1,
            num_sessions: 1,
            ..Default::default()
        };
        p.setup = vec![Instr::SessionOpen {
            session: 0,
            coprocessor: 0,
        }];
        let syn = p.list(&[0]);
        p.body = vec![
            Instr::G1(Gate1::X, 0),
            Instr::Measure { q: 0, bit: 0 },
            Instr::Stage {
                session: 0,
                decoder_id: 3,
                bits: syn,
            },
            Instr::Post { session: 0 },
            Instr::Collect {
                session: 0,
                word: 0,
            },
        ];
        p.outputs = vec![0];
        p
    }

    fn run_failing(call: &'static str, error: fn() -> RoundError) -> Result<RunOutput, RunError> {
        let mut f = Failing {
            call,
            error,
            rtts: Vec::new(),
        };
        run(&one_decode(), 4, 1, &mut f, &mut |_| true)
    }

    #[test]
    fn failures_are_sorted_for_the_user() {
        let out = run_failing("none", || unreachable!()).unwrap();
        assert_eq!((out.bits, out.width, out.rtts_ns.len()), (vec![1; 4], 1, 4));

        let refused = || RoundError::Transport(backline_transport::Error::Invalid("no".into()));
        let e = run_failing("open", refused).unwrap_err();
        assert!(
            matches!(&e, RunError::Unreachable { coprocessor: 0, peer, .. } if peer == "peer-0"),
            "{e}"
        );
        let gone = || RoundError::Transport(backline_transport::Error::PeerGone("bye".into()));
        let e = run_failing("collect", gone).unwrap_err();
        assert!(matches!(e, RunError::Timeout { shot: 0, .. }), "{e}");
        assert!(e.to_string().contains("did not answer"), "{e}");
        let unserved = || RoundError::Status {
            decoder_id: 3,
            status: Status::UnknownDecoder.name(),
        };
        let e = run_failing("collect", unserved).unwrap_err();
        assert!(
            matches!(e, RunError::UnservedDecoder { decoder_id: 3, .. }),
            "{e}"
        );
        let e = run_failing("stage", refused).unwrap_err();
        assert!(matches!(e, RunError::Vm(_)), "{e}");

        let mut f = Failing {
            call: "none",
            error: || unreachable!(),
            rtts: Vec::new(),
        };
        let e = run(&one_decode(), 10, 1, &mut f, &mut |n| n < 2).unwrap_err();
        assert!(matches!(e, RunError::Interrupted(2)), "{e}");
    }
}
