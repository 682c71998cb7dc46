"""Bad input fails cleanly: one line ``xlayer: error: <message naming the field>`` on stderr,
exit status 2, no traceback, no result folder; and the API raises the matching class."""

from __future__ import annotations

from pathlib import Path

import pytest

import xlayer

from conftest import hidden_leftovers

CHAIN = """
[radio]
tx_range_m = 250.0
[topology]
kind = "chain"
count = 3
spacing_m = 200.0
"""

BAD_SCENARIOS = {
    # name: (scenario text, what the message must contain, the class the API raises)
    "malformed_toml": (
        '[radio\nstandard = "802.11b"\n',
        ["invalid TOML", "line 1"],
        xlayer.ScenarioError,
    ),
    "unknown_field": (
        CHAIN + "bogus_knob = 1\n[[flows]]\nsrc = 0\ndst = 1\n",
        ["topology", "bogus_knob"],
        xlayer.ScenarioError,
    ),
    "name_field_given_a_number": (
        CHAIN.replace("[radio]\n", "[radio]\npropagation = 2\n") + "[[flows]]\nsrc = 0\ndst = 1\n",
        ["radio.propagation", "`two_ray_ground`", "`free_space`"],
        xlayer.ScenarioError,
    ),
    "negative_rate": (
        CHAIN + "[[flows]]\nsrc = 0\ndst = 1\nrate_bps = -5.0\n",
        ["flows[0].rate_bps"],
        xlayer.ScenarioError,
    ),
    "flow_to_missing_node": (
        CHAIN + "[[flows]]\nsrc = 0\ndst = 9\n",
        ["flows[0].dst", "9"],
        xlayer.ScenarioError,
    ),
    "rate_not_in_the_standard": (
        "[radio]\ndata_rate_mbps = 7\n" + CHAIN.replace("[radio]\n", "")
        + "[[flows]]\nsrc = 0\ndst = 1\n",
        ["radio.data_rate_mbps", "7"],
        xlayer.ScenarioError,
    ),
    "disconnected_topology": (
        """
[radio]
tx_range_m = 250.0
cs_range_m = 550.0
[topology]
kind = "explicit"
positions = [[0.0, 0.0], [100.0, 0.0], [10000.0, 0.0], [10100.0, 0.0]]
[[flows]]
src = 0
dst = 3
""",
        ["flows[0]", "unreachable"],
        xlayer.TopologyError,
    ),
    # Found by fuzzing: 1e12 packets/s never ended; 100 000 nodes in 1 m^2 (10^10 links)
    # aborted the interpreter out of memory.
    "rate_beyond_a_packet_per_microsecond": (
        CHAIN + "[[flows]]\nsrc = 0\ndst = 1\nrate_bps = 1e12\n",
        ["flows[0].rate_bps", "microsecond"],
        xlayer.ScenarioError,
    ),
    "network_too_dense_to_hold": (
        '[topology]\nkind = "random"\ncount = 100000\nwidth_m = 1.0\nheight_m = 1.0\n',
        ["topology", "links"],
        xlayer.TopologyError,
    ),
    "nan_duration": (
        "duration_s = nan\n" + CHAIN + "[[flows]]\nsrc = 0\ndst = 1\n",
        ["duration_s", "finite"],
        xlayer.ScenarioError,
    ),
}


def assert_clean_failure(proc, expected, folder: Path, out: Path) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("xlayer: error: "), lines[0]
    for text in expected:
        assert text in lines[0], (text, lines[0])
    assert proc.stdout == ""
    assert not out.exists()
    assert hidden_leftovers(folder) == []


@pytest.mark.parametrize("case", sorted(BAD_SCENARIOS))
def test_bad_scenario_exits_2_with_one_line_naming_the_field(case, xlayer_cli, write_scenario,
                                                             tmp_path):
    text, expected, _ = BAD_SCENARIOS[case]
    path = write_scenario(text, f"{case}.toml")
    proc = xlayer_cli("run", path, "--out", "res")
    assert_clean_failure(proc, expected, tmp_path, tmp_path / "res")


@pytest.mark.parametrize("case", sorted(BAD_SCENARIOS))
def test_bad_scenario_raises_the_matching_error_class_from_the_api(case, write_scenario,
                                                                    tmp_path):
    text, expected, cls = BAD_SCENARIOS[case]
    path = write_scenario(text, f"{case}.toml")
    with pytest.raises(cls) as info:
        xlayer.run(path, out=tmp_path / "res")
    for t in expected:
        assert t in str(info.value)
    assert not (tmp_path / "res").exists()


def test_missing_scenario_file_exits_2(xlayer_cli, tmp_path):
    proc = xlayer_cli("run", "no-such-scenario.toml", "--out", "res")
    assert_clean_failure(proc, ["no-such-scenario.toml", "No such file"], tmp_path,
                         tmp_path / "res")


def test_missing_scenario_file_raises_file_not_found_from_the_api(tmp_path):
    with pytest.raises(FileNotFoundError):
        xlayer.run(tmp_path / "no-such-scenario.toml")


def test_malformed_override_exits_2(xlayer_cli, tmp_path):
    proc = xlayer_cli("run", "--set", "this-is-not-an-override", "--out", "res")
    assert_clean_failure(proc, ["KEY=VALUE"], tmp_path, tmp_path / "res")


def test_override_with_a_value_of_the_wrong_type_exits_2_naming_the_field(xlayer_cli, tmp_path):
    proc = xlayer_cli("run", "--set", "topology.count=many", "--out", "res")
    assert_clean_failure(proc, ["topology.count"], tmp_path, tmp_path / "res")


def test_out_folder_holding_other_files_is_refused_and_left_alone(xlayer_cli, tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    proc = xlayer_cli("run", "--out", "precious")
    assert proc.returncode == 2
    assert proc.stderr.startswith("xlayer: error: ") and "precious" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_scenario_command_reports_errors_the_same_way(xlayer_cli, write_scenario, tmp_path):
    path = write_scenario(CHAIN + "[[flows]]\nsrc = 0\ndst = 9\n")
    proc = xlayer_cli("scenario", path)
    assert_clean_failure(proc, ["flows[0].dst"], tmp_path, tmp_path / "res")
