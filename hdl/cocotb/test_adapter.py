"""cocotb tests of the HWHS engine and its ERNIC adapter together (tb_adapter.v), with the
testbench acting as ERNIC through a third-party AXI verification library (cocotbext-axi), as
PG332 describes ERNIC's side of the interfaces:

* ERNIC's AXI4 masters (512-bit data; one cocotbext-axi AxiMaster on the adapter's s_axi
  port, which ERNIC's WQE processor, RX packet handler and response handler reach through
  the block design's interconnect) initiate every memory transaction: after each doorbell the
  WQE processor fetches the WQE from the SQ and reads the RDMA WRITE's data from the request
  buffer; when the WRITE is acknowledged the response handler writes the CQE and the CQ head;
  the peer's reply arrives as an incoming RDMA WRITE that the RX packet handler writes into
  the reply memory (64-byte aligned beats or unaligned strobed ones, both legal AXI).
* ERNIC's register space is an AXI4-Lite slave (cocotbext-axi AxiLiteSlave) that the
  adapter's doorbell master writes SQPI into.

Every WQE and every request the stand-in sees is checked against its own model of the
round (work-request id, opcode, key, remote slot, lengths, payload, sequence number); the
engine checks every reply against its reference memory. Register offsets, the PL address map
and the trace marks come from the generated header bitstreams/rtl/backline_regmap.vh; the
WQE layout and the v4.x SQPI offset from the generated docs/ernic-registers.md.

ADAPTER_ROUNDS (default 10,000) sets the rounds of the long hw-loop run."""

import logging
import os
import random
import re

import cocotb
from cocotb.clock import Clock
from cocotb.queue import Queue
from cocotb.triggers import ClockCycles, Timer
from cocotbext.axi import (AxiBus, AxiLiteBus, AxiLiteMaster, AxiLiteSlave, AxiMaster,
                           AxiResp)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
HEADER = os.path.join(ROOT, "bitstreams", "rtl", "backline_regmap.vh")
ERNIC_DOC = os.path.join(ROOT, "docs", "ernic-registers.md")
ROUNDS = int(os.environ.get("ADAPTER_ROUNDS", "10000"))


def header():
    """{register: offset}, {field: (lsb, width)} and the other `define values."""
    regs, fields, defs = {}, {}, {}
    with open(HEADER) as f:
        for line in f:
            m = re.match(r"`define BL_REG_(\w+) 8'h([0-9A-F]+)", line)
            if m:
                regs[m.group(1)] = int(m.group(2), 16)
                continue
            m = re.match(r"`define BL_(\w+)_(LSB|WIDTH) (\d+)", line)
            if m:
                fields.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
                continue
            m = re.match(r"`define BL_(\w+) (?:32'h([0-9A-F]+)|(\d+))$", line.strip())
            if m:
                defs[m.group(1)] = int(m.group(2), 16) if m.group(2) else int(m.group(3))
    return regs, fields, defs


def ernic_doc():
    """The WQE's byte offsets by field, and v4.x's QP base and SQPI offset."""
    with open(ERNIC_DOC) as f:
        text = f.read()
    wqe = {}
    section = text[text.index("## WQE (PG332 Table 2-1)"):]
    for off, name in re.findall(r"\| (0x[0-9a-f]+) \| ([A-Z]+(?:, (?:low|high))?)", section):
        wqe[name] = int(off, 16)
    qp_base = int(re.search(r"\| v4\.x \|.*?`(0x[0-9a-f]+) \+ \(n", text).group(1), 16)
    sqpi = int(re.search(r"\| (0x[0-9a-f]+) \| `SQPI` \|", text).group(1), 16)
    return wqe, qp_base, sqpi


REGS, FIELDS, DEFS = header()
WQE, QP_BASE_V4, SQPI = ernic_doc()
QPN = 2
DB_ADDR = DEFS["PL_ERNIC_REGS_BASE"] + QP_BASE_V4 + (QPN - 1) * 0x100 + SQPI
REQ = DEFS["PL_REQUEST_BUFFER_BASE"]
REPLY = DEFS["PL_REPLY_MEMORY_BASE"]
SQ = DEFS["PL_SQ_MEMORY_BASE"]
CQ = DEFS["PL_CQ_MEMORY_BASE"]
CQ_DB = DEFS["PL_CQ_DOORBELL_BASE"]
SQ_DEPTH = 16
CQ_DEPTH = 64
RING = 64
RKEY = 0x1234
RVA = 0x7F00_0000_0000
REF_LEN = 256
WRITE = 0  # PG332 Table 2-1 opcode of RDMA WRITE
REQUEST_STATUS = (1 << 24) | (1 << 16)  # wire v1, kind request (backline_wire::words)
REPLY_STATUS = (1 << 24) | (2 << 16)


def field(value, reg, name):
    f = FIELDS[f"{reg}_{name}"]
    return (value >> f["LSB"]) & ((1 << f["WIDTH"]) - 1)


def bits(reg, name, value=1):
    return value << FIELDS[f"{reg}_{name}"]["LSB"]


def answer(syndrome):
    """The peer's function of a syndrome (both the stand-in and the reference memory use it)."""
    return (syndrome * 2654435761 + 12345) & 0xFFFFFFFF


class Ernic:
    """ERNIC's side of the adapter: its masters (an AxiMaster) and its register space (an
    AxiLiteSlave whose writes are the doorbells)."""

    def __init__(self, dut):
        self.dut = dut
        self.mem = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clock, dut.aresetn,
                             reset_active_level=False)
        self.regs = AxiLiteSlave(AxiLiteBus.from_prefix(dut, "m_axil"), dut.clock,
                                 dut.aresetn, reset_active_level=False, target=self)
        self.doorbells = Queue()
        self.fail_doorbell = False
        self.hang_doorbell = 0
        self.mismatches = []
        self.rng = random.Random(7)

    # ---- ERNIC's register space (AxiLiteSlave target) ----
    async def write(self, address, data):
        if self.hang_doorbell:
            await ClockCycles(self.dut.clock, self.hang_doorbell)
        if self.fail_doorbell:
            raise ValueError("SLVERR")
        await self.doorbells.put((address, int.from_bytes(data, "little")))

    async def read(self, address, length):
        return bytes(length)

    def expect(self, what, got, want):
        if got != want:
            self.mismatches.append(f"{what}: got {got:#x}, want {want:#x}")

    # ---- one round as ERNIC and the peer see it ----
    async def round(self, r, pay_len, rpl_len, syndrome, reply_first=False):
        addr, pi = await self.doorbells.get()
        self.expect(f"round {r} doorbell address", addr, DB_ADDR)
        self.expect(f"round {r} SQPI", pi, (r + 1) & 0xFFFF)
        slot = (pi - 1) % SQ_DEPTH
        rd = await self.mem.read(SQ + 64 * slot, 64)
        assert rd.resp == AxiResp.OKAY, f"round {r}: WQE fetch answered {rd.resp}"
        w = lambda name: int.from_bytes(rd.data[WQE[name]:WQE[name] + 4], "little")
        msg_len = pay_len + 16
        pad = (-pay_len) % 4
        self.expect(f"round {r} WRID", w("WRID") & 0xFFFF, r & 0xFFFF)
        self.expect(f"round {r} OPCODE", w("OPCODE") & 0xFF, WRITE)
        self.expect(f"round {r} RTAG", w("RTAG"), RKEY)
        self.expect(f"round {r} LENGTH", w("LENGTH"), msg_len)
        laddr = w("LADDR, low") | w("LADDR, high") << 32
        self.expect(f"round {r} LADDR", laddr, REQ + pad)
        roff = w("ROFFSET, low") | w("ROFFSET, high") << 32
        self.expect(f"round {r} ROFFSET", roff, RVA + 64 * (r % RING) + 64 - msg_len)
        self.expect(f"round {r} IMMDT", w("IMMDT"), r + 1)
        data = await self.mem.read(laddr, msg_len)
        assert data.resp == AxiResp.OKAY, f"round {r}: data read answered {data.resp}"
        payload = int.from_bytes(data.data[:pay_len], "little")
        hdr = [int.from_bytes(data.data[pay_len + 4 * i:pay_len + 4 * i + 4], "little")
               for i in range(4)]
        self.expect(f"round {r} payload", payload, syndrome & ((1 << 8 * pay_len) - 1))
        self.expect(f"round {r} payload_len", hdr[0], pay_len)
        self.expect(f"round {r} status", hdr[2], REQUEST_STATUS)
        self.expect(f"round {r} seq", hdr[3], r + 1)
        # The WRITE's ACK (the response handler's CQE) and the peer's reply (the RX packet
        # handler's RDMA WRITE) come from different masters and overlap; the interconnect
        # puts their writes on the adapter's port one after the other.
        first, second = self.complete(r), self.reply(r, rpl_len, payload)
        if reply_first:
            first, second = second, first
        first = cocotb.start_soon(first)
        await second
        await first

    async def complete(self, r, errflag=0):
        """The WRITE's ACK came: the response handler writes the CQE and the CQ head."""
        cqe = (r & 0xFFFF) | WRITE << 16 | errflag << 24
        await self.mem.write(CQ + 4 * (r % CQ_DEPTH), cqe.to_bytes(4, "little"))
        await self.mem.write(CQ_DB, ((r + 1) % CQ_DEPTH).to_bytes(4, "little"))

    async def reply(self, r, rpl_len, syndrome):
        """The peer's RDMA WRITE of its reply, tail-anchored in the round's reply slot."""
        value = answer(syndrome)
        payload = value.to_bytes(4, "little") + bytes(
            self.rng.randrange(256) for _ in range(rpl_len - 4 if rpl_len > 4 else 0))
        payload = payload[:rpl_len]
        msg = payload + b"".join(v.to_bytes(4, "little")
                                 for v in (rpl_len, 0, REPLY_STATUS, r + 1))
        slot = REPLY + 64 * (r % RING)
        if self.rng.random() < 0.5:
            # A 64-byte aligned beat, the bytes in front of the message written as 0.
            await self.mem.write(slot, bytes(64 - len(msg)) + msg)
        else:
            # Only the message's bytes, strobed.
            await self.mem.write(slot + 64 - len(msg), msg)


async def setup(dut):
    # cocotbext-axi logs every transaction at INFO: thousands of rounds would be mostly log.
    for bus in ("axi", "s_axi", "m_axil"):
        logging.getLogger(f"cocotb.{dut._name}.{bus}").setLevel(logging.WARNING)
    cocotb.start_soon(Clock(dut.clock, 5, units="ns").start())
    dut.aresetn.value = 0
    axi = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "axi"), dut.clock)
    ernic = Ernic(dut)
    await ClockCycles(dut.clock, 8)
    dut.aresetn.value = 1
    await ClockCycles(dut.clock, 4)
    return axi, ernic


async def rd(axi, name):
    r = await axi.read(REGS[name], 4)
    assert r.resp == AxiResp.OKAY, f"{name}: {r.resp}"
    return int.from_bytes(r.data, "little")


async def wr(axi, name, value):
    r = await axi.write(REGS[name], value.to_bytes(4, "little"))
    assert r.resp == AxiResp.OKAY, f"{name}: {r.resp}"


async def configure(axi, dut, pay_len=4, rpl_len=4, flags=0, rounds=0, syndromes=None):
    """The engine as the firmware sets it up for QP 2 behind the adapter, then a soft reset
    and its reply-memory sweep."""
    for name, value in [
        ("QP_NUM", QPN), ("PAY_LEN", pay_len), ("RPL_LEN", rpl_len), ("DECODER_ID", 0),
        ("SQ_BASE", SQ), ("SQ_DEPTH", SQ_DEPTH), ("DB_ADDR", DB_ADDR), ("RING_DEPTH", RING),
        ("TIMEOUT", 4000), ("WQE_OPCODE", WRITE), ("WQE_RKEY", RKEY),
        ("WQE_RVA_LO", RVA & 0xFFFFFFFF), ("WQE_RVA_HI", RVA >> 32),
        ("WQE_LADDR_LO", REQ), ("WQE_LADDR_HI", 0), ("TRACE_CTRL", 1),
        ("PACER_FREQ", 0), ("PACER_SPAN", 0), ("ROUNDS", rounds), ("PAYLOAD0", 0),
    ]:
        await wr(axi, name, value)
    if syndromes is not None:
        await wr(axi, "REF_ADDR", 0)
        for s in syndromes:
            await wr(axi, "REF_SYN", s)
            await wr(axi, "REF_EXP", answer(s))
        await wr(axi, "REF_LEN", len(syndromes))
    await wr(axi, "FLAGS", flags | bits("FLAGS", "PREPOST"))
    await wr(axi, "CTRL", bits("CTRL", "SOFT_RESET"))
    while field(await rd(axi, "STATUS"), "STATUS", "BUSY"):
        await ClockCycles(dut.clock, 64)


async def wait_done(axi, dut, cycles=100000):
    for _ in range(cycles // 16):
        s = await rd(axi, "STATUS")
        if field(s, "STATUS", "DONE"):
            return s
        await ClockCycles(dut.clock, 16)
    raise AssertionError(f"no STATUS.done: {s:#x}")


async def trace(axi, first, count):
    await wr(axi, "TRACE_RD_ADDR", first)
    return [await rd(axi, "TRACE_DATA") for _ in range(count)]


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def rounds_of_every_length_through_the_adapter(dut):
    """sw-loop rounds with every request length (1..16 bytes) and replies of 1..48 bytes,
    CQE before or after the reply: each WQE and request as the stand-in checks them, each
    reply's first word and length in the engine's LAST_REPLY and LAST_RPL_LEN."""
    axi, ernic = await setup(dut)
    rng = random.Random(1)
    r = 0
    for pay_len in range(1, 17):
        rpl_len = rng.randrange(1, 49)
        await configure(axi, dut, pay_len, rpl_len)
        for k in range(3):
            s = rng.getrandbits(32)
            await wr(axi, "PAYLOAD0", s)
            await wr(axi, "CTRL", bits("CTRL", "START"))
            await ernic.round(k, pay_len, rpl_len, s, reply_first=k == 1)
            st = await wait_done(axi, dut)
            assert field(st, "STATUS", "REPLY_SEEN") and not field(st, "STATUS", "TIMEOUT")
            want = answer(s & ((1 << 8 * pay_len) - 1)) & ((1 << 8 * min(rpl_len, 4)) - 1)
            assert await rd(axi, "LAST_REPLY") == want, (pay_len, rpl_len)
            assert await rd(axi, "LAST_RPL_LEN") == rpl_len
            r += 1
        assert await rd(axi, "ERNIC_ERR_COUNT") == 0
    assert not ernic.mismatches, ernic.mismatches[:10]
    dut._log.info("%d rounds of every request length: 0 mismatches", r)


@cocotb.test(timeout_time=ROUNDS * 2 + 1000, timeout_unit="us")
async def a_hw_loop_run_through_the_adapter(dut):
    """ADAPTER_ROUNDS hw-loop rounds, b2b, payload word 0 from the reference memory and every
    reply checked by the engine: every round completes, 0 mismatches (the stand-in's checks
    of every WQE and request, and the engine's of every reply), no ERNIC-side errors, one
    trace entry a round."""
    axi, ernic = await setup(dut)
    rng = random.Random(2)
    syndromes = [rng.getrandbits(32) for _ in range(REF_LEN)]
    flags = bits("FLAGS", "HW_LOOP") | bits("FLAGS", "USE_REF") | bits("FLAGS", "CHECK")
    await configure(axi, dut, 4, 4, flags, ROUNDS, syndromes)
    await wr(axi, "CTRL", bits("CTRL", "START"))
    for r in range(ROUNDS):
        await ernic.round(r, 4, 4, syndromes[r % REF_LEN], reply_first=r % 7 == 3)
    await wait_done(axi, dut)
    counts = {name: await rd(axi, name) for name in
              ("ROUND_COUNT", "TIMEOUT_COUNT", "MISMATCH_COUNT", "ERNIC_ERR_COUNT",
               "TRACE_COUNT")}
    assert counts == {"ROUND_COUNT": ROUNDS, "TIMEOUT_COUNT": 0, "MISMATCH_COUNT": 0,
                      "ERNIC_ERR_COUNT": 0, "TRACE_COUNT": ROUNDS}, counts
    assert not ernic.mismatches, ernic.mismatches[:10]
    rtts = await trace(axi, 0, min(ROUNDS, 64))
    assert all(t > DEFS["TRACE_AXI_ERROR"] for t in rtts), rtts
    dut._log.info("adapter: %d hw-loop rounds, 0 mismatches (stand-in %d, engine %d), RTT "
                  "%d..%d cycles (the stand-in's AXI round trip), last %d", ROUNDS,
                  len(ernic.mismatches), counts["MISMATCH_COUNT"], min(rtts), max(rtts),
                  await rd(axi, "LAST_RTT"))


async def failed_round(axi, dut):
    """The round in flight ended at once on an ERNIC-side error: counted, traced."""
    st = await wait_done(axi, dut, 20000)
    assert field(st, "STATUS", "ERNIC_ERR") and field(st, "STATUS", "TIMEOUT"), hex(st)
    assert await rd(axi, "TIMEOUT_COUNT") == 0
    n = await rd(axi, "TRACE_COUNT")
    assert (await trace(axi, n - 1, 1))[0] == DEFS["TRACE_AXI_ERROR"]
    return await rd(axi, "ERNIC_ERR_COUNT")


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def an_axi_error_on_a_wqe_fetch_fails_the_round_with_a_counted_error(dut):
    """ERNIC fetches an SQ slot the engine did not post (its state out of step): the adapter
    answers SLVERR (and a read past the request buffer too), the engine's round fails at once
    with the errors counted (ERNIC_ERR_COUNT) and is traced
    as TRACE_AXI_ERROR, not as a timeout; the next round goes through."""
    axi, ernic = await setup(dut)
    await configure(axi, dut)
    await wr(axi, "CTRL", bits("CTRL", "START"))
    addr, pi = await ernic.doorbells.get()
    bad = await ernic.mem.read(SQ + 64 * (pi % SQ_DEPTH), 64)
    assert bad.resp == AxiResp.SLVERR, bad.resp
    beyond = await ernic.mem.read(REQ + 64, 64)
    assert beyond.resp == AxiResp.SLVERR, beyond.resp
    assert await failed_round(axi, dut) == 2, "an error each for the two reads"
    # The round after: a normal one (the WQE of round 1 in slot 1).
    await wr(axi, "CTRL", bits("CTRL", "START"))
    await ernic.round(1, 4, 4, 0)
    st = await wait_done(axi, dut)
    assert field(st, "STATUS", "REPLY_SEEN") and not field(st, "STATUS", "ERNIC_ERR"), hex(st)
    assert not ernic.mismatches, ernic.mismatches


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def doorbells_that_fail_or_time_out_fail_their_round(dut):
    """ERNIC answers the doorbell write SLVERR; then it answers only after DB_TIMEOUT_CYCLES:
    each fails its round with a counted error (once, the late answer adds none); a CQE with
    its error flag and a write to the read-only SQ count too; the next round goes through."""
    axi, ernic = await setup(dut)
    await configure(axi, dut)
    ernic.fail_doorbell = True
    await wr(axi, "CTRL", bits("CTRL", "START"))
    assert await failed_round(axi, dut) == 1
    ernic.fail_doorbell = False
    ernic.hang_doorbell = DEFS["DB_TIMEOUT_CYCLES"] + 50
    await wr(axi, "CTRL", bits("CTRL", "START"))
    assert await failed_round(axi, dut) == 2
    await ernic.doorbells.get()  # the late doorbell, answered at last
    ernic.hang_doorbell = 0
    await ClockCycles(dut.clock, 100)
    assert await rd(axi, "ERNIC_ERR_COUNT") == 2
    # A CQE whose error flag is set (the WQE failed on the wire).
    await wr(axi, "CTRL", bits("CTRL", "START"))
    await ernic.doorbells.get()
    await ernic.complete(2, errflag=1)
    assert await failed_round(axi, dut) == 3
    # ERNIC writing where it only reads: SLVERR.
    w = await ernic.mem.write(SQ, bytes(64))
    assert w.resp == AxiResp.SLVERR, w.resp
    assert await rd(axi, "ERNIC_ERR_COUNT") == 4
    await wr(axi, "CTRL", bits("CTRL", "START"))
    await ernic.round(3, 4, 4, 0)
    st = await wait_done(axi, dut)
    assert field(st, "STATUS", "REPLY_SEEN") and not field(st, "STATUS", "ERNIC_ERR"), hex(st)
    assert not ernic.mismatches, ernic.mismatches
