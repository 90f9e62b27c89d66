//! The coprocessor's server: a listener thread accepts controllers, and each session is
//! served by direct dispatch (SPEC §10) — on a thread of its own by default, or, with
//! [`ServeOptions::serve_threads`], by one of K threads that poll their share of the sessions
//! (for machines with fewer cores than sessions). The responder table is shared read-only, so
//! no lock sits on the round path, and a slow or vanished controller holds up only its own
//! session. Sessions beyond [`ServeOptions::max_sessions`] are refused "full".

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use backline_probe::{Recorder, Table};
use backline_responder_api::ResponderTable;
use backline_ring::{SpinPhase, WaitPolicy};

use crate::link::{Accepted, Listener, StopFlag};
use crate::rounds::{IDLE_STRETCH, RoundCtx, SessionStats};
use crate::{Error, Result, os};

/// Sessions a server holds at once unless told otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 16;

/// How a server serves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// End after this many controller sessions in total (None = until stopped).
    pub total_sessions: Option<u64>,
    /// Controller sessions served at once; a controller beyond is answered "full"
    /// (default [`DEFAULT_MAX_SESSIONS`]).
    pub max_sessions: usize,
    /// `None`: one serving thread per session (direct dispatch on the ring's own thread).
    /// `Some(k)`: k threads (at most `max_sessions`: more could never all have a session),
    /// each polling its share of the sessions; a thread whose sessions are idle naps 50 µs
    /// between looks instead of blocking, so they pay up to that after a pause, and a thread
    /// without sessions sleeps until it is handed one.
    pub serve_threads: Option<usize>,
    /// Reply scratch to allocate (and touch) before the first controller arrives, so that
    /// round 0 does not pay for the serving thread's first allocation. 0 = decide later.
    pub scratch_bytes: usize,
    /// Hop probes: rounds to record per session (0 = off).
    pub probe_rounds: u64,
    /// Pin every serving thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Names the serving threads (`s<N>:<name>`, cut to Linux's 15 bytes).
    pub name: String,
    /// udp: a session whose controller sends nothing this long is ended (its controller
    /// vanished). The other transports see their controller leave.
    pub idle_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions {
            total_sessions: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            serve_threads: None,
            scratch_bytes: 0,
            probe_rounds: 0,
            pin_cpu: None,
            name: "serve".into(),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

/// One session as the server saw it.
#[derive(Debug, Clone)]
pub struct SessionReport {
    /// Its number (1 = the first accepted).
    pub number: u64,
    /// The controller.
    pub peer: String,
    /// Requests answered.
    pub rounds: u64,
    /// Replies with a status other than ok.
    pub failed: u64,
    /// How it ended: `None` while it runs; `Some(Ok)` when the controller left (or the server
    /// stopped); `Some(Err(text))` when serving it failed (e.g. the controller vanished).
    pub ended: Option<std::result::Result<(), String>>,
    /// Its hop probes (when on).
    pub hops: Option<Table>,
}

/// Counters a server keeps while it runs (relaxed atomics: for reporting only), and its
/// sessions.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct ServerStats {
    /// Controller sessions accepted.
    pub sessions: AtomicU64,
    /// Datagrams that belonged to no session (udp: strangers, garbage, late strays), dropped.
    pub strays: Arc<AtomicU64>,
    /// Hellos a keyed listener refused (no key proof, another key, stale, replayed) and
    /// whatever else reached it from a source it has not admitted; never answered.
    pub unadmitted: Arc<AtomicU64>,
    /// The sessions, running and ended, under one lock: a session moves from one list to the
    /// other at once, so a report never misses one in between.
    book: Mutex<SessionBook>,
}

/// The sessions of a server.
#[derive(Debug, Default)]
struct SessionBook {
    live: Vec<(u64, String, Arc<SessionStats>)>,
    done: Vec<SessionReport>,
}

impl ServerStats {
    /// (sessions, rounds, failed rounds), over every session so far.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        let (mut rounds, mut failed) = (0, 0);
        for r in self.sessions_report() {
            rounds += r.rounds;
            failed += r.failed;
        }
        (self.sessions.load(Ordering::Relaxed), rounds, failed)
    }

    /// Every session so far, running or ended, in the order they were accepted.
    pub fn sessions_report(&self) -> Vec<SessionReport> {
        let book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = book.done.clone();
        for (n, peer, s) in &book.live {
            all.push(SessionReport {
                number: *n,
                peer: peer.clone(),
                rounds: s.rounds.load(Ordering::Relaxed),
                failed: s.failed.load(Ordering::Relaxed),
                ended: None,
                hops: None,
            });
        }
        drop(book);
        all.sort_by_key(|r| r.number);
        all
    }

    fn begin(&self, number: u64, peer: String, s: Arc<SessionStats>) {
        self.book
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .live
            .push((number, peer, s));
    }

    fn end(&self, number: u64, ended: std::result::Result<(), String>, hops: Option<Table>) {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let Some(i) = book.live.iter().position(|l| l.0 == number) else {
            return;
        };
        let (n, peer, s) = book.live.swap_remove(i);
        book.done.push(SessionReport {
            number: n,
            peer,
            rounds: s.rounds.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            ended: Some(ended),
            hops,
        });
    }
}

/// A session on its way to a serving thread.
struct Session {
    number: u64,
    accepted: Accepted,
    stats: Arc<SessionStats>,
}

/// What a serving thread needs besides its sessions.
#[derive(Clone)]
struct Shared {
    table: ResponderTable,
    wait: WaitPolicy,
    options: ServeOptions,
    stats: Arc<ServerStats>,
    stop: StopFlag,
    /// Set once a session had to go without hop probes and the server said so.
    probes_refused: Arc<AtomicBool>,
}

/// The hop-probe recorder of session `number`: off unless `probe_rounds` asks for one. A
/// session whose probes cannot be allocated is served without them; the first such session
/// of the server says so, the later ones would only repeat it.
fn session_probes(sh: &Shared, number: u64) -> Recorder {
    match sh.options.probe_rounds {
        0 => Recorder::off(),
        n => Recorder::with_rounds(n).unwrap_or_else(|e| {
            // Relaxed: a flag for one log line, ordering nothing else.
            if !sh.probes_refused.swap(true, Ordering::Relaxed) {
                log::warn!(
                    "session {number}: {e}; serving it (and any later session short of the \
                     memory) without hop probes"
                );
            }
            Recorder::off()
        }),
    }
}

/// Serves one session to its end on this thread.
fn serve_session(sh: &Shared, mut s: Session) {
    let cap = s.accepted.link.geometry().payload_capacity();
    let mut scratch = vec![0u8; cap.max(sh.options.scratch_bytes)];
    let mut probes = session_probes(sh, s.number);
    backline_probe::enable_marks(probes.enabled());
    let mut ctx = RoundCtx::new(&sh.table, &sh.wait, &s.stats, &mut scratch, &mut probes);
    let r = s.accepted.link.serve_rounds(&mut ctx);
    let served = ctx.round;
    end_session(sh, s.number, r, probes, served);
}

fn end_session(sh: &Shared, number: u64, r: Result<()>, probes: Recorder, served: u64) {
    let hops = probes.enabled().then(|| {
        let mut t = Table::new();
        t.merge(probes.rows());
        t.truncate(served as usize);
        t
    });
    sh.stats.end(number, r.map_err(|e| e.to_string()), hops);
}

/// Serves sessions handed over on `rx`, polling each in turn, until stopped and empty.
fn poll_sessions(sh: Shared, rx: mpsc::Receiver<Session>) {
    struct Live {
        s: Session,
        scratch: Vec<u8>,
        probes: Recorder,
        round: u64,
        counted: (u64, u64),
    }
    let mut live: Vec<Live> = Vec::new();
    // Idle pollers spin (yielding as ring waits do), then nap; `SpinPhase` may not end the
    // spin early here: a nap is not ended by a request, so it would cost a round up to 50 µs.
    let idle = |since: Instant| SpinPhase::new(&sh.wait, since, since + IDLE_STRETCH, false);
    let mut spin = idle(Instant::now());
    let mut open = true;
    loop {
        while open {
            // Nothing to poll: sleep until a session is handed over (a look at the stop flag
            // every nap), so idle threads cost no CPU.
            let next = if live.is_empty() {
                rx.recv_timeout(backline_ring::MAX_NAP)
                    .map_err(|e| match e {
                        mpsc::RecvTimeoutError::Timeout => mpsc::TryRecvError::Empty,
                        mpsc::RecvTimeoutError::Disconnected => mpsc::TryRecvError::Disconnected,
                    })
            } else {
                rx.try_recv()
            };
            match next {
                Ok(s) => {
                    spin = idle(Instant::now());
                    let cap = s.accepted.link.geometry().payload_capacity();
                    let probes = session_probes(&sh, s.number);
                    live.push(Live {
                        s,
                        scratch: vec![0u8; cap.max(sh.options.scratch_bytes)],
                        probes,
                        round: 0,
                        counted: (0, 0),
                    });
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => open = false,
            }
        }
        if !open && live.is_empty() {
            return;
        }
        let mut served_any = false;
        let mut i = 0;
        while i < live.len() {
            let l = &mut live[i];
            backline_probe::enable_marks(l.probes.enabled());
            let mut ctx = RoundCtx::new(
                &sh.table,
                &sh.wait,
                &l.s.stats,
                &mut l.scratch,
                &mut l.probes,
            );
            ctx.round = l.round;
            ctx.counted = l.counted;
            let r = l.s.accepted.link.serve_step(&mut ctx);
            let (round, counted) = (ctx.round, ctx.counted);
            l.round = round;
            l.counted = counted;
            match r {
                Ok(Some(served)) => {
                    served_any |= served;
                    i += 1;
                }
                Ok(None) | Err(_) => {
                    let l = live.swap_remove(i);
                    let r = r.map(|_| ());
                    end_session(&sh, l.s.number, r, l.probes, l.round);
                }
            }
        }
        if served_any {
            spin = idle(Instant::now());
        } else if sh.stop.is_set() && live.is_empty() {
            return;
        } else if !spin.spinning(Instant::now()) {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Serves controllers from `listener` until `stop` is set or the session budget is spent;
/// returns once every session it started has ended.
pub fn serve(
    mut listener: Box<dyn Listener>,
    table: &ResponderTable,
    wait: &WaitPolicy,
    options: &ServeOptions,
    stats: &Arc<ServerStats>,
    stop: &StopFlag,
) -> Result<()> {
    let sh = Shared {
        table: table.clone(),
        wait: *wait,
        options: options.clone(),
        stats: stats.clone(),
        stop: stop.clone(),
        probes_refused: Arc::default(),
    };
    let spawn = |name: String, f: Box<dyn FnOnce() + Send>| -> Result<JoinHandle<()>> {
        let pin = sh.options.pin_cpu;
        std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                if let Some(cpu) = pin
                    && let Err(e) = os::pin_current_thread(cpu)
                {
                    log::warn!("{e}");
                }
                f()
            })
            .map_err(Error::io("spawning a serving thread"))
    };
    // Shared serving threads, when asked for.
    let mut pollers: Vec<(mpsc::Sender<Session>, JoinHandle<()>)> = Vec::new();
    if let Some(k) = options.serve_threads {
        for i in 0..k.clamp(1, options.max_sessions.max(1)) {
            let (tx, rx) = mpsc::channel();
            let s = sh.clone();
            let h = spawn(
                os::thread_name(&format!("p{i}:"), &options.name),
                Box::new(move || poll_sessions(s, rx)),
            )?;
            pollers.push((tx, h));
        }
    }
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut oversubscribed = Oversubscribed::default();
    let mut accepted = 0u64;
    let mut outcome = Ok(());
    while !stop.is_set() && options.total_sessions.is_none_or(|m| accepted < m) {
        let a = match listener.accept(wait, stop) {
            Ok(Some(a)) => a,
            Ok(None) => break,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        accepted += 1;
        stats.sessions.fetch_add(1, Ordering::Relaxed);
        let s = Session {
            number: accepted,
            stats: Arc::default(),
            accepted: a,
        };
        stats.begin(accepted, s.accepted.link.peer(), s.stats.clone());
        if pollers.is_empty() {
            let sh2 = sh.clone();
            threads.push(spawn(
                os::thread_name(&format!("s{accepted}:"), &options.name),
                Box::new(move || serve_session(&sh2, s)),
            )?);
        } else {
            // The pollers take the sessions in turn.
            let i = (accepted as usize - 1) % pollers.len();
            if let Err(mpsc::SendError(s)) = pollers[i].0.send(s) {
                stats.end(s.number, Err("no serving thread".into()), None);
            }
        }
        threads.retain(|t| !t.is_finished());
        oversubscribed.check(threads.len(), wait);
    }
    // The listener goes first (no new controllers); sessions end when their controllers
    // leave, or at once when stopping.
    drop(listener);
    for t in threads {
        let _ = t.join();
    }
    for (tx, h) in pollers {
        drop(tx);
        let _ = h.join();
    }
    outcome
}

/// The warning, once per server, that its sessions' threads spin on more CPUs than there are.
#[derive(Default)]
struct Oversubscribed {
    said: bool,
}

impl Oversubscribed {
    /// Says so the first time `spinning` session threads outnumber the CPUs.
    fn check(&mut self, spinning: usize, wait: &WaitPolicy) {
        if self.said || wait.spin == backline_ring::SpinBudget::AlwaysBlock {
            return;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if spinning > cpus {
            self.said = true;
            log::warn!("{}", oversubscription(spinning, cpus, wait));
        }
    }
}

/// What a server with `threads` spinning threads on `cpus` CPUs does about it (the rule of
/// docs/runtime.md, "Waiting").
pub fn oversubscription(threads: usize, cpus: usize, wait: &WaitPolicy) -> String {
    let rule = if wait.spin == backline_ring::SpinBudget::NeverBlock {
        "they never block (spin budget -1), so each busy one holds its CPU until the scheduler \
         takes it away: give a spin budget, or --serve-threads"
    } else {
        "they take turns: each yields after 5 µs of spinning and blocks after a yield that ran \
         another thread, so rounds wait for a wake-up (tens of µs) instead of spinning"
    };
    format!(
        "{threads} serving threads spin on {cpus} CPUs: {rule} (--serve-threads {cpus} polls the \
         sessions from one thread per CPU)"
    )
}

#[cfg(test)]
mod tests {
    use crate::link::Admission;

    #[test]
    fn sessions_whose_probes_cannot_be_allocated_go_without_them_and_the_server_says_so_once() {
        use super::*;
        let mut options = ServeOptions::default();
        let sh = |options: &ServeOptions| Shared {
            table: ResponderTable::new(),
            wait: WaitPolicy::default(),
            options: options.clone(),
            stats: Arc::default(),
            stop: StopFlag::new(),
            probes_refused: Arc::default(),
        };
        assert!(!session_probes(&sh(&options), 1).enabled());
        options.probe_rounds = 4;
        let small = sh(&options);
        assert!(session_probes(&small, 1).enabled());
        assert!(!small.probes_refused.load(Ordering::Relaxed));
        options.probe_rounds = u64::MAX;
        let huge = sh(&options);
        for number in 1..=3 {
            assert!(!session_probes(&huge, number).enabled());
            assert!(huge.probes_refused.load(Ordering::Relaxed), "said once");
        }
    }

    #[test]
    fn a_session_that_ends_is_never_missing_from_a_report() {
        use super::{ServerStats, SessionStats};
        use std::sync::Arc;
        // One thread ends sessions while another takes reports: each report lists every
        // session begun before it, running or ended.
        let stats = Arc::new(ServerStats::default());
        const N: u64 = 2000;
        for n in 1..=N {
            stats.begin(n, format!("c{n}"), Arc::new(SessionStats::default()));
        }
        let ender = {
            let stats = stats.clone();
            std::thread::spawn(move || {
                for n in 1..=N {
                    stats.end(n, Ok(()), None);
                }
            })
        };
        while !ender.is_finished() {
            let r = stats.sessions_report();
            assert_eq!(r.len() as u64, N, "a report missed a session");
        }
        ender.join().unwrap();
        let r = stats.sessions_report();
        assert!(r.iter().all(|s| s.ended == Some(Ok(()))) && r.len() as u64 == N);
    }

    #[test]
    fn admission_has_room_for_max_sessions() {
        let a = Admission::new(2);
        let g1 = a.try_admit().unwrap();
        let _g2 = a.try_admit().unwrap();
        assert!(a.try_admit().is_none());
        assert_eq!(a.active(), 2);
        drop(g1);
        assert!(a.try_admit().is_some());
    }
}
