#!/usr/bin/env python3
"""Benchmark: cost per event as the network grows at fixed density (issue 15).

Builds square grids of ``--nodes`` nodes (default 900 and 10,000) at 200 m spacing with
mesh-7x7's radio (802.11b 11 Mbit/s, range propagation, 250 m: four neighbours each), and N/6
UDP CBR flows of 3 hops along a row (sources drawn with a fixed seed, 500 kbit/s of 1000-byte
packets each, static routing), and runs each for ``--duration`` simulated seconds. Prints the
events executed, the core's wall time, nanoseconds per event and the process's peak resident
memory. At fixed density a transmission reaches the same number of nodes whatever N, so the
cost per event should stay flat; what grows with N is the event queue (its sift-down misses
the cache) and any state sized N × something.

    python benches/scale.py [--nodes 900,10000] [--duration 5] [--repeat 1]
    python benches/scale.py --write-toml DIR   # the scenarios as TOML, for the Rust runner:
    target/release/examples/run_scenario DIR/scale-900.toml
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import resource
import sys
import time
from typing import Any, Dict

# the machine line every benchmark of a wall-time target prints (benches/_machine.py)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _machine  # noqa: E402

HOPS = 3
SPACING_M = 200.0


def scenario(nodes: int, duration_s: float) -> Dict[str, Any]:
    """A side × side grid (side = round(sqrt(nodes))) with side² / 6 flows of 3 hops."""
    side = int(round(math.sqrt(nodes)))
    n = side * side
    rng = random.Random(15)
    flows = []
    for _ in range(n // 6):
        row, col = rng.randrange(side), rng.randrange(side - HOPS)
        src, dst = row * side + col, row * side + col + HOPS
        if rng.random() < 0.5:
            src, dst = dst, src
        flows.append({"src": src, "dst": dst, "rate_bps": 5.0e5, "payload_bytes": 1000,
                      "start_s": 0.5 + rng.random() * 0.5, "stop_s": duration_s})
    return {
        "name": f"scale-{n}",
        "seed": 1,
        "duration_s": duration_s,
        "warmup_s": 0.0,
        "radio": {"standard": "802.11b", "data_rate_mbps": 11.0, "basic_rate_mbps": 11.0,
                  "preamble": "long", "propagation": "range", "tx_range_m": 250.0,
                  "rts_cts": False},
        "mac": {"queue_packets": 50},
        "topology": {"kind": "grid", "rows": side, "cols": side, "spacing_m": SPACING_M},
        "flows": flows,
    }


def to_toml(sc: Dict[str, Any]) -> str:
    def val(v: Any) -> str:
        return json.dumps(v)

    lines = [f"{k} = {val(v)}" for k, v in sc.items() if not isinstance(v, (dict, list))]
    for section in ("radio", "mac", "topology"):
        lines.append(f"\n[{section}]")
        lines += [f"{k} = {val(v)}" for k, v in sc[section].items()]
    for f in sc["flows"]:
        lines.append("\n[[flows]]")
        lines += [f"{k} = {val(v)}" for k, v in f.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="900,10000", help="comma-separated node counts (default 900,10000)")
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest is reported")
    ap.add_argument("--write-toml", metavar="DIR", help="write the scenarios as TOML into DIR and stop")
    args = ap.parse_args()
    _machine.announce()
    sizes = [int(s) for s in args.nodes.split(",") if s]
    if args.write_toml:
        out = pathlib.Path(args.write_toml)
        out.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            sc = scenario(n, args.duration)
            path = out / f"{sc['name']}.toml"
            path.write_text(to_toml(sc), encoding="utf-8")
            print(path)
        return 0
    try:
        import xlayer
    except ImportError:
        print("xlayer is not installed: run `pip install .` in the repository first", file=sys.stderr)
        return 2
    print(f"{'nodes':>7} {'flows':>6} {'events':>12} {'core s':>8} {'ns/event':>9} {'peak RSS MB':>12}")
    for n in sizes:
        sc = scenario(n, args.duration)
        best = None
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            s = xlayer.run(sc).summary
            wall = s.get("wall_s", time.perf_counter() - t0)
            if best is None or wall < best[1]:
                best = (s["events"], wall)
        assert best is not None
        events, wall = best
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{sc['topology']['rows'] ** 2:>7} {len(sc['flows']):>6} {events:>12,} {wall:>8.2f} "
              f"{wall / events * 1e9:>9.0f} {rss:>12.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
