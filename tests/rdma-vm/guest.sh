#!/bin/bash
# Runs inside the VM (as root, in the host's root file system mounted read-only; /run and
# /dev/shm are the guest's tmpfs, $OUT is the results share). Creates a Soft-RoCE device
# rxe0 on a dummy interface, so no packet leaves the VM, and runs in one boot:
#   1. perftest's ib_write_lat (the reference), half before and half after the rest;
#   2. backline serve + backline bench --transport rdma, steane, $ROUNDS rounds, every reply
#      checked, with the same-run floor (bare RDMA WRITE ping-pong);
#   3. the simulated board bridged to a real coprocessor over rdma: backline serve with
#      BP-OSD (bposd:hgp13) and backline sim --coprocessor rdma:…, $SIM_ROUNDS hw-loop
#      rounds of sampled syndromes, every reply checked against the CPU decoder;
#   4. the CLI's bad-input cases and the fault rows over real verbs (a peer killed, restarted,
#      stopped past the reply timeout and resumed; a controller killed);
#   5. the rdma cases of the transport's tests (test binaries listed in $TESTS).
# Every step writes its output under $OUT and one line "STEP ok|FAILED ..." to $OUT/status.
# The host side (run.sh) prints the report and decides the verdict. Timings never fail.
set -uo pipefail
cd "$REPO" || exit 1
ROUNDS=${ROUNDS:-100000}
# shellcheck source=tests/rdma-vm/rxe.sh
. tests/rdma-vm/rxe.sh
setup_rxe || exit 1
stage_bin

half=$((ROUNDS / 2))
if write_lat "$OUT/ib_write_lat-1.txt" "$half"; then
    status "ib_write_lat-1 ok"
else
    status "ib_write_lat-1 FAILED"
fi

# -- backline serve + bench ------------------------------------------------------------------
# Placement and wait policy as measured for a 2-CPU TCG guest (docs/rdma.md): server on CPU
# 1, controller on CPU 0 (ib_write_lat's placement above), both spinning without ever
# blocking, as ib_write_lat does. A 50 us nap costs ~200 us in this guest, so a spin budget
# of 200 us lets both sides fall into napping in turn for whole runs.
if serve --pin 1 --spin-us -1; then
    t0=$(elapsed)
    timeout 600 "$BIN" bench --transport rdma --device "$DEV" --gid-index "$GID" \
        --peer "$ADDR:7878" --responder steane --rounds "$ROUNDS" --pin 0,1 --spin-us -1 \
        --out-dir "$OUT/bench" --no-plots --quiet >"$OUT/bench.txt" 2>"$OUT/bench.err"
    rc=$?
    t1=$(elapsed)
    stop_serve
    cp "$SERVE_LOG" "$OUT/serve.log"
    if [ $rc = 0 ]; then
        status "bench ok ($ROUNDS steane rounds, every reply checked, $t0..$t1 s)"
    else
        status "bench FAILED (exit $rc$(death $rc)): $(tail -3 "$OUT/bench.err" | tr '\n' ' ')"
    fi
else
    status "bench FAILED: backline serve did not start $SERVE_WHY"
fi

# -- the simulated board's fabric bridged to a real coprocessor over rdma ---------------------
# The simulation runs every cycle of the measured service, and under TCG it simulates about
# a million cycles a second at best: a round whose service the guest stretches to a few
# milliseconds costs seconds, so this step runs few rounds (the default wait policy measured
# fastest here; spinning vCPUs starve the simulating one on a busy host).
SIM_ROUNDS=${SIM_ROUNDS:-20}
if serve --pin 1 --responder bposd:hgp13; then
    t0=$(elapsed)
    timeout 300 taskset -c 0 "$BIN" sim --mode hw-loop --rounds "$SIM_ROUNDS" \
        --coprocessor "rdma:$ADDR:7878" --device "$DEV" --gid-index "$GID" \
        --responder bposd:hgp13 --json \
        --csv "$OUT/sim-rdma.csv" >"$OUT/sim-rdma.json" 2>"$OUT/sim-rdma.err"
    rc=$?
    t1=$(elapsed)
    stop_serve
    verdict=$(python3 - "$OUT/sim-rdma.json" "$SIM_ROUNDS" <<'PY'
import json, sys
try:
    j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except Exception as e:  # noqa: BLE001 - no JSON: the run failed
    print(f"FAILED: no summary ({e})"); sys.exit()
s = j.get("split") or {}
bad = j["mismatches"] != 0 or j["lost"] != 0 or j["rounds"] != int(sys.argv[2])
split = (f"median split of {s['rounds']} rounds: engine {s['engine_cycles']} + fabric "
         f"{s['fabric_cycles']} + service {s['service_cycles']} cycles" if s else
         "no round fitted the 16-bit trace entry (327 us): all saturated or timed out")
print(("FAILED: " if bad else "ok ") +
      f"({j['rounds']} bposd:hgp13 rounds over rdma, {j['mismatches']} mismatches, "
      f"{j['timeouts']} timeouts, {j['lost']} lost; mean measured service "
      f"{j.get('mean_service_ns', 0) / 1e3:.0f} us; {split})")
PY
)
    if [ $rc -gt 1 ]; then
        status "sim-rdma FAILED (exit $rc$(death $rc)): $(tail -3 "$OUT/sim-rdma.err" | tr '\n' ' ')"
    else
        status "sim-rdma $verdict, $t0..$t1 s"
    fi
else
    status "sim-rdma FAILED: backline serve did not start $SERVE_WHY"
fi

if write_lat "$OUT/ib_write_lat-2.txt" "$half"; then
    status "ib_write_lat-2 ok"
else
    status "ib_write_lat-2 FAILED"
fi

# -- bad input through the CLI ---------------------------------------------------------------
expect_error() { # name, expected text, command...
    local name=$1 want=$2
    shift 2
    local t0 t1 out rc
    t0=$(date +%s.%N)
    out=$(timeout 30 "$@" 2>&1)
    rc=$?
    t1=$(date +%s.%N)
    local took
    took=$(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }")
    echo "$name (exit $rc, ${took} s): $out" >>"$OUT/bad-input.txt"
    if [ $rc != 0 ] && [ $rc != 124 ] && grep -qF -- "$want" <<<"$out"; then
        status "bad-input $name ok"
    else
        status "bad-input $name FAILED (exit $rc$(death $rc)): $out"
    fi
}
bench=("$BIN" bench --transport rdma --device "$DEV" --gid-index "$GID" --no-plots --quiet --out-dir /run/bad)
expect_error not-listening "no coprocessor at rdma:$ADDR:7999" "${bench[@]}" --peer "$ADDR:7999" --rounds 10
expect_error no-such-device "RDMA device \`mlx9_9\` does not exist (devices here: $DEV)" \
    "$BIN" bench --transport rdma --device mlx9_9 --peer "$ADDR:7878" --rounds 10 --no-plots --out-dir /run/bad
# rxe has 1024 GID entries, more than a u8 index reaches: 200 is in the table but empty.
expect_error gid-empty "GID index 200 of $DEV port 1 is empty" \
    "$BIN" bench --transport rdma --device "$DEV" --gid-index 200 --peer "$ADDR:7878" --rounds 10 --no-plots --out-dir /run/bad
expect_error gid-out-of-range "invalid value '300' for '--gid-index" \
    "$BIN" bench --transport rdma --device "$DEV" --gid-index 300 --peer "$ADDR:7878" --rounds 10 --no-plots --out-dir /run/bad
expect_error port-out-of-range "port 2 does not exist on $DEV" \
    "$BIN" bench --transport rdma --device "$DEV" --ib-port 2 --peer "$ADDR:7878" --rounds 10 --no-plots --out-dir /run/bad
if serve; then
    expect_error geometry-mismatch "ring geometry mismatch" "${bench[@]}" --peer "$ADDR:7878" --rounds 10 --ring-depth 16
    # A peer killed mid-run: the controller says how many rounds completed.
    (sleep 2; kill -KILL "$SERVE_PID") &
    expect_error peer-killed "rounds completed, then: the coprocessor at rdma:$ADDR:7878 has gone away" \
        "${bench[@]}" --peer "$ADDR:7878" --rounds 1000000 --no-baseline
    wait "$SERVE_PID" 2>/dev/null
    # A server started in its place (the same address) serves the next controller.
    if serve; then
        if out=$(timeout 60 "${bench[@]}" --peer "$ADDR:7878" --rounds 1000 2>&1); then
            status "fault peer-restarted ok (a new server at the same address served the next controller)"
        else
            status "fault peer-restarted FAILED: $out"
        fi
        stop_serve
    else
        status "fault peer-restarted FAILED: backline serve did not start again $SERVE_WHY"
    fi
else
    status "bad-input FAILED: backline serve did not start $SERVE_WHY"
fi
# A peer stopped (SIGSTOP) past the controller's reply timeout: the controller stops with the
# rounds it completed and a timeout; resumed, the peer serves the next controller.
if serve; then
    (sleep 2; kill -STOP "$SERVE_PID") &
    stopper=$!
    expect_error peer-stopped "rounds completed, then: timed out after" \
        "${bench[@]}" --peer "$ADDR:7878" --rounds 1000000 --no-baseline --timeout-ms 500
    wait "$stopper"
    kill -CONT "$SERVE_PID"
    if out=$(timeout 60 "${bench[@]}" --peer "$ADDR:7878" --rounds 1000 2>&1); then
        status "fault peer-resumed ok (the resumed server served the next controller)"
    else
        status "fault peer-resumed FAILED: $out"
    fi
    stop_serve
else
    status "fault peer-stopped FAILED: backline serve did not start $SERVE_WHY"
fi
# A controller killed mid-run: the server notices (its set-up connection closes), ends that
# session and serves the next controller.
if serve; then
    "${bench[@]}" --peer "$ADDR:7878" --rounds 1000000 --no-baseline >/dev/null 2>&1 &
    victim=$!
    sleep 2
    kill -KILL "$victim"
    wait "$victim" 2>/dev/null
    if out=$(timeout 60 "${bench[@]}" --peer "$ADDR:7878" --rounds 1000 2>&1); then
        status "bad-input controller-killed ok (the next controller was served)"
    else
        status "bad-input controller-killed FAILED: $out"
    fi
    stop_serve
    grep -q "stopped after 4 sessions" "$SERVE_LOG" \
        || status "bad-input controller-killed FAILED: $(tail -1 "$SERVE_LOG") (expected 4 sessions: killed, floor, run, floor)"
else
    status "bad-input FAILED: backline serve did not start $SERVE_WHY"
fi

# -- demo 1a: the unchanged Python program of demo 1 over rdma --------------------------------
# The same QNode, seed and noise over memcpy and over rdma must give the same samples, shot by
# shot (the package is installed in the host's .venv-py by scripts/test.d/30-python.sh).
PY="$REPO/.venv-py/bin/python"
if [ -x "$PY" ] && "$PY" -c "import backline" >/dev/null 2>&1; then
    demo=(--shots 300 --seed 7 --noise 0.001)
    if timeout 900 "$PY" examples/01_ghz_memcpy.py "${demo[@]}" --save-samples /run/demo1.txt \
            >"$OUT/demo1.txt" 2>&1 \
        && BACKLINE_SPIN_US=-1 timeout 900 "$PY" examples/01a_ghz_rdma.py "${demo[@]}" \
            --rdma-device "$DEV" --gid-index "$GID" --bind "$ADDR:7878" \
            --save-samples /run/demo1a.txt >"$OUT/demo1a.txt" 2>&1; then
        if cmp -s /run/demo1.txt /run/demo1a.txt && [ "$(wc -l </run/demo1a.txt)" = 300 ]; then
            status "demo-1a ok (300 shots over rdma, identical to memcpy shot by shot)"
        else
            status "demo-1a FAILED: the samples over rdma differ from those over memcpy"
        fi
    else
        # (An executor that did not print its ready line in time was PennyLane's import under
        # this guest's emulation; `import backline` no longer imports it.)
        status "demo-1a FAILED: $(tail -1 "$OUT/demo1a.txt" 2>/dev/null || tail -1 "$OUT/demo1.txt")"
    fi
else
    status "demo-1a skipped: the Python package is not installed in .venv-py (scripts/test.d/30-python.sh installs it)"
fi

# -- the reference's demo 3 as printed (examples/paper): the controller and the GPU coprocessor
# (emulated) each in an executor process, the rounds over rdma; its samples are demo 1's -----
if [ -x "$PY" ] && "$PY" -c "import backline" >/dev/null 2>&1; then
    # qp.qjit on backline's compiler (BACKLINE_QJIT_BACKEND): .venv-py has no Catalyst (it
    # lives in .venv-catalyst: with it, every import of PennyLane imports JAX), its compile
    # under this emulated guest takes minutes, and its path over udp and shm is tested on the
    # host (python/tests/test_catalyst.py); here the rounds over rdma and the remote
    # controller are.
    if BACKLINE_QJIT_BACKEND=backline BACKLINE_SPIN_US=-1 BACKLINE_PAPER_TRANSPORT=rdma BACKLINE_PAPER_ENDPOINT="$ADDR:7879" \
            BACKLINE_GPU_BACKEND=emu BACKLINE_PAPER_SEED=7 BACKLINE_RDMA_DEVICE="$DEV" \
            BACKLINE_RDMA_GID_INDEX="$GID" timeout 900 "$PY" -c \
            "import numpy,runpy,sys; numpy.set_printoptions(threshold=sys.maxsize); sys.path.insert(0, 'examples/paper'); runpy.run_path('examples/paper/demo3_ghz_remote.py', run_name='__main__')" \
            >"$OUT/paper-demo3.txt" 2>&1 \
        && timeout 900 "$PY" examples/01_ghz_memcpy.py --shots 10 --seed 7 \
            --save-samples /run/demo1-10.txt >/dev/null 2>&1; then
        tr -dc '01\n[' <"$OUT/paper-demo3.txt" | tr '[' '\n' | grep -E '^[01]{3}$' >/run/paper-demo3.txt || true
        if cmp -s /run/demo1-10.txt /run/paper-demo3.txt; then
            status "paper-demo-3 ok (controller and coprocessor in executors, rounds over rdma, demo 1's samples)"
        else
            status "paper-demo-3 FAILED: its samples differ from demo 1's"
        fi
    else
        status "paper-demo-3 FAILED: $(tail -1 "$OUT/paper-demo3.txt" 2>/dev/null)"
    fi
else
    status "paper-demo-3 skipped: the Python package is not installed in .venv-py"
fi

# -- the transport's rdma tests over the real device -----------------------------------------
export BACKLINE_RDMA_DEVICE=$DEV BACKLINE_RDMA_GID_INDEX=$GID
for t in ${TESTS//,/ }; do
    name=$(basename "$t")
    if timeout 600 "$t" rdma --test-threads 1 --nocapture >"$OUT/test-$name.txt" 2>&1; then
        # Here the rdma cases must run, not skip (only the device-less case may).
        if grep 'rdma case skipped' "$OUT/test-$name.txt" | grep -v 'has an RDMA device'; then
            status "tests $name FAILED: rdma cases skipped inside the VM"
        else
            status "tests $name ok: $(grep -E '^test result' "$OUT/test-$name.txt" | tail -1)"
        fi
    else
        status "tests $name FAILED: $(grep -E '^test result|panicked' "$OUT/test-$name.txt" | head -3 | tr '\n' ' ')"
    fi
done
status "done at $(elapsed) s"
