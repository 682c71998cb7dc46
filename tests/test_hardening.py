"""Issue 14, hardening: a scenario file runs no code unless asked, every bad input is a one-line
error, a sweep stays in its folder, ``--out`` deletes nothing it did not write, and result files
are shared as the umask says."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

import xlayer
from xlayer.cli import main
from xlayer.errors import ScenarioError
from xlayer.sweeps import execute_run, load_sweep

from conftest import SMALL_CHAIN, hidden_leftovers


def one_line_error(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlayer: error: "), proc.stderr
    return lines[0]


# ----------------------------------------------------------------------------------------------
# 4. Bad input that ended in a traceback


@pytest.mark.parametrize("text", [
    "x = " + "[" * 50_000 + "]" * 50_000,
    "x = " + "{a = " * 5_000 + "1" + "}" * 5_000,
    ".".join(["a"] * 5_000) + " = 1",
], ids=["arrays-50000", "inline-tables-5000", "dotted-tables-5000"])
def test_deeply_nested_toml_is_a_one_line_error(text, xlayer_cli, tmp_path):
    (tmp_path / "s.toml").write_text(text)
    line = one_line_error(xlayer_cli("run", "s.toml"))
    assert "nested" in line
    (tmp_path / "sweep.toml").write_text(text)
    assert "nested" in one_line_error(xlayer_cli("sweep", "sweep.toml"))


def test_a_self_referencing_dict_and_non_string_overrides_are_scenario_errors():
    scenario = {"duration_s": 1.0}
    scenario["radio"] = {"loop": scenario}
    with pytest.raises(ScenarioError, match=r"^radio\.loop: contains itself"):
        xlayer.run(scenario)
    with pytest.raises(ScenarioError, match=r"^radio\.loop: contains itself"):
        xlayer.normalize_scenario(scenario)
    with pytest.raises(ScenarioError, match=r'^overrides\[0\]: an override is a "KEY=VALUE"'):
        xlayer.run(None, overrides=[5])
    with pytest.raises(ScenarioError, match=r"^overrides: must be a list"):
        xlayer.run(None, overrides=5)
    deep: dict = {}
    d = deep
    for _ in range(5000):
        d["a"] = {}
        d = d["a"]
    with pytest.raises(ScenarioError, match="nested more than 64 levels"):
        xlayer.run({"radio": deep})


def test_numpy_integers_are_accepted_where_numpy_floats_are():
    base = xlayer.load_scenario(None, ["duration_s=1.5"])
    count = base["topology"]["count"]
    as_float = xlayer.normalize_scenario({**base, "topology": {**base["topology"],
                                          "count": count}, "warmup_s": np.float64(0.5)})
    as_int = xlayer.normalize_scenario({**base, "topology": {**base["topology"],
                                        "count": np.int64(count)}, "warmup_s": np.float64(0.5)})
    assert as_int == as_float
    grid = load_sweep({"scenario": base, "grid": {"topology.count": np.arange(count, count + 2)},
                       "seeds": [np.int32(1)]})
    assert grid.grid == {"topology.count": [count, count + 1]} and grid.seeds == [1]
    r = xlayer.run(base, seed=np.int64(3))
    assert r.summary["seed"] == 3


@pytest.mark.parametrize("seed", [2**64, 2**64 + 1, 10**30])
def test_a_seed_beyond_64_bits_is_reported_exactly(seed, xlayer_cli):
    with pytest.raises(ScenarioError, match=rf"^seed: integer out of range, found {seed} "):
        xlayer.run(None, seed=seed)
    line = one_line_error(xlayer_cli("run", "--seed", str(seed)))
    assert f"found {seed} " in line


def test_a_seed_beyond_64_bits_in_a_sweep_is_reported_exactly(tmp_path):
    (tmp_path / "base.toml").write_text(SMALL_CHAIN)
    spec = load_sweep({"scenario": str(tmp_path / "base.toml"), "seeds": [1, 2**64]})
    from xlayer.sweeps import plan_runs

    with pytest.raises(ScenarioError, match=f"found {2**64} "):
        plan_runs(spec)
