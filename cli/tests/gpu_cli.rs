//! GPU coprocessors from the command line: `gpu:` responders in `bench` (memcpy: the controller
//! attached to the kernel's rings; shm and udp: `backline serve` with its CPU proxy thread),
//! the kernel floor, the proxy hop report, and the bad inputs of the GPU issue. Without a GPU
//! the kernels run under the host emulation (`--gpu-backend emu`).

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_backline");

fn backline(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("BACKLINE_GPU_BACKEND")
        .output()
        .expect("run backline")
}

fn out_dir(tag: &str) -> String {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("gpu-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.display().to_string()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "backline failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).expect("one JSON object")
}

fn has_gpu() -> bool {
    // With a GPU, `auto` finds it; these tests then check the emulation only.
    let o = backline(&[
        "bench",
        "--responder",
        "gpu:echo",
        "--rounds",
        "2",
        "--no-plots",
        "--json",
        "--no-baseline",
        "--out-dir",
        &out_dir("probe"),
    ]);
    o.status.success()
}

#[test]
fn without_a_gpu_bench_fails_at_once_with_one_line() {
    if has_gpu() {
        eprintln!("skipped: a GPU is present");
        return;
    }
    let t0 = Instant::now();
    let o = backline(&["bench", "--responder", "gpu:echo", "--no-plots"]);
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("no GPU"), "{err}");
    assert!(
        err.contains("libcuda.so.1") && err.contains("ROCm"),
        "{err}"
    );
    eprintln!("failed in {took:?}");
    // Generous (a loaded CI machine): the point is no kernel launch, no timeout, no hang.
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn gpu_responders_serve_every_transport_with_every_reply_checked() {
    for (transport, responder) in [
        ("memcpy", "gpu:steane"),
        ("memcpy", "gpu:echo"),
        ("shm", "gpu:steane"),
        ("udp", "gpu:echo"),
    ] {
        let o = backline(&[
            "bench",
            "--transport",
            transport,
            "--responder",
            responder,
            "--gpu-backend",
            "emu",
            "--rounds",
            "3000",
            "--json",
            "--no-plots",
            "--out-dir",
            &out_dir(transport),
        ]);
        let j = json(&o);
        assert_eq!(j["completed"], 3000, "{transport} {responder}: {j}");
        assert_eq!(j["responder"], responder);
        let floor = j["baseline"]["median_ns"].as_f64().unwrap();
        assert!(floor > 0.0, "{j}");
    }
}

#[test]
fn a_memcpy_gpu_run_is_measured_against_the_kernel_floor() {
    let dir = out_dir("floor");
    let o = backline(&[
        "bench",
        "--responder",
        "gpu:steane",
        "--gpu-backend",
        "emu",
        "--rounds",
        "2000",
        "--no-plots",
        "--out-dir",
        &dir,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("floor (gpu kernel)"), "{out}");
    assert!(out.contains("gpu:steane / floor"), "{out}");
    let csv = std::fs::read_to_string(format!("{dir}/bench-memcpy-gpu_steane.csv")).unwrap();
    assert!(
        csv.contains("coprocessor=gpu"),
        "{}",
        &csv[..400.min(csv.len())]
    );
    // Mixing CPU and GPU responders would compare one with the other's floor.
    let o = backline(&[
        "bench",
        "--compare",
        "steane,gpu:steane",
        "--gpu-backend",
        "emu",
        "--rounds",
        "10",
        "--no-plots",
        "--out-dir",
        &dir,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("floors differ"));
}

#[test]
fn bposd_on_the_gpu_answers_over_memcpy_and_through_serve() {
    for transport in ["memcpy", "udp"] {
        let o = backline(&[
            "bench",
            "--transport",
            transport,
            "--responder",
            "gpu:bposd:hgp13:max_iter=10",
            "--gpu-backend",
            "emu",
            "--payload-bytes",
            "1",
            "--rounds",
            "2000",
            "--json",
            "--no-plots",
            "--out-dir",
            &out_dir("bposd"),
        ]);
        let j = json(&o);
        assert_eq!(j["completed"], 2000, "{transport}: {j}");
    }
}

#[test]
fn serve_reports_the_kernel_and_its_proxy_hop_at_shutdown() {
    let mut serve = Command::new(BIN)
        .args([
            "serve",
            "--transport",
            "udp",
            "--bind",
            "127.0.0.1:0",
            "--fn",
            "0=gpu:steane",
            "--gpu-backend",
            "emu",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(serve.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let peer = line
        .strip_prefix("ready ")
        .expect("ready line")
        .trim()
        .to_string();
    let o = backline(&[
        "bench",
        "--transport",
        "udp",
        "--peer",
        &peer,
        "--responder",
        "gpu:steane",
        "--rounds",
        "500",
        "--json",
        "--no-plots",
        "--no-baseline",
        "--out-dir",
        &out_dir("serve"),
    ]);
    assert_eq!(json(&o)["completed"], 500);
    // SIGTERM: the server stops and reports.
    let st = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = serve.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("500 requests served, 0 with an error status"),
        "{err}"
    );
    assert!(err.contains("proxy hop"), "{err}");
    assert!(err.contains("median"), "{err}");
}

#[test]
fn a_user_kernel_that_does_not_compile_is_reported_with_file_and_line() {
    let dir = out_dir("user");
    let src = format!("{dir}/broken.cu");
    std::fs::write(
        &src,
        "BL_USER_FUNCTION bl_u32 dec(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n\
         \x20   return missing_variable;\n\
         }\n",
    )
    .unwrap();
    let o = backline(&[
        "bench",
        "--responder",
        &format!("gpu:{src}:dec"),
        "--gpu-backend",
        "emu",
        "--rounds",
        "10",
        "--no-plots",
        "--out-dir",
        &dir,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{src}:2")), "{err}");
    assert!(err.contains("missing_variable"), "{err}");
    // A working one serves.
    std::fs::write(
        &src,
        "BL_USER_FUNCTION bl_u32 dec(const bl_u8 *in, bl_u32 n, bl_u8 *out, bl_u32 cap, bl_u32 id) {\n\
         \x20   if (n > cap) return BL_USER_FAILED;\n\
         \x20   for (bl_u32 i = bl_tid(); i < n; i += bl_nthreads()) out[i] = in[i];\n\
         \x20   return n;\n\
         }\n",
    )
    .unwrap();
    let o = backline(&[
        "bench",
        "--responder",
        &format!("gpu:{src}:dec"),
        "--gpu-backend",
        "emu",
        "--rounds",
        "500",
        "--json",
        "--no-plots",
        "--no-baseline",
        "--out-dir",
        &dir,
    ]);
    assert_eq!(json(&o)["completed"], 500);
}
