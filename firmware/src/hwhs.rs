//! The HWHS driver: run preparation (reference memory, pacer, round count, flags), sw-loop
//! and hw-loop runs with status polling, single rounds with a caller's payload, abort, and
//! the trace RAM read-out into `backline bench`'s CSV format.
//!
//! Every register offset and field comes from `backline-regmap`. The engine timestamps each
//! round itself (doorbell to reply, in cycles of `backline_regmap::CLOCK_HZ`), so how fast the Arm polls never changes
//! a recorded RTT; polling only decides how soon the next sw-loop round starts.

use std::time::{Duration, Instant};

use backline_bench::{Clock, Trace};
use backline_board::workload::Workload;
use backline_pacer::{Pacer, PacerConfig, PacerError};
use backline_regmap as rm;

use crate::error::Error;
use crate::mmio::{Block, Mmio, Op};
use crate::regs::{cycles, poll_status, poll_status_timed, rd, status_text, wait, wait_idle, wr};

pub use backline_regmap::Mode;

/// What the replies are checked against (the reference memory's expected words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// No check; payloads still cycle through the 8 Steane syndromes.
    Nothing,
    /// The peer echoes the payload.
    Echo,
    /// The peer decodes Steane `[[7,1,3]]` syndromes.
    Steane,
    /// The payloads, lengths, decoder id and expected replies of a workload: sampled
    /// syndromes of a decoder function and what that function answers them here
    /// (`backline-apu run --expect FUNCTION`).
    Workload(Workload),
}

impl Expect {
    /// The expected reply word for request word `syndrome` (of the 8-syndrome table).
    pub fn reply_for(&self, syndrome: u32) -> u32 {
        match self {
            Expect::Steane => u32::from(backline_decoders::steane::correction(syndrome as u8)),
            _ => syndrome,
        }
    }

    /// The workload the reference memory is loaded with.
    pub fn workload(&self) -> Workload {
        match self {
            Expect::Workload(w) => w.clone(),
            other => Workload::table(
                match other {
                    Expect::Steane => "steane",
                    Expect::Echo => "echo",
                    _ => "none",
                },
                4,
                (0..REF_SYNDROMES)
                    .map(|s| (s, other.reply_for(s)))
                    .collect(),
            ),
        }
    }
}

/// The reference syndromes every run loads (all 3-bit Steane syndromes).
pub const REF_SYNDROMES: u32 = 8;

/// Settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// sw-loop or hw-loop.
    pub mode: Mode,
    /// Pacer: b2b is `PacerConfig::B2B`.
    pub pacer: PacerConfig,
    /// Rounds, round 0 included (hw-loop: at most 2^32 − 1, the width of `ROUNDS`).
    pub rounds: u64,
    /// What replies are checked against.
    pub expect: Expect,
    /// Skip quiet periods longer than [`FAST_FORWARD_ABOVE_CYCLES`] (`CTRL.pacer_skip` in
    /// hw-loop; no host wait in sw-loop). Recorded RTTs are unaffected.
    pub fast_forward: bool,
    /// Status poll interval (`None`: 200 ns sw-loop; hw-loop 200 µs b2b, 2 µs paced with
    /// fast-forward, 1 ms paced without).
    pub poll: Option<Duration>,
    /// End the run with [`Error::RoundTimedOut`] at the first round that times out (hw-loop:
    /// seen at the next poll, then `CTRL.abort`), instead of counting it and going on.
    pub stop_on_timeout: bool,
    /// The engine's reply timeout for this run, cycles (`None`: what the bring-up wrote,
    /// `hwhs.timeout_us`).
    pub timeout_cycles: Option<u32>,
}

impl RunSpec {
    /// A b2b run of `rounds` rounds.
    pub fn b2b(mode: Mode, rounds: u64) -> RunSpec {
        RunSpec {
            mode,
            pacer: PacerConfig::B2B,
            rounds,
            expect: Expect::Nothing,
            fast_forward: false,
            poll: None,
            stop_on_timeout: false,
            timeout_cycles: None,
        }
    }

    /// Checks the settings before any register is written; errors name the register.
    pub fn validate(&self) -> Result<(), Error> {
        self.pacer.validate().map_err(|e| {
            let (register, value) = match e {
                PacerError::ZeroSeed => ("PACER_SEED", "0".to_string()),
                PacerError::SpanNotMask(s) => ("PACER_SPAN", format!("{s:#010x}")),
                PacerError::IntervalOverflow { freq, .. } => ("PACER_FREQ", freq.to_string()),
            };
            Error::BadValue {
                register: register.into(),
                value,
                reason: e.to_string(),
            }
        })?;
        let max = match self.mode {
            Mode::SwLoop => u64::MAX,
            Mode::HwLoop => u64::from(u32::MAX),
        };
        if let Expect::Workload(w) = &self.expect {
            w.validate().map_err(|reason| Error::BadValue {
                register: "REF_LEN".into(),
                value: w.name.clone(),
                reason,
            })?;
        }
        if self.rounds == 0 || self.rounds > max {
            return Err(Error::BadValue {
                register: "ROUNDS".into(),
                value: self.rounds.to_string(),
                reason: format!("{} runs take 1 ..= {max} rounds", self.mode.name()),
            });
        }
        Ok(())
    }

    fn poll_interval(&self) -> Duration {
        self.poll.unwrap_or(match self.mode {
            Mode::SwLoop => Duration::from_nanos(200),
            Mode::HwLoop if self.pacer.is_b2b() => Duration::from_micros(200),
            Mode::HwLoop if self.fast_forward => Duration::from_micros(2),
            Mode::HwLoop => Duration::from_millis(1),
        })
    }
}

/// Quiet periods longer than this are skipped when fast-forwarding (cycles).
pub const FAST_FORWARD_ABOVE_CYCLES: u32 = 4096;

/// What a run produced (the trace itself is read with [`read_trace`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// `ROUND_COUNT` after the run.
    pub rounds_committed: u64,
    /// `TIMEOUT_COUNT`.
    pub timeouts: u64,
    /// `ERNIC_ERR_COUNT`: ERNIC-side AXI errors the engine's adapter saw (each failing its
    /// round unless the reply came anyway).
    pub ernic_errors: u64,
    /// `MISMATCH_COUNT`.
    pub mismatches: u64,
    /// `TRACE_COUNT`.
    pub trace_count: u64,
    /// `TRACE_STATUS.full`.
    pub trace_full: bool,
    /// `TRACE_STATUS.saturated`.
    pub trace_saturated: bool,
    /// Quiet cycles skipped by fast-forward.
    pub skipped_cycles: u64,
    /// Wall-clock time of the run on the Arm (or the simulator's host).
    pub wall: Duration,
}

/// Soft reset, reference memory, pacer, round count and flags for `spec`.
pub fn prepare<M: Mmio + ?Sized>(m: &mut M, spec: &RunSpec) -> Result<(), Error> {
    spec.validate()?;
    wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_SOFT_RESET.bits(1))?;
    wait_idle(m, "after CTRL.soft_reset")?;
    let w = spec.expect.workload();
    let table = match &spec.expect {
        Expect::Workload(_) => w.hwhs_writes(),
        // The 8-syndrome table keeps the configured payload and reply lengths.
        _ => w
            .hwhs_writes()
            .into_iter()
            .filter(|(off, _)| ![rm::PAY_LEN, rm::RPL_LEN, rm::DECODER_ID].contains(off))
            .collect(),
    };
    for (off, v) in table {
        wr(m, Block::Hwhs, off, v)?;
    }
    if let Some(t) = spec.timeout_cycles {
        wr(m, Block::Hwhs, rm::TIMEOUT, t)?;
    }
    wr(m, Block::Hwhs, rm::PACER_FREQ, spec.pacer.freq)?;
    wr(m, Block::Hwhs, rm::PACER_SPAN, spec.pacer.span)?;
    wr(m, Block::Hwhs, rm::PACER_SEED, spec.pacer.seed)?;
    let rounds = match spec.mode {
        Mode::SwLoop => 0,
        Mode::HwLoop => spec.rounds as u32,
    };
    wr(m, Block::Hwhs, rm::ROUNDS, rounds)?;
    let flags = rm::FLAGS_USE_REF.bits(1)
        | rm::FLAGS_CHECK.bits(u32::from(spec.expect != Expect::Nothing))
        | rm::FLAGS_PREPOST.bits(1)
        | rm::FLAGS_HW_LOOP.bits(u32::from(spec.mode == Mode::HwLoop));
    wr(m, Block::Hwhs, rm::FLAGS, flags)?;
    m.barrier();
    Ok(())
}

/// The device time one round may take before it counts as hung: the reply timeout plus
/// 100 µs.
fn round_budget<M: Mmio + ?Sized>(m: &mut M) -> Result<Duration, Error> {
    let t = rd(m, Block::Hwhs, rm::TIMEOUT)?;
    Ok(cycles(u64::from(t)) + Duration::from_micros(100))
}

/// Runs a prepared run to its end; `progress(done, total)` is called now and then.
pub fn run<M: Mmio + ?Sized>(
    m: &mut M,
    spec: &RunSpec,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunReport, Error> {
    let t0 = Instant::now();
    let poll = spec.poll_interval();
    let budget = round_budget(m)?;
    let mut rep = RunReport::default();
    let total = spec.rounds;
    match spec.mode {
        Mode::SwLoop => {
            let mut pacer = Pacer::new(spec.pacer).map_err(|e| Error::BadValue {
                register: "PACER_SPAN".into(),
                value: format!("{:#x}", spec.pacer.span),
                reason: e.to_string(),
            })?;
            let mut expect_wait = Duration::ZERO;
            for k in 0..total {
                let quiet = u64::from(pacer.next_interval_cycles());
                if quiet > 0 {
                    if spec.fast_forward && quiet > u64::from(FAST_FORWARD_ABOVE_CYCLES) {
                        rep.skipped_cycles += quiet;
                    } else {
                        wait(m, cycles(quiet))?;
                    }
                }
                wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_START.bits(1))?;
                // Wait about as long as the last round took before the first poll, so a
                // round costs a few bus reads instead of one per poll interval; the round's
                // end is still seen within one interval, and the RTT is the engine's.
                if !expect_wait.is_zero() {
                    wait(m, expect_wait)?;
                }
                let (s, waited) = poll_status_timed(
                    m,
                    &|| format!("the end of sw-loop round {k}"),
                    poll,
                    budget.saturating_sub(expect_wait),
                    &|s| rm::STATUS_DONE.get(s) == 1,
                )?;
                if spec.stop_on_timeout && rm::STATUS_TIMEOUT.get(s) == 1 {
                    return Err(Error::RoundTimedOut {
                        round: k,
                        rounds: k + 1,
                    });
                }
                expect_wait = (expect_wait + waited).saturating_sub(poll).min(budget / 2);
                if k % 1024 == 1023 {
                    progress(k + 1, total);
                }
            }
        }
        Mode::HwLoop => {
            wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_START.bits(1))?;
            let quiet_max = if spec.pacer.is_b2b() {
                Duration::ZERO
            } else {
                cycles(u64::from(spec.pacer.freq) + u64::from(spec.pacer.span))
            };
            let stall_budget = budget + quiet_max + Duration::from_millis(1);
            let mut last_count = 0u64;
            let mut since_progress = Duration::ZERO;
            loop {
                let s = rd(m, Block::Hwhs, rm::STATUS)?;
                if rm::STATUS_DONE.get(s) == 1 && rm::STATUS_RUNNING.get(s) == 0 {
                    break;
                }
                let count = u64::from(rd(m, Block::Hwhs, rm::ROUND_COUNT)?);
                if spec.stop_on_timeout && rd(m, Block::Hwhs, rm::TIMEOUT_COUNT)? > 0 {
                    abort(m)?;
                    let rounds = u64::from(rd(m, Block::Hwhs, rm::ROUND_COUNT)?);
                    // The trace says which round it was (0 marks a timeout), when it holds it.
                    let round = read_trace_entries(m)?
                        .iter()
                        .position(|&e| e == 0)
                        .map_or(count, |k| k as u64);
                    return Err(Error::RoundTimedOut { round, rounds });
                }
                if count != last_count {
                    if count / 1024 != last_count / 1024 {
                        progress(count, total);
                    }
                    last_count = count;
                    since_progress = Duration::ZERO;
                }
                if spec.fast_forward && !spec.pacer.is_b2b() {
                    let remain = rd(m, Block::Hwhs, rm::PACER_REMAIN)?;
                    if remain > FAST_FORWARD_ABOVE_CYCLES {
                        wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_PACER_SKIP.bits(1))?;
                        rep.skipped_cycles += u64::from(remain);
                        continue;
                    }
                }
                if since_progress > stall_budget {
                    return Err(Error::Timeout {
                        what: format!(
                            "the hw-loop run stalled at round {count} of {total} (no round \
                             committed for {stall_budget:?})"
                        ),
                        register: "STATUS",
                        value: s,
                        detail: format!(" ({})", status_text(s)),
                    });
                }
                wait(m, poll)?;
                since_progress += poll;
            }
        }
    }
    progress(total, total);
    rep.rounds_committed = u64::from(rd(m, Block::Hwhs, rm::ROUND_COUNT)?);
    rep.timeouts = u64::from(rd(m, Block::Hwhs, rm::TIMEOUT_COUNT)?);
    rep.ernic_errors = u64::from(rd(m, Block::Hwhs, rm::ERNIC_ERR_COUNT)?);
    rep.mismatches = u64::from(rd(m, Block::Hwhs, rm::MISMATCH_COUNT)?);
    rep.trace_count = u64::from(rd(m, Block::Hwhs, rm::TRACE_COUNT)?);
    let ts = rd(m, Block::Hwhs, rm::TRACE_STATUS)?;
    rep.trace_full = rm::TRACE_STATUS_FULL.get(ts) == 1;
    rep.trace_saturated = rm::TRACE_STATUS_SATURATED.get(ts) == 1;
    rep.wall = t0.elapsed();
    Ok(rep)
}

/// Stops a hw-loop run after the round in progress and waits until the engine is idle.
pub fn abort<M: Mmio + ?Sized>(m: &mut M) -> Result<(), Error> {
    wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_ABORT.bits(1))?;
    wait_idle(m, "after CTRL.abort").map(|_| ())
}

/// The outcome of one round with a caller's payload ([`round`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundOutcome {
    /// Reply payload bytes 0..3 (`LAST_REPLY`, little-endian; bytes beyond `reply_len` are
    /// 0).
    pub reply: u32,
    /// The reply's `payload_len` (`LAST_RPL_LEN`); 0 when the round timed out.
    pub reply_len: u32,
    /// RTT in engine cycles (`LAST_RTT`), doorbell to reply detection.
    pub rtt_cycles: u32,
    /// The reply's status word (`LAST_RPL_STATUS`: status 15:0, kind 23:16, version 31:24).
    pub reply_status: u32,
    /// The round ended in the reply timeout.
    pub timed_out: bool,
}

impl RoundOutcome {
    /// The reply payload as bytes, when it fits `LAST_REPLY` (at most 4 bytes).
    pub fn reply_bytes(&self) -> Option<Vec<u8>> {
        (self.reply_len as usize <= 4)
            .then(|| self.reply.to_le_bytes()[..self.reply_len as usize].to_vec())
    }
}

/// Puts the engine into single-round sw-loop mode (soft reset, payload from `PAYLOAD0..3`,
/// no reference check), for [`round`].
pub fn begin_rounds<M: Mmio + ?Sized>(m: &mut M) -> Result<(), Error> {
    wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_SOFT_RESET.bits(1))?;
    wait_idle(m, "after CTRL.soft_reset")?;
    wr(m, Block::Hwhs, rm::FLAGS, rm::FLAGS_PREPOST.bits(1))?;
    m.barrier();
    Ok(())
}

/// One sw-loop round carrying `payload` (1 ..= 16 bytes) with `decoder_id` in its header:
/// write `PAYLOAD0..`, `PAY_LEN` and `DECODER_ID`, start, poll, read the reply, its length
/// and the RTT.
pub fn round<M: Mmio + ?Sized>(
    m: &mut M,
    payload: &[u8],
    decoder_id: u32,
) -> Result<RoundOutcome, Error> {
    if payload.is_empty() || payload.len() > rm::MAX_PAYLOAD_BYTES as usize {
        return Err(Error::BadValue {
            register: "PAY_LEN".into(),
            value: payload.len().to_string(),
            reason: format!(
                "a round carries 1 ..= {} payload bytes",
                rm::MAX_PAYLOAD_BYTES
            ),
        });
    }
    for (i, chunk) in payload.chunks(4).enumerate() {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        wr(
            m,
            Block::Hwhs,
            rm::PAYLOAD0 + 4 * i as u32,
            u32::from_le_bytes(w),
        )?;
    }
    wr(m, Block::Hwhs, rm::PAY_LEN, payload.len() as u32)?;
    wr(m, Block::Hwhs, rm::DECODER_ID, decoder_id)?;
    let budget = round_budget(m)?;
    wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_START.bits(1))?;
    let s = poll_status(
        m,
        &|| "the end of the round".to_string(),
        Duration::from_nanos(200),
        budget,
        &|s| rm::STATUS_DONE.get(s) == 1,
    )?;
    let timed_out = rm::STATUS_TIMEOUT.get(s) == 1;
    Ok(RoundOutcome {
        reply: rd(m, Block::Hwhs, rm::LAST_REPLY)?,
        reply_len: if timed_out {
            0
        } else {
            rd(m, Block::Hwhs, rm::LAST_RPL_LEN)?
        },
        rtt_cycles: rd(m, Block::Hwhs, rm::LAST_RTT)?,
        reply_status: rd(m, Block::Hwhs, rm::LAST_RPL_STATUS)?,
        timed_out,
    })
}

/// Reads every recorded trace entry (`TRACE_RD_ADDR` = 0, then `TRACE_COUNT` reads of
/// `TRACE_DATA`).
pub fn read_trace_entries<M: Mmio + ?Sized>(m: &mut M) -> Result<Vec<u16>, Error> {
    let n = rd(m, Block::Hwhs, rm::TRACE_COUNT)?;
    wr(m, Block::Hwhs, rm::TRACE_RD_ADDR, 0)?;
    let mut words = vec![0u32; n as usize];
    m.read_repeat(Block::Hwhs, rm::TRACE_DATA, &mut words)
        .map_err(|source| Error::Mmio {
            op: Op::Read,
            block: Block::Hwhs,
            register: "TRACE_DATA".into(),
            value: None,
            source,
        })?;
    Ok(words.into_iter().map(|w| w as u16).collect())
}

/// Reads the trace RAM into a `backline bench` trace: one row per recorded round, RTT in
/// cycles at 200 MHz, status from the entry (0 timeout, 1 ERNIC-side AXI error, 0xFFFF saturated), the quiet period
/// from the pacer settings the run used (the RTL pacer and `backline-pacer` draw the same
/// intervals), round 0 marked cold. `source` labels the header (`board`, `sim-board`).
pub fn read_trace<M: Mmio + ?Sized>(m: &mut M, source: &str) -> Result<Trace, Error> {
    let entries = read_trace_entries(m)?;
    let flags = rd(m, Block::Hwhs, rm::FLAGS)?;
    let mode = if rm::FLAGS_HW_LOOP.get(flags) == 1 {
        Mode::HwLoop
    } else {
        Mode::SwLoop
    };
    let pacer = PacerConfig {
        freq: rd(m, Block::Hwhs, rm::PACER_FREQ)?,
        span: rd(m, Block::Hwhs, rm::PACER_SPAN)?,
        seed: rd(m, Block::Hwhs, rm::PACER_SEED)?,
    };
    let overhead = rd(m, Block::Hwhs, rm::FSM_OVERHEAD)?;
    let qp = rd(m, Block::Hwhs, rm::QP_NUM)?;
    let ts = rd(m, Block::Hwhs, rm::TRACE_STATUS)?;
    let clock = Clock::Cycles { mhz: rm::CLOCK_MHZ };
    let mut trace = Trace::with_capacity(clock, entries.len());
    trace.set_meta("source", source);
    trace.set_meta("transport", "ernic");
    trace.set_meta("mode", mode.name());
    trace.set_meta(
        "cadence",
        backline_bench::trace::cadence_meta(&pacer, rm::CLOCK_MHZ),
    );
    trace.set_meta("qp", qp);
    trace.set_meta("fsm_overhead_cycles", overhead);
    trace.set_meta("trace_full", rm::TRACE_STATUS_FULL.get(ts));
    trace.set_meta("trace_saturated", rm::TRACE_STATUS_SATURATED.get(ts));
    trace.set_meta("version", env!("CARGO_PKG_VERSION"));
    // The quiet periods are the pacer's sequence (the engine draws them the same way).
    let quiet: Vec<u64> = if pacer.is_b2b() {
        vec![0; entries.len()]
    } else {
        let mut sw = Pacer::new(pacer).ok();
        (0..entries.len())
            .map(|_| {
                sw.as_mut()
                    .map_or(0, |p| u64::from(p.next_interval_cycles()))
            })
            .collect()
    };
    trace.push_engine_rounds(&entries, |k| quiet[k]);
    let splits = m.fabric_splits().map_err(|source| Error::Mmio {
        op: Op::Read,
        block: Block::Hwhs,
        register: "the simulated board's round splits".into(),
        value: None,
        source,
    })?;
    if let Some(f) = splits {
        trace.set_splits(&f.parts);
        trace.set_meta("fabric_latency_cycles", f.fabric_latency_cycles);
        trace.set_meta("service", f.service);
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mmio::fake::FakeMmio;

    #[test]
    fn bad_run_settings_name_their_register_and_write_nothing() {
        let mut f = FakeMmio::default();
        let mut spec = RunSpec::b2b(Mode::HwLoop, 100);
        spec.pacer = PacerConfig {
            freq: 1000,
            span: 0x0FFF_FFFE,
            seed: 1,
        };
        let e = prepare(&mut f, &spec).unwrap_err().to_string();
        assert!(
            e.starts_with("PACER_SPAN = 0x0ffffffe: span 0xffffffe is not of the form 2^N-1"),
            "{e}"
        );
        spec.pacer.span = 0xFF;
        spec.pacer.seed = 0;
        let e = prepare(&mut f, &spec).unwrap_err().to_string();
        assert!(e.starts_with("PACER_SEED = 0"), "{e}");
        spec.pacer.seed = 1;
        spec.rounds = 0;
        let e = prepare(&mut f, &spec).unwrap_err().to_string();
        assert!(e.starts_with("ROUNDS = 0: hw-loop runs take 1 ..="), "{e}");
        spec.rounds = 1 << 32;
        assert!(prepare(&mut f, &spec).is_err());
        assert!(f.writes().is_empty());
        spec.rounds = 10;
        prepare(&mut f, &spec).unwrap();
        assert_eq!(f.read32(Block::Hwhs, rm::PACER_SPAN).unwrap(), 0xFF);
        assert_eq!(f.read32(Block::Hwhs, rm::ROUNDS).unwrap(), 10);
    }

    #[test]
    fn a_round_that_never_ends_times_out_in_device_time() {
        let mut f = FakeMmio::default();
        f.set_hwhs(rm::TIMEOUT, 2000);
        let e = round(&mut f, &[7], 0).unwrap_err().to_string();
        assert!(
            e.contains("the end of the round did not happen within 110µs"),
            "{e}"
        );
        assert!(round(&mut f, &[], 0).is_err());
        assert!(round(&mut f, &[0; 17], 0).is_err());
        f.set_hwhs(
            rm::STATUS,
            rm::STATUS_DONE.bits(1) | rm::STATUS_REPLY_SEEN.bits(1),
        );
        f.set_hwhs(rm::LAST_REPLY, 7);
        f.set_hwhs(rm::LAST_RPL_LEN, 2);
        f.set_hwhs(rm::LAST_RTT, 250);
        let r = round(&mut f, &[7, 0, 0, 0, 8], 3).unwrap();
        assert_eq!(
            (r.reply, r.reply_len, r.rtt_cycles, r.timed_out),
            (7, 2, 250, false)
        );
        assert_eq!(r.reply_bytes(), Some(vec![7, 0]));
        assert_eq!(f.read32(Block::Hwhs, rm::PAYLOAD1).unwrap(), 8);
        assert_eq!(f.read32(Block::Hwhs, rm::PAY_LEN).unwrap(), 5);
        assert_eq!(f.read32(Block::Hwhs, rm::DECODER_ID).unwrap(), 3);
    }

    #[test]
    fn steane_references_are_the_decoder_table() {
        // No syndrome, no flip; each of the 7 others flips a different single qubit.
        assert_eq!(Expect::Steane.reply_for(0), 0);
        let mut seen = 0u32;
        for s in 1..8 {
            let c = Expect::Steane.reply_for(s);
            assert_eq!(c.count_ones(), 1, "syndrome {s}");
            seen |= c;
        }
        assert_eq!(seen, 0x7F);
        assert_eq!(Expect::Echo.reply_for(5), 5);
    }
}
