//! The one module that touches the Verilator model: the C ABI of `shim/shim.cpp` behind a safe
//! RAII wrapper, or — when the crate was built without Verilator — a stand-in whose
//! constructor fails with [`SimError::NoVerilator`](crate::SimError::NoVerilator).

/// Inputs of one cycle. Layout shared with `bl_inputs` in `shim/shim.cpp`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inputs {
    /// AXI4-Lite write address.
    pub axi_awaddr: u32,
    /// AXI4-Lite write address valid.
    pub axi_awvalid: u32,
    /// AXI4-Lite write data.
    pub axi_wdata: u32,
    /// AXI4-Lite write data valid.
    pub axi_wvalid: u32,
    /// AXI4-Lite write response ready.
    pub axi_bready: u32,
    /// AXI4-Lite read address.
    pub axi_araddr: u32,
    /// AXI4-Lite read address valid.
    pub axi_arvalid: u32,
    /// AXI4-Lite read data ready.
    pub axi_rready: u32,
    /// ERNIC completion indication.
    pub cq_valid: u32,
    /// Work-request id of the completion.
    pub cq_wrid: u32,
    /// Inbound write into the reply memory.
    pub rx_wr_en: u32,
    /// Inbound write word address.
    pub rx_wr_addr: u32,
    /// Inbound write data.
    pub rx_wr_data: u32,
    /// Request buffer read address.
    pub req_rd_addr: u32,
}

/// Outputs of one cycle. Layout shared with `bl_outputs` in `shim/shim.cpp`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outputs {
    /// AXI4-Lite write address ready.
    pub axi_awready: u32,
    /// AXI4-Lite write data ready.
    pub axi_wready: u32,
    /// AXI4-Lite write response.
    pub axi_bresp: u32,
    /// AXI4-Lite write response valid.
    pub axi_bvalid: u32,
    /// AXI4-Lite read address ready.
    pub axi_arready: u32,
    /// AXI4-Lite read data.
    pub axi_rdata: u32,
    /// AXI4-Lite read response.
    pub axi_rresp: u32,
    /// AXI4-Lite read data valid.
    pub axi_rvalid: u32,
    /// SQ memory write enable.
    pub sq_wr_en: u32,
    /// SQ memory byte address.
    pub sq_wr_addr: u32,
    /// SQ memory write data.
    pub sq_wr_data: u32,
    /// Doorbell write.
    pub db_valid: u32,
    /// SQ producer index of the doorbell.
    pub db_sq_pi: u32,
    /// Request buffer word (address of the previous cycle).
    pub req_rd_data: u32,
    /// Correction to the stimulus side.
    pub tx_valid: u32,
    /// The correction.
    pub tx_data: u32,
}

#[cfg(backline_verilator)]
mod imp {
    use super::{Inputs, Outputs};
    use crate::SimError;

    #[repr(C)]
    struct RawSim {
        _private: [u8; 0],
    }

    unsafe extern "C" {
        fn bl_new(out: *mut Outputs) -> *mut RawSim;
        fn bl_free(s: *mut RawSim);
        fn bl_tick(s: *mut RawSim, inp: *const Inputs, out: *mut Outputs);
        fn bl_run_idle(s: *mut RawSim, inp: *const Inputs, out: *mut Outputs, max: u64) -> u64;
    }

    /// The verilated engine; owns its C++ object.
    pub struct Backend {
        raw: std::ptr::NonNull<RawSim>,
    }

    // SAFETY: the C++ model has no thread affinity and is only reached through `&mut self`,
    // so moving it to another thread is sound.
    unsafe impl Send for Backend {}

    impl Backend {
        pub const AVAILABLE: bool = true;

        pub fn new(out: &mut Outputs) -> Result<Backend, SimError> {
            // SAFETY: `out` is a valid, writable `Outputs` whose layout matches `bl_outputs`;
            // `bl_new` does not throw (noexcept) and returns NULL on allocation failure.
            let raw = unsafe { bl_new(out) };
            std::ptr::NonNull::new(raw)
                .map(|raw| Backend { raw })
                .ok_or(SimError::OutOfMemory)
        }

        #[inline]
        pub fn tick(&mut self, inp: &Inputs, out: &mut Outputs) {
            // SAFETY: `raw` came from `bl_new` and is freed only in `drop`; both structs are
            // valid `repr(C)` mirrors of the shim's; `&mut self` makes the call exclusive.
            unsafe { bl_tick(self.raw.as_ptr(), inp, out) }
        }

        #[inline]
        pub fn run_idle(&mut self, inp: &Inputs, out: &mut Outputs, max: u64) -> u64 {
            // SAFETY: as in `tick`.
            unsafe { bl_run_idle(self.raw.as_ptr(), inp, out, max) }
        }
    }

    impl Drop for Backend {
        fn drop(&mut self) {
            // SAFETY: `raw` came from `bl_new` and is not used after this call.
            unsafe { bl_free(self.raw.as_ptr()) }
        }
    }
}

#[cfg(not(backline_verilator))]
mod imp {
    use super::{Inputs, Outputs};
    use crate::SimError;

    /// Stand-in when the crate was built without Verilator: it cannot be constructed.
    pub struct Backend {
        never: std::convert::Infallible,
    }

    impl Backend {
        pub const AVAILABLE: bool = false;

        pub fn new(_out: &mut Outputs) -> Result<Backend, SimError> {
            Err(SimError::NoVerilator)
        }

        pub fn tick(&mut self, _inp: &Inputs, _out: &mut Outputs) {
            match self.never {}
        }

        pub fn run_idle(&mut self, _inp: &Inputs, _out: &mut Outputs, _max: u64) -> u64 {
            match self.never {}
        }
    }
}

pub use imp::Backend;
