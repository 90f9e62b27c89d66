//! The simulated board (what `backline-apu sim-board` runs): the HWHS engine's generated RTL
//! under Verilator with the ERNIC data-path model of [`crate::model`], plus the
//! register-level ERNIC model of [`ernic`], serving both register spaces over a Unix socket
//! ([`protocol`]) and keeping their state between clients, as a real board keeps its state
//! between CLI calls. A modelled remote side answers the board's out-of-band handshake on
//! TCP; the requests of the rounds then go to the in-simulation responder or, with
//! [`SimBoardOptions::coprocessor`], through the [`crate::bridge`] to a real coprocessor.
//!
//! How the two ERNIC models meet: the register model validates the bring-up; when the HWHS
//! is started, the simulated board checks that the engine's QP, SQ base and depth, request
//! buffer and ring depth agree with the enabled QP, the board's memory map and the
//! handshake, and configures the data-path model from what was brought up and what the
//! remote side said in the handshake (its request ring and rkey). A WQE the engine posts
//! with a wrong rkey or address is then a data-path error of the model, as it would be a NAK
//! on the wire. A QP that is not enabled, or in the fatal state, delivers no replies: its
//! rounds time out.
//!
//! Time: the simulated clock advances only when a client asks (register accesses take their
//! AXI4-Lite handshake cycles, waits take their cycles); between requests it stands still.
//!
//! Memory map of the simulated board (bus addresses as the ERNIC sees them): the ERNIC
//! adapter's regions of `backline_regmap::pl`, as the block design assigns them (defaults of
//! [`MemoryMap`], and what `firmware/examples/sim-board.toml` uses):
//!
//! | what | address | size |
//! |------|--------:|-----:|
//! | HWHS request buffer (`WQE_LADDR`) | `0xA400_0000` | 32 B |
//! | HWHS reply memory (the memory region) | `0xA401_0000` | 4 KiB |
//! | SQ memory (`SQBA`, `SQ_BASE`) | `0xA402_0000` | 64 KiB |
//! | CQ memory (`CQBA`) | `0xA403_0000` | 32 KiB |
//! | CQ doorbell (`CQDBADD`) | `0xA403_F000` | 4 KiB |
//!
//! The engine's ERNIC adapter is not simulated here (the data-path model serves the
//! engine's ports directly; the adapter has its own testbench, `hdl/cocotb`), but a start
//! checks what it needs of the bring-up: the QP's CQ and CQ doorbell in its CQ windows, and
//! `DB_ADDR` naming the QP's `SQPI` at the layout's offset in ERNIC's register window.
//!
//! Stopping: [`SimBoard::stop_flag`] (set from a signal handler), a client's `shutdown`
//! request or dropping the [`SimBoard`] stops every thread — the listeners poll the flag, so
//! nothing depends on waking them with a connection — and removes the socket file.

pub mod ernic;
pub mod protocol;

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use backline_board::ernic::Layout;
use backline_board::{Access, Block, Op, PeerInfo, Refusal};
use backline_regmap as rm;
use backline_wire::oob;
use backline_wire::{Handshake, HandshakeKind, RejectReason};

use crate::bridge::{Bridge, BridgeConfig, BridgeError};
use crate::{HwhsSim, ModelConfig, Responder, SimError};
use ernic::ErnicModel;
use protocol::{self as p, BridgeStats, PortStats, Request, SimState, Status, op};

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
            request_buffer: rm::pl::REQUEST_BUFFER.base,
            reply_memory: rm::pl::REPLY_MEMORY.base,
            sq_memory: rm::pl::SQ_MEMORY.base,
        }
    }
}

/// Bytes of the simulated SQ memory.
pub const SQ_MEMORY_BYTES: u32 = crate::model::SQ_MEM_BYTES;

/// The remote side the simulated board's ERNIC talks to: what it answers the board's hello
/// with (its QP, PSN, address, MAC, request ring and key, 64 slots of 64 bytes).
pub const MODEL_PEER: PeerInfo = PeerInfo {
    qpn: 0x11,
    psn: 0x2000,
    ip: Ipv4Addr::new(10, 0, 0, 1),
    mac: [0x02, 0x00, 0x00, 0x00, 0x00, 0x01],
    rkey: 0x1234,
    ring_addr: 0x7F00_0000_0000,
    depth: rm::MAX_RING_DEPTH,
    slot_bytes: rm::SLOT_BYTES,
};

/// Settings of a simulated board.
#[derive(Debug, Clone, PartialEq)]
pub struct SimBoardOptions {
    /// The Unix socket to serve.
    pub socket: PathBuf,
    /// Where the modelled remote side listens for the handshake (`None`: nowhere).
    pub peer_listen: Option<String>,
    /// The modelled remote side.
    pub peer: PeerInfo,
    /// The in-simulation responder (ignored with a coprocessor).
    pub responder: Responder,
    /// A real coprocessor to bridge every request to, instead of the responder.
    pub coprocessor: Option<BridgeConfig>,
    /// One-way fabric latency, cycles.
    pub fabric_latency_cycles: u64,
    /// In-simulation responder service time, cycles.
    pub service_cycles: u64,
    /// Extra uniform delay per fabric leg, 0 ..= this many cycles.
    pub jitter_cycles: u64,
    /// Seed of the jitter.
    pub seed: u64,
    /// The ERNIC's register layout (v3.x or v4.x; default [`Layout::DEFAULT`]).
    pub layout: Layout,
    /// What the word the layout is identified by reads: a v4.x's `XRNIC_VERSION` (default
    /// 4.0.0), or the first reserved word of a v3.x space (default 0); anything else
    /// rehearses the firmware's refusal of a register space it does not know.
    pub ident_word: Option<u32>,
    /// The memory map.
    pub memory: MemoryMap,
}

impl SimBoardOptions {
    /// Defaults: the remote side's handshake on an ephemeral localhost port, echo responder,
    /// the reference's one-way fabric latency, 200 ns service, no jitter, the default
    /// memory map.
    pub fn new(socket: impl Into<PathBuf>) -> SimBoardOptions {
        SimBoardOptions {
            socket: socket.into(),
            peer_listen: Some("127.0.0.1:0".into()),
            peer: MODEL_PEER,
            responder: Responder::Echo,
            coprocessor: None,
            fabric_latency_cycles: rm::ns_to_cycles(crate::model::REFERENCE_ONE_WAY_NS),
            service_cycles: rm::ns_to_cycles(200),
            jitter_cycles: 0,
            seed: 1,
            layout: Layout::DEFAULT,
            ident_word: None,
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
    /// The bridge to the coprocessor could not be set up.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
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

/// Why a register access of the board failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// The bus answered an error (no register, a read-only register, outside the window,
    /// misaligned, an AXI error of the engine).
    #[error("{0}")]
    Bus(String),
    /// The ERNIC model refused the access: it breaks a bring-up rule.
    #[error("{0}")]
    Refused(String),
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
    hello: Option<PeerInfo>,
}

impl std::fmt::Debug for SimCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimCore")
            .field("cycle", &self.hwhs.cycle())
            .field("log", &self.log.len())
            .finish()
    }
}

fn check_offset(block: Block, offset: u32) -> Result<(), AccessError> {
    let len = block.window_bytes();
    if !offset.is_multiple_of(4) {
        return Err(AccessError::Bus(format!(
            "offset {offset:#x} is not 32-bit aligned"
        )));
    }
    if offset.checked_add(4).is_none_or(|end| end > len) {
        return Err(AccessError::Bus(format!(
            "offset {offset:#x} is outside the {len:#x}-byte window"
        )));
    }
    Ok(())
}

fn refusal(r: Refusal) -> AccessError {
    match r {
        Refusal::NoRegister => AccessError::Bus("SLVERR (no register there)".into()),
        Refusal::ReadOnly(s) => AccessError::Bus(format!("SLVERR ({s})")),
        Refusal::Rule(s) => AccessError::Refused(s),
    }
}

impl SimCore {
    /// A powered-up board (and, with a coprocessor, its bridge connected).
    pub fn new(opts: SimBoardOptions) -> Result<SimCore, SimBoardError> {
        let mut ernic = ErnicModel::new(opts.layout);
        ernic.set_reply_memory(opts.memory.reply_memory);
        ernic.set_max_sq_depth(SQ_MEMORY_BYTES / backline_board::ernic::wqe::BYTES);
        if let Some(w) = opts.ident_word {
            ernic.set_ident_word(w);
        }
        let mut shadow = vec![0u32; 1 << (rm::AXI_ADDR_BITS - 2)];
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
            hello: None,
        };
        let cfg = core.port_config();
        *core.hwhs.model_mut() = crate::ErnicModel::new(cfg);
        if let Some(b) = &core.opts.coprocessor {
            let bridge = Bridge::connect(b)?;
            core.hwhs.model_mut().attach_bridge(bridge);
        }
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

    /// The engine and its data-path model.
    pub fn hwhs(&self) -> &HwhsSim {
        &self.hwhs
    }

    fn record(&mut self, a: Access) {
        if self.log.len() < LOG_CAP {
            self.log.push(a);
        } else {
            self.log_dropped += 1;
        }
    }

    /// The data-path model's settings for what is configured now.
    fn port_config(&self) -> ModelConfig {
        let qp = self.ernic.qp(self.sh(rm::QP_NUM));
        let live = qp.is_some_and(|q| q.enabled && !q.fatal);
        let peer = self.ernic.peer().map(|(p, _)| p);
        let reply_len = self.sh(rm::RPL_LEN).clamp(1, rm::MAX_REPLY_BYTES);
        let o = &self.opts;
        ModelConfig {
            fabric_latency_cycles: o.fabric_latency_cycles,
            service_cycles: o.service_cycles,
            jitter_cycles: o.jitter_cycles,
            jitter_seed: o.seed,
            responder: if live { o.responder } else { Responder::Silent },
            reply_len,
            sq_base: self.sh(rm::SQ_BASE),
            sq_depth: self.sh(rm::SQ_DEPTH).max(1),
            request_buffer: o.memory.request_buffer,
            remote_va: peer.map_or(0, |p| p.ring_addr),
            rkey: peer.map_or(0, |p| p.rkey),
            ring_depth: match self.hello {
                Some(h) => h.depth,
                None => self.sh(rm::RING_DEPTH).clamp(1, rm::MAX_RING_DEPTH),
            },
            record_rounds: false,
            ..ModelConfig::default()
        }
    }

    /// Updates the data-path model's settings in place (its round state is kept).
    fn refresh_port(&mut self) {
        let cfg = self.port_config();
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
            || qp.sq_base + u64::from(depth) * u64::from(backline_board::ernic::wqe::BYTES)
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
        if let Some(why) = self.adapter_problem(n, qp.cq_base, qp.cq_doorbell) {
            return Some(why);
        }
        if let Some(h) = &self.hello {
            let rd = self.sh(rm::RING_DEPTH);
            if rd != h.depth {
                return Some(format!(
                    "RING_DEPTH = {rd}, but the rings agreed in the handshake have {} slots",
                    h.depth
                ));
            }
        }
        None
    }

    /// What the engine's ERNIC adapter needs of QP `n`'s bring-up and does not have: its
    /// completions in the adapter's CQ windows, and its doorbell at `DB_ADDR`.
    fn adapter_problem(&self, n: u32, cq_base: u64, cq_doorbell: u64) -> Option<String> {
        let (cq, db) = (rm::pl::CQ_MEMORY, rm::pl::CQ_DOORBELL);
        if !cq.contains(cq_base) {
            return Some(format!(
                "CQBA[QP {n}] = {cq_base:#x} is outside the ERNIC adapter's CQ memory ({:#x}, \
                 {} KiB): the engine would never see a completion",
                cq.base,
                cq.bytes / 1024
            ));
        }
        if !db.contains(cq_doorbell) {
            return Some(format!(
                "CQDBADD[QP {n}] = {cq_doorbell:#x} is outside the ERNIC adapter's CQ doorbell \
                 window ({:#x}, {} KiB)",
                db.base,
                db.bytes / 1024
            ));
        }
        let l = self.ernic.layout();
        let want =
            rm::pl::ERNIC_REGS.base + u64::from(l.qp_offset(n, backline_board::ernic::qp::SQPI));
        let got = u64::from(self.sh(rm::DB_ADDR));
        if got != want {
            return Some(format!(
                "DB_ADDR = {got:#x}, but SQPI[QP {n}] of this {} ERNIC is at {want:#x}: the \
                 adapter would ring another register",
                l.short()
            ));
        }
        None
    }

    /// A register read.
    pub fn read(&mut self, block: Block, offset: u32) -> Result<u32, AccessError> {
        check_offset(block, offset)?;
        match block {
            Block::Ernic => {
                let v = self.ernic.read(offset).map_err(refusal)?;
                self.record(Access {
                    op: Op::Read,
                    block,
                    offset,
                    value: v,
                });
                Ok(v)
            }
            Block::Hwhs => self
                .hwhs
                .axi_read(offset)
                .map_err(|e| AccessError::Bus(e.to_string())),
        }
    }

    /// `count` reads of one register.
    pub fn read_repeat(
        &mut self,
        block: Block,
        offset: u32,
        count: u64,
    ) -> Result<Vec<u32>, AccessError> {
        (0..count).map(|_| self.read(block, offset)).collect()
    }

    /// A register write.
    pub fn write(&mut self, block: Block, offset: u32, value: u32) -> Result<(), AccessError> {
        let r = self.write_inner(block, offset, value);
        if let Err(AccessError::Refused(reason)) = &r {
            self.violations.push(format!(
                "{block} write {} = {value:#010x}: {reason}",
                block.register_name(offset)
            ));
        }
        r
    }

    fn write_inner(&mut self, block: Block, offset: u32, value: u32) -> Result<(), AccessError> {
        check_offset(block, offset)?;
        match block {
            Block::Ernic => {
                self.ernic.write(offset, value).map_err(refusal)?;
                self.refresh_port();
            }
            Block::Hwhs => {
                let start = offset == rm::CTRL && rm::CTRL_START.get(value) == 1;
                if start {
                    if let Some(why) = self.start_problem() {
                        return Err(AccessError::Refused(why));
                    }
                    self.refresh_port();
                }
                self.hwhs
                    .axi_write(offset, value)
                    .map_err(|e| AccessError::Bus(e.to_string()))?;
                if rm::lookup(offset).is_some_and(|r| r.access.readable()) {
                    self.shadow[(offset / 4) as usize] = value;
                }
                if offset == rm::CTRL && rm::CTRL_SOFT_RESET.get(value) == 1 {
                    // The engine's round numbering restarts: so does the data-path model's
                    // (the bridge stays).
                    let cfg = self.port_config();
                    let fresh = self.hwhs.model_mut().renewed(cfg);
                    *self.hwhs.model_mut() = fresh;
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

    /// The modelled remote side accepted a hello from the board.
    fn accept_hello(&mut self, board: PeerInfo) {
        self.ernic.set_peer(self.opts.peer, board);
        self.handshakes += 1;
        self.hello = Some(board);
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
            ernic_layout: self.ernic.layout().describe().into(),
            peer_listen: self.opts.peer_listen.clone(),
            handshakes: self.handshakes,
            board_qpn: self.hello.map(|h| h.qpn),
            peer: self.hello.map(|_| self.opts.peer),
            responder: if self.opts.coprocessor.is_some() {
                "bridge".into()
            } else {
                self.opts.responder.name().into()
            },
            bridge: self.hwhs.model().bridge().map(|b| BridgeStats {
                coprocessor: b.addr().to_string(),
                relayed: b.relayed(),
                lost: b.lost(),
                first_loss: b.first_loss().map(str::to_string),
                mean_service_ns: b.mean_service_ns(),
            }),
            fabric_latency_cycles: self.opts.fabric_latency_cycles,
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

    /// Serves one request.
    fn serve(&mut self, req: Request) -> (Status, Vec<u8>) {
        let reg_err = |e: AccessError| -> (Status, Vec<u8>) {
            match e {
                AccessError::Refused(r) => (Status::Refused, r.into_bytes()),
                AccessError::Bus(d) => (Status::Bus, d.into_bytes()),
            }
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
            op::SPLITS => {
                let all = self.hwhs.model().splits();
                let from = (req.arg as usize).min(all.len());
                let to = (from + p::SPLIT_CHUNK).min(all.len());
                let mut v = Vec::with_capacity((to - from) * p::SPLIT_ENTRY_BYTES);
                for s in &all[from..to] {
                    v.extend(s.fabric_cycles.to_le_bytes());
                    v.extend(s.service_cycles.to_le_bytes());
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

/// Checks a hello against the modelled remote side; the answer to send, and the board's
/// announced identity when accepted.
fn answer_hello(peer: &PeerInfo, h: &Handshake) -> (Handshake, Option<PeerInfo>) {
    let geo = peer.geometry();
    if h.kind != HandshakeKind::Hello {
        return (Handshake::reject(RejectReason::Malformed, geo), None);
    }
    if h.geometry != geo {
        return (Handshake::reject(RejectReason::Geometry, geo), None);
    }
    if h.in_flight != 1 {
        return (Handshake::reject(RejectReason::Unsupported, geo), None);
    }
    match PeerInfo::from_record(h, None) {
        Ok(board) => (peer.record(HandshakeKind::Accept), Some(board)),
        Err(_) => (Handshake::reject(RejectReason::Malformed, geo), None),
    }
}

/// A running simulated board: its socket server and its modelled remote side, on threads of
/// this process. Dropping it stops both and removes the socket.
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

/// How often the listeners look at the stop flag.
const POLL: Duration = Duration::from_millis(20);

impl SimBoard {
    /// Starts a simulated board: binds the socket (replacing a stale one) and the remote
    /// side's listener, connects the bridge when there is one, and serves on background
    /// threads.
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
        listener
            .set_nonblocking(true)
            .map_err(io(format!("setting up {}", socket.display())))?;
        let stop = Arc::new(AtomicBool::new(false));
        let clients = Arc::new(Mutex::new(Clients::new()));
        let mut threads = Vec::new();
        let mut peer_addr = None;
        if let Some(addr) = &opts.peer_listen {
            let tcp =
                TcpListener::bind(addr).map_err(io(format!("binding the peer listener {addr}")))?;
            tcp.set_nonblocking(true)
                .map_err(io("peer listener".into()))?;
            let local = tcp.local_addr().map_err(io("peer listener".into()))?;
            peer_addr = Some(local);
            let (core, stop) = (core.clone(), stop.clone());
            let peer = opts.peer;
            lock(&core).opts.peer_listen = Some(local.to_string());
            let t = std::thread::Builder::new()
                .name("sim-board-peer".into())
                .spawn(move || peer_loop(tcp, peer, core, stop))
                .map_err(io("starting the peer listener's thread".into()))?;
            threads.push(t);
        }
        {
            let (core, stop2, clients) = (core.clone(), stop.clone(), clients.clone());
            let t = std::thread::Builder::new()
                .name("sim-board-accept".into())
                .spawn(move || accept_loop(listener, core, stop2, clients));
            match t {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Release: ends the peer thread started above; pairs with its Acquire.
                    stop.store(true, Ordering::Release);
                    return Err(io("starting the accept thread".into())(e));
                }
            }
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

    /// Where the modelled remote side listens.
    pub fn peer_address(&self) -> Option<SocketAddr> {
        self.peer_addr
    }

    /// Runs `f` on the board's state, between two requests.
    pub fn with_core<R>(&self, f: impl FnOnce(&mut SimCore) -> R) -> R {
        f(&mut lock(&self.core))
    }

    /// The flag that stops the board when set (e.g. from a signal handler).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// True once a client, a signal or the owner asked the board to stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Blocks until the board is asked to stop, then stops it.
    pub fn wait(mut self) {
        while !self.stopped() {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        // Release pairs with the Acquire loads of the loops, which poll the flag.
        self.stop.store(true, Ordering::Release);
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
) {
    let mut id = 0u64;
    while !stop.load(Ordering::Acquire) {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                std::thread::sleep(POLL);
                continue;
            }
            Err(e) => {
                log::warn!("sim-board: accept failed: {e}");
                std::thread::sleep(POLL);
                continue;
            }
        };
        if stream.set_nonblocking(false).is_err() {
            continue;
        }
        id += 1;
        if let Ok(c) = stream.try_clone() {
            lock_clients(&clients).insert(id, c);
        }
        let (core, stop, clients2) = (core.clone(), stop.clone(), clients.clone());
        let this = id;
        let t = std::thread::Builder::new()
            .name("sim-board-client".into())
            .spawn(move || {
                serve_client(stream, core, stop);
                // The connection is over: drop our clone of it (its descriptor) too.
                lock_clients(&clients2).remove(&this);
            });
        if let Err(e) = t {
            // No thread for this client: its connection is closed, the board serves on.
            log::warn!("sim-board: no thread for a client ({e}); its connection is closed");
            lock_clients(&clients).remove(&this);
        }
    }
}

fn serve_client(mut s: UnixStream, core: Arc<Mutex<SimCore>>, stop: Arc<AtomicBool>) {
    let mut buf = [0u8; p::REQUEST_BYTES];
    loop {
        if s.read_exact(&mut buf).is_err() {
            return;
        }
        let req = Request::decode(&buf);
        if req.op == op::SHUTDOWN {
            let _ = p::write_response(&mut s, Status::Ok, &[]);
            // Release pairs with the listeners' Acquire polls.
            stop.store(true, Ordering::Release);
            return;
        }
        let (status, payload) = lock(&core).serve(req);
        if p::write_response(&mut s, status, &payload).is_err() {
            return;
        }
        let _ = s.flush();
    }
}

fn peer_loop(tcp: TcpListener, peer: PeerInfo, core: Arc<Mutex<SimCore>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Acquire) {
        let mut s = match tcp.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                std::thread::sleep(POLL);
                continue;
            }
            Err(_) => {
                std::thread::sleep(POLL);
                continue;
            }
        };
        if s.set_nonblocking(false).is_err() {
            continue;
        }
        let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
        let hello = match oob::recv(&mut s, Duration::from_secs(5)) {
            Ok(h) => h,
            Err(e) => {
                log::warn!("sim-board peer: bad hello: {e}");
                continue;
            }
        };
        let (answer, board) = answer_hello(&peer, &hello);
        match board {
            Some(b) => lock(&core).accept_hello(b),
            None => log::warn!("sim-board peer: refused a hello ({:?})", answer.reason),
        }
        let _ = oob::send(&mut s, &answer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_are_checked_against_the_remote_side() {
        let board = PeerInfo {
            qpn: 2,
            psn: 0x100,
            ip: Ipv4Addr::new(10, 0, 0, 2),
            mac: [2, 0x0a, 0x35, 0, 0, 2],
            rkey: 0x21,
            ring_addr: 0xA401_0000,
            depth: 64,
            slot_bytes: 64,
        };
        let (a, b) = answer_hello(&MODEL_PEER, &board.record(HandshakeKind::Hello));
        assert_eq!(a.kind, HandshakeKind::Accept);
        assert_eq!(b, Some(board));
        assert_eq!(PeerInfo::from_record(&a, None).unwrap(), MODEL_PEER);
        let mut small = board;
        small.depth = 16;
        let (a, b) = answer_hello(&MODEL_PEER, &small.record(HandshakeKind::Hello));
        assert_eq!((a.reason, b), (Some(RejectReason::Geometry), None));
        let mut qp1 = board;
        qp1.qpn = 1;
        let (a, _) = answer_hello(&MODEL_PEER, &qp1.record(HandshakeKind::Hello));
        assert_eq!(a.reason, Some(RejectReason::Malformed));
    }
}
