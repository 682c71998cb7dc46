"""Routing protocols, ETX and per-destination queues seen from Python: the scenario fields, the
control-traffic node columns, the network tuning parameters and events, and field-named errors.
(The behaviours themselves are checked against offline computations in
``crates/xlayer-core/tests/routing.rs``.)"""

from __future__ import annotations

import math

import pytest

import xlayer

#: A diamond (0 and 3 out of range, relays 1 and 2), 2 -> 3 lossy, DSDV-ETX with K = 2 and
#: per-destination queues, a saturated flow 0 -> 3 from 15 s.
DIAMOND = {
    "name": "diamond",
    "duration_s": 25.0,
    "warmup_s": 15.0,
    "radio": {"data_rate_mbps": 2.0, "tx_range_m": 250.0, "cs_range_m": 550.0},
    "net": {
        "routing": "dsdv",
        "queueing": "per_destination",
        "dsdv": {"update_interval_s": 5.0, "k_next_hops": 2},
    },
    "topology": {
        "kind": "explicit",
        "positions": [[0.0, 0.0], [200.0, 100.0], [200.0, -100.0], [400.0, 0.0]],
    },
    "link_loss": {"links": [{"from": 2, "to": 3, "loss": 0.3, "symmetric": False}]},
    "flows": [{"src": 0, "dst": 3, "start_s": 15.0}],
}


def test_dsdv_run_reports_control_traffic_and_delivers():
    sim = xlayer.Simulation(DIAMOND)
    # validation fills the protocol defaults in the scenario as run
    assert sim.scenario["net"]["etx"]["window_s"] == 10.0
    assert sim.scenario["net"]["dest_queue_packets"] == 3
    result = sim.run()
    nodes = result.nodes
    for column in ("ctrl_tx", "ctrl_rx", "ctrl_airtime_s", "rx_link_lost", "drops_dest_queue"):
        assert column in nodes.columns
    assert (nodes["ctrl_tx"] > 0).all() and (nodes["ctrl_airtime_s"] > 0).all()
    assert nodes.loc[3, "rx_link_lost"] > 0
    assert result.flows.loc[0, "throughput_bps"] > 0


def test_incremental_dsdv_updates_are_a_scenario_field_and_carry_fewer_bytes():
    # A 4 x 4 grid (two-ray ground: reception 250 m, carrier sense 550 m at 200 m spacing)
    # with lossy links: triggered updates happen, and incremental ones leave out the routes
    # that did not change.
    grid = {
        "name": "grid",
        "duration_s": 60.0,
        "radio": {"data_rate_mbps": 2.0, "tx_range_m": 250.0, "cs_range_m": 550.0},
        "net": {"routing": "dsdv", "dsdv": {"update_interval_s": 5.0}},
        "topology": {"kind": "grid", "rows": 4, "cols": 4, "spacing_m": 200.0},
        "link_loss": {"random": {"max": 0.4, "seed": 3}},
    }
    full = xlayer.Simulation(grid)
    assert full.scenario["net"]["dsdv"].get("triggered_updates", "full") == "full"
    incremental = {**grid, "net": {"routing": "dsdv",
                                    "dsdv": {"update_interval_s": 5.0,
                                             "triggered_updates": "incremental"}}}
    inc = xlayer.Simulation(incremental)
    assert inc.scenario["net"]["dsdv"]["triggered_updates"] == "incremental"
    full_bytes = full.run().summary["ctrl_tx_bytes"]
    inc_bytes = inc.run().summary["ctrl_tx_bytes"]
    assert 0 < inc_bytes < full_bytes


def test_network_tuning_parameters_and_events():
    sim = xlayer.Simulation(DIAMOND)
    sim.subscribe("net.route_change")
    sim.subscribe("net.queue_change")
    sim.run_until(20.0)
    assert sim.get_param(0, "net.etx.1") == pytest.approx(1.0, abs=0.2)
    assert math.isinf(sim.get_param(0, "net.etx.3"))  # not a neighbour
    assert sim.get_param(0, "net.next_hop.3") == 1.0
    assert sim.get_param(0, "net.next_hop_count.3") == 2.0
    assert 0 <= sim.get_param(0, "net.dest_queue_len.3") <= 3
    kinds = {event[2] for event in sim.take_events()}
    assert kinds == {"net.route_change", "net.queue_change"}


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"net": {"routing": "ospf"}}, "net.routing"),
        ({"net": {"dsdv": {"k_next_hops": 2}}}, "net.dsdv"),
        (
            {"net": {"routing": "dsdv", "dsdv": {"triggered_updates": "partial"}}},
            "net.dsdv.triggered_updates",
        ),
        (
            {"net": {"queueing": "per_destination", "dest_queue_packets": 0}},
            "net.dest_queue_packets",
        ),
        ({"link_loss": {"random": {"max": 1.5}}}, "link_loss.random.max"),
        ({"events": [{"at_s": 1.0, "kind": "node_off"}]}, "events[0].node"),
    ],
)
def test_routing_fields_are_validated_with_the_field_named(patch, field):
    scenario = {"topology": {"kind": "chain", "count": 3, "spacing_m": 200.0}, **patch}
    with pytest.raises(xlayer.ScenarioError) as e:
        xlayer.Simulation(scenario)
    assert str(e.value).startswith(field), str(e.value)
