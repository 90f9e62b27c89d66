//! The shipped PTX (`ptx/*.ptx`) is compiled from today's kernel sources: `ptx/SOURCES`
//! records the hash of the translation unit each file was compiled from, and this test, which
//! needs no GPU compiler, fails when a kernel was edited without re-blessing the PTX (the
//! compile test compares the PTX itself where the pinned NVRTC is installed).

#[test]
fn ptx_sources_record_the_kernels_of_today() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/ptx/SOURCES");
    let recorded = std::fs::read_to_string(path).expect("ptx/SOURCES is committed");
    let fresh = backline_gpu::source::ptx_sources_record();
    let stale: Vec<&str> = fresh
        .lines()
        .filter(|l| !l.starts_with('#') && !recorded.lines().any(|r| r == *l))
        .map(|l| l.split_whitespace().next().unwrap_or(l))
        .collect();
    assert!(
        stale.is_empty(),
        "gpu-responder/ptx/{} compiled from other kernel sources than today's: run \
         `BACKLINE_BLESS=1 cargo test -p backline-gpu --test compile` with NVRTC 12.9 \
         (scripts/deps.d/gpu.sh installs it) and commit the PTX with ptx/SOURCES",
        stale.join(" and ")
    );
    assert_eq!(recorded, fresh, "ptx/SOURCES: re-bless it (see above)");
}

#[test]
fn an_edited_kernel_changes_its_record() {
    let (_, unit) = &backline_gpu::source::ptx_sources()[0];
    let edited = format!("{unit}\n// an edit\n");
    assert_ne!(
        backline_gpu::source::fnv1a_64(unit.as_bytes()),
        backline_gpu::source::fnv1a_64(edited.as_bytes())
    );
}
