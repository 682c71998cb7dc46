#!/usr/bin/env python3
"""MORE and DiffQ-MORE as the flows grow, and the single-path baseline (issue 19; the DiffQ
document's §2 Fig. 1, §6.2 Figs. 6-8).

Runs ``scenarios/more-testbed.toml`` (46 random nodes, 802.11b 11 Mbit/s, lossy links, OLSR-ETX)
with 1, 2, 4, 8, 16 and 32 random flows under ``more`` and ``diffq-more`` for each seed, and
``scenarios/more-path.toml`` (one 4-hop lossy flow) under ``more``, ``diffq-more`` and ``udp``
(the single-path baseline: OLSR's shortest-ETX path, unicast with link ACKs). Prints Markdown
tables: per flow count and stack, the aggregate throughput, the share of starved flows (below
1 bit/s), the median flow and the share below 100 kbit/s, over the seeds; the lossy path's
throughput per stack. With ``--plot FILE`` it draws Fig. 8: for each flow of the 32-flow runs
that MORE does not starve, (DiffQ-MORE − MORE) / MORE against the path's ETX (``more_path_etx``
of the MORE run), with the median of each ETX bin.

    python validation/more_scale.py                          # seeds 1-3, every flow count
    python validation/more_scale.py --seeds 1-5 --plot more_fig8.png --jobs 2

``crates/xlayer-core/tests/more.rs`` checks the claims on seeds 1-3 with 1, 4, 16 and 32 flows;
this script gives the figures of the README's Validation rows.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import math
import pathlib
import statistics
import sys
from typing import Dict, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTBED = ROOT / "scenarios" / "more-testbed.toml"
PATH = ROOT / "scenarios" / "more-path.toml"
COUNTS = (1, 2, 4, 8, 16, 32)
STACKS = ("more", "diffq-more")
STARVED_BPS = 1.0


def _testbed(args: Tuple[str, int, int]) -> Tuple[str, int, int, List[Tuple[float, float]], float]:
    import xlayer

    stack, count, seed = args
    r = xlayer.run(str(TESTBED), seed=seed,
                   overrides=[f"stack.preset={stack}", f"flows_random.count={count}"])
    flows = [(float(e), float(b)) for e, b in zip(r.flows["more_path_etx"], r.flows["throughput_bps"])]
    return stack, count, seed, flows, float(r.summary["aggregate_throughput_bps"])


def _path(args: Tuple[str, int]) -> Tuple[str, int, float]:
    import xlayer

    stack, seed = args
    r = xlayer.run(str(PATH), seed=seed, overrides=[f"stack.preset={stack}"])
    return stack, seed, float(r.flows["throughput_bps"].iloc[0])


def seeds_arg(text: str) -> List[int]:
    if "-" in text:
        a, b = text.split("-", 1)
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=seeds_arg, default=[1, 2, 3], help="e.g. 1-3 or 1,4,7")
    ap.add_argument("--counts", type=lambda t: [int(c) for c in t.split(",")], default=list(COUNTS))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--plot", metavar="FILE", help="draw Fig. 8 (needs the plot extra)")
    args = ap.parse_args()

    jobs = [(s, c, seed) for s in STACKS for c in args.counts for seed in args.seeds]
    path_jobs = [(s, seed) for s in ("more", "diffq-more", "udp") for seed in args.seeds]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(_testbed, jobs))
        path = list(pool.map(_path, path_jobs))

    by: Dict[Tuple[str, int], list] = {}
    for stack, count, seed, flows, agg in runs:
        by.setdefault((stack, count), []).append((seed, flows, agg))

    print(f"Testbed, seeds {args.seeds}: mean aggregate (per seed), starved share, median flow, "
          "share below 100 kbit/s")
    print()
    print("| flows | stack | aggregate kbit/s | per seed | starved (per seed) | median flow kbit/s | < 100 kbit/s |")
    print("|---|---|---|---|---|---|---|")
    for count in args.counts:
        for stack in STACKS:
            rs = sorted(by[(stack, count)])
            aggs = [a for _, _, a in rs]
            bps = [b for _, flows, _ in rs for _, b in flows]
            starved = sum(b < STARVED_BPS for b in bps) / len(bps)
            low = sum(b < 100e3 for b in bps) / len(bps)
            per_seed_med = [statistics.median(b for _, b in flows) for _, flows, _ in rs]
            per_seed_starved = [sum(b < STARVED_BPS for _, b in flows) for _, flows, _ in rs]
            print(f"| {count} | {stack} | {statistics.mean(aggs) / 1e3:.0f} | "
                  f"{' / '.join(f'{a / 1e3:.0f}' for a in aggs)} | "
                  f"{starved:.2f} ({' / '.join(str(n) for n in per_seed_starved)}) | "
                  f"{' / '.join(f'{m / 1e3:.1f}' for m in per_seed_med)} | {low:.2f} |")
    print()
    print("Lossy path (more-path.toml), flow throughput kbit/s per seed:")
    print()
    print("| stack | " + " | ".join(f"seed {s}" for s in args.seeds) + " | mean |")
    print("|---|" + "---|" * (len(args.seeds) + 1))
    for stack in ("more", "diffq-more", "udp"):
        v = [tp for s, seed, tp in sorted(path, key=lambda x: x[1]) if s == stack]
        print(f"| {stack} | " + " | ".join(f"{x / 1e3:.0f}" for x in v) + f" | {statistics.mean(v) / 1e3:.0f} |")

    if 32 in args.counts:
        points = []
        for seed in args.seeds:
            m = next(f for s, f, _ in by[("more", 32)] if s == seed)
            d = next(f for s, f, _ in by[("diffq-more", 32)] if s == seed)
            for (etx, mb), (_, db) in zip(m, d):
                if mb >= STARVED_BPS and math.isfinite(etx):
                    points.append((etx, (db - mb) / mb))
        points.sort()
        print()
        print(f"Fig. 8: {len(points)} flows of the 32-flow runs that MORE carries; median "
              "(DiffQ-MORE − MORE) / MORE per ETX bin:")
        print()
        print("| path ETX | flows | median gain |")
        print("|---|---|---|")
        for lo in range(1, 8):
            v = [g for e, g in points if lo <= e < lo + 1]
            if v:
                print(f"| {lo}-{lo + 1} | {len(v)} | {statistics.median(v):+.2f} |")
        if args.plot:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(5, 3.5))
            ax.scatter([p[0] for p in points], [p[1] for p in points], s=12)
            ax.axhline(0.0, color="grey", lw=0.8)
            ax.set_xlabel("path ETX")
            ax.set_ylabel("(DiffQ-MORE − MORE) / MORE")
            ax.set_title(f"32 flows, seeds {args.seeds[0]}-{args.seeds[-1]}")
            fig.tight_layout()
            fig.savefig(args.plot, dpi=120)
            print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
