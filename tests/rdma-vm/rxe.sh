# Sourced by the guest scripts (bash, in the VM, repository root): the Soft-RoCE set-up and
# the helpers they share. Expects $OUT and $BIN.
DEV=rxe0
GID=1
ADDR=10.77.0.1
SERVE_LOG=/run/serve.log
SERVE_WHY=

status() { echo "$*" >>"$OUT/status"; echo "guest: $*"; }
elapsed() { cut -d' ' -f1 /proc/uptime; }

# Runs the release binary from the guest's own memory, not from the host's root over 9p: a
# copy in /run (tmpfs) checked against the sha256 the host took before the boot
# ($OUT/binaries.sha256, written by run.sh). A page of an executable that 9p reads back other
# than it was (a file rewritten in place on the host during the run, or a read that goes wrong)
# would be a crash with no message; here it is a named difference. (A rebuild that replaces
# the file, as cargo does, is not one: the guest goes on reading the file it found first.)
# Sets BIN.
stage_bin() {
    local want got try
    want=$(awk -v p="$BIN" '$2 == p { print $1 }' "$OUT/binaries.sha256" 2>/dev/null)
    mkdir -p /run/bin
    for try in 1 2 3; do
        got=$(cp "$BIN" /run/bin/backline && sha256sum /run/bin/backline | cut -d' ' -f1)
        if [ -n "$want" ] && [ "$got" = "$want" ]; then
            BIN=/run/bin/backline
            status "stage ok: $BIN, sha256 ${want:0:16}… as on the host (copy $try)"
            return 0
        fi
        echo "guest: copy $try of $BIN has sha256 ${got:-none}, the host's ${want:-unknown}"
    done
    status "stage FAILED: $BIN read over 9p differs from the host's build (sha256 ${got:-none} against ${want:-unknown}); running it from the share"
    return 1
}

# What an exit status $1 says beyond its number: for a death by a signal (above 128; not
# timeout's 124) the signal's name, the kernel's last lines about a fault (faulting address,
# instruction pointer and the file mapped there) and whether the binary still matches the
# host's build. Empty for any other exit.
death() {
    local rc=$1 sig kern same
    [ "$rc" -gt 128 ] 2>/dev/null || return 0
    sig=$(kill -l $((rc - 128)) 2>/dev/null || echo "$((rc - 128))")
    kern=$(dmesg 2>/dev/null | grep -E 'segfault at|traps:|general protection|invalid opcode|Killed process' \
        | tail -2 | tr '\n' ' ')
    same=$(sha256sum "$BIN" 2>/dev/null | cut -d' ' -f1)
    grep -q "^$same " "$OUT/binaries.sha256" 2>/dev/null && same="unchanged" || same="CHANGED (sha256 ${same:-unreadable})"
    echo "; died of SIG$sig; kernel: ${kern:-nothing logged}; $BIN $same"
}

# rxe0 on a dummy interface with a private address: RoCE v2 traffic to our own GID is looped
# back inside rdma_rxe, so no packet leaves the VM.
setup_rxe() {
    ip link set lo up
    # rdma_rxe computes its ICRC with crc32: load the implementations first, or it cannot
    # start.
    local m
    for m in crc32_generic crc32_pclmul rdma_rxe dummy; do
        modprobe "$m" || echo "guest: modprobe $m failed"
    done
    ip link add dummy0 type dummy
    ip addr add "$ADDR/24" dev dummy0
    ip link set dummy0 up
    if ! rdma link add "$DEV" type rxe netdev dummy0; then
        status "setup FAILED: rdma link add $DEV"
        return 1
    fi
    for _ in $(seq 100); do
        [ "$(cat /sys/class/infiniband/$DEV/ports/1/gid_attrs/types/$GID 2>/dev/null)" = "RoCE v2" ] && break
        sleep 0.1
    done
    {
        echo "kernel $(uname -r), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
        rdma link show
        echo "GID $GID of $DEV: $(cat /sys/class/infiniband/$DEV/ports/1/gids/$GID) ($(cat /sys/class/infiniband/$DEV/ports/1/gid_attrs/types/$GID))"
    } | tee "$OUT/setup.txt"
    status "setup ok at $(elapsed) s"
}

# perftest's ib_write_lat, server on CPU 1 and client on CPU 0 (the placement of backline's
# serve and bench): write_lat OUTPUT ITERATIONS.
write_lat() {
    taskset -c 1 timeout 120 ib_write_lat -d "$DEV" -x "$GID" -F -n "$2" >"$1.server" 2>&1 &
    local srv=$!
    sleep 1
    timeout 120 taskset -c 0 ib_write_lat -d "$DEV" -x "$GID" -F -n "$2" "$ADDR" >"$1" 2>&1
    local rc=$?
    wait $srv
    return $rc
}

# backline serve --transport rdma on $ADDR:7878 (steane unless the flags say otherwise); waits for
# its ready line. Sets SERVE_PID.
serve() {
    rm -f /run/serve.ready
    "$BIN" serve --transport rdma --device "$DEV" --gid-index "$GID" --bind "$ADDR:7878" \
        "$@" >/run/serve.ready 2>"$SERVE_LOG" &
    SERVE_PID=$!
    for _ in $(seq 300); do
        grep -q '^ready ' /run/serve.ready 2>/dev/null && return 0
        kill -0 $SERVE_PID 2>/dev/null || break
        sleep 0.1
    done
    local rc=running
    if ! kill -0 $SERVE_PID 2>/dev/null; then
        wait $SERVE_PID
        rc=$?
    fi
    # Why it did not start, in the status line of the step that wanted it.
    SERVE_WHY="(serve exit $rc$(death "$rc"); its stderr ends: $(tail -3 "$SERVE_LOG" | tr '\n' ' '))"
    echo "guest: backline serve $* did not start $SERVE_WHY"
    return 1
}

stop_serve() {
    kill -TERM "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID" 2>/dev/null
}
