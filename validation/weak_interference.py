#!/usr/bin/env python3
"""Weak interference in bulk against one event per receiver (issue 15, item 1).

A signal below both the reception and the carrier-sense threshold at a receiver reaches it in
bulk by default (``radio.weak_interference = "bulk"``, ``crates/xlayer-core/src/phy/mod.rs``):
no events of its own, the same SINR pieces, carrier sense woken only where the sum of the
signals may cross the threshold. ``"events"`` is the full model, two events per receiver. This
script runs scenarios under both over the same seeds and prints, per scenario and mode, the mean
aggregate throughput, Jain's index and delivery ratio with 95 % intervals over the seeds, the
paired difference (bulk − events, same seed) with its 95 % interval, the events and CPU time, and
the per-flow means (flow i of a seed is the same pair in both modes).

    python validation/weak_interference.py                       # random-200, mesh-7x7; seeds 1-10
    python validation/weak_interference.py --seeds 1-3 --scenarios random-200 --jobs 2

``mesh-7x7`` uses ``propagation = "range"``: nothing arrives below the thresholds, so its two
modes are the same run (a check that the switch changes nothing else). ``random-200`` (ns-2
ranges under two-ray ground) is where weak signals are most of the channel: 190 receivers per
frame, 14 of them in reception range.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import math
import pathlib
import statistics
import sys
import time
from typing import Dict, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODES = ("events", "bulk")
#: Two-sided 95 % Student t quantiles by degrees of freedom (1 … 30).
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060,
       2.056, 2.052, 2.048, 2.045, 2.042]


def seeds_arg(text: str) -> List[int]:
    if "-" in text:
        a, b = text.split("-", 1)
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def mean_ci(xs: List[float]) -> Tuple[float, float]:
    """Mean and the half-width of its 95 % interval (Student t)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan
    t = T95[min(len(xs) - 1, len(T95)) - 1]
    return m, t * statistics.stdev(xs) / math.sqrt(len(xs))


def _run(job: Tuple[str, str, int]) -> Tuple[str, str, int, Dict[str, float], List[float], float]:
    import xlayer

    name, mode, seed = job
    t0 = time.process_time()
    r = xlayer.run(str(ROOT / "scenarios" / f"{name}.toml"), seed=seed,
                   overrides=[f"radio.weak_interference={mode}"])
    cpu = time.process_time() - t0
    s = r.summary
    summary = {k: float(s[k]) for k in ("aggregate_throughput_bps", "jain_index",
                                       "delivery_ratio", "events")}
    return name, mode, seed, summary, [float(x) for x in r.flows["throughput_bps"]], cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=seeds_arg, default=list(range(1, 11)), help="e.g. 1-10 or 1,4")
    ap.add_argument("--scenarios", default="random-200,mesh-7x7")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--flows", action="store_true", help="print every flow's means")
    args = ap.parse_args()
    names = args.scenarios.split(",")
    jobs = [(n, m, s) for n in names for s in args.seeds for m in MODES]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(_run, jobs))
    by: Dict[Tuple[str, str], Dict[int, tuple]] = {}
    for name, mode, seed, summary, flows, cpu in runs:
        by.setdefault((name, mode), {})[seed] = (summary, flows, cpu)

    worst = 0.0
    for name in names:
        ev, bu = by[(name, "events")], by[(name, "bulk")]
        seeds = sorted(ev)
        print(f"\n## {name}, seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})\n")
        print("| metric | events | bulk | bulk − events (paired) | within the seeds' noise |")
        print("|---|---|---|---|---|")
        for key, scale, unit in (("aggregate_throughput_bps", 1e-3, "kbit/s"),
                                 ("jain_index", 1.0, ""), ("delivery_ratio", 1.0, "")):
            a = [ev[s][0][key] * scale for s in seeds]
            b = [bu[s][0][key] * scale for s in seeds]
            d = [y - x for x, y in zip(a, b)]
            (ma, ca), (mb, cb), (md, cd) = mean_ci(a), mean_ci(b), mean_ci(d)
            # The difference's interval holds 0, or (all runs identical) there is none.
            ok = all(x == 0 for x in d) or abs(md) <= cd
            # ... and it is small against the seeds' own spread.
            spread = max(ca, cb)
            ratio = abs(md) / spread if spread > 0 else 0.0
            worst = max(worst, ratio if ok else math.inf)
            print(f"| {key} {unit} | {ma:.4g} ± {ca:.2g} | {mb:.4g} ± {cb:.2g} | "
                  f"{md:+.3g} ± {cd:.2g} | {'yes' if ok else 'NO'} (|Δ| = {ratio:.2f} of the "
                  f"seeds' interval) |")
        same = sum(ev[s][1] == bu[s][1] and ev[s][0] == {**bu[s][0], "events": ev[s][0]["events"]}
                   for s in seeds)
        e_ev = statistics.fmean(ev[s][0]["events"] for s in seeds)
        e_bu = statistics.fmean(bu[s][0]["events"] for s in seeds)
        c_ev = statistics.fmean(ev[s][2] for s in seeds)
        c_bu = statistics.fmean(bu[s][2] for s in seeds)
        print(f"\nevents per run {e_ev / 1e6:.2f} M (events) against {e_bu / 1e6:.2f} M (bulk), "
              f"{e_bu / e_ev:.2f}; CPU {c_ev:.2f} s against {c_bu:.2f} s (mean, machine load "
              f"included); runs with identical results in both modes: {same} of {len(seeds)}")
        # Per flow: the mean over the seeds of each flow index, and the paired difference.
        n_flows = min(len(ev[s][1]) for s in seeds)
        diffs = []
        rows = []
        for i in range(n_flows):
            a = [ev[s][1][i] / 1e3 for s in seeds]
            b = [bu[s][1][i] / 1e3 for s in seeds]
            d = [y - x for x, y in zip(a, b)]
            (ma, ca), (mb, cb), (md, cd) = mean_ci(a), mean_ci(b), mean_ci(d)
            inside = all(x == 0 for x in d) or abs(md) <= cd
            diffs.append(inside)
            rows.append(f"| {i} | {ma:.1f} ± {ca:.1f} | {mb:.1f} ± {cb:.1f} | {md:+.2f} ± {cd:.2f} |")
        print(f"flows whose paired difference's 95 % interval holds 0: {sum(diffs)} of {n_flows}")
        if args.flows:
            print("\n| flow | events kbit/s | bulk kbit/s | bulk − events |\n|---|---|---|---|")
            print("\n".join(rows))
    print(f"\nlargest |mean difference| over the seeds' 95 % interval: {worst:.2f}")
    return 0 if worst <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
