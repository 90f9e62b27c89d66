// Testbench top of test_adapter.py: the HWHS engine (bitstreams/rtl/hwhs.v, module top) and
// the ERNIC adapter (bitstreams/rtl/hwhs_ernic_adapter.v) connected port to port, as the
// block design connects them (bitstreams/vivado/vpk120_hwhs.tcl). Outside: the engine's
// AXI4-Lite register slave (axi_*), the adapter's AXI4 slave that ERNIC's masters reach
// (s_axi_*) and its AXI4-Lite doorbell master (m_axil_*), which the testbench drives and
// answers as ERNIC would. Test scaffolding, not part of the design.
`timescale 1ns/1ps
module tb_adapter(
    input  wire         clock,
    input  wire         aresetn,
    input  wire [15:0]  axi_awaddr,
    input  wire         axi_awvalid,
    output wire         axi_awready,
    input  wire [31:0]  axi_wdata,
    input  wire [3:0]   axi_wstrb,
    input  wire         axi_wvalid,
    output wire         axi_wready,
    output wire [1:0]   axi_bresp,
    output wire         axi_bvalid,
    input  wire         axi_bready,
    input  wire [15:0]  axi_araddr,
    input  wire         axi_arvalid,
    output wire         axi_arready,
    output wire [31:0]  axi_rdata,
    output wire [1:0]   axi_rresp,
    output wire         axi_rvalid,
    input  wire         axi_rready,
    input  wire [3:0]   s_axi_awid,
    input  wire [31:0]  s_axi_awaddr,
    input  wire [7:0]   s_axi_awlen,
    input  wire [2:0]   s_axi_awsize,
    input  wire [1:0]   s_axi_awburst,
    input  wire         s_axi_awvalid,
    output wire         s_axi_awready,
    input  wire [511:0] s_axi_wdata,
    input  wire [63:0]  s_axi_wstrb,
    input  wire         s_axi_wlast,
    input  wire         s_axi_wvalid,
    output wire         s_axi_wready,
    output wire [3:0]   s_axi_bid,
    output wire [1:0]   s_axi_bresp,
    output wire         s_axi_bvalid,
    input  wire         s_axi_bready,
    input  wire [3:0]   s_axi_arid,
    input  wire [31:0]  s_axi_araddr,
    input  wire [7:0]   s_axi_arlen,
    input  wire [2:0]   s_axi_arsize,
    input  wire [1:0]   s_axi_arburst,
    input  wire         s_axi_arvalid,
    output wire         s_axi_arready,
    output wire [3:0]   s_axi_rid,
    output wire [511:0] s_axi_rdata,
    output wire [1:0]   s_axi_rresp,
    output wire         s_axi_rlast,
    output wire         s_axi_rvalid,
    input  wire         s_axi_rready,
    output wire [31:0]  m_axil_awaddr,
    output wire [2:0]   m_axil_awprot,
    output wire         m_axil_awvalid,
    input  wire         m_axil_awready,
    output wire [31:0]  m_axil_wdata,
    output wire [3:0]   m_axil_wstrb,
    output wire         m_axil_wvalid,
    input  wire         m_axil_wready,
    input  wire [1:0]   m_axil_bresp,
    input  wire         m_axil_bvalid,
    output wire         m_axil_bready,
    output wire [31:0]  m_axil_araddr,
    output wire [2:0]   m_axil_arprot,
    output wire         m_axil_arvalid,
    input  wire         m_axil_arready,
    input  wire [31:0]  m_axil_rdata,
    input  wire [1:0]   m_axil_rresp,
    input  wire         m_axil_rvalid,
    output wire         m_axil_rready
);
    // The engine's ERNIC-side ports, each net named as both modules name the port.
    wire        sq_wr_en;
    wire [31:0] sq_wr_addr;
    wire [31:0] sq_wr_data;
    wire        db_valid;
    wire [31:0] db_sq_pi;
    wire [31:0] db_addr;
    wire        cq_valid;
    wire [15:0] cq_wrid;
    wire        rx_wr_en;
    wire [9:0]  rx_wr_addr;
    wire [31:0] rx_wr_data;
    wire [2:0]  req_rd_addr;
    wire [31:0] req_rd_data;
    wire        ernic_err;
    wire        tx_valid;
    wire [31:0] tx_data;

    top engine(
        .clock(clock),
        .axi_awaddr(axi_awaddr), .axi_awvalid(axi_awvalid), .axi_awready(axi_awready),
        .axi_wdata(axi_wdata), .axi_wstrb(axi_wstrb), .axi_wvalid(axi_wvalid),
        .axi_wready(axi_wready), .axi_bresp(axi_bresp), .axi_bvalid(axi_bvalid),
        .axi_bready(axi_bready), .axi_araddr(axi_araddr), .axi_arvalid(axi_arvalid),
        .axi_arready(axi_arready), .axi_rdata(axi_rdata), .axi_rresp(axi_rresp),
        .axi_rvalid(axi_rvalid), .axi_rready(axi_rready),
        .sq_wr_en(sq_wr_en), .sq_wr_addr(sq_wr_addr), .sq_wr_data(sq_wr_data),
        .db_valid(db_valid), .db_sq_pi(db_sq_pi), .db_addr(db_addr),
        .cq_valid(cq_valid), .cq_wrid(cq_wrid),
        .rx_wr_en(rx_wr_en), .rx_wr_addr(rx_wr_addr), .rx_wr_data(rx_wr_data),
        .req_rd_addr(req_rd_addr), .req_rd_data(req_rd_data),
        .ernic_err(ernic_err),
        .tx_valid(tx_valid), .tx_data(tx_data)
    );

    hwhs_ernic_adapter adapter(
        .clock(clock), .aresetn(aresetn),
        .sq_wr_en(sq_wr_en), .sq_wr_addr(sq_wr_addr), .sq_wr_data(sq_wr_data),
        .db_valid(db_valid), .db_sq_pi(db_sq_pi), .db_addr(db_addr),
        .cq_valid(cq_valid), .cq_wrid(cq_wrid),
        .rx_wr_en(rx_wr_en), .rx_wr_addr(rx_wr_addr), .rx_wr_data(rx_wr_data),
        .req_rd_addr(req_rd_addr), .req_rd_data(req_rd_data),
        .ernic_err(ernic_err),
        .s_axi_awid(s_axi_awid), .s_axi_awaddr(s_axi_awaddr), .s_axi_awlen(s_axi_awlen),
        .s_axi_awsize(s_axi_awsize), .s_axi_awburst(s_axi_awburst),
        .s_axi_awvalid(s_axi_awvalid), .s_axi_awready(s_axi_awready),
        .s_axi_wdata(s_axi_wdata), .s_axi_wstrb(s_axi_wstrb), .s_axi_wlast(s_axi_wlast),
        .s_axi_wvalid(s_axi_wvalid), .s_axi_wready(s_axi_wready),
        .s_axi_bid(s_axi_bid), .s_axi_bresp(s_axi_bresp), .s_axi_bvalid(s_axi_bvalid),
        .s_axi_bready(s_axi_bready),
        .s_axi_arid(s_axi_arid), .s_axi_araddr(s_axi_araddr), .s_axi_arlen(s_axi_arlen),
        .s_axi_arsize(s_axi_arsize), .s_axi_arburst(s_axi_arburst),
        .s_axi_arvalid(s_axi_arvalid), .s_axi_arready(s_axi_arready),
        .s_axi_rid(s_axi_rid), .s_axi_rdata(s_axi_rdata), .s_axi_rresp(s_axi_rresp),
        .s_axi_rlast(s_axi_rlast), .s_axi_rvalid(s_axi_rvalid), .s_axi_rready(s_axi_rready),
        .m_axil_awaddr(m_axil_awaddr), .m_axil_awprot(m_axil_awprot),
        .m_axil_awvalid(m_axil_awvalid), .m_axil_awready(m_axil_awready),
        .m_axil_wdata(m_axil_wdata), .m_axil_wstrb(m_axil_wstrb),
        .m_axil_wvalid(m_axil_wvalid), .m_axil_wready(m_axil_wready),
        .m_axil_bresp(m_axil_bresp), .m_axil_bvalid(m_axil_bvalid),
        .m_axil_bready(m_axil_bready),
        .m_axil_araddr(m_axil_araddr), .m_axil_arprot(m_axil_arprot),
        .m_axil_arvalid(m_axil_arvalid), .m_axil_arready(m_axil_arready),
        .m_axil_rdata(m_axil_rdata), .m_axil_rresp(m_axil_rresp),
        .m_axil_rvalid(m_axil_rvalid), .m_axil_rready(m_axil_rready)
    );
endmodule
