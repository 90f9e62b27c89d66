//! The sw-loop: the controller's thread runs every round through a session, timing each from
//! just before `stage_payload` to just after `collect`, optionally paced by the software
//! pacer (whose quiet period is never part of the RTT), and checks each reply.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use backline_pacer::{Pacer, PacerConfig};
use backline_transport::{Controller, ControllerSession, Error};
use backline_wire::{DecoderId, Status};

use crate::progress::{Progress, Show};
use crate::sampler::{SyndromeSampler, Verdict};
use crate::trace::{Clock, RoundStatus, Trace, TraceRow};

/// What each round sends, and how its reply is checked.
#[derive(Debug, Clone)]
pub enum Requests {
    /// [`request_payload`]'s counters, `payload_bytes` long; replies checked as the named
    /// built-in responder (`echo`, `steane`) would answer, or any ok reply accepted (`None`).
    Counters {
        /// Built-in responder name used to check replies.
        check_as: Option<String>,
    },
    /// Real syndromes of seeded errors ([`SyndromeSampler`]), sized by the code; a reply is
    /// right when its correction reproduces the syndrome, and logical failures are counted.
    Syndromes(Box<SyndromeSampler>),
}

impl Requests {
    /// The requests for responder `spec`: real syndromes for a `bposd:` or `matching:` spec —
    /// of its X-check half when `half` is even, its Z-check half when odd — at `error_rate`
    /// (default: a `bposd:` spec's own `error_rate`, 0.05 for `matching:`) from `seed`;
    /// counters checked as `check_as` otherwise.
    pub fn for_spec(
        spec: &str,
        half: u32,
        error_rate: Option<f64>,
        seed: u64,
        in_flight: usize,
        check_as: Option<String>,
    ) -> Result<Requests, backline_responder::SpecError> {
        // A GPU BP+OSD function (`gpu:bposd:…`) takes the same syndromes and answers the same
        // corrections as the CPU one.
        let (code, default_rate) = if spec
            .strip_prefix("gpu:")
            .unwrap_or(spec)
            .starts_with("bposd:")
        {
            let (code, config) = backline_responder::bposd_code(spec)?;
            (code, config.error_rate)
        } else if spec.starts_with("matching:") {
            (backline_responder::matching_code(spec)?, 0.05)
        } else {
            return Ok(Requests::Counters { check_as });
        };
        let half = if half.is_multiple_of(2) {
            crate::sampler::Half::XChecks
        } else {
            crate::sampler::Half::ZChecks
        };
        let p = error_rate.unwrap_or(default_rate);
        Ok(Requests::Syndromes(Box::new(SyndromeSampler::new(
            &code, half, p, seed, in_flight,
        ))))
    }

    /// Request bytes when the requests fix them (syndromes), else `None`.
    pub fn request_bytes(&self) -> Option<usize> {
        match self {
            Requests::Syndromes(s) => Some(s.request_bytes()),
            Requests::Counters { .. } => None,
        }
    }

    /// Reply bytes when the requests fix them (syndromes), else `None`.
    pub fn reply_bytes(&self) -> Option<usize> {
        match self {
            Requests::Syndromes(s) => Some(s.reply_bytes()),
            Requests::Counters { .. } => None,
        }
    }
}

/// What one sw-loop run does.
#[derive(Debug, Clone)]
pub struct SwLoop {
    /// Rounds, round 0 included.
    pub rounds: u64,
    /// Request payload length (for [`Requests::Syndromes`], the sampler's request length).
    pub payload_bytes: usize,
    /// The `decoder_id` of every request.
    pub decoder_id: DecoderId,
    /// What the requests are and how replies are checked.
    pub requests: Requests,
    /// Quiet periods between rounds.
    pub pacer: PacerConfig,
    /// Clock of the pacer's cycles.
    pub clock_mhz: f64,
    /// When to show progress on stderr (runs longer than a second).
    pub progress: Show,
    /// Label for the progress line.
    pub label: String,
    /// Set (by a SIGINT handler) to end the run at the next round boundary: no more rounds
    /// are posted, those in flight are collected.
    pub stop: Option<Arc<AtomicBool>>,
}

/// The outcome of a run: a trace with one row per round attempted, and the error that ended
/// it early, if any.
#[derive(Debug)]
pub struct SwLoopResult {
    /// One row per round attempted.
    pub trace: Trace,
    /// Rounds that completed with the expected reply.
    pub completed: u64,
    /// Replies that arrived but were wrong (content or status).
    pub mismatches: u64,
    /// Right replies whose correction left a logical error ([`Requests::Syndromes`]).
    pub logical_failures: u64,
    /// What stopped the run before its last round.
    pub error: Option<Error>,
    /// Whether [`SwLoop::stop`] ended the run before its last round.
    pub interrupted: bool,
}

/// Fills `buf` with the request of `round`: byte 0 cycles through the eight Steane syndromes;
/// the bytes after it carry the round number (little-endian, repeated), so echo replies are
/// unique per round.
pub fn request_payload(round: u64, buf: &mut [u8]) {
    let r = round.to_le_bytes();
    if let Some((first, rest)) = buf.split_first_mut() {
        *first = (round % 8) as u8;
        for (i, b) in rest.iter_mut().enumerate() {
            *b = r[i % 8] ^ (i / 8) as u8;
        }
    }
}

/// Waits until `until`: sleeps through most of a long gap, spins the last stretch.
fn quiet_until(until: Instant) {
    loop {
        let now = Instant::now();
        if now >= until {
            return;
        }
        let left = until - now;
        if left > Duration::from_micros(200) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            core::hint::spin_loop();
        }
    }
}

/// Rows for `rounds`, posted but never to be collected: the session ended while they were in
/// flight (`started` and `quiet` are indexed by round % in flight).
fn abandon(
    trace: &mut Trace,
    rounds: std::ops::Range<u64>,
    now: Instant,
    started: &[Instant],
    quiet: &[f64],
) {
    for round in rounds {
        let j = (round % started.len() as u64) as usize;
        trace.rows.push(TraceRow {
            round,
            rtt_ns: (now - started[j]).as_nanos() as f64,
            rtt_cycles: None,
            quiet_ns: quiet[j],
            status: RoundStatus::Abandoned,
            cold: round == 0,
        });
    }
}

/// Runs `cfg.rounds` rounds, `in_flight` at a time as the session allows.
pub fn run(session: &mut ControllerSession, cfg: &SwLoop) -> SwLoopResult {
    let mut requests = cfg.requests.clone();
    use backline_transport::Session as _;
    let in_flight = session.config().in_flight.max(1) as u64;
    let mut trace = Trace::with_capacity(Clock::HostNs, cfg.rounds as usize);
    let mut pacer = Pacer::new(cfg.pacer).expect("pacer settings validated by the caller");
    let ns_per_cycle = 1000.0 / cfg.clock_mhz;
    let mut req = vec![0u8; cfg.payload_bytes];
    let mut expect = Vec::with_capacity(cfg.payload_bytes.max(1));
    let mut check_buf = vec![0u8; cfg.payload_bytes];
    // Start times and quiet periods of the rounds in flight, by round % in_flight.
    let mut started = vec![Instant::now(); in_flight as usize];
    let mut quiet = vec![0f64; in_flight as usize];
    let progress = Progress::start(&cfg.label, "rounds", cfg.rounds, cfg.progress);
    let (mut completed, mut mismatches) = (0u64, 0u64);
    let mut posted = 0u64;
    let mut error = None;
    let b2b = cfg.pacer.is_b2b();
    // The last round + 1: cfg.rounds, or the rounds posted when a stop was asked for.
    let mut end = cfg.rounds;
    let mut interrupted = false;

    let mut round = 0;
    'run: while round < end {
        // Relaxed: the flag carries no data; the next round boundary is soon enough.
        if !interrupted
            && let Some(stop) = &cfg.stop
            && stop.load(Ordering::Relaxed)
        {
            interrupted = true;
            end = posted;
            if round >= end {
                break;
            }
        }
        // Post until `in_flight` rounds are out (or all are posted).
        while posted < end && posted < round + in_flight {
            match &mut requests {
                Requests::Counters { .. } => request_payload(posted, &mut req),
                Requests::Syndromes(s) => s.fill(posted, &mut req),
            }
            let q = if b2b {
                0.0
            } else {
                let gap = pacer.next_interval_cycles() as f64 * ns_per_cycle;
                quiet_until(Instant::now() + Duration::from_nanos(gap as u64));
                gap
            };
            let i = (posted % in_flight) as usize;
            quiet[i] = q;
            started[i] = Instant::now();
            if let Err(e) = session
                .stage_payload(&req, cfg.decoder_id)
                .and_then(|_| session.post())
            {
                // Not posted; the rounds already in flight will never be collected now.
                abandon(&mut trace, round..posted, Instant::now(), &started, &quiet);
                error = Some(e);
                break 'run;
            }
            posted += 1;
        }
        let i = (round % in_flight) as usize;
        let reply = session.collect();
        let done = Instant::now();
        let rtt_ns = (done - started[i]).as_nanos() as f64;
        let status = match reply {
            Ok(r) => {
                let ok = r.status == Status::Ok
                    && match &mut requests {
                        Requests::Counters { check_as: None } => true,
                        Requests::Counters {
                            check_as: Some(name),
                        } => {
                            request_payload(round, &mut check_buf);
                            backline_responder::expected_reply(name, &check_buf, &mut expect)
                                .is_none_or(|()| r.payload == expect.as_slice())
                        }
                        Requests::Syndromes(s) => s.check(round, r.payload) != Verdict::Wrong,
                    };
                if ok {
                    completed += 1;
                    RoundStatus::Ok
                } else {
                    mismatches += 1;
                    match r.status {
                        Status::Ok => RoundStatus::Mismatch,
                        Status::UnknownDecoder => RoundStatus::UnknownDecoder,
                        Status::BadLength => RoundStatus::BadLength,
                        Status::DecoderFailed => RoundStatus::DecoderFailed,
                    }
                }
            }
            Err(e) => {
                let status = match e {
                    backline_transport::Error::Timeout { .. } => RoundStatus::Timeout,
                    _ => RoundStatus::Error,
                };
                trace.rows.push(TraceRow {
                    round,
                    rtt_ns,
                    rtt_cycles: None,
                    quiet_ns: quiet[i],
                    status,
                    cold: round == 0,
                });
                // The session is over: the rounds behind this one in flight get a row each,
                // so that every posted round is in the trace.
                abandon(&mut trace, round + 1..posted, done, &started, &quiet);
                error = Some(e);
                break 'run;
            }
        };
        trace.rows.push(TraceRow {
            round,
            rtt_ns,
            rtt_cycles: None,
            quiet_ns: quiet[i],
            status,
            cold: round == 0,
        });
        round += 1;
        progress.set(round);
    }
    progress.finish();
    let logical_failures = match &requests {
        Requests::Syndromes(s) => s.logical_failures(),
        Requests::Counters { .. } => 0,
    };
    SwLoopResult {
        trace,
        completed,
        mismatches,
        logical_failures,
        error,
        interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_differ_per_round_and_cycle_syndromes() {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        request_payload(9, &mut a);
        request_payload(17, &mut b);
        assert_eq!(a[0], 1);
        assert_eq!(b[0], 1);
        assert_ne!(a, b);
        let mut empty = [];
        request_payload(3, &mut empty);
    }
}
