#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on a GPU machine without a Rust toolchain: the release
# `backline` binary and the device kernel tests, into target/gpu-check/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p backline
dev=$(cargo test --release --locked -p backline-gpu --test device --no-run --message-format=json 2>/dev/null |
      python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "device" and m.get("executable"):
        print(m["executable"])')
mkdir -p target/gpu-check
cp target/release/backline target/gpu-check/
cp "$dev" target/gpu-check/device-tests
cp scripts/gpu-check.sh target/gpu-check/
echo "target/gpu-check: $(ls target/gpu-check | tr '\n' ' ')"
