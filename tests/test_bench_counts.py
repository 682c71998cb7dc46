"""``benches/dpclo_fig8.py --counts``: cachegrind's counts per stack, the figures that do not
move with the machine's load (README, "Where the 108-node DCF runs' time goes")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benches" / "dpclo_fig8.py"


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
