"""The ``xlayer`` command: run, --out, --set, --json, --quiet, scenario, params."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import xlayer
from xlayer.cli import main

from conftest import SCENARIOS, hidden_leftovers

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def xlayer_executable() -> Path:
    """The console script installed next to this interpreter (``pip install .`` puts it there)."""
    bindir = Path(sys.executable).parent
    for name in ("xlayer", "xlayer.exe"):
        if (bindir / name).exists():
            return bindir / name
    pytest.fail(f"the xlayer console script is not installed in {bindir}")


def test_xlayer_run_without_arguments_runs_the_default_scenario_and_prints_a_summary(tmp_path):
    proc = subprocess.run([str(xlayer_executable()), "run"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "default" in proc.stdout
    assert "aggregate throughput" in proc.stdout
    assert "Mbit/s" in proc.stdout
    assert "0→4" in proc.stdout and "3→1" in proc.stdout  # the per-flow rows
    assert proc.stderr == ""
    assert list(tmp_path.iterdir()) == []  # nothing written without --out


def test_python_dash_m_xlayer_is_the_same_command(xlayer_cli):
    proc = xlayer_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"xlayer {xlayer.__version__}"


def test_out_writes_the_result_folder(xlayer_cli, tiny_path, tmp_path):
    proc = xlayer_cli("run", tiny_path, "--out", "res")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "res"
    assert {"scenario.toml", "summary.json", "flows.csv", "nodes.csv"} <= {
        p.name for p in out.iterdir()}
    summary = json.loads((out / "summary.json").read_text())
    for key in ("aggregate_throughput_bps", "jain_index", "log_utility", "events", "wall_s",
                "sim_time_s"):
        assert key in summary, key
    flows = pd.read_csv(out / "flows.csv")
    for col in ("flow", "src", "dst", "throughput_bps", "delay_mean_s", "delivery_ratio"):
        assert col in flows.columns, col
    assert len(flows) == 3
    assert "results written to res" in proc.stdout


def test_json_prints_only_the_summary_as_json(xlayer_cli, tiny_path):
    proc = xlayer_cli("run", tiny_path, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["name"] == "tiny-random"
    assert summary["nodes"] == 6 and summary["flows"] == 3
    assert list(summary) == sorted(summary)


def test_json_summary_matches_summary_json_file(tiny_path, tmp_path, capsys):
    assert main(["run", str(tiny_path), "--json", "--out", str(tmp_path / "out")]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    printed.pop("wall_s"), written.pop("wall_s")
    assert printed == written


def test_quiet_prints_nothing(tiny_path, capsys):
    assert main(["run", str(tiny_path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_set_topology_count_changes_the_node_count(chain_path, capsys):
    assert main(["run", str(chain_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == 4
    assert main(["run", str(chain_path), "--json", "--set", "topology.count=3"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == 3


def test_seed_option_replaces_the_scenario_seed(tiny_path, capsys):
    assert main(["run", str(tiny_path), "--json", "--seed", "77"]) == 0
    assert json.loads(capsys.readouterr().out)["seed"] == 77


def test_several_overrides_apply_in_order(chain_path, capsys):
    args = ["run", str(chain_path), "--json", "--set", "duration_s=1.5", "--set",
            "flows[0].rate_bps=saturate", "--set", 'name="renamed"']
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["sim_time_s"] == pytest.approx(1.5)
    assert summary["name"] == "renamed"


def test_unknown_override_field_exits_2_naming_it(xlayer_cli, chain_path, tmp_path):
    proc = xlayer_cli("run", chain_path, "--set", "radio.bogus_field=1", "--out", "res")
    assert proc.returncode == 2
    assert proc.stderr.startswith("xlayer: error: ")
    assert "bogus_field" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "res").exists()


def test_scenario_command_prints_the_normalized_toml(capsys):
    assert main(["scenario", str(SCENARIOS / "chain.toml"), "--set", "seed=9"]) == 0
    scenario = tomllib.loads(capsys.readouterr().out)
    assert scenario["name"] == "chain"
    assert scenario["seed"] == 9
    assert scenario["radio"]["data_rate_mbps"] == 2.0
    assert scenario["mac"]["queue_packets"] == 50  # a default, filled in
    assert scenario["net"]["routing"] == "static"


def test_scenario_command_without_a_file_prints_the_default(capsys):
    assert main(["scenario"]) == 0
    assert tomllib.loads(capsys.readouterr().out)["name"] == "default"


def test_params_lists_the_tuning_parameters(capsys):
    assert main(["params", "--json"]) == 0
    params = json.loads(capsys.readouterr().out)
    assert isinstance(params, list)
    for p in params:
        assert {"name", "layer", "doc", "unit", "min", "max"} <= set(p)
    assert main(["params"]) == 0
    assert "tuning parameters" in capsys.readouterr().out


def test_failed_write_exits_2_and_leaves_no_folder(tiny_path, tmp_path, monkeypatch, capsys):
    def disk_full(result, name, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr("xlayer.results._write_table", disk_full)  # every table file
    assert main(["run", str(tiny_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xlayer: error: ") and "No space left on device" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert hidden_leftovers(tmp_path) == []


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage: xlayer" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# Start-up: the heavy libraries load when a command needs them, not on import or for --help

HEAVY = ("pandas", "pyarrow", "matplotlib", "dask", "distributed", "scipy")


def _modules_after(code: str) -> set:
    """The heavy modules loaded in a fresh interpreter once ``code`` has run."""
    probe = (code + "\nimport sys, json\n"
             f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_import_xlayer_loads_no_heavy_library():
    assert _modules_after("import xlayer") == set()


def test_xlayer_help_loads_no_heavy_library():
    code = ("import contextlib, io\nfrom xlayer.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            "    for cmd in ('run', 'sweep', 'plot', 'report', 'compare', 'params', 'view'):\n"
            "        try:\n            main([cmd, '--help'])\n        except SystemExit:\n"
            "            pass")
    assert _modules_after(code) == set()


def test_a_command_line_builds_only_its_commands_parser_and_the_same_one():
    import argparse

    from xlayer import cli

    def commands(parser):
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return action.choices

    every = commands(cli._parser())
    assert tuple(every) == cli.COMMANDS
    for name in cli.COMMANDS:
        alone = commands(cli._parser(name))
        assert list(alone) == [name]
        assert alone[name].format_help() == every[name].format_help()


def test_the_clis_sweep_default_is_the_sweep_modules():
    from xlayer import cli, sweeps

    assert cli.NO_WORKERS_TIMEOUT_S == sweeps.NO_WORKERS_TIMEOUT_S > 0


def test_the_public_names_still_resolve_after_a_lazy_import():
    # `from xlayer import X` and `xlayer.X` reach what they always did, loaded on first use.
    loaded = _modules_after("from xlayer import run, Result, sweep, analysis\n"
                            "import xlayer\nassert xlayer.scenario.load_scenario is "
                            "xlayer.load_scenario\nassert callable(run) and "
                            "xlayer.Simulation.__name__ == 'Simulation'")
    assert "pandas" in loaded
    assert {"run", "sweep", "Result", "analysis", "XlayerError"} <= set(dir(xlayer))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        xlayer.nonexistent  # noqa: B018


# ----------------------------------------------------------------------------------------------
# Tables that fit the terminal


def _printed(fn, *args, width=80):
    import io

    from rich.console import Console

    console = Console(width=width, file=io.StringIO(), no_color=True, highlight=False)
    fn(console, *args)
    return console.file.getvalue()


def _widest_line(text):
    from rich.cells import cell_len

    return max(cell_len(line.rstrip()) for line in text.splitlines())


@pytest.fixture(scope="module")
def five_stack_sweep(tmp_path_factory):
    """A sweep folder as `xlayer compare` leaves it: five stacks (README's names), a swept
    path with a long name, three seeds, numbers of every size."""
    import dataclasses

    from xlayer.store import SweepStore

    base = xlayer.run(xlayer.load_scenario(None, ["duration_s=1.5"]))
    folder = tmp_path_factory.mktemp("cmp") / "sweep"
    stacks = ["tcp-sack", "tcp-few", "tfrc-ecn", "diffq-tcp", "diffq-udp"]
    planned = [{"run": f"{st}-{c}-{seed}", "stack": st, "seed": seed,
                "values": {"flows_random.count": c}}
               for c in (4, 16) for st in stacks for seed in (1, 2, 3)]
    store = SweepStore(folder)
    store.prepare({"name": "cmp", "swept": ["flows_random.count"], "stack_order": stacks,
                   "grid": {"flows_random.count": [4, 16]}, "stacks": {s: {} for s in stacks},
                   "runs": planned}, {})
    for i, r in enumerate(planned):
        summary = dict(base.summary, aggregate_throughput_bps=2.5e6 + 1.7e5 * (i % 7),
                       jain_index=0.69 + 0.01 * (i % 3), log_utility=38.9 + 0.1 * (i % 4),
                       starved_flows=i % 2)
        flows = base.flows.assign(throughput_bps=base.flows["throughput_bps"] * (1 + i % 5))
        store.write_run(r, dataclasses.replace(base, summary=summary, flows=flows))
    store.rebuild_tables()
    return folder, stacks


def test_the_sweep_summary_fits_80_columns_without_cutting_a_number(five_stack_sweep):
    from xlayer.cli import _print_sweep_table

    folder, stacks = five_stack_sweep
    text = _printed(_print_sweep_table, str(folder), width=80)
    assert _widest_line(text) <= 80
    assert "…" not in text  # nothing ellipsized
    # every stack, in the user's order (not alphabetical), at each grid point
    rows = [line.split()[0] for line in text.splitlines() if line.split() and
            line.split()[0] in stacks]
    assert rows == stacks * 2
    assert re.search(r"\d\.\d\d–\d\.\d\d", text)  # the intervals are there, whole
    wide = _printed(_print_sweep_table, str(folder), width=200)
    assert re.search(r"\d\.\d\d \[\d\.\d\d, \d\.\d\d\]", wide)  # one line per group if room
    assert "aggregate Mbit/s" in wide and "median flow kbit/s" in wide


@pytest.mark.parametrize("width", [80, 200])
def test_tunables_tables_show_whole_names_integers_and_infinity(width):
    from xlayer.api import tunables
    from xlayer.cli import _print_tunables

    items = tunables()
    text = _printed(_print_tunables, items, "param", "parameters", width=width)
    assert _widest_line(text) <= width
    for p in items:
        if p["kind"] == "param":
            assert p["name"] in text  # never cut, at any width
    assert "1.79769e+308" not in text and "e+308" not in text
    assert re.search(r"mac\.queue_len\.<level>\s+(mac\s+)?int\s+0 … ∞", text)
    assert re.search(r"mac\.cw_min\.<level>\s+(mac\s+)?int\s+1 … 65,535", text)
    assert "1e+06" not in text and "1,000,000" in text
    events = _printed(_print_tunables, items, "event", "events", width=width)
    assert "transport.segment_rx" in events and _widest_line(events) <= width


def test_params_prints_the_same_table_as_tunables(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["params"]) == 0
    params_out = capsys.readouterr().out
    assert main(["tunables"]) == 0
    tunables_out = capsys.readouterr().out
    first = [line for line in params_out.splitlines() if "mac.cw_min.<level>" in line]
    assert first and first[0] in tunables_out
    assert "tuning parameters of every node (scenario default)" in params_out


def test_run_summary_uses_the_shared_units_and_digits(capsys):
    assert main(["run", "--set", "duration_s=2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"aggregate throughput\s+0\.\d{3} Mbit/s", out)
    assert re.search(r"mean delay\s+[\d.,]+ ms", out)
    assert "e+0" not in out
