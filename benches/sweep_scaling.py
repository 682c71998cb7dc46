#!/usr/bin/env python3
"""Benchmark: a CPU-bound sweep on a local Dask cluster of 1 worker, then of 2 workers.

The sweep is ``--runs`` seeds of the mesh-7x7 scenario (49 nodes, 16 saturating CBR flows, 60
simulated seconds, about 1 s of CPU each). Each cluster is started before the clock starts, so
the times are those of the runs themselves (plus writing their result folders); the ratio
``time(1 worker) / time(2 workers)`` is printed, about 2 when the sweep scales on 2 cores.

    python benches/sweep_scaling.py [--runs 12] [--duration 60] [--json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def time_sweep(sweep_doc: dict, workers: int) -> float:
    from distributed import LocalCluster

    from xlayer.sweeps import load_sweep, plan_runs, run_planned

    spec = load_sweep(sweep_doc)
    runs = plan_runs(spec)
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=50)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            outcome = run_planned(spec, runs, pathlib.Path(tmp) / "sweep",
                                  scheduler=cluster.scheduler_address)
            elapsed = time.perf_counter() - t0
    finally:
        cluster.close()
    if outcome.ran != len(runs):
        raise SystemExit(f"only {outcome.ran} of {len(runs)} runs finished: {outcome.failures}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=12, help="runs in the sweep (default 12)")
    ap.add_argument("--duration", type=float, default=60.0,
                    help="simulated seconds per run (default 60)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    try:
        import xlayer  # noqa: F401
    except ImportError:
        print("xlayer is not installed: run `pip install .` in the repository first",
              file=sys.stderr)
        return 2
    doc = {
        "name": "scaling",
        "scenario": str(ROOT / "scenarios" / "mesh-7x7.toml"),
        "overrides": [f"duration_s={args.duration}"],
        "seeds": args.runs,
    }
    one = time_sweep(doc, 1)
    two = time_sweep(doc, 2)
    row = {"runs": args.runs, "duration_s": args.duration, "wall_1_worker_s": round(one, 3),
           "wall_2_workers_s": round(two, 3), "speedup": round(one / two, 3)}
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{args.runs} runs of mesh-7x7 ({args.duration:g} simulated s each)")
        print(f"  1 worker : {one:7.2f} s")
        print(f"  2 workers: {two:7.2f} s")
        print(f"  ratio 1/2: {one / two:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
