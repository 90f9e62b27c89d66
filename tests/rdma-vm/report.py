"""The report of the rdma VM test: the guest's step results, backline bench's table and
ib_write_lat's from the same boot, side by side, and the verdict (exit status 1 if a step
failed; timings never fail the run).

Usage: report.py SHARE_DIR VM_SECONDS TOTAL_SECONDS

ib_write_lat reports half the time between two of its posts, i.e. half a round trip (perftest
divides RDMA WRITE latencies by two); backline bench reports whole round trips. Both are put
side by side as round trips.
"""

import re
import sys
from pathlib import Path


def bench_table(text):
    """Rows of backline bench's table: label -> {column: value in µs (or ratio)}."""
    lines = [l for l in text.splitlines() if l.strip()]
    head = next((l for l in lines if l.startswith("µs")), None)
    if head is None:
        return {}
    cols = head.split()[1:]
    rows = {}
    for l in lines[lines.index(head) + 1 :]:
        parts = l.split()
        cells = parts[len(parts) - len(cols) :]
        # A row ends in one cell per column: a number, a ratio (`1.07x`) or `-` (a statistic
        # the table leaves out: the ratio row has no ratio of round 0, std, min or max). The
        # lines under the table (notes, failures) are not rows.
        if len(parts) < len(cols) + 1 or not all(re.fullmatch(r"-|[0-9.]+x?", p) for p in cells):
            continue
        label = " ".join(parts[: len(parts) - len(cols)])
        vals = [None if p == "-" else float(p.rstrip("x")) for p in cells]
        rows[label] = dict(zip(cols, vals))
    return rows


def write_lat(text):
    """ib_write_lat's summary: {t_min, t_max, t_typical, t_avg, t_stdev, p99, p999} in µs."""
    for l in text.splitlines():
        parts = l.split()
        if len(parts) == 9 and all(re.fullmatch(r"[0-9.]+", p) for p in parts):
            keys = ["bytes", "iters", "t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p999"]
            return dict(zip(keys, map(float, parts)))
    return None


def main():
    share = Path(sys.argv[1])
    vm_s, total_s = sys.argv[2], sys.argv[3]
    status = (share / "status").read_text().splitlines()
    print("-- guest steps")
    for s in status:
        print("   " + s)
    failed = [s for s in status if "FAILED" in s]
    if not any(s.startswith("bench ok") for s in status):
        failed.append("backline bench over rdma did not complete")
    if not any(s.startswith("sim-rdma ok") for s in status):
        failed.append("backline sim bridged over rdma did not complete with 0 mismatches")
    if not any(s.startswith("done") for s in status):
        failed.append("the guest script did not finish")

    setup = share / "setup.txt"
    if setup.exists():
        print("-- VM")
        for l in setup.read_text().splitlines():
            print("   " + l)

    bench_txt = share / "bench.txt"
    rows = bench_table(bench_txt.read_text()) if bench_txt.exists() else {}
    if rows:
        print("-- backline bench --transport rdma --device rxe0 --gid-index 1 --responder steane (round trips)")
        for l in bench_txt.read_text().splitlines():
            print("   " + l)
    lats = []
    for i in (1, 2):
        f = share / f"ib_write_lat-{i}.txt"
        if f.exists():
            r = write_lat(f.read_text())
            if r:
                lats.append(r)
    if lats:
        print("-- ib_write_lat -d rxe0 -x 1 (perftest; half round trips, as it reports them)")
        print("   run   #bytes  #iterations  t_min  t_max  t_typical  t_avg  t_stdev  99%  99.9%")
        for i, r in enumerate(lats, 1):
            print(
                f"   {i:<5} {r['bytes']:>6.0f}  {r['iters']:>11.0f}  {r['t_min']:.2f}  {r['t_max']:.2f}"
                f"  {r['t_typical']:9.2f}  {r['t_avg']:.2f}  {r['t_stdev']:.2f}  {r['p99']:.2f}  {r['p999']:.2f}"
            )
    steane = rows.get("steane")
    floor = next((v for k, v in rows.items() if k.startswith("floor")), None)
    if steane and lats:
        typ = sum(r["t_typical"] for r in lats) / len(lats)
        print("-- side by side, round trips in µs (ib_write_lat's figures doubled)")
        print(f"   {'':34} {'min':>8} {'median':>8} {'mean':>8} {'P99':>8} {'P99.9':>8}")
        print(
            f"   {'backline rdma, steane':34} {steane['min']:8.2f} {steane['median']:8.2f} {steane['mean']:8.2f}"
            f" {steane['P99']:8.2f} {steane['P99.9']:8.2f}"
        )
        if floor:
            print(
                f"   {'backline floor (bare rdma write)':34} {floor['min']:8.2f} {floor['median']:8.2f}"
                f" {floor['mean']:8.2f} {floor['P99']:8.2f} {floor['P99.9']:8.2f}"
            )
        for i, r in enumerate(lats, 1):
            print(
                f"   {'ib_write_lat run %d x 2' % i:34} {2 * r['t_min']:8.2f} {2 * r['t_typical']:8.2f}"
                f" {2 * r['t_avg']:8.2f} {2 * r['p99']:8.2f} {2 * r['p999']:8.2f}"
            )
        print(
            f"   median RTT / ib_write_lat round trip (2 x t_typical, mean of both runs) = "
            f"{steane['median']:.2f} / {2 * typ:.2f} = {steane['median'] / (2 * typ):.3f}x"
        )
        print(
            f"   (against t_typical itself, i.e. half a round trip: {steane['median'] / typ:.3f}x)"
        )
        if floor:
            print(f"   median RTT / backline floor = {steane['median'] / floor['median']:.3f}x")
    print(f"-- the VM ran {vm_s} s; the whole test {total_s} s")
    if failed:
        print("50-rdma-vm: FAILED:")
        for f in failed:
            print("   " + f)
        sys.exit(1)
    print("50-rdma-vm: ok")


main()
