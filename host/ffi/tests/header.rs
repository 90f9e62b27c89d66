//! The checked-in C header is what cbindgen generates from the current source.

#[test]
fn header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).unwrap();
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_src(format!("{dir}/src/lib.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen")
        .write(&mut out);
    let path = format!("{dir}/include/backline.h");
    if std::env::var_os("BACKLINE_BLESS").is_some() {
        std::fs::write(&path, &out).unwrap();
    }
    let on_disk = std::fs::read(&path).unwrap_or_default();
    assert!(
        on_disk == out,
        "include/backline.h is stale: run `BACKLINE_BLESS=1 cargo test -p backline-ffi --test header`"
    );
}
