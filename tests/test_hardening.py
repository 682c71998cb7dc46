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
from xlayer.sweeps import MAX_RUNS, execute_run, load_sweep

from conftest import SMALL_CHAIN, hidden_leftovers


def one_line_error(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlayer: error: "), proc.stderr
    return lines[0]


# ----------------------------------------------------------------------------------------------
# 1. No code runs from a scenario file unless asked


#: A module that leaves a mark when imported, and a class that is not an optimizer.
EVIL_MODULE = """
from pathlib import Path
Path("imported.txt").write_text("evilmod's top-level code ran")

class X:
    def __init__(self, **kw):
        Path("built.txt").write_text("X was built")
"""

POPEN = """
[[optimizers]]
python = "subprocess:Popen"
nodes = [0]
args = { args = ["sh", "-c", "id > owned.txt"] }
"""

EVIL = """
[[optimizers]]
python = "evilmod:X"
nodes = [0]
"""

OPT_IN = ("--allow-python-optimizers", "allow_python=True")


@pytest.mark.parametrize("command", ["run", "params"])
@pytest.mark.parametrize("entry", [POPEN, EVIL], ids=["subprocess.Popen", "evilmod"])
def test_a_scenario_naming_python_code_runs_nothing_without_the_opt_in(
        command, entry, xlayer_cli, tmp_path):
    (tmp_path / "evilmod.py").write_text(EVIL_MODULE)
    (tmp_path / "s.toml").write_text(SMALL_CHAIN + entry)
    proc = xlayer_cli(command, "s.toml")  # python -m xlayer: the current folder is on sys.path
    line = one_line_error(proc)
    assert "optimizers[0].python" in line
    for hint in OPT_IN:
        assert hint in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evilmod.py", "s.toml"]


def test_the_opt_in_still_builds_only_optimizer_subclasses(xlayer_cli, tmp_path):
    (tmp_path / "s.toml").write_text(SMALL_CHAIN + POPEN)
    proc = xlayer_cli("run", "s.toml", "--allow-python-optimizers")
    line = one_line_error(proc)
    assert "optimizers[0].python" in line and "subprocess.Popen" in line
    assert "not a subclass of xlayer.optimizers.Optimizer" in line
    assert not (tmp_path / "owned.txt").exists()


def test_the_current_folder_is_not_searched_for_optimizer_modules(tmp_path, monkeypatch, capsys):
    (tmp_path / "evilmod.py").write_text(EVIL_MODULE)
    (tmp_path / "s.toml").write_text(SMALL_CHAIN + EVIL)
    monkeypatch.chdir(tmp_path)
    # As under the `xlayer` console script: neither "" nor the current folder on sys.path.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    assert main(["run", "s.toml", "--allow-python-optimizers"]) == 2
    err = capsys.readouterr().err
    assert "cannot import module 'evilmod'" in err and "PYTHONPATH" in err
    assert not (tmp_path / "imported.txt").exists()
    assert "evilmod" not in sys.modules


def test_the_api_asks_for_allow_python_and_takes_optimizer_objects_without_it(tmp_path):
    scenario = xlayer.load_scenario(None, ["duration_s=1.5"])
    scenario["optimizers"] = [{"python": "test_optimizers:Listening", "nodes": [0]}]
    for call in (lambda: xlayer.run(scenario), lambda: xlayer.Simulation(scenario)):
        with pytest.raises(ScenarioError) as e:
            call()
        assert "optimizers[0].python" in str(e.value)
        assert all(hint in str(e.value) for hint in OPT_IN)
    r = xlayer.run(scenario, allow_python=True)
    assert list(r.optimizers["name"]) == ["test_optimizers:Listening"]
    # An object the user builds is their own code: no opt-in.
    from test_optimizers import Listening

    sim = xlayer.Simulation(xlayer.load_scenario(None, ["duration_s=1.5"]))
    sim.add_optimizer(Listening(), node=0)
    assert list(sim.run().optimizers["status"]) == ["active"]


def test_a_worker_checks_the_opt_in_the_same_way():
    scenario = xlayer.normalize_scenario(xlayer.load_scenario(None, ["duration_s=1.5"]))
    scenario["optimizers"] = [{"python": "test_optimizers:Listening", "nodes": [0]}]
    status, message = execute_run(scenario)
    assert status == "failed" and "--allow-python-optimizers" in message
    status, result = execute_run(scenario, True)
    assert status == "ok" and list(result.optimizers["status"]) == ["active"]


class ValueErrorInInit(xlayer.optimizers.Optimizer):
    def __init__(self, level=1):
        raise ValueError(f"level {level} is not supported")


def test_an_optimizer_constructor_raising_is_an_error_naming_the_args(xlayer_cli, tmp_path):
    scenario = xlayer.load_scenario(None, ["duration_s=1.5"])
    scenario["optimizers"] = [{"python": "test_hardening:ValueErrorInInit", "args": {"level": 7}}]
    with pytest.raises(ScenarioError, match=r"optimizers\[0\]\.args: building "
                       r"test_hardening:ValueErrorInInit raised ValueError: level 7"):
        xlayer.Simulation(scenario, allow_python=True)


# ----------------------------------------------------------------------------------------------
# 2. A sweep's name cannot escape the results folder


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", ".", "/tmp/abs", "a\\b", "", " "])
def test_a_sweep_name_with_a_path_in_it_is_refused(name, tmp_path, monkeypatch, xlayer_cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "base.toml").write_text(SMALL_CHAIN)
    doc = {"name": name, "scenario": "base.toml"}
    with pytest.raises(ScenarioError, match=r"^name: must be a plain folder name"):
        xlayer.sweep(doc)
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    (tmp_path / "sweep.toml").write_text(f'name = "{escaped}"\nscenario = "base.toml"\n')
    line = one_line_error(xlayer_cli("sweep", "sweep.toml", "--workers", "1"))
    assert "name: must be a plain folder name" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.toml", "sweep.toml"]


def test_a_sweep_name_with_dots_inside_one_folder_name_is_fine(tmp_path):
    (tmp_path / "base.toml").write_text(SMALL_CHAIN)
    assert load_sweep({"name": "v1..v2", "scenario": str(tmp_path / "base.toml")}).name == "v1..v2"


# ----------------------------------------------------------------------------------------------
# 3. --out replaces only a folder of xlayer's own files


def test_out_replaces_a_result_folder_but_not_one_holding_other_files(xlayer_cli, tmp_path,
                                                                       chain_path):
    assert xlayer_cli("run", chain_path, "--out", "res", "--quiet").returncode == 0
    res = tmp_path / "res"
    again = xlayer_cli("run", chain_path, "--out", "res", "--quiet", "--seed", "2")
    assert again.returncode == 0, again.stderr  # its own result: replaced
    (res / "notes.txt").write_text("my notes")
    line = one_line_error(xlayer_cli("run", chain_path, "--out", "res", "--quiet"))
    assert "xlayer: error: res: " in line and "notes.txt" in line
    assert (res / "notes.txt").read_text() == "my notes"
    assert ".partial" not in line and hidden_leftovers(tmp_path) == []
    with pytest.raises(FileExistsError, match="notes.txt"):
        xlayer.run(chain_path, out=res)


def test_a_write_error_names_the_out_folder_not_the_hidden_one(xlayer_cli, tmp_path, chain_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        line = one_line_error(xlayer_cli("run", chain_path, "--out", "locked/res", "--quiet"))
    finally:
        locked.chmod(0o755)
    assert "locked/res: cannot write the result folder" in line and ".partial" not in line


def test_a_write_error_names_the_out_folder_even_as_root(tmp_path, chain_path, monkeypatch):
    import xlayer.results as results

    def fail(result, folder):
        raise PermissionError(13, "Permission denied", str(folder / "summary.json"))

    monkeypatch.setattr(results, "_write_files", fail)
    with pytest.raises(OSError) as e:
        xlayer.run(chain_path, out=tmp_path / "res")
    assert e.value.filename == str(tmp_path / "res") and ".partial" not in str(e.value)
    assert hidden_leftovers(tmp_path) == []


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


def test_integers_too_long_for_python_to_print_are_one_line_errors(xlayer_cli, tmp_path):
    (tmp_path / "s.toml").write_text("seed = " + "9" * 5000 + "\n")
    assert "invalid TOML" in one_line_error(xlayer_cli("run", "s.toml"))
    with pytest.raises(ScenarioError, match=r"^seed: integer out of range, found an integer of "
                       r"about 5000 digits"):
        xlayer.run(None, seed=10**4999)


def test_a_seed_beyond_64_bits_in_a_sweep_is_reported_exactly(tmp_path):
    (tmp_path / "base.toml").write_text(SMALL_CHAIN)
    spec = load_sweep({"scenario": str(tmp_path / "base.toml"), "seeds": [1, 2**64]})
    from xlayer.sweeps import plan_runs

    with pytest.raises(ScenarioError, match=f"found {2**64} "):
        plan_runs(spec)


def test_a_sweep_of_too_many_runs_is_refused_before_planning(tmp_path, xlayer_cli):
    (tmp_path / "base.toml").write_text(SMALL_CHAIN)
    (tmp_path / "sweep.toml").write_text('scenario = "base.toml"\nseeds = 100000000\n')
    proc = xlayer_cli("sweep", "sweep.toml", timeout=20)
    line = one_line_error(proc)
    assert f"seeds: a sweep has at most {MAX_RUNS} runs" in line
    doc = {"scenario": "base.toml", "seeds": 200,
           "grid": {"duration_s": [2.0, 3.0, 4.0, 5.0, 6.0], "warmup_s": [0.1] * 11}}
    with pytest.raises(ScenarioError, match=rf"^sweep: 11000 runs \(55 grid points x 1 stacks x "
                       rf"200 seeds\); a sweep has at most {MAX_RUNS}"):
        load_sweep({**doc, "scenario": str(tmp_path / "base.toml")})


@pytest.fixture
def result_folder(tmp_path, chain_path) -> Path:
    out = tmp_path / "res"
    xlayer.run(chain_path, out=out)
    return out


MALFORMED = {
    "summary.json": ["{", "[1, 2]", b"\xff\xfe"],
    "flows.csv": ['a,b\n1,2,3\n"x', "", "x\n1\n", "flow,src,dst,hops,throughput_bps\nx,y,z,w,abc\n"],
}


@pytest.mark.parametrize("command", ["plot", "report"])
@pytest.mark.parametrize("name,content", [(n, c) for n, cs in MALFORMED.items() for c in cs])
def test_plot_and_report_of_a_malformed_result_folder_are_one_line_errors(
        command, name, content, result_folder, xlayer_cli):
    path = result_folder / name
    path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    line = one_line_error(xlayer_cli(command, result_folder))
    assert str(result_folder) in line and "malformed" in line


@pytest.mark.parametrize("command", ["plot", "report"])
@pytest.mark.parametrize("content", ["{", "[]", '{"runs": 5}', '{"runs": [{"x": 1}]}',
                                     '{"runs": [], "swept": "a"}'])
def test_plot_and_report_of_a_malformed_sweep_folder_are_one_line_errors(
        command, content, tmp_path, xlayer_cli):
    from xlayer.store import SweepStore

    store = SweepStore(tmp_path / "sweep")
    store.prepare({"name": "s", "runs": [], "swept": [], "stacks": {}}, {})
    (tmp_path / "sweep" / "sweep.json").write_text(content)
    line = one_line_error(xlayer_cli(command, tmp_path / "sweep"))
    assert "sweep.json: malformed xlayer result file" in line


# ----------------------------------------------------------------------------------------------
# 8. Result files as the umask says


def test_result_files_follow_the_umask(tmp_path, chain_path):
    old = os.umask(0o022)
    try:
        xlayer.run(chain_path, out=tmp_path / "res")
        xlayer.run(chain_path, out=tmp_path / "res", seed=4)  # replaced in place
    finally:
        os.umask(old)
    res = tmp_path / "res"
    assert stat.S_IMODE(res.stat().st_mode) == 0o755
    for f in res.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


def test_sweep_store_files_follow_the_umask(tmp_path):
    from xlayer.store import SweepStore

    r = xlayer.run(xlayer.load_scenario(None, ["duration_s=1.5"]))
    old = os.umask(0o027)
    try:
        store = SweepStore(tmp_path / "sweep")
        store.prepare({"name": "s", "runs": [], "swept": []}, {})
        run = store.write_run({"run": "k", "stack": "base", "seed": 1, "values": {}}, r)
        store.write_failure({"run": "f", "stack": "base", "seed": 2, "values": {}}, "boom")
        store.rebuild_tables()
    finally:
        os.umask(old)
    for p in [run, *run.iterdir(), *(tmp_path / "sweep").rglob("*")]:
        want = 0o750 if p.is_dir() else 0o640
        assert stat.S_IMODE(p.stat().st_mode) == want, p
