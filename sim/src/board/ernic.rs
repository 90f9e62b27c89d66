//! A register-level model of the ERNIC (a *model*: the IP cannot run here). It holds the
//! register file of `backline_board::ernic` (checked against AMD's PG332), checks every
//! write against the bring-up rules below, and reports what the configured queue pairs are,
//! so that the simulated board can wire them to the HWHS engine's Verilator model.
//!
//! A write that breaks a rule is refused (not applied) with the rule in words; a real ERNIC
//! would accept it and misbehave later (a QP that never sends, replies that land elsewhere,
//! timeouts that count at the wrong rate), which is exactly what a bring-up model should
//! turn into an early, named error.
//!
//! The rules (the guide's programming sections — "ERNIC Global Configuration", "Memory
//! Registration", "RC QP Creation", "Interrupts" — plus this firmware's conventions):
//! 1. Read-only registers (`ERRBUFWPTR`, `IPKTERRQWPTR`, `STAT*`, and `CQHEAD` unless
//!    `XRNICADCONF.sw_override`) are not written; offsets with no register answer a bus
//!    error, except the identification words (v4.x's `XRNIC_VERSION`, v3.x's reserved words
//!    of `V3_PROBES`, which read 0).
//! 2. Global registers change only while `XRNICCONF.enable` = 0; enabling needs the MAC
//!    (unicast), the IPv4 address, the error, incoming-packet-error, data and
//!    response-error buffers (64-byte aligned bases, non-zero counts and sizes), the
//!    response-error write-pointer address, `XRNICADCONF` with the `base_count_width` of
//!    the 200 MHz clock, and room for a data QP (`num_qps` ≥ 2). The ERNIC is disabled only
//!    after every data QP is.
//! 3. A memory-region entry changes only while no enabled QP uses its PD. By this
//!    firmware's convention entry `i` holds PD `i` (`PDPDNUM` = its index). A QP's region
//!    must have had every field written, a 4 KiB aligned physical base, a 64-byte aligned
//!    virtual address, an 8-bit key, a non-zero length that is a multiple of 64, and an
//!    access type of 0, 1 or 2.
//! 4. QP 1 is the management QP: no register of it is written.
//! 5. A QP's registers change only while `QPCONF.enable` = 0, and `QPCONF.enable` is written
//!    last: it needs every other QP register written since the QP was last disabled, the
//!    ERNIC enabled with `num_qps` covering the QP, a 32-byte aligned SQ and CQ base, a
//!    256-byte aligned RQ base, 4-byte aligned doorbell addresses, non-zero depths and RQ
//!    buffer size, a path MTU code ≤ 4, IPv4, doorbells over AXI (`hw_handshake_dis` = 1:
//!    the engine's ERNIC adapter writes `SQPI` with its AXI4-Lite master and takes the CQEs
//!    ERNIC writes into its memory), a remote QPN, MAC and IP, and a region for its PD that
//!    grants remote writes.
//! 6. When the peer's handshake is known ([`ErnicModel::set_peer`]) the QP must point at
//!    that peer (QPN, MAC, IP, its first PSN − 1 in `LSTRQREQ`), and what the board told the
//!    peer must hold (its PSN in `SQPSN`; its region key and ring inside the region). When
//!    the board's memory map is known ([`ErnicModel::set_reply_memory`]) the region must map
//!    the HWHS reply memory.
//! 7. `SQPI` is not written by the Arm: the engine's adapter owns the doorbell.
//!
//! The model holds either layout ([`Layout`]): the same rules at v3.x's or v4.x's offsets,
//! the QP count in `XRNICCONF.num_qps` (v3.x) or `XRNIC_CONF_QP_EN` (v4.x, then required
//! before the enable), and the identification word where the layout has it (v4.x's
//! `XRNIC_VERSION`, v3.x's reserved words; offsets where the layout has no register answer a
//! bus error, as an AXI slave answers DECERR).

use std::collections::HashMap;

use backline_board::ernic::{self, Layout, Loc, Reg, Unit, global as g, mr as m, qp as q};
use backline_board::{ErnicRegs, PeerInfo, Refusal, fmt_mac, mac_is_unicast};

/// What a successful write changed that the simulated board must act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing beyond the register.
    None,
    /// This QP was enabled.
    QpEnabled(u32),
    /// This QP was disabled (torn down).
    QpDisabled(u32),
}

/// A QP as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpView {
    /// QP number.
    pub qpn: u32,
    /// `QPCONF.enable`.
    pub enabled: bool,
    /// In the error state.
    pub fatal: bool,
    /// SQ base address.
    pub sq_base: u64,
    /// SQ depth in WQEs.
    pub sq_depth: u32,
    /// CQ base address.
    pub cq_base: u64,
    /// Where the IP writes the CQ head.
    pub cq_doorbell: u64,
    /// Protection domain.
    pub pd: u32,
    /// Remote QPN.
    pub dest_qpn: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct QpState {
    enabled: bool,
    fatal: bool,
    /// Bit i: `QP_REGS[i]` written since the QP was last disabled.
    written: u64,
}

/// QP registers that must be written before `QPCONF.enable`.
const QP_REQUIRED: &[Reg] = &[
    q::QPADVCONF,
    q::RQBA,
    q::RQBAMSB,
    q::SQBA,
    q::SQBAMSB,
    q::CQBA,
    q::CQBAMSB,
    q::RQWPTRDBADD,
    q::RQWPTRDBADDMSB,
    q::CQDBADD,
    q::CQDBADDMSB,
    q::QDEPTH,
    q::SQPSN,
    q::LSTRQREQ,
    q::DESTQPCONF,
    q::TIMEOUTCONF,
    q::MACDESADDLSB,
    q::MACDESADDMSB,
    q::IPDESADDR1,
    q::PD,
];

/// Global registers that must have been written before `XRNICCONF.enable`.
const GLOBAL_REQUIRED: &[Reg] = &[
    g::XRNICADCONF,
    g::MACXADDLSB,
    g::MACXADDMSB,
    g::IPV4XADD,
    g::ERRBUFBA,
    g::ERRBUFBAMSB,
    g::ERRBUFSZ,
    g::IPKTERRQBA,
    g::IPKTERRQBAMSB,
    g::IPKTERRQSZ,
    g::DATBUFBA,
    g::DATBUFBAMSB,
    g::DATBUFSZ,
    g::RESPERRPKTBA,
    g::RESPERRPKTBAMSB,
    g::RESPERRSZ,
    g::RESPERRBUFWPTR,
];

fn index_of(table: &[Reg], r: Reg) -> u32 {
    table.iter().position(|x| *x == r).unwrap() as u32
}

/// The register-level ERNIC model.
#[derive(Debug, Clone)]
pub struct ErnicModel {
    layout: Layout,
    regs: HashMap<u32, u32>,
    global_written: Vec<&'static str>,
    qps: Vec<QpState>,
    /// Bit i of entry e: `MR_REGS[i]` of entry e written.
    mrs: Vec<u64>,
    peer: Option<PeerInfo>,
    board: Option<PeerInfo>,
    reply_memory: Option<u64>,
    max_sq_depth: u32,
    ident: u32,
}

impl Default for ErnicModel {
    fn default() -> Self {
        ErnicModel::new(Layout::DEFAULT)
    }
}

impl ErnicModel {
    /// What a v4.x model's `XRNIC_VERSION` reads unless told otherwise: 4.0.0.
    pub const V4_VERSION: u32 = 0x0004_0000;

    /// A powered-up ERNIC of `layout`: every register 0 (a v4.x's version register
    /// [`ErnicModel::V4_VERSION`]).
    pub fn new(layout: Layout) -> ErnicModel {
        ErnicModel {
            layout,
            regs: HashMap::new(),
            global_written: Vec::new(),
            qps: vec![QpState::default(); layout.max_qpn() as usize + 1],
            mrs: vec![0; layout.mr_entries() as usize],
            peer: None,
            board: None,
            reply_memory: None,
            max_sq_depth: 1 << 15,
            ident: match layout {
                Layout::V3 => 0,
                Layout::V4 => ErnicModel::V4_VERSION,
            },
        }
    }

    /// The register layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Sets the word the layout is identified by: a v4.x's `XRNIC_VERSION`, or the first
    /// reserved word of a v3.x space (0 on a v3.x ERNIC; anything else rehearses the
    /// refusal of a window that holds something else).
    pub fn set_ident_word(&mut self, value: u32) {
        self.ident = value;
    }

    /// Checks QPs against the peer that answered the handshake and what the board announced
    /// (rule 6).
    pub fn set_peer(&mut self, peer: PeerInfo, board: PeerInfo) {
        self.peer = Some(peer);
        self.board = Some(board);
    }

    /// The peer and the board's hello, when a handshake happened.
    pub fn peer(&self) -> Option<(PeerInfo, PeerInfo)> {
        Some((self.peer?, self.board?))
    }

    /// Checks memory regions against the bus address of the HWHS reply memory (rule 6).
    pub fn set_reply_memory(&mut self, addr: u64) {
        self.reply_memory = Some(addr);
    }

    /// Refuses SQ depths above `max` (the simulated SQ memory's size).
    pub fn set_max_sq_depth(&mut self, max: u32) {
        self.max_sq_depth = max;
    }

    fn get(&self, offset: u32) -> u32 {
        self.regs
            .get(&offset)
            .copied()
            .unwrap_or(ernic::RESET_VALUE)
    }

    /// A global register's value.
    fn gv(&self, r: Reg) -> u32 {
        self.get(self.layout.g(r))
    }

    fn qreg(&self, qpn: u32, r: Reg) -> u32 {
        self.get(self.layout.qp_offset(qpn, r))
    }

    fn qreg64(&self, qpn: u32, lo: Reg, hi: Reg) -> u64 {
        u64::from(self.qreg(qpn, lo)) | u64::from(self.qreg(qpn, hi)) << 32
    }

    fn mreg(&self, index: u32, r: Reg) -> u32 {
        self.get(self.layout.mr_offset(index, r))
    }

    fn mreg64(&self, index: u32, lo: Reg, hi: Reg) -> u64 {
        u64::from(self.mreg(index, lo)) | u64::from(self.mreg(index, hi)) << 32
    }

    /// A region's length in bytes (48 bits: `WRRDBUFLEN` and `ACCESSDESC.len_msb`).
    fn mr_len(&self, index: u32) -> u64 {
        u64::from(self.mreg(index, m::WRRDBUFLEN))
            | u64::from(m::ACCESSDESC_LEN_MSB.get(self.mreg(index, m::ACCESSDESC))) << 32
    }

    fn enabled(&self) -> bool {
        g::XRNICCONF_ENABLE.get(self.gv(g::XRNICCONF)) == 1
    }

    /// The QP's configuration, for QPs 2 ..= 255.
    pub fn qp(&self, qpn: u32) -> Option<QpView> {
        if !(ernic::FIRST_DATA_QPN..=self.layout.max_qpn()).contains(&qpn) {
            return None;
        }
        let s = self.qps[qpn as usize];
        Some(QpView {
            qpn,
            enabled: s.enabled,
            fatal: s.fatal,
            sq_base: self.qreg64(qpn, q::SQBA, q::SQBAMSB),
            sq_depth: q::QDEPTH_SQ.get(self.qreg(qpn, q::QDEPTH)),
            cq_base: self.qreg64(qpn, q::CQBA, q::CQBAMSB),
            cq_doorbell: self.qreg64(qpn, q::CQDBADD, q::CQDBADDMSB),
            pd: q::PD_PD.get(self.qreg(qpn, q::PD)),
            dest_qpn: q::DESTQPCONF_QPN.get(self.qreg(qpn, q::DESTQPCONF)),
        })
    }

    /// QPs with `QPCONF.enable` set.
    pub fn enabled_qps(&self) -> Vec<u32> {
        (ernic::FIRST_DATA_QPN..=self.layout.max_qpn())
            .filter(|&n| self.qps[n as usize].enabled)
            .collect()
    }

    /// Puts an enabled QP into the error state (as a NAK or exhausted retries would).
    pub fn inject_fatal(&mut self, qpn: u32) -> Result<(), String> {
        match self.qp(qpn) {
            Some(v) if v.enabled => {
                self.qps[qpn as usize].fatal = true;
                let sts = self.gv(g::INTSTS) | g::INT_FATAL_ERR.bits(1);
                self.regs.insert(self.layout.g(g::INTSTS), sts);
                Ok(())
            }
            _ => Err(format!("QP {qpn} is not enabled: nothing to fail")),
        }
    }

    /// A register read.
    pub fn read(&mut self, offset: u32) -> Result<u32, Refusal> {
        match self.layout {
            Layout::V3 => {
                if let Some(i) = ernic::V3_PROBES.iter().position(|&p| p == offset) {
                    return Ok(if i == 0 { self.ident } else { 0 });
                }
            }
            Layout::V4 => {
                if offset == ernic::VERSION_OFFSET {
                    return Ok(self.ident);
                }
            }
        }
        let loc = self.layout.locate(offset).ok_or(Refusal::NoRegister)?;
        Ok(match (loc.unit, loc.reg.name) {
            (Unit::Qp(n), "STATQP") => {
                let s = self.qps[n as usize];
                // Idle: nothing to send, nothing outstanding.
                q::STATQP_FATAL.bits(u32::from(s.fatal))
                    | q::STATQP_SQ_EMPTY.bits(1)
                    | q::STATQP_OSQ_EMPTY.bits(1)
            }
            _ => self.get(offset),
        })
    }

    /// A register write, checked against the rules.
    pub fn write(&mut self, offset: u32, value: u32) -> Result<Effect, Refusal> {
        let loc = self.layout.locate(offset).ok_or(Refusal::NoRegister)?;
        let sw_override = g::XRNICADCONF_SW_OVERRIDE.get(self.gv(g::XRNICADCONF)) == 1;
        let overridable = loc.reg.name == "CQHEAD" && sw_override;
        if !loc.reg.access.writable() && !overridable {
            return Err(Refusal::ReadOnly(format!(
                "{loc} is read-only ({})",
                loc.reg.access.short()
            )));
        }
        let effect = match loc.unit {
            Unit::Global | Unit::Word(_) => self.write_global(loc, value)?,
            Unit::Mr(i) => self.write_mr(loc, i, value)?,
            Unit::Qp(n) => self.write_qp(loc, n, value)?,
        };
        if loc.reg != g::INTSTS {
            self.regs.insert(offset, value);
        }
        Ok(effect)
    }

    fn write_global(&mut self, loc: Loc, value: u32) -> Result<Effect, Refusal> {
        let r = loc.reg;
        let rule = |s: String| Err(Refusal::Rule(s));
        if r == g::INTSTS {
            // Write 1 to clear.
            let v = self.gv(r) & !value;
            self.regs.insert(self.layout.g(r), v);
            return Ok(Effect::None);
        }
        if r == g::INTEN || loc.unit != Unit::Global {
            // Interrupt enables and status banks: any time.
            return Ok(Effect::None);
        }
        if r == g::XRNICCONF {
            let on = g::XRNICCONF_ENABLE.get(value) == 1;
            if self.enabled() {
                if on {
                    return rule(format!(
                        "XRNICCONF = {value:#010x} while the ERNIC is enabled: write 0 first, \
                         then the global registers, then XRNICCONF"
                    ));
                }
                if let Some(&n) = self.enabled_qps().first() {
                    return rule(format!(
                        "XRNICCONF = {value:#010x} disables the ERNIC while QP {n} is enabled: \
                         tear down the QPs first (QPCONF = 0)"
                    ));
                }
            }
            if on {
                self.check_global_enable(value).map_err(Refusal::Rule)?;
            }
            return Ok(Effect::None);
        }
        if self.enabled() {
            return rule(format!(
                "{loc} = {value:#010x} while XRNICCONF.enable = 1: disable the ERNIC \
                 (XRNICCONF = 0) before changing its global configuration"
            ));
        }
        let is_base = [g::ERRBUFBA, g::IPKTERRQBA, g::DATBUFBA, g::RESPERRPKTBA].contains(&r);
        if is_base && !u64::from(value).is_multiple_of(ernic::BUFFER_BASE_ALIGN) {
            return rule(format!(
                "{loc} = {value:#010x}: buffer bases must be {}-byte aligned",
                ernic::BUFFER_BASE_ALIGN
            ));
        }
        let is_size = [g::ERRBUFSZ, g::DATBUFSZ, g::RESPERRSZ].contains(&r);
        if is_size && (g::BUFSZ_COUNT.get(value) == 0 || g::BUFSZ_BYTES.get(value) == 0) {
            return rule(format!(
                "{loc} = {value:#010x}: buffer count and size must be non-zero"
            ));
        }
        if r == g::IPKTERRQSZ && g::BUFSZ_COUNT.get(value) == 0 {
            return rule(format!("{loc} = {value:#010x}: the queue needs entries"));
        }
        if r == g::XRNICADCONF {
            let want = ernic::base_count_width(backline_regmap::CLOCK_MHZ);
            let got = g::XRNICADCONF_BASE_COUNT_WIDTH.get(value);
            if got != want {
                return rule(format!(
                    "XRNICADCONF.base_count_width = {got}, but the {} MHz clock needs {want} \
                     (ceil(log2(4.096 x MHz))): every ack timeout would count at the wrong rate",
                    backline_regmap::CLOCK_MHZ
                ));
            }
            if g::XRNICADCONF_SW_OVERRIDE.get(value) == 1 {
                return rule(format!(
                    "XRNICADCONF = {value:#010x} sets sw_override: the HWHS and the IP own the \
                     doorbells in normal operation"
                ));
            }
        }
        if !self.global_written.contains(&r.name) {
            self.global_written.push(r.name);
        }
        Ok(Effect::None)
    }

    fn check_global_enable(&self, value: u32) -> Result<(), String> {
        let (qps_reg, qps_field) = self.layout.num_qps();
        let missing: Vec<&str> = GLOBAL_REQUIRED
            .iter()
            .chain((qps_reg != g::XRNICCONF).then_some(&qps_reg))
            .filter(|x| !self.global_written.contains(&x.name))
            .map(|x| x.name)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "XRNICCONF.enable before {} {} written: the global registers come first",
                missing.join(", "),
                if missing.len() == 1 { "was" } else { "were" }
            ));
        }
        let mac = ernic::mac_from_regs(self.gv(g::MACXADDLSB), self.gv(g::MACXADDMSB));
        if !mac_is_unicast(mac) {
            return Err(format!(
                "XRNICCONF.enable with MACXADD {}: not a unicast address",
                fmt_mac(mac)
            ));
        }
        if self.gv(g::IPV4XADD) == 0 {
            return Err("XRNICCONF.enable with IPv4XADD = 0".into());
        }
        let nq = if qps_reg == g::XRNICCONF {
            qps_field.get(value)
        } else {
            qps_field.get(self.gv(qps_reg))
        };
        if nq < 2 {
            return Err(format!(
                "{}.{} = {nq}: QP 1 is management, so at least 2 are needed for a data QP",
                qps_reg.name, qps_field.name
            ));
        }
        Ok(())
    }

    fn pd_in_use(&self, index: u32) -> Option<u32> {
        self.enabled_qps()
            .into_iter()
            .find(|&n| self.qp(n).is_some_and(|v| v.pd == index))
    }

    fn write_mr(&mut self, loc: Loc, index: u32, value: u32) -> Result<Effect, Refusal> {
        let rule = |s: String| Err(Refusal::Rule(s));
        if let Some(n) = self.pd_in_use(index) {
            return rule(format!(
                "{loc} = {value:#010x} while enabled QP {n} uses PD {index}: tear down the QP \
                 first (QPCONF = 0)"
            ));
        }
        if loc.reg == m::BUFRKEY && value > 0xFF {
            return rule(format!("{loc} = {value:#x}: region keys are 8 bits"));
        }
        if loc.reg == m::PDPDNUM && value != index {
            return rule(format!(
                "{loc} = {value}: this firmware keeps PD i in entry i, so entry {index} holds \
                 PD {index}"
            ));
        }
        if loc.reg == m::ACCESSDESC && m::ACCESSDESC_ACCESS.get(value) > 2 {
            return rule(format!(
                "{loc} = {value:#x}: access type {} (0 read, 1 write, 2 read and write)",
                m::ACCESSDESC_ACCESS.get(value)
            ));
        }
        self.mrs[index as usize] |= 1 << index_of(m::MR_REGS, loc.reg);
        Ok(Effect::None)
    }

    /// Why the region of PD `pd` cannot back QP `qpn`, if it cannot.
    fn check_region(&self, qpn: u32, pd: u32) -> Result<(), String> {
        if pd >= self.layout.mr_entries() {
            return Err(format!(
                "PD[QP {qpn}] = {pd}: beyond the memory-region table"
            ));
        }
        let written = self.mrs[pd as usize];
        let missing: Vec<&str> = m::MR_REGS
            .iter()
            .enumerate()
            .filter(|(i, _)| written & (1 << i) == 0)
            .map(|(_, r)| r.name)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "QPCONF[QP {qpn}].enable, but PD {pd}'s memory region lacks {}: register the \
                 region first",
                missing.join(", ")
            ));
        }
        let phys = self.mreg64(pd, m::BUFBASEADDRLSB, m::BUFBASEADDRMSB);
        let va = self.mreg64(pd, m::VIRTADDRLSB, m::VIRTADDRMSB);
        let len = self.mr_len(pd);
        if !phys.is_multiple_of(ernic::MR_PHYS_ALIGN) {
            return Err(format!(
                "BUFBASEADDR[MR {pd}] = {phys:#x}: a region's physical base must be {} KiB \
                 aligned",
                ernic::MR_PHYS_ALIGN / 1024
            ));
        }
        if !va.is_multiple_of(ernic::MR_VA_ALIGN) {
            return Err(format!(
                "VIRTADDR[MR {pd}] = {va:#x}: a region's virtual address must be {}-byte \
                 aligned",
                ernic::MR_VA_ALIGN
            ));
        }
        if len == 0 || !len.is_multiple_of(64) {
            return Err(format!(
                "WRRDBUFLEN[MR {pd}] = {len}: a non-zero multiple of 64 bytes"
            ));
        }
        let access = m::ACCESSDESC_ACCESS.get(self.mreg(pd, m::ACCESSDESC));
        if access == m::access::READ {
            return Err(format!(
                "ACCESSDESC[MR {pd}].access = 0 (read only), but the peer writes its replies \
                 into the region: 1 (write) or 2 (read and write)"
            ));
        }
        if let Some(mem) = self.reply_memory
            && phys != mem
        {
            return Err(format!(
                "BUFBASEADDR[MR {pd}] = {phys:#x}, but the HWHS reply memory is at {mem:#x}: \
                 the peer's replies would land elsewhere"
            ));
        }
        Ok(())
    }

    fn write_qp(&mut self, loc: Loc, qpn: u32, value: u32) -> Result<Effect, Refusal> {
        let rule = |s: String| Err(Refusal::Rule(s));
        if qpn == ernic::MANAGEMENT_QPN {
            return rule(format!(
                "{loc}: QP 1 is the management QP (GSI), set up by the IP itself; data QPs \
                 start at 2"
            ));
        }
        let st = self.qps[qpn as usize];
        let r = loc.reg;
        if r == q::RQCI || r == q::CQHEAD {
            return Ok(Effect::None);
        }
        if r == q::SQPI {
            return rule(format!(
                "{loc} = {value}: the engine's ERNIC adapter writes this QP's doorbell with its \
                 AXI4-Lite master; the Arm must not (one producer index, two writers)"
            ));
        }
        if r != q::QPCONF {
            if st.enabled {
                return rule(format!(
                    "{loc} = {value:#010x} while QPCONF[QP {qpn}].enable = 1: QPCONF is \
                     written last, and a running QP is changed only after QPCONF = 0"
                ));
            }
            let align = match r.name {
                "SQBA" => ernic::SQ_BASE_ALIGN,
                "CQBA" => ernic::CQ_BASE_ALIGN,
                "RQBA" => ernic::RQ_BASE_ALIGN,
                "CQDBADD" | "RQWPTRDBADD" => ernic::DOORBELL_ALIGN,
                _ => 1,
            };
            if !u64::from(value).is_multiple_of(align) {
                return rule(format!("{loc} = {value:#010x} is not {align}-byte aligned"));
            }
            self.qps[qpn as usize].written |= 1 << index_of(q::QP_REGS, r);
            return Ok(Effect::None);
        }
        // QPCONF.
        let on = q::QPCONF_ENABLE.get(value) == 1;
        if !on {
            self.qps[qpn as usize] = QpState::default();
            return Ok(if st.enabled {
                Effect::QpDisabled(qpn)
            } else {
                Effect::None
            });
        }
        if st.enabled {
            return rule(format!(
                "{loc} = {value:#010x} while the QP is enabled: write QPCONF = 0 first"
            ));
        }
        self.check_enable(qpn, value).map_err(Refusal::Rule)?;
        self.qps[qpn as usize].enabled = true;
        Ok(Effect::QpEnabled(qpn))
    }

    fn check_enable(&self, qpn: u32, value: u32) -> Result<(), String> {
        let xc = self.gv(g::XRNICCONF);
        if g::XRNICCONF_ENABLE.get(xc) == 0 {
            return Err(format!(
                "QPCONF[QP {qpn}].enable while XRNICCONF.enable = 0: the global configuration \
                 comes first"
            ));
        }
        let (qps_reg, qps_field) = self.layout.num_qps();
        let nq = qps_field.get(self.gv(qps_reg));
        if qpn > nq {
            return Err(format!(
                "QP {qpn} is beyond {}.{} = {nq}",
                qps_reg.name, qps_field.name
            ));
        }
        let written = self.qps[qpn as usize].written;
        let missing: Vec<&str> = QP_REQUIRED
            .iter()
            .filter(|r| written & (1 << index_of(q::QP_REGS, **r)) == 0)
            .map(|r| r.name)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "QPCONF[QP {qpn}].enable before {} {} written: QPCONF is written last",
                missing.join(", "),
                if missing.len() == 1 { "was" } else { "were" }
            ));
        }
        let pmtu = q::QPCONF_PMTU.get(value);
        if pmtu as usize >= ernic::PMTU_BYTES.len() {
            return Err(format!(
                "QPCONF[QP {qpn}] = {value:#010x}: path MTU code {pmtu} (0 ..= 4)"
            ));
        }
        if q::QPCONF_IPV6.get(value) == 1 {
            return Err(format!(
                "QPCONF[QP {qpn}] = {value:#010x} selects IPv6; the board is set up for IPv4"
            ));
        }
        if q::QPCONF_HW_HANDSHAKE_DIS.get(value) == 0 {
            return Err(format!(
                "QPCONF[QP {qpn}] = {value:#010x} leaves hw_handshake_dis clear (doorbells over \
                 the sideband ports), but the engine's ERNIC adapter rings SQPI over AXI4-Lite \
                 and takes the CQEs from memory: set bit 4"
            ));
        }
        if q::QPCONF_RQ_BUF_SIZE.get(value) == 0 {
            return Err(format!(
                "QPCONF[QP {qpn}] = {value:#010x}: rq_buf_size 0 (the RQ buffer size in units \
                 of {} bytes)",
                ernic::RQ_BUF_UNIT
            ));
        }
        let depth = self.qreg(qpn, q::QDEPTH);
        let (sq, rq) = (q::QDEPTH_SQ.get(depth), q::QDEPTH_RQ.get(depth));
        if sq == 0 || rq == 0 {
            return Err(format!(
                "QDEPTH[QP {qpn}] = {depth:#010x}: SQ and RQ depths must be non-zero"
            ));
        }
        if sq > self.max_sq_depth {
            return Err(format!(
                "QDEPTH[QP {qpn}].sq = {sq}: the SQ memory holds {} WQEs",
                self.max_sq_depth
            ));
        }
        let dest = q::DESTQPCONF_QPN.get(self.qreg(qpn, q::DESTQPCONF));
        if dest == 0 {
            return Err(format!("DESTQPCONF[QP {qpn}] = 0: no remote QP"));
        }
        let dmac = ernic::mac_from_regs(
            self.qreg(qpn, q::MACDESADDLSB),
            self.qreg(qpn, q::MACDESADDMSB),
        );
        if !mac_is_unicast(dmac) {
            return Err(format!(
                "MACDESADD[QP {qpn}] = {}: not a unicast address",
                fmt_mac(dmac)
            ));
        }
        let dip = self.qreg(qpn, q::IPDESADDR1);
        if dip == 0 {
            return Err(format!("IPDESADDR1[QP {qpn}] = 0: no remote IP"));
        }
        let pd = q::PD_PD.get(self.qreg(qpn, q::PD));
        self.check_region(qpn, pd)?;
        if let Some(p) = self.peer {
            let lst = q::PSN.get(self.qreg(qpn, q::LSTRQREQ));
            let want_lst = p.psn.wrapping_sub(1) & 0xFF_FFFF;
            let checks = [
                (
                    "DESTQPCONF",
                    u64::from(dest),
                    u64::from(p.qpn),
                    "the peer's QPN",
                ),
                (
                    "IPDESADDR1",
                    u64::from(dip),
                    u64::from(u32::from(p.ip)),
                    "the peer's IP",
                ),
                (
                    "LSTRQREQ",
                    u64::from(lst),
                    u64::from(want_lst),
                    "the peer's first PSN - 1",
                ),
            ];
            for (name, got, want, what) in checks {
                if got != want {
                    return Err(format!(
                        "{name}[QP {qpn}] = {got:#x}, but {what} from the handshake is {want:#x}"
                    ));
                }
            }
            if dmac != p.mac {
                return Err(format!(
                    "MACDESADD[QP {qpn}] = {}, but the peer's MAC is {}",
                    fmt_mac(dmac),
                    fmt_mac(p.mac)
                ));
            }
        }
        self.check_board(qpn, pd)
    }

    /// Rule 6's second half: what the board told the peer holds for its data QP.
    fn check_board(&self, qpn: u32, pd: u32) -> Result<(), String> {
        if let Some(b) = self.board
            && b.qpn == qpn
        {
            let psn = q::PSN.get(self.qreg(qpn, q::SQPSN));
            if psn != b.psn & 0xFF_FFFF {
                return Err(format!(
                    "SQPSN[QP {qpn}] = {psn:#x}, but the board told the peer {:#x}",
                    b.psn
                ));
            }
            let key = self.mreg(pd, m::BUFRKEY);
            if key != b.rkey {
                return Err(format!(
                    "BUFRKEY[MR {pd}] = {key:#x}, but the board told the peer rkey {:#x}",
                    b.rkey
                ));
            }
            let va = self.mreg64(pd, m::VIRTADDRLSB, m::VIRTADDRMSB);
            let len = self.mr_len(pd);
            if b.ring_addr < va || b.ring_addr + b.ring_bytes() > va + len {
                return Err(format!(
                    "the reply ring the board told the peer ({:#x} + {} bytes) is outside MR \
                     {pd} ({va:#x} + {len} bytes)",
                    b.ring_addr,
                    b.ring_bytes()
                ));
            }
        }
        Ok(())
    }
}

impl ErnicRegs for ErnicModel {
    fn read(&mut self, offset: u32) -> Result<u32, Refusal> {
        ErnicModel::read(self, offset)
    }

    fn write(&mut self, offset: u32, value: u32) -> Result<(), Refusal> {
        ErnicModel::write(self, offset, value).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(r: Result<Effect, Refusal>) -> String {
        match r {
            Err(Refusal::Rule(s)) => s,
            other => panic!("expected a rule refusal, got {other:?}"),
        }
    }

    fn global_setup(mdl: &mut ErnicModel) {
        let l = mdl.layout();
        let adconf = g::XRNICADCONF_BASE_COUNT_WIDTH.bits(10);
        for (r, v) in [
            (g::XRNICADCONF, adconf),
            (g::MACXADDLSB, 0x0000_0002),
            (g::MACXADDMSB, 0x0000_0200),
            (g::IPV4XADD, 0x0A00_0002),
            (g::ERRBUFBA, 0x1000),
            (g::ERRBUFBAMSB, 0),
            (g::ERRBUFSZ, 0x0040_0010),
            (g::IPKTERRQBA, 0x1800),
            (g::IPKTERRQBAMSB, 0),
            (g::IPKTERRQSZ, 64),
            (g::DATBUFBA, 0x2000),
            (g::DATBUFBAMSB, 0),
            (g::DATBUFSZ, 0x1000_0004),
            (g::RESPERRPKTBA, 0x3000),
            (g::RESPERRPKTBAMSB, 0),
            (g::RESPERRSZ, 0x0040_0004),
            (g::RESPERRBUFWPTR, 0x3800),
        ] {
            mdl.write(l.g(r), v).unwrap();
        }
        let (qps_reg, qps_field) = l.num_qps();
        let mut conf = g::XRNICCONF_ENABLE.bits(1)
            | g::XRNICCONF_ERR_BUF_EN.bits(1)
            | l.udp_sport().bits(0x12B7);
        if qps_reg == g::XRNICCONF {
            conf |= qps_field.bits(4);
        } else {
            mdl.write(l.g(qps_reg), 4).unwrap();
        }
        mdl.write(l.g(g::XRNICCONF), conf).unwrap();
    }

    #[test]
    fn global_enable_needs_the_global_block_and_blocks_changes() {
        for l in Layout::ALL {
            let mut mdl = ErnicModel::new(l);
            let e = rule(mdl.write(l.g(g::XRNICCONF), 0x0401));
            assert!(e.contains("before XRNICADCONF, MACXADDLSB"), "{e}");
            assert_eq!(e.contains("XRNIC_CONF_QP_EN"), l == Layout::V4, "{e}");
            let e = rule(mdl.write(l.g(g::XRNICADCONF), 0));
            assert!(
                e.contains("base_count_width = 0, but the 200 MHz clock needs 10"),
                "{e}"
            );
            global_setup(&mut mdl);
            let e = rule(mdl.write(l.g(g::IPV4XADD), 1));
            assert!(e.contains("while XRNICCONF.enable = 1"), "{e}");
            assert_eq!(
                mdl.write(l.g(g::ERRBUFWPTR), 1),
                Err(Refusal::ReadOnly(
                    "ERRBUFWPTR is read-only (RO-pure)".into()
                ))
            );
            // The identification word; other unmapped offsets are bus errors.
            match l {
                Layout::V3 => {
                    assert_eq!(mdl.read(ernic::V3_PROBES[0]), Ok(0));
                    assert_eq!(mdl.read(ernic::VERSION_OFFSET), Err(Refusal::NoRegister));
                    mdl.set_ident_word(0x0004_0200);
                    assert_eq!(mdl.read(ernic::V3_PROBES[0]), Ok(0x0004_0200));
                }
                Layout::V4 => {
                    assert_eq!(mdl.read(ernic::VERSION_OFFSET), Ok(ErnicModel::V4_VERSION));
                    mdl.set_ident_word(0x0005_0000);
                    assert_eq!(mdl.read(ernic::VERSION_OFFSET), Ok(0x0005_0000));
                    // What v3.x probes read here is a memory-region word (0) or nothing.
                    assert_eq!(mdl.read(ernic::V3_PROBES[1]), Err(Refusal::NoRegister));
                }
            }
            assert_eq!(mdl.read(l.global_base() + 0xC0), Err(Refusal::NoRegister));
            mdl.write(l.g(g::XRNICCONF), 0).unwrap();
            let e = rule(mdl.write(l.g(g::DATBUFBA), 0x2010));
            assert!(e.contains("64-byte aligned"), "{e}");
            // INTSTS is write-1-to-clear.
            mdl.regs.insert(l.g(g::INTSTS), 0x81);
            mdl.write(l.g(g::INTSTS), 0x80).unwrap();
            assert_eq!(mdl.read(l.g(g::INTSTS)), Ok(1));
            // The status banks answer where the layout has them.
            assert_eq!(mdl.read(l.g_word(g::CQINTSTS, 7)), Ok(0));
        }
    }

    #[test]
    fn qp_one_is_never_configured_and_qpconf_goes_last() {
        for l in Layout::ALL {
            let mut mdl = ErnicModel::new(l);
            global_setup(&mut mdl);
            let e = rule(mdl.write(l.qp_offset(1, q::SQBA), 0x1000));
            assert!(e.contains("management QP"), "{e}");
            mdl.write(l.qp_offset(2, q::SQBA), 0x1000).unwrap();
            let e = rule(mdl.write(l.qp_offset(2, q::QPCONF), 1));
            assert!(e.contains("before QPADVCONF, RQBA"), "{e}");
            assert!(!e.contains("SQBA,"), "{e}");
            // PG332: the RQ base is 256-byte aligned, SQ and CQ 32-byte aligned.
            let e = rule(mdl.write(l.qp_offset(2, q::RQBA), 0x1080));
            assert!(e.contains("not 256-byte aligned"), "{e}");
            mdl.write(l.qp_offset(2, q::CQBA), 0x1020).unwrap();
            let e = rule(mdl.write(l.qp_offset(2, q::CQBA), 0x1010));
            assert!(e.contains("not 32-byte aligned"), "{e}");
            // The adapter owns the doorbell.
            let e = rule(mdl.write(l.qp_offset(2, q::SQPI), 1));
            assert!(e.contains("adapter writes this QP's doorbell"), "{e}");
            assert_eq!(mdl.qp(1), None);
            assert!(!mdl.qp(2).unwrap().enabled);
        }
    }

    #[test]
    fn regions_follow_the_access_codes_of_the_guide() {
        for l in Layout::ALL {
            let mut mdl = ErnicModel::new(l);
            let e = rule(mdl.write(l.mr_offset(1, m::ACCESSDESC), 6));
            assert!(e.contains("access type 6"), "{e}");
            let e = rule(mdl.write(l.mr_offset(1, m::PDPDNUM), 2));
            assert!(e.contains("entry 1 holds PD 1"), "{e}");
            let e = rule(mdl.write(l.mr_offset(1, m::BUFRKEY), 0x100));
            assert!(e.contains("8 bits"), "{e}");
        }
    }
}
