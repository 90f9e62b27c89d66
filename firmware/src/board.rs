//! [`Board`]: the control plane's front door, one value per connected board (real or
//! simulated). The CLI is a thin layer over it, and a host program (the Python front's
//! `Controller(hardware="fpga")`) drives a board the same way:
//!
//! ```no_run
//! use backline_apu::{Board, Config, RunSpec, Mode};
//!
//! let mut board = Board::connect("sim:/tmp/board.sock")?; // identifies both blocks
//! board.setup(&Config::load("board.toml".as_ref())?)?; // handshake, bring-up
//! let rep = board.run(&RunSpec::b2b(Mode::HwLoop, 10_000), &mut |_, _| {})?;
//! let trace = board.read_trace()?;                     // backline bench's trace type
//! # Ok::<(), backline_apu::Error>(())
//! ```

use serde::Serialize;

use backline_bench::Trace;
use backline_regmap as rm;

use backline_board::ernic::{self, Layout, global as g, qp as q};
use backline_board::{PeerInfo, fmt_mac};

use crate::bringup::{self, Identity};
use crate::config::Config;
use crate::error::Error;
use crate::hwhs::{self, RoundOutcome, RunReport, RunSpec};
use crate::mmio::{BackendSpec, Block, Mmio};
use crate::peer;
use crate::regs::{rd, status_text, wait_idle, wr};

/// A connected board: both blocks have been identified ([`bringup::check_identity`]), and
/// every ERNIC access goes to the offsets of the layout found.
#[derive(Debug)]
pub struct Board<M: Mmio> {
    mmio: M,
    identity: Identity,
}

/// What `setup` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupReport {
    /// The peer's validated answer.
    pub peer: PeerInfo,
    /// Data QPs that were enabled before and were torn down first.
    pub torn_down: Vec<u32>,
    /// Register writes of the bring-up (tear-down included).
    pub writes: usize,
}

/// One data QP as `info` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QpInfo {
    /// QP number.
    pub qpn: u32,
    /// `QPCONF` raw.
    pub qpconf: u32,
    /// `STATQP` raw.
    pub statqp: u32,
    /// `QPCONF.enable`.
    pub enabled: bool,
    /// `STATQP.fatal`.
    pub fatal: bool,
    /// `DESTQPCONF.qpn`.
    pub dest_qpn: u32,
    /// `SQPSN`.
    pub sq_psn: u32,
    /// SQ base.
    pub sq_base: u64,
    /// `QDEPTH.sq`.
    pub sq_depth: u32,
}

/// The HWHS registers `info` shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HwhsInfo {
    /// `STATUS` raw.
    pub status: u32,
    /// `STATUS` decoded.
    pub status_text: String,
    /// `FLAGS`.
    pub flags: u32,
    /// `QP_NUM`.
    pub qp_num: u32,
    /// `ROUND_COUNT`.
    pub round_count: u32,
    /// `TIMEOUT_COUNT`.
    pub timeout_count: u32,
    /// `ERNIC_ERR_COUNT`.
    pub ernic_errors: u32,
    /// `MISMATCH_COUNT`.
    pub mismatch_count: u32,
    /// `LAST_RTT` in cycles.
    pub last_rtt_cycles: u32,
    /// `TRACE_COUNT`.
    pub trace_count: u32,
    /// `TRACE_STATUS` raw.
    pub trace_status: u32,
}

/// Identity and status registers (`backline-apu info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Info {
    /// The backend.
    pub backend: String,
    /// The ERNIC register space identification found ([`Layout::describe`]).
    pub ernic_layout: String,
    /// `v3.x` or `v4.x`.
    pub ernic_layout_short: String,
    /// How it was told: v4.x's `XRNIC_VERSION` and its value, or v3.x's reserved words.
    pub ernic_identified_by: String,
    /// v4.x's `XRNIC_VERSION` raw (`None` on v3.x, which has no version register).
    pub ernic_version: Option<u32>,
    /// HWHS `VERSION` raw.
    pub hwhs_version: u32,
    /// `XRNICCONF.enable`.
    pub ernic_enabled: bool,
    /// QPs in use: `XRNICCONF.num_qps` (v3.x) or `XRNIC_CONF_QP_EN` (v4.x).
    pub num_qps: u32,
    /// `XRNICCONF.udp_sport` (31:16 in v3.x, 23:8 in v4.x).
    pub udp_source_port: u32,
    /// Own MAC.
    pub mac: String,
    /// Own IPv4.
    pub ip: String,
    /// `INTSTS` raw.
    pub intsts: u32,
    /// Data QPs 2 ..= num_qps, while the ERNIC is enabled.
    pub qps: Vec<QpInfo>,
    /// The HWHS.
    pub hwhs: HwhsInfo,
}

impl Board<Box<dyn Mmio + Send>> {
    /// Parses a backend spec (`sim:PATH`, `uio:ERNIC,HWHS`, `devmem:…`, `file:…`), opens it
    /// and connects ([`Board::open`]).
    pub fn connect(spec: &str) -> Result<Self, Error> {
        let s = BackendSpec::parse(spec).map_err(Error::BackendSpec)?;
        let mmio = s.open().map_err(|source| Error::Backend {
            spec: s.to_string(),
            source,
        })?;
        Board::open(mmio)
    }
}

impl<M: Mmio> Board<M> {
    /// Connects: checks the ERNIC's reserved words and the HWHS `VERSION` and refuses an
    /// unknown layout before anything is written.
    pub fn open(mut mmio: M) -> Result<Board<M>, Error> {
        let identity = bringup::check_identity(&mut mmio)?;
        log::info!("ERNIC: {}", identity.describe());
        Ok(Board { mmio, identity })
    }

    /// What identification found.
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// The ERNIC's register layout.
    pub fn layout(&self) -> Layout {
        self.identity.layout
    }

    /// The register backend.
    pub fn mmio(&mut self) -> &mut M {
        &mut self.mmio
    }

    /// Gives the backend back.
    pub fn into_inner(self) -> M {
        self.mmio
    }

    /// `source` label of traces: `sim-board` or `board`.
    fn source(&self) -> &'static str {
        if self.mmio.is_simulated() {
            "sim-board"
        } else {
            "board"
        }
    }

    /// Versions, the ERNIC's global state, each data QP, the HWHS status and counters.
    pub fn info(&mut self) -> Result<Info, Error> {
        let (l, id) = (self.identity.layout, self.identity);
        let m = &mut self.mmio;
        let xc = rd(m, Block::Ernic, l.g(g::XRNICCONF))?;
        let (qps_reg, qps_field) = l.num_qps();
        let num_qps = qps_field.get(rd(m, Block::Ernic, l.g(qps_reg))?);
        let mac = ernic::mac_from_regs(
            rd(m, Block::Ernic, l.g(g::MACXADDLSB))?,
            rd(m, Block::Ernic, l.g(g::MACXADDMSB))?,
        );
        let ip = std::net::Ipv4Addr::from(rd(m, Block::Ernic, l.g(g::IPV4XADD))?);
        // The data QPs of an enabled ERNIC (a v4.x keeps its QP count in XRNIC_CONF_QP_EN
        // across the tear-down, which only disables the ERNIC).
        let listed = if g::XRNICCONF_ENABLE.get(xc) == 1 {
            num_qps
        } else {
            0
        };
        let mut qps = Vec::new();
        for n in ernic::FIRST_DATA_QPN..=listed.min(ernic::MAX_QPN) {
            let r = |m: &mut M, reg| rd(m, Block::Ernic, l.qp_offset(n, reg));
            let qpconf = r(m, q::QPCONF)?;
            let statqp = r(m, q::STATQP)?;
            qps.push(QpInfo {
                qpn: n,
                qpconf,
                statqp,
                enabled: q::QPCONF_ENABLE.get(qpconf) == 1,
                fatal: q::STATQP_FATAL.get(statqp) == 1,
                dest_qpn: q::DESTQPCONF_QPN.get(r(m, q::DESTQPCONF)?),
                sq_psn: q::PSN.get(r(m, q::SQPSN)?),
                sq_base: u64::from(r(m, q::SQBA)?) | u64::from(r(m, q::SQBAMSB)?) << 32,
                sq_depth: q::QDEPTH_SQ.get(r(m, q::QDEPTH)?),
            });
        }
        let h = |m: &mut M, off| rd(m, Block::Hwhs, off);
        let status = h(m, rm::STATUS)?;
        let hwhs = HwhsInfo {
            status,
            status_text: status_text(status),
            flags: h(m, rm::FLAGS)?,
            qp_num: h(m, rm::QP_NUM)?,
            round_count: h(m, rm::ROUND_COUNT)?,
            timeout_count: h(m, rm::TIMEOUT_COUNT)?,
            ernic_errors: h(m, rm::ERNIC_ERR_COUNT)?,
            mismatch_count: h(m, rm::MISMATCH_COUNT)?,
            last_rtt_cycles: h(m, rm::LAST_RTT)?,
            trace_count: h(m, rm::TRACE_COUNT)?,
            trace_status: h(m, rm::TRACE_STATUS)?,
        };
        Ok(Info {
            backend: m.describe(),
            ernic_layout: l.describe().into(),
            ernic_layout_short: l.short().into(),
            ernic_identified_by: match id.version {
                Some(v) => format!(
                    "XRNIC_VERSION ({:#x}) = {v:#010x}, version {}",
                    ernic::VERSION_OFFSET,
                    ernic::version_text(v)
                ),
                None => format!(
                    "no XRNIC_VERSION; reserved words {} read 0",
                    ernic::V3_PROBES.map(|p| format!("{p:#x}")).join(", ")
                ),
            },
            ernic_version: id.version,
            hwhs_version: rd(m, Block::Hwhs, rm::VERSION)?,
            ernic_enabled: g::XRNICCONF_ENABLE.get(xc) == 1,
            num_qps,
            udp_source_port: l.udp_sport().get(xc),
            mac: fmt_mac(mac),
            ip: ip.to_string(),
            intsts: rd(m, Block::Ernic, l.g(g::INTSTS))?,
            qps,
            hwhs,
        })
    }

    /// The whole bring-up: validate the config, hand-shake with the peer, then tear down
    /// whatever runs and bring up global config, memory region, data QP and HWHS in the
    /// documented order. Nothing is written unless the config and the peer's answer are
    /// valid.
    pub fn setup(&mut self, cfg: &Config) -> Result<SetupReport, Error> {
        cfg.validate()?;
        let peer = peer::exchange(cfg)?;
        self.setup_with_peer(cfg, &peer)
    }

    /// The bring-up with a peer answer obtained elsewhere (already validated with
    /// [`peer::check_answer`]).
    pub fn setup_with_peer(&mut self, cfg: &Config, peer: &PeerInfo) -> Result<SetupReport, Error> {
        cfg.validate()?;
        let l = self.identity.layout;
        let torn_down = bringup::teardown(&mut self.mmio, l)?;
        bringup::bring_up(&mut self.mmio, cfg, peer, l)?;
        let n = cfg.qp.number;
        // PG332 has no "QP active" status bit: the QP is up when QPCONF reads back enabled
        // and STATQP is not fatal.
        let qpconf = rd(&mut self.mmio, Block::Ernic, l.qp_offset(n, q::QPCONF))?;
        if q::QPCONF_ENABLE.get(qpconf) != 1 {
            return Err(Error::State {
                register: format!("QPCONF[QP {n}]"),
                value: qpconf,
                reason: "QPCONF.enable did not read back as set after the bring-up".into(),
            });
        }
        let statqp = rd(&mut self.mmio, Block::Ernic, l.qp_offset(n, q::STATQP))?;
        if q::STATQP_FATAL.get(statqp) == 1 {
            return Err(Error::QpFatal { qpn: n, statqp });
        }
        wait_idle(&mut self.mmio, "after the bring-up's soft reset")?;
        let s = rd(&mut self.mmio, Block::Hwhs, rm::STATUS)?;
        if rm::STATUS_AXI_ERR.get(s) == 1 {
            return Err(Error::State {
                register: "STATUS".into(),
                value: s,
                reason: "the HWHS reports an AXI error during configuration".into(),
            });
        }
        let writes = bringup::global_writes(cfg, l).len()
            + bringup::region_writes(cfg, l).len()
            + bringup::qp_writes(cfg, peer, l).len()
            + bringup::hwhs_writes(cfg, peer, l).len()
            + torn_down.len()
            + 1;
        log::info!(
            "QP {n} up: peer QP {:#x} at {} ({}), {} writes",
            peer.qpn,
            peer.ip,
            fmt_mac(peer.mac),
            writes
        );
        Ok(SetupReport {
            peer: *peer,
            torn_down,
            writes,
        })
    }

    /// The data QP the HWHS posts to, checked to be enabled and not fatal.
    pub fn check_qp(&mut self) -> Result<u32, Error> {
        let l = self.identity.layout;
        let m = &mut self.mmio;
        let n = rd(m, Block::Hwhs, rm::QP_NUM)?;
        if !(ernic::FIRST_DATA_QPN..=ernic::MAX_QPN).contains(&n) {
            return Err(Error::State {
                register: "QP_NUM".into(),
                value: n,
                reason: "not a data QP: run `backline-apu setup --config FILE` first".into(),
            });
        }
        let qpconf = rd(m, Block::Ernic, l.qp_offset(n, q::QPCONF))?;
        if q::QPCONF_ENABLE.get(qpconf) == 0 {
            return Err(Error::State {
                register: format!("QPCONF[QP {n}]"),
                value: qpconf,
                reason: format!(
                    "QP {n}, which the HWHS posts to, is not enabled: run `backline-apu setup \
                     --config FILE` first"
                ),
            });
        }
        let statqp = rd(m, Block::Ernic, l.qp_offset(n, q::STATQP))?;
        if q::STATQP_FATAL.get(statqp) == 1 {
            return Err(Error::QpFatal { qpn: n, statqp });
        }
        Ok(n)
    }

    /// A run: check the QP, prepare the engine, run, report. A run whose rounds timed out
    /// because the QP went fatal on the way returns [`Error::QpFatal`].
    pub fn run(
        &mut self,
        spec: &RunSpec,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<RunReport, Error> {
        spec.validate()?;
        self.check_qp()?;
        hwhs::prepare(&mut self.mmio, spec)?;
        let rep = hwhs::run(&mut self.mmio, spec, progress)?;
        if rep.timeouts > 0 {
            self.check_qp()?;
        }
        Ok(rep)
    }

    /// Reads the trace RAM as a `backline bench` trace.
    pub fn read_trace(&mut self) -> Result<Trace, Error> {
        let src = self.source();
        hwhs::read_trace(&mut self.mmio, src)
    }

    /// Prepares single rounds with caller payloads ([`Board::round`]).
    pub fn begin_rounds(&mut self) -> Result<(), Error> {
        self.check_qp()?;
        hwhs::begin_rounds(&mut self.mmio)
    }

    /// One round carrying `payload` (1 ..= 16 bytes) to decoder `decoder_id`; returns the
    /// reply (bytes 0..3 and its length), its status and the RTT.
    pub fn round(&mut self, payload: &[u8], decoder_id: u32) -> Result<RoundOutcome, Error> {
        hwhs::round(&mut self.mmio, payload, decoder_id)
    }

    /// Stops a hw-loop run.
    pub fn abort(&mut self) -> Result<(), Error> {
        hwhs::abort(&mut self.mmio)
    }

    /// Back to an idle board: stop the HWHS, tear down every data QP, disable the ERNIC,
    /// soft-reset the HWHS (counters and trace cleared). Returns the QPs torn down.
    pub fn reset(&mut self) -> Result<Vec<u32>, Error> {
        let qps = bringup::teardown(&mut self.mmio, self.identity.layout)?;
        wr(
            &mut self.mmio,
            Block::Hwhs,
            rm::CTRL,
            rm::CTRL_SOFT_RESET.bits(1),
        )?;
        wait_idle(&mut self.mmio, "after CTRL.soft_reset")?;
        Ok(qps)
    }

    /// Recovery after a fatal QP error: tear down and bring up again with a fresh handshake
    /// (the peer's QP has failed too and must be re-created on its side).
    pub fn recover(&mut self, cfg: &Config) -> Result<SetupReport, Error> {
        self.setup(cfg)
    }
}
