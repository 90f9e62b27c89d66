# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`, `apt_install` defined): what
# scripts/test.d/40-firmware.sh needs to cross-build backline-apu for the board's Arm cores
# as a static binary and to run the result — Debian's aarch64 cross linker, qemu-user, and
# the musl Rust target of the pinned toolchain (which brings musl's libc and start files).
# Safe to run twice.
FW_APT_PACKAGES=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
apt_install "${FW_APT_PACKAGES[@]}"
# rustup reads rust-toolchain.toml here, so the target goes to the pinned toolchain.
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-musl; then
    echo "install-deps: rustup target add aarch64-unknown-linux-musl"
    rustup target add aarch64-unknown-linux-musl
fi
