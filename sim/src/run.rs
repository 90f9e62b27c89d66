//! Whole runs, as `backline sim` does them: configure the engine over AXI4-Lite, run sw-loop
//! or hw-loop rounds, and read the trace RAM back over AXI4-Lite.
//!
//! Payloads: the reference memory holds the run's [`Workload`] — payload word 0 and the
//! expected reply word 0 per entry, round `r` using entry `r mod entries` — and
//! `FLAGS.use_ref | check` are set, so every round's reply is checked in hardware and
//! mismatches are counted there.
//!
//! A real coprocessor behind the bridge can fail mid-run: the round's reply is not
//! delivered, the engine's reply timeout fires and the trace marks the round; the run then
//! stops with an error ([`LossPolicy::Stop`]) or goes on ([`LossPolicy::Continue`]). A run
//! that goes on after the bridge knows its peer is gone lowers the engine's timeout to
//! [`DEAD_PEER_TIMEOUT_CYCLES`], so the rest of the rounds are lost (and counted) at the
//! simulator's full speed rather than one 10 ms timeout each.
//!
//! Random-delayed runs with long quiet periods use the pacer's fast-forward
//! (`CTRL.pacer_skip`): once a quiet period has begun, the driver reads the interval the RTL
//! pacer drew (`PACER_LAST`) and ends the period. The RTT is unaffected (it is measured from
//! the doorbell), and the intervals reported are the ones the RTL drew.

use std::time::{Duration, Instant};

use backline_pacer::PacerConfig;
use backline_regmap as rm;

use crate::model::RoundSplit;
use crate::{HwhsSim, ModelConfig, Responder, SimError};
use backline_board::workload::Workload;

pub use backline_regmap::Mode;

/// The longest a sw-loop run lets the engine run between two `STATUS` polls, cycles.
pub const SW_POLL_MAX_CYCLES: u64 = 1024;

/// The engine's reply timeout once a bridged coprocessor is known to be gone and the run goes
/// on ([`LossPolicy::Continue`]), cycles: room for the ERNIC model to fetch the WQE and read
/// the request (4 cycles of fetch and at most 9 words after the doorbell; the engine writes
/// the next request no sooner than 8 cycles after a timeout), and no more. The run lowers `TIMEOUT` to it at the first
/// round after the loss (and the round waiting then); every later round is still a lost round
/// that times out in the engine and is traced as a timeout — it just does not simulate
/// 10 ms of waiting for a reply that cannot come.
pub const DEAD_PEER_TIMEOUT_CYCLES: u32 = 32;

/// The longest a sw-loop run lets the engine run between two `STATUS` polls once the
/// coprocessor is known to be gone, cycles.
const DEAD_PEER_POLL_CYCLES: u64 = 8;

/// What a run does when a bridged coprocessor loses a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossPolicy {
    /// End the run with an error after that round.
    Stop,
    /// Go on; the lost rounds show as timeouts in the trace.
    Continue,
}

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// sw-loop or hw-loop.
    pub mode: Mode,
    /// Pacer settings (hw-loop; b2b is freq = span = 0).
    pub pacer: PacerConfig,
    /// Rounds, round 0 included.
    pub rounds: u64,
    /// Model settings.
    pub model: ModelConfig,
    /// Reply timeout, cycles.
    pub timeout_cycles: u32,
    /// Fast-forward quiet periods longer than this many cycles (`None`: simulate them).
    pub fast_forward_above: Option<u32>,
    /// Payloads and expected replies (`None`: the in-simulation responder's).
    pub workload: Option<Workload>,
    /// What to do when a bridged coprocessor loses a round.
    pub on_loss: LossPolicy,
}

/// An in-simulation responder's workload: the eight 3-bit syndromes, 4-byte payloads, the
/// responder's reply word as the expectation.
pub fn model_workload(responder: Responder, reply_len: u32) -> Workload {
    Workload::table(
        responder.name(),
        reply_len,
        (0..8).map(|s| (s, responder.reply_word0(s))).collect(),
    )
}

impl RunConfig {
    /// The run's workload.
    pub fn workload(&self) -> Workload {
        self.workload
            .clone()
            .unwrap_or_else(|| model_workload(self.model.responder, self.model.reply_len))
    }
}

impl RunConfig {
    /// Checks the settings before anything is written to the engine.
    pub fn validate(&self) -> Result<(), SimError> {
        self.pacer
            .validate()
            .map_err(|e| SimError::Config(format!("pacer: {e}")))?;
        if self.rounds == 0 {
            return Err(SimError::Config("--rounds must be at least 1".into()));
        }
        let m = &self.model;
        self.workload().validate().map_err(SimError::Config)?;
        if !m.ring_depth.is_power_of_two() || m.ring_depth > rm::MAX_RING_DEPTH {
            return Err(SimError::Config(format!(
                "ring depth {} is not a power of two up to {}",
                m.ring_depth,
                rm::MAX_RING_DEPTH
            )));
        }
        if !m.sq_depth.is_power_of_two()
            || m.sq_depth * backline_board::ernic::wqe::BYTES > crate::model::SQ_MEM_BYTES
        {
            return Err(SimError::Config(format!(
                "SQ depth {} is not a power of two that fits the model's SQ memory",
                m.sq_depth
            )));
        }
        Ok(())
    }
}

/// What a run produced.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// Trace RAM entries read back over AXI4-Lite (RTT cycles; 0 timeout, 0xFFFF saturated).
    pub trace: Vec<u16>,
    /// Quiet interval before each round, cycles: in hw-loop as the RTL pacer drew it (for a
    /// period too short to observe, the shared pacer rule's value); in sw-loop the host's
    /// wait from the same rule (not simulated: the engine idles); 0 for b2b.
    pub quiet_cycles: Vec<u64>,
    /// The model's own round trip per round (reply `seq` write minus doorbell), when recorded.
    pub model_rtt_cycles: Vec<Option<u64>>,
    /// Rounds the engine committed.
    pub rounds_committed: u64,
    /// TIMEOUT_COUNT.
    pub timeouts: u64,
    /// MISMATCH_COUNT.
    pub mismatches: u64,
    /// TRACE_STATUS.full.
    pub trace_full: bool,
    /// TRACE_STATUS.saturated.
    pub trace_saturated: bool,
    /// FSM_OVERHEAD as the engine reports it.
    pub fsm_overhead_cycles: u32,
    /// Cycles simulated.
    pub sim_cycles: u64,
    /// Quiet cycles skipped by fast-forward.
    pub skipped_cycles: u64,
    /// Wall-clock time of the run, read-out included.
    pub wall: Duration,
    /// Model protocol violations (0 in a correct run) and the first one.
    pub model_errors: (u64, Option<String>),
    /// Fabric and service cycles of each traced round.
    pub splits: Vec<RoundSplit>,
    /// Rounds a bridged coprocessor lost, and the first loss with its round.
    pub lost: (u64, Option<String>),
    /// Rounds relayed to a bridged coprocessor and their mean measured service time, ns.
    pub bridged: Option<(u64, f64)>,
    /// The run was asked to stop ([`run_until`]'s `stop`) before its last round: the report
    /// holds the rounds committed until then.
    pub interrupted: bool,
}

/// Writes the engine's configuration for `cfg` (after a soft reset).
pub fn configure(sim: &mut HwhsSim, cfg: &RunConfig) -> Result<(), SimError> {
    cfg.validate()?;
    sim.axi_write(rm::CTRL, rm::CTRL_SOFT_RESET.bits(1))?;
    let fresh = sim.model_mut().renewed(cfg.model.clone());
    *sim.model_mut() = fresh;
    let m = &cfg.model;
    let w = cfg.workload();
    let writes = [
        (rm::WQE_LADDR_LO, m.request_buffer as u32),
        (rm::WQE_LADDR_HI, (m.request_buffer >> 32) as u32),
        (rm::TIMEOUT, cfg.timeout_cycles),
        (rm::SQ_BASE, m.sq_base),
        (rm::SQ_DEPTH, m.sq_depth),
        (rm::RING_DEPTH, m.ring_depth),
        (rm::WQE_OPCODE, backline_board::ernic::wqe::opcode::WRITE),
        (rm::WQE_RKEY, m.rkey),
        (rm::WQE_RVA_LO, m.remote_va as u32),
        (rm::WQE_RVA_HI, (m.remote_va >> 32) as u32),
        (rm::PACER_FREQ, cfg.pacer.freq),
        (rm::PACER_SPAN, cfg.pacer.span),
        (rm::PACER_SEED, cfg.pacer.seed),
        (
            rm::ROUNDS,
            if cfg.mode == Mode::HwLoop {
                cfg.rounds as u32
            } else {
                0
            },
        ),
        (rm::TRACE_CTRL, rm::TRACE_CTRL_ENABLE.bits(1)),
    ];
    for (a, v) in writes.into_iter().chain(w.hwhs_writes()) {
        sim.axi_write(a, v)?;
    }
    let flags = rm::FLAGS_USE_REF.bits(1)
        | rm::FLAGS_CHECK.bits(u32::from(m.responder != Responder::Silent))
        | rm::FLAGS_PREPOST.bits(1)
        | rm::FLAGS_HW_LOOP.bits(u32::from(cfg.mode == Mode::HwLoop));
    sim.axi_write(rm::FLAGS, flags)?;
    Ok(())
}

/// Runs `cfg` on `sim`; `progress(done, total)` is called now and then with rounds committed.
pub fn run(
    sim: &mut HwhsSim,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunReport, SimError> {
    run_until(sim, cfg, progress, &|| false)
}

/// [`run`], ending early once `stop()` says so (a signal): sw-loop between rounds, hw-loop
/// with `CTRL.abort` after the round in progress. An interrupted run is read out like a
/// complete one, and its report says so ([`RunReport::interrupted`]).
pub fn run_until(
    sim: &mut HwhsSim,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(u64, u64),
    stop: &dyn Fn() -> bool,
) -> Result<RunReport, SimError> {
    let t0 = Instant::now();
    configure(sim, cfg)?;
    let start_cycle = sim.cycle();
    let mut rep = RunReport::default();
    // The quiet interval of each round as the RTL pacer drew it, where the driver saw it.
    let mut rtl_quiet: Vec<Option<u64>> = Vec::new();
    rep.interrupted = match cfg.mode {
        Mode::SwLoop => sw_loop(sim, cfg, progress, stop)?,
        Mode::HwLoop => hw_loop(sim, cfg, progress, stop, &mut rtl_quiet, &mut rep)?,
    };
    if !rep.interrupted {
        progress(cfg.rounds, cfg.rounds);
    }
    rep.sim_cycles = sim.cycle() - start_cycle;
    read_counters(sim, &mut rep)?;
    rep.trace = read_trace(sim)?;
    rep.quiet_cycles = quiet_cycles(cfg, rep.trace.len(), &rtl_quiet)?;
    rep.model_rtt_cycles = sim
        .model()
        .records()
        .iter()
        .map(|r| r.model_rtt_cycles())
        .collect();
    check_loss(sim, cfg, rep.rounds_committed)?;
    read_model(sim, &mut rep);
    rep.wall = t0.elapsed();
    Ok(rep)
}

/// A round takes at most this many cycles, or it has hung the engine (the reply timeout
/// bounds each).
fn round_budget(cfg: &RunConfig) -> u64 {
    u64::from(cfg.timeout_cycles) + 10_000
}

/// Whether the run has lowered the engine's timeout for a dead peer.
#[derive(Debug, Default)]
struct DeadPeer {
    skipping: bool,
}

impl DeadPeer {
    /// [`check_loss`]; then, once the bridge knows its coprocessor is gone and the run goes
    /// on, lowers the engine's `TIMEOUT` to [`DEAD_PEER_TIMEOUT_CYCLES`] (once; the register
    /// is compared live, so the round waiting now ends too).
    fn check(&mut self, sim: &mut HwhsSim, cfg: &RunConfig, done: u64) -> Result<(), SimError> {
        check_loss(sim, cfg, done)?;
        if !self.skipping
            && cfg.on_loss == LossPolicy::Continue
            && sim.model().bridge().is_some_and(|b| b.is_gone())
        {
            self.skipping = true;
            let t = DEAD_PEER_TIMEOUT_CYCLES.min(cfg.timeout_cycles);
            sim.axi_write(rm::TIMEOUT, t)?;
        }
        Ok(())
    }
}

/// The errors of a bridged coprocessor after `done` rounds: a decoder id it does not serve,
/// and (with [`LossPolicy::Stop`]) its first lost round.
fn check_loss(sim: &HwhsSim, cfg: &RunConfig, done: u64) -> Result<(), SimError> {
    if let Some(b) = sim.model().bridge()
        && let Some(id) = b.unserved()
    {
        return Err(SimError::Unserved(format!(
            "the coprocessor at {} serves no function for decoder_id {id} (it answered \
             unknown_decoder)",
            b.addr()
        )));
    }
    if cfg.on_loss == LossPolicy::Stop
        && let Some((round, loss)) = &sim.model().stats().first_loss
    {
        return Err(SimError::CoprocessorLost(format!(
            "round {round}: {loss} ({done} rounds completed; the run stops at the first \
             lost round, --on-loss continue goes on)"
        )));
    }
    Ok(())
}

/// sw-loop: a `CTRL.start` per round, each polled to its end. Whether `stop()` ended it.
fn sw_loop(
    sim: &mut HwhsSim,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(u64, u64),
    stop: &dyn Fn() -> bool,
) -> Result<bool, SimError> {
    let mut dead = DeadPeer::default();
    for k in 0..cfg.rounds {
        if stop() {
            return Ok(true);
        }
        sw_round(sim, cfg, k, &mut dead)?;
        dead.check(sim, cfg, k)?;
        if k % 1024 == 0 {
            progress(k, cfg.rounds);
        }
    }
    Ok(false)
}

/// Round `k` of a sw-loop run: started, then polled as software would, backing off from
/// back-to-back reads to one every [`SW_POLL_MAX_CYCLES`]: a round waiting microseconds for
/// a real coprocessor then costs a few reads, and the RTT is the engine's either way.
fn sw_round(
    sim: &mut HwhsSim,
    cfg: &RunConfig,
    k: u64,
    dead: &mut DeadPeer,
) -> Result<(), SimError> {
    sim.axi_write(rm::CTRL, rm::CTRL_START.bits(1))?;
    let deadline = sim.cycle() + round_budget(cfg);
    // A round for a dead peer takes the short timeout and a few dozen cycles more: wait that
    // out at once, then poll closely (a backoff to 1,024 cycles would double each round).
    let most = if dead.skipping {
        sim.run_cycles(u64::from(DEAD_PEER_TIMEOUT_CYCLES));
        DEAD_PEER_POLL_CYCLES
    } else {
        SW_POLL_MAX_CYCLES
    };
    let mut step = 0;
    loop {
        let s = sim.axi_read(rm::STATUS)?;
        if rm::STATUS_DONE.get(s) == 1 {
            return Ok(());
        }
        if sim.cycle() > deadline {
            return Err(SimError::Stuck(format!("sw-loop round {k} never finished")));
        }
        // A lost round ends a Stop run now, not after the engine's timeout (and a Continue
        // run's wait for a dead peer is cut short).
        dead.check(sim, cfg, k)?;
        if step > 0 {
            sim.run_cycles(step);
        }
        step = (step * 2).clamp(1, most);
    }
}

/// hw-loop: one `CTRL.start`, then the engine runs every round while the driver watches
/// (`STATUS`, `ROUND_COUNT`), fast-forwards long quiet periods and reports progress. Whether
/// `stop()` ended it (with `CTRL.abort`, after the round in progress).
fn hw_loop(
    sim: &mut HwhsSim,
    cfg: &RunConfig,
    progress: &mut dyn FnMut(u64, u64),
    stop: &dyn Fn() -> bool,
    rtl_quiet: &mut Vec<Option<u64>>,
    rep: &mut RunReport,
) -> Result<bool, SimError> {
    sim.axi_write(rm::CTRL, rm::CTRL_START.bits(1))?;
    let b2b = cfg.pacer.is_b2b();
    let chunk = if b2b { 4096 } else { 64 };
    // The longest a round may take, its quiet period included.
    let quiet_budget = if b2b {
        0
    } else {
        u64::from(cfg.pacer.freq) + u64::from(cfg.pacer.span) + 1000
    };
    let mut last_progress = 0;
    let mut last_count = 0;
    let mut stalled_since = sim.cycle();
    let mut dead = DeadPeer::default();
    loop {
        let s = sim.axi_read(rm::STATUS)?;
        if rm::STATUS_DONE.get(s) == 1 {
            return Ok(false);
        }
        let count = u64::from(sim.axi_read(rm::ROUND_COUNT)?);
        if count != last_count {
            last_count = count;
            stalled_since = sim.cycle();
        }
        if stop() {
            abort(sim, cfg)?;
            return Ok(true);
        }
        if !b2b
            && let Some(min) = cfg.fast_forward_above
            && fast_forward(sim, min, rtl_quiet, rep)?
        {
            continue;
        }
        if sim.cycle() - stalled_since > round_budget(cfg) + quiet_budget {
            return Err(SimError::Stuck(format!(
                "hw-loop run stopped at round {count} of {}",
                cfg.rounds
            )));
        }
        if count >= last_progress + 1024 {
            last_progress = count;
            progress(count, cfg.rounds);
        }
        dead.check(sim, cfg, count)?;
        sim.run_cycles(chunk);
    }
}

/// Ends a quiet period longer than `min` cycles now (`CTRL.pacer_skip`), noting the interval
/// the RTL pacer drew for its round and the cycles skipped. Whether it did.
fn fast_forward(
    sim: &mut HwhsSim,
    min: u32,
    rtl_quiet: &mut Vec<Option<u64>>,
    rep: &mut RunReport,
) -> Result<bool, SimError> {
    if sim.axi_read(rm::PACER_REMAIN)? <= min {
        return Ok(false);
    }
    let interval = sim.axi_read(rm::PACER_LAST)?;
    let round = u64::from(sim.axi_read(rm::ROUND_COUNT)?) as usize;
    if rtl_quiet.len() <= round {
        rtl_quiet.resize(round + 1, None);
    }
    rtl_quiet[round] = Some(u64::from(interval));
    let remain = sim.axi_read(rm::PACER_REMAIN)?;
    sim.axi_write(rm::CTRL, rm::CTRL_PACER_SKIP.bits(1))?;
    rep.skipped_cycles += u64::from(remain);
    Ok(true)
}

/// Stops a hw-loop run (`CTRL.abort`) and runs the engine until the round in progress is
/// committed and the run is done (a quiet period ends at once), so that the counters and the
/// trace RAM hold every round that ran.
fn abort(sim: &mut HwhsSim, cfg: &RunConfig) -> Result<(), SimError> {
    sim.axi_write(rm::CTRL, rm::CTRL_ABORT.bits(1))?;
    let deadline = sim.cycle() + round_budget(cfg);
    while rm::STATUS_DONE.get(sim.axi_read(rm::STATUS)?) == 0 {
        if sim.cycle() > deadline {
            return Err(SimError::Stuck(
                "the hw-loop run did not stop after CTRL.abort".into(),
            ));
        }
        sim.run_cycles(64);
    }
    Ok(())
}

/// The engine's counters and trace status after a run.
fn read_counters(sim: &mut HwhsSim, rep: &mut RunReport) -> Result<(), SimError> {
    rep.rounds_committed = u64::from(sim.axi_read(rm::ROUND_COUNT)?);
    rep.timeouts = u64::from(sim.axi_read(rm::TIMEOUT_COUNT)?);
    rep.mismatches = u64::from(sim.axi_read(rm::MISMATCH_COUNT)?);
    rep.fsm_overhead_cycles = sim.axi_read(rm::FSM_OVERHEAD)?;
    let ts = sim.axi_read(rm::TRACE_STATUS)?;
    rep.trace_full = rm::TRACE_STATUS_FULL.get(ts) == 1;
    rep.trace_saturated = rm::TRACE_STATUS_SATURATED.get(ts) == 1;
    Ok(())
}

/// The quiet interval before each of `rounds` traced rounds ([`RunReport::quiet_cycles`]):
/// the RTL pacer's where the driver saw it (`rtl_quiet`), else the shared pacer rule's.
fn quiet_cycles(
    cfg: &RunConfig,
    rounds: usize,
    rtl_quiet: &[Option<u64>],
) -> Result<Vec<u64>, SimError> {
    let mut sw =
        backline_pacer::Pacer::new(cfg.pacer).map_err(|e| SimError::Config(e.to_string()))?;
    Ok((0..rounds)
        .map(|k| {
            let sw_interval = u64::from(sw.next_interval_cycles());
            match cfg.mode {
                // The host waits the interval before each start; the engine is idle then,
                // so those cycles are not simulated.
                Mode::SwLoop => sw_interval,
                Mode::HwLoop if cfg.pacer.is_b2b() => 0,
                Mode::HwLoop => rtl_quiet.get(k).copied().flatten().unwrap_or(sw_interval),
            }
        })
        .collect())
}

/// What the models saw: protocol errors, the RTT splits of the traced rounds, lost rounds,
/// and what the bridge relayed.
fn read_model(sim: &HwhsSim, rep: &mut RunReport) {
    let st = sim.model().stats();
    rep.model_errors = (st.errors, st.first_error.clone());
    rep.splits = sim.model().splits().to_vec();
    rep.splits.truncate(rep.trace.len());
    rep.lost = (
        st.lost,
        st.first_loss
            .as_ref()
            .map(|(r, l)| format!("round {r}: {l}")),
    );
    rep.bridged = sim
        .model()
        .bridge()
        .map(|b| (b.relayed(), b.mean_service_ns()));
}

/// Reads every recorded trace entry over AXI4-Lite (TRACE_RD_ADDR, then TRACE_DATA reads).
pub fn read_trace(sim: &mut HwhsSim) -> Result<Vec<u16>, SimError> {
    let n = sim.axi_read(rm::TRACE_COUNT)?;
    sim.axi_write(rm::TRACE_RD_ADDR, 0)?;
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        v.push(sim.axi_read(rm::TRACE_DATA)? as u16);
    }
    Ok(v)
}
