#!/usr/bin/env python3
"""Run the mesh-7x7 scenario in xlayer and in ns-3 3.44 and print the results side by side.

    python validation/ns3/compare_mesh7x7.py            # table
    python validation/ns3/compare_mesh7x7.py --json     # the comparison as one JSON object
    python validation/ns3/compare_mesh7x7.py --repeat 3 # three pairs of runs, the median speed-up

ns-3 side: validation/ns3/mesh7x7.cc, built by validation/ns3/build.sh against the PyPI `ns3`
wheel (installed by build.sh if missing), run as a subprocess; its last stdout line is JSON.
xlayer side: ``python -m xlayer run scenarios/mesh-7x7.toml --json --out TMP`` as a process of its
own (install it with ``pip install .`` at the repository root), timed whole like the ns-3 program:
interpreter start, imports, set-up, the run and the result folder written.

Shown: per-flow throughput in both, the aggregate in both and their ratio, the flows that starve
(< 5 % of their 6 Mbit/s offered load) in each, event counts, and wall-clock seconds of each
with the speed-up. The two run one after the other, never at the same time.

A single pair's speed-up moves by 10 % from one pair to the next on a shared machine (the
xlayer process is under half a second, so its start-up after a minute of ns-3 weighs in it):
``--repeat N`` runs N pairs, each ns-3 then xlayer, prints every pair's times and speed-up and
the median, and checks that every repetition gave the same results (both are deterministic).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Optional

# the benchmarks' machine line (benches/_machine.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benches"))
import _machine  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCENARIO = REPO / "scenarios" / "mesh-7x7.toml"
BUILD_SH = HERE / "build.sh"
BINARY = HERE / "build" / "mesh7x7"

OFFERED_BPS = 6.0e6          # every flow offers 6 Mbit/s
STARVE_FRACTION = 0.05       # a flow starves below 5 % of its offered load


def fail(msg: str, code: int = 1) -> NoReturn:
    print(f"compare_mesh7x7: error: {msg}", file=sys.stderr)
    sys.exit(code)


def import_xlayer() -> Any:
    try:
        import xlayer  # noqa: F401
    except ImportError as e:
        fail(
            f"cannot import xlayer ({e}). Install it from the repository root first:\n"
            f"    cd {REPO} && pip install .",
            code=2,
        )
    return xlayer


def build_ns3() -> None:
    """Runs build.sh (a no-op when the binary is up to date); its messages go to stderr."""
    proc = subprocess.run(["bash", str(BUILD_SH), "mesh7x7"], stdout=sys.stderr, stderr=sys.stderr)
    if proc.returncode != 0 or not BINARY.exists():
        fail(f"building the ns-3 program failed (bash {BUILD_SH} exited {proc.returncode})")


def run_ns3(run: int, quiet: bool) -> Dict[str, Any]:
    if not quiet:
        print(f"running ns-3 ({BINARY.relative_to(REPO)} --run={run}); about a minute or more ...",
              file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run([str(BINARY), f"--run={run}"], capture_output=True, text=True)
    measured = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        fail(f"the ns-3 program exited {proc.returncode}")
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    try:
        res = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as e:
        fail(f"the ns-3 program printed no JSON on its last line ({e})")
    res["measured_wall_s"] = measured
    return res


def run_xlayer(seed: Optional[int], quiet: bool) -> Dict[str, Any]:
    """Runs ``xlayer run`` as a process of its own, as the ns-3 program runs, and times the whole
    of it (interpreter start, imports, set-up, the run, the result folder written)."""
    if not quiet:
        print(f"running xlayer ({SCENARIO.relative_to(REPO)}) ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="compare-mesh7x7-") as tmp:
        out = Path(tmp) / "result"
        cmd = [sys.executable, "-m", "xlayer", "run", str(SCENARIO), "--json", "--out", str(out)]
        if seed is not None:
            cmd += ["--seed", str(seed)]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        measured = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            fail(f"xlayer run exited {proc.returncode}")
        s = json.loads(proc.stdout)
        with open(out / "flows.csv", newline="", encoding="utf-8") as f:
            flows = [
                {"flow": int(r["flow"]), "src": int(r["src"]), "dst": int(r["dst"]),
                 "throughput_bps": float(r["throughput_bps"])}
                for r in csv.DictReader(f)
            ]
    return {
        "flows": flows,
        "aggregate_throughput_bps": float(s["aggregate_throughput_bps"]),
        "events": int(s["events"]) if s.get("events") is not None else None,
        "wall_s": float(s["wall_s"]),
        "measured_wall_s": measured,
        "seed": s.get("seed"),
    }


def starving(flows: List[Dict[str, Any]]) -> List[int]:
    return [f["flow"] for f in flows if f["throughput_bps"] < STARVE_FRACTION * OFFERED_BPS]


def ratio(a: float, b: float) -> Optional[float]:
    return a / b if b else None


def compare(xl: Dict[str, Any], ns: Dict[str, Any]) -> Dict[str, Any]:
    ns_by_flow = {f["flow"]: f for f in ns["flows"]}
    rows = []
    for f in sorted(xl["flows"], key=lambda f: f["flow"]):
        n = ns_by_flow.get(f["flow"])
        if n is None or (n["src"], n["dst"]) != (f["src"], f["dst"]):
            fail(f"flow {f['flow']} differs between the two runs: xlayer {f['src']}->{f['dst']}, "
                 f"ns-3 {n and (n['src'], n['dst'])}; the scenario files are out of sync")
        rows.append({
            "flow": f["flow"], "src": f["src"], "dst": f["dst"],
            "xlayer_bps": f["throughput_bps"], "ns3_bps": n["throughput_bps"],
            "ratio_xlayer_ns3": ratio(f["throughput_bps"], n["throughput_bps"]),
            "xlayer_starves": f["throughput_bps"] < STARVE_FRACTION * OFFERED_BPS,
            "ns3_starves": n["throughput_bps"] < STARVE_FRACTION * OFFERED_BPS,
        })
    if len(rows) != len(ns["flows"]):
        fail(f"xlayer has {len(rows)} flows, ns-3 {len(ns['flows'])}")
    xs, ns_s = set(starving(xl["flows"])), set(starving(ns["flows"]))
    # Speed-up from the end-to-end times measured here (process start and set-up included on
    # both sides); the simulators' own wall_s figures are reported as well.
    speedup = ratio(ns["measured_wall_s"], xl["measured_wall_s"])
    return {
        "scenario": "mesh-7x7",
        "ns3_version": ns.get("ns3_version"),
        "ns3_run": ns.get("run"),
        "xlayer_seed": xl.get("seed"),
        "offered_bps_per_flow": OFFERED_BPS,
        "starve_threshold_bps": STARVE_FRACTION * OFFERED_BPS,
        "flows": rows,
        "aggregate": {
            "xlayer_bps": xl["aggregate_throughput_bps"],
            "ns3_bps": ns["aggregate_throughput_bps"],
            "ratio_xlayer_ns3": ratio(xl["aggregate_throughput_bps"], ns["aggregate_throughput_bps"]),
        },
        "starving": {
            "xlayer": sorted(xs), "ns3": sorted(ns_s),
            "both": sorted(xs & ns_s), "only_xlayer": sorted(xs - ns_s), "only_ns3": sorted(ns_s - xs),
        },
        "events": {"xlayer": xl.get("events"), "ns3": ns.get("events")},
        "wall_s": {
            "xlayer_reported": xl["wall_s"], "xlayer_measured": xl["measured_wall_s"],
            "ns3_reported": ns.get("wall_s"), "ns3_measured": ns["measured_wall_s"],
            "speedup_ns3_over_xlayer": speedup,
        },
        "ns3_diagnostics": {k: ns.get(k) for k in ("tc_drops", "mac_drops", "phy_tx_frames")},
    }


def kbps(x: Optional[float]) -> str:
    return "-" if x is None else f"{x / 1e3:9.1f}"


def fmt_ratio(x: Optional[float]) -> str:
    return "     -" if x is None else f"{x:6.2f}"


def print_table(c: Dict[str, Any]) -> None:
    print(f"mesh-7x7: xlayer vs ns-3 {c['ns3_version']} (ns-3 run {c['ns3_run']}, "
          f"xlayer seed {c['xlayer_seed']}); throughput in kbit/s over [2, 60] s, "
          f"offered {OFFERED_BPS / 1e3:g} per flow")
    print(f"{'flow':>4} {'src':>4} {'dst':>4} {'xlayer':>9} {'ns-3':>9} {'ratio':>6}  starves")
    for r in c["flows"]:
        marks = ",".join(n for n, s in (("xlayer", r["xlayer_starves"]), ("ns-3", r["ns3_starves"]))
                         if s)
        print(f"{r['flow']:>4} {r['src']:>4} {r['dst']:>4} {kbps(r['xlayer_bps']):>9} "
              f"{kbps(r['ns3_bps']):>9} {fmt_ratio(r['ratio_xlayer_ns3'])}  {marks}")
    a = c["aggregate"]
    print(f"{'aggregate':>14} {kbps(a['xlayer_bps']):>9} {kbps(a['ns3_bps']):>9} "
          f"{fmt_ratio(a['ratio_xlayer_ns3'])}   (ratio = xlayer / ns-3)")
    s = c["starving"]
    thr = c["starve_threshold_bps"] / 1e3
    print(f"starving (< {thr:g} kbit/s): xlayer {len(s['xlayer'])} {s['xlayer']}, "
          f"ns-3 {len(s['ns3'])} {s['ns3']}")
    print(f"  in both {s['both']}; only xlayer {s['only_xlayer']}; only ns-3 {s['only_ns3']}")
    e = c["events"]
    print(f"events: xlayer {e['xlayer']}, ns-3 {e['ns3']}")
    w = c["wall_s"]
    sp = w["speedup_ns3_over_xlayer"]
    print(f"wall-clock s (measured here, set-up included): xlayer {w['xlayer_measured']:.2f}, "
          f"ns-3 {w['ns3_measured']:.2f}; speed-up {'-' if sp is None else f'{sp:.1f}x'}")
    print(f"wall-clock s (reported by each simulator): xlayer {w['xlayer_reported']:.2f}, "
          f"ns-3 {w['ns3_reported']:.2f}")


def same_results(a: Dict[str, Any], b: Dict[str, Any], side: str) -> None:
    """Fails unless two runs of one simulator gave the same flows (they are deterministic)."""
    if a["flows"] != b["flows"]:
        fail(f"two {side} runs of the same scenario gave different flows; the speed-ups would "
             "not compare the same work")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    ap.add_argument("--run", type=int, default=1, help="ns-3 RngRun (default 1; RngSeed is 1)")
    ap.add_argument("--xlayer-seed", type=int, default=None,
                    help="xlayer seed (default: the scenario's, 1)")
    ap.add_argument("--ns3-result", type=Path, default=None,
                    help="reuse a saved ns-3 JSON line (the program's stdout) instead of running it")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run N pairs (ns-3, then xlayer) and report every pair's speed-up and "
                    "their median (default 1)")
    args = ap.parse_args(argv)
    _machine.announce()
    if args.repeat < 1:
        fail(f"--repeat: must be at least 1, got {args.repeat}")
    if args.repeat > 1 and args.ns3_result is not None:
        fail("--repeat: times a fresh ns-3 run each time; it cannot reuse --ns3-result")

    import_xlayer()                 # fail fast, before the minute-long ns-3 run
    if args.ns3_result is not None:
        lines = [l for l in args.ns3_result.read_text().splitlines() if l.strip()]
        ns = json.loads(lines[-1])
        ns["measured_wall_s"] = ns.get("wall_s")
    else:
        build_ns3()
        ns = run_ns3(args.run, quiet=args.json)
    xl = run_xlayer(args.xlayer_seed, quiet=args.json)
    c = compare(xl, ns)
    pairs = [(ns["measured_wall_s"], xl["measured_wall_s"])]
    for i in range(1, args.repeat):
        if not args.json:
            print(f"pair {i + 1} of {args.repeat}", file=sys.stderr, flush=True)
        ns_i = run_ns3(args.run, quiet=args.json)
        xl_i = run_xlayer(args.xlayer_seed, quiet=args.json)
        same_results(ns, ns_i, "ns-3")
        same_results(xl, xl_i, "xlayer")
        pairs.append((ns_i["measured_wall_s"], xl_i["measured_wall_s"]))
    speedups = [n / x for n, x in pairs]
    if args.repeat > 1:
        c["wall_s"]["pairs"] = [{"ns3_measured": n, "xlayer_measured": x, "speedup": n / x}
                                for n, x in pairs]
        c["wall_s"]["speedup_median"] = statistics.median(speedups)
    if args.json:
        print(json.dumps(c, indent=2))
    else:
        print_table(c)
        if args.repeat > 1:
            for i, (n, x) in enumerate(pairs):
                print(f"  pair {i + 1}: ns-3 {n:.2f} s, xlayer {x:.2f} s, speed-up {n / x:.1f}x")
            print(f"median speed-up over {args.repeat} pairs: "
                  f"{statistics.median(speedups):.1f}x (range {min(speedups):.1f}-"
                  f"{max(speedups):.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
