#!/usr/bin/env python3
"""Dev-only: BP+OSD per-shot time of two builds of `backline decode --checks`, side by side on
the same shots, and whether their corrections are identical.

A *baseline* build (for example the commit before a speed change, built in its own target
directory from its own git worktree) and a *new* build decode the same seeded code-capacity
shots of every library code. The two binaries run alternately, run after run (A B A B …), so
that drift on a shared machine hits both alike; each run prints its per-shot median and mean.
The report gives per case the median over runs of each, their ratio new/baseline, and whether
every correction of every run was identical between the builds. With --callgrind, each build
also decodes the first shots under `valgrind --tool=callgrind`, counting only the instructions
inside `BpOsdDecoder::decode` (a figure that does not depend on the machine's load), and the
ratio of those counts is printed too.

  # the baseline: a worktree at the old commit, built in its own target directory
  git worktree add --detach ../base <commit>
  (cd ../base && CARGO_TARGET_DIR=$PWD/target cargo build --release -p backline --bin backline)
  cargo build --release -p backline --bin backline -p backline-decoders --examples
  scripts/dev/compare_builds.py --base ../base/target/release --new target/release --callgrind

Cases: every library code at p (default 0.05) with min-sum (alpha 0.625, 10 iterations) and
OSD-CS of order min(7, n - rank) (the baseline refuses larger orders), and with product-sum (n iterations) and OSD-0.
"""

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CODES = ["steane", "hgp13", "surface3", "surface5", "surface7", "surface9", "bb72", "bb144"]
SETTINGS = {
    "ms0.625-it10-cs7": ["--bp-method", "minimum_sum", "--ms-scaling-factor", "0.625", "--max-iter", "10",
                         "--osd-method", "osd_cs", "--osd-order", "7"],
    "ps-itn-osd0": ["--bp-method", "product_sum", "--max-iter", "0", "--osd-method", "osd0"],
}


def decode(binary, shots_dir, p, settings, out, warmup=100):
    cmd = [str(binary / "backline"), "decode", "--checks", str(shots_dir / "hz.alist"), "--syndromes",
           str(shots_dir / "syndromes.txt"), "--error-rate", str(p), "--warmup", str(warmup), "--json",
           "--output", str(out)] + settings
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def instructions(binary, shots_dir, p, settings, shots, tmp):
    sub = tmp / "callgrind-syndromes.txt"
    lines = (shots_dir / "syndromes.txt").read_text().splitlines()[:shots]
    sub.write_text("\n".join(lines) + "\n")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp / 'cg.out'}",
           "--toggle-collect=*BpOsdDecoder*decode*", str(binary / "backline"), "decode", "--checks",
           str(shots_dir / "hz.alist"), "--syndromes", str(sub), "--error-rate", str(p), "--warmup", "0",
           "--json"] + settings
    r = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if not m:
        sys.exit(f"callgrind: {r.stderr[-500:]}")
    return int(m.group(1))


def hexbits(bits):
    """0/1 text as LSB-first bytes in hex."""
    out = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        if b == "1":
            out[i // 8] |= 1 << (i % 8)
    return out.hex()


def write_vectors(args):
    lines = [f"# corrections of the baseline build ({args.label}) on css_shots syndromes (p = {args.p}, seed {args.seed}):",
             "# per case a `# code=... settings` line, then `syndrome correction` per shot, LSB-first hex"]
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        for code in args.codes:
            shots_dir = tmp / code
            made = subprocess.run([str(args.new / "examples" / "css_shots"), "--code", code, "--p", str(args.p),
                                   "--shots", str(args.shots), "--seed", str(args.seed), "--out", str(shots_dir)],
                                  check=True, capture_output=True, text=True)
            info = json.loads(made.stdout)
            free = info["n"] - info["rank_hz"]
            syn = [l for l in (shots_dir / "syndromes.txt").read_text().splitlines() if "1" in l][: args.vector_shots]
            (shots_dir / "syndromes.txt").write_text("\n".join(syn) + "\n")
            for name in args.settings:
                s = [str(min(7, free)) if a == "7" else a for a in SETTINGS[name]]
                out = tmp / "corr.txt"
                decode(args.base, shots_dir, args.p, s, out, warmup=0)
                lines.append(f"# code={code} error_rate={args.p} " + " ".join(
                    f"{s[i].lstrip('-').replace('-', '_')}={s[i + 1]}" for i in range(0, len(s), 2)))
                for a, b in zip(syn, out.read_text().splitlines()):
                    lines.append(f"{hexbits(a)} {hexbits(b)}")
    args.write_vectors.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.write_vectors}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=pathlib.Path, required=True, help="directory of the baseline backline binary")
    ap.add_argument("--new", type=pathlib.Path, default=ROOT / "target/release")
    ap.add_argument("--codes", nargs="+", default=CODES)
    ap.add_argument("--p", type=float, default=0.05)
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS))
    ap.add_argument("--shots", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5, help="runs of each build, alternating")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions under callgrind")
    ap.add_argument("--callgrind-shots", type=int, default=500)
    ap.add_argument("--write-vectors", type=pathlib.Path, metavar="FILE",
                    help="write the baseline's corrections of the first non-zero syndromes of every case "
                         "(the CI test decoders/tests/baseline.rs reads them) and stop")
    ap.add_argument("--vector-shots", type=int, default=60)
    ap.add_argument("--label", default="the baseline", help="names the baseline in the vectors' header")
    args = ap.parse_args()
    if args.write_vectors:
        write_vectors(args)
        return

    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        rows = []
        for code in args.codes:
            shots_dir = tmp / code
            made = subprocess.run([str(args.new / "examples" / "css_shots"), "--code", code, "--p", str(args.p),
                                   "--shots", str(args.shots), "--seed", str(args.seed), "--out", str(shots_dir)],
                                  check=True, capture_output=True, text=True)
            info = json.loads(made.stdout)
            free = info["n"] - info["rank_hz"]
            for name in args.settings:
                # The baseline refuses an OSD-CS order above n - rank: give both the clamped one.
                s = [str(min(7, free)) if a == "7" else a for a in SETTINGS[name]]
                med = {"base": [], "new": []}
                mean = {"base": [], "new": []}
                identical = True
                for run in range(args.runs):
                    outs = {}
                    for build in ("base", "new") if run % 2 == 0 else ("new", "base"):
                        binary = args.base if build == "base" else args.new
                        outs[build] = tmp / f"{build}.txt"
                        j = decode(binary, shots_dir, args.p, s, outs[build])
                        med[build].append(j["median_ns"])
                        mean[build].append(j["mean_ns"])
                    identical &= outs["base"].read_bytes() == outs["new"].read_bytes()
                row = {
                    "code": code,
                    "settings": name,
                    "base_median_ns": statistics.median(med["base"]),
                    "new_median_ns": statistics.median(med["new"]),
                    "base_mean_ns": statistics.median(mean["base"]),
                    "new_mean_ns": statistics.median(mean["new"]),
                    "identical": identical,
                }
                row["ratio_median"] = row["new_median_ns"] / row["base_median_ns"]
                row["ratio_mean"] = row["new_mean_ns"] / row["base_mean_ns"]
                if args.callgrind:
                    a = instructions(args.base, shots_dir, args.p, s, args.callgrind_shots, tmp)
                    b = instructions(args.new, shots_dir, args.p, s, args.callgrind_shots, tmp)
                    row["ratio_instructions"] = b / a
                    row["base_instructions_per_shot"] = a / args.callgrind_shots
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)

    cg = " instructions new/base |" if args.callgrind else ""
    print(f"\nper-shot decode time, {args.shots} shots at p = {args.p} (seed {args.seed}), {args.runs} alternating runs "
          f"of each build; medians over runs\n")
    print(f"| code | settings | base mean ns | new mean ns | mean new/base | base median ns | new median ns | "
          f"median new/base |{cg} identical corrections |")
    print("|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if args.callgrind else "") + "---|")
    for r in rows:
        cgv = f" {r['ratio_instructions']:.3f} |" if args.callgrind else ""
        print(f"| {r['code']} | {r['settings']} | {r['base_mean_ns']:.0f} | {r['new_mean_ns']:.0f} | "
              f"{r['ratio_mean']:.3f} | {r['base_median_ns']:.0f} | {r['new_median_ns']:.0f} | "
              f"{r['ratio_median']:.3f} |{cgv} {'yes' if r['identical'] else 'NO'} |")


if __name__ == "__main__":
    main()
