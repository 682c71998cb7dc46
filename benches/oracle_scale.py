#!/usr/bin/env python3
"""Benchmark: the optimum oracle's solve time and column count on the large shipped scenarios
(issue 22 item 5): mesh-7x7 (49 nodes), dpclo-fig9, dpclo-fig6 and dpclo-fig8 (108 nodes; fig8's
180 flows held at once) and more-testbed (46 nodes, 32 flows), each objective, static routes and
free multi-path routing. Prints a Markdown table (the README's): links and conflicts
the master constrains, columns (independent sets) generated, iterations, wall time of the
solve (the model's construction in the core is timed apart), the gap to the Lagrangian upper
bound when the solve ended (relative for the aggregate and max-min, per flow in ln(rate) for
proportional fairness) and why it ended.

    python benches/oracle_scale.py
    python benches/oracle_scale.py --scenario scenarios/mesh-7x7.toml --routing static --limit 120

``--limit S`` skips the remaining objectives of a (scenario, routing) once a solve took more than
S seconds (the timing is still printed); ``--time-limit S`` ends each solve at its first exact
pricing after S seconds (``xlayer.optimum.solve``), with the bound it reached; ``--gap G`` ends it
once the bound is within G (default ``xlayer.optimum.GAP_TOLERANCE``). Columns are the
independent sets generated; paths, those generated in the "generated links" form (else the
flows). Iterations and columns do not depend on the machine's load; the times do.
``--set NAME=VALUE`` (repeatable) sets one of ``xlayer.optimum``'s module constants for the
run (a Python literal: ``--set GREEDY_TRIES=64 --set PRICE_BOTH=False``), to time a variant
beside the defaults.

``--pricing-stats`` prints, after each solve, what its exact pricings priced: how many links had
a positive price (the maximum-weight independent set runs over those only) and the frontier of
the dynamic programming (``xlayer.optimum._frontier_mwis``) over them along reverse
Cuthill-McKee of their conflict sub-graph and along the order grown from it
(``_narrow_order``): min / median / max over the pricings, and how many would fit its 64 x
``FRONTIER_WORDS`` links. The widths are computed outside the timed pricing but inside the
solve, so its time is not comparable then.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

# the machine line every benchmark of a wall-time target prints (benches/_machine.py)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import _machine  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = ("mesh-7x7", "dpclo-fig9", "dpclo-fig6", "dpclo-fig8", "more-testbed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", help="scenario file (repeatable); default "
                    "mesh-7x7, dpclo-fig9, dpclo-fig6, dpclo-fig8 and more-testbed")
    ap.add_argument("--routing", default="static,multipath", help="comma-separated routings")
    ap.add_argument("--objective", default="proportional,aggregate,maxmin")
    ap.add_argument("--limit", type=float, default=300.0)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--gap", type=float, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="set a module constant of xlayer.optimum (a Python literal)")
    ap.add_argument("--pricing-stats", action="store_true",
                    help="after each solve, the exact pricings' priced links and frontiers")
    args = ap.parse_args()
    _machine.announce()
    import ast

    from xlayer import optimum as xo

    for item in args.set:
        name, _, value = item.partition("=")
        if not name.isupper() or not hasattr(xo, name):
            ap.error(f"--set {item}: xlayer.optimum has no constant {name!r}")
        setattr(xo, name, ast.literal_eval(value))
    stats: list = []
    if args.pricing_stats:
        _record_pricings(xo, stats)

    paths = args.scenario or [str(ROOT / "scenarios" / f"{s}.toml") for s in SCENARIOS]
    print("| scenario | routing | objective | form | links | conflicts | columns | paths "
          "| iterations | model | solve | gap | ended |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        t = time.perf_counter()
        m = xo.model(path)
        model_s = time.perf_counter() - t
        for routing in args.routing.split(","):
            for objective in args.objective.split(","):
                t = time.perf_counter()
                r = xo.solve(m, objective, routing, time_limit=args.time_limit, gap=args.gap)
                solve_s = time.perf_counter() - t
                s = r.summary
                print(f"| {pathlib.Path(path).stem} | {routing} | {objective} | {s['form']} "
                      f"| {s['links']} | {s['conflicts']} | {s['columns']} | {s['paths']} "
                      f"| {s['iterations']} "
                      f"| {model_s:.1f} s | {solve_s:.1f} s | {s['gap']:.1e} | {s['stopped']} |",
                      flush=True)
                if args.pricing_stats:
                    _print_pricings(xo, stats)
                    stats.clear()
                if solve_s > args.limit:
                    break
    return 0


def _record_pricings(xo, stats: list) -> None:
    """Wraps the exact pricing so that each call appends (priced links, frontier along reverse
    Cuthill-McKee of their conflict sub-graph, along the order grown from it) to ``stats``."""
    import numpy as np
    from scipy import sparse
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    pricing = xo._max_weight_independent_set

    def recorded(p, weights, more=None):
        cand = np.flatnonzero(weights > 1e-12 * max(1.0, float(weights.max(initial=0.0))))
        if len(cand):
            sub = p.adjacent[np.ix_(cand, cand)]
            rcm = np.asarray(reverse_cuthill_mckee(sparse.csr_matrix(sub.astype(np.int8)),
                                                   symmetric_mode=True), dtype=int)
            stats.append((len(cand), xo._frontier_width(sub, rcm),
                          xo._frontier_width(sub, xo._narrow_order(sub, rcm[::-1]))))
        return pricing(p, weights, more)

    xo._max_weight_independent_set = recorded


def _print_pricings(xo, stats: list) -> None:
    import numpy as np

    if not stats:
        print("  exact pricings: none", flush=True)
        return
    a = np.asarray(stats)
    fit = 64 * xo.FRONTIER_WORDS

    def spread(col) -> str:
        return f"{col.min()} / {int(np.median(col))} / {col.max()}"

    print(f"  exact pricings: {len(a)}; priced links {spread(a[:, 0])}; frontier along reverse "
          f"Cuthill-McKee {spread(a[:, 1])}, grown {spread(a[:, 2])}; within {fit} links: "
          f"{int((a[:, 1:].min(axis=1) <= fit).sum())}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
