"""The flavor-aware link layer's experiments (seed document 003 §V; `[stack.flavor_link]`):
802.11a's default link setting (1/2, 4) for every flow against the document's per-flavor table
applied at the access point by the detector and optimizer. The claims that do not hold in
xlayer's model are kept as strict expected failures, so that they show in every run and the
day they hold the suite says so; the README gives the measured figures and the reasons
(`python validation/flavor_link_gain.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import xlayer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "validation"))
from flavor_link_gain import attempts, ftp_rate  # noqa: E402

SCENARIOS = ROOT / "scenarios"
ON = "stack.flavor_link.optimize=true"

pytestmark = pytest.mark.slow


def pair(name: str, seed: int, overrides=()):
    path = SCENARIOS / name
    off = xlayer.run(path, seed=seed, overrides=list(overrides))
    on = xlayer.run(path, seed=seed, overrides=list(overrides) + [ON])
    return off, on


def test_the_access_point_detects_the_downloads_and_applies_its_table():
    _, on = pair("flavor-ap-1.toml", 1)
    detected = on.flows["flavor_detected"].tolist()
    assert detected.count("") == 0, detected
    # The optimizer ran at the access point (node 0) and is still active.
    assert on.optimizers["node"].tolist() == [0]
    assert on.optimizers["status"].tolist() == ["active"]


def test_the_table_means_fewer_link_attempts_per_packet():
    # Fig. 4's direction (the document: up to 46 % fewer); measured 7-11 % fewer here.
    for seed in (1, 2):
        off, on = pair("flavor-ap-1.toml", seed)
        assert attempts(on) < attempts(off), seed


@pytest.mark.xfail(strict=True, reason="the document's scenario 1 gains about 11 %; xlayer "
                   "measures 13-44 % less (README: over per-packet Rayleigh fading a stronger "
                   "code saves little loss and costs airtime on the shared downlink)")
def test_scenario_1_the_table_raises_the_aggregate_about_ten_percent():
    for seed in (1, 2):
        off, on = pair("flavor-ap-1.toml", seed)
        assert ftp_rate(on) > 1.05 * ftp_rate(off), seed


@pytest.mark.xfail(strict=True, reason="the document's Fig. 3 gains 9-50 %, growing with "
                   "distance; xlayer measures 12-20 % less at every distance (README)")
def test_fig_3_the_gain_is_positive_and_grows_with_distance():
    gains = {}
    for d in (300, 500):
        off, on = pair("flavor-ap-2.toml", 1, [f"topology.distance_m={d}"])
        gains[d] = ftp_rate(on) / ftp_rate(off) - 1
    assert gains[300] > 0 and gains[500] > gains[300], gains
