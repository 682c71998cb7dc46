#!/usr/bin/env python3
"""Every shipped scenario against the optimum oracle (issue 22 items 4 and 6): each scenario
runs (its own stack and seed unless ``--stacks``, ``--seed``), then ``xlayer.oracle`` holds the run against
the bound of the routing it could use (static routes, or free multi-path routing for DSDV,
DPCLO, multi-path DiffQ, DCLO). Prints a Markdown table: the run's fraction of the optimal
utility (exp((U - U*)/N), the geometric mean of measured/optimal over the flows), its fraction
of the largest aggregate, the largest measured/optimal of one flow, run and oracle wall times.
Exits 1 when a fraction exceeds 1 beyond ``xlayer.optimum.FRACTION_TOLERANCE`` (a run above
the optimum: the model is wrong), 0 otherwise. Scenarios the oracle refuses (wired links) and
sweep files are listed as skipped.

    python validation/oracle_shipped.py                      # every scenarios/*.toml
    python validation/oracle_shipped.py chain mesh-7x7       # some of them
    python validation/oracle_shipped.py --stacks tcp-sack,dpclo-zmacplus dpclo-fig9 --time-limit 60

``--time-limit S`` ends each solve at its first exact pricing after S seconds
(``xlayer.optimum.solve``); a fraction whose bound then has a gap is printed as a range, from
the fraction against the upper bound (what it is at least) to the one against the best
solution found (what it is at most).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _pct(low: float, high: float) -> str:
    """A fraction in %, or the range it lies in when the bound was not reached."""
    if f"{100 * low:.1f}" == f"{100 * high:.1f}":
        return f"{100 * high:.1f}"
    return f"{100 * low:.1f}-{100 * high:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="scenario stems (default: every scenarios/*.toml)")
    ap.add_argument("--seed", type=int, default=None, help="default: the scenario's own")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per solve")
    ap.add_argument("--stacks", default="", help="comma-separated stack presets to run each "
                    "scenario with (default: the scenario's own)")
    args = ap.parse_args()
    import xlayer
    from xlayer import optimum as xo
    from xlayer.errors import XlayerError
    from xlayer.scenario import load_toml_file

    names = args.names or sorted(p.stem for p in (ROOT / "scenarios").glob("*.toml"))
    stacks = [s for s in args.stacks.split(",") if s] or [None]
    print("| scenario | stack | routing | utility % | aggregate % | largest flow measured/optimal "
          "| measured / optimal aggregate | run | oracle |")
    print("|---|---|---|---|---|---|---|---|---|")
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = ROOT / "scenarios" / f"{name}.toml"
            if "scenario" in load_toml_file(path):
                print(f"| {name} | | skipped: a sweep file | | | | | | |")
                continue
            try:
                xo.model(str(path))
            except XlayerError as e:
                print(f"| {name} | | skipped: {str(e).splitlines()[0][:70]} | | | | | | |")
                continue
            for stack in stacks:
                over = [f"stack.preset={stack}"] if stack else []
                out = pathlib.Path(tmp) / f"{name}-{stack or 'own'}"
                t0 = time.perf_counter()
                xlayer.run(str(path), out=out, overrides=over, seed=args.seed)
                t1 = time.perf_counter()
                o = xo.oracle(out, time_limit=args.time_limit)
                t2 = time.perf_counter()
                s = o.summary
                fu, fa = s["fraction_utility"], s["fraction_aggregate"]
                if fu > 1 + xo.FRACTION_TOLERANCE or fa > 1 + xo.FRACTION_TOLERANCE:
                    bad.append(f"{name} ({stack or 'own stack'})")
                print(f"| {name} | {stack or 'own'} | {s['routing']} "
                      f"| {_pct(s.get('fraction_utility_low', fu), fu)} "
                      f"| {_pct(s.get('fraction_aggregate_low', fa), fa)} "
                      f"| {o.flows['measured_over_optimal'].max():.2f} "
                      f"| {s['measured_aggregate_bps'] / 1e6:.3f} / "
                      f"{s['optimal_aggregate_bps'] / 1e6:.3f} Mbit/s "
                      f"| {t1 - t0:.1f} s | {t2 - t1:.1f} s |", flush=True)
    if bad:
        print("above the optimum: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
