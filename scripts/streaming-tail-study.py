#!/usr/bin/env python3
"""NVIDIA's streaming-tail study with backline: distances x rounds, each point a bench of
SHOTS shots of stim's rotated surface-code Z memory streamed round by round to `matching`,
twice: in sliding windows (window 2d, commit d rounds; one window when the shot is shorter) and as one window over the whole
history (monolithic: the whole shot decoded once its last round is in). Each bench reports
`streaming_tail` (NVIDIA's definition: client side, from just before the final enqueue to the
corrections returned, warm-up shots excluded); the rows go into a CSV and the figure (median
and P99 against rounds, one line per distance, monolithic beside sliding windows) into a PNG
and an SVG.

Run it through scripts/streaming-tail-study.sh (it finds the Python with stim and the release
binary); --help lists the options. Needs stim (models) and matplotlib (the figure; without it
the CSV alone is written).
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time

MAX_POINTS = 64
MAX_SHOTS_IN_ALL = 1_000_000
MAX_DISTANCE = 25
MAX_ROUNDS = 100_000

FIELDS = [
    "distance", "rounds", "decoder", "window", "commit", "shots", "warmup_shots",
    "round_interval_ns", "tail_median_ns", "tail_p99_ns", "tail_p999_ns", "tail_max_ns",
    "tail_shots", "server_median_ns", "server_p99_ns", "late_rounds",
    "final_backlog_max_rounds", "logical_failures", "ler", "note",
]


def die(msg):
    print(f"streaming-tail-study: error: {msg}", file=sys.stderr)
    sys.exit(2)


def int_list(name, text):
    try:
        v = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        die(f"{name} {text!r}: a comma-separated list of integers")
    if not v or len(set(v)) != len(v):
        die(f"{name} {text!r}: one or more distinct integers")
    return v


def args_of():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--distances", default="3,5,7", help="odd code distances, 3..25 [3,5,7]")
    p.add_argument("--rounds", default="10,100,1000",
                   help="rounds of each shot, 1..100000 [10,100,1000]")
    p.add_argument("--shots", type=int, default=1000, help="shots per bench [1000]")
    p.add_argument("--warmup-shots", type=int, default=20,
                   help="shots left out of the tail [20]")
    p.add_argument("--p", type=float, default=0.001, help="stim's four noise arguments [0.001]")
    p.add_argument("--round-interval-ns", type=int, default=0,
                   help="the cadence of the rounds (0: back to back) [0]")
    p.add_argument("--protocol", choices=["cuqr", "backline"], default="cuqr",
                   help="cuqr: NVIDIA's frames over loopback udp to the server the bench "
                        "starts; backline: --transport [cuqr]")
    p.add_argument("--transport", default="memcpy",
                   help="with --protocol backline: memcpy, shm, udp [memcpy]")
    p.add_argument("--no-monolithic", action="store_true",
                   help="sliding windows only")
    p.add_argument("--out-dir", default="streaming-tail-out",
                   help="models, CSV and figure [streaming-tail-out]")
    p.add_argument("--backline", default="target/release/backline", help="the binary")
    p.add_argument("--timeout-ms", type=int, default=10000, help="the bench's --timeout-ms")
    p.add_argument("bench_args", nargs="*", help="after --: more flags for every bench "
                   "(e.g. -- --pin 0,1)")
    a = p.parse_args()
    a.distances = int_list("--distances", a.distances)
    a.rounds = int_list("--rounds", a.rounds)
    for d in a.distances:
        if d < 3 or d > MAX_DISTANCE or d % 2 == 0:
            die(f"--distances: {d} is not an odd distance in 3..{MAX_DISTANCE}")
    for r in a.rounds:
        if r < 1 or r > MAX_ROUNDS:
            die(f"--rounds: {r} is outside 1..{MAX_ROUNDS}")
    if a.shots < 2:
        die("--shots must be at least 2")
    if not 0 <= a.warmup_shots < a.shots:
        die(f"--warmup-shots {a.warmup_shots} must be less than --shots {a.shots}")
    if not 0.0 < a.p < 0.5:
        die(f"--p {a.p} is outside (0, 0.5)")
    points = len(a.distances) * len(a.rounds)
    if points > MAX_POINTS:
        die(f"{len(a.distances)} distances x {len(a.rounds)} rounds = {points} points: "
            f"at most {MAX_POINTS}")
    benches = points * (1 if a.no_monolithic else 2)
    if benches * a.shots > MAX_SHOTS_IN_ALL:
        die(f"{benches} benches x {a.shots} shots = {benches * a.shots} shots in all: "
            f"at most {MAX_SHOTS_IN_ALL}")
    if not os.access(a.backline, os.X_OK):
        die(f"{a.backline}: no such binary (cargo build --release -p backline)")
    return a


def model(a, d, r):
    """stim's rotated memory-Z circuit at p on its four noise arguments, as a decomposed DEM."""
    path = os.path.join(a.out_dir, "models", f"surface_d{d}_r{r}_p{a.p}.dem")
    if os.path.exists(path):
        return path
    import stim

    c = stim.Circuit.generated(
        "surface_code:rotated_memory_z", distance=d, rounds=r,
        after_clifford_depolarization=a.p, before_round_data_depolarization=a.p,
        before_measure_flip_probability=a.p, after_reset_flip_probability=a.p)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(c.detector_error_model(decompose_errors=True)))
    os.replace(tmp, path)
    return path


class Bar:
    """A progress bar on stderr when it is a terminal; otherwise a line per bench."""

    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.monotonic()
        self.tty = sys.stderr.isatty()

    def show(self, what):
        el = time.monotonic() - self.t0
        if self.tty:
            w = 30
            n = w * self.done // self.total
            sys.stderr.write(f"\r[{'#' * n}{' ' * (w - n)}] {self.done}/{self.total} "
                             f"{el:6.0f} s  {what:<40}")
            sys.stderr.flush()
        else:
            print(f"streaming-tail-study: {self.done}/{self.total} ({el:.0f} s) {what}",
                  file=sys.stderr)

    def step(self):
        self.done += 1

    def end(self):
        if self.tty:
            sys.stderr.write("\n")


def bench(a, spec, monolithic=False):
    cmd = [a.backline, "bench", "--responder", spec, "--shots", str(a.shots),
           "--warmup-shots", str(a.warmup_shots), "--round-interval-ns",
           str(a.round_interval_ns), "--timeout-ms", str(a.timeout_ms), "--no-baseline",
           "--no-plots", "--json", "-q", "--out-dir", os.path.join(a.out_dir, "traces")]
    if a.protocol == "cuqr":
        cmd += ["--protocol", "cuqr"]
    else:
        cmd += ["--transport", a.transport]
    cmd += a.bench_args
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        # A whole-history decode of a long experiment may be past the model limits
        # (BACKLINE_DEM_LIMITS raises them): its row says so and the study goes on.
        if monolithic and "(limit `" in p.stderr:
            return None, p.stderr.strip().splitlines()[-1]
        die(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)["runs"][1], ""


def row(a, d, r, decoder, window, commit, run, note=""):
    if run is None:
        x = {k: "" for k in FIELDS}
        x.update(distance=d, rounds=r, decoder=decoder, window=window, commit=commit,
                 round_interval_ns=a.round_interval_ns, note=note)
        return x
    t = run.get("streaming_tail", {})
    s = run.get("last_syndrome_to_correction", {})
    pc = run.get("pacing", {})
    return {
        "distance": d, "rounds": r, "decoder": decoder, "window": window, "commit": commit,
        "shots": run["shots"], "warmup_shots": run.get("warmup_shots", ""),
        "round_interval_ns": a.round_interval_ns,
        "tail_median_ns": t.get("median_ns", ""), "tail_p99_ns": t.get("p99_ns", ""),
        "tail_p999_ns": t.get("p999_ns", ""), "tail_max_ns": t.get("max_ns", ""),
        "tail_shots": t.get("shots", ""),
        "server_median_ns": s.get("median_ns", ""), "server_p99_ns": s.get("p99_ns", ""),
        "late_rounds": pc.get("late_rounds", ""),
        "final_backlog_max_rounds": pc.get("final_backlog_max_rounds", ""),
        "logical_failures": run["logical_failures"], "ler": run["ler"], "note": note,
    }


def plot(a, rows, stem):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("streaming-tail-study: no matplotlib: the CSV alone", file=sys.stderr)
        return []
    kinds = ["sliding"] + ([] if a.no_monolithic else ["monolithic"])
    fig, axes = plt.subplots(1, len(kinds), figsize=(6 * len(kinds), 4.5), sharey=True,
                             squeeze=False)
    titles = {"sliding": "sliding windows (W = min(2d, r + 1), C = d)",
              "monolithic": "monolithic (whole history, one window)"}
    for ax, kind in zip(axes[0], kinds):
        for i, d in enumerate(a.distances):
            pts = sorted((x["rounds"], x["tail_median_ns"], x["tail_p99_ns"]) for x in rows
                         if x["decoder"] == kind and x["distance"] == d
                         and x["tail_median_ns"] != "")
            if not pts:
                continue
            rr = [p[0] for p in pts]
            color = f"C{i}"
            ax.plot(rr, [p[1] / 1e3 for p in pts], "o-", color=color, label=f"d = {d} median")
            ax.plot(rr, [p[2] / 1e3 for p in pts], "s--", color=color, label=f"d = {d} P99")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rounds per shot")
        ax.set_title(titles[kind])
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("last enqueue → corrections (µs)")
    axes[0][-1].legend(fontsize="small")
    cadence = ("back to back" if a.round_interval_ns == 0
               else f"one round per {a.round_interval_ns} ns")
    fig.suptitle(f"streaming tail: matching, p = {a.p}, {a.shots} shots "
                 f"({a.warmup_shots} warm-up), {a.protocol}, {cadence}")
    fig.tight_layout()
    out = []
    for ext in ("png", "svg"):
        fig.savefig(f"{stem}.{ext}", dpi=120)
        out.append(f"{stem}.{ext}")
    return out


def main():
    a = args_of()
    os.makedirs(a.out_dir, exist_ok=True)
    stem = os.path.join(a.out_dir, "streaming-tail")
    grid = [(d, r) for d in a.distances for r in a.rounds]
    kinds = ["sliding"] + ([] if a.no_monolithic else ["monolithic"])
    bar = Bar(len(grid) * len(kinds))
    rows = []
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for d, r in grid:
            bar.show(f"d={d} r={r}: model")
            path = model(a, d, r)
            for kind in kinds:
                # stim's r rounds are r + 1 rounds of detectors; a window is at most those.
                window = min(2 * d, r + 1)
                if kind == "sliding":
                    commit = min(d, window)
                    # Matching's real-time default is these windows: named only where the
                    # shot is too short for it to choose them.
                    settings = "" if window < r + 1 else f":window={window};commit={commit}"
                else:
                    # One window over the whole shot, named (matching's real-time default
                    # is windowed).
                    window, commit = r + 1, ""
                    settings = f":window={window}"
                bar.show(f"d={d} r={r} {kind}")
                run, note = bench(a, f"stream:{path}:matching{settings}", kind == "monolithic")
                x = row(a, d, r, kind, window, commit, run, note)
                rows.append(x)
                w.writerow(x)
                f.flush()
                bar.step()
    bar.show("done")
    bar.end()
    written = [stem + ".csv"] + plot(a, rows, stem)
    print("wrote " + ", ".join(written), file=sys.stderr)
    for x in rows:
        med, p99 = x["tail_median_ns"], x["tail_p99_ns"]
        if med != "":
            print(f"d={x['distance']:>2} r={x['rounds']:>6} {x['decoder']:<10} "
                  f"median {med / 1e3:9.2f} µs  P99 {p99 / 1e3:9.2f} µs  "
                  f"LER {x['ler']:.2e}")


if __name__ == "__main__":
    main()
