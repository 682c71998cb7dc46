"""CLAP from Python (`transport = "clap"`, the `clap` preset): field errors name the field, a
file arrives whole, and the CLAP columns are in the flow table. The protocol's behaviour against
TCP-SACK and the available bandwidth is tested in `crates/xlayer-core/tests/clap.rs`."""

from __future__ import annotations

import math

import pytest

import xlayer

ONE_HOP = {
    "duration_s": 10.0,
    "radio": {"standard": "802.11b", "data_rate_mbps": 11.0, "tx_range_m": 250.0},
    "mac": {"short_retry_limit": 1, "long_retry_limit": 1},
    "topology": {"kind": "chain", "count": 2, "spacing_m": 100.0},
}


def scenario(**flow):
    return {**ONE_HOP, "flows": [{"src": 0, "dst": 1, "transport": "clap", **flow}]}


@pytest.mark.parametrize(
    "flow, field",
    [
        ({"cc": "reno"}, "flows[0].cc"),
        ({"sack": True}, "flows[0].sack"),
        ({"tcp": {"delayed_ack": False}}, "flows[0].tcp"),
        ({"size_bytes": 0}, "flows[0].size_bytes"),
        ({"clap": {"probe_bytes": 20}}, "flows[0].clap.probe_bytes"),
        ({"clap": {"probe_interval_s": 0.0}}, "flows[0].clap.probe_interval_s"),
        ({"clap": {"nack_interval_s": -1.0}}, "flows[0].clap.nack_interval_s"),
        ({"clap": {"max_outstanding": 0}}, "flows[0].clap.max_outstanding"),
        ({"clap": {"probe_every_s": 0.1}}, "probe_every_s"),
        ({"payload_bytes": 2253}, "flows[0].payload_bytes"),
    ],
    ids=["cc", "sack", "tcp_options", "empty_file", "tiny_probe", "zero_interval",
         "negative_nack_interval", "no_buffer", "unknown_field", "payload_over_limit"],
)
def test_clap_field_errors_name_the_field(flow, field):
    with pytest.raises(xlayer.ScenarioError) as info:
        xlayer.Simulation(scenario(**flow))
    assert field in str(info.value), str(info.value)


def test_clap_options_on_another_transport_are_refused_by_name():
    s = scenario(clap={"probe_bytes": 100})
    s["flows"][0]["transport"] = "udp"
    with pytest.raises(xlayer.ScenarioError, match=r"flows\[0\]\.clap"):
        xlayer.Simulation(s)


def test_a_clap_file_arrives_whole_and_the_flow_table_has_the_clap_columns():
    result = xlayer.run(scenario(size_bytes=300_000, clap={"probe_bytes": 100}))
    row = result.flows.iloc[0]
    assert row["transport"] == "clap"
    assert row["app_bytes"] == 300_000
    assert row["stream_errors"] == 0
    assert 0 < row["completion_s"] < 10.0
    # One hop: no relay stamps the probes.
    assert math.isnan(row["clap_path_rate_bps"])
    assert row["clap_probes"] >= 1
    # 100-byte probes and replies: a reply for each probe that arrived (at least those whose
    # reply came back, at most one per probe).
    probes, replies = row["clap_probes"], row["clap_probe_replies"]
    assert 100 * (probes + replies) <= row["clap_probe_bytes"] <= 100 * 2 * probes
    assert row["clap_nacks"] >= 1


def test_the_clap_preset_keeps_the_file_size_and_drops_tcp_options():
    s = {**ONE_HOP, "stack": {"preset": "clap"},
         "flows": [{"src": 0, "dst": 1, "transport": "tcp", "sack": True, "size_bytes": 50_000,
                    "tcp": {"delayed_ack": False}}]}
    result = xlayer.run(s)
    assert result.scenario["flows"][0]["transport"] == "clap"
    assert "tcp" not in result.scenario["flows"][0]
    assert result.flows.iloc[0]["app_bytes"] == 50_000
