"""Scenario and sweep input fuzzing, bounded in time (issue 14): every mutant of a shipped
scenario or sweep file either runs or fails with a one-line xlayer error naming a field — never
another exception, a Rust panic, or a hang.

Mutants are drawn from a fixed seed, so a failure names a mutant that reproduces:
``XLAYER_FUZZ_SEED=7 XLAYER_FUZZ_SECONDS=300 pytest tests/test_fuzz.py``. A run that validates is
run for at most 0.2 simulated seconds (the point is the input path, not the model).
"""
from __future__ import annotations

import copy
import json
import math
import multiprocessing
import os
import pathlib
import random
import time
from typing import Any, List, Tuple

import pytest

import xlayer
from xlayer.errors import XlayerError
from xlayer.scenario import load_scenario, load_toml_file
from xlayer.sweeps import load_sweep, plan_runs

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.toml"))
SEED = int(os.environ.get("XLAYER_FUZZ_SEED", "1"))
SECONDS = float(os.environ.get("XLAYER_FUZZ_SECONDS", "40"))

#: Values a field may be given instead of its own: wrong types, edges, huge and tiny numbers.
NASTY: List[Any] = [
    -1, 0, 1, 2, 3, 7, 65535, 65536, 2**31, 2**32, 2**63, 2**64, -(2**63), 10**30,
    -1.5, 0.0, 1e-12, 1e-300, 1e12, 1e300, -1e300, 0.5,
    "", "x", "802.11b", "none", "full", "zmac", "dsdv", "tcp", "../../x", "a" * 300,
    True, False, [], [0], [1, 2, 3], [-1], {}, {"x": 1}, [[0, 1]], None,
]


def _leaves(node: Any, path: Tuple = ()) -> List[Tuple]:
    """Paths (tuples of keys and indices) of every value in a scenario, tables included."""
    out = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _leaves(v, path + (i,))
    return out


def _set(doc: Any, path: Tuple, value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    if value is None:
        if isinstance(doc, dict):
            doc.pop(path[-1], None)
        else:
            del doc[path[-1]]
    else:
        doc[path[-1]] = value


def _mutate(rng: random.Random, doc: dict) -> dict:
    """One to three random changes: a value replaced (or removed), or an unknown field added."""
    m = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        paths = _leaves(m)
        if not paths or rng.random() < 0.1:
            table = m
            target = rng.choice([p for p in paths if isinstance(_get(m, p), dict)] or [()])
            if target:
                table = _get(m, target)
            table["fuzz_" + rng.choice(["x", "rate", "nodes"])] = rng.choice(NASTY[:10])
            continue
        _set(m, rng.choice(paths), copy.deepcopy(rng.choice(NASTY)))
    return m


def _get(doc: Any, path: Tuple) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _short(scenario: dict) -> dict:
    s = copy.deepcopy(scenario)
    d = s.get("duration_s")
    if isinstance(d, (int, float)) and not isinstance(d, bool) and math.isfinite(d) and d > 0.2:
        s["duration_s"] = 0.2
    return s


def _outcome(kind: str, mutant: dict) -> str:
    """What the input path made of a mutant: "ran", "error: <one line>", or "BAD: ..." for a
    multi-line error, another exception or a panic."""
    try:
        if kind == "sweep":
            plan_runs(load_sweep(mutant))
        else:
            xlayer.run(_short(mutant))
        return "ran"
    except XlayerError as e:
        text = str(e).strip()
        if not text or "\n" in text:
            return f"BAD: multi-line error {text!r}"
        return "error: " + text
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a panic (pyo3's PanicException is a BaseException) or a bug
        return f"BAD: {type(e).__name__}: {e}"


def _worker(conn) -> None:
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(_outcome(*job))


class _Sandbox:
    """Runs mutants in a child process, so that a crash is seen as such and a mutant that is
    valid but huge (say 60,000 nodes) costs at most ``timeout`` seconds."""

    def __init__(self, timeout: float = 20.0):
        self.timeout = timeout
        self._start()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()

    def run(self, kind: str, mutant: dict) -> str:
        self.conn.send((kind, mutant))
        if self.conn.poll(self.timeout):
            try:
                return self.conn.recv()
            except EOFError:
                pass
        alive = self.proc.is_alive()
        code = self.proc.exitcode
        self.proc.kill()
        self.proc.join()
        self._start()
        return "slow" if alive else f"BAD: the process died (exit code {code})"

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        self.proc.kill()


def _corpus() -> List[Tuple[str, str, dict]]:
    out = []
    for path in SCENARIOS:
        raw = load_toml_file(path)
        if "scenario" in raw:  # a sweep file: its base scenario inlined
            raw = dict(raw)
            raw["scenario"] = load_scenario(path.parent / raw["scenario"])
            out.append(("sweep", path.name, raw))
        else:
            out.append(("scenario", path.name, load_scenario(path)))
    return out


@pytest.mark.slow
def test_mutated_scenarios_and_sweeps_fail_with_one_line_errors_or_run():
    rng = random.Random(SEED)
    corpus = _corpus()
    box = _Sandbox()
    deadline = time.monotonic() + SECONDS
    counts = {"ran": 0, "error": 0, "slow": 0}
    tried = 0
    try:
        while time.monotonic() < deadline:
            kind, name, doc = corpus[tried % len(corpus)]
            mutant = _mutate(rng, doc)
            got = box.run(kind, mutant)
            assert not got.startswith("BAD"), (
                f"seed {SEED}, mutant {tried} of {name}: {got}\n"
                f"mutant: {json.dumps(mutant, default=str)[:4000]}"
            )
            counts[got.split(":")[0]] += 1
            tried += 1
    finally:
        box.close()
    print(f"fuzz: {tried} mutants in {SECONDS:.0f} s (seed {SEED}): {counts}")
    assert tried >= len(corpus), "the time bound let fewer mutants run than there are files"
    assert counts["error"] > 0 and counts["ran"] > 0, counts


def test_the_mutator_reaches_every_kind_of_change():
    rng = random.Random(3)
    doc = {"a": 1, "t": {"b": [1, 2], "c": "x"}}
    seen_removed = seen_added = seen_changed = False
    for _ in range(300):
        m = _mutate(rng, doc)
        flat = json.dumps(m, sort_keys=True, default=str)
        seen_added |= "fuzz_" in flat
        seen_removed |= "a" not in m or "t" not in m or (isinstance(m.get("t"), dict) and len(m["t"]) < 2)
        seen_changed |= m.get("a") not in (1, None)
    assert seen_added and seen_removed and seen_changed
    assert doc == {"a": 1, "t": {"b": [1, 2], "c": "x"}}, "the corpus itself is never changed"
