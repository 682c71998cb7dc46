"""The optimum oracle (xlayer.optimum) against the simulator it models.

**The conflict rule on pairs of links.** ``xlayer_core::oracle`` calls two links conflicting
when (1) they share a node, (2) their senders carrier-sense each other, or (3) with both on the
air a frame of either exchange (DATA at a receiver, ACK at a sender) succeeds with less than
1 % probability. Each case below places two links, runs the simulator with both saturated and
with each alone (802.11b at 2 Mbit/s, two-ray ground, 250 m reception, the BER error model),
and checks the oracle's verdict against what the pair does:

- a conflicting pair cannot both run near capacity together, and its two links' rates,
  each over its capacity in the model, add up to at most 1 (the time-sharing bound holds) —
  within 5 % for senders that only carrier-sense each other: DCF lets them start together
  when their backoffs end in the same slot, and where each receiver is far enough from the
  other sender both frames get through (two such senders carried 3.5 % more than time
  sharing allows: the oracle's bound, not the simulator, is off by that much there);
- a pair the oracle calls free runs both links near capacity (each at least 90 % of what it
  carries alone), except where the rule is knowingly optimistic:

  * **preamble locking**: a receiver within reception range of the other sender locks onto
    that sender's frame whenever it starts first and misses its own sender's, so DCF, which
    does not synchronise the two senders, loses many of its frames; the oracle's schedule is
    the ideal, synchronised one, in which both frames start together and both survive (the
    SINR is 8 dB);
  * **the BER model's edge**: a frame 1 dB above the noise-plus-interference succeeds about
    three times in four; calling that a conflict would be beaten (together the two links
    carry more than time sharing allows, checked below), so the oracle gives both their whole
    capacity, more than they get.

Neither exception lets a run beat the optimum: the oracle is optimistic there, never
pessimistic. **No run above the optimum**: every shipped scenario (wired ones excepted, which
the oracle refuses) is run under its own stack and held against the bound for its routing.
"""

from __future__ import annotations

import functools
import glob
import math
from pathlib import Path

import pytest

pytest.importorskip("cvxpy")

import xlayer
from xlayer import optimum as xo
from xlayer.errors import XlayerError
from xlayer.scenario import load_scenario, load_toml_file

#: "Near capacity": each link carries at least this fraction of what it carries alone.
NEAR = 0.9


def _pair(positions, links, cs_range_m):
    """A scenario of the nodes at ``positions`` with a saturated 1000-byte UDP flow over each
    of ``links`` (one hop each)."""
    return {
        "duration_s": 6.0, "warmup_s": 1.0,
        "radio": {"standard": "802.11b", "data_rate_mbps": 2.0, "basic_rate_mbps": 1.0,
                  "propagation": "two_ray_ground", "tx_range_m": 250.0,
                  "cs_range_m": cs_range_m},
        "topology": {"kind": "explicit", "positions": [list(p) for p in positions]},
        "flows": [{"src": a, "dst": b, "rate_bps": "saturate", "payload_bytes": 1000}
                  for a, b in links],
    }


#: How far two senders that only carrier-sense each other may exceed time sharing (module doc).
CARRIER_SENSE_SLACK = 0.05

# (case, positions, the two links, carrier-sense range, the rule that makes them conflict or
# None, both near capacity together)
CASES = [
    ("common receiver, senders hidden", [(0, 0), (200, 0), (400, 0)], [(0, 1), (2, 1)], 250.0,
     "node", False),
    ("common sender", [(0, 0), (200, 0), (400, 0)], [(1, 0), (1, 2)], 550.0, "node", False),
    ("senders in carrier-sense range", [(0, 0), (200, 0), (600, 0), (800, 0)],
     [(1, 0), (2, 3)], 550.0, "carrier sense", False),
    ("hidden sender drowns a receiver", [(0, 0), (200, 0), (350, 0), (550, 0)],
     [(0, 1), (2, 3)], 250.0, "loss", False),
    ("far apart", [(0, 0), (200, 0), (3000, 0), (3200, 0)], [(0, 1), (2, 3)], 550.0,
     None, True),
    ("beyond carrier sense, 12 dB of SINR", [(0, 0), (200, 0), (600, 0), (800, 0)],
     [(0, 1), (2, 3)], 550.0, None, True),
    # the two knowingly optimistic verdicts (module doc)
    ("preamble locking", [(0, 0), (150, 0), (390, 0), (540, 0)], [(0, 1), (2, 3)], 250.0,
     None, False),
    ("the BER model's edge", [(0, 0), (240, 0), (495, 0), (735, 0)], [(0, 1), (2, 3)], 250.0,
     None, False),
]


def _throughputs(scenario):
    return xlayer.run(scenario).flows.set_index("flow")["throughput_bps"]


@functools.lru_cache(maxsize=None)
def _measure(case: int) -> dict:
    """Case ``case`` of :data:`CASES` run both together and each link alone, with the model."""
    name, positions, links, cs, rule, near = CASES[case]
    both = _pair(positions, links, cs)
    together = _throughputs(both)
    alone = [float(_throughputs(_pair(positions, [link], cs))[0]) for link in links]
    m = xo.model(both)
    index = {(a, b): k for k, (a, b) in enumerate(zip(m["links"]["from"], m["links"]["to"]))}
    ks = [index[link] for link in links]
    # each link's capacity in the model, payload bit/s (one packet size here)
    bound = [m["links"]["capacity_pps"][k][0] * 8000.0 for k in ks]
    conflicting = tuple(sorted(ks)) in {tuple(sorted(c)) for c in m["conflicts"]}
    return {"name": name, "rule": rule, "expected_near": near,
            "together": [float(together[0]), float(together[1])], "alone": alone,
            "bound": bound, "conflicting": conflicting}


@pytest.fixture(params=range(len(CASES)), ids=[c[0] for c in CASES])
def pair(request):
    return _measure(request.param)


def test_the_oracle_calls_the_pair_as_the_rule_says(pair):
    assert pair["conflicting"] == (pair["rule"] is not None)


def test_the_simulator_runs_both_near_capacity_exactly_where_expected(pair):
    ratios = [t / a for t, a in zip(pair["together"], pair["alone"])]
    assert (min(ratios) >= NEAR) == pair["expected_near"], ratios


def test_no_link_of_a_pair_beats_its_capacity_and_conflicting_links_share_time(pair):
    shares = [t / b for t, b in zip(pair["together"], pair["bound"])]
    for alone, b in zip(pair["alone"], pair["bound"]):
        assert alone <= b * (1 + xo.FRACTION_TOLERANCE)
    assert max(shares) <= 1 + xo.FRACTION_TOLERANCE
    if pair["conflicting"]:
        slack = CARRIER_SENSE_SLACK if pair["rule"] == "carrier sense" else xo.FRACTION_TOLERANCE
        assert sum(shares) <= 1 + slack, shares


def test_a_conflict_at_the_ber_models_edge_would_be_beaten():
    # Why rule 3 asks for all-but-certain loss, not the rate's SINR threshold: at 1 dB the
    # frame is below 2 Mbit/s DQPSK's threshold (1.5 dB, 8 % frame error) yet most frames get
    # through, so the pair carries more than time sharing would allow.
    pair = _measure([c[0] for c in CASES].index("the BER model's edge"))
    shares = [t / b for t, b in zip(pair["together"], pair["bound"])]
    assert sum(shares) > 1.3, shares


# ----------------------------------------------------------------------------------------------
# No run above the optimum


def _shipped():
    """The shipped scenario files (not the sweep files, which name a ``scenario``)."""
    paths = sorted(glob.glob(str(Path(__file__).parent.parent / "scenarios" / "*.toml")))
    return [p for p in paths if "scenario" not in load_toml_file(Path(p))]


#: Scenarios whose run or oracle takes more than a few seconds here (108 and 200 nodes, 7x7
#: meshes, 40 random nodes, 42- and 25-node grids under free multi-path routing): left to
#: ``validation/oracle_shipped.py``, which holds every shipped scenario to the same bound (the
#: suite's time budget does not cover them).
#: more-testbed (46 nodes, 32 MORE flows, held to the multi-path bound) is there because its
#: multi-path bounds do not close within minutes (README, Optimum oracle), which
#: validation/oracle_shipped.py reports as ranges. dpclo-fig6 and dpclo-fig8 are the 108-node
#: topology of dpclo-fig9 (minutes of simulation); dpclo-fig6's optimum alone is tested in
#: tests/test_oracle.py.
#: diffq-testbed is more-testbed's 46-node network with OLSR routes (its oracle ran for over ten
#: minutes here before it was left out).
LONG = {"dpclo-fig9", "random-200", "mesh-7x7", "mesh-7x7-tcp", "diffq-ablation", "dclo-dense",
        "lossy-dsdv", "more-testbed", "dpclo-fig6", "dpclo-fig8", "diffq-testbed"}


def _params():
    for path in _shipped():
        stem = Path(path).stem
        if stem not in LONG:
            yield pytest.param(path, id=stem)


@pytest.mark.parametrize("path", list(_params()))
def test_no_shipped_scenario_runs_above_the_optimum(path, tmp_path):
    try:
        m = xo.model(path)
    except XlayerError as e:
        assert "radio links only" in str(e)  # the oracle refuses wired links, and says so
        pytest.skip(str(e))
    out = tmp_path / "run"
    xlayer.run(path, out=out)
    o = xo.oracle(out)
    s = o.summary
    assert s["routing"] == xo.run_routing(load_scenario(path))
    assert s["fraction_aggregate"] <= 1 + xo.FRACTION_TOLERANCE, s
    assert s["fraction_utility"] <= 1 + xo.FRACTION_TOLERANCE, s
    assert math.isfinite(s["fraction_utility"]) and s["fraction_aggregate"] >= 0
    assert len(o.flows) == len(m["flows"])
