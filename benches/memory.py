#!/usr/bin/env python3
"""Benchmark: resident memory over a long run stays flat (issue 14).

Runs mesh-7x7 (49 nodes, 16 UDP CBR flows) with its flows stretched over ``--duration``
simulated seconds — the default 8,850 s executes about 10^9 events — and prints the events
executed and the process's resident set size (VmRSS) at every tenth of the run, then after the
results are read. Memory that grows with the run (a per-packet record) shows as a rising RSS.

    python benches/memory.py [--duration 8850] [--scenario scenarios/mesh-7x7.toml]
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "mesh-7x7.toml"))
    ap.add_argument("--duration", type=float, default=8850.0, help="simulated seconds (default 8850)")
    args = ap.parse_args()
    try:
        import xlayer
        from xlayer.scenario import load_scenario
    except ImportError:
        print("xlayer is not installed: run `pip install .` in the repository first", file=sys.stderr)
        return 2
    sc = load_scenario(args.scenario)
    sc["duration_s"] = args.duration
    for f in sc.get("flows", []):
        f["stop_s"] = args.duration
    sim = xlayer.Simulation(sc)
    t0 = time.perf_counter()
    print(f"{'fraction':>8} {'events':>15} {'RSS MB':>8} {'wall s':>7}")
    print(f"{0.0:>8.1f} {0:>15,} {rss_mb():>8.1f} {0.0:>7.0f}", flush=True)
    for i in range(1, 11):
        sim.run_until(args.duration * i / 10)
        print(f"{i / 10:>8.1f} {sim.events():>15,} {rss_mb():>8.1f} {time.perf_counter() - t0:>7.0f}",
              flush=True)
    r = sim.results()
    print(f"results read: {len(r.flows)} flows, RSS {rss_mb():.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
