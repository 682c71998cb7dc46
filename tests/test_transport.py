"""Transports from Python: TCP bulk transfers and their flow columns, the TCP trace, the
transport tuning parameters and events, the transport rules of the scenario, and TFRC.

Every scenario here is a chain of 802.11b nodes 200 m apart under ns-2's 250 m / 550 m ranges
(see ``docs/scenario.md``, flows and transports), a few simulated seconds long.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any, Dict, Optional

import pandas as pd
import pytest

import xlayer

#: The columns docs/scenario.md documents for the TCP trace, in order.
DOCUMENTED_TRACE_COLUMNS = [
    "flow", "t_s", "event", "cwnd_segments", "ssthresh_segments", "srtt_s", "rto_s",
    "retransmits", "timeouts",
]
TRACE_EVENTS = {"window", "loss_dupack", "loss_timeout"}
#: TCP and IPv4 headers without options: what a paced sender's rate counts beside the payload.
TCP_IP_HEADER_BYTES = 40


def chain(hops: int, flow: Dict[str, Any], duration_s: float = 4.0, **top: Any) -> Dict[str, Any]:
    """A chain of ``hops + 1`` nodes with one flow from node 0 to the last node."""
    scenario: Dict[str, Any] = {
        "name": f"tcp-chain-{hops}",
        "seed": 1,
        "duration_s": duration_s,
        "radio": {"tx_range_m": 250.0, "cs_range_m": 550.0},
        "topology": {"kind": "chain", "count": hops + 1, "spacing_m": 200.0},
        "flows": [{"src": 0, "dst": hops, **flow}],
    }
    scenario.update(top)
    return scenario


def flow_row(result: xlayer.Result, flow: int = 0) -> pd.Series:
    return result.flows.set_index("flow").loc[flow]


# ----------------------------------------------------------------------------------------------
# A bulk transfer over three hops, its flow columns, its trace and its result folder

BULK_BYTES = 300_000


@pytest.fixture(scope="module")
def bulk(tmp_path_factory) -> tuple:
    scenario = chain(
        3,
        {"transport": "tcp", "size_bytes": BULK_BYTES, "tcp": {"verify_stream": True}},
        duration_s=10.0,
        output={"tcp_trace": True},
    )
    out = tmp_path_factory.mktemp("bulk") / "run"
    return xlayer.run(scenario, out=out), out


def test_tcp_bulk_transfer_over_three_hops_delivers_every_byte_intact(bulk):
    result, _ = bulk
    row = flow_row(result)
    assert row["transport"] == "tcp-newreno"  # the default congestion control
    assert row["hops"] == 3
    assert row["app_bytes"] == BULK_BYTES
    assert row["stream_errors"] == 0
    assert math.isfinite(row["completion_s"])
    assert 0.0 < row["completion_s"] < result.scenario["duration_s"]
    assert row["throughput_bps"] > 0.0


def test_tcp_trace_has_the_documented_columns_and_follows_the_window(bulk):
    result, _ = bulk
    trace = result.tcp_trace
    assert list(trace.columns) == DOCUMENTED_TRACE_COLUMNS
    assert len(trace) > 0
    assert set(trace["flow"]) == {0}
    assert set(trace["event"]) <= TRACE_EVENTS
    assert "window" in set(trace["event"])
    assert trace["t_s"].is_monotonic_increasing
    assert (trace["cwnd_segments"] > 0).all()
    assert (trace["rto_s"] > 0).all()
    # The counters in the trace never run backwards and end at the flow's totals.
    assert trace["retransmits"].is_monotonic_increasing
    assert trace["timeouts"].is_monotonic_increasing
    row = flow_row(result)
    assert trace["retransmits"].iloc[-1] <= row["retransmits"]
    assert trace["timeouts"].iloc[-1] <= row["timeouts"]


def test_result_folder_holds_tcp_trace_csv(bulk):
    result, out = bulk
    path = Path(out) / "tcp_trace.csv"
    assert path.is_file()
    written = pd.read_csv(path)
    assert list(written.columns) == DOCUMENTED_TRACE_COLUMNS
    assert len(written) == len(result.tcp_trace)


def test_no_tcp_trace_unless_asked(tmp_path):
    scenario = chain(1, {"transport": "tcp", "size_bytes": 20_000}, duration_s=2.0)
    result = xlayer.run(scenario, out=tmp_path / "run")
    assert len(result.tcp_trace) == 0
    assert list(result.tcp_trace.columns) == DOCUMENTED_TRACE_COLUMNS
    assert not (tmp_path / "run" / "tcp_trace.csv").exists()


def test_udp_flows_report_no_tcp_counters():
    result = xlayer.run(chain(1, {"rate_bps": 200e3}, duration_s=1.0))
    row = flow_row(result)
    assert row["transport"] == "udp"
    assert math.isnan(row["completion_s"])
    assert row["retransmits"] == row["fast_retransmits"] == row["timeouts"] == 0


# ----------------------------------------------------------------------------------------------
# Tuning parameters and events


def test_transport_parameters_are_listed_per_flow_and_readable_at_their_endpoint():
    flow = {"transport": "tcp", "cc": "paced", "rate_bps": 1e6}
    sim = xlayer.Simulation(chain(1, flow, duration_s=1.0))
    listed = {p["name"]: p for p in sim.params() if p["layer"] == "transport"}
    assert set(listed) >= {
        "tcp.cwnd.<flow>", "tcp.ssthresh.<flow>", "tcp.srtt.<flow>", "tcp.rto.<flow>",
        "tcp.rwnd.<flow>", "tcp.pace_rate.<flow>", "tcp.retransmits.<flow>",
    }
    settable = {name for name, p in listed.items() if not p["read_only"]}
    assert settable == {"tcp.rwnd.<flow>", "tcp.pace_rate.<flow>"}
    # Before the first RTT sample and the first loss, as documented.
    assert math.isnan(sim.get_param(0, "tcp.srtt.0"))
    assert sim.get_param(0, "tcp.ssthresh.0") == math.inf
    assert sim.get_param(0, "tcp.rto.0") == 1.0  # RFC 6298 (2.1): initial RTO 1 s
    assert sim.get_param(1, "tcp.rwnd.0") == 65535.0  # the default tcp.rcv_buf_bytes
    assert sim.get_param(0, "tcp.pace_rate.0") == 1e6  # the paced flow's rate_bps
    with pytest.raises(xlayer.TuningError):
        sim.set_param(0, "tcp.cwnd.0", 10.0)
    with pytest.raises(xlayer.TuningError) as info:
        sim.get_param(0, "tcp.cwnd.1")
    assert "flow 1" in str(info.value), str(info.value)


def test_congestion_window_grows_from_its_initial_value_on_a_lossless_link():
    sim = xlayer.Simulation(chain(1, {"transport": "tcp"}, duration_s=2.0))
    initial = sim.get_param(0, "tcp.cwnd.0")
    # RFC 5681 §3.1 for the default 1000-byte MSS, as docs/scenario.md states.
    assert initial == 4.0
    sim.run_until(1.0)
    assert sim.get_param(0, "tcp.cwnd.0") > initial
    assert math.isfinite(sim.get_param(0, "tcp.srtt.0"))
    assert sim.get_param(0, "tcp.rto.0") >= 1.0  # RFC 6298's minimum, the default min_rto_s


def long_lived_tcp_throughput(rwnd: Optional[float], mss: int) -> float:
    flow = {"transport": "tcp", "payload_bytes": mss}
    sim = xlayer.Simulation(chain(3, flow, duration_s=4.0, warmup_s=1.0))
    if rwnd is not None:
        sim.set_param(3, "tcp.rwnd.0", rwnd)
        assert sim.get_param(3, "tcp.rwnd.0") == rwnd
    return float(flow_row(sim.run())["throughput_bps"])


def test_receiver_window_set_at_the_destination_limits_throughput():
    # A window below two segments lets one segment out per round, and the delayed-ACK receiver
    # answers a lone segment only when its 0.2 s timer fires (RFC 1122 §4.2.3.2): about one MSS
    # per 0.2 s. (A wireless chain's pipe holds only a few segments, so a window of two or more
    # segments would hardly slow it down.)
    mss = 1460
    unlimited = long_lived_tcp_throughput(None, mss)
    limited = long_lived_tcp_throughput(2000, mss)
    assert limited < 0.2 * unlimited, (limited, unlimited)
    assert limited == pytest.approx(mss * 8 / 0.2, rel=0.25)


def test_receiver_window_set_on_the_wrong_node_names_the_receiver():
    sim = xlayer.Simulation(chain(3, {"transport": "tcp"}, duration_s=1.0))
    with pytest.raises(xlayer.TuningError) as info:
        sim.set_param(0, "tcp.rwnd.0", 2000)
    message = str(info.value)
    assert "tcp.rwnd.0" in message and "node 3" in message, message
    # The sender's parameters live at the source, not at the destination.
    with pytest.raises(xlayer.TuningError) as info:
        sim.get_param(3, "tcp.cwnd.0")
    assert "node 0" in str(info.value), str(info.value)


def test_tcp_parameters_of_a_udp_flow_raise_tuning_error():
    sim = xlayer.Simulation(chain(1, {"rate_bps": 200e3}, duration_s=1.0))
    with pytest.raises(xlayer.TuningError):
        sim.get_param(0, "tcp.cwnd.0")


def paced_goodput(rate_bps: float) -> float:
    flow = {"transport": "tcp", "cc": "paced", "rate_bps": 1e6}
    sim = xlayer.Simulation(chain(1, flow, duration_s=4.0, warmup_s=1.0))
    sim.set_param(0, "tcp.pace_rate.0", rate_bps)
    assert sim.get_param(0, "tcp.pace_rate.0") == rate_bps
    return float(flow_row(sim.run())["throughput_bps"])


@pytest.mark.parametrize("rate_bps", [200e3, 400e3])
def test_pace_rate_sets_a_paced_flows_throughput_on_an_uncongested_link(rate_bps):
    # The rate counts IP packets (1000-byte segments plus 40 bytes of TCP/IP headers); one hop
    # at 11 Mbit/s carries far more, so goodput is the paced rate's payload share.
    expected = rate_bps * 1000 / (1000 + TCP_IP_HEADER_BYTES)
    assert paced_goodput(rate_bps) == pytest.approx(expected, rel=0.25)


def test_pace_rate_is_refused_on_a_flow_that_is_not_paced():
    sim = xlayer.Simulation(chain(1, {"transport": "tcp"}, duration_s=1.0))
    with pytest.raises(xlayer.TuningError):
        sim.set_param(0, "tcp.pace_rate.0", 200e3)


def test_loss_events_name_the_flow_and_match_the_flows_counters():
    # Three hops with three-packet queues: the window outgrows the queues, segments are
    # dropped, and NewReno recovers by fast retransmit or, when too few duplicate ACKs come
    # back, by a timeout.
    scenario = chain(3, {"transport": "tcp"}, duration_s=5.0, mac={"queue_packets": 3})
    sim = xlayer.Simulation(scenario)
    sim.subscribe("transport.loss")
    sim.subscribe("transport.rto")
    row = flow_row(sim.run())
    events = sim.take_events()
    losses = [e for e in events if e[2] == "transport.loss"]
    rtos = [e for e in events if e[2] == "transport.rto"]
    assert losses, "no transport.loss event on a path that drops segments"
    for time_s, node, kind, value, flow in events:
        assert flow == 0
        assert node == 0  # the sender detects losses and runs the timer
        assert 0.0 <= time_s <= 5.0
    assert {e[3] for e in losses} <= {0.0, 1.0}
    # Value 0: three duplicate ACKs; value 1: a timeout, each also announced as transport.rto.
    assert sum(e[3] == 0.0 for e in losses) == row["fast_retransmits"] > 0
    assert sum(e[3] == 1.0 for e in losses) == row["timeouts"] == len(rtos) > 0
    assert all(e[3] >= 1.0 for e in rtos)  # RFC 6298's 1 s minimum, backed off
    assert sim.take_events() == []  # taken once


# ----------------------------------------------------------------------------------------------
# Transport rules of the scenario

ONE_HOP = {
    "radio": {"tx_range_m": 250.0},
    "topology": {"kind": "chain", "count": 2, "spacing_m": 200.0},
}


@pytest.mark.parametrize(
    "flow, field",
    [
        ({"transport": "tcp", "cc": "cubic"}, "flows[0].cc"),
        ({"cc": "reno"}, "flows[0].cc"),
        ({"transport": "tfrc", "sack": True}, "flows[0].sack"),
        ({"size_bytes": 1000}, "flows[0].size_bytes"),
        ({"transport": "tcp", "rate_bps": 1e6}, "flows[0].rate_bps"),
        ({"transport": "tcp", "cc": "paced"}, "flows[0].rate_bps"),
        ({"transport": "tcp", "tcp": {"rcv_buf_bytes": 100_000}}, "flows[0].tcp.rcv_buf_bytes"),
        ({"transport": "tcp", "tcp": {"delack_timeout_s": 0.6}}, "flows[0].tcp.delack_timeout_s"),
        ({"transport": "sctp"}, "flows[0].transport"),
        ({"transport": "tcp", "payload_bytes": 2268}, "flows[0].payload_bytes"),
    ],
    ids=[
        "unknown_cc", "cc_on_udp", "sack_on_tfrc", "size_on_udp", "rate_on_newreno",
        "paced_without_rate", "big_buffer_without_window_scale", "delack_over_rfc1122",
        "unknown_transport", "mss_over_the_tcp_limit",
    ],
)
def test_transport_rules_raise_scenario_error_naming_the_field(flow, field):
    scenario = {**ONE_HOP, "flows": [{"src": 0, "dst": 1, **flow}]}
    with pytest.raises(xlayer.ScenarioError) as info:
        xlayer.Simulation(scenario)
    assert field in str(info.value), str(info.value)


def test_transport_rules_apply_to_random_flows():
    scenario = {**ONE_HOP, "flows_random": {"count": 1, "cc": "reno"}}
    with pytest.raises(xlayer.ScenarioError) as info:
        xlayer.Simulation(scenario)
    assert "flows_random.cc" in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "flow",
    [
        {"transport": "tcp", "tcp": {"rcv_buf_bytes": 100_000, "window_scale": True}},
        {"transport": "tcp", "cc": "paced", "rate_bps": 1e6},
        {"transport": "tcp", "cc": "westwood", "sack": True, "size_bytes": 1},
        {"transport": "tfrc", "rate_bps": 1e6},
        {"transport": "tfrc-ecn"},
    ],
    ids=["window_scale", "paced", "westwood_sack", "tfrc_capped", "tfrc_ecn"],
)
def test_valid_transport_settings_are_accepted(flow):
    sim = xlayer.Simulation({**ONE_HOP, "flows": [{"src": 0, "dst": 1, **flow}]})
    assert sim.scenario["flows"][0]["transport"] == flow["transport"]


def test_tcp_flows_get_newreno_filled_in():
    sim = xlayer.Simulation({**ONE_HOP, "flows": [{"src": 0, "dst": 1, "transport": "tcp"}]})
    assert sim.scenario["flows"][0]["cc"] == "newreno"


# ----------------------------------------------------------------------------------------------
# TFRC


def test_lone_tfrc_flow_gets_about_what_a_saturating_udp_flow_gets():
    # On one hop both are limited by the same MAC; TFRC's equation may leave some capacity
    # unused, but not half of it, and it cannot exceed what the MAC carries.
    base = chain(1, {}, duration_s=6.0, warmup_s=2.0)
    udp = copy.deepcopy(base)
    udp["flows"][0].update(transport="udp", rate_bps="saturate")
    tfrc = copy.deepcopy(base)
    tfrc["flows"][0].update(transport="tfrc", rate_bps="saturate")
    udp_bps = float(flow_row(xlayer.run(udp))["throughput_bps"])
    tfrc_result = xlayer.run(tfrc)
    tfrc_bps = float(flow_row(tfrc_result)["throughput_bps"])
    assert flow_row(tfrc_result)["transport"] == "tfrc"
    assert udp_bps / 2 <= tfrc_bps <= udp_bps * 2, (tfrc_bps, udp_bps)


def test_tfrc_rate_cap_limits_the_flow():
    cap = 300e3
    result = xlayer.run(chain(1, {"transport": "tfrc", "rate_bps": cap}, duration_s=6.0,
                              warmup_s=2.0))
    # One hop at 11 Mbit/s carries far more: the flow gets its cap, and never more.
    assert 0.75 * cap <= flow_row(result)["throughput_bps"] <= cap * 1.05
