#!/bin/busybox sh
# /init of the VM's initramfs (busybox only). Loads the 9p and virtio modules packed next to
# it, mounts the host's root file system read-only over 9p and the results share read-write,
# gives the guest its own /proc, /sys, /dev and a tmpfs /run, then runs the guest script of
# the repository (path from the kernel command line) inside that root, and powers off.
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sys /sys
$bb mount -t devtmpfs dev /dev
for m in $($bb cat /modules/order); do
    $bb insmod "/modules/$m" || echo "vm-init: insmod $m failed"
done
arg() { $bb sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" /proc/cmdline; }
repo=$(arg backline.repo)
# The virtio device may take a moment to appear after its driver loads.
i=0
until $bb mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot /host 2>/dev/null; do
    i=$((i + 1))
    if [ $i -ge 50 ]; then echo "vm-init: cannot mount the host root over 9p"; $bb poweroff -f; fi
    $bb sleep 0.1
done
$bb mount -t proc proc /host/proc
$bb mount -t sysfs sys /host/sys
$bb mount -t devtmpfs dev /host/dev
$bb mkdir -p /host/dev/shm /host/dev/pts 2>/dev/null
# What udev would add: /dev/fd (bash process substitution) and the standard streams.
$bb ln -s /proc/self/fd /host/dev/fd
for i in 0 1 2; do $bb ln -s /proc/self/fd/$i /host/dev/$(echo stdin stdout stderr | $bb cut -d' ' -f$((i + 1))); done
$bb mount -t tmpfs shm /host/dev/shm
$bb mount -t tmpfs run /host/run
$bb mkdir -p /host/run/out
$bb mount -t 9p -o trans=virtio,version=9p2000.L,rw outshare /host/run/out \
    || echo "vm-init: cannot mount the results share"
echo "vm-init: up after $($bb cut -d' ' -f1 /proc/uptime) s"
$bb chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/run TMPDIR=/run OUT=/run/out REPO="$repo" \
    BIN="$(arg backline.bin)" OTHER="$(arg backline.other)" TESTS="$(arg backline.tests)" ROUNDS="$(arg backline.rounds)" \
    SIM_ROUNDS="$(arg backline.simrounds)" \
    /bin/bash "$repo/$(arg backline.guest)"
echo "vm-init: guest script exited with $?"
$bb sync
$bb poweroff -f
