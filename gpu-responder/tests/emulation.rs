//! The persistent kernel under host emulation: the same source a GPU runs, on CPU threads,
//! against the same rings through the same launcher. Protocol, layout, stop path and decoders
//! are tested here without a GPU; `tests/device.rs` repeats the checks on a real one. Under
//! emulation even product-sum is bit-identical (the kernels call glibc's tanh and log, as the
//! CPU decoder does).

mod common;

use std::time::{Duration, Instant};

use backline_gpu::{Backend, GpuCoprocessor, GpuFunction, GpuOptions};

fn emu(threads: u32) -> GpuOptions {
    GpuOptions {
        backend: Backend::Emu,
        threads: Some(threads),
        ..GpuOptions::default()
    }
}

#[test]
fn echo_and_steane_answer_and_unknown_ids_get_an_error_reply() {
    common::echo_and_steane(emu);
}

#[test]
fn bposd_is_bit_identical_to_backline_decoders_on_hgp13() {
    common::code_checks(emu, "hgp13", true);
}

#[test]
fn bposd_is_bit_identical_to_backline_decoders_on_surface5() {
    common::code_checks(emu, "surface5", true);
}

#[test]
fn bposd_is_bit_identical_to_backline_decoders_on_bb72() {
    common::code_checks(emu, "bb72", true);
}

#[test]
fn bposd_is_bit_identical_to_backline_decoders_on_bb144() {
    common::code_checks(emu, "bb144", true);
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    common::thread_count_independence(emu, true);
}

#[test]
fn bposd_refuses_bad_lengths_like_the_cpu_decoder() {
    common::bad_lengths(emu);
}

#[test]
fn a_controller_attaches_to_the_rings_directly_and_the_proxy_resumes_after() {
    common::attach_and_resume(emu);
}

#[test]
fn user_kernels_compile_into_the_template_and_report_errors_with_file_and_line() {
    common::user_kernels(emu);
}

#[test]
fn a_kernel_that_never_returns_times_out_and_the_process_carries_on() {
    common::hang(emu);
}

#[test]
fn the_floor_kernel_bounces_and_stops() {
    common::floor(emu);
}

#[test]
fn no_gpu_is_a_clear_error_and_quick() {
    let t0 = Instant::now();
    let auto = GpuCoprocessor::launch("t", GpuOptions::default(), vec![(0, GpuFunction::Echo)]);
    match auto {
        // On a machine with a GPU this test has nothing to check.
        Ok(_) => eprintln!("skipped: a GPU is present"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.starts_with("no GPU: "), "{text}");
            assert!(text.contains("NVIDIA") && text.contains("ROCm"), "{text}");
            assert!(!text.contains('\n'), "one line: {text}");
            assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        }
    }
}
