#!/usr/bin/env bash
# Formatting, lints and every Rust test of the workspace.
set -euo pipefail
# The GPU kernels compile for real here (NVRTC, ptxas, hipcc, hiprtc): see scripts/deps.d/gpu.sh.
. scripts/gpu-env.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
# The default builds that compile no GPU code (in the workspace run above, the CLI's features
# turn the GPU functions on for every crate): the responders and the C ABI without `gpu`.
cargo test --locked -p backline-responder -p backline-ffi
