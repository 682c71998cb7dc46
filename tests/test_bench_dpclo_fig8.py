"""``benches/dpclo_fig8.py``: DPCLO's 108-node experiment per stack: ``--counts``, cachegrind's
counts per stack, the figures that do not move with the machine's load (README, "Where the
108-node DCF runs' time goes"), and ``--ns3``, each stack's time against ns-3's mesh-7x7 on the
same machine (README, "The same code on another machine, and ns-3 as the yardstick")."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benches" / "dpclo_fig8.py"
spec = importlib.util.spec_from_file_location("dpclo_fig8", BENCH)
assert spec is not None and spec.loader is not None
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True)


def test_a_malformed_simulated_cache_is_refused_naming_the_option():
    p = bench("--counts", "--ll", "1MiB")
    assert p.returncode == 2
    assert "--ll must be SIZE,WAYS,LINE" in p.stderr and "1MiB" in p.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counts_are_the_runs_own_with_the_import_subtracted():
    # 21 simulated seconds: the routing warm-up and the first second of flows.
    p = bench("--counts", "--stacks", "tcp-sack", "--duration", "21", "--json")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    assert row["stack"] == "tcp-sack" and row["sim_time_s"] == 21.0
    # The same run without valgrind executes the same events (the simulation is deterministic).
    import xlayer

    res = xlayer.run(str(BENCH.parent / "dpclo-fig8.toml"),
                     overrides=["stack.preset=tcp-sack", "duration_s=21"])
    assert row["events"] == res.summary["events"]
    for key in ("instructions", "l1d_misses", "lld_misses", "mispredicts"):
        assert row[key] > 0
        assert row[f"{key}_per_event"] == pytest.approx(row[key] / row["events"])
    # Misses are a fraction of the instructions; an event runs hundreds of instructions.
    assert row["l1d_misses"] < row["instructions"] / 10
    assert row["instructions_per_event"] > 100


def test_a_stack_is_held_to_the_target_as_a_fraction_of_ns3s_time():
    # The target, 10 s, was 10/74 to 10/45 of ns-3's mesh-7x7 time where it was set.
    rows = [{"stack": "dpclo-zmacplus", "core_wall_s": 32.2, "sim_time_s": 800.0},
            {"stack": "tcp-sack", "core_wall_s": 13.5, "sim_time_s": 800.0}]
    module.add_ns3(rows, 135.0)
    assert rows[0]["ns3_fraction"] == pytest.approx(32.2 / 135.0)
    lo, hi = rows[0]["over_ns3_target"]
    assert lo == pytest.approx((32.2 / 135.0) / (10.0 / 45.0))
    assert hi == pytest.approx((32.2 / 135.0) / (10.0 / 74.0))
    assert lo < hi
    # A stack at a tenth of ns-3's time meets the target by either end.
    assert rows[1]["over_ns3_target"][1] < 1.0


def test_a_shorter_run_gets_a_fraction_but_no_verdict():
    rows = [{"stack": "tcp-sack", "core_wall_s": 3.0, "sim_time_s": 100.0}]
    module.add_ns3(rows, 60.0)
    assert rows[0]["ns3_fraction"] == pytest.approx(0.05)
    assert rows[0]["over_ns3_target"] is None


def test_ns3_is_refused_with_counts():
    p = bench("--ns3", "--counts")
    assert p.returncode == 2
    assert "--ns3 is for timings, not --counts" in p.stderr
