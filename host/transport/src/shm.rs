//! `shm`: the coprocessor in its own process (`backline serve --transport shm`), the rings in a
//! shared-memory segment `/dev/shm/backline-<name>` (mode 0600) that both processes map.
//!
//! Segment layout: a 4 KiB control block (the server's geometry and pid, the number of session
//! slots, the interrupt word, the floor line), then one 1 KiB control block per session slot
//! (its controller lock, its handshake mailbox — the same [`Handshake`] record as the network
//! transports —, its ring's two doorbells), then the ring of each slot. A slot's ring carries
//! its requests and, written over them in place, their replies
//! ([`backline_wire::IN_PLACE_REPLY_FLAG`]): a round moves one cache line between the two
//! processes and back.
//!
//! A controller takes a free slot (or one whose holder's pid is gone), writes a hello there and
//! interrupts the server; the server checks the geometry, zeroes that slot's ring, accepts, and
//! serves the slot on a thread of its own. The controller's `stop` writes a bye. A session
//! whose controller's pid is gone ends within 100 ms. A server whose pid is gone leaves a stale
//! segment, which the next server reclaims.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backline_ring::{CachePadded, Doorbell, RingView, WaitPolicy, futex_wait, futex_wake};
use backline_wire::{
    Geometry, HANDSHAKE_BYTES, Handshake, HandshakeKind, RejectReason, WIRE_VERSION,
};
use memmap2::MmapMut;

use crate::link::{
    Accepted, Admission, AdmitGuard, Listener, RingController, RingCoprocessor, RingPair, StopFlag,
};
use crate::{Error, Result, floor, os};

/// `3`: one ring per session slot, replies in place (`2` had a reply ring of its own).
const MAGIC: u64 = u64::from_le_bytes(*b"BKLNSHM3");
const CONTROL_BYTES: usize = 4096;
const SLOT_CONTROL_BYTES: usize = 1024;
const WORDS: usize = HANDSHAKE_BYTES / 4;
/// How often a session looks whether its controller's process still exists.
const PID_CHECK: Duration = Duration::from_millis(100);

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
    /// Session slots in the segment.
    slots: AtomicU32,
    /// Non-zero: the server should look at the mailboxes. Futex word.
    interrupt: CachePadded<AtomicU32>,
    /// The floor measurement's cache line.
    floor: CachePadded<AtomicU32>,
    /// Rounds of floor bounce requested by a controller; the server zeroes it when done.
    floor_rounds: CachePadded<AtomicU64>,
}

/// One session slot's control block.
#[repr(C)]
struct SlotControl {
    /// The slot's controller lock: 0 when free, else the holder's pid.
    client_pid: AtomicU32,
    /// Bumped by a controller after it wrote `hello`.
    hello_seq: AtomicU32,
    /// Set to `hello_seq` by the server after it wrote `accept`.
    accept_seq: AtomicU32,
    /// Bumped by a controller that ends its session.
    bye_seq: AtomicU32,
    hello: [AtomicU32; WORDS],
    accept: [AtomicU32; WORDS],
    req_doorbell: CachePadded<Doorbell>,
    rep_doorbell: CachePadded<Doorbell>,
}

const _: () = assert!(std::mem::size_of::<Control>() <= CONTROL_BYTES);
const _: () = assert!(std::mem::size_of::<SlotControl>() <= SLOT_CONTROL_BYTES);
const _: () = assert!(HANDSHAKE_BYTES.is_multiple_of(4));

/// The most session slots a segment has.
pub const MAX_SLOTS: u32 = 1024;

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

/// The longest segment name, in characters (the file is `/dev/shm/backline-NAME`).
pub const MAX_SHM_NAME: usize = 200;

/// Checks a segment name: 1 to [`MAX_SHM_NAME`] letters, digits, `.`, `_`, `-`. A name too
/// long is not quoted (its caller quotes it, cut to an excerpt), its length is.
fn path_of(name: &str) -> Result<PathBuf> {
    let chars = name.chars().count();
    if chars > MAX_SHM_NAME {
        return Err(Error::Invalid(format!(
            "an shm name of {chars} characters: at most {MAX_SHM_NAME}"
        )));
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        || name.starts_with('.')
    {
        return Err(Error::Invalid(format!(
            "shm name `{}`: use letters, digits, '.', '_' and '-' (not starting with '.')",
            name.escape_default()
        )));
    }
    Ok(PathBuf::from(format!("/dev/shm/backline-{name}")))
}

/// Byte offsets of a segment's parts.
#[derive(Debug, Clone, Copy)]
struct Layout {
    geometry: Geometry,
    slots: u32,
}

impl Layout {
    fn rings_base(self) -> usize {
        (CONTROL_BYTES + self.slots as usize * SLOT_CONTROL_BYTES).next_multiple_of(4096)
    }
    fn size(self) -> usize {
        self.rings_base() + self.slots as usize * self.geometry.ring_bytes()
    }
    fn slot_control(self, i: u32) -> usize {
        CONTROL_BYTES + i as usize * SLOT_CONTROL_BYTES
    }
    fn ring(self, i: u32) -> usize {
        self.rings_base() + i as usize * self.geometry.ring_bytes()
    }
}

struct Segment {
    map: MmapMut,
    layout: Layout,
}

// SAFETY: the mapping is shared memory accessed only through atomics (control blocks) and the
// ring protocol (rings); the struct itself is immutable after creation.
unsafe impl Sync for Segment {}

impl Segment {
    fn ctl(&self) -> &Control {
        // SAFETY: the mapping is at least CONTROL_BYTES long (checked when mapped), page
        // aligned, and lives as long as `self`; Control is all atomics, valid for any bytes.
        unsafe { &*self.map.as_ptr().cast::<Control>() }
    }

    fn slot(&self, i: u32) -> &SlotControl {
        assert!(i < self.layout.slots, "slot index");
        // SAFETY: slot control blocks lie within the mapping (its size was checked against
        // the layout), 1 KiB-aligned (≥ SlotControl's 128), all atomics.
        unsafe {
            &*self
                .map
                .as_ptr()
                .add(self.layout.slot_control(i))
                .cast::<SlotControl>()
        }
    }

    fn base(&self) -> NonNull<u8> {
        NonNull::new(self.map.as_ptr().cast_mut()).expect("mapping is non-null")
    }

    /// The request and reply views of slot `i`'s ring (the replies written over the
    /// requests). The views must not outlive `self`.
    fn rings(&self, i: u32) -> (RingView, RingView) {
        let g = self.layout.geometry;
        let sc = self.slot(i);
        let at = self.layout.ring(i);
        // SAFETY: the segment holds the ring of every slot (size checked), each ring starts
        // 64-aligned (the rings' base is page-aligned and ring_bytes a multiple of 64, which is
        // what RingView needs), and the doorbells live in the slot's control block; callers
        // keep `self` alive while the views are used. The two views' writers take turns on a
        // slot as `replies_in_place` asks: the server answers from a scratch buffer after
        // reading the request, and a controller (ours, or any other: it only harms its own
        // session) stages a slot again only after collecting its reply.
        unsafe {
            let req = RingView::new(
                self.base().add(at),
                g,
                Some(NonNull::from(&sc.req_doorbell.0)),
            )
            .expect("validated geometry");
            let rep = req.replies_in_place(Some(NonNull::from(&sc.rep_doorbell.0)));
            (req, rep)
        }
    }

    /// Zeroes (and so faults in) the ring of slot `i`.
    fn zero_ring(&self, i: u32) {
        let at = self.layout.ring(i);
        let len = self.layout.geometry.ring_bytes();
        // SAFETY: within the mapping; no session uses slot `i` (the caller's invariant: its
        // previous session ended and its new one is not accepted yet), so nobody else
        // touches these bytes now.
        unsafe { std::ptr::write_bytes(self.base().as_ptr().add(at), 0, len) };
    }

    fn interrupt(&self) {
        let ctl = self.ctl();
        ctl.interrupt.store(1, Ordering::SeqCst);
        futex_wake(&ctl.interrupt);
    }
}

fn map_file(f: &File, what: &str) -> Result<MmapMut> {
    // SAFETY: the file is a shared-memory object of ours; its contents are only accessed
    // through atomics (control blocks) and the ring protocol (rings). Another process may
    // truncate it only by misbehaving, which SIGBUS would report.
    unsafe { MmapMut::map_mut(f) }.map_err(Error::io(format!("mapping {what}")))
}

/// The server side: owns the segment (and removes it when dropped).
pub(crate) struct ShmListener {
    seg: Arc<Segment>,
    path: PathBuf,
    name: String,
    handled: Vec<u32>,
    /// Set while a session thread serves the slot: a new hello there waits until it ended.
    busy: Vec<Arc<AtomicBool>>,
    admission: Arc<Admission>,
}

impl ShmListener {
    /// Creates the segment `name` with `geometry` and one session slot per admitted session.
    /// Reclaims a stale segment whose server is gone; refuses one whose server is alive.
    pub(crate) fn create(
        name: &str,
        geometry: Geometry,
        admission: Arc<Admission>,
    ) -> Result<ShmListener> {
        let geometry = geometry.validate()?;
        let path = path_of(name)?;
        let slots = (admission.max() as u32).clamp(1, MAX_SLOTS);
        let layout = Layout { geometry, slots };
        let size = layout.size();
        let open = || {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
        };
        let file = match open() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Some(pid) = live_server(&path) {
                    return Err(Error::InUse(format!(
                        "shm segment `{name}` (served by process {pid})"
                    )));
                }
                // Stale: its server is gone. Reclaim.
                let _ = std::fs::remove_file(&path);
                open().map_err(Error::io(format!("creating {}", path.display())))?
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
        // Reserve the pages now: a segment larger than /dev/shm can hold is an error here,
        // not a SIGBUS when a session first touches its rings.
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a valid file descriptor; offset and length within the file.
            let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, size as libc::off_t) };
            if rc != 0 {
                return Err(cleanup(Error::OutOfMemory {
                    what: format!(
                        "the shm segment {} ({slots} session slots of one {}-byte ring; lower --max-sessions or the ring size)",
                        path.display(),
                        geometry.ring_bytes()
                    ),
                    bytes: size,
                }));
            }
        }
        let map = map_file(&file, &path.display().to_string()).map_err(cleanup)?;
        let seg = Segment { map, layout };
        // SAFETY: the control blocks of the fresh mapping are ours and writable. (The rings
        // are faulted in when a session is accepted: they are zeroed then.)
        unsafe { os::populate_write(seg.base().as_ptr(), layout.rings_base()) };
        let ctl = seg.ctl();
        ctl.version.store(WIRE_VERSION as u32, Ordering::Relaxed);
        ctl.depth.store(geometry.depth, Ordering::Relaxed);
        ctl.slot_bytes.store(geometry.slot_bytes, Ordering::Relaxed);
        ctl.slots.store(slots, Ordering::Relaxed);
        ctl.server_pid.store(os::my_pid(), Ordering::Relaxed);
        // Release: a controller that sees the magic sees every field above.
        ctl.magic.store(MAGIC, Ordering::Release);
        Ok(ShmListener {
            seg: Arc::new(seg),
            path,
            name: name.to_string(),
            handled: vec![0; slots as usize],
            busy: (0..slots).map(|_| Arc::default()).collect(),
            admission,
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

    /// Answers a pending hello on slot `i`; returns the session's place when it was accepted.
    fn handle_hello(&mut self, i: u32) -> Option<AdmitGuard> {
        let sc = self.seg.slot(i);
        let seq = sc.hello_seq.load(Ordering::Acquire);
        if seq == self.handled[i as usize] || self.busy[i as usize].load(Ordering::Acquire) {
            return None;
        }
        self.handled[i as usize] = seq;
        let g = self.seg.layout.geometry;
        let answer = match Handshake::decode(&load_words(&sc.hello)) {
            Ok(h) => crate::link::answer_hello(&h, g),
            Err(backline_wire::HandshakeError::Version(_)) => {
                Handshake::reject(RejectReason::Version, g)
            }
            Err(_) => Handshake::reject(RejectReason::Malformed, g),
        };
        let (mut answer, mut guard) = (answer, None);
        if answer.kind == HandshakeKind::Accept {
            guard = self.admission.try_admit();
            if guard.is_none() {
                answer = Handshake::reject(RejectReason::Full, g);
            }
        }
        if guard.is_some() {
            // A fresh session starts at round 0 in an empty ring.
            self.seg.zero_ring(i);
        }
        store_words(&sc.accept, &answer.encode());
        // Release: the controller that sees accept_seq sees the answer and the zeroed ring.
        sc.accept_seq.store(seq, Ordering::Release);
        futex_wake(&sc.accept_seq);
        guard
    }

    fn link(&self, i: u32, stop: &StopFlag) -> RingCoprocessor {
        let sc = self.seg.slot(i);
        let bye_at = sc.bye_seq.load(Ordering::Acquire);
        let hello_at = self.handled[i as usize];
        let client = sc.client_pid.load(Ordering::Acquire);
        let (req, rep) = self.seg.rings(i);
        let (seg, stop) = (self.seg.clone(), stop.clone());
        let busy = self.busy[i as usize].clone();
        busy.store(true, Ordering::Release);
        let checked = AtomicU64::new(0);
        let t0 = Instant::now();
        let ended = move || {
            let sc = seg.slot(i);
            if sc.bye_seq.load(Ordering::Relaxed) != bye_at
                || sc.hello_seq.load(Ordering::Relaxed) != hello_at
                || stop.is_set()
            {
                return true;
            }
            // Is the controller's process still there? (At most every PID_CHECK.)
            let now = t0.elapsed().as_millis() as u64;
            if now.saturating_sub(checked.load(Ordering::Relaxed)) >= PID_CHECK.as_millis() as u64 {
                checked.store(now, Ordering::Relaxed);
                return !os::pid_alive(client);
            }
            false
        };
        RingCoprocessor {
            rings: RingPair {
                req,
                rep,
                // Keeps the mapping while the session runs and frees the slot for the next
                // hello once it ended.
                _keep: Box::new(SlotBusy(busy, self.seg.clone())),
            },
            ended: Box::new(ended),
            peer: format!("shm:{}#{i} (pid {client})", self.name),
            polls: 0,
        }
    }
}

/// Marks a slot busy while its session runs; dropping it (the session ended) frees the slot.
struct SlotBusy(Arc<AtomicBool>, #[allow(dead_code)] Arc<Segment>);

impl Drop for SlotBusy {
    fn drop(&mut self) {
        // Release: the listener's Acquire load of `busy` sees the session's last accesses done.
        self.0.store(false, Ordering::Release);
        self.1.interrupt();
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
    fn accept(&mut self, _wait: &WaitPolicy, stop: &StopFlag) -> Result<Option<Accepted>> {
        loop {
            if stop.is_set() {
                return Ok(None);
            }
            self.handle_floor();
            for i in 0..self.seg.layout.slots {
                if let Some(guard) = self.handle_hello(i) {
                    return Ok(Some(Accepted {
                        link: Box::new(self.link(i, stop)),
                        guard,
                    }));
                }
            }
            let ctl = self.seg.ctl();
            if ctl.interrupt.swap(0, Ordering::SeqCst) == 0 {
                futex_wait(&ctl.interrupt, 0, Duration::from_millis(20));
            }
        }
    }

    fn address(&self) -> String {
        format!("shm:{} ({})", self.name, self.path.display())
    }

    fn peer_address(&self) -> String {
        self.name.clone()
    }
}

/// A mapped segment as a controller sees it, checked.
fn open_segment(name: &str, geometry: Option<Geometry>) -> Result<Segment> {
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
            "{} is not an initialised backline segment of this version",
            path.display()
        )));
    }
    if ctl.version.load(Ordering::Relaxed) != WIRE_VERSION as u32 {
        return Err(Error::Rejected(RejectReason::Version));
    }
    let pid = ctl.server_pid.load(Ordering::Relaxed);
    if !os::pid_alive(pid) {
        return Err(Error::PeerGone(format!(
            "shm:{name} (stale segment: its server process {pid} exited)"
        )));
    }
    let peer = Geometry {
        depth: ctl.depth.load(Ordering::Relaxed),
        slot_bytes: ctl.slot_bytes.load(Ordering::Relaxed),
    }
    .validate()?;
    let slots = ctl.slots.load(Ordering::Relaxed);
    if slots == 0 || slots > MAX_SLOTS {
        return Err(Error::Invalid(format!(
            "{} claims {slots} session slots",
            path.display()
        )));
    }
    let layout = Layout {
        geometry: peer,
        slots,
    };
    if len != layout.size() {
        return Err(Error::Invalid(format!(
            "{} has {len} bytes, expected {} for its geometry and {slots} slots",
            path.display(),
            layout.size()
        )));
    }
    if let Some(g) = geometry
        && peer != g
    {
        return Err(Error::GeometryMismatch { local: g, peer });
    }
    Ok(Segment { map, layout })
}

/// A controller's open segment, holding its slot's lock until dropped.
pub(crate) struct ShmClient {
    seg: Segment,
    name: String,
    slot: u32,
    locked: bool,
}

impl ShmClient {
    /// Opens and checks the segment `name` (geometry compared with `geometry`) and takes a
    /// session slot.
    pub(crate) fn open(name: &str, geometry: Geometry) -> Result<ShmClient> {
        let seg = open_segment(name, Some(geometry))?;
        let mut client = ShmClient {
            seg,
            name: name.to_string(),
            slot: 0,
            locked: false,
        };
        client.lock()?;
        Ok(client)
    }

    /// Takes a free slot, or one whose holder is dead; `Full` when every slot is held.
    fn lock(&mut self) -> Result<()> {
        let me = os::my_pid();
        for i in 0..self.seg.layout.slots {
            let sc = self.seg.slot(i);
            let mut holder = 0;
            loop {
                // AcqRel: taking the lock orders our later mailbox writes after the previous
                // holder's release of it.
                match sc.client_pid.compare_exchange(
                    holder,
                    me,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        self.slot = i;
                        self.locked = true;
                        return Ok(());
                    }
                    Err(h) if h != 0 && (h == me || os::pid_alive(h)) => break,
                    Err(h) => holder = h,
                }
            }
        }
        Err(Error::Rejected(RejectReason::Full))
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
        wait_for(&self.seg, &self.name, word, timeout, what, cond)
    }

    /// Sends a hello and waits for the answer.
    pub(crate) fn hello(&self, in_flight: u32, timeout: Duration) -> Result<()> {
        let sc = self.seg.slot(self.slot);
        let hello = Handshake::new(HandshakeKind::Hello, self.seg.layout.geometry, in_flight);
        store_words(&sc.hello, &hello.encode());
        // Release: the server that sees the new hello_seq sees the hello words.
        let seq = sc.hello_seq.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
        self.seg.interrupt();
        self.wait_for(&sc.accept_seq, timeout, "the answer to our hello", || {
            sc.accept_seq.load(Ordering::Acquire) == seq
        })?;
        let answer = Handshake::decode(&load_words(&sc.accept))?;
        crate::link::read_answer(
            &answer,
            self.seg.layout.geometry,
            &format!("shm:{}", self.name),
        )
    }

    /// Turns the accepted session into a controller link; `close` says bye and unlocks.
    pub(crate) fn into_link(self) -> RingController {
        let (req, rep) = self.seg.rings(self.slot);
        let name = format!("{}#{}", self.name, self.slot);
        // SAFETY: the slot's ring is part of the live mapping held by `self`.
        unsafe {
            os::populate_write(
                self.seg
                    .base()
                    .as_ptr()
                    .add(self.seg.layout.ring(self.slot)),
                self.seg.layout.geometry.ring_bytes(),
            )
        };
        let client = Arc::new(self);
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
        let sc = self.seg.slot(self.slot);
        sc.bye_seq.fetch_add(1, Ordering::AcqRel);
        self.seg.interrupt();
    }
}

/// Waits for `cond` with futex naps on `word`, failing after `timeout` or when the segment's
/// server dies.
fn wait_for(
    seg: &Segment,
    name: &str,
    word: &AtomicU32,
    timeout: Duration,
    what: &str,
    cond: impl Fn() -> bool,
) -> Result<()> {
    let t0 = Instant::now();
    while !cond() {
        if t0.elapsed() > timeout {
            return Err(Error::Timeout {
                what: format!("{what} from shm:{name}"),
                waited: t0.elapsed(),
            });
        }
        if !os::pid_alive(seg.ctl().server_pid.load(Ordering::Relaxed)) {
            return Err(Error::PeerGone(format!("shm:{name}")));
        }
        let cur = word.load(Ordering::Acquire);
        if !cond() {
            futex_wait(word, cur, Duration::from_millis(5));
        }
    }
    Ok(())
}

impl Drop for ShmClient {
    fn drop(&mut self) {
        if self.locked {
            // Release: the next holder's Acquire CAS sees our last mailbox writes.
            let _ = self.seg.slot(self.slot).client_pid.compare_exchange(
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
/// segment `name` with its server's listener thread (which serves it between looks at the
/// mailboxes, also while sessions run on their own threads). One floor at a time.
pub fn shm_floor(
    name: &str,
    geometry: Geometry,
    rounds: u64,
    timeout: Duration,
) -> Result<Vec<f64>> {
    let seg = open_segment(name, Some(geometry))?;
    let ctl = seg.ctl();
    // AcqRel: claims the floor line. A floor already running (another controller's) makes
    // this one wait its turn, for at most `timeout`.
    let t0 = Instant::now();
    while ctl
        .floor_rounds
        .compare_exchange(0, rounds, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        if t0.elapsed() > timeout {
            return Err(Error::InUse(format!(
                "the floor line of shm:{name} (another controller's floor measurement held it for {timeout:?})"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // Ours now: start from 0 (the server waits for 1).
    ctl.floor.store(0, Ordering::Relaxed);
    seg.interrupt();
    let rtts = floor::bounce_client(&ctl.floor, rounds, timeout)?;
    // Wait until the server has left the bounce (it zeroes floor_rounds).
    wait_for(
        &seg,
        name,
        &ctl.interrupt,
        timeout,
        "the end of the floor run",
        || ctl.floor_rounds.load(Ordering::Acquire) == 0,
    )?;
    Ok(rtts)
}
