//! The simulated board (`backline-apu sim-board`): the HWHS engine's generated RTL under
//! Verilator (`backline-sim`, with its port-level ERNIC and responder models) plus the
//! register-level ERNIC model of [`crate::model`], serving both register spaces over a Unix
//! socket and keeping their state between clients, as a real board keeps its state between
//! CLI calls. A modelled coprocessor answers the out-of-band handshake on TCP.
//!
//! How the two ERNIC models meet: the register model validates the bring-up; when the HWHS
//! is started, the simulated board checks that the engine's QP, SQ base and depth and
//! request buffer agree with the enabled QP and the board's memory map, and configures the
//! port-level model from what was brought up and what the peer said in the handshake (its
//! request ring and rkey, its ring depth). A WQE the engine posts with a wrong rkey or
//! address is then a data-path error of the port model, as it would be a NAK on the wire.
//! A QP that is not enabled, or in the fatal state, delivers no replies: its rounds time out.
//!
//! Time: the simulated clock advances only when a client asks (register accesses take their
//! AXI4-Lite handshake cycles, waits take their cycles); between requests it stands still.
//!
//! Memory map of the simulated board (bus addresses as the ERNIC sees them; defaults of
//! [`MemoryMap`], and what `firmware/examples/sim-board.toml` uses):
//!
//! | what | address | size |
//! |------|--------:|-----:|
//! | HWHS request buffer (`WQE_LADDR`) | `0xA400_0000` | 64 B |
//! | HWHS reply memory (the memory region) | `0xA401_0000` | 4 KiB |
//! | SQ memory (`SQBA`, `SQ_BASE`) | `0xA402_0000` | 64 KiB |

pub mod protocol;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use backline_regmap as rm;
use backline_sim::{HwhsSim, ModelConfig, Responder, SimError};
use backline_wire::oob;
use backline_wire::{Geometry, Handshake, HandshakeKind, RejectReason};

use crate::ernic;
use crate::mmio::fake::refusal_error;
use crate::mmio::sim::SimMmio;
use crate::mmio::{Access, Block, MmioError, Op};
use crate::model::{BoardFacts, ErnicModel, PeerFacts, mac_is_unicast};
use protocol::{self as p, PeerState, PortStats, Request, SimState, Status, op};

/// The simulated board's memory map (bus addresses as the ERNIC sees them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryMap {
    /// The HWHS request buffer (`WQE_LADDR`).
    pub request_buffer: u64,
    /// The HWHS reply memory (the memory region's physical base).
    pub reply_memory: u64,
    /// The SQ memory.
    pub sq_memory: u64,
}

impl Default for MemoryMap {
    fn default() -> Self {
        MemoryMap {
            request_buffer: 0xA400_0000,
            reply_memory: 0xA401_0000,
            sq_memory: 0xA402_0000,
        }
    }
}

/// Bytes of the simulated SQ memory.
pub const SQ_MEMORY_BYTES: u32 = backline_sim::model::SQ_MEM_BYTES;

/// The modelled coprocessor's side of the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPeer {
    /// Its QP.
    pub qpn: u32,
    /// Its first PSN.
    pub psn: u32,
    /// Its IPv4 address.
    pub ip: Ipv4Addr,
    /// Its MAC.
    pub mac: [u8; 6],
    /// Key of its request ring.
    pub rkey: u32,
    /// Virtual address of its request ring.
    pub ring_addr: u64,
    /// Its ring geometry (the board's must match).
    pub geometry: Geometry,
}

impl Default for ModelPeer {
    fn default() -> Self {
        ModelPeer {
            qpn: 0x11,
            psn: 0x2000,
            ip: Ipv4Addr::new(10, 0, 0, 1),
            mac: [0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
            rkey: 0x1234,
            ring_addr: 0x7F00_0000_0000,
            geometry: Geometry {
                depth: rm::MAX_RING_DEPTH,
                slot_bytes: rm::SLOT_BYTES,
            },
        }
    }
}

/// Settings of a simulated board.
#[derive(Debug, Clone, PartialEq)]
pub struct SimBoardOptions {
    /// The Unix socket to serve.
    pub socket: PathBuf,
    /// Where the modelled peer listens for the handshake (`None`: no peer).
    pub peer_listen: Option<String>,
    /// The modelled peer.
    pub peer: ModelPeer,
    /// What the modelled peer computes.
    pub responder: Responder,
    /// One-way wire latency, cycles.
    pub wire_latency_cycles: u64,
    /// Responder service time, cycles.
    pub service_cycles: u64,
    /// Extra uniform delay per wire leg, 0 ..= this many cycles.
    pub jitter_cycles: u64,
    /// Seed of the jitter.
    pub seed: u64,
    /// What `XRNICVER` reports.
    pub ernic_version: ernic::Version,
    /// The memory map.
    pub memory: MemoryMap,
}

impl SimBoardOptions {
    /// Defaults: peer on an ephemeral localhost port, echo responder, 1 µs one way,
    /// 200 ns service, no jitter, the model's ERNIC version and memory map.
    pub fn new(socket: impl Into<PathBuf>) -> SimBoardOptions {
        SimBoardOptions {
            socket: socket.into(),
            peer_listen: Some("127.0.0.1:0".into()),
            peer: ModelPeer::default(),
            responder: Responder::Echo,
            wire_latency_cycles: 200,
            service_cycles: 40,
            jitter_cycles: 0,
            seed: 1,
            ernic_version: ernic::Version::MODEL,
            memory: MemoryMap::default(),
        }
    }
}

/// Why a simulated board could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimBoardError {
    /// The HWHS model could not start (e.g. built without Verilator).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// Another sim-board serves the socket.
    #[error("a simulated board already serves {0}")]
    InUse(String),
    /// A socket could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Log entries kept at most (older ones are kept; later ones counted as dropped).
pub const LOG_CAP: usize = 1 << 21;

/// The board's state: both models and the record of what was done to them.
pub struct SimCore {
    hwhs: HwhsSim,
    ernic: ErnicModel,
    shadow: Vec<u32>,
    log: Vec<Access>,
    log_dropped: u64,
    violations: Vec<String>,
    opts: SimBoardOptions,
    handshakes: u64,
    peer_state: Option<PeerState>,
}

impl std::fmt::Debug for SimCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCore")
            .field("cycle", &self.hwhs.cycle())
            .field("log", &self.log.len())
            .finish()
    }
}

fn refused(block: Block, offset: u32, op: Op, reason: String) -> MmioError {
    MmioError::Refused {
        block,
        offset,
        op,
        reason,
    }
}

impl SimCore {
    /// A powered-up board.
    pub fn new(opts: SimBoardOptions) -> Result<SimCore, SimError> {
        let mut ernic = ErnicModel::new(opts.ernic_version);
        ernic.set_reply_memory(opts.memory.reply_memory);
        ernic.set_max_sq_depth(SQ_MEMORY_BYTES / rm::wqe::BYTES);
        let mut shadow = vec![0u32; 64];
        for r in rm::REGISTERS {
            shadow[(r.offset / 4) as usize] = r.reset;
        }
        let mut core = SimCore {
            hwhs: HwhsSim::new(ModelConfig::default())?,
            ernic,
            shadow,
            log: Vec::new(),
            log_dropped: 0,
            violations: Vec::new(),
            opts,
            handshakes: 0,
            peer_state: None,
        };
        let cfg = core.port_config();
        *core.hwhs.model_mut() = backline_sim::ErnicModel::new(cfg);
        Ok(core)
    }

    fn sh(&self, off: u32) -> u32 {
        self.shadow[(off / 4) as usize]
    }

    /// Engine cycles since power-up.
    pub fn cycle(&self) -> u64 {
        self.hwhs.cycle()
    }

    /// The ERNIC register model.
    pub fn ernic(&self) -> &ErnicModel {
        &self.ernic
    }

    fn record(&mut self, a: Access) {
        if self.log.len() < LOG_CAP {
            self.log.push(a);
        } else {
            self.log_dropped += 1;
        }
    }

    /// The port-level model's settings for what is configured now.
    fn port_config(&self) -> ModelConfig {
        let qp = self.ernic.qp(self.sh(rm::QP_NUM));
        let live = qp.is_some_and(|q| q.enabled && !q.fatal);
        let peer = self.ernic.peer();
        let reply_len = match self.sh(rm::RPL_LEN) {
            v @ (4 | 8 | 12 | 16) => v,
            _ => 4,
        };
        let o = &self.opts;
        ModelConfig {
            wire_latency_cycles: o.wire_latency_cycles,
            service_cycles: o.service_cycles,
            jitter_cycles: o.jitter_cycles,
            jitter_seed: o.seed,
            responder: if live { o.responder } else { Responder::Silent },
            reply_len,
            sq_base: self.sh(rm::SQ_BASE),
            sq_depth: self.sh(rm::SQ_DEPTH).max(1),
            remote_va: if peer.is_some() { o.peer.ring_addr } else { 0 },
            rkey: if peer.is_some() { o.peer.rkey } else { 0 },
            ring_depth: self.sh(rm::RING_DEPTH).clamp(1, rm::MAX_RING_DEPTH),
            record_rounds: false,
            ..ModelConfig::default()
        }
    }

    /// Updates the port model's settings in place (its round state is kept).
    fn refresh_port(&mut self) {
        let mut cfg = self.port_config();
        if let Some(pk) = &self.peer_state {
            cfg.ring_depth = pk.depth;
        }
        self.hwhs.model_mut().config = cfg;
    }

    /// Why the HWHS must not start now, if it must not.
    fn start_problem(&self) -> Option<String> {
        let n = self.sh(rm::QP_NUM);
        let Some(qp) = self.ernic.qp(n) else {
            return Some(format!(
                "CTRL.start with QP_NUM = {n}: not a data QP (2 ..= 255)"
            ));
        };
        if !qp.enabled {
            return Some(format!(
                "CTRL.start with QP_NUM = {n}, but QPCONF[QP {n}].enable = 0: the HWHS would \
                 post to a QP the ERNIC does not run (run setup first)"
            ));
        }
        let sq_base = u64::from(self.sh(rm::SQ_BASE));
        if sq_base != qp.sq_base {
            return Some(format!(
                "SQ_BASE = {sq_base:#x}, but SQBA[QP {n}] = {:#x}: the engine would write WQEs \
                 where the ERNIC does not fetch them",
                qp.sq_base
            ));
        }
        let depth = self.sh(rm::SQ_DEPTH);
        if depth != qp.sq_depth {
            return Some(format!(
                "SQ_DEPTH = {depth}, but QDEPTH[QP {n}].sq = {}",
                qp.sq_depth
            ));
        }
        let mem = self.opts.memory;
        if qp.sq_base < mem.sq_memory
            || qp.sq_base + u64::from(depth) * u64::from(rm::wqe::BYTES)
                > mem.sq_memory + u64::from(SQ_MEMORY_BYTES)
        {
            return Some(format!(
                "SQBA[QP {n}] = {:#x} with {depth} WQEs is outside the SQ memory ({:#x}, {} \
                 KiB)",
                qp.sq_base,
                mem.sq_memory,
                SQ_MEMORY_BYTES / 1024
            ));
        }
        let laddr =
            u64::from(self.sh(rm::WQE_LADDR_LO)) | u64::from(self.sh(rm::WQE_LADDR_HI)) << 32;
        if laddr != mem.request_buffer {
            return Some(format!(
                "WQE_LADDR = {laddr:#x}, but the HWHS request buffer is at {:#x}: the ERNIC \
                 would send the wrong bytes",
                mem.request_buffer
            ));
        }
        if let Some(pk) = &self.peer_state {
            let rd = self.sh(rm::RING_DEPTH);
            if rd != pk.depth {
                return Some(format!(
                    "RING_DEPTH = {rd}, but the rings agreed in the handshake have {} slots",
                    pk.depth
                ));
            }
        }
        None
    }

    /// A register read.
    pub fn read(&mut self, block: Block, offset: u32) -> Result<u32, MmioError> {
        crate::mmio::check_offset(block, offset, block.window_bytes())?;
        match block {
            Block::Ernic => {
                let v = self
                    .ernic
                    .read(offset)
                    .map_err(|r| refusal_error(block, offset, Op::Read, r))?;
                self.record(Access {
                    op: Op::Read,
                    block,
                    offset,
                    value: v,
                });
                Ok(v)
            }
            Block::Hwhs => self.hwhs.axi_read(offset).map_err(|e| MmioError::Bus {
                block,
                offset,
                op: Op::Read,
                detail: e.to_string(),
            }),
        }
    }

    /// `count` reads of one register.
    pub fn read_repeat(
        &mut self,
        block: Block,
        offset: u32,
        count: u64,
    ) -> Result<Vec<u32>, MmioError> {
        (0..count).map(|_| self.read(block, offset)).collect()
    }

    fn note_refusal(&mut self, e: &MmioError, value: u32) {
        if let MmioError::Refused {
            block,
            offset,
            op,
            reason,
        } = e
        {
            self.violations.push(format!(
                "{block} {op} {} = {value:#010x}: {reason}",
                block.register_name(*offset)
            ));
        }
    }

    /// A register write.
    pub fn write(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError> {
        let r = self.write_inner(block, offset, value);
        if let Err(e) = &r {
            self.note_refusal(e, value);
        }
        r
    }

    fn write_inner(&mut self, block: Block, offset: u32, value: u32) -> Result<(), MmioError> {
        crate::mmio::check_offset(block, offset, block.window_bytes())?;
        match block {
            Block::Ernic => {
                self.ernic
                    .write(offset, value)
                    .map_err(|r| refusal_error(block, offset, Op::Write, r))?;
                self.refresh_port();
            }
            Block::Hwhs => {
                let start = offset == rm::CTRL && rm::CTRL_START.get(value) == 1;
                if start {
                    if let Some(why) = self.start_problem() {
                        return Err(refused(block, offset, Op::Write, why));
                    }
                    self.refresh_port();
                }
                self.hwhs
                    .axi_write(offset, value)
                    .map_err(|e| MmioError::Bus {
                        block,
                        offset,
                        op: Op::Write,
                        detail: e.to_string(),
                    })?;
                if rm::lookup(offset).is_some_and(|r| r.access.readable()) {
                    self.shadow[(offset / 4) as usize] = value;
                }
                if offset == rm::CTRL && rm::CTRL_SOFT_RESET.get(value) == 1 {
                    // The engine's round numbering restarts: so does the port model's.
                    let mut cfg = self.port_config();
                    if let Some(pk) = &self.peer_state {
                        cfg.ring_depth = pk.depth;
                    }
                    *self.hwhs.model_mut() = backline_sim::ErnicModel::new(cfg);
                }
            }
        }
        self.record(Access::write(block, offset, value));
        Ok(())
    }

    /// Lets `cycles` engine cycles pass.
    pub fn wait(&mut self, cycles: u64) {
        self.hwhs.run_cycles(cycles);
    }

    /// Puts QP `qpn` into the fatal state.
    pub fn inject_qp_fatal(&mut self, qpn: u32) -> Result<(), String> {
        self.ernic.inject_fatal(qpn)?;
        self.refresh_port();
        Ok(())
    }

    /// The modelled peer accepted a hello from the board.
    fn accept_peer(&mut self, hello: &Handshake) {
        let pk = self.opts.peer;
        self.ernic.set_peer(
            PeerFacts {
                qpn: pk.qpn,
                psn: pk.psn,
                ip: pk.ip.octets(),
                mac: pk.mac,
            },
            BoardFacts {
                qpn: hello.qpn,
                psn: hello.psn,
                rkey: hello.rkey,
                ring_addr: hello.ring_addr,
                ring_bytes: u64::from(hello.geometry.depth) * u64::from(hello.geometry.slot_bytes),
            },
        );
        self.handshakes += 1;
        self.peer_state = Some(PeerState {
            board_qpn: hello.qpn,
            peer_qpn: pk.qpn,
            ring_addr: pk.ring_addr,
            rkey: pk.rkey,
            depth: hello.geometry.depth,
        });
        self.refresh_port();
    }

    /// The access log.
    pub fn log(&self) -> &[Access] {
        &self.log
    }

    /// Refused accesses.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// The board's state.
    pub fn state(&self) -> SimState {
        let st = self.hwhs.model().stats();
        SimState {
            protocol: p::PROTOCOL_VERSION,
            cycle: self.hwhs.cycle(),
            ernic_version: self.opts.ernic_version.to_string(),
            peer_listen: self.opts.peer_listen.clone(),
            handshakes: self.handshakes,
            peer: self.peer_state.clone(),
            responder: self.opts.responder.name().into(),
            wire_latency_cycles: self.opts.wire_latency_cycles,
            service_cycles: self.opts.service_cycles,
            enabled_qps: self.ernic.enabled_qps(),
            fatal_qps: self
                .ernic
                .enabled_qps()
                .into_iter()
                .filter(|&n| self.ernic.qp(n).is_some_and(|q| q.fatal))
                .collect(),
            port: PortStats {
                doorbells: st.doorbells,
                wqes: st.wqes,
                completions: st.completions,
                replies: st.replies,
                errors: st.errors,
                first_error: st.first_error.clone(),
            },
            log_len: self.log.len() as u64 + self.log_dropped,
            violations: self.violations.len() as u64,
        }
    }

    /// Serves one request; `None` payload for shutdown.
    fn serve(&mut self, req: Request) -> (Status, Vec<u8>) {
        let reg_err = |e: MmioError| -> (Status, Vec<u8>) {
            let (status, text) = match &e {
                MmioError::Refused { reason, .. } => (Status::Refused, reason.clone()),
                MmioError::Bus { detail, .. } => (Status::Bus, detail.clone()),
                other => (Status::Bus, other.to_string()),
            };
            (status, text.into_bytes())
        };
        let block = || p::block_of(req.block);
        match req.op {
            op::HELLO => {
                let mut v = p::PROTOCOL_VERSION.to_le_bytes().to_vec();
                v.extend(serde_json::to_vec(&self.state()).unwrap_or_default());
                (Status::Ok, v)
            }
            op::STATE => (
                Status::Ok,
                serde_json::to_vec(&self.state()).unwrap_or_default(),
            ),
            op::READ | op::WRITE | op::READ_REPEAT => {
                let Some(b) = block() else {
                    return (
                        Status::BadRequest,
                        format!("unknown block {}", req.block).into_bytes(),
                    );
                };
                match req.op {
                    op::READ => match self.read(b, req.offset) {
                        Ok(v) => (Status::Ok, v.to_le_bytes().to_vec()),
                        Err(e) => reg_err(e),
                    },
                    op::WRITE => match self.write(b, req.offset, req.arg as u32) {
                        Ok(()) => (Status::Ok, Vec::new()),
                        Err(e) => reg_err(e),
                    },
                    _ if req.arg > p::MAX_REPEAT => (
                        Status::BadRequest,
                        format!("read-repeat of {} > {}", req.arg, p::MAX_REPEAT).into_bytes(),
                    ),
                    _ => match self.read_repeat(b, req.offset, req.arg) {
                        Ok(v) => (Status::Ok, v.iter().flat_map(|w| w.to_le_bytes()).collect()),
                        Err(e) => reg_err(e),
                    },
                }
            }
            op::WAIT => {
                self.wait(req.arg);
                (Status::Ok, self.cycle().to_le_bytes().to_vec())
            }
            op::LOG => {
                let from = (req.arg as usize).min(self.log.len());
                let to = (from + p::LOG_CHUNK).min(self.log.len());
                let mut v = Vec::with_capacity((to - from) * p::LOG_ENTRY_BYTES);
                for a in &self.log[from..to] {
                    p::encode_access(a, &mut v);
                }
                (Status::Ok, v)
            }
            op::CLEAR_LOG => {
                self.log.clear();
                self.log_dropped = 0;
                (Status::Ok, Vec::new())
            }
            op::VIOLATIONS => (Status::Ok, self.violations.join("\n").into_bytes()),
            op::INJECT if req.arg == p::fault::QP_FATAL => match self.inject_qp_fatal(req.offset) {
                Ok(()) => (Status::Ok, Vec::new()),
                Err(e) => (Status::BadRequest, e.into_bytes()),
            },
            other => (
                Status::BadRequest,
                format!("unknown request {other}").into_bytes(),
            ),
        }
    }
}

/// Checks a hello against the modelled peer; the answer to send.
fn answer_hello(peer: &ModelPeer, h: &Handshake) -> Handshake {
    let geo = peer.geometry;
    if h.kind != HandshakeKind::Hello {
        return Handshake::reject(RejectReason::Malformed, geo);
    }
    if h.geometry != geo {
        return Handshake::reject(RejectReason::Geometry, geo);
    }
    if h.in_flight != 1 {
        return Handshake::reject(RejectReason::Unsupported, geo);
    }
    let ip_ok = crate::peer::ip_of_gid(h.gid).is_some();
    if h.qpn < 2 || h.qpn > 0xFF_FFFF || !ip_ok || !mac_is_unicast(h.mac) || h.psn > 0xFF_FFFF {
        return Handshake::reject(RejectReason::Malformed, geo);
    }
    let mut a = Handshake::new(HandshakeKind::Accept, geo, 1);
    a.qpn = peer.qpn;
    a.psn = peer.psn;
    a.gid = crate::peer::gid_of(peer.ip);
    a.mac = peer.mac;
    a.rkey = peer.rkey;
    a.ring_addr = peer.ring_addr;
    a
}

/// A running simulated board: its socket server and its modelled peer, on threads of this
/// process. Dropping it stops both and removes the socket.
pub struct SimBoard {
    socket: PathBuf,
    peer_addr: Option<SocketAddr>,
    core: Arc<Mutex<SimCore>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    clients: Arc<Mutex<Clients>>,
}

impl std::fmt::Debug for SimBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBoard")
            .field("socket", &self.socket)
            .field("peer", &self.peer_addr)
            .finish()
    }
}

fn lock(core: &Mutex<SimCore>) -> std::sync::MutexGuard<'_, SimCore> {
    // A panic while holding the lock leaves the models in some state; serving it is still
    // better than refusing every later client.
    core.lock().unwrap_or_else(|e| e.into_inner())
}

impl SimBoard {
    /// Starts a simulated board: binds the socket (replacing a stale one) and the peer's
    /// listener, and serves on background threads.
    pub fn spawn(opts: SimBoardOptions) -> Result<SimBoard, SimBoardError> {
        let socket = opts.socket.clone();
        if socket.exists() {
            if UnixStream::connect(&socket).is_ok() {
                return Err(SimBoardError::InUse(socket.display().to_string()));
            }
            let _ = std::fs::remove_file(&socket);
        }
        let core = Arc::new(Mutex::new(SimCore::new(opts.clone())?));
        let io = |what: String| move |source| SimBoardError::Io { what, source };
        let listener =
            UnixListener::bind(&socket).map_err(io(format!("binding {}", socket.display())))?;
        let stop = Arc::new(AtomicBool::new(false));
        let clients = Arc::new(Mutex::new(Clients::new()));
        let mut threads = Vec::new();
        let mut peer_addr = None;
        if let Some(addr) = &opts.peer_listen {
            let tcp =
                TcpListener::bind(addr).map_err(io(format!("binding the peer listener {addr}")))?;
            let local = tcp.local_addr().map_err(io("peer listener".into()))?;
            peer_addr = Some(local);
            let (core, stop) = (core.clone(), stop.clone());
            let peer = opts.peer;
            lock(&core).opts.peer_listen = Some(local.to_string());
            threads.push(std::thread::spawn(move || peer_loop(tcp, peer, core, stop)));
        }
        {
            let (core, stop, clients) = (core.clone(), stop.clone(), clients.clone());
            let path = socket.clone();
            threads.push(std::thread::spawn(move || {
                accept_loop(listener, core, stop, clients, path)
            }));
        }
        Ok(SimBoard {
            socket,
            peer_addr,
            core,
            stop,
            threads,
            clients,
        })
    }

    /// The socket it serves.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Where the modelled peer listens.
    pub fn peer_address(&self) -> Option<SocketAddr> {
        self.peer_addr
    }

    /// A client connection (the `sim:` backend).
    pub fn connect(&self) -> Result<SimMmio, MmioError> {
        SimMmio::connect(&self.socket.display().to_string())
    }

    /// Runs `f` on the board's state, between two requests.
    pub fn with_core<R>(&self, f: impl FnOnce(&mut SimCore) -> R) -> R {
        f(&mut lock(&self.core))
    }

    /// The flag that stops the board when set (e.g. from a signal handler).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// True once a client asked the board to shut down.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Blocks until a client asks the board to shut down, then stops it.
    pub fn wait(mut self) {
        while !self.stopped() {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        // Release pairs with the Acquire loads of the loops, which then see the flag after
        // the wake-up connections below.
        self.stop.store(true, Ordering::Release);
        let _ = UnixStream::connect(&self.socket);
        if let Some(a) = self.peer_addr {
            let _ = TcpStream::connect_timeout(&a, Duration::from_millis(200));
        }
        for (_, c) in lock_clients(&self.clients).drain() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Open client connections (to shut them down when the board stops), by connection number.
type Clients = std::collections::HashMap<u64, UnixStream>;

fn lock_clients(c: &Mutex<Clients>) -> std::sync::MutexGuard<'_, Clients> {
    c.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for SimBoard {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

fn accept_loop(
    listener: UnixListener,
    core: Arc<Mutex<SimCore>>,
    stop: Arc<AtomicBool>,
    clients: Arc<Mutex<Clients>>,
    path: PathBuf,
) {
    for (id, conn) in (0u64..).zip(listener.incoming()) {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = conn else { continue };
        if let Ok(c) = stream.try_clone() {
            lock_clients(&clients).insert(id, c);
        }
        let (core, stop, path, clients) =
            (core.clone(), stop.clone(), path.clone(), clients.clone());
        std::thread::spawn(move || {
            serve_client(stream, core, stop, path);
            // The connection is over: drop our clone of it (its descriptor) too.
            lock_clients(&clients).remove(&id);
        });
    }
}

fn serve_client(
    mut s: UnixStream,
    core: Arc<Mutex<SimCore>>,
    stop: Arc<AtomicBool>,
    path: PathBuf,
) {
    let mut buf = [0u8; p::REQUEST_BYTES];
    loop {
        if s.read_exact(&mut buf).is_err() {
            return;
        }
        let req = Request::decode(&buf);
        if req.op == op::SHUTDOWN {
            let _ = p::write_response(&mut s, Status::Ok, &[]);
            stop.store(true, Ordering::Release);
            // Wake the accept loop so that it sees the flag.
            let _ = UnixStream::connect(&path);
            return;
        }
        let (status, payload) = lock(&core).serve(req);
        if p::write_response(&mut s, status, &payload).is_err() {
            return;
        }
        let _ = s.flush();
    }
}

fn peer_loop(tcp: TcpListener, peer: ModelPeer, core: Arc<Mutex<SimCore>>, stop: Arc<AtomicBool>) {
    for conn in tcp.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(mut s) = conn else { continue };
        let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
        let hello = match oob::recv(&mut s, Duration::from_secs(5)) {
            Ok(h) => h,
            Err(e) => {
                log::warn!("sim-board peer: bad hello: {e}");
                continue;
            }
        };
        let answer = answer_hello(&peer, &hello);
        if answer.kind == HandshakeKind::Accept {
            lock(&core).accept_peer(&hello);
        } else {
            log::warn!("sim-board peer: refused a hello ({:?})", answer.reason);
        }
        let _ = oob::send(&mut s, &answer);
    }
}
