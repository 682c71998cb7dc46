#!/usr/bin/env python3
"""Byte-identical results across refactors: hashes of every shipped scenario's result files.

Runs the built-in default scenario and every ``scenarios/*.toml`` at seeds 1 and 2 (a sweep file
contributes its base scenario under each of its stacks, at its first grid point), writes each
result folder as ``xlayer run --out`` does, and hashes ``flows.csv``, ``nodes.csv`` and
``summary.json`` (the summary less its wall-clock keys). The hashes are recorded in
``tests/data/result_hashes.json``; ``tests/test_result_hashes.py`` runs the check in CI.

    python scripts/result_hashes.py            # check against the recorded hashes (exit 1 on a change)
    python scripts/result_hashes.py --record   # record them anew: only with a reason in the commit
    python scripts/result_hashes.py --only dpclo-fig9 --jobs 1

A change of model (a bug fix, a new default) changes hashes on purpose: record them anew and say
why in the commit message. A refactor must change none.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import sys
import tempfile
from typing import Any, Dict, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
RECORD = ROOT / "tests" / "data" / "result_hashes.json"
SEEDS = (1, 2)
#: Summary keys that measure the machine, not the model.
WALL_CLOCK_KEYS = ("wall_s", "optimizer_wall_s", "eclair_wall_s", "eclair_time_per_event_ns",
                   "eclair_time_per_packet_ns", "eclair_cost_read_layer_ns",
                   "eclair_cost_read_core_ns", "eclair_cost_write_core_ns", "eclair_core_items",
                   "eclair_core_hits", "eclair_core_gain_ns_per_s")
HASHED_FILES = ("flows.csv", "nodes.csv", "summary.json")
#: Shipped scenarios too long to run twice on every CI run (minutes of 108 nodes), hashed on
#: a shortened run that still goes through every part of the model they use.
SHORTENED = {
    "dpclo-fig8": {"duration_s": 60.0, "flows_random.stop_s": 50.0},
    "dpclo-fig6": {"duration_s": 40.0, **{f"flows[{i}].stop_s": 40.0 for i in range(8)}},
}


def cases() -> List[Tuple[str, Dict[str, Any]]]:
    """(case name, scenario dict without its seed) for every shipped scenario, sorted by name."""
    from xlayer.scenario import load_scenario, set_field
    from xlayer.sweeps import grid_points, load_sweep

    out: List[Tuple[str, Dict[str, Any]]] = [("builtin-default", load_scenario(None))]
    for path in sorted(SCENARIOS.glob("*.toml")):
        text = path.read_text(encoding="utf-8")
        if _is_sweep(text):
            spec = load_sweep(path)
            point = grid_points(spec)[0]
            for stack, overrides in spec.stacks.items():
                scenario = json.loads(json.dumps(spec.base))
                for field, value in list(point.items()) + list(overrides.items()):
                    set_field(scenario, field, value)
                out.append((f"{path.stem}[{stack}]", scenario))
        else:
            scenario = load_scenario(path)
            for field, value in SHORTENED.get(path.stem, {}).items():
                set_field(scenario, field, value)
            out.append((path.stem, scenario))
    return out


def _is_sweep(text: str) -> bool:
    import tomllib

    return "scenario" in tomllib.loads(text)


def run_case(name: str, scenario: Dict[str, Any], seed: int) -> Dict[str, str]:
    """Runs one case at one seed; returns {file: sha256}."""
    import xlayer

    scenario = dict(scenario, seed=seed)
    result = xlayer.run(scenario)
    with tempfile.TemporaryDirectory(prefix="xlayer-hashes-") as tmp:
        folder = result.write(pathlib.Path(tmp) / "run")
        hashes = {}
        for file in HASHED_FILES:
            data = (folder / file).read_bytes()
            if file == "summary.json":
                summary = json.loads(data)
                for key in WALL_CLOCK_KEYS:
                    summary.pop(key, None)
                data = json.dumps(summary, sort_keys=True, indent=2).encode()
            hashes[file] = hashlib.sha256(data).hexdigest()
    return hashes


def _job(args: Tuple[str, Dict[str, Any], int]) -> Tuple[str, Dict[str, str]]:
    name, scenario, seed = args
    return f"{name}@seed{seed}", run_case(name, scenario, seed)


def compute(only: List[str], jobs: int) -> Dict[str, Dict[str, str]]:
    todo = [(n, s, seed) for n, s in cases() if not only or n in only for seed in SEEDS]
    if not todo:
        raise SystemExit(f"no shipped scenario is named {only}")
    results: Dict[str, Dict[str, str]] = {}
    if jobs <= 1:
        for job in todo:
            key, hashes = _job(job)
            results[key] = hashes
            print(f"  {key}", file=sys.stderr, flush=True)
    else:
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
            for key, hashes in pool.map(_job, todo):
                results[key] = hashes
                print(f"  {key}", file=sys.stderr, flush=True)
    return dict(sorted(results.items()))


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", action="store_true", help="write the hashes instead of checking them")
    ap.add_argument("--only", action="append", default=[], metavar="CASE",
                    help="one case (scenario file stem, 'builtin-default', or 'sweep[stack]'); repeatable")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="runs in parallel (default: up to 2)")
    args = ap.parse_args(argv)

    got = compute(args.only, args.jobs)
    if args.record:
        recorded = json.loads(RECORD.read_text()) if (args.only and RECORD.exists()) else {}
        recorded.update(got)
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        tmp = RECORD.with_suffix(".tmp")
        tmp.write_text(json.dumps(dict(sorted(recorded.items())), indent=1) + "\n")
        os.replace(tmp, RECORD)
        print(f"recorded {len(got)} runs in {RECORD.relative_to(ROOT)}")
        return 0

    recorded = json.loads(RECORD.read_text())
    changed = []
    for key, hashes in got.items():
        want = recorded.get(key)
        if want is None:
            changed.append(f"{key}: no recorded hashes (run with --record)")
            continue
        for file, h in hashes.items():
            if want.get(file) != h:
                changed.append(f"{key}: {file} differs")
    missing = [] if args.only else sorted(set(recorded) - set(got))
    changed += [f"{key}: recorded, but no longer a shipped case" for key in missing]
    if changed:
        print("results changed:\n  " + "\n  ".join(changed))
        return 1
    print(f"{len(got)} runs byte-identical to the recorded results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
