"""Protocol stack presets (``stack.preset``) and ``xlayer compare``: one scenario, several
stacks, one table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import xlayer
from xlayer import _core
from xlayer.cli import main

from conftest import SMALL_CHAIN


@pytest.mark.parametrize("preset, transport", [
    ("tcp-sack", "tcp-newreno+sack"),
    ("tcp-reno", "tcp-reno"),
    ("tcp-few", "tcp-few"),
    ("tcp-westwood", "tcp-westwood"),
    ("tfrc", "tfrc"),
    ("tfrc-ecn", "tfrc-ecn"),
    ("clap", "clap"),
    ("udp", "udp"),
])
def test_a_preset_sets_every_flows_transport(chain_path, preset, transport):
    # SMALL_CHAIN's flow is a 200 kbit/s UDP source; the preset replaces its transport.
    result = xlayer.run(chain_path, overrides=[f"stack.preset={preset}"])
    assert list(result.flows["transport"]) == [transport]
    assert result.flows["throughput_bps"].iloc[0] > 0


def test_udp_dcf_keeps_each_flows_own_transport(write_scenario):
    text = SMALL_CHAIN + '\n[[flows]]\nsrc = 2\ndst = 3\ntransport = "tcp"\ncc = "reno"\n'
    result = xlayer.run(write_scenario(text))
    assert list(result.flows["transport"]) == ["udp", "tcp-reno"]


def test_unknown_preset_names_the_field_and_lists_the_presets(chain_path):
    with pytest.raises(xlayer.ScenarioError) as e:
        xlayer.run(chain_path, overrides=["stack.preset=diffq-nope"])
    assert "stack.preset" in str(e.value)
    for name in ("tcp-sack", "tfrc-ecn", "udp-dcf"):
        assert name in str(e.value)
    assert set(_core.presets()) >= {"udp-dcf", "tcp-sack", "tcp-few", "tfrc-ecn"}


def test_compare_runs_every_stack_and_prints_one_row_each(chain_path, tmp_path, capsys):
    out = tmp_path / "cmp"
    status = main(["compare", str(chain_path), "--stacks", "tcp-sack,udp", "--seeds", "2",
                   "--workers", "1", "--out", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "tcp-sack" in printed and "udp" in printed and "Jain" in printed
    runs = pd.read_parquet(out / "runs.parquet")
    assert sorted(runs["stack"].unique()) == ["tcp-sack", "udp"]
    assert sorted(runs["seed"].unique()) == [1, 2]
    flows = pd.read_parquet(out / "flows.parquet")
    by_stack = flows.groupby("stack")["transport"].unique()
    assert list(by_stack["tcp-sack"]) == ["tcp-newreno+sack"]
    assert list(by_stack["udp"]) == ["udp"]


@pytest.mark.parametrize("args, message", [
    (["--stacks", "tcp-sack,bogus"], "unknown stack 'bogus'"),
    (["--stacks", "tcp-sack,tcp-sack"], "named twice"),
    (["--stacks", "tcp-sack", "--seeds", "0"], "--seeds"),
])
def test_compare_rejects_bad_arguments_in_one_line(chain_path, tmp_path, capsys, args, message):
    status = main(["compare", str(chain_path), *args, "--out", str(tmp_path / "x")])
    assert status == 2
    err = capsys.readouterr().err
    assert message in err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("preset, fields", [
    ("diffq-udp", {("mac", "access"): "diffq8", ("net", "queueing"): "per_destination",
                   ("net", "dest_queue_packets"): 50}),
    ("diffq-tcp", {("mac", "access"): "diffq8", ("net", "queueing"): "per_destination"}),
    ("dpclo-zmacplus", {("mac", "access"): "zmacplus", ("net", "routing"): "dsdv",
                        ("net", "dest_queue_packets"): 3}),
    ("dpclo-80211e", {("mac", "access"): "802.11e", ("net", "routing"): "dsdv"}),
    ("dclo", {("mac", "access"): "zmac", ("net", "routing"): "static",
              ("net", "queueing"): "per_destination", ("net", "dest_queue_packets"): 3}),
])
def test_backpressure_presets_fill_in_their_components(chain_path, preset, fields):
    # The scenario as run states every component the preset chose (docs/scenario.md, stack).
    sc = xlayer.load_scenario(chain_path, [f"stack.preset={preset}"])
    run = xlayer.normalize_scenario(sc)
    for (table, key), value in fields.items():
        assert run[table][key] == value, (preset, table, key, run[table])
    flows = run["flows"]
    if preset == "diffq-tcp":
        assert flows[0]["transport"] == "tcp" and flows[0]["cc"] == "paced" and flows[0]["sack"]
    else:
        assert flows[0]["transport"] == "udp"


def test_one_scenario_file_serves_every_stack_with_its_tables(write_scenario):
    # [stack.diffq], [stack.dpclo], [stack.fusion] and [stack.dclo] stay in the file; each
    # preset reads its own.
    text = SMALL_CHAIN.replace("[radio]", "[stack.diffq]\nqueue_thresh = 6\n\n"
                               "[stack.dpclo]\ndelta_pps = 5.0\n\n"
                               "[stack.fusion]\nqueue_threshold = 0.5\n\n"
                               "[stack.dclo]\nmac = \"dcf\"\n\n[radio]")
    path = write_scenario(text)
    for preset in ("udp-dcf", "tcp-sack", "diffq-udp", "dpclo-80211e", "fusion", "dclo"):
        result = xlayer.run(path, overrides=[f"stack.preset={preset}", "duration_s=1.0",
                                             "warmup_s=0.0"])
        assert len(result.flows) == 1, preset
    with pytest.raises(xlayer.ScenarioError) as e:
        xlayer.run(path, overrides=["stack.preset=diffq-udp", "stack.diffq.beta=1.5"])
    assert "stack.diffq.beta" in str(e.value)


def test_diffq_run_reports_mac_priority_usage(chain_path):
    result = xlayer.run(chain_path, overrides=["stack.preset=diffq-udp", "duration_s=3.0"])
    use = [int(x) for x in result.summary["mac_level_use"].split("/")]
    assert len(use) == 8  # DiffQ's Table 1 levels
    assert sum(use) > 0
    assert result.flows["throughput_bps"].iloc[0] > 0


def test_compare_runs_dclo_beside_dpclo_and_records_control_airtime(tmp_path, capsys):
    # `xlayer compare` takes "dclo" like any preset; its matching shows in the control airtime
    # of every run's summary (runs.parquet).
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "dclo-fig2.toml"
    out = tmp_path / "cmp"
    status = main(["compare", str(scenario), "--stacks", "dclo,dpclo-zmacplus", "--seeds", "1",
                   "--workers", "1", "--out", str(out), "--set", "duration_s=26.0"])
    assert status == 0
    assert "dclo" in capsys.readouterr().out
    runs = pd.read_parquet(out / "runs.parquet").set_index("stack")
    assert runs.loc["dclo", "ctrl_airtime_s"] > runs.loc["dpclo-zmacplus", "ctrl_airtime_s"] > 0
    assert runs.loc["dclo", "dclo_intervals"] > 0


def test_overrides_given_as_a_dict_work_in_sweeps_and_compare(chain_path):
    from xlayer.cli import compare_sweep
    from xlayer.sweeps import load_sweep

    doc = compare_sweep(str(chain_path), ["udp", "tcp-sack"], 2,
                        {"duration_s": 1.5, "radio": {"rts_cts": True}})
    spec = load_sweep(doc)
    assert spec.base["duration_s"] == 1.5 and spec.base["radio"]["rts_cts"] is True
    # the same in a sweep document's own overrides (a table), then the caller's (a dict)
    spec = load_sweep({"scenario": str(chain_path), "overrides": {"duration_s": 1.5},
                       "stacks": {"a": {}}}, overrides={"flows[0].rate_bps": 1e5})
    assert spec.base["duration_s"] == 1.5 and spec.base["flows"][0]["rate_bps"] == 1e5
    # strings keep working, and a dict naming a bad path says which
    assert load_sweep({"scenario": str(chain_path)}, ["duration_s=1.5"]).base["duration_s"] == 1.5
    with pytest.raises(xlayer.ScenarioError, match=r"^overrides\.flows\[x\]"):
        load_sweep({"scenario": str(chain_path)}, {"flows[x]": 1})
    with pytest.raises(xlayer.ScenarioError, match="^overrides: must be a list"):
        load_sweep({"scenario": str(chain_path)}, 5)
