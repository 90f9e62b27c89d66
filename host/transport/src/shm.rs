//! `shm`: the coprocessor in its own process (`backline serve --transport shm`), the two rings
//! in a shared-memory segment `/dev/shm/backline-<name>` that both processes map and pre-fault.
//!
//! Segment layout: a 4 KiB control block, then the request ring, then the reply ring.
//! The control block carries the server's geometry and pid, a one-controller lock, the
//! handshake mailbox (the same [`Handshake`] record as the network transports), the rings'
//! doorbells, and a cache line for the floor measurement.
//!
//! A controller takes the lock, writes a hello and interrupts the server; the server checks
//! the geometry, zeroes the rings and accepts. The controller's `stop` writes a bye. A server
//! whose pid is gone leaves a stale segment, which the next server reclaims; a controller whose
//! pid is gone loses the lock to the next one.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backline_ring::{CachePadded, Doorbell, RingView, WaitPolicy, futex_wait, futex_wake};
use backline_wire::{
    Geometry, HANDSHAKE_BYTES, Handshake, HandshakeKind, RejectReason, WIRE_VERSION,
};
use memmap2::MmapMut;

use crate::link::{CoprocessorLink, Listener, RingController, RingCoprocessor, RingPair};
use crate::{Error, Result, floor, os};

const MAGIC: u64 = u64::from_le_bytes(*b"BKLNSHM1");
const CONTROL_BYTES: usize = 4096;
const WORDS: usize = HANDSHAKE_BYTES / 4;

/// The control block at the start of the segment. Only atomics: two processes that do not
/// trust each other share it.
#[repr(C)]
struct Control {
    /// [`MAGIC`] once the server finished initialising (stored last, Release).
    magic: AtomicU64,
    version: AtomicU32,
    depth: AtomicU32,
    slot_bytes: AtomicU32,
    server_pid: AtomicU32,
    /// The controller lock: 0 when free, else the holder's pid.
    client_pid: AtomicU32,
    /// Bumped by a controller after it wrote `hello`.
    hello_seq: AtomicU32,
    /// Set to `hello_seq` by the server after it wrote `accept`.
    accept_seq: AtomicU32,
    /// Bumped by a controller that ends its session.
    bye_seq: AtomicU32,
    hello: [AtomicU32; WORDS],
    accept: [AtomicU32; WORDS],
    /// Non-zero: the server should look at the mailbox. Futex word.
    interrupt: CachePadded<AtomicU32>,
    req_doorbell: CachePadded<Doorbell>,
    rep_doorbell: CachePadded<Doorbell>,
    /// The floor measurement's cache line.
    floor: CachePadded<AtomicU32>,
    /// Rounds of floor bounce requested by the controller; the server zeroes it when done.
    floor_rounds: CachePadded<AtomicU64>,
}

const _: () = assert!(std::mem::size_of::<Control>() <= CONTROL_BYTES);
const _: () = assert!(HANDSHAKE_BYTES.is_multiple_of(4));

fn store_words(dst: &[AtomicU32; WORDS], bytes: &[u8; HANDSHAKE_BYTES]) {
    for (w, c) in dst.iter().zip(bytes.chunks_exact(4)) {
        w.store(
            u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            Ordering::Relaxed,
        );
    }
}

fn load_words(src: &[AtomicU32; WORDS]) -> [u8; HANDSHAKE_BYTES] {
    let mut b = [0u8; HANDSHAKE_BYTES];
    for (w, c) in src.iter().zip(b.chunks_exact_mut(4)) {
        c.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
    }
    b
}

/// Checks a segment name: letters, digits, `.`, `_`, `-`.
fn path_of(name: &str) -> Result<PathBuf> {
    if name.is_empty()
        || name.len() > 200
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        || name.starts_with('.')
    {
        return Err(Error::Invalid(format!(
            "shm name `{name}`: use letters, digits, '.', '_' and '-' (not starting with '.')"
        )));
    }
    Ok(PathBuf::from(format!("/dev/shm/backline-{name}")))
}

struct Segment {
    map: MmapMut,
    geometry: Geometry,
}

impl Segment {
    fn ctl(&self) -> &Control {
        // SAFETY: the mapping is at least CONTROL_BYTES long (checked when mapped), page
        // aligned, and lives as long as `self`; Control is all atomics, valid for any bytes.
        unsafe { &*self.map.as_ptr().cast::<Control>() }
    }

    fn base(&self) -> NonNull<u8> {
        NonNull::new(self.map.as_ptr().cast_mut()).expect("mapping is non-null")
    }

    /// Ring views over this segment. The views must not outlive `self`.
    fn rings(&self) -> (RingView, RingView) {
        let g = self.geometry;
        let ctl = self.ctl();
        // SAFETY: the segment is CONTROL_BYTES + 2 × ring_bytes long (checked), the rings
        // start page-aligned after the control block, and the doorbells live in the control
        // block; callers keep `self` alive while the views are used.
        unsafe {
            let req = RingView::new(
                self.base().add(CONTROL_BYTES),
                g,
                Some(NonNull::from(&ctl.req_doorbell.0)),
            )
            .expect("validated geometry");
            let rep = RingView::new(
                self.base().add(CONTROL_BYTES + g.ring_bytes()),
                g,
                Some(NonNull::from(&ctl.rep_doorbell.0)),
            )
            .expect("validated geometry");
            (req, rep)
        }
    }

    fn zero_rings(&mut self) {
        let len = 2 * self.geometry.ring_bytes();
        self.map[CONTROL_BYTES..CONTROL_BYTES + len].fill(0);
    }

    fn interrupt(&self) {
        let ctl = self.ctl();
        ctl.interrupt.store(1, Ordering::SeqCst);
        futex_wake(&ctl.interrupt);
    }
}

fn map_file(f: &File, what: &str) -> Result<MmapMut> {
    // SAFETY: the file is a shared-memory object of ours; its contents are only accessed
    // through atomics (control block) and the ring protocol (rings). Another process may
    // truncate it only by misbehaving, which SIGBUS would report.
    unsafe { MmapMut::map_mut(f) }.map_err(Error::io(format!("mapping {what}")))
}

/// The server side: owns the segment (and removes it when dropped).
pub(crate) struct ShmListener {
    seg: Segment,
    path: PathBuf,
    name: String,
    hello_handled: u32,
}

impl ShmListener {
    /// Creates the segment `name` with `geometry`. Reclaims a stale segment whose server is
    /// gone; refuses one whose server is alive.
    pub(crate) fn create(name: &str, geometry: Geometry) -> Result<ShmListener> {
        let geometry = geometry.validate()?;
        let path = path_of(name)?;
        let size = CONTROL_BYTES + 2 * geometry.ring_bytes();
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Some(pid) = live_server(&path) {
                    return Err(Error::InUse(format!(
                        "shm segment `{name}` (served by process {pid})"
                    )));
                }
                // Stale: its server is gone. Reclaim.
                let _ = std::fs::remove_file(&path);
                OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(Error::io(format!("creating {}", path.display())))?
            }
            Err(e) => {
                return Err(Error::Io {
                    what: format!("creating {}", path.display()),
                    source: e,
                });
            }
        };
        let cleanup = |e: Error| {
            let _ = std::fs::remove_file(&path);
            e
        };
        file.set_len(size as u64)
            .map_err(Error::io(format!("sizing {}", path.display())))
            .map_err(cleanup)?;
        let map = map_file(&file, &path.display().to_string()).map_err(cleanup)?;
        let seg = Segment { map, geometry };
        // SAFETY: the whole fresh mapping is ours and writable.
        unsafe { os::populate_write(seg.base().as_ptr(), size) };
        let ctl = seg.ctl();
        ctl.version.store(WIRE_VERSION as u32, Ordering::Relaxed);
        ctl.depth.store(geometry.depth, Ordering::Relaxed);
        ctl.slot_bytes.store(geometry.slot_bytes, Ordering::Relaxed);
        ctl.server_pid.store(os::my_pid(), Ordering::Relaxed);
        // Release: a controller that sees the magic sees every field above.
        ctl.magic.store(MAGIC, Ordering::Release);
        Ok(ShmListener {
            seg,
            path,
            name: name.to_string(),
            hello_handled: 0,
        })
    }

    fn handle_floor(&self) {
        let ctl = self.seg.ctl();
        let rounds = ctl.floor_rounds.load(Ordering::Acquire);
        if rounds != 0 {
            // A controller that vanishes mid-bounce costs one second here.
            let _ = floor::bounce_server(&ctl.floor, rounds, Duration::from_secs(1));
            ctl.floor_rounds.store(0, Ordering::Release);
            futex_wake(&ctl.interrupt);
        }
    }

    /// Answers a pending hello; returns true when a session was accepted.
    fn handle_hello(&mut self) -> bool {
        let ctl = self.seg.ctl();
        let seq = ctl.hello_seq.load(Ordering::Acquire);
        if seq == self.hello_handled {
            return false;
        }
        self.hello_handled = seq;
        let answer = match Handshake::decode(&load_words(&ctl.hello)) {
            Ok(h) => crate::link::answer_hello(&h, self.seg.geometry),
            Err(backline_wire::HandshakeError::Version(_)) => {
                Handshake::reject(RejectReason::Version, self.seg.geometry)
            }
            Err(_) => Handshake::reject(RejectReason::Malformed, self.seg.geometry),
        };
        let accepted = answer.kind == HandshakeKind::Accept;
        if accepted {
            // A fresh session starts at round 0 in empty rings.
            self.seg.zero_rings();
        }
        let ctl = self.seg.ctl();
        store_words(&ctl.accept, &answer.encode());
        // Release: the controller that sees accept_seq sees the answer and the zeroed rings.
        ctl.accept_seq.store(seq, Ordering::Release);
        futex_wake(&ctl.accept_seq);
        accepted
    }
}

/// The pid of the live server of the segment at `path`, if any.
fn live_server(path: &PathBuf) -> Option<u32> {
    let f = OpenOptions::new().read(true).write(true).open(path).ok()?;
    if f.metadata().ok()?.len() < CONTROL_BYTES as u64 {
        return None;
    }
    let map = map_file(&f, "").ok()?;
    // SAFETY: at least CONTROL_BYTES long (checked); Control is all atomics.
    let ctl = unsafe { &*map.as_ptr().cast::<Control>() };
    let pid = ctl.server_pid.load(Ordering::Relaxed);
    (ctl.magic.load(Ordering::Acquire) == MAGIC && os::pid_alive(pid)).then_some(pid)
}

impl Drop for ShmListener {
    fn drop(&mut self) {
        // Remove the name only if it is still ours (a later server may have reclaimed it).
        if live_server(&self.path) == Some(os::my_pid()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Listener for ShmListener {
    fn accept<'a>(
        &'a mut self,
        _wait: &WaitPolicy,
        stop: &'a (dyn Fn() -> bool + Sync),
    ) -> Result<Option<Box<dyn CoprocessorLink + 'a>>> {
        loop {
            if stop() {
                return Ok(None);
            }
            self.handle_floor();
            if self.handle_hello() {
                break;
            }
            let ctl = self.seg.ctl();
            if ctl.interrupt.swap(0, Ordering::SeqCst) == 0 {
                futex_wait(&ctl.interrupt, 0, Duration::from_millis(20));
            }
        }
        let ctl = self.seg.ctl();
        let bye_at = ctl.bye_seq.load(Ordering::Acquire);
        let hello_at = self.hello_handled;
        let (req, rep) = self.seg.rings();
        let ended = move || {
            ctl.bye_seq.load(Ordering::Relaxed) != bye_at
                || ctl.hello_seq.load(Ordering::Relaxed) != hello_at
                || stop()
        };
        Ok(Some(Box::new(RingCoprocessor {
            rings: RingPair {
                req,
                rep,
                _keep: Box::new(()),
            },
            ended: Box::new(ended),
        })))
    }

    fn address(&self) -> String {
        format!("shm:{} ({})", self.name, self.path.display())
    }

    fn peer_address(&self) -> String {
        self.name.clone()
    }
}

/// A controller's open segment, holding the controller lock until dropped.
pub(crate) struct ShmClient {
    seg: Segment,
    name: String,
    locked: bool,
}

impl ShmClient {
    /// Opens and checks the segment `name` (geometry compared with `geometry`).
    pub(crate) fn open(name: &str, geometry: Geometry) -> Result<ShmClient> {
        let path = path_of(name)?;
        let not_served = || {
            Error::NoPeer(format!(
                "shm:{name} (start one with `backline serve --transport shm --name {name}`)"
            ))
        };
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_served()),
            Err(e) => {
                return Err(Error::Io {
                    what: format!("opening {}", path.display()),
                    source: e,
                });
            }
        };
        let len = file
            .metadata()
            .map_err(Error::io(format!("reading {}", path.display())))?
            .len() as usize;
        if len < CONTROL_BYTES {
            return Err(Error::Invalid(format!(
                "{} is not a backline segment (too short)",
                path.display()
            )));
        }
        let map = map_file(&file, &path.display().to_string())?;
        // SAFETY: ≥ CONTROL_BYTES (checked); Control is all atomics.
        let ctl = unsafe { &*map.as_ptr().cast::<Control>() };
        if ctl.magic.load(Ordering::Acquire) != MAGIC {
            return Err(Error::Invalid(format!(
                "{} is not an initialised backline segment",
                path.display()
            )));
        }
        let version = ctl.version.load(Ordering::Relaxed);
        if version != WIRE_VERSION as u32 {
            return Err(Error::Rejected(RejectReason::Version));
        }
        if !os::pid_alive(ctl.server_pid.load(Ordering::Relaxed)) {
            return Err(Error::PeerGone(format!(
                "shm:{name} (stale segment: its server process {} exited)",
                ctl.server_pid.load(Ordering::Relaxed)
            )));
        }
        let peer = Geometry {
            depth: ctl.depth.load(Ordering::Relaxed),
            slot_bytes: ctl.slot_bytes.load(Ordering::Relaxed),
        };
        let peer = peer.validate()?;
        if len != CONTROL_BYTES + 2 * peer.ring_bytes() {
            return Err(Error::Invalid(format!(
                "{} has {len} bytes, expected {} for its geometry",
                path.display(),
                CONTROL_BYTES + 2 * peer.ring_bytes()
            )));
        }
        if peer != geometry {
            return Err(Error::GeometryMismatch {
                local: geometry,
                peer,
            });
        }
        let mut client = ShmClient {
            seg: Segment {
                map,
                geometry: peer,
            },
            name: name.to_string(),
            locked: false,
        };
        client.lock()?;
        Ok(client)
    }

    /// Takes the one-controller lock, or steals it from a dead holder.
    fn lock(&mut self) -> Result<()> {
        let ctl = self.seg.ctl();
        let me = os::my_pid();
        let mut holder = 0;
        loop {
            match ctl
                .client_pid
                .compare_exchange(holder, me, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.locked = true;
                    return Ok(());
                }
                Err(h) if h != 0 && os::pid_alive(h) => {
                    return Err(Error::Rejected(RejectReason::Busy));
                }
                Err(h) => holder = h,
            }
        }
    }

    fn server_alive(&self) -> bool {
        os::pid_alive(self.seg.ctl().server_pid.load(Ordering::Relaxed))
    }

    /// Waits for `cond` with futex naps on `word`, failing after `timeout` or when the server
    /// dies.
    fn wait_for(
        &self,
        word: &AtomicU32,
        timeout: Duration,
        what: &str,
        cond: impl Fn() -> bool,
    ) -> Result<()> {
        let t0 = Instant::now();
        while !cond() {
            if t0.elapsed() > timeout {
                return Err(Error::Timeout {
                    what: format!("{what} from shm:{}", self.name),
                    waited: t0.elapsed(),
                });
            }
            if !self.server_alive() {
                return Err(Error::PeerGone(format!("shm:{}", self.name)));
            }
            let cur = word.load(Ordering::Acquire);
            if !cond() {
                futex_wait(word, cur, Duration::from_millis(5));
            }
        }
        Ok(())
    }

    /// Bounces a sequence number `rounds` times through the control block's floor line with
    /// the server's thread. The server must be idle (no session in progress).
    pub(crate) fn floor(&self, rounds: u64, timeout: Duration) -> Result<Vec<f64>> {
        let ctl = self.seg.ctl();
        ctl.floor.store(0, Ordering::Relaxed);
        ctl.floor_rounds.store(rounds, Ordering::Release);
        self.seg.interrupt();
        let rtts = floor::bounce_client(&ctl.floor, rounds, timeout)?;
        // Wait until the server has left the bounce (it zeroes floor_rounds).
        self.wait_for(&ctl.interrupt, timeout, "the end of the floor run", || {
            ctl.floor_rounds.load(Ordering::Acquire) == 0
        })?;
        Ok(rtts)
    }

    /// Sends a hello and waits for the answer.
    pub(crate) fn hello(&self, in_flight: u32, timeout: Duration) -> Result<()> {
        let ctl = self.seg.ctl();
        let hello = Handshake::new(HandshakeKind::Hello, self.seg.geometry, in_flight);
        store_words(&ctl.hello, &hello.encode());
        // Release: the server that sees the new hello_seq sees the hello words.
        let seq = ctl.hello_seq.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        self.seg.interrupt();
        self.wait_for(&ctl.accept_seq, timeout, "the answer to our hello", || {
            ctl.accept_seq.load(Ordering::Acquire) == seq
        })?;
        let answer = Handshake::decode(&load_words(&ctl.accept))?;
        crate::link::read_answer(&answer, self.seg.geometry, &format!("shm:{}", self.name))
    }

    /// Turns the accepted session into a controller link; `close` says bye and unlocks.
    pub(crate) fn into_link(self) -> RingController {
        let (req, rep) = self.seg.rings();
        let name = self.name.clone();
        // SAFETY: the rings' pages are part of the live mapping held by `self`.
        unsafe {
            os::populate_write(
                self.seg.base().as_ptr().add(CONTROL_BYTES),
                2 * self.seg.geometry.ring_bytes(),
            )
        };
        let client = std::sync::Arc::new(self);
        let (c2, c3) = (client.clone(), client.clone());
        RingController::new(
            RingPair {
                req,
                rep,
                _keep: Box::new(client),
            },
            format!("shm:{name}"),
            Box::new(move || c2.bye()),
            Box::new(move || c3.server_alive()),
        )
    }

    fn bye(&self) {
        let ctl = self.seg.ctl();
        ctl.bye_seq.fetch_add(1, Ordering::AcqRel);
        self.seg.interrupt();
    }
}

impl Drop for ShmClient {
    fn drop(&mut self) {
        if self.locked {
            let _ = self.seg.ctl().client_pid.compare_exchange(
                os::my_pid(),
                0,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }
}

/// Removes the name of a segment whose server is gone. Returns true if one was removed.
pub fn remove_stale(name: &str) -> Result<bool> {
    let path = path_of(name)?;
    if path.exists() && live_server(&path).is_none() {
        std::fs::remove_file(&path).map_err(Error::io(format!("removing {}", path.display())))?;
        return Ok(true);
    }
    Ok(false)
}

/// The shm floor: bounces a sequence number `rounds` times through one cache line of the
/// segment `name` with its (idle) server thread. Takes the controller lock for the duration.
pub fn shm_floor(
    name: &str,
    geometry: Geometry,
    rounds: u64,
    timeout: Duration,
) -> Result<Vec<f64>> {
    ShmClient::open(name, geometry)?.floor(rounds, timeout)
}
