#!/usr/bin/env bash
# The board build of backline-apu: cross-compile it for aarch64 without the simulator (no
# Verilator, no C++ cross compiler), as one static binary (musl, so it runs on a PetaLinux
# image whatever its glibc; the linker settings are in .cargo/config.toml), check that it is
# static, then smoke-test the binary under qemu-user: --help and
# --version, and the board code path (memmap2 windows, safe-mmio's aarch64 accesses) against
# file-backed register windows — info, the refusal of a foreign register space, reset — plus
# a config refusal; and the board build's crate graph has no path to the Verilator model.
# The simulated-board tests of the crate run with `cargo test` (scripts/test.d/10-rust.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=aarch64-unknown-linux-musl
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
    command -v "$tool" >/dev/null || { echo "40-firmware: $tool missing: run scripts/install-deps.sh" >&2; exit 1; }
done
rustup target list --installed | grep -qx "$TARGET" \
    || { echo "40-firmware: rust target $TARGET missing: run scripts/install-deps.sh" >&2; exit 1; }

echo "-- cargo build --release -p backline-apu --no-default-features --target $TARGET"
t0=$(date +%s)
cargo build -q --locked --release -p backline-apu --no-default-features --target "$TARGET"
BIN=target/$TARGET/release/backline-apu
aarch64-linux-gnu-readelf -h "$BIN" | grep -q 'Machine:.*AArch64' || { echo "40-firmware: $BIN is not an aarch64 binary" >&2; exit 1; }
if aarch64-linux-gnu-readelf -lW "$BIN" | grep -q 'INTERP\|Requesting program interpreter'; then
    echo "40-firmware: $BIN asks for a dynamic loader: not static" >&2; exit 1
fi
if aarch64-linux-gnu-readelf -dW "$BIN" 2>/dev/null | grep -q NEEDED; then
    echo "40-firmware: $BIN needs shared libraries: not static" >&2; exit 1
fi
size=$(stat -c %s "$BIN")
aarch64-linux-gnu-strip -o target/backline-apu-aarch64.stripped "$BIN"
echo "   built in $(( $(date +%s) - t0 )) s: $size bytes ($(stat -c %s target/backline-apu-aarch64.stripped) stripped)"

# No -L: a static binary needs no target libraries.
run() { qemu-aarch64 "$BIN" "$@"; }
fail() { echo "40-firmware: $*" >&2; exit 1; }
expect_in() { grep -qF -- "$1" <<<"$2" || fail "expected \`$1\` in: $2"; }

echo "-- qemu-aarch64: --help, --version"
out=$(run --help)
for cmd in info setup run trace reset; do expect_in "  $cmd " "$out"; done
grep -q '^  sim-board ' <<<"$out" && fail "the board build must not have the sim-board command"
expect_in "backline-apu $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1) (board build, no simulated board)" "$(run --version)"
expect_in "--mode <MODE>" "$(run run --help)"

echo "-- qemu-aarch64: the board code path against file-backed windows"
W=target/firmware-smoke
rm -rf "$W" && mkdir -p "$W"
truncate -s 256K "$W/ernic.bin"
truncate -s 256 "$W/hwhs.bin"
poke() { printf "$3" | dd of="$W/$1" bs=1 seek=$(( $2 )) conv=notrunc status=none; }
peek() { od -An -tx4 -j $(( $2 )) -N4 "$W/$1" | tr -d ' '; }
poke ernic.bin 0x20000 '\x01\x04\x00\x00'      # XRNICCONF: enabled, 4 QPs (little-endian)
poke hwhs.bin 0x90 '\x03\x00\x4c\x42'          # VERSION = 0x424C0003 (register map v3)
BE="file:$W/ernic.bin,$W/hwhs.bin"
out=$(run --backend "$BE" info)
expect_in "ERNIC layout   ERNIC v3.x register space (PG332 v3.1)" "$out"
expect_in "ERNIC          v3.x, enabled, 4 QPs" "$out"
expect_in "HWHS           VERSION 0x424c0003, STATUS 0x0 (state IDLE)" "$out"
expect_in '"ernic_layout":"ERNIC v3.x register space (PG332 v3.1)"' "$(run --backend "$BE" info --json)"
out=$(run --backend "$BE" reset)
expect_in "board reset: no QP torn down" "$out"
[ "$(peek ernic.bin 0x20000)" = 00000000 ] || fail "reset did not write XRNICCONF = 0 through the mapping"
[ "$(peek hwhs.bin 0x00)" = 00000004 ] || fail "reset did not write CTRL = soft_reset through the mapping"

echo "-- qemu-aarch64: refusals"
poke ernic.bin 0x2001C '\x00\x00\x04\x00'      # a reserved word of the v3.x space, non-zero
set +e
err=$(run --backend "$BE" info 2>&1); rc=$?
set -e
[ $rc = 2 ] || fail "a foreign register space: exit $rc, expected 2"
expect_in "ERNIC 0x2001c (reserved) reads 0x00040000: reserved offset 0x2001c of the ERNIC v3.x register space" "$err"
poke ernic.bin 0x2001C '\x00\x00\x00\x00'
poke hwhs.bin 0x90 '\x01\x00\x4c\x42'          # VERSION = 0x424C0001: another register map
set +e
err=$(run --backend "$BE" info 2>&1); rc=$?
set -e
[ $rc = 2 ] || fail "an older bitstream: exit $rc, expected 2"
expect_in "HWHS VERSION reads 0x424c0001: expected 0x424c0003" "$err"
sed 's/^number = 2 /number = 1 /' firmware/examples/sim-board.toml > "$W/qp1.toml"
set +e
err=$(run --backend "$BE" setup --config "$W/qp1.toml" 2>&1); rc=$?
set -e
[ $rc = 2 ] || fail "QP 1 config: exit $rc, expected 2"
expect_in "config qp.number = 1: QP 1 is the management QP" "$err"
set +e
err=$(run --backend sim:/nonexistent.sock info 2>&1); rc=$?
set -e
[ $rc = 2 ] || fail "sim backend on the board build: exit $rc, expected 2"
expect_in "built without the \`sim\` feature" "$err"
echo "-- the board build's crate graph: no backline-sim (the Verilator model)"
tree=$(cargo tree -q --locked -p backline-apu --no-default-features -e normal --prefix none)
grep -q '^backline-board ' <<<"$tree" || fail "cargo tree without backline-board: $tree"
if grep -q '^backline-sim ' <<<"$tree"; then fail "the board build depends on backline-sim"; fi
echo "40-firmware: ok"
