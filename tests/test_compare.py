"""Protocol stack presets (``stack.preset``) and ``xlayer compare``: one scenario, several
stacks, one table."""

from __future__ import annotations

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
