"""The Python API: run(), Simulation, Result, result folders, overrides, shipped scenarios."""

from __future__ import annotations

import json
import math
import re
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd

import pytest

import xlayer
from xlayer import _core
from xlayer.results import FLOW_COLUMNS, NODE_COLUMNS, SUMMARY_KEYS
from xlayer.scenario import apply_overrides, load_scenario, parse_override

from conftest import REPO, SCENARIOS, hidden_leftovers

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def summary_without_wall_time(folder: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text())
    summary.pop("wall_s")
    return summary


# ----------------------------------------------------------------------------------------------
# run() and Result


def test_run_returns_every_summary_key(tiny_path):
    result = xlayer.run(tiny_path)
    assert set(SUMMARY_KEYS) <= set(result.summary), set(SUMMARY_KEYS) - set(result.summary)
    s = result.summary
    assert s["name"] == "tiny-random"
    assert s["seed"] == 5
    assert s["nodes"] == 6
    assert s["flows"] == 3
    assert s["sim_time_s"] == pytest.approx(2.0)
    assert s["events"] > 0
    assert s["aggregate_throughput_bps"] > 0
    assert 0 < s["jain_index"] <= 1 + 1e-12


def test_flows_and_nodes_are_dataframes_with_the_documented_columns(tiny_path):
    result = xlayer.run(tiny_path)
    assert isinstance(result.flows, pd.DataFrame)
    assert isinstance(result.nodes, pd.DataFrame)
    assert list(result.flows.columns[: len(FLOW_COLUMNS)]) == list(FLOW_COLUMNS)
    assert list(result.nodes.columns[: len(NODE_COLUMNS)]) == list(NODE_COLUMNS)
    assert len(result.flows) == 3
    assert len(result.nodes) == 6
    assert list(result.flows["flow"]) == [0, 1, 2]
    assert list(result.nodes["node"]) == list(range(6))
    # Random positions lie inside the 300 m x 300 m area.
    assert result.nodes["x"].between(0, 300).all() and result.nodes["y"].between(0, 300).all()
    # Aggregate throughput is the sum of the flows' throughputs.
    assert result.flows["throughput_bps"].sum() == pytest.approx(
        result.summary["aggregate_throughput_bps"], rel=1e-9
    )


def test_result_scenario_is_the_normalized_scenario_with_defaults_filled(tiny_path):
    result = xlayer.run(tiny_path)
    sc = result.scenario
    assert sc["radio"]["data_rate_mbps"] == 11.0  # 802.11b default
    assert sc["radio"]["basic_rate_mbps"] == 1.0
    assert sc["mac"]["queue_packets"] == 50
    assert sc["seed"] == 5


def test_chain_nodes_lie_on_the_x_axis_in_topology_order(chain_path):
    nodes = xlayer.run(chain_path).nodes
    assert list(nodes["x"]) == [0.0, 200.0, 400.0, 600.0]
    assert list(nodes["y"]) == [0.0] * 4


def test_dict_scenario_runs_like_the_same_toml_file(tiny_path, tiny_dict):
    from_file = xlayer.run(tiny_path)
    from_dict = xlayer.run(tiny_dict)
    a, b = dict(from_file.summary), dict(from_dict.summary)
    a.pop("wall_s"), b.pop("wall_s")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # NaN-safe equality
    pd.testing.assert_frame_equal(from_file.flows, from_dict.flows)
    pd.testing.assert_frame_equal(from_file.nodes, from_dict.nodes)


def test_run_does_not_modify_the_dict_it_is_given(tiny_dict):
    before = json.dumps(tiny_dict, sort_keys=True)
    xlayer.run(tiny_dict, seed=9, overrides=["duration_s=1.0"])
    assert json.dumps(tiny_dict, sort_keys=True) == before


def test_seed_argument_replaces_the_scenario_seed(tiny_dict):
    result = xlayer.run(tiny_dict, seed=11)
    assert result.summary["seed"] == 11
    assert result.scenario["seed"] == 11


def test_overrides_change_the_scenario_that_runs(chain_path):
    result = xlayer.run(chain_path, overrides=["topology.count=3", "flows[0].rate_bps=1e5"])
    assert result.summary["nodes"] == 3
    assert len(result.nodes) == 3
    assert result.scenario["flows"][0]["rate_bps"] == 1e5


def test_overrides_as_a_dict_of_field_paths_work_like_set_strings(chain_path):
    by_dict = xlayer.run(chain_path, overrides={"topology": {"count": 3}, "flows[0].rate_bps": 1e5})
    by_strings = xlayer.run(chain_path, overrides=["topology.count=3", "flows[0].rate_bps=1e5"])
    assert by_dict.summary["nodes"] == 3
    assert by_dict.scenario == by_strings.scenario
    with pytest.raises(xlayer.ScenarioError, match="overrides"):
        xlayer.run(chain_path, overrides={"flows[x].rate_bps": 1})


def test_progress_callback_sees_simulated_time_advance_to_the_end(chain_path):
    seen = []
    xlayer.run(chain_path, progress=lambda now, end: seen.append((now, end)))
    assert len(seen) >= 10
    times = [now for now, _ in seen]
    assert times == sorted(times)
    assert seen[-1][0] == pytest.approx(2.0) and seen[-1][1] == pytest.approx(2.0)


def test_simulation_advances_to_min_of_target_and_end(chain_path):
    sim = xlayer.Simulation(chain_path)
    assert sim.end_s == pytest.approx(2.0)
    assert sim.now_s() == 0.0
    assert sim.run_until(1.0) is False
    assert sim.now_s() == pytest.approx(1.0)
    events_half = sim.events()
    assert events_half > 0
    assert sim.run_until(50.0) is True
    assert sim.now_s() == pytest.approx(2.0)
    assert sim.events() > events_half
    assert sim.results().summary["sim_time_s"] == pytest.approx(2.0)


def test_tuning_parameters_are_listed_readable_and_settable(chain_path):
    sim = xlayer.Simulation(chain_path)
    params = sim.params()
    assert isinstance(params, list) and params
    for p in params:
        assert {"name", "layer", "doc", "unit", "min", "max"} <= set(p), p
        if "<flow>" in p["name"]:
            continue  # a UDP scenario has no TCP connection; tests/test_transport.py covers them
        # Indexed parameters: level 0, node 0 as neighbour or destination, exist always.
        name = re.sub(r"<(level|neighbour|destination)>", "0", p["name"])
        value = sim.get_param(0, name)
        assert isinstance(value, float)
        assert p["min"] <= value <= p["max"], (name, value)
        if p.get("read_only", False):
            with pytest.raises(xlayer.TuningError):
                sim.set_param(0, name, value)
        else:
            sim.set_param(0, name, value)  # the current value is always a valid one
            assert sim.get_param(0, name) == value


def test_unknown_tuning_parameter_raises_tuning_error(chain_path):
    sim = xlayer.Simulation(chain_path)
    with pytest.raises(xlayer.TuningError):
        sim.get_param(0, "no.such.parameter")
    with pytest.raises(xlayer.TuningError):
        sim.set_param(0, "no.such.parameter", 1.0)


# ----------------------------------------------------------------------------------------------
# Determinism


def test_same_seed_gives_identical_result_files(tiny_path, tmp_path):
    xlayer.run(tiny_path, out=tmp_path / "a")
    xlayer.run(tiny_path, out=tmp_path / "b")
    assert summary_without_wall_time(tmp_path / "a") == summary_without_wall_time(tmp_path / "b")
    for name in ("flows.csv", "nodes.csv", "scenario.toml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_different_seeds_give_different_numbers(tiny_path, tmp_path):
    xlayer.run(tiny_path, seed=1, out=tmp_path / "a")
    xlayer.run(tiny_path, seed=2, out=tmp_path / "b")
    a = summary_without_wall_time(tmp_path / "a")
    b = summary_without_wall_time(tmp_path / "b")
    assert a["aggregate_throughput_bps"] != b["aggregate_throughput_bps"]
    assert (tmp_path / "a" / "flows.csv").read_bytes() != (tmp_path / "b" / "flows.csv").read_bytes()
    assert (tmp_path / "a" / "nodes.csv").read_bytes() != (tmp_path / "b" / "nodes.csv").read_bytes()


def test_written_scenario_reproduces_the_run(tiny_path, tmp_path):
    xlayer.run(tiny_path, seed=3, out=tmp_path / "first")
    xlayer.run(tmp_path / "first" / "scenario.toml", out=tmp_path / "again")
    assert summary_without_wall_time(tmp_path / "first") == summary_without_wall_time(
        tmp_path / "again"
    )
    assert (tmp_path / "first" / "flows.csv").read_bytes() == (
        tmp_path / "again" / "flows.csv"
    ).read_bytes()


# ----------------------------------------------------------------------------------------------
# Result folders


def test_out_writes_the_four_result_files(tiny_path, tmp_path):
    out = tmp_path / "results" / "tiny"  # parents are created
    result = xlayer.run(tiny_path, out=out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["scenario.toml", "summary.json", "flows.csv", "nodes.csv"]
    )
    summary = json.loads((out / "summary.json").read_text())
    for key in ("aggregate_throughput_bps", "jain_index", "log_utility", "events", "wall_s",
                "sim_time_s"):
        assert key in summary, key
    assert list(summary) == sorted(summary)  # keys sorted
    flows = pd.read_csv(out / "flows.csv")
    for col in ("flow", "src", "dst", "throughput_bps", "delay_mean_s", "delivery_ratio"):
        assert col in flows.columns, col
    assert list(flows["throughput_bps"]) == pytest.approx(list(result.flows["throughput_bps"]))
    nodes = pd.read_csv(out / "nodes.csv")
    assert list(nodes["node"]) == list(range(6))


def test_written_scenario_states_version_and_seed_and_parses(tiny_path, tmp_path):
    xlayer.run(tiny_path, seed=42, out=tmp_path / "out")
    text = (tmp_path / "out" / "scenario.toml").read_text()
    assert text.splitlines()[0] == f'# xlayer_version = "{xlayer.__version__}"'
    scenario = tomllib.loads(text)
    assert scenario["seed"] == 42
    assert scenario["radio"]["data_rate_mbps"] == 11.0
    assert "run" not in scenario


def test_summary_json_is_strict_json_with_nan_as_null(tmp_path):
    from xlayer.results import summary_json

    text = summary_json({"b": float("nan"), "a": 1.5, "c": float("inf")})
    assert json.loads(text) == {"a": 1.5, "b": None, "c": None}
    assert "NaN" not in text and "Infinity" not in text


def test_failed_write_leaves_no_partial_folder(tiny_path, tmp_path, monkeypatch):
    import xlayer.results as results

    result = xlayer.run(tiny_path)
    real_write_table = results._write_table
    calls = []

    out = tmp_path / "deep" / "out"
    target_existed_during_write = []

    def write_table_failing_on_second_file(result, name, path):
        calls.append(path)
        target_existed_during_write.append(out.exists())
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_write_table(result, name, path)

    monkeypatch.setattr(results, "_write_table", write_table_failing_on_second_file)
    with pytest.raises(OSError, match="No space left"):
        result.write(out)
    assert len(calls) == 2  # the failure really happened mid-write
    # Files are written elsewhere and renamed into place: a crash mid-write (which no cleanup
    # code survives) could not leave a partial folder at the target either.
    assert target_existed_during_write == [False, False]
    assert not out.exists()
    assert not (tmp_path / "deep").exists()  # parents made for the write are removed too
    assert hidden_leftovers(tmp_path) == []


def test_interrupted_write_keeps_the_previous_result_folder(tiny_path, tmp_path, monkeypatch):
    out = tmp_path / "out"
    xlayer.run(tiny_path, seed=1, out=out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = xlayer.run(tiny_path, seed=2)

    def interrupted(result, name, path):
        raise KeyboardInterrupt

    monkeypatch.setattr("xlayer.results._write_table", interrupted)  # every table file
    with pytest.raises(KeyboardInterrupt):
        result.write(out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert hidden_leftovers(tmp_path) == []


def test_writing_over_a_previous_result_folder_replaces_it(tiny_path, tmp_path):
    out = tmp_path / "out"
    xlayer.run(tiny_path, seed=1, out=out)
    (out / "node0.pcap").write_bytes(b"stale")  # a file the new result does not have
    xlayer.run(tiny_path, seed=2, out=out)
    assert json.loads((out / "summary.json").read_text())["seed"] == 2
    assert not (out / "node0.pcap").exists()
    assert hidden_leftovers(tmp_path) == []


def test_a_non_empty_folder_that_is_not_a_result_is_refused_before_running(tiny_path, tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        xlayer.run(tiny_path, out=out)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_pcap_files_are_written_per_node_when_output_pcap_is_on(chain_path, tmp_path):
    out = tmp_path / "out"
    result = xlayer.run(chain_path, overrides=["output.pcap=true"], out=out)
    assert sorted(result.pcaps) == [0, 1, 2, 3]
    sizes = []
    for node in range(4):
        data = (out / f"node{node}.pcap").read_bytes()
        assert data == result.pcaps[node]
        magic = data[:4]
        assert magic in (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1",
                         b"\xa1\xb2\x3c\x4d"), magic
        endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        linktype = struct.unpack(endian + "I", data[20:24])[0]
        assert linktype in (105, 127), linktype  # IEEE 802.11, or with radiotap
        sizes.append(len(data))
    assert sizes[0] > 24 and sizes[1] > 24  # the sender and receiver captured frames


def test_no_pcap_without_output_pcap(chain_path, tmp_path):
    result = xlayer.run(chain_path, out=tmp_path / "out")
    assert result.pcaps == {}
    assert not list((tmp_path / "out").glob("*.pcap"))
    with pytest.raises(xlayer.ScenarioError):
        xlayer.Simulation(chain_path).pcap(0)


# ----------------------------------------------------------------------------------------------
# Overrides (pure Python: parsing and applying)


@pytest.mark.parametrize(
    "text, steps, value",
    [
        ("radio.rts_cts=true", ["radio", "rts_cts"], True),
        ("topology.count=3", ["topology", "count"], 3),
        ("duration_s=2.5", ["duration_s"], 2.5),
        ('name="my run"', ["name"], "my run"),
        ("topology.positions[1]=[0, 300]", ["topology", "positions", 1], [0, 300]),
        ("flows[0].rate_bps=2e6", ["flows", 0, "rate_bps"], 2e6),
        ("flows[0].rate_bps=saturate", ["flows", 0, "rate_bps"], "saturate"),
        ("radio.standard=802.11a", ["radio", "standard"], "802.11a"),
        (" radio.propagation = range ", ["radio", "propagation"], "range"),
    ],
)
def test_override_values_are_toml_values_and_bare_words_are_strings(text, steps, value):
    _, parsed_steps, parsed_value = parse_override(text)
    assert parsed_steps == steps
    assert parsed_value == value
    assert type(parsed_value) is type(value)


def test_overrides_create_missing_tables_and_append_to_arrays():
    sc = apply_overrides(
        {"flows": [{"src": 0, "dst": 1}]},
        ["radio.tx_range_m=100", "flows[0].rate_bps=1e5", "flows[1].src=1", "flows[1].dst=0"],
    )
    assert sc["radio"] == {"tx_range_m": 100}
    assert sc["flows"] == [{"src": 0, "dst": 1, "rate_bps": 1e5}, {"src": 1, "dst": 0}]


@pytest.mark.parametrize(
    "override, field",
    [
        ("flows[5].src=1", "flows[5].src"),   # index past the end
        ("name.first=1", "name.first"),        # a string is not a table
        ("radio[0]=1", "radio[0]"),           # a table is not an array
        ("no_equals_sign", "no_equals_sign"),
        ("radio..x=1", "radio..x"),
        ("seed=", "seed"),
    ],
)
def test_bad_overrides_raise_scenario_error_naming_the_key(override, field):
    with pytest.raises(xlayer.ScenarioError) as info:
        apply_overrides({"name": "x", "radio": {}, "flows": [{"src": 0, "dst": 1}]}, [override])
    assert str(info.value).startswith(field), str(info.value)


def test_load_scenario_without_source_is_the_shipped_default():
    assert load_scenario() == tomllib.loads((SCENARIOS / "default.toml").read_text())


# ----------------------------------------------------------------------------------------------
# Package surface and shipped scenarios


def test_errors_are_the_core_classes_in_one_tree():
    from xlayer import errors

    for name in ("XlayerError", "ScenarioError", "TopologyError", "SimulationError",
                 "TuningError"):
        assert getattr(errors, name) is getattr(_core, name) is getattr(xlayer, name)
    assert issubclass(xlayer.XlayerError, Exception)
    for cls in (xlayer.ScenarioError, xlayer.TopologyError, xlayer.SimulationError,
                xlayer.TuningError):
        assert issubclass(cls, xlayer.XlayerError)


def test_version_is_the_core_version():
    assert xlayer.__version__ == _core.__version__
    assert xlayer.__version__.count(".") >= 2


def test_package_ships_type_information():
    package = Path(xlayer.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_core.pyi").is_file()


def test_package_default_scenario_is_a_copy_of_scenarios_default():
    assert xlayer.default_scenario_text() == (SCENARIOS / "default.toml").read_text()
    assert (REPO / "python" / "xlayer" / "data" / "default.toml").read_text() == (
        SCENARIOS / "default.toml"
    ).read_text()


def _shipped(kind):
    """Shipped files of one kind: sweep files name a base `scenario`, scenario files do not."""
    import tomllib

    files = sorted(SCENARIOS.glob("*.toml"))
    return [p.stem for p in files if ("scenario" in tomllib.loads(p.read_text())) == (kind == "sweep")]


@pytest.mark.parametrize("name", _shipped("scenario"))
def test_shipped_scenarios_validate_and_build(name):
    path = SCENARIOS / f"{name}.toml"
    sim = xlayer.Simulation(path)  # validation and the connectivity check of every flow
    assert sim.scenario["name"] == name
    assert sim.now_s() == 0.0


@pytest.mark.parametrize("name", _shipped("sweep"))
def test_shipped_sweeps_plan_runs_whose_scenarios_validate(name):
    from xlayer.sweeps import load_sweep, plan_runs

    spec = load_sweep(SCENARIOS / f"{name}.toml")
    runs = plan_runs(spec)
    assert runs and len({r.run for r in runs}) == len(runs)


def test_bianchi_scenario_is_ten_saturated_stations_sending_to_node_0():
    sc = xlayer.normalize_scenario(load_scenario(SCENARIOS / "bianchi.toml"))
    assert sc["seed"] == 1 and sc["duration_s"] == 11 and sc["warmup_s"] == 1
    assert sc["radio"]["data_rate_mbps"] == 11.0 and sc["radio"]["basic_rate_mbps"] == 1.0
    assert sc["radio"]["preamble"] == "long" and sc["radio"]["rts_cts"] is False
    # Bianchi's model has no capture: every station is equally far from the receiver ...
    pos = sc["topology"]["positions"]
    assert pos[0] == [0.0, 0.0] and len(pos) == 11
    radii = [math.hypot(x, y) for x, y in pos[1:]]
    assert max(radii) - min(radii) < 1e-3
    # ... and any overlap destroys both frames.
    assert sc["radio"]["error_model"] == "threshold" and sc["radio"]["sinr_threshold_db"] >= 10.0
    assert [(f["src"], f["dst"]) for f in sc["flows"]] == [(i, 0) for i in range(1, 11)]
    assert all(f["rate_bps"] == "saturate" and f["payload_bytes"] == 1000 for f in sc["flows"])
    assert sc["mac"]["queue_packets"] == 50


def test_mesh_scenario_is_the_benchmark_set_up():
    sc = xlayer.normalize_scenario(load_scenario(SCENARIOS / "mesh-7x7.toml"))
    assert sc["topology"] == {"kind": "grid", "rows": 7, "cols": 7, "spacing_m": 200.0}
    r = sc["radio"]
    assert (r["standard"], r["propagation"], r["tx_range_m"]) == ("802.11b", "range", 250.0)
    assert (r["data_rate_mbps"], r["basic_rate_mbps"], r["preamble"], r["rts_cts"]) == (
        11.0, 11.0, "long", False)
    assert sc["mac"]["queue_packets"] == 500
    assert (sc["duration_s"], sc["warmup_s"]) == (60, 2)
    pairs = [(8, 36), (48, 4), (16, 7), (31, 48), (28, 30), (41, 24), (13, 6), (24, 27),
             (38, 48), (0, 44), (46, 14), (37, 6), (20, 1), (43, 13), (27, 46), (1, 33)]
    assert [(f["src"], f["dst"]) for f in sc["flows"]] == pairs
    for f in sc["flows"]:
        assert (f["rate_bps"], f["payload_bytes"], f["start_s"], f["stop_s"]) == (
            6e6, 1000, 1.0, 60.0)


def test_default_scenario_runs_quickly_and_delivers_traffic():
    result = xlayer.run()
    assert result.summary["name"] == "default"
    assert result.summary["nodes"] == 5 and result.summary["flows"] == 2
    assert (result.flows["received"] > 0).all()
    assert not math.isnan(result.summary["delay_mean_s"])


@pytest.mark.slow
def test_chain_scenario_carries_less_than_the_one_hop_rate():
    result = xlayer.run(SCENARIOS / "chain.toml")
    throughput = result.summary["aggregate_throughput_bps"]
    assert 0 < throughput < 2e6


def test_errors_survive_pickling_across_processes():
    # Dask workers send exceptions back to the client by pickle.
    import pickle

    with pytest.raises(xlayer.ScenarioError) as info:
        xlayer.run({"radio": {"bogus": 1}})
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is xlayer.ScenarioError and str(again) == str(info.value)
    assert isinstance(again, xlayer.XlayerError)


def test_throughput_time_series_reaches_the_result_folder_and_its_plot(tmp_path):
    from xlayer.plots import plot_folder

    res = xlayer.run(SCENARIOS / "default.toml", overrides=["output.timeseries_bin_s=0.5"])
    ts = res.timeseries
    assert list(ts.columns[:3]) == ["flow", "t_s", "throughput_bps"]
    assert len(ts) == 2 * 20  # two flows, 10 s in 0.5 s bins
    # flow 1 offers 250 kbit/s from t = 0.5 s: its later bins carry about that
    late = ts[(ts["flow"] == 1) & (ts["t_s"] >= 2.0)]["throughput_bps"]
    assert abs(late.mean() - 250e3) < 25e3
    out = res.write(tmp_path / "run")
    assert (out / "timeseries.csv").is_file()
    written = {p.name for p in plot_folder(out)}
    assert {"throughput_timeseries.png", "throughput_timeseries.svg"} <= written


def test_no_time_series_unless_asked():
    res = xlayer.run(SCENARIOS / "default.toml", overrides=["duration_s=2"])
    assert len(res.timeseries) == 0


def test_core_tables_arrive_by_column_with_their_types_and_missing_cells():
    """The core hands tables over by column (no Python object per row): integers stay int64,
    a column some rows lack is NaN, text stays text, and the known columns come first."""
    import numpy as np

    from xlayer.results import table

    data = {
        "extra": ("obj", ["a", None, "c"]),
        "flow": ("i8", struct.pack("<3q", 0, 1, 2)),
        "t_s": ("f8", struct.pack("<3d", 0.5, float("nan"), 1.5)),
    }
    df = table(data, ["flow", "t_s"])
    assert list(df.columns) == ["flow", "t_s", "extra"]
    assert df["flow"].dtype == np.int64 and df["flow"].tolist() == [0, 1, 2]
    assert df["t_s"].dtype == np.float64 and np.isnan(df["t_s"][1]) and df["t_s"][2] == 1.5
    assert df["extra"][0] == "a" and pd.isna(df["extra"][1]) and df["extra"][2] == "c"
    df.loc[0, "t_s"] = 9.0  # a writable copy, not a view of the core's bytes
    assert table({}, ["flow"]).columns.tolist() == ["flow"]


def test_a_core_table_is_written_as_pandas_writes_it_without_pandas(tmp_path):
    """A result folder's CSV files are written without pandas while the tables have not been
    read (so ``xlayer run --out`` imports none), byte for byte as ``DataFrame.to_csv`` writes
    them: pandas, the writer these files always came from, is the reference here."""
    import random

    from xlayer.results import CoreTable, table

    rng = random.Random(7)
    specials = [0.0, -0.0, 1.0, 1e16, 1e15, 123456789012345678.0, 1e-5, 1e-4, 0.1 + 0.2,
                5e-324, 1.7976931348623157e308, float("inf"), float("-inf"), float("nan"),
                2.0 ** 53, 12345.678, -3.25e-7]
    floats = specials + [rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30) for _ in range(2000)]
    n = len(floats)
    ints = [rng.randint(-2**63, 2**63 - 1) for _ in range(n)]
    words = [rng.choice([None, "a", "b,c", 'say "hi"', "line\nbreak", "", True, False, 7])
             for _ in range(n)]
    data = {
        "extra": ("obj", words),
        "flow": ("i8", struct.pack(f"<{n}q", *ints)),
        "t_s": ("f8", struct.pack(f"<{n}d", *floats)),
    }
    for cols in (["flow", "t_s"], ["t_s", "missing"], []):
        ours, theirs = tmp_path / "ours.csv", tmp_path / "theirs.csv"
        assert CoreTable(data, cols).write_csv(ours)
        table(data, cols).to_csv(theirs, index=False)
        assert ours.read_bytes() == theirs.read_bytes()
    # An empty table is its header, in the known columns' order.
    ours, theirs = tmp_path / "e1.csv", tmp_path / "e2.csv"
    assert CoreTable({}, ["flow", "t_s"]).write_csv(ours)
    table({}, ["flow", "t_s"]).to_csv(theirs, index=False)
    assert ours.read_bytes() == theirs.read_bytes()
    # A text column with fractional numbers in it is left to pandas (its own number format).
    mixed = {"value": ("obj", ["a", 0.5])}
    assert not CoreTable(mixed, ["value"]).write_csv(tmp_path / "m.csv")
    assert not (tmp_path / "m.csv").exists()


def test_a_run_written_and_printed_imports_neither_pandas_nor_numpy(tmp_path):
    """``xlayer run --out`` and ``xlayer.run(out=...)`` with the summary and the flow rows
    read: no pandas or numpy import (a third of a second and more of every short run);
    reading a table makes it a DataFrame, whose CSV is the file written."""
    code = (
        "import sys, xlayer\n"
        "from xlayer.cli import main\n"
        f"assert main(['run', '-q', '--out', {str(tmp_path / 'cli')!r}]) == 0\n"
        f"r = xlayer.run(out={str(tmp_path / 'api')!r})\n"
        "assert r.summary['flows'] == r._table_length('flows') > 0\n"
        "assert r._table_rows('flows', 1)[0]['flow'] == 0\n"
        "print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))\n"
        "import pandas as pd\n"
        "assert isinstance(r.flows, pd.DataFrame) and isinstance(r.nodes, pd.DataFrame)\n"
        f"written = open({str(tmp_path / 'api' / 'flows.csv')!r}, newline='').read()\n"
        "assert r.flows.to_csv(index=False) == written\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert (tmp_path / "cli" / "flows.csv").read_bytes() == \
        (tmp_path / "api" / "flows.csv").read_bytes()


def test_a_fine_time_series_has_a_row_per_flow_and_bin():
    sc = xlayer.scenario.load_scenario(None)
    sc["output"] = {"timeseries_bin_s": 0.001}
    r = xlayer.run(sc)
    ts = r.timeseries
    bins = int(round(sc["duration_s"] / 0.001))
    assert len(ts) == len(r.flows) * bins
    assert ts["flow"].dtype.kind == "i" and ts["throughput_bps"].dtype.kind == "f"
    assert sorted(ts["flow"].unique().tolist()) == r.flows["flow"].tolist()
