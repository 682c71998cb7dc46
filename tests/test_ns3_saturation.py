"""xlayer against ns-3 3.44 and Bianchi's model on 802.11b DCF saturation, n = 1 ... 50.

n saturated senders on a 10 m circle around one receiver, 1500-byte UDP payloads, data at
11 Mbit/s, ACKs at 1 Mbit/s (``validation/ns3/compare_saturation.py`` builds the scenario for
both simulators). The ns-3 numbers are ns-3's own output for ``validation/ns3/saturation.cc``,
three RngRun values per n, saved in ``validation/ns3/reference/saturation.json``;
``python validation/ns3/compare_saturation.py --save-reference`` rebuilds and reruns ns-3 to
regenerate it.

xlayer is held to ns-3 in both of its PHY set-ups. Without ns-3's preamble detection model its
receiver works like xlayer's default: it locks onto the first frame above its sensitivity, so a
collision is a frame received in error and the bystanders defer EIFS. With ns-3's default
``ThresholdPreambleDetectionModel`` two equally strong frames are never detected (0 dB < 4 dB),
the bystanders defer only DIFS, and ns-3's throughput is higher as collisions become frequent;
xlayer with ``radio.preamble_detection = true`` (the same 4 dB and -82 dBm) is held to that.
Both ns-3 set-ups are also checked against Bianchi's model with the matching collision time.
"""
from __future__ import annotations

import importlib.util
import json
import statistics

import pytest

from conftest import REPO

NS3_DIR = REPO / "validation" / "ns3"
REF = json.loads((NS3_DIR / "reference" / "saturation.json").read_text())
_spec = importlib.util.spec_from_file_location("compare_saturation", NS3_DIR / "compare_saturation.py")
cs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cs)

NS = sorted(int(n) for n in REF["n"])

#: |xlayer / ns-3 - 1| allowed. ns-3's own runs (10 s measured, three RngRun values) spread by
#: up to 2.0 % of their mean (max - min, n = 40; about 1 % standard deviation), so the mean of
#: three is good to about 0.6 %; xlayer's seeds differ by 0.2-0.7 % (standard deviation, n = 2,
#: 10, 50). 3 % is over three standard deviations of the difference, and well below the 10 % of
#: shared/VALIDATION.md.
TOLERANCE = 0.03
#: The largest max - min spread of ns-3's runs the reference may have (checks a regeneration).
MAX_NS3_SPREAD = 0.025


def ns3_mean(n: int, setup: str) -> float:
    return statistics.fmean(r["aggregate_throughput_bps"] for r in REF["n"][str(n)][setup])


def test_reference_runs_are_the_scenario_and_agree_with_each_other():
    assert NS == [1, 2, 5, 10, 15, 20, 30, 40, 50]
    for n in NS:
        for setup in ("pd_off", "pd_on"):
            runs = REF["n"][str(n)][setup]
            assert len(runs) >= 3
            for r in runs:
                assert (r["data_mode"], r["ack_mode"], r["preamble"]) == (
                    "DsssRate11Mbps", "DsssRate1Mbps", "long")
            bps = [r["aggregate_throughput_bps"] for r in runs]
            assert (max(bps) - min(bps)) / statistics.fmean(bps) < MAX_NS3_SPREAD, (n, setup, bps)


def test_collisions_end_in_a_frame_error_only_without_preamble_detection():
    # At node 0 every failed attempt is a collision. Without preamble detection node 0 locks onto
    # one of the frames and loses it (rx_error, then EIFS); with it, no preamble is detected.
    for n in NS[1:]:
        for r in REF["n"][str(n)]["pd_off"]:
            assert r["rx_error"] > 0
        for r in REF["n"][str(n)]["pd_on"]:
            assert r["rx_error"] == 0
            assert r["rx_drops"].get("PREAMBLE_DETECT_FAILURE", 0) > 0


@pytest.mark.parametrize("n", [1, 2, 5, 10, 15, 20, 30, 40, 50])
def test_saturation_throughput_agrees_with_ns3(n):
    ours = cs.run_xlayer(n)["aggregate_throughput_bps"]
    theirs = ns3_mean(n, "pd_off")
    assert abs(ours / theirs - 1) < TOLERANCE, f"n={n}: xlayer {ours:.0f}, ns-3 {theirs:.0f} bit/s"


@pytest.mark.parametrize("n", [1, 2, 5, 10, 15, 20, 30, 40, 50])
def test_saturation_throughput_with_preamble_detection_agrees_with_ns3(n):
    ours = cs.run_xlayer(n, preamble_detection=True)["aggregate_throughput_bps"]
    theirs = ns3_mean(n, "pd_on")
    assert abs(ours / theirs - 1) < TOLERANCE, f"n={n}: xlayer {ours:.0f}, ns-3 {theirs:.0f} bit/s"


def test_preamble_detection_raises_xlayers_throughput_as_it_does_ns3s():
    # The option's effect, not only its end point: at n = 30 ns-3 gains 5 % from preamble
    # detection (bystanders defer DIFS instead of EIFS after a collision); xlayer's gain is within
    # half of that of ns-3's (seed noise is under 1 %).
    n = 30
    ns3_gain = ns3_mean(n, "pd_on") / ns3_mean(n, "pd_off") - 1
    ours = cs.run_xlayer(n, preamble_detection=True)["aggregate_throughput_bps"]
    base = cs.run_xlayer(n)["aggregate_throughput_bps"]
    assert ns3_gain > 0.03
    assert abs((ours / base - 1) - ns3_gain) < ns3_gain / 2, (ours / base - 1, ns3_gain)


def test_ns3_agrees_with_bianchi_under_each_collision_rule():
    # Bianchi's model (IEEE JSAC 2000) within 5 % (shared/VALIDATION.md) of ns-3 for every n:
    # Tc = DATA + EIFS without preamble detection, Tc = DATA + DIFS with it.
    for n in NS:
        assert abs(ns3_mean(n, "pd_off") / cs.bianchi(n, collision_ifs="eifs") - 1) < 0.05, n
        assert abs(ns3_mean(n, "pd_on") / cs.bianchi(n, collision_ifs="difs") - 1) < 0.05, n


def test_preamble_detection_raises_ns3_throughput_more_as_n_grows():
    gain = [ns3_mean(n, "pd_on") / ns3_mean(n, "pd_off") for n in (1, 10, 50)]
    assert gain[0] == pytest.approx(1.0, abs=0.005)  # one sender: no collisions
    assert 1.0 < gain[1] < gain[2]
