# Vivado block design for the HWHS engine and its ERNIC adapter on the AMD VPK120 (Versal
# Premium XCVP1202).
#
# Run it yourself, on a machine with Vivado and a licence for the ERNIC IP:
#
#     vivado -mode batch -source bitstreams/vivado/vpk120_hwhs.tcl -tclargs <build-dir> [v4|v3]
#
# v4 (the default) builds ERNIC 4.0, whose register layout the firmware programs by default;
# v3 builds ERNIC 3.1 (the firmware tells the two apart by ERNIC's version register and
# programs either). It is NOT run by this repository's CI (there is no Vivado there) and no
# bitstream is ever checked in; instead `cargo test -p backline-hdl` parses this file and
# checks every IP version against the ERNIC layouts the firmware supports, every address
# against backline-regmap's PL map, and that every port of the engine and of the adapter is
# connected exactly once (hdl/src/vivado.rs). If your Vivado release lacks a version below,
# `get_ipdefs *ernic*` shows the ones it has.
#
# What it builds:
#   * CIPS (Arm Cortex-A72 APU, PetaLinux): M_AXI_FPD for the two register blocks, S_AXI_FPD
#     for ERNIC's DDR traffic (error, data and response-error buffers, the RQs);
#   * ERNIC (RoCE v2), its AXI4-Lite registers on the APU's interconnect;
#   * the HWHS engine, bitstreams/rtl/hwhs.v (module top), its register file on the APU's AXI;
#   * the ERNIC adapter, bitstreams/rtl/hwhs_ernic_adapter.v: the engine's ERNIC-side ports
#     on one side; on the other an AXI4 slave that ERNIC's masters reach (the SQ, the request
#     buffer, the reply memory, the CQ) and an AXI4-Lite master that writes the SQ doorbell
#     (SQPI) into ERNIC's register space; the data QP runs with QPCONF.hw_handshake_dis = 1
#     (doorbells over AXI), so ERNIC's hardware-handshake sideband ports are tied off;
#   * the addresses of backline-regmap's `pl` map (docs/register-map.md).
#
# ERNIC's Ethernet side (its 512-bit AXI4-Stream to and from a MAC) is board plumbing this
# repository does not have: the MRMAC, its GT quad and clocks on your VPK120 configuration.
# Name a Tcl file that builds it in HWHS_MAC_TCL; it is sourced with ERNIC's stream interfaces
# (ernic/cmac_m_axis, ernic/roce_cmac_s_axis) and its MAC clocks (ernic/cmac_tx_clk,
# ernic/cmac_rx_clk, ernic/cmac_tx_rst, ernic/cmac_rx_rst) to connect. Without it the script
# saves the block design and stops before implementation, saying so.

set build_dir [expr {[llength $argv] > 0 ? [lindex $argv 0] : "vpk120_hwhs_build"}]
set ERNIC_LAYOUT [expr {[llength $argv] > 1 ? [lindex $argv 1] : "v4"}]
set repo [file normalize [file join [file dirname [info script]] .. ..]]
set rtl [file join $repo bitstreams rtl hwhs.v]
set adapter_rtl [file join $repo bitstreams rtl hwhs_ernic_adapter.v]
set part xcvp1202-vsva2785-2MP-e-S

# ---- IP versions (ERNIC's: a layout the firmware supports, backline_board::ernic::Layout) ----
set CIPS_VLNV xilinx.com:ip:versal_cips:3.3
set RESET_VLNV xilinx.com:ip:proc_sys_reset:5.0
set SMARTCONNECT_VLNV xilinx.com:ip:smartconnect:1.0
set CONSTANT_VLNV xilinx.com:ip:xlconstant:1.1
set ERNIC_VLNV_V4 xilinx.com:ip:ernic:4.0
set ERNIC_VLNV_V3 xilinx.com:ip:ernic:3.1
switch -- $ERNIC_LAYOUT {
    v4 { set ERNIC_VLNV $ERNIC_VLNV_V4; set ERNIC_REGS_RANGE 2M }
    v3 { set ERNIC_VLNV $ERNIC_VLNV_V3; set ERNIC_REGS_RANGE 256K }
    default { error "hwhs_bd: ERNIC layout `$ERNIC_LAYOUT`: v4 (ERNIC 4.x) or v3 (ERNIC 3.x)" }
}

# ---- addresses (backline_regmap::pl) ----
# The APU's view: the engine's register file and ERNIC's register space (a v4.x ERNIC decodes
# 2 MiB, a v3.x 256 KiB; PG332 Table 3-1). The adapter's AXI4-Lite master sees ERNIC's
# registers at the same address. ERNIC's masters see the adapter's memory.
set HWHS_REGS_BASE 0xA0000000
set HWHS_REGS_RANGE 4K
set ERNIC_REGS_BASE 0xA0200000
set ADAPTER_MEM_BASE 0xA4000000
set ADAPTER_MEM_RANGE 256K
set DDR_BASE 0x00000000
set DDR_RANGE 2G

# ---- the engine's ERNIC-side ports, net by net to the adapter's of the same name ----
set ENGINE_ADAPTER_NETS {sq_wr_en sq_wr_addr sq_wr_data db_valid db_sq_pi db_addr cq_valid \
    cq_wrid rx_wr_en rx_wr_addr rx_wr_data req_rd_addr req_rd_data ernic_err}
# The engine's hw-loop stimulus side: no consumer in this design (a stimulus source of your
# own connects here); left open.
set ENGINE_OPEN_OUTPUTS {tx_valid tx_data}

if {![file exists $adapter_rtl]} {
    error "hwhs_bd: the ERNIC adapter $adapter_rtl is missing: the engine's ports cannot reach \
ERNIC without it (regenerate it: cargo run -p backline-hdl -- generate); stopping"
}

create_project backline_hwhs $build_dir -part $part -force
catch {set_property board_part xilinx.com:vpk120:part0:1.2 [current_project]}
add_files -norecurse [list $rtl $adapter_rtl]
add_files -norecurse [file join $repo bitstreams rtl backline_regmap.vh]
set_property file_type {Verilog Header} [get_files backline_regmap.vh]
update_compile_order -fileset sources_1

create_bd_design hwhs_bd

# ---- processing system, clock and reset ----
set cips [create_bd_cell -type ip -vlnv $CIPS_VLNV cips]
set_property -dict [list CONFIG.PS_PMC_CONFIG { PS_USE_M_AXI_FPD 1 PS_USE_S_AXI_FPD 1 \
    PS_NUM_FABRIC_RESETS 1 PMC_CRP_PL0_REF_CTRL_FREQMHZ 200 }] $cips
create_bd_cell -type ip -vlnv $RESET_VLNV rst_200
connect_bd_net [get_bd_pins cips/pl0_resetn] [get_bd_pins rst_200/ext_reset_in]
connect_bd_net [get_bd_pins cips/pl0_ref_clk] [get_bd_pins rst_200/slowest_sync_clk] \
    [get_bd_pins cips/m_axi_fpd_aclk] [get_bd_pins cips/s_axi_fpd_aclk]

# ---- the control interconnect: APU -> HWHS registers, APU and adapter -> ERNIC registers ----
create_bd_cell -type ip -vlnv $SMARTCONNECT_VLNV ctrl_sc
set_property -dict [list CONFIG.NUM_SI 2 CONFIG.NUM_MI 2] [get_bd_cells ctrl_sc]
connect_bd_intf_net [get_bd_intf_pins cips/M_AXI_FPD] [get_bd_intf_pins ctrl_sc/S00_AXI]

# ---- ERNIC ----
create_bd_cell -type ip -vlnv $ERNIC_VLNV ernic
connect_bd_intf_net [get_bd_intf_pins ctrl_sc/M00_AXI] [get_bd_intf_pins ernic/s_axi_lite]
# ERNIC's masters -> the adapter's memory and DDR.
create_bd_cell -type ip -vlnv $SMARTCONNECT_VLNV ernic_sc
set_property -dict [list CONFIG.NUM_SI 5 CONFIG.NUM_MI 2] [get_bd_cells ernic_sc]
set ERNIC_MASTERS {wqe_proc_top_m_axi resp_hndler_m_axi rx_pkt_hndler_ddr_m_axi \
    rx_pkt_hndler_rdrsp_m_axi qp_mgr_m_axi}
set si 0
foreach m $ERNIC_MASTERS {
    connect_bd_intf_net [get_bd_intf_pins ernic/$m] [get_bd_intf_pins ernic_sc/S0${si}_AXI]
    incr si
}
connect_bd_intf_net [get_bd_intf_pins ernic_sc/M01_AXI] [get_bd_intf_pins cips/S_AXI_FPD]
# The hardware-handshake sideband ports: unused (doorbells travel over AXI).
create_bd_cell -type ip -vlnv $CONSTANT_VLNV zero
set_property -dict [list CONFIG.CONST_VAL {0} CONFIG.CONST_WIDTH {1}] [get_bd_cells zero]
foreach p {i_qp_sq_pidb_wr_valid_hndshk i_qp_rq_cidb_wr_valid_hndshk \
    resp_hndler_i_send_cq_db_rdy rx_pkt_hndler_i_rq_db_rdy ieth_immdt_axis_trdy} {
    connect_bd_net [get_bd_pins zero/dout] [get_bd_pins ernic/$p]
}

# ---- the HWHS engine (a module reference; its AXI4-Lite port inferred from axi_*) ----
create_bd_cell -type module -reference top hwhs
connect_bd_intf_net [get_bd_intf_pins ctrl_sc/M01_AXI] [get_bd_intf_pins hwhs/axi]

# ---- the ERNIC adapter ----
create_bd_cell -type module -reference hwhs_ernic_adapter adapter
set_property CONFIG.ASSOCIATED_BUSIF {s_axi:m_axil} [get_bd_pins adapter/clock]
set_property CONFIG.ASSOCIATED_RESET {aresetn} [get_bd_pins adapter/clock]
foreach p $ENGINE_ADAPTER_NETS {
    connect_bd_net [get_bd_pins hwhs/$p] [get_bd_pins adapter/$p]
}
connect_bd_intf_net [get_bd_intf_pins ernic_sc/M00_AXI] [get_bd_intf_pins adapter/s_axi]
connect_bd_intf_net [get_bd_intf_pins adapter/m_axil] [get_bd_intf_pins ctrl_sc/S01_AXI]

# ---- one 200 MHz clock and its reset for everything but the MAC side ----
connect_bd_net [get_bd_pins cips/pl0_ref_clk] [get_bd_pins hwhs/clock] \
    [get_bd_pins adapter/clock] [get_bd_pins ctrl_sc/aclk] [get_bd_pins ernic_sc/aclk] \
    [get_bd_pins ernic/m_axi_aclk] [get_bd_pins ernic/s_axi_lite_aclk]
connect_bd_net [get_bd_pins rst_200/peripheral_aresetn] [get_bd_pins adapter/aresetn] \
    [get_bd_pins ctrl_sc/aresetn] [get_bd_pins ernic_sc/aresetn] \
    [get_bd_pins ernic/m_axi_aresetn] [get_bd_pins ernic/s_axi_lite_aresetn]

# ---- addresses ----
assign_bd_address -offset $HWHS_REGS_BASE -range $HWHS_REGS_RANGE \
    -target_address_space [get_bd_addr_spaces cips/M_AXI_FPD] [get_bd_addr_segs hwhs/axi/reg0]
assign_bd_address -offset $ERNIC_REGS_BASE -range $ERNIC_REGS_RANGE \
    -target_address_space [get_bd_addr_spaces cips/M_AXI_FPD] [get_bd_addr_segs ernic/s_axi_lite/Reg]
assign_bd_address -offset $ERNIC_REGS_BASE -range $ERNIC_REGS_RANGE \
    -target_address_space [get_bd_addr_spaces adapter/m_axil] [get_bd_addr_segs ernic/s_axi_lite/Reg]
foreach m $ERNIC_MASTERS {
    assign_bd_address -offset $ADAPTER_MEM_BASE -range $ADAPTER_MEM_RANGE \
        -target_address_space [get_bd_addr_spaces ernic/$m] [get_bd_addr_segs adapter/s_axi/reg0]
    assign_bd_address -offset $DDR_BASE -range $DDR_RANGE \
        -target_address_space [get_bd_addr_spaces ernic/$m] [get_bd_addr_segs cips/S_AXI_FPD/*DDR_LOW0*]
}

# ---- ERNIC's Ethernet side ----
if {![info exists ::env(HWHS_MAC_TCL)]} {
    save_bd_design
    puts "hwhs_bd: engine, adapter and ERNIC ($ERNIC_VLNV) wired and addressed. ERNIC's \
Ethernet side needs your board's MAC: set HWHS_MAC_TCL=path/to/mac.tcl (see the header) and \
rerun; stopping before implementation."
    return
}
source $::env(HWHS_MAC_TCL)

validate_bd_design
save_bd_design
make_wrapper -files [get_files hwhs_bd.bd] -top
add_files -norecurse [glob $build_dir/backline_hwhs.gen/sources_1/bd/hwhs_bd/hdl/hwhs_bd_wrapper.v]
set_property top hwhs_bd_wrapper [current_fileset]
# On Versal the bitstream step is write_device_image (the PDI); write_bitstream of older
# families.
launch_runs impl_1 -to_step write_device_image -jobs 8
wait_on_run impl_1
