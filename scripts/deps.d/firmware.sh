# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`, $SUDO set): what
# scripts/test.d/40-firmware.sh needs to cross-build backline-apu for the board's Arm cores
# and to run the result — Debian's aarch64 cross linker and libc, qemu-user, and the Rust
# target of the pinned toolchain. Safe to run twice.
FW_APT_PACKAGES=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
fw_missing=()
for p in "${FW_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || fw_missing+=("$p")
done
if [ ${#fw_missing[@]} -gt 0 ]; then
    echo "install-deps: apt packages: ${fw_missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${fw_missing[@]}"
fi
# rustup reads rust-toolchain.toml here, so the target goes to the pinned toolchain.
if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    echo "install-deps: rustup target add aarch64-unknown-linux-gnu"
    rustup target add aarch64-unknown-linux-gnu
fi
