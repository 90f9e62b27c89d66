# Sourced by scripts/install-deps.sh (repository root, `set -euo pipefail`, `apt_install` defined): what
# scripts/test.d/50-rdma-vm.sh needs to test the rdma transport over real verbs inside a VM —
# qemu (TCG), Debian's kernel image and modules (Soft-RoCE: rdma_rxe), a static busybox for
# the initramfs, rdma-core's libibverbs with the rxe provider and headers, perftest's
# ib_write_lat, and iproute2's `rdma` tool. The kernel is only booted inside qemu, never on
# this machine. Safe to run twice.
RDMA_APT_PACKAGES=(
    qemu-system-x86 linux-image-amd64 busybox-static
    rdma-core libibverbs1 ibverbs-providers libibverbs-dev perftest
    iproute2 kmod cpio util-linux
)
apt_install "${RDMA_APT_PACKAGES[@]}"
