//! Spin-then-block waiting (SPEC §10): spin on an atomic for a budget, then block on a futex
//! until woken or a deadline passes.

use std::sync::atomic::AtomicU32;
use std::time::{Duration, Instant};

use crate::protocol;

/// How long a waiter spins before it blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpinBudget {
    /// Block at once (`0`).
    AlwaysBlock,
    /// Spin until the deadline, never block (`-1`).
    NeverBlock,
    /// Spin for this long, then block.
    For(Duration),
}

/// The wait policy of one side of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Spin budget before blocking.
    pub spin: SpinBudget,
}

/// The default spin budget: 200 µs.
pub const DEFAULT_SPIN_US: i64 = 200;

/// Environment variable that overrides the spin budget (µs; 0 = always block, −1 = never).
pub const SPIN_ENV: &str = "BACKLINE_SPIN_US";

impl Default for WaitPolicy {
    fn default() -> Self {
        WaitPolicy::from_micros(DEFAULT_SPIN_US).expect("default is valid")
    }
}

impl WaitPolicy {
    /// From the flag/env convention: `0` = always block, `-1` = never block, `n > 0` = spin
    /// `n` µs. Other negative values are rejected.
    pub fn from_micros(us: i64) -> Result<WaitPolicy, String> {
        let spin = match us {
            0 => SpinBudget::AlwaysBlock,
            -1 => SpinBudget::NeverBlock,
            n if n > 0 => SpinBudget::For(Duration::from_micros(n as u64)),
            n => {
                return Err(format!(
                    "spin budget {n} µs: use a positive number of µs, 0 (always block) or -1 (never block)"
                ));
            }
        };
        Ok(WaitPolicy { spin })
    }

    /// The policy from `BACKLINE_SPIN_US`, or the default when unset.
    pub fn from_env() -> Result<WaitPolicy, String> {
        match std::env::var(SPIN_ENV) {
            Ok(v) => {
                let us: i64 = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("{SPIN_ENV}={v:?} is not an integer"))?;
                WaitPolicy::from_micros(us)
            }
            Err(_) => Ok(WaitPolicy::default()),
        }
    }

    /// The budget in the flag convention.
    pub fn as_micros(&self) -> i64 {
        match self.spin {
            SpinBudget::AlwaysBlock => 0,
            SpinBudget::NeverBlock => -1,
            SpinBudget::For(d) => d.as_micros() as i64,
        }
    }

    /// When spinning should stop, for a wait that started at `start` and must end by
    /// `deadline`.
    pub fn spin_until(&self, start: Instant, deadline: Instant) -> Instant {
        match self.spin {
            SpinBudget::AlwaysBlock => start,
            SpinBudget::NeverBlock => deadline,
            SpinBudget::For(d) => (start + d).min(deadline),
        }
    }
}

/// Why a wait ended without a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    /// The deadline passed.
    #[error("timed out after {waited:?} waiting for seq {seq}")]
    Timeout {
        /// The sequence number waited for.
        seq: u32,
        /// How long the wait lasted.
        waited: Duration,
    },
    /// The caller's stop flag was raised.
    #[error("stopped while waiting for seq {seq}")]
    Stopped {
        /// The sequence number waited for.
        seq: u32,
    },
}

impl WaitError {
    /// The same error, naming `seq` (not the flag that was waited for, which differs for a
    /// reply written in place).
    #[cold]
    pub(crate) fn of_seq(self, seq: backline_wire::Seq) -> WaitError {
        match self {
            WaitError::Timeout { waited, .. } => WaitError::Timeout { seq: seq.0, waited },
            WaitError::Stopped { .. } => WaitError::Stopped { seq: seq.0 },
        }
    }
}

/// The sleepers' counter of one ring. Waiters increment it before they block; writers wake
/// the slot's futex only when it is non-zero. Lives next to the ring (heap) or in the shared
/// mapping's control block (shm), on its own cache line.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Doorbell {
    /// Number of threads blocked (or about to block) on this ring.
    pub sleepers: AtomicU32,
}

/// Polls before a wait first reads the clock.
const FIRST_BURST: u32 = 64;

/// Longest single futex sleep: a waiter re-checks its deadline and stop flag this often.
pub const MAX_NAP: Duration = Duration::from_millis(20);

/// A spinning waiter offers its CPU to the scheduler (`sched_yield`) this often once its
/// wait has lasted this long.
///
/// Why: when the thread a waiter waits for is queued behind it on the same CPU (a serving
/// thread just started on the controller's CPU, or a woken sleeper placed there), spinning
/// cannot end before the budget does, and the peer then does the same to us. Without the
/// yield, one 200,000-round shm bench on this project's 2-vCPU VM had 344 rounds of 200 or
/// 400 µs (one or two budgets), its first 40 rounds among them; with both sides forced onto
/// one CPU (`backline bench --pin 0,0 --no-baseline`) the median round took 413–419 µs, and
/// 15.6–16.9 µs with the yield, 11.2–11.5 µs once a waiter whose yields ran another thread
/// twice in a row blocks in its next wait instead (`LONG_YIELDS`). With nothing else runnable
/// a yield returns at once, and a b2b round's wait has ended long before the first one.
pub const YIELD_EVERY: Duration = Duration::from_micros(5);

/// A yield that kept a waiter off its CPU this long ran another thread there.
const YIELD_GAVE_CPU_AWAY: Duration = Duration::from_micros(2);

/// Long yields in a row that make a thread take its CPU for shared. One is not enough: with
/// nothing else runnable, 0.012 % of yields on the development VM still took 2 µs or more (the
/// host's doing, `sched_yield` timed 2,000,000 times), and a waiter of a slow decoder yields
/// every 5 µs; two in a row are what a shared CPU gives, every time.
const LONG_YIELDS_TO_BLOCK: u8 = 2;

/// A block that comes this soon after the thread's previous one did not find it a CPU of its
/// own: the waits in between shared the CPU again.
const FUTILE_BLOCK_WITHIN: Duration = Duration::from_millis(1);

/// Futile blocks in a row that show every CPU busy (more spinning threads than CPUs).
const FUTILE_BLOCKS_TO_STOP: u8 = 2;

/// How long a thread that found every CPU busy only yields before it tries blocking again:
/// blocking cannot move it to an idle CPU when there is none, and a wake-up costs more than a
/// yield's hand-over (two benches against one udp server on the 2-vCPU VM, four busy threads:
/// a median of 14.0–14.3 µs a round blocking, 4.4–5.9 µs yielding; docs/runtime.md).
const YIELD_ONLY_FOR: Duration = Duration::from_millis(50);

/// Whether a thread's blocks still help, as [`SpinPhase`] judges them.
#[derive(Debug, Clone, Copy)]
struct Blocks {
    /// When this thread last ended a spin early to block.
    last: Option<Instant>,
    /// Blocks in a row that came within `FUTILE_BLOCK_WITHIN` of the one before.
    futile: u8,
    /// Until then the thread only yields (every CPU was busy).
    yield_only_until: Option<Instant>,
}

thread_local! {
    /// This thread's blocks, and whether they still find it an idle CPU.
    static BLOCKS: std::cell::Cell<Blocks> = const {
        std::cell::Cell::new(Blocks { last: None, futile: 0, yield_only_until: None })
    };
    /// This thread's last yields in a row that ran another thread on its CPU. From
    /// `LONG_YIELDS_TO_BLOCK` on, the thread shares its CPU, likely with the peer it waits
    /// for, and its next wait that lasts `YIELD_EVERY` blocks (when its policy lets it)
    /// instead of yielding again: the peer's wake-up places it on an idle CPU, where yields
    /// alone leave the pair on one CPU until the scheduler's periodic balancing moves one
    /// (measured: the first ~800 rounds of a 1,000,000-round shm bench at 12 µs each, the
    /// serving thread started on the controller's CPU).
    static LONG_YIELDS: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
}

/// The spin phase of one wait: until its budget is spent the waiter yields its CPU every
/// [`YIELD_EVERY`], and the phase ends early, when the wait may block, if the thread's last
/// yields ran other threads on its CPU (`LONG_YIELDS`). Ring waits use it, and so do waits on
/// other things (a udp socket), so that every wait of the project treats a shared CPU alike.
#[derive(Debug, Clone, Copy)]
pub struct SpinPhase {
    until: Instant,
    next_yield: Instant,
    may_block: bool,
}

impl SpinPhase {
    /// The spin phase of a wait that began at `start` and gives up at `deadline`, under
    /// `policy`; `may_block`: the wait has a blocking phase that a peer's message ends
    /// (a futex with a doorbell, a socket's `poll`), so ending the spin early costs no round.
    pub fn new(policy: &WaitPolicy, start: Instant, deadline: Instant, may_block: bool) -> Self {
        let until = policy.spin_until(start, deadline);
        // A thread whose last yield ran another thread shares its CPU: the thread it waits for
        // is likely queued behind it, so it hands the CPU over at once instead of after
        // `YIELD_EVERY` of spinning that cannot end the wait.
        let first_yield = if LONG_YIELDS.get() > 0 {
            Duration::ZERO
        } else {
            YIELD_EVERY
        };
        SpinPhase {
            until,
            next_yield: start + first_yield,
            may_block: may_block && until < deadline,
        }
    }

    /// A phase for one look that must not wait at all (no yield, no block).
    pub fn no_wait(now: Instant) -> Self {
        let far = now + Duration::from_secs(3600);
        SpinPhase {
            until: far,
            next_yield: far,
            may_block: false,
        }
    }

    /// When the spin budget runs out (earlier once the phase ended early).
    pub fn until(&self) -> Instant {
        self.until
    }

    /// Whether the waiter goes on spinning at `now`, after yielding its CPU if a yield is due.
    #[inline]
    pub fn spinning(&mut self, now: Instant) -> bool {
        if now >= self.until {
            return false;
        }
        if now >= self.next_yield {
            return self.courtesy(now);
        }
        true
    }

    #[inline(never)]
    fn courtesy(&mut self, now: Instant) -> bool {
        if self.may_block && LONG_YIELDS.get() >= LONG_YIELDS_TO_BLOCK && block_helps(now) {
            LONG_YIELDS.set(0);
            self.until = now;
            return false;
        }
        std::thread::yield_now();
        let back = Instant::now();
        let long = back - now >= YIELD_GAVE_CPU_AWAY;
        LONG_YIELDS.set(if long {
            LONG_YIELDS.get().saturating_add(1)
        } else {
            0
        });
        self.next_yield = back + YIELD_EVERY;
        true
    }
}

/// Whether a thread whose yields keep running other threads should block now: yes, unless
/// its last blocks did not find it an idle CPU (each came within `FUTILE_BLOCK_WITHIN` of the
/// one before, `FUTILE_BLOCKS_TO_STOP` times in a row): then every CPU is busy, and for
/// `YIELD_ONLY_FOR` it only yields.
fn block_helps(now: Instant) -> bool {
    let mut b = BLOCKS.get();
    if b.yield_only_until.is_some_and(|t| now < t) {
        return false;
    }
    b.yield_only_until = None;
    let futile = b
        .last
        .is_some_and(|t| now.duration_since(t) < FUTILE_BLOCK_WITHIN);
    b.futile = if futile {
        b.futile.saturating_add(1)
    } else {
        0
    };
    let helps = b.futile < FUTILE_BLOCKS_TO_STOP;
    if helps {
        b.last = Some(now);
    } else {
        b = Blocks {
            last: None,
            futile: 0,
            yield_only_until: Some(now + YIELD_ONLY_FOR),
        };
    }
    BLOCKS.set(b);
    helps
}

/// Blocks until `*word != expected`, a wake-up, or `timeout`. Spurious returns are fine.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as _, // libc::time_t, whose width the target decides
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word`, which lives as long as the
    // borrow; the timespec outlives the call. The non-private op works on shared mappings.
    // Errors (EAGAIN when the value already changed, EINTR, ETIMEDOUT) all mean "re-check".
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes every thread blocked on `word`.
pub fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key; `word` is a live aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Waits until `ready()` returns `Some`, spinning then blocking on `word` (which a writer
/// changes and then wakes through `doorbell`). `stop` is asked every 64 polls while spinning
/// and after every nap while blocked; `true` ends the wait early.
pub(crate) fn wait_on<T>(
    word: &AtomicU32,
    doorbell: Option<&Doorbell>,
    policy: &WaitPolicy,
    timeout: Duration,
    stop: Option<&dyn Fn() -> bool>,
    want: u32,
    mut ready: impl FnMut() -> Option<T>,
) -> Result<T, WaitError> {
    // A first burst of polls before the clock is read at all: most waits of a running
    // ping-pong end here, and a clock read (~20 ns) would delay noticing the message. The
    // burst does not PAUSE either: on the development VM's AMD cores one PAUSE delays
    // detection by 15–20 ns, measured as a whole-round difference (the floor in `floor.rs`
    // polls the same way, so the comparison stays fair).
    let mut polls = 0u32;
    while polls < FIRST_BURST {
        if let Some(v) = ready() {
            return Ok(v);
        }
        polls += 1;
    }
    let start = Instant::now();
    let deadline = start + timeout;
    let mut spin = SpinPhase::new(policy, start, deadline, doorbell.is_some());
    let stopped = || stop.is_some_and(|s| s());
    if stopped() {
        return Err(WaitError::Stopped { seq: want });
    }
    // Spin phase: read the clock only every 64 polls; a poll is a few ns. Yield now and
    // then, or block if the last yield showed a shared CPU ([`SpinPhase`]).
    loop {
        if let Some(v) = ready() {
            return Ok(v);
        }
        core::hint::spin_loop();
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(64) {
            if stopped() {
                return Err(WaitError::Stopped { seq: want });
            }
            if !spin.spinning(Instant::now()) {
                break;
            }
        }
    }
    // Block phase.
    loop {
        if let Some(v) = ready() {
            return Ok(v);
        }
        if stopped() {
            return Err(WaitError::Stopped { seq: want });
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(WaitError::Timeout {
                seq: want,
                waited: now - start,
            });
        }
        let nap = (deadline - now).min(MAX_NAP);
        match doorbell {
            Some(db) => {
                protocol::sleep_once(word, &db.sleepers, want, |seen| futex_wait(word, seen, nap))
            }
            // No doorbell (e.g. a ring written by a NIC): nap briefly and re-poll.
            None => std::thread::sleep(nap.min(Duration::from_micros(50))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_stop_while_they_find_no_idle_cpu_and_resume_later() {
        // Its own thread: the judgement is per thread.
        std::thread::spawn(|| {
            let t0 = Instant::now();
            let ms = |m: u64| t0 + Duration::from_millis(m);
            assert!(block_helps(t0), "a first block helps");
            // Blocks far apart each found a CPU.
            assert!(block_helps(ms(10)));
            assert!(block_helps(ms(20)));
            // Two more within 1 ms of the one before: every CPU is busy.
            assert!(block_helps(ms(20) + Duration::from_micros(100)));
            assert!(!block_helps(ms(20) + Duration::from_micros(200)));
            // Yield only, for YIELD_ONLY_FOR …
            assert!(!block_helps(ms(30)));
            assert!(!block_helps(ms(69)));
            // … then blocking is tried again.
            assert!(block_helps(ms(71)));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn policy_flag_convention() {
        assert_eq!(
            WaitPolicy::from_micros(0).unwrap().spin,
            SpinBudget::AlwaysBlock
        );
        assert_eq!(
            WaitPolicy::from_micros(-1).unwrap().spin,
            SpinBudget::NeverBlock
        );
        assert_eq!(
            WaitPolicy::from_micros(200).unwrap().spin,
            SpinBudget::For(Duration::from_micros(200))
        );
        assert!(WaitPolicy::from_micros(-2).is_err());
        assert_eq!(WaitPolicy::default().as_micros(), 200);
    }
}
