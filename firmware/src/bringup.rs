//! The ERNIC and HWHS bring-up, as code: each step is a pure function from the validated
//! config (and the peer's validated answer) to a list of register writes, so everything that
//! can be wrong is found before the first write, and the order is data that tests compare
//! with the documented order ([`DOCUMENTED_ORDER`], `docs/firmware.md`) and with what the
//! simulated board recorded.
//!
//! The order (on a board where nothing runs yet; `setup` first tears down whatever does):
//!
//! 1. **Tear-down** — stop a running hw-loop run (`CTRL.abort`), disable every enabled data
//!    QP (`QPCONF` = 0), disable the ERNIC (`XRNICCONF` = 0).
//! 2. **Global** (PG332 "ERNIC Global Configuration") — own MAC and IPv4 address, the error
//!    buffers, the incoming-packet error status queue, the data buffers, the response-error
//!    buffers and their write-pointer address, interrupt enables, advanced config (the
//!    timeout counter width of the 200 MHz clock), on a v4.x ERNIC the QP count
//!    (`XRNIC_CONF_QP_EN`), and `XRNICCONF` (enable, error buffers, on v3.x the QP count,
//!    UDP port) last.
//! 3. **Memory region** (PG332 "Memory Registration") — PD, virtual address, physical base,
//!    key and length, then `ACCESSDESC` (write access and the length's high bits).
//! 4. **Data QP** (≥ 2; PG332 "RC QP Creation") — advanced config, RQ/SQ/CQ bases, doorbell
//!    write-back addresses, depths, PSNs (ours; the peer's first PSN − 1 with a
//!    message-ending opcode), destination QPN, timeouts, destination MAC and IP, PD, and
//!    `QPCONF` (enable, CQE write, PMTU, RQ buffer size; doorbells over AXI, which the
//!    engine's ERNIC adapter speaks) last.
//! 5. *barrier* — the ERNIC and the HWHS are different devices.
//! 6. **HWHS** — soft reset, then QP, payload and reply lengths, decoder id, SQ base and
//!    depth (the QP's), the doorbell's address (the QP's `SQPI`, for the adapter), ring
//!    depth, reply timeout, the WQE fields (WRITE, the peer's rkey and request ring, the
//!    request buffer), trace enable and the flags.
//!
//! Pacer, round count and reference memory are written by each run ([`crate::hwhs`]).
//!
//! Every ERNIC offset comes from the layout identification found ([`check_identity`]):
//! the same steps write the same registers at v3.x's or v4.x's offsets.

use backline_board::ernic::{self, Layout, global as g, mr as m, qp as q};
use backline_board::{Access, Block, PeerInfo};
use backline_regmap as rm;

use crate::config::Config;
use crate::error::Error;
use crate::mmio::{Mmio, MmioError};
use crate::regs::{apply, rd, wait_idle, wr};

/// The register writes of a fresh `setup`, in order, as `(block, register name)`, for an
/// ERNIC of `layout`: the documented order (`docs/firmware.md` lists the same names in the
/// same order, v4.x's extra write among them).
pub fn documented_order(layout: Layout) -> Vec<(Block, &'static str)> {
    DOCUMENTED_ORDER
        .iter()
        .filter(|(b, n)| {
            *b == Block::Hwhs
                || g::GLOBAL_REGS
                    .iter()
                    .find(|r| r.name == *n)
                    .is_none_or(|r| layout.has(*r))
        })
        .copied()
        .collect()
}

/// The documented order of both layouts: the writes of [`documented_order`], the v4.x-only
/// `XRNIC_CONF_QP_EN` among them (a v3.x bring-up leaves it out).
pub const DOCUMENTED_ORDER: &[(Block, &str)] = &[
    // 1. tear-down (on a fresh board only the ERNIC disable)
    (Block::Ernic, "XRNICCONF"),
    // 2. global
    (Block::Ernic, "MACXADDLSB"),
    (Block::Ernic, "MACXADDMSB"),
    (Block::Ernic, "IPv4XADD"),
    (Block::Ernic, "ERRBUFBA"),
    (Block::Ernic, "ERRBUFBAMSB"),
    (Block::Ernic, "ERRBUFSZ"),
    (Block::Ernic, "IPKTERRQBA"),
    (Block::Ernic, "IPKTERRQBAMSB"),
    (Block::Ernic, "IPKTERRQSZ"),
    (Block::Ernic, "DATBUFBA"),
    (Block::Ernic, "DATBUFBAMSB"),
    (Block::Ernic, "DATBUFSZ"),
    (Block::Ernic, "RESPERRPKTBA"),
    (Block::Ernic, "RESPERRPKTBAMSB"),
    (Block::Ernic, "RESPERRSZ"),
    (Block::Ernic, "RESPERRBUFWPTR"),
    (Block::Ernic, "INTEN"),
    (Block::Ernic, "XRNICADCONF"),
    (Block::Ernic, "XRNIC_CONF_QP_EN"),
    (Block::Ernic, "XRNICCONF"),
    // 3. memory region
    (Block::Ernic, "PDPDNUM"),
    (Block::Ernic, "VIRTADDRLSB"),
    (Block::Ernic, "VIRTADDRMSB"),
    (Block::Ernic, "BUFBASEADDRLSB"),
    (Block::Ernic, "BUFBASEADDRMSB"),
    (Block::Ernic, "BUFRKEY"),
    (Block::Ernic, "WRRDBUFLEN"),
    (Block::Ernic, "ACCESSDESC"),
    // 4. data QP
    (Block::Ernic, "QPADVCONF"),
    (Block::Ernic, "RQBA"),
    (Block::Ernic, "RQBAMSB"),
    (Block::Ernic, "SQBA"),
    (Block::Ernic, "SQBAMSB"),
    (Block::Ernic, "CQBA"),
    (Block::Ernic, "CQBAMSB"),
    (Block::Ernic, "RQWPTRDBADD"),
    (Block::Ernic, "RQWPTRDBADDMSB"),
    (Block::Ernic, "CQDBADD"),
    (Block::Ernic, "CQDBADDMSB"),
    (Block::Ernic, "QDEPTH"),
    (Block::Ernic, "SQPSN"),
    (Block::Ernic, "LSTRQREQ"),
    (Block::Ernic, "DESTQPCONF"),
    (Block::Ernic, "TIMEOUTCONF"),
    (Block::Ernic, "MACDESADDLSB"),
    (Block::Ernic, "MACDESADDMSB"),
    (Block::Ernic, "IPDESADDR1"),
    (Block::Ernic, "PD"),
    (Block::Ernic, "QPCONF"),
    // 6. HWHS
    (Block::Hwhs, "CTRL"),
    (Block::Hwhs, "QP_NUM"),
    (Block::Hwhs, "PAY_LEN"),
    (Block::Hwhs, "RPL_LEN"),
    (Block::Hwhs, "DECODER_ID"),
    (Block::Hwhs, "SQ_BASE"),
    (Block::Hwhs, "SQ_DEPTH"),
    (Block::Hwhs, "DB_ADDR"),
    (Block::Hwhs, "RING_DEPTH"),
    (Block::Hwhs, "TIMEOUT"),
    (Block::Hwhs, "WQE_OPCODE"),
    (Block::Hwhs, "WQE_RKEY"),
    (Block::Hwhs, "WQE_RVA_LO"),
    (Block::Hwhs, "WQE_RVA_HI"),
    (Block::Hwhs, "WQE_LADDR_LO"),
    (Block::Hwhs, "WQE_LADDR_HI"),
    (Block::Hwhs, "TRACE_CTRL"),
    (Block::Hwhs, "FLAGS"),
];

/// The register's name without its instance (`QPCONF[QP 2]` → `QPCONF`).
pub fn plain_name(a: &Access) -> String {
    a.plain_name()
}

/// TTL of outgoing packets.
pub const TTL: u32 = 64;
/// The default partition key.
pub const PKEY: u32 = 0xFFFF;
/// The opcode a fresh QP's `LSTRQREQ` holds: InfiniBand's RC "RDMA WRITE Only" (0x0A), a
/// request that ends a message, so that the peer's first request is in sequence (an opcode
/// of 0, "SEND First", would make a following WRITE an opcode-sequence error; AMD's RecoNIC
/// writes the same value).
pub const FRESH_LAST_OPCODE: u32 = 0x0A;

fn e(l: Layout, r: ernic::Reg, v: u32) -> Access {
    Access::write(Block::Ernic, l.g(r), v)
}

fn eq(l: Layout, qpn: u32, r: ernic::Reg, v: u32) -> Access {
    Access::write(Block::Ernic, l.qp_offset(qpn, r), v)
}

fn em(l: Layout, i: u32, r: ernic::Reg, v: u32) -> Access {
    Access::write(Block::Ernic, l.mr_offset(i, r), v)
}

fn h(off: u32, v: u32) -> Access {
    Access::write(Block::Hwhs, off, v)
}

const fn lo(v: u64) -> u32 {
    v as u32
}

const fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

/// Step 2: the global block, `XRNICCONF` last.
pub fn global_writes(cfg: &Config, l: Layout) -> Vec<Access> {
    let c = &cfg.ernic;
    let (mac_lsb, mac_msb) = ernic::mac_regs(c.mac.0);
    let sz = |count: u32, bytes: u32| g::BUFSZ_COUNT.bits(count) | g::BUFSZ_BYTES.bits(bytes);
    let mut w = vec![
        e(l, g::MACXADDLSB, mac_lsb),
        e(l, g::MACXADDMSB, mac_msb),
        e(l, g::IPV4XADD, u32::from(c.ip)),
        e(l, g::ERRBUFBA, lo(c.error_buffer_base)),
        e(l, g::ERRBUFBAMSB, hi(c.error_buffer_base)),
        e(
            l,
            g::ERRBUFSZ,
            sz(c.error_buffer_count, c.error_buffer_bytes),
        ),
        e(l, g::IPKTERRQBA, lo(c.incoming_error_queue_base)),
        e(l, g::IPKTERRQBAMSB, hi(c.incoming_error_queue_base)),
        e(
            l,
            g::IPKTERRQSZ,
            g::BUFSZ_COUNT.bits(c.incoming_error_queue_entries),
        ),
        e(l, g::DATBUFBA, lo(c.data_buffer_base)),
        e(l, g::DATBUFBAMSB, hi(c.data_buffer_base)),
        e(l, g::DATBUFSZ, sz(c.data_buffer_count, c.data_buffer_bytes)),
        e(l, g::RESPERRPKTBA, lo(c.resp_error_buffer_base)),
        e(l, g::RESPERRPKTBAMSB, hi(c.resp_error_buffer_base)),
        e(
            l,
            g::RESPERRSZ,
            sz(c.resp_error_buffer_count, c.resp_error_buffer_bytes),
        ),
        e(l, g::RESPERRBUFWPTR, lo(c.resp_error_write_pointer)),
        // Interrupts for what the Arm acts on: packets failing validation, fatal QPs.
        e(
            l,
            g::INTEN,
            g::INT_PKT_VALID_ERR.bits(1) | g::INT_FATAL_ERR.bits(1),
        ),
        e(
            l,
            g::XRNICADCONF,
            g::XRNICADCONF_BASE_COUNT_WIDTH.bits(ernic::base_count_width(rm::CLOCK_MHZ)),
        ),
    ];
    // The QP count: its own register in v4.x, written before the enable; XRNICCONF 15:8 in
    // v3.x.
    let (qps_reg, qps_field) = l.num_qps();
    let mut conf = g::XRNICCONF_ENABLE.bits(1)
        | g::XRNICCONF_ERR_BUF_EN.bits(1)
        | l.udp_sport().bits(u32::from(c.udp_source_port));
    if qps_reg == g::XRNICCONF {
        conf |= qps_field.bits(c.qps);
    } else {
        w.push(e(l, qps_reg, qps_field.bits(c.qps)));
    }
    w.push(e(l, g::XRNICCONF, conf));
    w
}

/// Step 3: the memory region of the reply ring (entry `pd`, by this firmware's convention),
/// `ACCESSDESC` last: the peer only writes into it.
pub fn region_writes(cfg: &Config, l: Layout) -> Vec<Access> {
    let r = &cfg.memory_region;
    let i = r.pd;
    vec![
        em(l, i, m::PDPDNUM, r.pd),
        em(l, i, m::VIRTADDRLSB, lo(r.va)),
        em(l, i, m::VIRTADDRMSB, hi(r.va)),
        em(l, i, m::BUFBASEADDRLSB, lo(r.phys)),
        em(l, i, m::BUFBASEADDRMSB, hi(r.phys)),
        em(l, i, m::BUFRKEY, r.key),
        em(l, i, m::WRRDBUFLEN, r.length),
        em(
            l,
            i,
            m::ACCESSDESC,
            m::ACCESSDESC_ACCESS.bits(m::access::WRITE) | m::ACCESSDESC_LEN_MSB.bits(0),
        ),
    ]
}

/// The `QPCONF` value that enables the data QP.
pub fn qpconf_enable(cfg: &Config) -> u32 {
    let pmtu = ernic::PMTU_BYTES
        .iter()
        .position(|&b| b == cfg.qp.pmtu)
        .unwrap_or(4) as u32;
    // hw_handshake_dis = 1: the doorbells travel over AXI (PG332 Interrupts, QPCONFi[4]).
    // The engine's ERNIC adapter writes SQPI with its AXI4-Lite master, and ERNIC writes the
    // CQEs and the CQ head into the adapter's memory; ERNIC's hardware-handshake sideband
    // ports are tied off in the block design.
    q::QPCONF_ENABLE.bits(1)
        | q::QPCONF_HW_HANDSHAKE_DIS.bits(1)
        | q::QPCONF_CQE_WRITE_EN.bits(1)
        | q::QPCONF_PMTU.bits(pmtu)
        | q::QPCONF_RQ_BUF_SIZE.bits(cfg.qp.rq_buffer_bytes / ernic::RQ_BUF_UNIT)
}

/// Step 4: the data QP, `QPCONF` last.
pub fn qp_writes(cfg: &Config, peer: &PeerInfo, l: Layout) -> Vec<Access> {
    let c = &cfg.qp;
    let n = c.number;
    let (dmac_lsb, dmac_msb) = ernic::mac_regs(peer.mac);
    let eq = |qpn, r, v| eq(l, qpn, r, v);
    vec![
        eq(
            n,
            q::QPADVCONF,
            q::QPADVCONF_TTL.bits(TTL) | q::QPADVCONF_PKEY.bits(PKEY),
        ),
        eq(n, q::RQBA, lo(c.rq_base)),
        eq(n, q::RQBAMSB, hi(c.rq_base)),
        eq(n, q::SQBA, lo(c.sq_base)),
        eq(n, q::SQBAMSB, hi(c.sq_base)),
        eq(n, q::CQBA, lo(c.cq_base)),
        eq(n, q::CQBAMSB, hi(c.cq_base)),
        eq(n, q::RQWPTRDBADD, lo(c.rq_doorbell)),
        eq(n, q::RQWPTRDBADDMSB, hi(c.rq_doorbell)),
        eq(n, q::CQDBADD, lo(c.cq_doorbell)),
        eq(n, q::CQDBADDMSB, hi(c.cq_doorbell)),
        eq(
            n,
            q::QDEPTH,
            q::QDEPTH_SQ.bits(c.sq_depth) | q::QDEPTH_RQ.bits(c.rq_depth),
        ),
        eq(n, q::SQPSN, q::PSN.bits(c.psn)),
        eq(
            n,
            q::LSTRQREQ,
            q::PSN.bits(peer.psn.wrapping_sub(1)) | q::LSTRQREQ_OPCODE.bits(FRESH_LAST_OPCODE),
        ),
        eq(n, q::DESTQPCONF, q::DESTQPCONF_QPN.bits(peer.qpn)),
        eq(
            n,
            q::TIMEOUTCONF,
            q::TIMEOUTCONF_TIMEOUT.bits(c.ack_timeout)
                | q::TIMEOUTCONF_RETRY.bits(c.retry_count)
                | q::TIMEOUTCONF_RNR_RETRY.bits(c.rnr_retry_count),
        ),
        eq(n, q::MACDESADDLSB, dmac_lsb),
        eq(n, q::MACDESADDMSB, dmac_msb),
        eq(n, q::IPDESADDR1, u32::from(peer.ip)),
        eq(n, q::PD, q::PD_PD.bits(cfg.memory_region.pd)),
        eq(n, q::QPCONF, qpconf_enable(cfg)),
    ]
}

/// `DB_ADDR` for QP `qpn` on an ERNIC of layout `l`: its `SQPI` register as the engine's
/// ERNIC adapter sees it (ERNIC's register window of `backline_regmap::pl`, where the block
/// design puts it for the APU and the adapter alike).
pub fn doorbell_address(l: Layout, qpn: u32) -> u32 {
    (rm::pl::ERNIC_REGS.base + u64::from(l.qp_offset(qpn, q::SQPI))) as u32
}

/// Step 6: the HWHS, soft reset first.
pub fn hwhs_writes(cfg: &Config, peer: &PeerInfo, l: Layout) -> Vec<Access> {
    let c = &cfg.hwhs;
    vec![
        h(rm::CTRL, rm::CTRL_SOFT_RESET.bits(1)),
        h(rm::QP_NUM, cfg.qp.number),
        h(rm::PAY_LEN, c.payload_bytes),
        h(rm::RPL_LEN, c.reply_bytes),
        h(rm::DECODER_ID, c.decoder_id),
        h(rm::SQ_BASE, lo(cfg.qp.sq_base)),
        h(rm::SQ_DEPTH, cfg.qp.sq_depth),
        h(rm::DB_ADDR, doorbell_address(l, cfg.qp.number)),
        h(rm::RING_DEPTH, c.ring_depth),
        h(rm::TIMEOUT, cfg.timeout_cycles()),
        h(rm::WQE_OPCODE, ernic::wqe::opcode::WRITE),
        h(rm::WQE_RKEY, peer.rkey),
        h(rm::WQE_RVA_LO, lo(peer.ring_addr)),
        h(rm::WQE_RVA_HI, hi(peer.ring_addr)),
        h(rm::WQE_LADDR_LO, lo(c.request_buffer)),
        h(rm::WQE_LADDR_HI, hi(c.request_buffer)),
        h(
            rm::TRACE_CTRL,
            rm::TRACE_CTRL_ENABLE.bits(u32::from(c.trace)),
        ),
        h(rm::FLAGS, rm::FLAGS_PREPOST.bits(1)),
    ]
}

/// Step 1: stops the HWHS (abort a run) and disables every enabled data QP and the ERNIC.
/// Returns the QPs it disabled.
pub fn teardown<M: Mmio + ?Sized>(m: &mut M, l: Layout) -> Result<Vec<u32>, Error> {
    let s = rd(m, Block::Hwhs, rm::STATUS)?;
    if rm::STATUS_RUNNING.get(s) == 1 || rm::STATUS_BUSY.get(s) == 1 {
        if rm::STATUS_RUNNING.get(s) == 1 {
            wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_ABORT.bits(1))?;
        }
        wait_idle(m, "after CTRL.abort")?;
    }
    m.barrier();
    let (qps_reg, qps_field) = l.num_qps();
    let nq = qps_field
        .get(rd(m, Block::Ernic, l.g(qps_reg))?)
        .min(ernic::MAX_QPN);
    let mut disabled = Vec::new();
    for n in ernic::FIRST_DATA_QPN..=nq {
        let off = l.qp_offset(n, q::QPCONF);
        if q::QPCONF_ENABLE.get(rd(m, Block::Ernic, off)?) == 1 {
            wr(m, Block::Ernic, off, 0)?;
            disabled.push(n);
        }
    }
    wr(m, Block::Ernic, l.g(g::XRNICCONF), 0)?;
    m.barrier();
    Ok(disabled)
}

/// What identification found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// The ERNIC's register layout.
    pub layout: Layout,
    /// The `XRNIC_VERSION` word a v4.x ERNIC answered (`None` for v3.x, which has none).
    pub version: Option<u32>,
}

impl Identity {
    /// `ERNIC v4.x register space (PG332 v4.0), XRNIC_VERSION 4.0.0 (0x00040000)`.
    pub fn describe(&self) -> String {
        match self.version {
            Some(v) => format!(
                "{}, XRNIC_VERSION {} ({v:#010x})",
                self.layout.describe(),
                ernic::version_text(v)
            ),
            None => format!(
                "{}, no version register (identified by its reserved words reading 0)",
                self.layout.describe()
            ),
        }
    }
}

/// Identifies both blocks before anything is written. The ERNIC: v4.x's `XRNIC_VERSION`
/// (global + 0x1C of the v4.x space) is read when the backend's window reaches it; major 4
/// is a v4.x ERNIC, 0 or a bus error (no register there) says it is not one, anything else
/// names neither layout and is refused with the value. Without a version, the v3.x space's
/// reserved words ([`ernic::V3_PROBES`]) must read 0. The HWHS: `VERSION` must be this
/// register map's. Nothing is written.
pub fn check_identity<M: Mmio + ?Sized>(m: &mut M) -> Result<Identity, Error> {
    let mut found = None;
    if m.window_bytes(Block::Ernic) > ernic::VERSION_OFFSET {
        match m.read32(Block::Ernic, ernic::VERSION_OFFSET) {
            Ok(word) => match ernic::identify_version(word) {
                Ok(Some(layout)) => {
                    found = Some(Identity {
                        layout,
                        version: Some(word),
                    })
                }
                Ok(None) => {}
                Err(reason) => {
                    return Err(Error::Identity {
                        block: Block::Ernic,
                        register: format!("XRNIC_VERSION ({:#x})", ernic::VERSION_OFFSET),
                        value: word,
                        reason,
                    });
                }
            },
            // No register answers there: a v3.x space (or nothing); the probes decide.
            Err(MmioError::Bus { .. }) => {}
            Err(source) => {
                return Err(Error::Mmio {
                    op: crate::mmio::Op::Read,
                    block: Block::Ernic,
                    register: format!("XRNIC_VERSION ({:#x})", ernic::VERSION_OFFSET),
                    value: None,
                    source,
                });
            }
        }
    }
    let identity = match found {
        Some(i) => i,
        None => {
            let mut read = Vec::with_capacity(ernic::V3_PROBES.len());
            for off in ernic::V3_PROBES {
                read.push((off, rd(m, Block::Ernic, off)?));
            }
            if let Err(reason) = ernic::check_ident(&read) {
                let (off, value) = read.into_iter().find(|(_, v)| *v != 0).unwrap_or_default();
                return Err(Error::Identity {
                    block: Block::Ernic,
                    register: format!("{off:#x} (reserved)"),
                    value,
                    reason,
                });
            }
            Identity {
                layout: Layout::V3,
                version: None,
            }
        }
    };
    let hv = rd(m, Block::Hwhs, rm::VERSION)?;
    if hv != rm::VERSION_VALUE {
        return Err(Error::Identity {
            block: Block::Hwhs,
            register: "VERSION".into(),
            value: hv,
            reason: format!(
                "expected {:#010x} ('BL', register map v{}); the bitstream and this firmware \
                 disagree on the register map",
                rm::VERSION_VALUE,
                rm::REGMAP_VERSION
            ),
        });
    }
    Ok(identity)
}

/// Steps 2–6: the whole bring-up for a validated config and a validated peer, at the
/// offsets of `l`. The caller has checked the versions and torn down.
pub fn bring_up<M: Mmio + ?Sized>(
    m: &mut M,
    cfg: &Config,
    peer: &PeerInfo,
    l: Layout,
) -> Result<(), Error> {
    let ernic_writes: Vec<Access> = [
        global_writes(cfg, l),
        region_writes(cfg, l),
        qp_writes(cfg, peer, l),
    ]
    .concat();
    let hwhs = hwhs_writes(cfg, peer, l);
    apply(m, &ernic_writes)?;
    // The QP must be enabled before the HWHS can ring its doorbell: order the two devices.
    m.barrier();
    apply(m, &hwhs)?;
    m.barrier();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::example;
    use crate::mmio::fake::FakeMmio;

    pub(crate) fn peer() -> PeerInfo {
        backline_board::PeerInfo {
            qpn: 0x11,
            psn: 0x2000,
            ip: std::net::Ipv4Addr::new(10, 0, 0, 1),
            mac: [2, 0, 0, 0, 0, 1],
            rkey: 0x1234,
            ring_addr: 0x7F00_0000_0000,
            depth: 64,
            slot_bytes: 64,
        }
    }

    /// A fake board whose ERNIC is the simulated board's rule-checking model.
    #[cfg(feature = "sim")]
    fn checked(l: Layout) -> FakeMmio<backline_sim::board::ernic::ErnicModel> {
        FakeMmio::new(backline_sim::board::ernic::ErnicModel::new(l))
    }

    fn fake(l: Layout) -> FakeMmio {
        FakeMmio::new(backline_board::PlainErnic::new(l))
    }

    #[test]
    fn the_plan_is_the_documented_order() {
        for l in Layout::ALL {
            the_plan_is_the_documented_order_in(l);
        }
    }

    fn the_plan_is_the_documented_order_in(l: Layout) {
        let cfg = example();
        let mut f = fake(l);
        assert_eq!(check_identity(&mut f).unwrap().layout, l);
        teardown(&mut f, l).unwrap();
        bring_up(&mut f, &cfg, &peer(), l).unwrap();
        let names: Vec<(Block, String)> = f
            .writes()
            .iter()
            .map(|a| (a.block, plain_name(a)))
            .collect();
        let want: Vec<(Block, String)> = documented_order(l)
            .iter()
            .map(|(b, n)| (*b, n.to_string()))
            .collect();
        assert_eq!(names, want, "{l}");
        assert_eq!(
            names.iter().any(|(_, n)| n == "XRNIC_CONF_QP_EN"),
            l == Layout::V4
        );
        assert!(f.barriers() >= 2);
        // The values the guide asks for: the 200 MHz timeout counter width, write access,
        // the RQ buffer size in 256-byte units, doorbells over AXI (the adapter's), the QP
        // count and the UDP port where the layout keeps them.
        let w = f.writes();
        // The last write of a register (XRNICCONF is written twice: tear-down, enable).
        let value = |name: &str| w.iter().rfind(|a| plain_name(a) == name).unwrap().value;
        assert_eq!(
            g::XRNICADCONF_BASE_COUNT_WIDTH.get(value("XRNICADCONF")),
            10
        );
        assert_eq!(
            m::ACCESSDESC_ACCESS.get(value("ACCESSDESC")),
            m::access::WRITE
        );
        let qpconf = value("QPCONF");
        assert_eq!(
            q::QPCONF_RQ_BUF_SIZE.get(qpconf),
            cfg.qp.rq_buffer_bytes / 256
        );
        // The issue of the ERNIC adapter changed this from 0 (doorbells over the sideband
        // ports) to 1: the adapter rings SQPI over AXI4-Lite.
        assert_eq!(q::QPCONF_HW_HANDSHAKE_DIS.get(qpconf), 1);
        assert_eq!(q::LSTRQREQ_OPCODE.get(value("LSTRQREQ")), FRESH_LAST_OPCODE);
        assert_eq!(
            g::INT_FATAL_ERR.get(value("INTEN")) + g::INT_PKT_VALID_ERR.get(value("INTEN")),
            2
        );
        let xc = value("XRNICCONF");
        assert_eq!(l.udp_sport().get(xc), u32::from(cfg.ernic.udp_source_port));
        let (qps_reg, qps_field) = l.num_qps();
        assert_eq!(qps_field.get(value(qps_reg.name)), cfg.ernic.qps);
        // Every ERNIC write landed at this layout's offset of its register.
        for a in w.iter().filter(|a| a.block == Block::Ernic) {
            assert!(l.locate(a.offset).is_some(), "{l}: {a}");
        }
    }

    #[cfg(feature = "sim")]
    #[test]
    fn the_simulated_boards_model_accepts_it_and_a_second_bring_up_tears_down_first() {
        for l in Layout::ALL {
            let cfg = example();
            let p = peer();
            let mut f = checked(l);
            f.ernic.set_peer(p, crate::peer::board_info(&cfg));
            assert_eq!(check_identity(&mut f).unwrap().layout, l);
            teardown(&mut f, l).unwrap();
            bring_up(&mut f, &cfg, &p, l).unwrap();
            assert!(f.ernic.qp(2).unwrap().enabled);
            f.clear_log();
            assert_eq!(teardown(&mut f, l).unwrap(), vec![2]);
            bring_up(&mut f, &cfg, &p, l).unwrap();
            let w = f.writes();
            assert_eq!(plain_name(&w[0]), "QPCONF");
            assert_eq!(w[0].value, 0);
            assert_eq!(plain_name(&w[1]), "XRNICCONF");
        }
    }

    #[cfg(feature = "sim")]
    #[test]
    fn the_model_catches_a_wrong_order_and_a_wrong_peer() {
        for l in Layout::ALL {
            let cfg = example();
            let p = peer();
            let mut f = checked(l);
            apply(&mut f, &global_writes(&cfg, l)).unwrap();
            apply(&mut f, &region_writes(&cfg, l)).unwrap();
            let mut qp = qp_writes(&cfg, &p, l);
            // QPCONF before the destination: refused, and named.
            let last = qp.pop().unwrap();
            qp.insert(10, last);
            let e = apply(&mut f, &qp).unwrap_err().to_string();
            assert!(e.contains("write ERNIC QPCONF[QP 2] = 0x"), "{e}");
            assert!(
                e.contains("before CQDBADDMSB, QDEPTH, SQPSN, LSTRQREQ, DESTQPCONF"),
                "{e}"
            );
            // The right order but a peer other than the one that answered.
            let mut f = checked(l);
            let mut other = p;
            other.qpn = 0x12;
            f.ernic.set_peer(other, crate::peer::board_info(&cfg));
            apply(&mut f, &global_writes(&cfg, l)).unwrap();
            apply(&mut f, &region_writes(&cfg, l)).unwrap();
            let e = apply(&mut f, &qp_writes(&cfg, &p, l))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(
                    "DESTQPCONF[QP 2] = 0x11, but the peer's QPN from the handshake is 0x12"
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn foreign_register_spaces_are_refused_before_any_write() {
        // A v3.x-sized space whose reserved word is not 0.
        let mut f = fake(Layout::V3);
        f.ernic.set(ernic::V3_PROBES[1], 0x0004_0200);
        let e = check_identity(&mut f).unwrap_err().to_string();
        assert!(
            e.starts_with("ERNIC 0x20098 (reserved) reads 0x00040200: reserved offset"),
            "{e}"
        );
        assert!(f.writes().is_empty());
        // A version register that names neither layout: refused with the value read.
        let mut f = fake(Layout::V4);
        f.ernic.set(ernic::VERSION_OFFSET, 0x0005_0100);
        let e = check_identity(&mut f).unwrap_err().to_string();
        assert!(
            e.starts_with("ERNIC XRNIC_VERSION (0x10001c) reads 0x00050100: the XRNIC version"),
            "{e}"
        );
        assert!(e.contains("names neither layout"), "{e}");
        assert!(f.writes().is_empty());
        let mut f = fake(Layout::V4);
        f.set_hwhs(rm::VERSION, 0x424C_0001);
        let e = check_identity(&mut f).unwrap_err().to_string();
        assert!(e.contains("HWHS VERSION reads 0x424c0001"), "{e}");
    }

    #[test]
    fn each_layout_is_identified_and_the_v3_space_answers_no_version() {
        // v4.x: the version register; v3.x: a bus error there, then the reserved words.
        let mut f = fake(Layout::V4);
        let id = check_identity(&mut f).unwrap();
        assert_eq!((id.layout, id.version), (Layout::V4, Some(0x0004_0000)));
        assert!(
            id.describe().contains("XRNIC_VERSION 4.0.0"),
            "{}",
            id.describe()
        );
        let mut f = fake(Layout::V3);
        let id = check_identity(&mut f).unwrap();
        assert_eq!((id.layout, id.version), (Layout::V3, None));
        let reads: Vec<u32> = f.log().iter().map(|a| a.offset).collect();
        assert_eq!(
            reads,
            ernic::V3_PROBES.to_vec(),
            "the failed version read is not logged"
        );
    }

    #[test]
    fn polls_give_up_with_the_register_decoded() {
        let mut f = FakeMmio::default();
        f.set_hwhs(
            rm::STATUS,
            rm::STATUS_BUSY.bits(1) | rm::STATUS_STATE.bits(rm::state::WAIT_RPL),
        );
        let e = wait_idle(&mut f, "after a test").unwrap_err().to_string();
        assert!(
            e.contains("STATUS = 0x00000014 (state WAIT_RPL, busy)"),
            "{e}"
        );
        // Bounded in device time, not in wall time.
        assert!(
            f.waited() > std::time::Duration::from_millis(10)
                && f.waited() < std::time::Duration::from_millis(11)
        );
    }
}
