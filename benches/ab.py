#!/usr/bin/env python3
"""Benchmark: two builds of xlayer side by side, both at once on two cores, pair after pair.

On this project's shared machines one binary's wall time swings by a third and more within an
hour, so two builds timed one after the other differ by the hour as much as by the code. Run at
the same moment, one a core, both meet the same machine: the ratio of each pair's times is far
steadier than either time (the twenty-sixth session: single runs of one build ranged over 50 %
within an hour, while one build against itself gave medians of 1.046 and 0.973 over 8 pairs, so
read a median within ±5 % of 1 as no difference). Each side is a folder holding an installed
xlayer:

    pip install --no-deps --target /tmp/a .      # one build (XLAYER_PGO=0 for one without the profile)
    git stash; pip install --no-deps --target /tmp/b .; git stash pop   # the other
    python benches/ab.py /tmp/a /tmp/b                      # dpclo-fig8's three stacks, 200 s, 10 pairs
    python benches/ab.py /tmp/a /tmp/b --scenario scenarios/mesh-7x7.toml --pairs 20
    python benches/ab.py /tmp/a /tmp/b --stacks tcp-sack --duration 100 --json

Prints, per stack (or for the scenario), the median of B's core wall time over A's and the range
of the ratios; below 1, B is faster. The core's own clock is the figure (``wall_s``), as in
``benches/dpclo_fig8.py``. It needs two cores to mean anything: on one, the two runs take turns.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import statistics
import subprocess
import sys
from typing import Dict, List

# the machine line every benchmark of a wall-time target prints (benches/_machine.py)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _machine  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIG8 = ROOT / "benches" / "dpclo_fig8.py"


def _site(path: str) -> pathlib.Path:
    site = pathlib.Path(path).resolve()
    if not (site / "xlayer" / "__init__.py").is_file():
        raise SystemExit(f"ab: error: {path} holds no installed xlayer (xlayer/__init__.py): "
                         "install one there with pip install --no-deps --target DIR .")
    return site


def _one(site: pathlib.Path, args: argparse.Namespace) -> Dict[str, float]:
    """One run in the build at ``site``: {stack or scenario name: core wall seconds}."""
    env = dict(os.environ, PYTHONPATH=str(site))
    if args.scenario:
        cmd = [sys.executable, "-m", "xlayer", "run", args.scenario, "--json"]
        if args.duration:
            cmd += ["--set", f"duration_s={args.duration}"]
    else:
        cmd = [sys.executable, str(FIG8), "--json", "--stacks", args.stacks]
        if args.duration:
            cmd += ["--duration", str(args.duration)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"ab: error: {' '.join(cmd)} in {site} failed: "
                         f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
    out = json.loads(proc.stdout)
    if args.scenario:  # `xlayer run --json` prints the summary
        return {pathlib.Path(args.scenario).stem: float(out["wall_s"])}
    return {row["stack"]: float(row["core_wall_s"]) for row in out}


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", help="folder holding build A (pip install --target)")
    ap.add_argument("b", help="folder holding build B")
    ap.add_argument("--pairs", type=int, default=10, help="pairs of runs (default 10)")
    ap.add_argument("--stacks", default="dpclo-zmacplus,tcp-sack,tcp-few",
                    help="benches/dpclo_fig8.py's stacks (default all three)")
    ap.add_argument("--duration", type=float, default=None, metavar="S",
                    help="simulated seconds (default 200 for dpclo-fig8, the scenario's own otherwise)")
    ap.add_argument("--scenario", metavar="TOML", help="time `xlayer run TOML` instead of dpclo-fig8")
    ap.add_argument("--json", action="store_true", help="print the pairs and ratios as JSON")
    args = ap.parse_args(argv)
    _machine.announce()
    if args.pairs < 1:
        ap.error(f"--pairs must be at least 1, found {args.pairs}")
    if args.duration is not None and args.duration <= 0:
        ap.error(f"--duration must be positive, found {args.duration}")
    if args.duration is None and not args.scenario:
        args.duration = 200.0
    a, b = _site(args.a), _site(args.b)
    pairs: List[Dict[str, Dict[str, float]]] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for i in range(args.pairs):
            fa, fb = pool.submit(_one, a, args), pool.submit(_one, b, args)
            ra, rb = fa.result(), fb.result()
            pairs.append({"a": ra, "b": rb})
            print(f"  pair {i + 1}/{args.pairs}: " + ", ".join(
                f"{k} {ra[k]:.3f} / {rb[k]:.3f} s" for k in ra), file=sys.stderr, flush=True)
    ratios = {k: [p["b"][k] / p["a"][k] for p in pairs] for k in pairs[0]["a"]}
    summary = {k: {"median_ratio": statistics.median(v), "min_ratio": min(v), "max_ratio": max(v),
                   "median_a_s": statistics.median(p["a"][k] for p in pairs),
                   "median_b_s": statistics.median(p["b"][k] for p in pairs)}
               for k, v in ratios.items()}
    if args.json:
        print(json.dumps({"pairs": pairs, "ratios": summary}, indent=2))
        return 0
    print(f"{'':18s} {'A s':>8s} {'B s':>8s}  B/A median (range) over {args.pairs} pairs run at once")
    for k, s in summary.items():
        print(f"{k:18s} {s['median_a_s']:8.3f} {s['median_b_s']:8.3f}  {s['median_ratio']:.3f} "
              f"({s['min_ratio']:.3f}-{s['max_ratio']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
