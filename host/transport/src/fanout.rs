//! Fan-out rounds: one controller's round sent to several coprocessors at once — posted to
//! all, then collected from all — so that the round costs the slowest coprocessor's round trip,
//! not the sum of them (a syndrome-extraction round whose logical qubits are decoded by
//! different coprocessors).
//!
//! A [`FanOut`] holds one [`ControllerSession`] per coprocessor (each with its own transport,
//! geometry and timeouts). [`FanOut::post_all`] stages and posts request `i` on session `i`;
//! [`FanOut::collect_all`] polls the sessions it posted to, in turn, and hands each reply over
//! as it arrives, with its arrival time. A coprocessor that fails — refuses the request, times
//! out, goes away — is named in the [`FanOutError`] with its error; the others' rounds complete,
//! and their sessions stay usable.
//!
//! ```
//! use backline_transport::{CoprocessorSession, ControllerSession, FanOut, ServeOptions,
//!     SessionConfig, TransportKind};
//! use backline_responder::{ResponderTable, Steane};
//! use std::sync::Arc;
//!
//! let config = SessionConfig::new(TransportKind::Memcpy);
//! let table = ResponderTable::single(Arc::new(Steane));
//! let mut servers = Vec::new();
//! let mut sessions = Vec::new();
//! for k in ["fan-a", "fan-b"] {
//!     servers.push(CoprocessorSession::open(k, config.clone(), "", 0, &table, ServeOptions::default())?);
//!     sessions.push(ControllerSession::open(&format!("{k}-c"), config.clone(), k, 0)?);
//! }
//! let mut fan = FanOut::new(sessions)?;
//! fan.post_all(&[(&[0b011][..], 0), (&[0b101][..], 0)]).unwrap();
//! let mut answers = [0u8; 2];
//! fan.collect_all(|i, reply, _| answers[i] = reply.payload[0]).unwrap();
//! assert_eq!(answers, [2, 4]); // syndromes 3 and 5: qubits 2 and 4
//! # Ok::<(), backline_transport::Error>(())
//! ```

use std::fmt;
use std::time::Instant;

use backline_wire::DecoderId;

use crate::session::{Controller, ControllerSession, Reply};
use crate::{Error, Result};

/// Rounds to several coprocessors at once (see the module docs).
pub struct FanOut {
    sessions: Vec<ControllerSession>,
    /// Which sessions the round in progress posted to (kept, so a round allocates nothing).
    posted: Vec<bool>,
}

/// The coprocessors whose part of a fan-out round failed, each with its index, its peer and
/// its error; the other coprocessors' parts completed.
#[derive(Debug)]
pub struct FanOutError {
    /// `(index, peer, error)` of every coprocessor that failed, in index order.
    pub failed: Vec<(usize, String, Error)>,
}

impl fmt::Display for FanOutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, (i, peer, e)) in self.failed.iter().enumerate() {
            if k > 0 {
                f.write_str("; ")?;
            }
            write!(f, "coprocessor {i} ({peer}): {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for FanOutError {}

impl FanOut {
    /// A fan-out over `sessions` (started controller sessions, one per coprocessor).
    pub fn new(sessions: Vec<ControllerSession>) -> Result<FanOut> {
        if sessions.is_empty() {
            return Err(Error::Invalid(
                "a fan-out needs at least one session".into(),
            ));
        }
        Ok(FanOut {
            posted: vec![false; sessions.len()],
            sessions,
        })
    }

    /// The coprocessors.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// True when there are none (never: [`FanOut::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// The sessions, by coprocessor index.
    pub fn sessions(&self) -> &[ControllerSession] {
        &self.sessions
    }

    /// One session, for rounds to that coprocessor alone.
    pub fn session_mut(&mut self, i: usize) -> Option<&mut ControllerSession> {
        self.sessions.get_mut(i)
    }

    /// Takes the sessions back.
    pub fn into_sessions(self) -> Vec<ControllerSession> {
        self.sessions
    }

    /// Stages `requests[i]` (payload, decoder id) on coprocessor `i` and posts it, for every
    /// `i`; one request per coprocessor. A coprocessor that refuses is named; the others are
    /// posted all the same (collect them with [`FanOut::collect_all`]).
    pub fn post_all(&mut self, requests: &[(&[u8], DecoderId)]) -> Result<(), FanOutError> {
        if requests.len() != self.sessions.len() {
            let e = Error::Invalid(format!(
                "{} requests for {} coprocessors: one each",
                requests.len(),
                self.sessions.len()
            ));
            return Err(FanOutError {
                failed: vec![(0, self.sessions[0].peer().to_string(), e)],
            });
        }
        let mut failed = Vec::new();
        for (i, (s, &(payload, id))) in self.sessions.iter_mut().zip(requests).enumerate() {
            let r = s.stage_payload(payload, id).and_then(|()| s.post());
            self.posted[i] = r.is_ok();
            if let Err(e) = r {
                failed.push((i, s.peer().to_string(), e));
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(FanOutError { failed })
        }
    }

    /// Collects the reply of every coprocessor posted to by the last [`FanOut::post_all`],
    /// handing each to `f(index, reply, arrival)` as it arrives ([`collect_posted`]).
    pub fn collect_all(
        &mut self,
        f: impl FnMut(usize, Reply<'_>, Instant),
    ) -> Result<(), FanOutError> {
        collect_posted(&mut self.sessions, &mut self.posted, f)
    }
}

/// A controller session as [`collect_posted`] reaches it: owned, or behind a lock (the C ABI's
/// sessions).
pub trait ControllerMut {
    /// The session.
    fn controller(&mut self) -> &mut ControllerSession;
}

impl ControllerMut for ControllerSession {
    fn controller(&mut self) -> &mut ControllerSession {
        self
    }
}

impl ControllerMut for std::sync::MutexGuard<'_, ControllerSession> {
    fn controller(&mut self) -> &mut ControllerSession {
        self
    }
}

/// Collects one reply from each session `i` with `posted[i]` set (clearing it), handing each
/// to `f(index, reply, arrival)` as it arrives: the sessions are polled in turn, and when a
/// pass finds nothing, the first one still out is waited for as [`Controller::collect`] waits
/// (spin, then block), so a slow one does not hold back the others' hand-over and a waiting
/// controller leaves its CPU to the coprocessors. A reply that does not come within its
/// session's reply timeout, and any failed collect, is named in the error; the rest are handed
/// over.
pub fn collect_posted<S: ControllerMut>(
    sessions: &mut [S],
    posted: &mut [bool],
    mut f: impl FnMut(usize, Reply<'_>, Instant),
) -> Result<(), FanOutError> {
    let mut pending = posted.iter().filter(|&&p| p).count();
    let mut failed = Vec::new();
    while pending > 0 {
        let mut progress = false;
        for (i, s) in sessions.iter_mut().enumerate() {
            if !posted[i] {
                continue;
            }
            let s = s.controller();
            let arrived = match s.reply_slot() {
                Ok(Some(_)) => true,
                Ok(None) => false,
                Err(e) => {
                    posted[i] = false;
                    pending -= 1;
                    failed.push((i, s.peer().to_string(), e));
                    continue;
                }
            };
            if !arrived {
                continue;
            }
            let at = Instant::now();
            posted[i] = false;
            pending -= 1;
            progress = true;
            match s.collect() {
                Ok(reply) => f(i, reply, at),
                Err(e) => failed.push((i, s.peer().to_string(), e)),
            }
        }
        if pending > 0 && !progress {
            // Nothing arrived in a pass: wait on the first one still out, as a collect waits
            // (its spin budget, then blocking, up to its reply timeout), so that a controller
            // short of CPUs leaves them to the coprocessors; a timeout names it.
            if let Some(i) = posted.iter().position(|&p| p) {
                posted[i] = false;
                pending -= 1;
                let s = sessions[i].controller();
                match s.collect() {
                    Ok(reply) => f(i, reply, Instant::now()),
                    Err(e) => failed.push((i, s.peer().to_string(), e)),
                }
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        failed.sort_by_key(|e| e.0);
        Err(FanOutError { failed })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use backline_responder::{Echo, ResponderTable, Steane};
    use backline_wire::Geometry;

    use super::*;
    use crate::{CoprocessorSession, ServeOptions, Session, SessionConfig, TransportKind};

    fn server(key: &str, config: &SessionConfig, table: &ResponderTable) -> CoprocessorSession {
        CoprocessorSession::open(key, config.clone(), "", 0, table, ServeOptions::default())
            .unwrap()
    }

    #[test]
    fn every_coprocessor_answers_its_own_request_whatever_its_geometry() {
        let small = SessionConfig::new(TransportKind::Memcpy);
        let mut big = small.clone();
        big.geometry = Geometry {
            depth: 16,
            slot_bytes: 128,
        };
        let steane = ResponderTable::single(Arc::new(Steane));
        let echo = ResponderTable::single(Arc::new(Echo));
        let _a = server("fan-t-a", &small, &steane);
        let _b = server("fan-t-b", &big, &echo);
        let sessions = vec![
            ControllerSession::open("fan-t-ac", small, "fan-t-a", 0).unwrap(),
            ControllerSession::open("fan-t-bc", big, "fan-t-b", 0).unwrap(),
        ];
        let mut fan = FanOut::new(sessions).unwrap();
        for round in 0..100u8 {
            let s = round & 7;
            fan.post_all(&[(&[s][..], 0), (&[round, 7, 9][..], 0)])
                .unwrap();
            let mut got = vec![Vec::new(); 2];
            fan.collect_all(|i, r, _| got[i] = r.payload.to_vec())
                .unwrap();
            assert_eq!(got[0], [backline_decoders::steane::decode(s)]);
            assert_eq!(got[1], [round, 7, 9]);
        }
    }

    #[test]
    fn a_coprocessor_that_goes_away_is_named_and_the_others_stay_usable() {
        let mut config = SessionConfig::new(TransportKind::Memcpy);
        config.reply_timeout = Duration::from_millis(200);
        let steane = ResponderTable::single(Arc::new(Steane));
        let _a = server("fan-g-a", &config, &steane);
        let mut b = server("fan-g-b", &config, &steane);
        let sessions = vec![
            ControllerSession::open("fan-g-ac", config.clone(), "fan-g-a", 0).unwrap(),
            ControllerSession::open("fan-g-bc", config, "fan-g-b", 0).unwrap(),
        ];
        let mut fan = FanOut::new(sessions).unwrap();
        fan.post_all(&[(&[1][..], 0), (&[2][..], 0)]).unwrap();
        fan.collect_all(|_, _, _| {}).unwrap();
        b.stop().unwrap();
        let mut answered = Vec::new();
        let e = match fan.post_all(&[(&[3][..], 0), (&[4][..], 0)]) {
            Ok(()) => fan.collect_all(|i, _, _| answered.push(i)).unwrap_err(),
            Err(e) => e,
        };
        assert_eq!(e.failed.len(), 1, "{e}");
        assert_eq!(e.failed[0].0, 1, "{e}");
        assert!(
            e.to_string()
                .starts_with("coprocessor 1 (memcpy:fan-g-b): "),
            "{e}"
        );
        // Coprocessor 0 answered that round (when it was posted) and answers the next one.
        let s = fan.session_mut(0).unwrap();
        s.stage_payload(&[5], 0).unwrap();
        s.post().unwrap();
        assert_eq!(s.collect().unwrap().payload, &[4]);
    }

    #[test]
    fn one_request_per_coprocessor() {
        let config = SessionConfig::new(TransportKind::Memcpy);
        let steane = ResponderTable::single(Arc::new(Steane));
        let _a = server("fan-n-a", &config, &steane);
        let s = ControllerSession::open("fan-n-ac", config, "fan-n-a", 0).unwrap();
        let mut fan = FanOut::new(vec![s]).unwrap();
        let e = fan.post_all(&[(&[1][..], 0), (&[2][..], 0)]).unwrap_err();
        assert!(
            e.to_string().contains("2 requests for 1 coprocessors"),
            "{e}"
        );
        assert!(FanOut::new(Vec::new()).is_err());
    }
}
