// The C ABI over the verilated HWHS engine (module `top`). Rust drives it one clock cycle at
// a time: it sets the inputs of the cycle, the rising edge is evaluated, and the outputs of
// the following cycle are read back. All outputs of `top` come from registers, so a cycle's
// outputs never depend on that cycle's inputs.
#include <cstdint>
#include <new>

#include "Vtop.h"
#include "verilated.h"

extern "C" {

// Inputs of one cycle (field order matches `Inputs` in src/backend.rs).
struct bl_inputs {
    uint32_t axi_awaddr, axi_awvalid, axi_wdata, axi_wvalid, axi_bready;
    uint32_t axi_araddr, axi_arvalid, axi_rready;
    uint32_t cq_valid, cq_wrid, rx_wr_en, rx_wr_addr, rx_wr_data, req_rd_addr;
};

// Outputs of one cycle (field order matches `Outputs` in src/backend.rs).
struct bl_outputs {
    uint32_t axi_awready, axi_wready, axi_bresp, axi_bvalid;
    uint32_t axi_arready, axi_rdata, axi_rresp, axi_rvalid;
    uint32_t sq_wr_en, sq_wr_addr, sq_wr_data, db_valid, db_sq_pi;
    uint32_t req_rd_data, tx_valid, tx_data;
};

struct bl_sim {
    VerilatedContext ctx;
    Vtop* top;
};

static void read_outputs(const Vtop* t, bl_outputs* o) {
    o->axi_awready = t->axi_awready;
    o->axi_wready = t->axi_wready;
    o->axi_bresp = t->axi_bresp;
    o->axi_bvalid = t->axi_bvalid;
    o->axi_arready = t->axi_arready;
    o->axi_rdata = t->axi_rdata;
    o->axi_rresp = t->axi_rresp;
    o->axi_rvalid = t->axi_rvalid;
    o->sq_wr_en = t->sq_wr_en;
    o->sq_wr_addr = t->sq_wr_addr;
    o->sq_wr_data = t->sq_wr_data;
    o->db_valid = t->db_valid;
    o->db_sq_pi = t->db_sq_pi;
    o->req_rd_data = t->req_rd_data;
    o->tx_valid = t->tx_valid;
    o->tx_data = t->tx_data;
}

static void write_inputs(Vtop* t, const bl_inputs* i) {
    t->axi_awaddr = i->axi_awaddr;
    t->axi_awvalid = i->axi_awvalid;
    t->axi_wdata = i->axi_wdata;
    t->axi_wstrb = 0xF;
    t->axi_wvalid = i->axi_wvalid;
    t->axi_bready = i->axi_bready;
    t->axi_araddr = i->axi_araddr;
    t->axi_arvalid = i->axi_arvalid;
    t->axi_rready = i->axi_rready;
    t->cq_valid = i->cq_valid;
    t->cq_wrid = i->cq_wrid;
    t->rx_wr_en = i->rx_wr_en;
    t->rx_wr_addr = i->rx_wr_addr;
    t->rx_wr_data = i->rx_wr_data;
    t->req_rd_addr = i->req_rd_addr;
    // The simulated board's ERNIC model serves the engine's ports directly (no adapter in
    // between), so no ERNIC-side AXI error ever reaches the engine here.
    t->ernic_err = 0;
}

static inline void edge(Vtop* t) {
    t->clock = 1;
    t->eval();
    t->clock = 0;
    t->eval();
}

// A new engine in its power-up state; its outputs of cycle 0 go to `out`. NULL when out of
// memory. Never throws.
bl_sim* bl_new(bl_outputs* out) noexcept {
    bl_sim* s = new (std::nothrow) bl_sim;
    if (!s) return nullptr;
    s->top = new (std::nothrow) Vtop(&s->ctx, "top");
    if (!s->top) {
        delete s;
        return nullptr;
    }
    s->top->clock = 0;
    bl_inputs zero = {};
    write_inputs(s->top, &zero);
    s->top->eval();
    read_outputs(s->top, out);
    return s;
}

void bl_free(bl_sim* s) noexcept {
    if (!s) return;
    s->top->final();
    delete s->top;
    delete s;
}

// One cycle: apply `in`, rising edge, outputs of the next cycle into `out`.
void bl_tick(bl_sim* s, const bl_inputs* in, bl_outputs* out) noexcept {
    write_inputs(s->top, in);
    edge(s->top);
    read_outputs(s->top, out);
}

// Up to `max` cycles with `in` held, stopping before a cycle whose outputs carry an event
// (SQ write, doorbell, correction, AXI response). Returns the cycles run; `out` holds the
// outputs of the cycle it stopped at.
uint64_t bl_run_idle(bl_sim* s, const bl_inputs* in, bl_outputs* out, uint64_t max) noexcept {
    Vtop* t = s->top;
    write_inputs(t, in);
    uint64_t n = 0;
    while (n < max) {
        if (t->sq_wr_en | t->db_valid | t->tx_valid | t->axi_bvalid | t->axi_rvalid) break;
        edge(t);
        ++n;
    }
    read_outputs(t, out);
    return n;
}

}  // extern "C"
