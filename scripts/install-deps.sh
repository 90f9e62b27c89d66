#!/usr/bin/env bash
# Installs everything the test suite needs on a Debian 12 machine: system packages, Python
# packages and Rust targets. Safe to run twice. Needs root (or sudo) for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# apt_install PKG…: installs those of the Debian packages that are missing, with at most one
# `apt-get update` per run. The scripts in deps.d/ use it too.
APT_UPDATED=0
apt_install() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    echo "install-deps: apt packages: ${missing[*]}"
    if [ "$APT_UPDATED" = 0 ]; then
        $SUDO apt-get update -qq
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

apt_install build-essential pkg-config verilator yosys iverilog

# What each part of the test suite needs beyond that: deps.d/<part>.sh, sourced in order.
for f in scripts/deps.d/*.sh; do
    [ -e "$f" ] || continue
    # shellcheck disable=SC1090
    . "$f"
done
echo "install-deps: done"
