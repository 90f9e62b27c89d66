#!/usr/bin/env bash
# Installs everything the test suite needs on a Debian 12 machine: system packages, Python
# packages and Rust targets. Safe to run twice. Needs root (or sudo) for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(
    build-essential pkg-config
    verilator yosys iverilog
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: apt packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python packages for the dev-only and RTL checks live in a venv inside the repo.
for f in scripts/deps.d/*.sh; do
    [ -e "$f" ] || continue
    # shellcheck disable=SC1090
    . "$f"
done
echo "install-deps: done"
