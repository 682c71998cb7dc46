#!/usr/bin/env python3
"""Benchmark: resident memory of a run with pcap capture on (issue 14 item 7).

Runs a scenario (mesh-7x7-tcp by default, 49 nodes, 16 TCP flows) for ``--duration`` simulated
seconds with ``output.pcap = true`` and the result written to ``--out`` (a temporary folder by
default), and prints the process's resident set size (VmRSS) at every tenth of the run, its
peak (``ru_maxrss``), and the size of the captures written. Captures held in memory show as an
RSS rising with the capture; streamed to disk, RSS stays flat while the files grow.

    python benches/pcap_memory.py [--duration 40] [--scenario scenarios/mesh-7x7-tcp.toml]
                                  [--out DIR] [--no-out]

``--no-out`` runs ``xlayer.Simulation(...).run()`` without a result folder instead of
``xlayer.run(out=...)`` (the captures then go to the result's temporary folder).
"""
from __future__ import annotations

import argparse
import pathlib
import resource
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "mesh-7x7-tcp.toml"))
    ap.add_argument("--duration", type=float, default=40.0, help="simulated seconds (default 40)")
    ap.add_argument("--out", help="result folder (default: a temporary one, removed at the end)")
    ap.add_argument("--no-out", action="store_true",
                    help="run Simulation(...).run() without writing a result folder")
    args = ap.parse_args()
    try:
        import xlayer
    except ImportError:
        print("xlayer is not installed: run `pip install .` in the repository first",
              file=sys.stderr)
        return 2
    print(f"xlayer from {pathlib.Path(xlayer.__file__).parent}")
    overrides = ["output.pcap=true", f"duration_s={args.duration}"]
    samples = []
    t0 = time.perf_counter()

    def progress(now_s: float, end_s: float) -> None:
        samples.append((now_s, rss_mb()))

    tmp = None
    out = args.out
    if out is None and not args.no_out:
        tmp = tempfile.mkdtemp(prefix="xlayer-pcap-bench-")
        out = str(pathlib.Path(tmp) / "result")
    before = rss_mb()
    try:
        if args.no_out:
            result = xlayer.Simulation(args.scenario, overrides=overrides).run(progress=progress)
        else:
            result = xlayer.run(args.scenario, overrides=overrides, out=out, progress=progress)
        wall = time.perf_counter() - t0
        print(f"{'sim s':>7} {'RSS MB':>8}")
        print(f"{0.0:>7.1f} {before:>8.1f}")
        for now_s, rss in samples[9::10]:
            print(f"{now_s:>7.1f} {rss:>8.1f}")
        if out is not None:
            sizes = [f.stat().st_size for f in pathlib.Path(out).glob("node*.pcap")]
        elif hasattr(result.pcaps, "path"):  # captures streamed to files
            sizes = [pathlib.Path(result.pcaps.path(n)).stat().st_size for n in result.pcaps]
        else:  # captures held in memory (xlayer before streaming)
            sizes = [len(data) for data in result.pcaps.values()]
        total = sum(sizes)
        print(f"after the run: RSS {rss_mb():.1f} MB, peak RSS {peak_rss_mb():.1f} MB, "
              f"wall {wall:.1f} s, events {result.summary['events']:,}")
        print(f"captures: {len(sizes)} files, {total / 1e6:.1f} MB in total")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
