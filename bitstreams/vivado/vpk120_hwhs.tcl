# Vivado block design for the HWHS engine on the AMD VPK120 (Versal Premium XCVP1202).
#
# Run it yourself, on a machine with Vivado and a licence for the ERNIC IP:
#
#     vivado -mode batch -source bitstreams/vivado/vpk120_hwhs.tcl -tclargs <build-dir>
#
# It is NOT run by this repository's CI (there is no Vivado here) and no bitstream is ever
# checked in. IP version strings below are those of the 2023.x catalogue; if your release
# differs, `get_ipdefs *ernic*` and `get_ipdefs *versal_cips*` show the ones to use.
#
# What it builds:
#   * CIPS (Arm Cortex-A72 APU, PetaLinux) with one M_AXI_FPD master and the NoC to DDR;
#   * ERNIC (RoCE v2) next to the 100G MRMAC, its register space on the APU's AXI;
#   * the HWHS engine: bitstreams/rtl/hwhs.v as an RTL module reference (top module `top`),
#     its AXI4-Lite slave (axi_*) on the APU's AXI at HWHS_BASE, clocked at 200 MHz;
#   * the SQ memory, request buffer and reply memory between ERNIC and the engine.
#
# The engine's ERNIC-side ports are plain memory and strobe ports (sq_wr_*, db_*, cq_*,
# rx_wr_*, req_rd_*; see docs/register-map.md and hdl/README.md). Connecting them to ERNIC's
# AXI master/slave interfaces needs a small adapter (AXI BRAM ports and the doorbell/CQ
# register writes) that this repository does not provide yet; the script stops with a clear
# message before implementation unless HWHS_ADAPTER names that adapter's RTL file.

set build_dir [expr {[llength $argv] > 0 ? [lindex $argv 0] : "vpk120_hwhs_build"}]
set repo [file normalize [file join [file dirname [info script]] .. ..]]
set rtl [file join $repo bitstreams rtl hwhs.v]
set part xcvp1202-vsva2785-2MP-e-S
set HWHS_BASE 0xA4000000

create_project backline_hwhs $build_dir -part $part -force
catch {set_property board_part xilinx.com:vpk120:part0:1.2 [current_project]}
add_files -norecurse $rtl
add_files -norecurse [file join $repo bitstreams rtl backline_regmap.vh]
set_property file_type {Verilog Header} [get_files backline_regmap.vh]
update_compile_order -fileset sources_1

create_bd_design hwhs_bd

# Processing system.
set cips [create_bd_cell -type ip -vlnv xilinx.com:ip:versal_cips:3.3 cips]
set_property -dict [list CONFIG.PS_PMC_CONFIG { PS_USE_M_AXI_FPD 1 PS_NUM_FABRIC_RESETS 1 \
    PMC_CRP_PL0_REF_CTRL_FREQMHZ 200 }] $cips
set rst [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset:5.0 rst_200]
connect_bd_net [get_bd_pins cips/pl0_ref_clk] [get_bd_pins rst_200/slowest_sync_clk]
connect_bd_net [get_bd_pins cips/pl0_resetn] [get_bd_pins rst_200/ext_reset_in]

# Control interconnect: APU -> ERNIC registers, APU -> HWHS registers.
set sc [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect:1.0 ctrl_sc]
set_property -dict [list CONFIG.NUM_SI 1 CONFIG.NUM_MI 2] $sc
connect_bd_intf_net [get_bd_intf_pins cips/M_AXI_FPD] [get_bd_intf_pins ctrl_sc/S00_AXI]
connect_bd_net [get_bd_pins cips/pl0_ref_clk] [get_bd_pins ctrl_sc/aclk] [get_bd_pins cips/m_axi_fpd_aclk]
connect_bd_net [get_bd_pins rst_200/peripheral_aresetn] [get_bd_pins ctrl_sc/aresetn]

# RDMA engine.
set ernic [create_bd_cell -type ip -vlnv xilinx.com:ip:ernic:4.0 ernic]
connect_bd_intf_net [get_bd_intf_pins ctrl_sc/M00_AXI] [get_bd_intf_pins ernic/s_axi_lite]

# The HWHS engine as a module reference; its AXI4-Lite port is inferred from the axi_* names.
set hwhs [create_bd_cell -type module -reference top hwhs]
connect_bd_net [get_bd_pins cips/pl0_ref_clk] [get_bd_pins hwhs/clock]
connect_bd_intf_net [get_bd_intf_pins ctrl_sc/M01_AXI] [get_bd_intf_pins hwhs/axi]
assign_bd_address -offset $HWHS_BASE -range 4K [get_bd_addr_segs hwhs/axi/reg0]
assign_bd_address

if {![info exists ::env(HWHS_ADAPTER)]} {
    save_bd_design
    puts "hwhs_bd: control plane wired. The ERNIC <-> HWHS data ports need the adapter RTL"
    puts "hwhs_bd: (set HWHS_ADAPTER=path/to/adapter.v and rerun); stopping before implementation."
    return
}
add_files -norecurse $::env(HWHS_ADAPTER)
update_compile_order -fileset sources_1
set adapter [create_bd_cell -type module -reference hwhs_ernic_adapter adapter]
foreach p {sq_wr_en sq_wr_addr sq_wr_data db_valid db_sq_pi cq_valid cq_wrid rx_wr_en \
           rx_wr_addr rx_wr_data req_rd_addr req_rd_data} {
    connect_bd_net [get_bd_pins hwhs/$p] [get_bd_pins adapter/$p]
}
validate_bd_design
save_bd_design
make_wrapper -files [get_files hwhs_bd.bd] -top
add_files -norecurse [glob $build_dir/backline_hwhs.gen/sources_1/bd/hwhs_bd/hdl/hwhs_bd_wrapper.v]
set_property top hwhs_bd_wrapper [current_fileset]
launch_runs impl_1 -to_step write_device_image -jobs 8
wait_on_run impl_1
