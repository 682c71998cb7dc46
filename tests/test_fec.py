"""Per-flow FEC from Python (`flows[].code_rate`, `mac.flow_code_rate.<flow>`): field errors name
the field, numbers and names are one setting, and the tuning layer lists and sets it. The codes'
behaviour is tested in `crates/xlayer-core/tests/fec.rs`."""

from __future__ import annotations

import pytest

import xlayer

HOP_A = {
    "duration_s": 1.0,
    "radio": {"standard": "802.11a", "frequency_mhz": 5400.0, "propagation": "free_space"},
    "topology": {"kind": "chain", "count": 2, "spacing_m": 30.0},
}


def scenario(radio=None, **flow):
    s = {**HOP_A, "flows": [{"src": 0, "dst": 1, "rate_bps": "saturate", **flow}]}
    if radio:
        s["radio"] = {**s["radio"], **radio}
    return s


@pytest.mark.parametrize("value", ["3/4", "0.4", 0.4, "half", 2])
def test_a_code_rate_outside_the_four_is_refused_by_name(value):
    with pytest.raises(xlayer.ScenarioError) as info:
        xlayer.Simulation(scenario(code_rate=value))
    assert "flows[0].code_rate" in str(info.value)
    assert "1/3" in str(info.value)


def test_code_rates_are_802_11a_only():
    s = scenario(code_rate="1/2")
    s["radio"] = {"standard": "802.11b"}
    with pytest.raises(xlayer.ScenarioError, match=r"flows\[0\]\.code_rate.*802\.11a"):
        xlayer.Simulation(s)


def test_a_number_and_its_name_are_the_same_code_rate():
    by_number = xlayer.run(scenario(code_rate=0.5))
    by_name = xlayer.run(scenario(code_rate="1/2"))
    assert by_number.scenario["flows"][0]["code_rate"] == "1/2"
    assert by_number.flows["throughput_bps"].iloc[0] == by_name.flows["throughput_bps"].iloc[0]


def test_the_code_rate_is_a_tunable_of_each_flow_at_each_node():
    assert any(t["name"] == "mac.flow_code_rate.<flow>" for t in xlayer.tunables())
    sim = xlayer.Simulation(scenario())
    assert sim.get_param(0, "mac.flow_code_rate.0") == 0.5
    sim.set_param(0, "mac.flow_code_rate.0", 1 / 3)
    assert sim.get_param(0, "mac.flow_code_rate.0") == pytest.approx(1 / 3)
    with pytest.raises(xlayer.TuningError, match="1/3, 1/2, 2/3 and 1"):
        sim.set_param(0, "mac.flow_code_rate.0", 0.9)
    slow = sim.run().flows["throughput_bps"].iloc[0]
    fast = xlayer.run(scenario(code_rate="1")).flows["throughput_bps"].iloc[0]
    assert fast > 2 * slow  # 12 Mbit/s against 4 on a clean hop
