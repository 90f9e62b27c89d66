#!/usr/bin/env python3
"""Dev-only: compare backline's BP+OSD with the `ldpc` package on the same shots.

For each code (Steane, [[13,1,3]], rotated surface d = 3, 5, 7, 9, [[72,12,6]],
[[144,12,12]]) and each physical error rate p, the Rust example `css_shots` writes the Z checks
and logicals and a fixed-seed set of code-capacity X-error shots. Each shot's syndrome is then
decoded

  * by ldpc's `BpOsdDecoder`, called from Python exactly as its users call it:
    `decoder.decode(syndrome)` once per shot on a uint8 numpy row, timed around that call with
    `time.perf_counter_ns`;
  * by `backline decode` (the CLI a user runs), which times each decoder call in Rust.

The report gives, per (code, p, settings): the logical error rate of each with its Wilson 95 %
interval, the fraction of shots where both corrections are identical, and the median per-shot
time of each. To say how much of ldpc's time is the Python call rather than the C++ decoder,
it also measures ldpc's *call floor*: the median time of `decoder.decode(zero_syndrome)`, which
copies the syndrome in and returns a fresh zero array without running BP, and the cost of the
clock read itself.

The script creates a virtual environment under target/ldpc-venv (pip install ldpc==VERSION)
and re-runs itself there. Usage:

  scripts/dev/compare_ldpc.py                       # everything (takes a while)
  scripts/dev/compare_ldpc.py --codes hgp13 bb72 --ps 0.05 --shots 500
  scripts/dev/compare_ldpc.py --write-reference decoders/tests/data/ldpc
"""

import argparse
import fnmatch
import json
import math
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = ROOT / "target" / "ldpc-venv"
LDPC_VERSION = "2.4.1"

CODES = ["steane", "hgp13", "surface3", "surface5", "surface7", "surface9", "bb72", "bb144"]
PS = [0.01, 0.03, 0.05, 0.1]
BP = {
    "ms1.0": dict(bp_method="minimum_sum", ms_scaling_factor=1.0),
    "ms0.625": dict(bp_method="minimum_sum", ms_scaling_factor=0.625),
    "ps": dict(bp_method="product_sum", ms_scaling_factor=1.0),
}
# Only for the reference vectors: ldpc's adaptive min-sum factor 1 - 2^-iteration.
BP_EXTRA = {"ms0": dict(bp_method="minimum_sum", ms_scaling_factor=0.0)}
ITERS = ["it10", "itn"]
OSD = ["osd0", "cs7"]

# Reference vectors for the Rust tests: (code, p, bp, iters, osd, schedule, shots[, "nan": only
# shots where ldpc's soft output holds a NaN]).
REFERENCE = [
    ("steane", 0.1, "ms1.0", "it10", "cs7", "parallel", 60),
    ("hgp13", 0.1, "ms0.625", "it10", "cs7", "parallel", 60),
    ("hgp13", 0.1, "ps", "itn", "osd0", "parallel", 60),
    ("surface5", 0.1, "ps", "it10", "cs7", "parallel", 60),
    ("surface5", 0.1, "ms0.625", "it10", "osd0", "serial", 60),
    ("surface7", 0.1, "ms1.0", "itn", "cs7", "serial", 40),
    ("bb72", 0.05, "ms0.625", "itn", "cs7", "parallel", 60),
    ("bb72", 0.1, "ms1.0", "it10", "osd0", "parallel", 60),
    ("bb72", 0.05, "ps", "it10", "cs7", "serial", 40),
    ("bb144", 0.05, "ms0.625", "it10", "cs7", "parallel", 40),
    ("bb144", 0.03, "ps", "itn", "osd0", "parallel", 40),
    ("bb72", 0.05, "ms0", "it10", "cs7", "parallel", 40),
    ("hgp13", 0.1, "ms0", "itn", "osd0", "serial", 40),
    # Product-sum on bb144 now and then fails with NaN soft outputs: OSD's column order then
    # depends on how glibc's qsort merges "equal" NaNs. Only such shots.
    ("bb144", 0.01, "ps", "it10", "osd0", "parallel", 12, "nan"),
]


def in_venv():
    return pathlib.Path(sys.prefix).resolve() == VENV.resolve()


def ensure_venv(version):
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"creating {VENV}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m, numpy; print(m.version('ldpc'))"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or probe.stdout.strip() != version:
        print(f"installing ldpc=={version} into {VENV}", file=sys.stderr)
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"ldpc=={version}"], check=True)
    return py


def target_dir():
    return pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def build():
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "backline", "-p", "backline-decoders",
         "--example", "css_shots", "--bin", "backline"],
        cwd=ROOT,
        check=True,
    )
    rel = target_dir() / "release"
    return rel / "backline", rel / "examples" / "css_shots"


def shots(css_shots, code, p, n_shots, seed, out):
    r = subprocess.run(
        [str(css_shots), "--code", code, "--p", str(p), "--shots", str(n_shots),
         "--seed", str(seed), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(r.stdout)


def load_bits(path):
    import numpy as np

    rows = [l.strip() for l in open(path) if l.strip() and not l.startswith("#")]
    if not rows:
        return np.zeros((0, 0), dtype=np.uint8)
    return (np.frombuffer("".join(rows).encode(), dtype=np.uint8) - ord("0")).reshape(
        len(rows), len(rows[0])
    )


def wilson(fails, n, z=1.96):
    if n == 0:
        return (0.0, 0.0)
    p = fails / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def settings_of(meta, bp, iters, osd, schedule):
    n = meta["n"]
    free = n - meta["rank_hz"]
    order = min(7, free) if osd == "cs7" else 0
    s = dict(BP.get(bp) or BP_EXTRA[bp])
    s["max_iter"] = 10 if iters == "it10" else n
    s["schedule"] = schedule
    s["osd_method"] = "osd_cs" if osd == "cs7" else "osd_0"
    s["osd_order"] = order
    return s


def time_ldpc(hz, syndromes, p, s, warmup):
    import numpy as np
    import time
    from ldpc import BpOsdDecoder

    dec = BpOsdDecoder(hz, error_rate=float(p), **s)
    for i in range(min(warmup, len(syndromes))):
        dec.decode(syndromes[i])
    n_shots, n = len(syndromes), hz.shape[1]
    times = np.empty(n_shots, dtype=np.int64)
    corr = np.empty((n_shots, n), dtype=np.uint8)
    conv = np.empty(n_shots, dtype=bool)
    pc = time.perf_counter_ns
    for i in range(n_shots):
        syn = syndromes[i]
        t0 = pc()
        c = dec.decode(syn)
        t1 = pc()
        times[i] = t1 - t0
        corr[i] = c
        conv[i] = dec.converge
    # The call floor: same decoder, a zero syndrome (copy in, zero array out, no BP).
    zero = np.zeros(hz.shape[0], dtype=np.uint8)
    floor = np.empty(2000, dtype=np.int64)
    clock = np.empty(2000, dtype=np.int64)
    for i in range(2000):
        t0 = pc()
        dec.decode(zero)
        t1 = pc()
        floor[i] = t1 - t0
        t0 = pc()
        t1 = pc()
        clock[i] = t1 - t0
    return corr, conv, times, float(np.median(floor)), float(np.median(clock))


def run_ours(backline, d, p, s):
    args = [
        str(backline), "decode", "--checks", str(d / "hz.alist"),
        "--syndromes", str(d / "syndromes.txt"), "--error-rate", str(p),
        "--bp-method", s["bp_method"], "--ms-scaling-factor", str(s["ms_scaling_factor"]),
        "--max-iter", str(s["max_iter"]), "--schedule", s["schedule"],
        "--osd-method", "osd_cs" if s["osd_method"] == "osd_cs" else "osd0",
        "--osd-order", str(s["osd_order"]), "--output", str(d / "ours.txt"), "--json",
    ]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise SystemExit(f"backline decode failed: {r.stderr.strip()}")
    return json.loads(r.stdout), load_bits(d / "ours.txt")


def failures(hz, lz, errors, corr):
    import numpy as np

    res = (errors ^ corr).astype(np.int64)
    bad_syn = ((hz.astype(np.int64) @ res.T) % 2).any(axis=0)
    logical = ((lz.astype(np.int64) @ res.T) % 2).any(axis=0)
    return bad_syn | logical


def compare(args, backline, css_shots):
    import numpy as np

    out = pathlib.Path(args.out)
    rows = []
    header = (
        f"{'code':9} {'p':>5} {'settings':22} {'shots':>6} "
        f"{'LER ldpc [95% CI]':>24} {'LER ours [95% CI]':>24} {'same':>6} "
        f"{'ldpc med':>9} {'floor':>7} {'ours med':>9} {'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    for code in args.codes:
        for p in args.ps:
            d = out / code / f"p{p}"
            meta = shots(css_shots, code, p, args.shots, args.seed, d)
            hz = load_bits(d / "hz.txt")
            lz = load_bits(d / "lz.txt")
            errors = load_bits(d / "errors.txt")
            syn = load_bits(d / "syndromes.txt")
            for bp in BP:
                for iters in ITERS:
                    for osd in OSD:
                        name = f"{bp}/{iters}/{osd}"
                        if not any(fnmatch.fnmatch(name, pat) for pat in args.settings):
                            continue
                        s = settings_of(meta, bp, iters, osd, args.schedule)
                        corr_l, conv_l, t_l, floor, clock = time_ldpc(hz, syn, p, s, args.warmup)
                        summary, corr_o = run_ours(backline, d, p, s)
                        fl = int(failures(hz, lz, errors, corr_l).sum())
                        fo = int(failures(hz, lz, errors, corr_o).sum())
                        same = float((corr_l == corr_o).all(axis=1).mean())
                        same_conv = (
                            float((corr_l[conv_l] == corr_o[conv_l]).all(axis=1).mean())
                            if conv_l.any() else 1.0
                        )
                        n = len(syn)
                        cl, co = wilson(fl, n), wilson(fo, n)
                        consistent = cl[0] <= fo / n <= cl[1] and co[0] <= fl / n <= co[1]
                        med_l = float(np.median(t_l))
                        med_o = float(summary["median_ns"])
                        row = dict(
                            code=code, n=meta["n"], k=meta["k"], p=p, settings=name,
                            schedule=args.schedule, osd_order=s["osd_order"], shots=n,
                            ldpc_failures=fl, ours_failures=fo,
                            ldpc_ler=fl / n, ours_ler=fo / n,
                            ldpc_ci=cl, ours_ci=co, consistent=consistent,
                            same_corrections=same, same_when_bp_converged=same_conv,
                            ldpc_bp_converged=float(conv_l.mean()),
                            ours_bp_converged=summary["bp_converged_rate"],
                            ldpc_median_ns=med_l, ldpc_call_floor_ns=floor,
                            ldpc_clock_ns=clock, ours_median_ns=med_o,
                            ours_p99_ns=summary["p99_ns"], ratio=med_o / med_l,
                        )
                        rows.append(row)
                        print(
                            f"{code:9} {p:5} {name:22} {n:6} "
                            f"{fl / n:8.4f} [{cl[0]:.4f},{cl[1]:.4f}] "
                            f"{fo / n:8.4f} [{co[0]:.4f},{co[1]:.4f}] "
                            f"{100 * same:5.1f}% "
                            f"{med_l / 1e3:8.2f}u {floor / 1e3:6.2f}u {med_o / 1e3:8.3f}u "
                            f"{med_o / med_l:7.4f}"
                            + ("" if consistent else "  LER DIFFERS"),
                            flush=True,
                        )
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(rows, indent=1))
    md = ["| code | p | settings | LER ldpc | LER ours | identical | ldpc median µs | ldpc floor µs "
          "| ours median µs | ours/ldpc |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['code']} | {r['p']} | {r['settings']} | {r['ldpc_ler']:.4f} | "
                  f"{r['ours_ler']:.4f} | {100 * r['same_corrections']:.1f}% | "
                  f"{r['ldpc_median_ns'] / 1e3:.2f} | {r['ldpc_call_floor_ns'] / 1e3:.2f} | "
                  f"{r['ours_median_ns'] / 1e3:.3f} | {r['ratio']:.3f} |")
    (out / "compare.md").write_text("\n".join(md) + "\n")
    if rows:
        worst = max(rows, key=lambda r: r["ratio"])
        print()
        print(f"rows: {len(rows)}; LER consistent within 95% CI: "
              f"{sum(r['consistent'] for r in rows)}/{len(rows)}; "
              f"identical corrections in all shots: "
              f"{sum(r['same_corrections'] == 1.0 for r in rows)}/{len(rows)}")
        print(f"largest time ratio ours/ldpc: {worst['ratio']:.4f} "
              f"({worst['code']} p={worst['p']} {worst['settings']})")
        print(f"ldpc call floor (zero-syndrome decode) median over rows: "
              f"{np.median([r['ldpc_call_floor_ns'] for r in rows]) / 1e3:.2f} us; "
              f"clock read: {np.median([r['ldpc_clock_ns'] for r in rows]):.0f} ns")
        print(f"written: {out / 'compare.json'}, {out / 'compare.md'}")
    return rows


def write_reference(args, css_shots):
    import numpy as np

    dest = pathlib.Path(args.write_reference)
    dest.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(args.out) / "reference"
    from ldpc import BpOsdDecoder

    for idx, (code, p, bp, iters, osd, schedule, n_shots, *only) in enumerate(REFERENCE):
        d = work / f"{idx}"
        seed = 1000 + idx
        # Draw extra shots and keep the first `n_shots` with a non-zero syndrome (and, when
        # asked, where ldpc's soft output holds a NaN).
        meta = shots(css_shots, code, p, n_shots * (5000 if only else 20), seed, d)
        hz = load_bits(d / "hz.txt")
        syn = load_bits(d / "syndromes.txt")
        syn = syn[syn.any(axis=1)]
        s = settings_of(meta, bp, iters, osd, schedule)
        if only:
            dec = BpOsdDecoder(hz, error_rate=float(p), **s)
            keep = []
            for row in syn:
                dec.decode(row)
                keep.append(bool(np.isnan(dec.log_prob_ratios).any()))
            syn = syn[np.array(keep, dtype=bool)]
        syn = syn[:n_shots]
        corr, conv, _, _, _ = time_ldpc(hz, syn, p, s, 0)
        checks = dest / f"{code}_hz.alist"
        checks.write_text((d / "hz.alist").read_text())
        name = f"{code}_p{p}_{bp}_{iters}_{osd}_{schedule}{'_' + only[0] if only else ''}.txt"
        with open(dest / name, "w") as f:
            f.write(f"# ldpc {LDPC_VERSION} BpOsdDecoder corrections: syndrome correction "
                    f"bp_converged\n")
            f.write(f"# checks={checks.name} error_rate={p} bp_method={s['bp_method']} "
                    f"ms_scaling_factor={s['ms_scaling_factor']} max_iter={s['max_iter']} "
                    f"schedule={s['schedule']} osd_method={s['osd_method']} "
                    f"osd_order={s['osd_order']}\n")
            for i in range(len(syn)):
                f.write("".join(map(str, syn[i])) + " " + "".join(map(str, corr[i])) +
                        f" {int(conv[i])}\n")
        print(f"{name}: {len(syn)} shots, BP converged {conv.mean():.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--codes", nargs="+", default=CODES)
    ap.add_argument("--ps", nargs="+", type=float, default=PS)
    ap.add_argument("--settings", nargs="+", default=["*"],
                    help="glob patterns over bp/iters/osd names, e.g. 'ms0.625/*/cs7'")
    ap.add_argument("--schedule", default="parallel", choices=["parallel", "serial"])
    ap.add_argument("--shots", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--out", default=str(target_dir() / "ldpc-compare"))
    ap.add_argument("--ldpc-version", default=LDPC_VERSION)
    ap.add_argument("--write-reference", metavar="DIR",
                    help="write ldpc reference vectors for the Rust tests instead")
    args = ap.parse_args()
    if not in_venv():
        py = ensure_venv(args.ldpc_version)
        os.execv(str(py), [str(py), str(pathlib.Path(__file__).resolve()), *sys.argv[1:]])
    import importlib.metadata

    print(f"ldpc {importlib.metadata.version('ldpc')}, python {sys.version.split()[0]}",
          file=sys.stderr)
    backline, css_shots = build()
    if args.write_reference:
        write_reference(args, css_shots)
    else:
        compare(args, backline, css_shots)


if __name__ == "__main__":
    main()
