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
//! 2. **Global** — own MAC and IPv4 address, error, data and response-error buffers,
//!    interrupt enables, advanced config, and `XRNICCONF` (enable, QPs, UDP port) last.
//! 3. **Memory region** — invalidate the entry (`ACCESSDESC` = 0), write PD, virtual
//!    address, physical base, key and length, then `ACCESSDESC` (remote write) last.
//! 4. **Data QP** (≥ 2) — advanced config, RQ/SQ/CQ bases, doorbell write-back addresses,
//!    depths, PSNs (ours; the peer's first PSN − 1), destination QPN, timeouts, destination
//!    MAC and IP, PD, and `QPCONF` (enable, CQE write, PMTU, RQ buffer size) last.
//! 5. *barrier* — the ERNIC and the HWHS are different devices.
//! 6. **HWHS** — soft reset, then QP, payload and reply lengths, decoder id, SQ base and
//!    depth (the QP's), ring depth, reply timeout, the WQE fields (WRITE, the peer's rkey and
//!    request ring, the request buffer), trace enable and the flags.
//!
//! Pacer, round count and reference memory are written by each run ([`crate::hwhs`]).

use std::time::Duration;

use backline_regmap as rm;

use crate::config::Config;
use crate::ernic::{self, global as g, mr as m, qp as q};
use crate::error::Error;
use crate::mmio::{Access, Block, Mmio, Op};
use crate::peer::PeerInfo;

/// The register writes of a fresh `setup`, in order, as `(block, register name)`: the
/// documented order (`docs/firmware.md` lists the same names in the same order).
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
    (Block::Ernic, "DATBUFBA"),
    (Block::Ernic, "DATBUFBAMSB"),
    (Block::Ernic, "DATBUFSZ"),
    (Block::Ernic, "RESPERRPKTBA"),
    (Block::Ernic, "RESPERRPKTBAMSB"),
    (Block::Ernic, "RESPERRSZ"),
    (Block::Ernic, "INTEN"),
    (Block::Ernic, "XRNICADCONF"),
    (Block::Ernic, "XRNICCONF"),
    // 3. memory region
    (Block::Ernic, "ACCESSDESC"),
    (Block::Ernic, "PDNUM"),
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
    let n = a.block.register_name(a.offset);
    n.split('[').next().unwrap_or(&n).to_string()
}

/// TTL of outgoing packets.
pub const TTL: u32 = 64;
/// The default partition key.
pub const PKEY: u32 = 0xFFFF;

fn e(r: ernic::Reg, v: u32) -> Access {
    Access::write(Block::Ernic, r.offset, v)
}

fn eq(qpn: u32, r: ernic::Reg, v: u32) -> Access {
    Access::write(Block::Ernic, ernic::qp_offset(qpn, r), v)
}

fn em(i: u32, r: ernic::Reg, v: u32) -> Access {
    Access::write(Block::Ernic, ernic::mr_offset(i, r), v)
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
pub fn global_writes(cfg: &Config) -> Vec<Access> {
    let c = &cfg.ernic;
    let (mac_lsb, mac_msb) = ernic::mac_regs(c.mac.0);
    let sz = |count: u32, bytes: u32| g::BUFSZ_COUNT.bits(count) | g::BUFSZ_BYTES.bits(bytes);
    vec![
        e(g::MACXADDLSB, mac_lsb),
        e(g::MACXADDMSB, mac_msb),
        e(g::IPV4XADD, u32::from(c.ip)),
        e(g::ERRBUFBA, lo(c.error_buffer_base)),
        e(g::ERRBUFBAMSB, hi(c.error_buffer_base)),
        e(g::ERRBUFSZ, sz(c.error_buffer_count, c.error_buffer_bytes)),
        e(g::DATBUFBA, lo(c.data_buffer_base)),
        e(g::DATBUFBAMSB, hi(c.data_buffer_base)),
        e(g::DATBUFSZ, sz(c.data_buffer_count, c.data_buffer_bytes)),
        e(g::RESPERRPKTBA, lo(c.resp_error_buffer_base)),
        e(g::RESPERRPKTBAMSB, hi(c.resp_error_buffer_base)),
        e(
            g::RESPERRSZ,
            sz(c.resp_error_buffer_count, c.resp_error_buffer_bytes),
        ),
        e(g::INTEN, g::INT_RX_ERR.bits(1) | g::INT_QP_FATAL.bits(1)),
        e(g::XRNICADCONF, 0),
        e(
            g::XRNICCONF,
            g::XRNICCONF_ENABLE.bits(1)
                | g::XRNICCONF_NUM_QPS.bits(c.qps)
                | g::XRNICCONF_UDP_SPORT.bits(u32::from(c.udp_source_port)),
        ),
    ]
}

/// Step 3: the memory region of the reply ring, `ACCESSDESC` first (invalidate) and last.
pub fn region_writes(cfg: &Config) -> Vec<Access> {
    let r = &cfg.memory_region;
    let i = r.pd;
    vec![
        em(i, m::ACCESSDESC, 0),
        em(i, m::PDNUM, r.pd),
        em(i, m::VIRTADDRLSB, lo(r.va)),
        em(i, m::VIRTADDRMSB, hi(r.va)),
        em(i, m::BUFBASEADDRLSB, lo(r.phys)),
        em(i, m::BUFBASEADDRMSB, hi(r.phys)),
        em(i, m::BUFRKEY, r.key),
        em(i, m::WRRDBUFLEN, r.length),
        em(
            i,
            m::ACCESSDESC,
            m::ACCESSDESC_REMOTE_WRITE.bits(1) | m::ACCESSDESC_LOCAL_WRITE.bits(1),
        ),
    ]
}

/// The `QPCONF` value that enables the data QP.
pub fn qpconf_enable(cfg: &Config) -> u32 {
    let pmtu = ernic::PMTU_BYTES
        .iter()
        .position(|&b| b == cfg.qp.pmtu)
        .unwrap_or(4) as u32;
    q::QPCONF_ENABLE.bits(1)
        | q::QPCONF_CQE_WRITE.bits(1)
        | q::QPCONF_PMTU.bits(pmtu)
        | q::QPCONF_RQ_BUF_BYTES.bits(cfg.qp.rq_buffer_bytes)
}

/// Step 4: the data QP, `QPCONF` last.
pub fn qp_writes(cfg: &Config, peer: &PeerInfo) -> Vec<Access> {
    let c = &cfg.qp;
    let n = c.number;
    let (dmac_lsb, dmac_msb) = ernic::mac_regs(peer.mac);
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
        eq(n, q::LSTRQREQ, q::PSN.bits(peer.psn.wrapping_sub(1))),
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

/// Step 6: the HWHS, soft reset first.
pub fn hwhs_writes(cfg: &Config, peer: &PeerInfo) -> Vec<Access> {
    let c = &cfg.hwhs;
    vec![
        h(rm::CTRL, rm::CTRL_SOFT_RESET.bits(1)),
        h(rm::QP_NUM, cfg.qp.number),
        h(rm::PAY_LEN, c.payload_bytes),
        h(rm::RPL_LEN, c.reply_bytes),
        h(rm::DECODER_ID, c.decoder_id),
        h(rm::SQ_BASE, lo(cfg.qp.sq_base)),
        h(rm::SQ_DEPTH, cfg.qp.sq_depth),
        h(rm::RING_DEPTH, c.ring_depth),
        h(rm::TIMEOUT, cfg.timeout_cycles()),
        h(rm::WQE_OPCODE, 0),
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

/// Reads a register, naming it in the error.
pub fn rd<M: Mmio + ?Sized>(m: &mut M, block: Block, offset: u32) -> Result<u32, Error> {
    m.read32(block, offset).map_err(|source| Error::Mmio {
        op: Op::Read,
        block,
        register: block.register_name(offset),
        value: None,
        source,
    })
}

/// Writes a register, naming it and the value in the error.
pub fn wr<M: Mmio + ?Sized>(m: &mut M, block: Block, offset: u32, value: u32) -> Result<(), Error> {
    m.write32(block, offset, value)
        .map_err(|source| Error::Mmio {
            op: Op::Write,
            block,
            register: block.register_name(offset),
            value: Some(value),
            source,
        })
}

/// Applies a list of writes in order.
pub fn apply<M: Mmio + ?Sized>(m: &mut M, writes: &[Access]) -> Result<(), Error> {
    for a in writes {
        debug_assert_eq!(a.op, Op::Write);
        wr(m, a.block, a.offset, a.value)?;
        log::trace!("{a}");
    }
    Ok(())
}

/// Decodes `STATUS` for messages: `state WAIT_RPL, busy, running`.
pub fn status_text(s: u32) -> String {
    let mut parts = vec![format!(
        "state {}",
        rm::STATES
            .get(rm::STATUS_STATE.get(s) as usize)
            .copied()
            .unwrap_or("?")
    )];
    for f in rm::by_name("STATUS").map(|r| r.fields).unwrap_or(&[]) {
        if f.width == 1 && f.get(s) == 1 {
            parts.push(f.name.to_string());
        }
    }
    parts.join(", ")
}

/// Polls HWHS `STATUS` until `done(status)` holds, waiting `poll` between reads (doubling
/// after 32 polls, up to 100 µs), for at most `budget` of device time.
pub fn poll_status<M: Mmio + ?Sized>(
    m: &mut M,
    what: &dyn Fn() -> String,
    poll: Duration,
    budget: Duration,
    done: &dyn Fn(u32) -> bool,
) -> Result<u32, Error> {
    poll_status_timed(m, what, poll, budget, done).map(|(s, _)| s)
}

/// [`poll_status`], also returning the device time waited.
pub fn poll_status_timed<M: Mmio + ?Sized>(
    m: &mut M,
    what: &dyn Fn() -> String,
    poll: Duration,
    budget: Duration,
    done: &dyn Fn(u32) -> bool,
) -> Result<(u32, Duration), Error> {
    let mut waited = Duration::ZERO;
    let mut interval = poll;
    let cap = poll.max(Duration::from_micros(100));
    let mut n = 0u32;
    loop {
        let s = rd(m, Block::Hwhs, rm::STATUS)?;
        if done(s) {
            return Ok((s, waited));
        }
        if waited > budget {
            return Err(Error::Timeout {
                what: format!("{} did not happen within {budget:?}", what()),
                register: "STATUS",
                value: s,
                detail: format!(" ({})", status_text(s)),
            });
        }
        m.wait(interval).map_err(|source| Error::Mmio {
            op: Op::Read,
            block: Block::Hwhs,
            register: "STATUS".into(),
            value: None,
            source,
        })?;
        waited += interval;
        n += 1;
        if n >= 32 {
            interval = (interval * 2).min(cap);
        }
    }
}

/// Waits until the HWHS is idle (not busy: a soft reset's reply-memory sweep takes 1,024
/// cycles).
pub fn wait_idle<M: Mmio + ?Sized>(m: &mut M, what: &str) -> Result<u32, Error> {
    poll_status(
        m,
        &|| format!("the HWHS going idle {what}"),
        Duration::from_micros(1),
        Duration::from_millis(10),
        &|s| rm::STATUS_BUSY.get(s) == 0 && rm::STATUS_RUNNING.get(s) == 0,
    )
}

/// Step 1: stops the HWHS (abort a run) and disables every enabled data QP and the ERNIC.
/// Returns the QPs it disabled.
pub fn teardown<M: Mmio + ?Sized>(m: &mut M) -> Result<Vec<u32>, Error> {
    let s = rd(m, Block::Hwhs, rm::STATUS)?;
    if rm::STATUS_RUNNING.get(s) == 1 || rm::STATUS_BUSY.get(s) == 1 {
        if rm::STATUS_RUNNING.get(s) == 1 {
            wr(m, Block::Hwhs, rm::CTRL, rm::CTRL_ABORT.bits(1))?;
        }
        wait_idle(m, "after CTRL.abort")?;
    }
    m.barrier();
    let xc = rd(m, Block::Ernic, g::XRNICCONF.offset)?;
    let nq = g::XRNICCONF_NUM_QPS.get(xc).min(ernic::MAX_QPN);
    let mut disabled = Vec::new();
    for n in ernic::FIRST_DATA_QPN..=nq {
        let off = ernic::qp_offset(n, q::QPCONF);
        if q::QPCONF_ENABLE.get(rd(m, Block::Ernic, off)?) == 1 {
            wr(m, Block::Ernic, off, 0)?;
            disabled.push(n);
        }
    }
    wr(m, Block::Ernic, g::XRNICCONF.offset, 0)?;
    m.barrier();
    Ok(disabled)
}

/// Reads `XRNICVER` and `VERSION` and refuses layouts this firmware does not know. Nothing
/// is written.
pub fn check_versions<M: Mmio + ?Sized>(m: &mut M) -> Result<ernic::Version, Error> {
    let v = rd(m, Block::Ernic, g::XRNICVER.offset)?;
    let ver = ernic::Version::from_reg(v);
    ver.check().map_err(|reason| Error::Version {
        block: Block::Ernic,
        register: "XRNICVER",
        value: v,
        reason,
    })?;
    let hv = rd(m, Block::Hwhs, rm::VERSION)?;
    if hv != rm::VERSION_VALUE {
        return Err(Error::Version {
            block: Block::Hwhs,
            register: "VERSION",
            value: hv,
            reason: format!(
                "expected {:#010x} ('BL', register map v{}); the bitstream and this firmware \
                 disagree on the register map",
                rm::VERSION_VALUE,
                rm::REGMAP_VERSION
            ),
        });
    }
    Ok(ver)
}

/// Steps 2–6: the whole bring-up for a validated config and a validated peer. The caller
/// has checked the versions and torn down.
pub fn bring_up<M: Mmio + ?Sized>(m: &mut M, cfg: &Config, peer: &PeerInfo) -> Result<(), Error> {
    let ernic_writes: Vec<Access> =
        [global_writes(cfg), region_writes(cfg), qp_writes(cfg, peer)].concat();
    let hwhs = hwhs_writes(cfg, peer);
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
        PeerInfo {
            qpn: 0x11,
            psn: 0x2000,
            ip: std::net::Ipv4Addr::new(10, 0, 0, 1),
            mac: [2, 0, 0, 0, 0, 1],
            rkey: 0x1234,
            ring_addr: 0x7F00_0000_0000,
            geometry: backline_wire::Geometry {
                depth: 64,
                slot_bytes: 64,
            },
        }
    }

    #[test]
    fn the_plan_is_the_documented_order_and_the_model_accepts_it() {
        let cfg = example();
        let p = peer();
        let mut f = FakeMmio::default();
        f.ernic.set_peer(p.facts(), crate::peer::board_facts(&cfg));
        check_versions(&mut f).unwrap();
        teardown(&mut f).unwrap();
        bring_up(&mut f, &cfg, &p).unwrap();
        let names: Vec<(Block, String)> = f
            .writes()
            .iter()
            .map(|a| (a.block, plain_name(a)))
            .collect();
        let want: Vec<(Block, String)> = DOCUMENTED_ORDER
            .iter()
            .map(|(b, n)| (*b, n.to_string()))
            .collect();
        assert_eq!(names, want);
        assert!(f.ernic.qp(2).unwrap().enabled);
        assert!(f.barriers() >= 2);
        // A second bring-up tears the enabled QP down first.
        f.clear_log();
        assert_eq!(teardown(&mut f).unwrap(), vec![2]);
        bring_up(&mut f, &cfg, &p).unwrap();
        let w = f.writes();
        assert_eq!(plain_name(&w[0]), "QPCONF");
        assert_eq!(w[0].value, 0);
        assert_eq!(plain_name(&w[1]), "XRNICCONF");
    }

    #[test]
    fn the_model_catches_a_wrong_order_and_a_wrong_peer() {
        let cfg = example();
        let p = peer();
        let mut f = FakeMmio::default();
        apply(&mut f, &global_writes(&cfg)).unwrap();
        apply(&mut f, &region_writes(&cfg)).unwrap();
        let mut qp = qp_writes(&cfg, &p);
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
        let mut f = FakeMmio::default();
        let mut other = p;
        other.qpn = 0x12;
        f.ernic
            .set_peer(other.facts(), crate::peer::board_facts(&cfg));
        apply(&mut f, &global_writes(&cfg)).unwrap();
        apply(&mut f, &region_writes(&cfg)).unwrap();
        let e = apply(&mut f, &qp_writes(&cfg, &p)).unwrap_err().to_string();
        assert!(
            e.contains("DESTQPCONF[QP 2] = 0x11, but the peer's QPN from the handshake is 0x12"),
            "{e}"
        );
    }

    #[test]
    fn unknown_versions_are_refused_before_any_write() {
        for (v, want) in [
            (0x0004_0000, "moved its register blocks"),
            (0x0000_0000, "not a version"),
        ] {
            let mut f = FakeMmio::new(ernic::Version::from_reg(v));
            let e = check_versions(&mut f).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("ERNIC XRNICVER reads {v:#010x}")),
                "{e}"
            );
            assert!(e.contains(want), "{e}");
            assert!(f.writes().is_empty());
        }
        let mut f = FakeMmio::default();
        f.set_hwhs(rm::VERSION, 0x424C_0002);
        let e = check_versions(&mut f).unwrap_err().to_string();
        assert!(e.contains("HWHS VERSION reads 0x424c0002"), "{e}");
    }

    #[test]
    fn polls_give_up_with_the_register_decoded() {
        let mut f = FakeMmio::default();
        f.set_hwhs(
            rm::STATUS,
            rm::STATUS_BUSY.bits(1) | rm::STATUS_STATE.bits(4),
        );
        let e = wait_idle(&mut f, "after a test").unwrap_err().to_string();
        assert!(
            e.contains("STATUS = 0x00000014 (state WAIT_RPL, busy)"),
            "{e}"
        );
        // Bounded in device time, not in wall time.
        assert!(f.waited() > Duration::from_millis(10) && f.waited() < Duration::from_millis(11));
    }
}
