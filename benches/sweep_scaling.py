#!/usr/bin/env python3
"""Benchmark: a CPU-bound sweep on a local Dask cluster of 1 worker, then of 2 workers.

The sweep is ``--runs`` seeds of the mesh-7x7 scenario (49 nodes, 16 saturating CBR flows, 60
simulated seconds, about 1 s of CPU each). Each cluster is started before the clock starts, so
the times are those of the runs themselves (plus writing their result folders); the ratio
``time(1 worker) / time(2 workers)`` is printed, about 2 when the sweep scales on 2 cores.
For scale, the same runs are then timed in a plain process pool of 1 and 2 processes (no Dask):
two runs side by side on a 2-core virtual machine do not each get a full core's speed, so that
ratio is the ceiling the sweep's is compared with.

    python benches/sweep_scaling.py [--runs 12] [--duration 60] [--repeat 2] [--json]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def time_sweep(sweep_doc: dict, workers: int) -> "tuple[float, float]":
    """``(wall time of the sweep, sum of its runs' own wall_s)`` on a fresh local cluster."""
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
            import pandas as pd

            busy = float(pd.read_parquet(pathlib.Path(tmp) / "sweep" / "runs.parquet")
                         ["wall_s"].sum())
    finally:
        cluster.close()
    if outcome.ran != len(runs):
        raise SystemExit(f"only {outcome.ran} of {len(runs)} runs finished: {outcome.failures}")
    return elapsed, busy


def _plain_run(args: tuple) -> float:
    import xlayer

    scenario, seed, duration = args
    return xlayer.run(scenario, seed=seed, overrides=[f"duration_s={duration}"]).summary["wall_s"]


def time_plain_processes(runs: int, duration: float, workers: int) -> float:
    """The same runs in a plain process pool, no Dask: what the machine itself allows."""
    from concurrent.futures import ProcessPoolExecutor

    scenario = str(ROOT / "scenarios" / "mesh-7x7.toml")
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_plain_run, [(scenario, 1, 3.0)] * workers))  # start the processes
        t0 = time.perf_counter()
        list(pool.map(_plain_run, [(scenario, seed, duration) for seed in range(1, runs + 1)]))
        return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=12, help="runs in the sweep (default 12)")
    ap.add_argument("--duration", type=float, default=60.0,
                    help="simulated seconds per run (default 60)")
    ap.add_argument("--repeat", type=int, default=2,
                    help="sweeps per worker count, alternated; the fastest counts (default 2)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip timing the same runs in a plain process pool")
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
    ones, twos = [], []
    for _ in range(max(1, args.repeat)):  # alternated, so slow spells of the machine hit both
        ones.append(time_sweep(doc, 1))
        twos.append(time_sweep(doc, 2))
    (one, busy1), (two, busy2) = min(ones), min(twos)
    row = {"runs": args.runs, "duration_s": args.duration, "wall_1_worker_s": round(one, 3),
           "wall_2_workers_s": round(two, 3), "speedup": round(one / two, 3),
           "runs_wall_sum_1_worker_s": round(busy1, 3), "runs_wall_sum_2_workers_s": round(busy2, 3),
           "efficiency_2_workers": round(busy2 / (2 * two), 3)}
    if not args.no_baseline:
        p1 = time_plain_processes(args.runs, args.duration, 1)
        p2 = time_plain_processes(args.runs, args.duration, 2)
        row.update({"plain_1_process_s": round(p1, 3), "plain_2_processes_s": round(p2, 3),
                    "plain_speedup": round(p1 / p2, 3)})
    if args.json:
        print(json.dumps(row))
    else:
        print(f"{args.runs} runs of mesh-7x7 ({args.duration:g} simulated s each)")
        print(f"  sweep, 1 worker : {one:7.2f} s")
        print(f"  sweep, 2 workers: {two:7.2f} s")
        print(f"  ratio 1/2       : {one / two:7.2f}x   (best of {max(1, args.repeat)} each)")
        print(f"  with 2 workers the runs' own times add up to {busy2:.2f} s: the workers were "
              f"busy {100 * busy2 / (2 * two):.0f} % of the sweep's wall time")
        if not args.no_baseline:
            print(f"  (the same runs in a plain process pool, no Dask: {p1:.2f} s on 1 process, "
                  f"{p2:.2f} s on 2, ratio {p1 / p2:.2f}x: the machine's own ceiling)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
