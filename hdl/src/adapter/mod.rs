//! [`ErnicAdapter`] (Verilog module `hwhs_ernic_adapter`): between the engine's ERNIC-side
//! ports and the AXI interfaces ERNIC uses, so that the engine and an ERNIC IP meet in a
//! block design.
//!
//! On one side the engine's ports, by their names in `top` (`sq_wr_*`, `db_*`, `cq_*`,
//! `rx_wr_*`, `req_rd_*`, `ernic_err`). On the other, as PG332 describes ERNIC's interfaces
//! (the AXI4 masters are ERNIC's and 512 bits wide; doorbells arrive over AXI when a QP's
//! `QPCONF.hw_handshake_dis` = 1):
//!
//! * `s_axi_*` — an AXI4 slave, 512-bit data, 32-bit address (18 bits decoded: the 256 KiB
//!   aperture [`backline_regmap::pl::ADAPTER_MEM`]), 4-bit IDs, that ERNIC's masters reach
//!   through the block design's interconnect: its WQE processor fetches the WQE from the SQ
//!   and reads the RDMA WRITE's data from the request buffer ([`rd::ReadPort`]); its RX
//!   packet handler writes the peer's replies into the reply memory, and its response
//!   handler writes the CQEs and the CQ head ([`wr::WritePort`]).
//! * `m_axil_*` — an AXI4-Lite master, 32-bit address and data, that writes the SQ doorbell
//!   (`SQPI`) into ERNIC's register space ([`db::Doorbell`]).
//!
//! Inside, the WQE the engine writes is kept as one line ([`sq::WqeStore`]) and the request
//! image is captured at the doorbell ([`req::ReqImage`]). Every access of ERNIC's that the
//! adapter cannot serve, every CQE with its error flag and every failed doorbell is an
//! `ernic_err` pulse, which the engine counts and which fails the round in progress
//! ([`crate::fault::ErnicFault`]).
//!
//! `aresetn` (active low, the block design's peripheral reset) drops the AXI transactions in
//! progress; the engine side needs none (the engine's soft reset restarts its rounds).

pub mod db;
pub mod rd;
pub mod req;
pub mod sq;
pub mod wr;

use rust_hdl::prelude::*;

/// Path of the generated adapter, relative to the repository root.
pub const RTL_PATH: &str = "bitstreams/rtl/hwhs_ernic_adapter.v";
/// Its Verilog module name.
pub const MODULE: &str = "hwhs_ernic_adapter";

/// The ERNIC adapter.
#[derive(LogicBlock, Default)]
pub struct ErnicAdapter {
    /// The 200 MHz clock (the engine's, and ERNIC's AXI clocks).
    pub clock: Signal<In, Clock>,
    /// Active-low reset of the AXI sides.
    pub aresetn: Signal<In, Bit>,
    // ---- the engine ----
    /// SQ write enable.
    pub sq_wr_en: Signal<In, Bit>,
    /// SQ write byte address.
    pub sq_wr_addr: Signal<In, Bits<32>>,
    /// SQ write data.
    pub sq_wr_data: Signal<In, Bits<32>>,
    /// Doorbell (one cycle).
    pub db_valid: Signal<In, Bit>,
    /// The SQ producer index.
    pub db_sq_pi: Signal<In, Bits<32>>,
    /// Where the doorbell goes (`DB_ADDR`).
    pub db_addr: Signal<In, Bits<32>>,
    /// Completion (one cycle).
    pub cq_valid: Signal<Out, Bit>,
    /// Its work-request id.
    pub cq_wrid: Signal<Out, Bits<16>>,
    /// Reply memory write enable.
    pub rx_wr_en: Signal<Out, Bit>,
    /// Reply memory word address.
    pub rx_wr_addr: Signal<Out, Bits<10>>,
    /// Reply memory write data.
    pub rx_wr_data: Signal<Out, Bits<32>>,
    /// Request buffer word asked for.
    pub req_rd_addr: Signal<Out, Bits<3>>,
    /// The word, a cycle later.
    pub req_rd_data: Signal<In, Bits<32>>,
    /// Pulse: an ERNIC-side AXI error.
    pub ernic_err: Signal<Out, Bit>,
    // ---- ERNIC's masters: the AXI4 slave ----
    /// `AWID`.
    pub s_axi_awid: Signal<In, Bits<4>>,
    /// `AWADDR`.
    pub s_axi_awaddr: Signal<In, Bits<32>>,
    /// `AWLEN`.
    pub s_axi_awlen: Signal<In, Bits<8>>,
    /// `AWSIZE`.
    pub s_axi_awsize: Signal<In, Bits<3>>,
    /// `AWBURST`.
    pub s_axi_awburst: Signal<In, Bits<2>>,
    /// `AWVALID`.
    pub s_axi_awvalid: Signal<In, Bit>,
    /// `AWREADY`.
    pub s_axi_awready: Signal<Out, Bit>,
    /// `WDATA`.
    pub s_axi_wdata: Signal<In, Bits<512>>,
    /// `WSTRB`.
    pub s_axi_wstrb: Signal<In, Bits<64>>,
    /// `WLAST`.
    pub s_axi_wlast: Signal<In, Bit>,
    /// `WVALID`.
    pub s_axi_wvalid: Signal<In, Bit>,
    /// `WREADY`.
    pub s_axi_wready: Signal<Out, Bit>,
    /// `BID`.
    pub s_axi_bid: Signal<Out, Bits<4>>,
    /// `BRESP`.
    pub s_axi_bresp: Signal<Out, Bits<2>>,
    /// `BVALID`.
    pub s_axi_bvalid: Signal<Out, Bit>,
    /// `BREADY`.
    pub s_axi_bready: Signal<In, Bit>,
    /// `ARID`.
    pub s_axi_arid: Signal<In, Bits<4>>,
    /// `ARADDR`.
    pub s_axi_araddr: Signal<In, Bits<32>>,
    /// `ARLEN`.
    pub s_axi_arlen: Signal<In, Bits<8>>,
    /// `ARSIZE`.
    pub s_axi_arsize: Signal<In, Bits<3>>,
    /// `ARBURST`.
    pub s_axi_arburst: Signal<In, Bits<2>>,
    /// `ARVALID`.
    pub s_axi_arvalid: Signal<In, Bit>,
    /// `ARREADY`.
    pub s_axi_arready: Signal<Out, Bit>,
    /// `RID`.
    pub s_axi_rid: Signal<Out, Bits<4>>,
    /// `RDATA`.
    pub s_axi_rdata: Signal<Out, Bits<512>>,
    /// `RRESP`.
    pub s_axi_rresp: Signal<Out, Bits<2>>,
    /// `RLAST`.
    pub s_axi_rlast: Signal<Out, Bit>,
    /// `RVALID`.
    pub s_axi_rvalid: Signal<Out, Bit>,
    /// `RREADY`.
    pub s_axi_rready: Signal<In, Bit>,
    // ---- ERNIC's register space: the AXI4-Lite master ----
    /// `AWADDR`.
    pub m_axil_awaddr: Signal<Out, Bits<32>>,
    /// `AWPROT`.
    pub m_axil_awprot: Signal<Out, Bits<3>>,
    /// `AWVALID`.
    pub m_axil_awvalid: Signal<Out, Bit>,
    /// `AWREADY`.
    pub m_axil_awready: Signal<In, Bit>,
    /// `WDATA`.
    pub m_axil_wdata: Signal<Out, Bits<32>>,
    /// `WSTRB`.
    pub m_axil_wstrb: Signal<Out, Bits<4>>,
    /// `WVALID`.
    pub m_axil_wvalid: Signal<Out, Bit>,
    /// `WREADY`.
    pub m_axil_wready: Signal<In, Bit>,
    /// `BRESP`.
    pub m_axil_bresp: Signal<In, Bits<2>>,
    /// `BVALID`.
    pub m_axil_bvalid: Signal<In, Bit>,
    /// `BREADY`.
    pub m_axil_bready: Signal<Out, Bit>,
    /// `ARADDR`.
    pub m_axil_araddr: Signal<Out, Bits<32>>,
    /// `ARPROT`.
    pub m_axil_arprot: Signal<Out, Bits<3>>,
    /// `ARVALID`.
    pub m_axil_arvalid: Signal<Out, Bit>,
    /// `ARREADY`.
    pub m_axil_arready: Signal<In, Bit>,
    /// `RDATA`.
    pub m_axil_rdata: Signal<In, Bits<32>>,
    /// `RRESP`.
    pub m_axil_rresp: Signal<In, Bits<2>>,
    /// `RVALID`.
    pub m_axil_rvalid: Signal<In, Bit>,
    /// `RREADY`.
    pub m_axil_rready: Signal<Out, Bit>,
    /// The WQE line.
    pub sq: sq::WqeStore,
    /// The request image.
    pub req: req::ReqImage,
    /// The slave's read half.
    pub rd: rd::ReadPort,
    /// The slave's write half.
    pub wr: wr::WritePort,
    /// The doorbell master.
    pub db: db::Doorbell,
    err_r: DFF<Bit>,
}

impl Logic for ErnicAdapter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, err_r);
        clock!(self, clock, sq, req, rd, wr, db);
        // ---- the engine's WQEs and request, as ERNIC reads them ----
        self.sq.wr_en.next = self.sq_wr_en.val();
        self.sq.wr_addr.next = self.sq_wr_addr.val();
        self.sq.wr_data.next = self.sq_wr_data.val();
        self.req.start.next = self.db_valid.val();
        self.req.rd_data.next = self.req_rd_data.val();
        self.req_rd_addr.next = self.req.rd_addr.val();
        // ---- the AXI4 slave's read half ----
        self.rd.aresetn.next = self.aresetn.val();
        self.rd.arid.next = self.s_axi_arid.val();
        self.rd.araddr.next = self.s_axi_araddr.val();
        self.rd.arlen.next = self.s_axi_arlen.val();
        self.rd.arsize.next = self.s_axi_arsize.val();
        self.rd.arburst.next = self.s_axi_arburst.val();
        self.rd.arvalid.next = self.s_axi_arvalid.val();
        self.s_axi_arready.next = self.rd.arready.val();
        self.s_axi_rid.next = self.rd.rid.val();
        self.s_axi_rdata.next = self.rd.rdata.val();
        self.s_axi_rresp.next = self.rd.rresp.val();
        self.s_axi_rlast.next = self.rd.rlast.val();
        self.s_axi_rvalid.next = self.rd.rvalid.val();
        self.rd.rready.next = self.s_axi_rready.val();
        self.rd.wqe.next = self.sq.line.val();
        self.rd.wqe_tag.next = self.sq.tag.val();
        self.rd.wqe_valid.next = self.sq.valid.val();
        self.rd.req.next = self.req.image.val();
        self.rd.req_valid.next = self.req.valid.val();
        // ---- the AXI4 slave's write half ----
        self.wr.aresetn.next = self.aresetn.val();
        self.wr.awid.next = self.s_axi_awid.val();
        self.wr.awaddr.next = self.s_axi_awaddr.val();
        self.wr.awlen.next = self.s_axi_awlen.val();
        self.wr.awsize.next = self.s_axi_awsize.val();
        self.wr.awburst.next = self.s_axi_awburst.val();
        self.wr.awvalid.next = self.s_axi_awvalid.val();
        self.s_axi_awready.next = self.wr.awready.val();
        self.wr.wdata.next = self.s_axi_wdata.val();
        self.wr.wstrb.next = self.s_axi_wstrb.val();
        self.wr.wlast.next = self.s_axi_wlast.val();
        self.wr.wvalid.next = self.s_axi_wvalid.val();
        self.s_axi_wready.next = self.wr.wready.val();
        self.s_axi_bid.next = self.wr.bid.val();
        self.s_axi_bresp.next = self.wr.bresp.val();
        self.s_axi_bvalid.next = self.wr.bvalid.val();
        self.wr.bready.next = self.s_axi_bready.val();
        self.rx_wr_en.next = self.wr.rx_wr_en.val();
        self.rx_wr_addr.next = self.wr.rx_wr_addr.val();
        self.rx_wr_data.next = self.wr.rx_wr_data.val();
        self.cq_valid.next = self.wr.cq_valid.val();
        self.cq_wrid.next = self.wr.cq_wrid.val();
        // ---- the doorbell master ----
        self.db.aresetn.next = self.aresetn.val();
        self.db.ring.next = self.db_valid.val();
        self.db.pi.next = self.db_sq_pi.val();
        self.db.addr.next = self.db_addr.val();
        self.m_axil_awaddr.next = self.db.awaddr.val();
        self.m_axil_awprot.next = self.db.awprot.val();
        self.m_axil_awvalid.next = self.db.awvalid.val();
        self.db.awready.next = self.m_axil_awready.val();
        self.m_axil_wdata.next = self.db.wdata.val();
        self.m_axil_wstrb.next = self.db.wstrb.val();
        self.m_axil_wvalid.next = self.db.wvalid.val();
        self.db.wready.next = self.m_axil_wready.val();
        self.db.bresp.next = self.m_axil_bresp.val();
        self.db.bvalid.next = self.m_axil_bvalid.val();
        self.m_axil_bready.next = self.db.bready.val();
        self.m_axil_araddr.next = self.db.araddr.val();
        self.m_axil_arprot.next = self.db.arprot.val();
        self.m_axil_arvalid.next = self.db.arvalid.val();
        self.db.arready.next = self.m_axil_arready.val();
        self.db.rdata.next = self.m_axil_rdata.val();
        self.db.rresp.next = self.m_axil_rresp.val();
        self.db.rvalid.next = self.m_axil_rvalid.val();
        self.m_axil_rready.next = self.db.rready.val();
        // ---- errors, registered ----
        self.err_r.d.next = self.rd.err.val() | self.wr.err.val() | self.db.err.val();
        self.ernic_err.next = self.err_r.q.val();
    }
}

/// The adapter's input ports (besides the clock), as `build` marks them driven from outside.
pub const INPUTS: [&str; 25] = [
    "aresetn",
    "sq_wr_en",
    "sq_wr_addr",
    "sq_wr_data",
    "db_valid",
    "db_sq_pi",
    "db_addr",
    "req_rd_data",
    "s_axi_awid",
    "s_axi_awaddr",
    "s_axi_awlen",
    "s_axi_awsize",
    "s_axi_awburst",
    "s_axi_awvalid",
    "s_axi_wdata",
    "s_axi_wstrb",
    "s_axi_wlast",
    "s_axi_wvalid",
    "s_axi_bready",
    "s_axi_arid",
    "s_axi_araddr",
    "s_axi_arlen",
    "s_axi_arsize",
    "s_axi_arburst",
    "s_axi_arvalid",
];

/// Builds the adapter with every top-level input marked as driven from outside.
pub fn build() -> ErnicAdapter {
    let mut uut = ErnicAdapter::default();
    uut.aresetn.connect();
    uut.sq_wr_en.connect();
    uut.sq_wr_addr.connect();
    uut.sq_wr_data.connect();
    uut.db_valid.connect();
    uut.db_sq_pi.connect();
    uut.db_addr.connect();
    uut.req_rd_data.connect();
    uut.s_axi_awid.connect();
    uut.s_axi_awaddr.connect();
    uut.s_axi_awlen.connect();
    uut.s_axi_awsize.connect();
    uut.s_axi_awburst.connect();
    uut.s_axi_awvalid.connect();
    uut.s_axi_wdata.connect();
    uut.s_axi_wstrb.connect();
    uut.s_axi_wlast.connect();
    uut.s_axi_wvalid.connect();
    uut.s_axi_bready.connect();
    uut.s_axi_arid.connect();
    uut.s_axi_araddr.connect();
    uut.s_axi_arlen.connect();
    uut.s_axi_arsize.connect();
    uut.s_axi_arburst.connect();
    uut.s_axi_arvalid.connect();
    uut.s_axi_rready.connect();
    uut.m_axil_awready.connect();
    uut.m_axil_wready.connect();
    uut.m_axil_bresp.connect();
    uut.m_axil_bvalid.connect();
    uut.m_axil_arready.connect();
    uut.m_axil_rdata.connect();
    uut.m_axil_rresp.connect();
    uut.m_axil_rvalid.connect();
    uut.connect_all();
    uut
}

/// The adapter's Verilog, as checked in at [`RTL_PATH`]: rust-hdl names the top module of
/// any design `top` (and its parts `top$…`); the adapter's are renamed to
/// [`MODULE`] so that it and the engine can share one design.
pub fn verilog() -> String {
    let body = generate_verilog(&build());
    let renamed = body
        .replace("module top(", &format!("module {MODULE}("))
        .replace("endmodule // top\n", &format!("endmodule // {MODULE}\n"))
        .replace("top$", &format!("{MODULE}$"));
    format!(
        "// HWHS <-> ERNIC adapter, generated by backline-hdl from rust-hdl {RUST_HDL}; do not \
         edit.\n// Address map: backline_regmap::pl (docs/register-map.md). Top module: {MODULE}.\n\
         {renamed}",
        RUST_HDL = "0.46.0"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_a_module_of_its_own_name_with_every_port() {
        let v = verilog();
        assert!(v.contains(&format!("module {MODULE}(")), "{}", &v[..400]);
        assert!(
            !v.contains("module top"),
            "a module kept rust-hdl's top name"
        );
        assert!(!v.contains(" top$"), "a part kept rust-hdl's top name");
        for p in INPUTS
            .iter()
            .chain(&["s_axi_rdata", "m_axil_awaddr", "ernic_err", "cq_wrid"])
        {
            assert!(
                v.contains(&format!("input wire {p}"))
                    || v.contains(&format!("output reg {p}"))
                    || v.contains(p),
                "{p}"
            );
        }
    }

    #[test]
    fn checked_in_rtl_is_current() {
        let v = verilog();
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../bitstreams/rtl/hwhs_ernic_adapter.v"
        );
        if std::env::var_os("BACKLINE_BLESS").is_some() {
            std::fs::write(path, &v).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == v,
            "bitstreams/rtl/hwhs_ernic_adapter.v is stale: run `BACKLINE_BLESS=1 cargo test -p \
             backline-hdl` or `cargo run -p backline-hdl -- generate`"
        );
    }
}
