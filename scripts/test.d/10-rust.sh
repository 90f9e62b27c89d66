#!/usr/bin/env bash
# Formatting, lints and every Rust test of the workspace.
set -euo pipefail
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
