#!/usr/bin/env python3
"""Benchmark: the wall-time cost of MORE (issue 19 item 5).

Runs ``scenarios/more-testbed.toml`` (46 nodes, 32 random flows, 60 simulated seconds) under
``more`` and under ``diffq-udp``, the same scenario and length (DiffQ-UDP's flows are UDP
sources over the same per-destination queues and routes, without coding), and prints each
stack's core wall time (``wall_s``), events and events per second, the best of ``--repeat``
runs, and the ratio MORE / DiffQ-UDP. ``diffq-more`` is timed too, for reference. MORE's extra
cost is the coding: every coded packet a node hears of a batch it holds is reduced against
its basis (Gaussian elimination over GF(2^8) by log/antilog tables, ``net::coding``), and every
packet it sends draws a fresh combination of up to 32 vectors.

    python benches/more_speed.py [--repeat 3] [--flows 32] [--json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "more-testbed.toml"
STACKS = ("more", "diffq-udp", "diffq-more")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per stack; the fastest is reported")
    ap.add_argument("--flows", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    try:
        import xlayer
    except ImportError:
        print("xlayer is not installed: run `pip install .` in the repository first", file=sys.stderr)
        return 2

    best = {}
    for _ in range(max(1, args.repeat)):
        for stack in STACKS:
            t0 = time.perf_counter()
            r = xlayer.run(str(SCENARIO), seed=args.seed,
                           overrides=[f"stack.preset={stack}", f"flows_random.count={args.flows}"])
            total = time.perf_counter() - t0
            s = r.summary
            row = {
                "stack": stack,
                "sim_time_s": s["sim_time_s"],
                "core_wall_s": s["wall_s"],
                "total_wall_s": total,
                "events": s["events"],
                "events_per_s": s["events"] / s["wall_s"],
                "aggregate_throughput_bps": s["aggregate_throughput_bps"],
            }
            if stack not in best or row["core_wall_s"] < best[stack]["core_wall_s"]:
                best[stack] = row
    ratio = best["more"]["core_wall_s"] / best["diffq-udp"]["core_wall_s"]
    if args.json:
        print(json.dumps({"runs": list(best.values()), "more_over_diffq_udp": ratio}, indent=2))
        return 0
    print(f"{SCENARIO.name}, {args.flows} flows, seed {args.seed}, "
          f"{best['more']['sim_time_s']:.0f} simulated s, best of {args.repeat}")
    print(f"{'stack':<12}{'wall (core) s':>14}{'events':>14}{'events/s':>14}{'aggregate kbit/s':>18}")
    for stack in STACKS:
        b = best[stack]
        print(f"{stack:<12}{b['core_wall_s']:>14.3f}{b['events']:>14,}{b['events_per_s']:>14,.0f}"
              f"{b['aggregate_throughput_bps'] / 1e3:>18.0f}")
    print(f"MORE / DiffQ-UDP wall time: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
