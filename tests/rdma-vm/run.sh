#!/usr/bin/env bash
# The rdma transport over real verbs: boots Debian's kernel under qemu (TCG, so no KVM is
# needed) with a small busybox initramfs that mounts this machine's root read-only over 9p;
# inside, guest.sh creates a Soft-RoCE device and runs backline serve/bench over rdma and
# perftest's ib_write_lat in the same boot. Prints both tables side by side.
#
# Fails if the rdma rounds, the bad-input cases or the rdma tests fail; never on a timing.
# Skips, visibly, where qemu cannot run. Needs what scripts/deps.d/rdma.sh installs.
#
# Environment: BACKLINE_VM_ROUNDS (default 100000), BACKLINE_VM_SIM_ROUNDS (rounds of the
# simulated board bridged over rdma, default 20: each costs 0.3 to a few seconds under TCG),
# BACKLINE_VM_CPUS (2),
# BACKLINE_VM_KERNEL (default: the newest /boot/vmlinuz-*-amd64 with rdma_rxe),
# BACKLINE_VM_TIMEOUT (s, 1800: a cold CI run's VM took 760 s, one beside other jobs 1175 s;
# the guest's Python steps import JAX through PennyLane, slow under TCG), BACKLINE_VM_GUEST
# (another guest script to run instead of tests/rdma-vm/guest.sh, e.g. for measurements; path
# relative to the repository).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=target/rdma-vm
ROUNDS=${BACKLINE_VM_ROUNDS:-100000}
SIM_ROUNDS=${BACKLINE_VM_SIM_ROUNDS:-20}
CPUS=${BACKLINE_VM_CPUS:-2}
t_start=$(date +%s)

skip() { echo "50-rdma-vm: SKIPPED: $*"; echo "50-rdma-vm: the rdma transport was NOT tested on this machine"; exit 0; }
fail() { echo "50-rdma-vm: FAILED: $*" >&2; exit 1; }

case "$ROOT" in *[[:space:]]*) fail "the repository path must not contain spaces (it goes on the kernel command line)";; esac
[ "$(uname -m)" = x86_64 ] || skip "the VM image is x86-64 and this machine is $(uname -m)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed (scripts/install-deps.sh installs it)"
if ! echo quit | timeout 30 qemu-system-x86_64 -machine none -nodefaults -display none -monitor stdio >/dev/null 2>&1; then
    skip "qemu-system-x86_64 cannot start here"
fi

# The guest kernel: Debian's, with its modules on this machine (the guest loads them from
# the host's root).
kernel=${BACKLINE_VM_KERNEL:-}
if [ -z "$kernel" ]; then
    for k in $(ls -1v /boot/vmlinuz-*-amd64 2>/dev/null | tac); do
        v=${k#/boot/vmlinuz-}
        if [ -e "/lib/modules/$v/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko" ]; then kernel=$k; break; fi
    done
fi
[ -n "$kernel" ] && [ -r "$kernel" ] || fail "no readable Debian kernel with rdma_rxe in /boot: run scripts/install-deps.sh (linux-image-amd64)"
kver=${kernel#/boot/vmlinuz-}
for tool in busybox ib_write_lat rdma ip modprobe taskset cpio python3; do
    command -v "$tool" >/dev/null || fail "$tool missing: run scripts/install-deps.sh"
done
busybox=$(command -v busybox)
# The initramfs has no libc: busybox must be the static build.
if ldd "$busybox" >/dev/null 2>&1; then fail "$busybox is dynamically linked: install busybox-static"; fi
ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so >/dev/null 2>&1 || fail "the rxe verbs provider is missing: run scripts/install-deps.sh (ibverbs-providers)"

# What the guest runs: the release binary and the transport's test binaries.
echo "-- cargo build --release -p backline"
t0=$(date +%s)
cargo build -q --release --locked -p backline
BIN=$ROOT/target/release/backline
echo "-- cargo test --no-run -p backline-transport"
TESTS=$(cargo test -q --locked -p backline-transport --no-run --message-format=json 2>/dev/null \
    | python3 -c '
import json, sys
exes = []
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("backline_transport", "sessions"):
        exes.append(m["executable"])
print(",".join(exes))')
[ -n "$TESTS" ] || fail "could not find the transport's test binaries"
echo "   built in $(( $(date +%s) - t0 )) s"

# The initramfs: static busybox, the 9p/virtio modules of the guest kernel, /init.
rm -rf "$OUT" && mkdir -p "$OUT/initramfs/bin" "$OUT/initramfs/modules" "$OUT/share"
for d in proc sys dev host; do mkdir -p "$OUT/initramfs/$d"; done
cp "$busybox" "$OUT/initramfs/bin/busybox"
for m in 9p 9pnet_virtio virtio_pci; do
    modprobe -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | while read -r ko; do
    b=$(basename "$ko")
    [ -e "$OUT/initramfs/modules/$b" ] && continue
    case "$ko" in
        *.ko) cp "$ko" "$OUT/initramfs/modules/$b" ;;
        *.ko.xz) xz -dc "$ko" >"$OUT/initramfs/modules/${b%.xz}"; b=${b%.xz} ;;
        *.ko.zst) zstd -qdc "$ko" >"$OUT/initramfs/modules/${b%.zst}"; b=${b%.zst} ;;
        *) fail "unexpected module file $ko" ;;
    esac
    echo "$b" >>"$OUT/initramfs/modules/order"
done
install -m 755 tests/rdma-vm/init.sh "$OUT/initramfs/init"
# What the guest must read back over 9p: it runs its own copy of the binary only if the copy's
# sha256 is this (rxe.sh's stage_bin), and names a binary that changed when a command dies.
sha256sum "$BIN" ${TESTS//,/ } >"$OUT/share/binaries.sha256"
(cd "$OUT/initramfs" && find . | cpio -o -H newc --quiet | gzip -1) >"$OUT/initramfs.cpio.gz"

echo "-- booting $kver under qemu (TCG, $CPUS CPUs); guest console follows"
t0=$(date +%s)
set +e
timeout "${BACKLINE_VM_TIMEOUT:-1800}" qemu-system-x86_64 \
    -machine q35 -accel tcg,thread=multi -cpu max -smp "$CPUS" -m 1024 \
    -display none -nodefaults -no-reboot \
    -chardev stdio,id=con,signal=off -serial chardev:con \
    -kernel "$kernel" -initrd "$OUT/initramfs.cpio.gz" \
    -append "console=ttyS0 quiet panic=-1 clocksource=tsc tsc=reliable rdinit=/init backline.repo=$ROOT backline.bin=$BIN backline.tests=$TESTS backline.rounds=$ROUNDS backline.simrounds=$SIM_ROUNDS backline.guest=${BACKLINE_VM_GUEST:-tests/rdma-vm/guest.sh} backline.other=${BACKLINE_VM_OTHER:-}" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$ROOT/$OUT/share,mount_tag=outshare,security_model=none" \
    </dev/null 2>&1 | tee "$OUT/console.log" | sed -u 's/^/   vm| /'
qrc=${PIPESTATUS[0]}
set -e
vm_s=$(( $(date +%s) - t0 ))
[ "$qrc" = 124 ] && fail "the VM did not finish within ${BACKLINE_VM_TIMEOUT:-1800} s (console: $OUT/console.log)"
[ -s "$OUT/share/status" ] || fail "the guest wrote no results (qemu exit $qrc; console: $OUT/console.log)"

python3 tests/rdma-vm/report.py "$OUT/share" "$vm_s" "$(( $(date +%s) - t_start ))"
