//! Builds the C++ half of the Catalyst device (`cpp/catalyst_device.cpp`) into the extension
//! module. Only with the `python` feature: `cargo test` of the Rust half needs no C++.

fn main() {
    println!("cargo::rerun-if-changed=cpp/catalyst_device.cpp");
    if std::env::var_os("CARGO_FEATURE_PYTHON").is_none() {
        return;
    }
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("cpp/catalyst_device.cpp")
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-fvisibility=hidden")
        .compile("backline_catalyst_device");
}
