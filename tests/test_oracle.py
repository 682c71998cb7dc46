"""The optimum oracle (xlayer.optimum, xlayer.oracle) against closed forms, brute force, and the simulator.

References: the 802.11b DSSS timing of 802.11-2016 §16 (long PLCP 192 µs, slot 20 µs, SIFS
10 µs, CWmin 31) for a link's capacity; the all-conflicting chain (each link 1/n of the
airtime); Li, Blake, De Couto, Lee, Morris, "Capacity of ad hoc wireless networks" (MobiCom
2001) for the chain under two-hop interference (a third of one hop); and brute-force
enumeration of every independent set of small conflict graphs.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest

pytest.importorskip("cvxpy")

import xlayer
from xlayer import optimum as xo
from xlayer.errors import ScenarioError

# One attempt of a 1000-byte UDP payload at 2 Mbit/s (802.11b DSSS, long preamble), in µs:
# DIFS = SIFS + 2 slots, mean backoff CWmin/2 slots, DATA = PLCP + (28 MAC + 8 LLC/SNAP + 20 IP
# + 8 UDP + 1000) bytes at 2 Mbit/s, SIFS, ACK = PLCP + 14 bytes at 1 Mbit/s.
ATTEMPT_US = (10 + 2 * 20) + 31 / 2 * 20 + (192 + (28 + 8 + 20 + 8 + 1000) * 8 / 2) + 10 + (
    192 + 14 * 8 / 1)
HOP_BPS = 1000 * 8 / (ATTEMPT_US * 1e-6)  # one lossless hop's capacity in payload bit/s


def chain(count: int, cs_range_m: float = 550.0, flows=None) -> dict:
    return {
        "duration_s": 3.0,
        "radio": {"standard": "802.11b", "data_rate_mbps": 2.0, "basic_rate_mbps": 1.0,
                  "propagation": "two_ray_ground", "tx_range_m": 250.0,
                  "cs_range_m": cs_range_m},
        "topology": {"kind": "chain", "count": count, "spacing_m": 200.0},
        "flows": flows or [{"src": 0, "dst": count - 1, "rate_bps": "saturate",
                            "payload_bytes": 1000}],
    }


def test_a_lossless_hop_carries_what_the_802_11_timing_allows():
    o = xo.oracle(chain(2))
    assert o.flows["rate_bps"][0] == pytest.approx(HOP_BPS, rel=1e-6)


@pytest.mark.parametrize("hops", [2, 3, 4])
def test_a_chain_whose_links_all_conflict_gives_each_one_nth_of_the_airtime(hops):
    # carrier sense reaches the whole chain: every pair of links conflicts
    o = xo.oracle(chain(hops + 1, cs_range_m=2000.0))
    assert o.summary["conflicts"] == hops * (hops - 1) // 2
    for obj in xo.OBJECTIVES:
        r = xo.oracle(chain(hops + 1, cs_range_m=2000.0), objective=obj)
        assert r.flows["rate_bps"][0] == pytest.approx(HOP_BPS / hops, rel=1e-5)


@pytest.mark.parametrize("hops", [3, 5, 8])
def test_a_long_chain_under_two_hop_interference_carries_a_third_of_one_hop(hops):
    # 200 m spacing, 550 m carrier sense: senders 400 m apart defer, 600 m apart do not, and a
    # receiver 400 m from the other sender keeps an SINR of 2^4 = 12 dB (two-ray ground).
    o = xo.oracle(chain(hops + 1))
    m = xo.model(chain(hops + 1))
    route = m["flows"][0]["route"]
    pairs = {tuple(sorted(p)) for p in m["conflicts"]}
    for i, j in itertools.combinations(range(hops), 2):
        assert (tuple(sorted((route[i], route[j]))) in pairs) == (j - i <= 2), (i, j)
    assert o.flows["rate_bps"][0] == pytest.approx(HOP_BPS / 3, rel=1e-5)


def test_two_independent_links_both_run_at_capacity():
    sc = chain(2)
    sc["topology"] = {"kind": "explicit", "positions": [[0, 0], [200, 0], [5000, 0], [5200, 0]]}
    sc["flows"] = [{"src": 0, "dst": 1, "rate_bps": "saturate", "payload_bytes": 1000},
                   {"src": 2, "dst": 3, "rate_bps": "saturate", "payload_bytes": 1000}]
    for obj in xo.OBJECTIVES:
        o = xo.oracle(sc, objective=obj)
        assert list(o.flows["rate_bps"]) == pytest.approx([HOP_BPS, HOP_BPS], rel=1e-5)
        assert o.summary["aggregate_bps"] == pytest.approx(2 * HOP_BPS, rel=1e-5)


def _independent_sets(n, conflicts):
    bad = {frozenset(c) for c in conflicts}
    out = []
    for r in range(1, n + 1):
        for s in itertools.combinations(range(n), r):
            if all(frozenset(p) not in bad for p in itertools.combinations(s, 2)):
                out.append(s)
    return out


def _random_model(rng):
    """A random network: nodes, directed links with random capacities, random conflicts
    (always between links sharing a node), flows routed over the links."""
    nodes = rng.randint(4, 6)
    edges = [e for a in range(nodes - 1) for e in ((a, a + 1), (a + 1, a))]  # every flow routes
    edges += [(a, b) for a in range(nodes) for b in range(nodes)
              if abs(a - b) > 1 and rng.random() < 0.3]
    edges = edges[:12]
    n = len(edges)
    conflicts = []
    for i, j in itertools.combinations(range(n), 2):
        if set(edges[i]) & set(edges[j]) or rng.random() < 0.3:
            conflicts.append((i, j))
    index = {e: k for k, e in enumerate(edges)}
    flows = []
    for f in range(rng.randint(1, 3)):
        src, dst = rng.sample(range(nodes), 2)
        step = 1 if dst > src else -1
        route = [index[(a, a + step)] for a in range(src, dst, step)]
        flows.append({"flow": f, "src": src, "dst": dst, "payload_bits": 8000.0, "size": 0,
                      "route": route})
    return {
        "nodes": nodes, "packet_bytes": [1028],
        "links": {"from": [e[0] for e in edges], "to": [e[1] for e in edges],
                  "rate_bps": [2e6] * n, "rx_dbm": [-70.0] * n, "success": [1.0] * n,
                  "attempt_s": [[0.005]] * n,
                  "capacity_pps": [[rng.uniform(50.0, 300.0)] for _ in range(n)]},
        "conflicts": conflicts, "flows": flows,
    }


@pytest.mark.parametrize("seed", range(8))
def test_column_generation_equals_brute_force_over_all_independent_sets(seed):
    rng = random.Random(seed)
    m = _random_model(rng)
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    for routing in xo.ROUTINGS:
        for obj in xo.OBJECTIVES:
            gen = xo.solve(m, obj, routing)
            brute = xo.solve(m, obj, routing, columns=everything)
            key = "utility" if obj == "proportional" else (
                "aggregate_bps" if obj == "aggregate" else "min_rate_bps")
            assert gen.summary[key] == pytest.approx(brute.summary[key], rel=1e-4), (routing, obj)


def test_multipath_never_carries_less_than_the_static_route():
    sc = chain(4)
    sc["topology"] = {"kind": "grid", "rows": 2, "cols": 3, "spacing_m": 200.0}
    sc["flows"] = [{"src": 0, "dst": 5, "rate_bps": "saturate", "payload_bytes": 1000},
                   {"src": 3, "dst": 2, "rate_bps": "saturate", "payload_bytes": 1000}]
    m = xo.model(sc)
    static = xo.solve(m, "aggregate", "static").summary["aggregate_bps"]
    multi = xo.solve(m, "aggregate", "multipath").summary["aggregate_bps"]
    assert multi >= static * (1 - 1e-6)


@pytest.mark.parametrize("scenario,stack", [
    ("scenarios/chain.toml", "udp-dcf"),
    ("scenarios/dpclo-fig5a.toml", "dpclo-zmacplus"),
])
def test_no_run_beats_the_optimum(tmp_path, scenario, stack):
    out = tmp_path / "run"
    xlayer.run(scenario, out=out, overrides=["duration_s=6", "warmup_s=1", f"stack.preset={stack}"])
    o = xo.oracle(out)
    assert 0 < o.summary["fraction_utility"] <= 1 + xo.FRACTION_TOLERANCE
    assert 0 < o.summary["fraction_aggregate"] <= 1 + xo.FRACTION_TOLERANCE


def test_bad_objective_names_the_field():
    with pytest.raises(ScenarioError, match="^objective: 'best'"):
        xo.oracle(chain(3), objective="best")


def test_cli_prints_the_optimum_as_json(capsys):
    from xlayer.cli import main

    assert main(["oracle", "scenarios/chain.toml", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got) >= {"utility", "aggregate_bps", "flows"}
    assert got["flows"][0]["flow"] == 0
    assert got["flows"][0]["rate_bps"] == pytest.approx(HOP_BPS / 3, rel=1e-5)


def test_a_scenario_with_wired_links_is_refused_by_name():
    # The conflict graph is of radio links; a wired hop has no place in it.
    with pytest.raises(ScenarioError, match="wired"):
        xlayer.oracle("scenarios/flavors-wired.toml")
