#!/usr/bin/env python3
"""Benchmark: a sweep on a local Dask cluster of 1 and of 2 workers, against a plain process pool.

Two sweeps of mesh-7x7 (49 nodes, 16 saturating CBR flows), one seed per run:

- ``short``: ``--short-runs`` runs (default 200) of ``--short-duration`` simulated seconds
  (default 2: a few tens of ms of wall time each), where Dask's cost per task used to show;
- ``long``: ``--long-runs`` runs (default 12) of ``--long-duration`` simulated seconds (default
  60: about 1 s of CPU each).

For each, the sweep (``run_planned``, which writes every run's folder and builds the combined
tables) is timed on 1 and on 2 workers, and the same runs in a plain ``ProcessPoolExecutor`` of
1 and 2 processes, each running a run and writing its folder through the sweep's store (the
same work without Dask; the pool builds no combined tables). Clusters are started, and xlayer
preloaded on them as the sweep's own local cluster does, before the clock starts; pools run a
few runs first. The figures are the speed-ups ``time(1) / time(2)`` of each and their ratio,
``sweep speed-up / pool speed-up`` (the target: at least 0.95), and the pool's time on 2
processes over the sweep's on 2 workers. Sweeps and pools are alternated, ``--repeat`` times
(default 3); the fastest of each counts, and the range of the ratio over the repetitions is
printed, as the machine may be shared. An older xlayer (no ``batch_runs``, no preload) is
measured as it is, options it lacks left out.

    python benches/sweep_scaling.py [--only short|long] [--repeat 3] [--json]
    python benches/sweep_scaling.py --batch 1 --client-writes   # unbatched, written by the client
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "scenarios" / "mesh-7x7.toml")


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and every process under it, so far."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:  # ended meanwhile
            pass
    return total


def time_sweep(sweep_doc: dict, workers: int, options: dict) -> "tuple[float, float, float]":
    """``(wall time of the sweep, sum of its runs' own wall_s, CPU time of the client and the
    workers)`` on a fresh local cluster."""
    import pandas as pd
    from distributed import LocalCluster

    from xlayer.sweeps import load_sweep, plan_runs, run_planned

    spec = load_sweep(sweep_doc)
    runs = plan_runs(spec)
    accepted = inspect.signature(run_planned).parameters  # older xlayer: fewer options
    kwargs = {k: v for k, v in options.items() if k in accepted}
    try:  # the local cluster xlayer starts, preloaded as it is (an older xlayer: neither)
        from xlayer.sweeps import local_cluster, preload_workers
    except ImportError:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=50)
    else:
        cluster = local_cluster(workers)
        from distributed import Client

        with Client(cluster) as client:
            preload_workers(client)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            c0 = cpu_seconds()
            t0 = time.perf_counter()
            outcome = run_planned(spec, runs, pathlib.Path(tmp) / "sweep",
                                  scheduler=cluster.scheduler_address, **kwargs)
            elapsed = time.perf_counter() - t0
            cpu = cpu_seconds() - c0
            busy = float(pd.read_parquet(pathlib.Path(tmp) / "sweep" / "runs.parquet")
                         ["wall_s"].sum())
    finally:
        cluster.close()
    if outcome.ran != len(runs):
        raise SystemExit(f"only {outcome.ran} of {len(runs)} runs finished: {outcome.failures}")
    return elapsed, busy, cpu


def overrides(duration: float) -> "list[str]":
    """mesh-7x7 shortened to ``duration`` simulated seconds (its 2 s warm-up shortened too)."""
    return [f"duration_s={duration}", f"warmup_s={min(2.0, duration / 4)}"]


def _plain_run(args: tuple) -> float:
    """One run, its folder written as a sweep's worker writes it (through the store)."""
    import xlayer
    from xlayer.store import SweepStore

    seed, duration, out = args
    result = xlayer.run(SCENARIO, seed=seed, overrides=overrides(duration))
    if out is not None:
        SweepStore(out).write_run({"run": f"seed{seed}", "seed": seed}, result)
    return result.summary["wall_s"]


def time_plain_processes(runs: int, duration: float, workers: int) -> "tuple[float, float]":
    """``(wall time, CPU time)`` of the same runs in a plain process pool, no Dask, each
    writing its result folder."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool, \
            tempfile.TemporaryDirectory() as tmp:
        for sub in ("runs", "failed"):
            os.mkdir(os.path.join(tmp, sub))
        list(pool.map(_plain_run, [(1, 2.0, None)] * (2 * workers)))  # start the processes
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        list(pool.map(_plain_run, [(seed, duration, tmp) for seed in range(1, runs + 1)]))
        return time.perf_counter() - t0, cpu_seconds() - c0


def measure(name: str, runs: int, duration: float, repeat: int, options: dict,
            baseline: bool) -> dict:
    doc = {"name": f"scaling-{name}", "scenario": SCENARIO,
           "overrides": overrides(duration), "seeds": runs}
    sweeps = {1: [], 2: []}
    pools = {1: [], 2: []}
    for _ in range(max(1, repeat)):  # alternated, so slow spells of the machine hit all
        for w in (1, 2):
            sweeps[w].append(time_sweep(doc, w, options))
            if baseline:
                pools[w].append(time_plain_processes(runs, duration, w))
    (one, _, _), (two, busy2, _) = min(sweeps[1]), min(sweeps[2])
    row = {"sweep": name, "runs": runs, "duration_s": duration,
           "wall_1_worker_s": round(one, 3), "wall_2_workers_s": round(two, 3),
           "speedup": round(one / two, 3),
           "runs_wall_mean_s": round(busy2 / runs, 4),
           "efficiency_2_workers": round(busy2 / (2 * two), 3),
           "sweep_cpu_per_run_ms": round(1000 * min(c for _, _, c in sweeps[2]) / runs, 1),
           "wall_1_worker_all_s": [round(t, 3) for t, _, _ in sweeps[1]],
           "wall_2_workers_all_s": [round(t, 3) for t, _, _ in sweeps[2]]}
    if baseline:
        (p1, _), (p2, _) = min(pools[1]), min(pools[2])
        per_repeat = [(s1[0] / s2[0]) / (q1[0] / q2[0]) for s1, s2, q1, q2 in
                      zip(sweeps[1], sweeps[2], pools[1], pools[2])]
        row.update({"plain_1_process_s": round(p1, 3), "plain_2_processes_s": round(p2, 3),
                    "plain_speedup": round(p1 / p2, 3),
                    "speedup_vs_plain": round((one / two) / (p1 / p2), 3),
                    "speedup_vs_plain_range": [round(min(per_repeat), 3),
                                               round(max(per_repeat), 3)],
                    "plain_2_over_sweep_2": round(p2 / two, 3),
                    "plain_cpu_per_run_ms": round(1000 * min(c for _, c in pools[2]) / runs, 1),
                    "plain_1_process_all_s": [round(t, 3) for t, _ in pools[1]],
                    "plain_2_processes_all_s": [round(t, 3) for t, _ in pools[2]]})
    return row


def report(row: dict, repeat: int) -> None:
    print(f"{row['sweep']}: {row['runs']} runs of mesh-7x7 ({row['duration_s']:g} simulated s, "
          f"{1000 * row['runs_wall_mean_s']:.0f} ms of wall time each)")
    print(f"  sweep, 1 worker : {row['wall_1_worker_s']:7.2f} s")
    print(f"  sweep, 2 workers: {row['wall_2_workers_s']:7.2f} s   speed-up "
          f"{row['speedup']:.2f}x (best of {repeat} each)")
    print(f"  with 2 workers the runs' own times add up to {100 * row['efficiency_2_workers']:.0f} "
          f"% of 2 x the sweep's wall time")
    if "plain_speedup" in row:
        print(f"  CPU time per run (all processes, 2 workers, least of the repetitions): sweep "
              f"{row['sweep_cpu_per_run_ms']:.1f} ms, plain pool {row['plain_cpu_per_run_ms']:.1f} ms")
        lo, hi = row["speedup_vs_plain_range"]
        print(f"  plain process pool: {row['plain_1_process_s']:.2f} s on 1, "
              f"{row['plain_2_processes_s']:.2f} s on 2, speed-up {row['plain_speedup']:.2f}x")
        print(f"  sweep speed-up / pool speed-up: {row['speedup_vs_plain']:.2f} "
              f"(per repetition {lo:.2f}-{hi:.2f}); pool time / sweep time on 2: "
              f"{row['plain_2_over_sweep_2']:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("short", "long"), help="measure one of the two sweeps")
    ap.add_argument("--short-runs", type=int, default=200)
    ap.add_argument("--short-duration", type=float, default=2.0)
    ap.add_argument("--long-runs", type=int, default=12)
    ap.add_argument("--long-duration", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=3,
                    help="measurements of each, alternated; the fastest counts (default 3)")
    ap.add_argument("--batch", type=int, metavar="N",
                    help="runs per task (default: the sweep's own choice)")
    ap.add_argument("--client-writes", action="store_true",
                    help="the client writes the run folders (as on an unshared cluster)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON lines")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip timing the same runs in a plain process pool")
    args = ap.parse_args()
    try:
        import xlayer  # noqa: F401
        import xlayer.results  # noqa: F401 - pandas: imported once, not in the first sweep
    except ImportError:
        print("xlayer is not installed: run `pip install .` in the repository first",
              file=sys.stderr)
        return 2
    # The cluster is local: its workers see the folder (as on xlayer's own local cluster).
    options = {"batch_runs": args.batch, "shared_folder": not args.client_writes}
    which = [("short", args.short_runs, args.short_duration),
             ("long", args.long_runs, args.long_duration)]
    for name, runs, duration in which:
        if args.only and name != args.only:
            continue
        row = measure(name, runs, duration, args.repeat, options, not args.no_baseline)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            report(row, max(1, args.repeat))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
