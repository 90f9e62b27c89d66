# Sourced by the guest scripts (bash, in the VM, repository root): the Soft-RoCE set-up and
# the helpers they share. Expects $OUT and $BIN.
DEV=rxe0
GID=1
ADDR=10.77.0.1
SERVE_LOG=/run/serve.log

status() { echo "$*" >>"$OUT/status"; echo "guest: $*"; }
elapsed() { cut -d' ' -f1 /proc/uptime; }

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
    cat "$SERVE_LOG"
    return 1
}

stop_serve() {
    kill -TERM "$SERVE_PID" 2>/dev/null
    wait "$SERVE_PID" 2>/dev/null
}
