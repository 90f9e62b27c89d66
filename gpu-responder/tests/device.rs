//! The kernel checks of `tests/emulation.rs` on a real GPU (CUDA or HIP, whichever the
//! machine has, or `BACKLINE_GPU_BACKEND`). On a machine without one every test says
//! `skipped: no GPU` and passes. Product-sum is compared loosely here: the device's tanh and
//! log are not glibc's, so a rare near-tie may decode differently; min-sum must be
//! bit-identical.

mod common;

use std::sync::OnceLock;

use backline_gpu::{Backend, Error, GpuCoprocessor, GpuFunction, GpuOptions};

/// The device's options, or `None` (and a message) when there is no GPU.
fn device() -> Option<GpuOptions> {
    static PROBE: OnceLock<Option<GpuOptions>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let mut o = GpuOptions::from_env().unwrap_or_default();
            if o.backend == Backend::Emu {
                o.backend = Backend::Auto;
            }
            match GpuCoprocessor::launch("probe", o.clone(), vec![(0, GpuFunction::Echo)]) {
                Ok(g) => {
                    eprintln!("device tests on {}", g.device());
                    Some(o)
                }
                Err(Error::NoDriver(why) | Error::NoDevice(why)) => {
                    eprintln!("skipped: no GPU ({why})");
                    None
                }
                Err(e) => panic!("the GPU is there but the kernel does not start: {e}"),
            }
        })
        .clone()
}

fn on_gpu(threads: u32) -> GpuOptions {
    GpuOptions {
        threads: (threads > 1).then_some(threads.max(32)),
        ..device().expect("probed")
    }
}

macro_rules! device_test {
    ($name:ident, $body:expr) => {
        #[test]
        fn $name() {
            if device().is_none() {
                eprintln!("skipped: no GPU");
                return;
            }
            $body
        }
    };
}

device_test!(echo_and_steane_answer, common::echo_and_steane(on_gpu));
device_test!(bposd_hgp13, common::code_checks(on_gpu, "hgp13", false));
device_test!(
    bposd_surface5,
    common::code_checks(on_gpu, "surface5", false)
);
device_test!(bposd_bb72, common::code_checks(on_gpu, "bb72", false));
device_test!(bposd_bb144, common::code_checks(on_gpu, "bb144", false));
device_test!(bad_lengths, common::bad_lengths(on_gpu));
device_test!(attach_and_resume, common::attach_and_resume(on_gpu));
device_test!(user_kernels, common::user_kernels(on_gpu));
device_test!(floor, common::floor(on_gpu));
