"""The optimum oracle (xlayer.optimum, xlayer.oracle) against closed forms, brute force, and the simulator.

References: the 802.11b DSSS timing of 802.11-2016 §16 (long PLCP 192 µs, slot 20 µs, SIFS
10 µs, CWmin 31) for a link's capacity; the all-conflicting chain (each link 1/n of the
airtime); Li, Blake, De Couto, Lee, Morris, "Capacity of ad hoc wireless networks" (MobiCom
2001) for the chain under two-hop interference (a third of one hop); and brute-force
enumeration of every independent set of small conflict graphs. The simulator itself is the
reference of tests/test_oracle_against_simulator.py.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

pytest.importorskip("cvxpy")

import xlayer
from xlayer import optimum as xo
from xlayer.errors import ScenarioError, XlayerError

# One attempt of a 1000-byte UDP payload at 2 Mbit/s (802.11b DSSS, long preamble), in µs:
# DIFS = SIFS + 2 slots, DATA = PLCP + (28 MAC + 8 LLC/SNAP + 20 IP + 8 UDP + 1000) bytes at
# 2 Mbit/s, SIFS, ACK = PLCP + 14 bytes at 1 Mbit/s; no backoff (the bound). A lone DCF sender
# also waits a mean CWmin/2 = 15.5 slots before each attempt.
ATTEMPT_US = (10 + 2 * 20) + (192 + (28 + 8 + 20 + 8 + 1000) * 8 / 2) + 10 + (192 + 14 * 8 / 1)
MEAN_BACKOFF_US = 31 / 2 * 20
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
    m = xo.model(chain(2))
    assert m["links"]["backoff_s"][0] == pytest.approx(MEAN_BACKOFF_US * 1e-6, rel=1e-9)


def test_a_lone_dcf_senders_mean_backoff_is_charged_only_when_asked():
    lone = xo.oracle(chain(2), backoff="mean")
    assert lone.flows["rate_bps"][0] == pytest.approx(
        1000 * 8 / ((ATTEMPT_US + MEAN_BACKOFF_US) * 1e-6), rel=1e-6)
    assert lone.summary["backoff"] == "mean"
    with pytest.raises(ScenarioError, match="^backoff: 'some'"):
        xo.oracle(chain(2), backoff="some")


@pytest.mark.parametrize("hops", [2, 3, 4])
def test_a_chain_whose_links_all_conflict_gives_each_one_nth_of_the_airtime(hops):
    # carrier sense reaches the whole chain: every pair of links conflicts
    o = xo.oracle(chain(hops + 1, cs_range_m=2000.0))
    assert o.summary["conflicts"] == hops * (hops - 1) // 2
    for obj in xo.OBJECTIVES:
        r = xo.oracle(chain(hops + 1, cs_range_m=2000.0), objective=obj)
        assert r.flows["rate_bps"][0] == pytest.approx(HOP_BPS / hops, rel=1e-5)
        # each independent set is a single link: the columns are the n links, no more
        assert sorted(r.columns) == [(k,) for k in sorted(xo.model(
            chain(hops + 1, cs_range_m=2000.0))["flows"][0]["route"])]


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
                      "route": route, "window_s": (1.0, 6.0)})
    return {
        "nodes": nodes, "packet_bytes": [1028],
        "links": {"from": [e[0] for e in edges], "to": [e[1] for e in edges],
                  "rate_bps": [2e6] * n, "rx_dbm": [-70.0] * n, "success": [1.0] * n,
                  "attempt_s": [[0.005]] * n, "backoff_s": [0.0003] * n,
                  "capacity_pps": [[rng.uniform(50.0, 300.0)] for _ in range(n)]},
        "conflicts": conflicts, "flows": flows,
    }


def _link_formulation(m, obj, routing, sets):
    """The optimum written out directly, independent of xlayer.optimum's path master: a time
    share per independent set of ``sets`` and, under multipath routing, a rate per flow and
    link with conservation at every node (the multi-commodity flow), solved by cvxpy."""
    import cvxpy as cp
    import numpy as np

    links, flows = m["links"], m["flows"]
    n = len(links["from"])
    air = np.array([[1e6 / (f["payload_bits"] * links["capacity_pps"][k][f["size"]])
                     for k in range(n)] for f in flows])  # s per Mbit
    y = cp.Variable(len(flows), nonneg=True)
    lam = cp.Variable(len(sets), nonneg=True)
    share = np.zeros((n, len(sets)))
    for j, s in enumerate(sets):
        share[list(s), j] = 1.0
    cons = [cp.sum(lam) <= 1]
    if routing == "static":
        load = sum(y[i] * np.bincount(f["route"], weights=air[i, f["route"]], minlength=n)
                   for i, f in enumerate(flows))
    else:
        z = cp.Variable((len(flows), n), nonneg=True)
        frm, to = np.array(links["from"]), np.array(links["to"])
        for i, f in enumerate(flows):
            for v in range(m["nodes"]):
                out, into = np.flatnonzero(frm == v), np.flatnonzero(to == v)
                net = ((cp.sum(z[i, out]) if len(out) else 0)
                       - (cp.sum(z[i, into]) if len(into) else 0))
                want = y[i] if v == f["src"] else (-y[i] if v == f["dst"] else 0)
                cons.append(net == want)
        load = cp.sum(cp.multiply(z, air), axis=0)
    cons.append(load <= share @ lam)
    goal = {"proportional": cp.sum(cp.log(y)), "aggregate": cp.sum(y), "maxmin": cp.min(y)}[obj]
    cp.Problem(cp.Maximize(goal), cons).solve(solver=cp.CLARABEL)
    rates = np.maximum(y.value, 0) * 1e6
    return {"utility": xo.log_utility(rates), "aggregate_bps": float(rates.sum()),
            "min_rate_bps": float(rates.min())}


@pytest.mark.parametrize("seed", range(8))
def test_column_generation_equals_brute_force_over_all_independent_sets(seed):
    rng = random.Random(seed)
    m = _random_model(rng)
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    bad = {frozenset(c) for c in m["conflicts"]}
    for routing in xo.ROUTINGS:
        for obj in xo.OBJECTIVES:
            gen = xo.solve(m, obj, routing)
            brute = xo.solve(m, obj, routing, columns=everything)
            key = "utility" if obj == "proportional" else (
                "aggregate_bps" if obj == "aggregate" else "min_rate_bps")
            assert gen.summary[key] == pytest.approx(brute.summary[key], rel=1e-4), (routing, obj)
            # the same optimum written as one conic problem over every set (and, multipath,
            # a variable per flow and link rather than generated paths)
            direct = _link_formulation(m, obj, routing, everything)
            assert gen.summary[key] == pytest.approx(direct[key], rel=1e-4), (routing, obj)
            # the Lagrangian bound is an upper bound, and the generation reached it
            assert gen.summary["gap"] <= xo.GAP_TOLERANCE
            bound = gen.summary["bound"]
            assert bound >= direct[key] - 1e-6 * max(1.0, abs(direct[key]))
            # every generated column is an independent set
            for col in gen.columns:
                assert not any(frozenset(p) in bad for p in itertools.combinations(col, 2))
            # a warm start from these columns finds the same optimum
            warm = xo.solve(m, obj, routing, start=gen.columns)
            assert warm.summary[key] == pytest.approx(gen.summary[key], rel=1e-4)


def test_multipath_never_carries_less_than_the_static_route():
    sc = chain(4)
    sc["topology"] = {"kind": "grid", "rows": 2, "cols": 3, "spacing_m": 200.0}
    sc["flows"] = [{"src": 0, "dst": 5, "rate_bps": "saturate", "payload_bytes": 1000},
                   {"src": 3, "dst": 2, "rate_bps": "saturate", "payload_bytes": 1000}]
    m = xo.model(sc)
    static = xo.solve(m, "aggregate", "static").summary["aggregate_bps"]
    multi = xo.solve(m, "aggregate", "multipath").summary["aggregate_bps"]
    assert multi >= static * (1 - 1e-6)


def test_bad_objective_names_the_field():
    with pytest.raises(ScenarioError, match="^objective: 'best'"):
        xo.oracle(chain(3), objective="best")


@pytest.mark.parametrize("arg,value,match", [
    ("gap", -1e-3, "^gap: must be 0 or more, found -0.001"),
    ("gap", float("nan"), "^gap: must be 0 or more, found nan"),
    ("time_limit", -5, "^time_limit: must be 0 or more, found -5.0"),
    ("time_limit", "60", "^time_limit: must be a number, found '60'"),
])
def test_a_bad_gap_or_time_limit_names_the_argument(arg, value, match):
    with pytest.raises(ScenarioError, match=match):
        xo.oracle(chain(3), **{arg: value})
    with pytest.raises(ScenarioError, match=match):
        xo.solve(xo.model(chain(3)), **{arg: value})


@pytest.mark.parametrize("flag", ["--gap", "--time-limit"])
def test_cli_refuses_a_negative_gap_or_time_limit_in_one_line(flag, capsys):
    from xlayer.cli import main

    assert main(["oracle", "scenarios/chain.toml", flag, "-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"xlayer: error: {flag}: must be 0 or more, found -1", err


def test_cli_prints_the_optimum_as_json(capsys):
    from xlayer.cli import main

    assert main(["oracle", "scenarios/chain.toml", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert set(got) >= {"utility", "aggregate_bps", "flows"}
    assert got["flows"][0]["flow"] == 0
    assert got["flows"][0]["rate_bps"] == pytest.approx(HOP_BPS / 3, rel=1e-5)


def _long_numbers(text):
    """The numbers in ``text`` written with more than six significant digits."""
    import re

    return [t for t in re.findall(r"\d[\d,]*\.?\d*(?:e[-+]?\d+)?", text)
            if len(t.split("e")[0].replace(",", "").replace(".", "").lstrip("0")) > 6]


def test_cli_prints_the_optimum_in_units_people_read(capsys):
    """Without --json the rates are in kbit/s at three significant digits and the utility at
    six, with the objective's bound in the objective's own unit: no float's every digit."""
    from xlayer.cli import main

    assert main(["oracle", "scenarios/chain.toml", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert main(["oracle", "scenarios/chain.toml"]) == 0
    text = capsys.readouterr().out
    assert "rates in kbit/s" in text
    rate_kbps = got["flows"][0]["rate_bps"] / 1e3
    assert f"{rate_kbps:,.0f}" in text.split()  # 554.17 kbit/s: "554"
    assert f"{rate_kbps:,.0f} kbit/s" in text  # the aggregate of the one flow
    assert f"{got['utility']:.4f}" in text.split()  # 13.2252: six significant digits
    assert not _long_numbers(text), _long_numbers(text)
    assert main(["oracle", "scenarios/chain.toml", "--objective", "maxmin"]) == 0
    text = capsys.readouterr().out
    assert "upper bound on the smallest rate" in text and "kbit/s" in text


def test_cli_on_a_result_folder_prints_the_fractions_as_percentages(tmp_path, capsys):
    from xlayer.cli import main

    out = tmp_path / "run"
    xlayer.run(chain(4), out=out)
    assert main(["oracle", str(out), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert main(["oracle", str(out)]) == 0
    text = capsys.readouterr().out
    for key, what in (("fraction_utility", "fraction of the utility"),
                      ("fraction_aggregate", "fraction of the aggregate")):
        line = next(ln for ln in text.splitlines() if what in ln)
        assert line.split()[-2:] == [f"{100 * got[key]:.1f}", "%"], line
    assert "measured/optimal" in text
    assert not _long_numbers(text), _long_numbers(text)


def test_cli_accepts_a_gap_and_its_summary_stays_within_it(capsys):
    from xlayer.cli import main

    assert main(["oracle", "scenarios/chain.toml", "--routing", "multipath", "--gap", "0.2",
                 "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["gap"] <= 0.2 and got["bound"] >= got["utility"] - 1e-9


def test_a_solver_failure_is_one_line_naming_the_way_out(monkeypatch, capsys):
    import cvxpy as cp

    from xlayer.cli import main

    from cvxpy.reductions.solvers.solving_chain import SolvingChain

    def fail(*args, **kwargs):
        raise cp.error.SolverError("Solver 'CLARABEL' failed.\nTry another solver")

    # every Clarabel call, the first settings' and the retries' (xo.CLARABEL_RETRIES)
    monkeypatch.setattr(SolvingChain, "solve_via_data", fail)
    assert main(["oracle", "scenarios/chain.toml"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--objective aggregate" in err, err
    assert main(["oracle", "scenarios/chain.toml", "--objective", "aggregate"]) == 0


def test_a_scenario_with_wired_links_is_refused_by_name():
    # The conflict graph is of radio links; a wired hop has no place in it.
    with pytest.raises(ScenarioError, match="wired"):
        xlayer.oracle("scenarios/flavors-wired.toml")


# ----------------------------------------------------------------------------------------------
# A run against the optimum: the fractions


def test_the_utility_fraction_is_the_geometric_mean_of_measured_over_optimal():
    # two flows at half and at twice their optimal rates: U - U* = ln(1/2) + ln 2 = 0
    assert xo.fraction_utility([5e5, 4e6], [1e6, 2e6]) == pytest.approx(1.0)
    # every flow at a quarter: the fraction is a quarter, whatever the unit of rate
    assert xo.fraction_utility([2.5e5, 5e5], [1e6, 2e6]) == pytest.approx(0.25)
    assert xo.fraction_utility([250.0, 500.0], [1000.0, 2000.0]) == pytest.approx(0.25)


def _measured(rates):
    import pandas as pd

    return pd.DataFrame({"flow": range(len(rates)), "throughput_bps": rates})


def test_a_run_at_the_optimum_is_at_one_and_one_below_it_less():
    sc = chain(2)
    sc["topology"] = {"kind": "explicit", "positions": [[0, 0], [200, 0], [400, 0]]}
    sc["flows"] = [{"src": 0, "dst": 1, "rate_bps": "saturate", "payload_bytes": 1000},
                   {"src": 2, "dst": 1, "rate_bps": "saturate", "payload_bytes": 1000}]
    m = xo.model(sc)
    pf = xo.solve(m)
    # the two links share node 1: each gets half, and the largest aggregate is one link's
    assert list(pf.flows["rate_bps"]) == pytest.approx([HOP_BPS / 2] * 2, rel=1e-5)
    at = xo.compare_run(pf, _measured([HOP_BPS / 2] * 2), pf.summary["utility"], HOP_BPS, m=m)
    assert at.summary["fraction_utility"] == pytest.approx(1.0, rel=1e-5)
    assert at.summary["fraction_aggregate"] == pytest.approx(1.0, rel=1e-5)
    # all to one flow: the aggregate is still optimal, the utility is not
    skewed = xo.compare_run(pf, _measured([HOP_BPS, 0.0]), pf.summary["utility"], HOP_BPS, m=m)
    assert skewed.summary["fraction_aggregate"] == pytest.approx(1.0, rel=1e-5)
    assert skewed.summary["fraction_utility"] < 0.01
    assert list(skewed.flows["measured_over_optimal"]) == pytest.approx([2.0, 0.0])


def test_flows_measured_over_different_windows_are_averaged_over_their_span():
    # One link, two flows: flow 0 alone for the first half, both for the second. Each flow's
    # throughput is averaged over its own window, 0.75 and 0.5 of the link: 1.25 together,
    # which no schedule gives at any one time. Over the span they delivered 0.75 + 0.25.
    sc = chain(2, flows=[{"src": 0, "dst": 1, "rate_bps": "saturate", "payload_bytes": 1000},
                         {"src": 0, "dst": 1, "rate_bps": "saturate", "payload_bytes": 1000,
                          "start_s": 2.0}])
    sc["duration_s"], sc["warmup_s"] = 4.0, 0.0
    m = xo.model(sc)
    assert [f["window_s"] for f in m["flows"]] == [pytest.approx((0.0, 4.0)),
                                                   pytest.approx((2.0, 4.0))]
    agg = xo.solve(m, "aggregate")
    pf = xo.solve(m)
    got = xo.compare_run(pf, _measured([0.75 * HOP_BPS, 0.5 * HOP_BPS]), pf.summary["utility"],
                         agg.summary["aggregate_bps"], m=m)
    assert got.summary["measured_basis"] == "span"
    assert got.summary["fraction_aggregate"] == pytest.approx(1.0, rel=1e-5)
    assert got.summary["fraction_utility"] <= 1.0


@pytest.mark.parametrize("text, routing", [
    ("", "static"),
    ('[net]\nrouting = "dsdv"\n', "multipath"),
    ('[stack]\npreset = "dclo"\n', "multipath"),
    ('[stack]\npreset = "dpclo-zmacplus"\n', "multipath"),
    ('[stack]\npreset = "diffq-udp"\n[stack.diffq]\nnext_hops = 2\n', "multipath"),
    ('[stack]\npreset = "diffq-udp"\n', "static"),
])
def test_a_run_is_held_against_the_bound_of_the_routing_it_could_use(text, routing):
    from xlayer.scenario import load_toml

    sc = chain(4)
    sc.update(load_toml(text))
    assert xo.run_routing(sc) == routing


# ----------------------------------------------------------------------------------------------
# Command line, sweeps, plots


def test_cli_on_a_result_folder_prints_each_flows_measured_over_optimal(tmp_path, capsys):
    from xlayer.cli import main

    out = tmp_path / "run"
    xlayer.run(chain(4), out=out)
    assert main(["oracle", str(out), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["routing"] == "static"
    assert 0 < got["fraction_utility"] <= 1 and 0 < got["fraction_aggregate"] <= 1
    flow = got["flows"][0]
    assert flow["measured_over_optimal"] == pytest.approx(
        flow["measured_bps"] / flow["rate_bps"])


def test_a_run_held_against_a_bound_cut_short_says_so_in_stopped(tmp_path):
    """A run's fractions depend on the proportional-fair and the aggregate solves: when the
    aggregate one is cut short, ``stopped`` says so though the proportional-fair one (whose
    rates the flows table holds) reached its optimum."""
    out = tmp_path / "run"
    xlayer.run("scenarios/mesh-7x7.toml", overrides=["duration_s=2", "warmup_s=0.5"], out=out)
    whole = xo.oracle(out)
    assert whole.summary["stopped"] == "optimal"
    short = xo.oracle(out, progress=lambda p: p.objective == "aggregate")
    assert short.summary["stopped"] == "interrupted"
    assert short.summary["gap"] == pytest.approx(whole.summary["gap"], abs=1e-12)
    assert short.summary["fraction_aggregate"] >= whole.summary["fraction_aggregate"] - 1e-9


def test_without_the_oracle_extra_the_command_says_so_in_one_line(tmp_path):
    import subprocess
    import sys

    code = ("import sys\nsys.modules['cvxpy'] = None\nfrom xlayer.cli import main\n"
            "sys.exit(main(['oracle', 'scenarios/chain.toml']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "pip install 'xlayer[oracle]'" in lines[0]
    # the linear objectives need scipy only
    code = code.replace("'scenarios/chain.toml']", "'scenarios/chain.toml', '--objective', "
                        "'aggregate']")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_oracle_help_loads_no_heavy_library():
    import subprocess
    import sys

    code = ("import contextlib, io, sys\nfrom xlayer.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['oracle', '--help'])\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('scipy', 'cvxpy', 'pandas', 'clarabel') "
            "if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """`xlayer compare` of a 3-hop chain under two stacks, two seeds: its folder and output."""
    import contextlib
    import io

    from xlayer.cli import main

    root = tmp_path_factory.mktemp("cmp")
    path = root / "chain.toml"
    path.write_text('duration_s = 3.0\nwarmup_s = 0.5\n[radio]\nstandard = "802.11b"\n'
                    'data_rate_mbps = 2.0\nbasic_rate_mbps = 1.0\npropagation = '
                    '"two_ray_ground"\ntx_range_m = 250.0\ncs_range_m = 550.0\n[topology]\n'
                    'kind = "chain"\ncount = 4\nspacing_m = 200.0\n[[flows]]\nsrc = 0\ndst = 3\n'
                    'rate_bps = "saturate"\npayload_bytes = 1000\n[[flows]]\nsrc = 3\ndst = 1\n'
                    'rate_bps = "saturate"\npayload_bytes = 1000\n')
    out = root / "cmp"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        status = main(["compare", str(path), "--stacks", "udp,tcp-sack", "--seeds", "2",
                       "--workers", "1", "--out", str(out)])
    assert status == 0
    return out, text.getvalue()


def test_compare_prints_each_stacks_fraction_of_the_optimum(compared):
    out, printed = compared
    assert "fraction of the optimum" in printed
    rows = [line.split() for line in printed.splitlines()
            if line.split() and line.split()[0] in ("udp", "tcp-sack")]
    assert [r[0] for r in rows[-2:]] == ["udp", "tcp-sack"]  # the oracle table's rows
    o = xo.oracle(out)
    assert isinstance(o, xo.OracleSweep)
    assert len(o.runs) == 4 and o.runs["fraction_aggregate"].between(0, 1.02).all()
    assert o.runs["fraction_utility"].between(0, 1.02).all()
    assert set(o.runs["routing"]) == {"static"}
    # per flow: measured over optimal, the optimum of each run's own scenario
    assert len(o.flows) == 8
    fl = o.flows
    assert list(fl["measured_over_optimal"]) == pytest.approx(
        list(fl["throughput_bps"] / fl["optimal_bps"]))


def test_a_sweeps_oracle_column_is_cached_and_read_back_without_solving(compared, monkeypatch):
    out, _ = compared
    assert (out / xo.CACHE_FILE).is_file()
    first = xo.sweep_oracle(out)

    def no_solving(*args, **kwargs):
        raise AssertionError("solved again")

    monkeypatch.setattr(xo, "_judge_run", no_solving)
    again = xo.cached_sweep_oracle(out)
    assert again is not None
    assert again.runs["fraction_utility"].tolist() == pytest.approx(
        first.runs["fraction_utility"].tolist())


def test_plot_draws_measured_against_optimal_for_a_compared_sweep_and_on_request(
        compared, tmp_path):
    from xlayer.plots import plot_folder

    out, _ = compared
    names = {p.stem for p in plot_folder(out, tmp_path / "sweep", formats=["svg"])}
    assert "measured_vs_optimal" in names
    run = next(p for p in (out / "runs").iterdir() if not p.name.startswith("."))
    assert "measured_vs_optimal" not in {
        p.stem for p in plot_folder(run, tmp_path / "run", formats=["svg"])}
    assert "measured_vs_optimal" in {
        p.stem for p in plot_folder(run, tmp_path / "run2", formats=["svg"], oracle=True)}


def test_compare_without_the_solver_still_succeeds_and_says_why_in_one_line(
        compared, monkeypatch):
    import io

    from rich.console import Console

    from xlayer.cli import _print_oracle_table

    out, _ = compared
    (out / xo.CACHE_FILE).rename(out / "kept.json")
    try:
        def missing():
            raise XlayerError("the proportional-fair oracle needs cvxpy and clarabel: pip "
                              "install 'xlayer[oracle]'")

        monkeypatch.setattr(xo, "require_solver", missing)
        console = Console(width=100, file=io.StringIO(), no_color=True)
        _print_oracle_table(console, str(out))
        text = console.file.getvalue().strip().splitlines()
        assert len(text) == 1 and text[0].startswith("oracle: not computed: ")
        assert "xlayer[oracle]" in text[0]
    finally:
        (out / "kept.json").rename(out / xo.CACHE_FILE)


def test_a_solve_cut_short_still_bounds_the_optimum_from_above():
    """A time limit or a failed master ends the generation early: the result is then feasible
    (at most the optimum) and its bound at least the optimum, by brute force."""
    m = _random_model(random.Random(0))  # one iteration does not reach the optimum here
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    for obj, key in (("proportional", "utility"), ("aggregate", "aggregate_bps"),
                     ("maxmin", "min_rate_bps")):
        best = xo.solve(m, obj, "multipath", columns=everything).summary[key]
        short = xo.solve(m, obj, "multipath", time_limit=0.0).summary
        assert short["stopped"] in ("time limit", "optimal")
        if obj == "proportional":
            assert short["stopped"] == "time limit" and short["gap"] > 1e-3
        assert short[key] <= best + 1e-6 * max(1.0, abs(best))
        assert short["bound"] >= best - 1e-6 * max(1.0, abs(best))


def test_a_solve_asked_to_stop_ends_at_its_next_bound_and_still_bounds_the_optimum():
    """A progress callback that returns True (``xlayer oracle``'s first Ctrl-C) ends the
    solve as a time limit would: here at once, the iteration reported having ended with an
    exact pricing. Its result is feasible and its bound above the optimum (that of the whole
    solve, certified within its gap), and ``stopped`` says it was interrupted. Only ``True``
    stops it: a progress bar's ``update()`` may return another true value."""
    m = xo.model("scenarios/mesh-7x7.toml")  # 10 iterations to the optimum
    whole = xo.solve(m, "proportional", "static", progress=lambda p: None).summary
    assert whole["stopped"] == "optimal" and whole["iterations"] > 3
    best, tol = whole["utility"], 1e-6 * abs(whole["utility"])
    seen = []

    def stop_after_the_first(p):
        seen.append(p.iteration)
        return True

    short = xo.solve(m, "proportional", "static", progress=stop_after_the_first).summary
    assert short["stopped"] == "interrupted" and short["gap"] > 1e-3
    assert short["iterations"] == 1 and seen == [1]
    assert short["utility"] <= best + tol
    assert short["bound"] >= best - tol
    truthy = xo.solve(m, "proportional", "static", progress=lambda p: 1).summary
    assert truthy["stopped"] == "optimal" and truthy["iterations"] == whole["iterations"]


@pytest.mark.parametrize("presses", [1, 2])
def test_cli_ctrl_c_prints_what_the_solve_found_and_a_second_aborts(presses, monkeypatch,
                                                                   capsys):
    """The first SIGINT during ``xlayer oracle`` ends the solve at its next bound and prints
    the result (exit status 130); a second aborts without one. The handler is put back."""
    import os
    import signal

    from xlayer.cli import main

    solve = xo._Master.solve
    calls = []

    def interrupted(self, columns):
        calls.append(1)
        if len(calls) == 1:
            for _ in range(presses):
                os.kill(os.getpid(), signal.SIGINT)
        return solve(self, columns)

    monkeypatch.setattr(xo._Master, "solve", interrupted)
    before = signal.getsignal(signal.SIGINT)
    status = main(["oracle", "scenarios/mesh-7x7.toml", "--json"])
    out, err = capsys.readouterr()
    assert status == 130
    assert signal.getsignal(signal.SIGINT) is before
    if presses == 1:
        assert "stopping at the next bound" in err
        got = json.loads(out)
        assert got["stopped"] == "interrupted" and got["iterations"] == 1
        assert got["bound"] >= got["utility"] and len(got["flows"]) == 16
    else:
        assert out == "" and "xlayer: interrupted" in err


@pytest.mark.parametrize("price_every_iteration", [True, False])
def test_a_solve_reports_every_iteration_and_its_last_report_is_its_summary(
        price_every_iteration, monkeypatch):
    """``progress`` (``xlayer oracle``'s status line) hears each iteration in order, and the
    last report says what the summary says: the iterations, the gap. Both ways an iteration
    can end: with an exact pricing, or with greedy sets only (what large conflict graphs do,
    where the exact pricing is not run every iteration)."""
    monkeypatch.setattr(xo, "PRICE_EVERY_ITERATION", price_every_iteration)
    small = _random_model(random.Random(3))
    cases = [(small, "static"), (small, "multipath"), (xo.model("scenarios/mesh-7x7.toml"),
                                                       "static")]
    for (m, routing), obj in itertools.product(cases, ("proportional", "aggregate", "maxmin")):
        seen = []
        got = xo.solve(m, obj, routing, progress=seen.append).summary
        assert [p.iteration for p in seen] == list(range(1, got["iterations"] + 1))
        assert all(p.objective == obj and p.columns > 0 and p.paths > 0 for p in seen)
        assert all(a.elapsed_s <= b.elapsed_s for a, b in zip(seen, seen[1:]))
        assert max(seen[-1].gap, 0.0) == pytest.approx(got["gap"], abs=1e-12)
        assert got["stopped"] == "optimal" and seen[-1].gap <= xo.GAP_TOLERANCE


def test_the_oracle_status_line_names_the_solve_and_its_gap_in_the_summarys_units():
    from xlayer.cli import _solve_status

    def line(objective, gap):
        return _solve_status(xo.SolveProgress(objective, 7, 12.4, 1234, 40, gap))

    assert line("proportional", 0.0321) == (
        "oracle, proportional: iteration 7, 1,234 sets, 40 paths, gap 3.2e-02 per flow, 12 s")
    assert "gap 4.5%" in line("aggregate", 0.045)
    assert "no bound yet" in line("maxmin", float("inf"))


def test_the_status_line_shows_only_for_work_that_lasts():
    import io
    import time

    from rich.console import Console

    from xlayer._progress import StatusLine

    out = io.StringIO()
    quick = StatusLine(delay_s=0.3, console=Console(file=out, force_terminal=True))
    quick("oracle, proportional: iteration 1")
    quick.close()
    time.sleep(0.4)
    assert not quick.shown and out.getvalue() == ""
    out = io.StringIO()
    slow = StatusLine(delay_s=0.05, console=Console(file=out, force_terminal=True))
    slow("oracle, proportional: iteration 1")
    deadline = time.monotonic() + 5
    while not slow.shown and time.monotonic() < deadline:
        time.sleep(0.02)
    assert slow.shown
    slow("oracle, proportional: iteration 2")
    slow.close()
    assert "iteration" in out.getvalue() and not slow.shown


def test_a_solve_ends_once_its_bound_is_within_the_gap_asked():
    """``gap=G`` (``xlayer oracle --gap G``) ends the generation once the upper bound is within
    G of the best solution found: the optimum by brute force lies between the two."""
    m = _random_model(random.Random(0))
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    nf = len(m["flows"])
    for obj, key in (("proportional", "utility"), ("aggregate", "aggregate_bps")):
        best = xo.solve(m, obj, "multipath", columns=everything).summary[key]
        got = xo.solve(m, obj, "multipath", gap=0.05).summary
        assert got["gap"] <= 0.05
        assert got[key] <= best + 1e-6 * max(1.0, abs(best)) <= got["bound"] + 1e-5 * abs(best)
        if obj == "proportional":  # per flow in ln(rate)
            assert got[key] >= best - 0.05 * nf - 1e-6
        else:
            assert got[key] >= best * (1 - 0.05) - 1e-6


def test_a_master_that_fails_after_the_first_keeps_the_previous_one(monkeypatch):
    m = _random_model(random.Random(5))
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    best = xo.solve(m, "aggregate", "multipath", columns=everything).summary["aggregate_bps"]
    real = xo._Master.solve
    calls = []

    def flaky(self, cols):
        calls.append(1)
        if len(calls) > 1:
            raise XlayerError("oracle: Clarabel could not solve the master problem")
        return real(self, cols)

    monkeypatch.setattr(xo._Master, "solve", flaky)
    monkeypatch.setattr(xo, "_covering_sets", lambda p: [(0,)])  # one poor column to start
    got = xo.solve(m, "aggregate", "multipath").summary
    assert len(calls) == 2 and got["stopped"] == "master failed"
    assert got["aggregate_bps"] <= best * (1 + 1e-6)
    assert got["bound"] >= best * (1 - 1e-6)


def _shared_end_model(rng, end):
    """A random model whose flows share an end (all to one sink, or all from one source),
    some of them between the same pair: the flows a multi-path solve merges into one
    commodity."""
    m = _random_model(rng)
    nodes = m["nodes"]
    common = rng.randrange(nodes)
    flows = []
    for f in range(4):
        other = rng.choice([v for v in range(nodes) if v != common])
        src, dst = (other, common) if end == "dst" else (common, other)
        flows.append({"flow": f, "src": src, "dst": dst, "payload_bits": 8000.0, "size": 0,
                      "route": [], "window_s": (1.0, 6.0)})
    m["flows"] = flows
    return m


@pytest.mark.parametrize("seed", range(4))
def test_every_multipath_form_equals_the_flow_per_link_formulation(seed, monkeypatch):
    """Multi-path routing in link form over merged commodities (flows sharing a sink or a
    source) and over generated links (ARC_LIMIT 0) reach the
    optimum of the multi-commodity flow written with a rate per flow and link (the test's own
    formulation, over every independent set), and their bounds hold it."""
    rng = random.Random(100 + seed)
    cases = [_random_model(rng), _shared_end_model(rng, "dst"), _shared_end_model(rng, "src")]
    arc_limit = xo.ARC_LIMIT
    for m in cases:
        everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
        for limit, form in ((arc_limit, "links"), (0, "generated links")):
            monkeypatch.setattr(xo, "ARC_LIMIT", limit)
            for obj, key in (("proportional", "utility"), ("aggregate", "aggregate_bps"),
                             ("maxmin", "min_rate_bps")):
                direct = _link_formulation(m, obj, "multipath", everything)[key]
                got = xo.solve(m, obj, "multipath")
                assert got.summary["form"] == form
                assert got.summary[key] == pytest.approx(direct, rel=1e-4), (form, obj)
                assert got.summary["gap"] <= xo.GAP_TOLERANCE, (form, obj)
                assert got.summary["bound"] >= direct - 1e-6 * max(1.0, abs(direct))
                fixed = xo.solve(m, obj, "multipath", columns=everything).summary[key]
                assert fixed == pytest.approx(direct, rel=1e-4), (form, obj)


def test_flows_to_one_sink_are_one_commodity():
    m = _shared_end_model(random.Random(7), "dst")
    p = xo._Problem(m, "multipath", "none")
    end, groups = xo._commodities(p)
    assert end == "dst" and len(groups) == 1 and sorted(groups[0]) == [0, 1, 2, 3]


def test_dpclo_fig6_many_to_one_carries_at_most_the_sinks_best_link():
    """dpclo-fig6, 108 nodes under free multi-path routing (1220 links, 8 flows to one sink):
    solved to the optimum. Every link into the sink shares the sink, so they conflict and the
    aggregate is at most the best of their capacities; a source one hop from the sink over
    such a link reaches it alone. Max-min is no more than the aggregate shared equally."""
    m = xo.model("scenarios/dpclo-fig6.toml")
    (sink,) = {f["dst"] for f in m["flows"]}
    links, f0 = m["links"], m["flows"][0]
    assert all(f["size"] == f0["size"] and f["payload_bits"] == f0["payload_bits"]
               for f in m["flows"])
    into = {a: links["capacity_pps"][k][f0["size"]] * f0["payload_bits"]
            for k, (a, b) in enumerate(zip(links["from"], links["to"])) if b == sink}
    best = max(into.values())
    sources = {f["src"] for f in m["flows"]}
    assert any(into.get(s, 0.0) == best for s in sources)  # the closed form's premise
    agg = xo.solve(m, "aggregate", "multipath").summary
    assert agg["form"] == "links" and agg["stopped"] == "optimal"
    assert agg["aggregate_bps"] == pytest.approx(best, rel=1e-6)
    assert agg["gap"] <= xo.GAP_TOLERANCE
    mm = xo.solve(m, "maxmin", "multipath").summary
    assert mm["gap"] <= xo.GAP_TOLERANCE and mm["stopped"] == "optimal"
    assert 0 < mm["min_rate_bps"] * len(m["flows"]) <= best * (1 + 1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_the_warm_highs_master_and_a_fresh_linprog_reach_the_same_optimum(seed, monkeypatch):
    """The linear masters kept in one HiGHS model (xo.WARM_LP, columns and rates added as they
    are generated), solved by its interior point or by its simplex from the last basis
    (xo.LINEAR_SOLVER), and solved anew by linprog every iteration: the same optimum, the
    direct formulation's, for static routes and both multipath forms, each within its gap."""
    pytest.importorskip("highspy")
    rng = random.Random(200 + seed)
    m = _random_model(rng) if seed % 2 else _shared_end_model(rng, "dst")
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    arc_limit = xo.ARC_LIMIT
    for routing, limit in (("static", arc_limit), ("multipath", arc_limit), ("multipath", 0)):
        if routing == "static" and not all(f["route"] for f in m["flows"]):
            continue
        monkeypatch.setattr(xo, "ARC_LIMIT", limit)
        for obj, key in (("aggregate", "aggregate_bps"), ("maxmin", "min_rate_bps")):
            direct = _link_formulation(m, obj, routing, everything)[key]
            for warm, solver in ((True, "ipm"), (True, "simplex"), (False, "ipm")):
                monkeypatch.setattr(xo, "WARM_LP", warm)
                monkeypatch.setattr(xo, "LINEAR_SOLVER", solver)
                got = xo.solve(m, obj, routing)
                assert got.summary[key] == pytest.approx(direct, rel=1e-4), (
                    routing, obj, warm, solver)
                assert got.summary["gap"] <= xo.GAP_TOLERANCE
                assert got.summary["bound"] >= direct - 1e-6 * max(1.0, abs(direct))


@pytest.mark.parametrize("seed", range(3))
def test_pricing_once_or_twice_per_proportional_fair_master_reaches_the_same_optimum(
        seed, monkeypatch):
    """xo.PRICE_BOTH (the exact pricing at the master's own prices as well as at the smoothed
    ones) changes the sets generated, not the optimum nor the validity of its bound."""
    rng = random.Random(300 + seed)
    m = _random_model(rng)
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    for routing in xo.ROUTINGS:
        direct = _link_formulation(m, "proportional", routing, everything)["utility"]
        for both in (True, False):
            monkeypatch.setattr(xo, "PRICE_BOTH", both)
            got = xo.solve(m, "proportional", routing).summary
            assert got["utility"] == pytest.approx(direct, rel=1e-4), (routing, both)
            assert got["gap"] <= xo.GAP_TOLERANCE
            assert got["bound"] >= direct - 1e-6 * max(1.0, abs(direct))


@pytest.mark.parametrize("seed", range(4))
def test_a_greedy_set_takes_each_free_link_in_order_and_is_maximal(seed):
    """xo._maximal (the greedy sets and every set the pricing finds, made maximal): from the
    chosen links, each link of the order that conflicts with none taken so far joins, in that
    order, once even if the order names it twice; the set is independent and maximal."""
    import numpy as np

    rng = random.Random(400 + seed)
    m = _random_model(rng)
    p = xo._Problem(m, "multipath", "none")
    n = p.n_links
    for _ in range(20):
        order = list(range(n))
        rng.shuffle(order)
        order += order[:rng.randint(0, n)]  # repeated links
        chosen = [rng.randrange(n)]
        taken = list(chosen)
        for k in order:
            if k not in taken and not any(p.adjacent[k, j] for j in taken):
                taken.append(k)
        got = xo._maximal(p, chosen, np.asarray(order))
        assert got == tuple(sorted(taken))
        assert not any(p.adjacent[a, b] for a, b in itertools.combinations(got, 2))
        assert all(k in got or p.adjacent[k, list(got)].any() for k in range(n))


@pytest.mark.parametrize("seed", range(3))
def test_max_min_with_few_greedy_sets_an_iteration_reaches_the_same_optimum(seed, monkeypatch):
    """xo.GREEDY_KEEP_MAXMIN (at most that many greedy sets join the max-min master an
    iteration) changes the sets generated, not the optimum nor the validity of its bound."""
    rng = random.Random(500 + seed)
    m = _random_model(rng)
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    monkeypatch.setattr(xo, "GREEDY_KEEP_MAXMIN", 1)
    for routing in xo.ROUTINGS:
        direct = _link_formulation(m, "maxmin", routing, everything)["min_rate_bps"]
        got = xo.solve(m, "maxmin", routing).summary
        assert got["min_rate_bps"] == pytest.approx(direct, rel=1e-4), routing
        assert got["gap"] <= xo.GAP_TOLERANCE
        assert got["bound"] >= direct - 1e-6 * max(1.0, abs(direct))


@pytest.mark.parametrize("seed", range(4))
def test_the_frontier_pricing_finds_the_heaviest_independent_set(seed):
    """xo._frontier_mwis (the exact pricing by dynamic programming along an order of the
    links) against brute force on random graphs of up to 16 links, random and tied weights,
    and against the MILP; None when the frontier cannot fit (then the MILP prices)."""
    import numpy as np

    rng = np.random.default_rng(600 + seed)
    for n in (1, 2, 7, 12, 16):
        for density in (0.1, 0.3, 0.7):
            adj = np.triu(rng.random((n, n)) < density, 1)
            adj = adj | adj.T
            w = rng.random(n) if density != 0.3 else rng.integers(1, 4, n).astype(float)
            got = xo._frontier_mwis(adj, w, 100_000)
            assert got is not None
            value, chosen = got
            sets = _independent_sets(n, [tuple(e) for e in np.transpose(np.nonzero(adj))])
            best = max([0.0] + [float(w[list(s)].sum()) for s in sets])
            assert value == pytest.approx(best, rel=1e-12)
            assert sum(w[chosen]) == pytest.approx(value, rel=1e-12)
            assert not adj[np.ix_(chosen, chosen)].any()
    # a wider graph than brute force can enumerate, against HiGHS's MILP
    n = 40
    adj = np.triu(rng.random((n, n)) < 0.15, 1)
    adj = adj | adj.T
    w = rng.random(n)
    value, chosen = xo._frontier_mwis(adj, w, 100_000)
    from scipy.optimize import Bounds, LinearConstraint, milp
    edges = np.transpose(np.nonzero(np.triu(adj, 1)))
    a = np.zeros((len(edges), n))
    a[np.arange(len(edges)), edges[:, 0]] = 1
    a[np.arange(len(edges)), edges[:, 1]] = 1
    res = milp(-w, constraints=[LinearConstraint(a, -np.inf, 1)], integrality=np.ones(n),
               bounds=Bounds(0, 1), options={"mip_rel_gap": 1e-12})
    assert value == pytest.approx(-res.fun, rel=1e-9)
    # a frontier wider than 64 x FRONTIER_WORDS links (a complete graph of 130: every link
    # conflicts with the ones to come) or more states than allowed: None
    assert xo._frontier_mwis(~np.eye(130, dtype=bool), np.ones(130), 100_000) is None
    sparse_adj = np.zeros((30, 30), dtype=bool)
    assert xo._frontier_mwis(sparse_adj, np.ones(30), 100_000) is not None


def _milp_mwis(adj, w):
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(w)
    edges = np.transpose(np.nonzero(np.triu(adj, 1)))
    a = np.zeros((max(1, len(edges)), n))
    a[np.arange(len(edges)), edges[:, 0]] = 1
    a[np.arange(len(edges)), edges[:, 1]] = 1
    res = milp(-w, constraints=[LinearConstraint(a, -np.inf, 1)], integrality=np.ones(n),
               bounds=Bounds(0, 1), options={"mip_rel_gap": 1e-12})
    return -res.fun


@pytest.mark.parametrize("seed", range(3))
def test_the_frontier_pricing_over_two_words_a_state(seed):
    """A frontier of 65-128 links takes two uint64 words a state (xo.FRONTIER_WORDS): the
    same optimum as brute force on small graphs forced to two words (their links' bits
    alternate between the words), as the MILP on band graphs whose frontier is 70-100 links
    wide (a link conflicting with most of the next 70-100), and None above 128 links or with
    one word allowed."""
    import numpy as np

    rng = np.random.default_rng(900 + seed)
    for n in (2, 9, 14, 16):
        for density in (0.1, 0.3, 0.6):
            adj = np.triu(rng.random((n, n)) < density, 1)
            adj = adj | adj.T
            w = rng.random(n) if density != 0.3 else rng.integers(1, 4, n).astype(float)
            sets = _independent_sets(n, [tuple(e) for e in np.transpose(np.nonzero(adj))])
            best = max([0.0] + [float(w[list(s)].sum()) for s in sets])
            one = xo._frontier_mwis(adj, w, 100_000)
            two = xo._frontier_mwis(adj, w, 100_000, words=2)
            assert one is not None and two is not None
            for value, chosen in (one, two):
                assert value == pytest.approx(best, rel=1e-12)
                assert sum(w[chosen]) == pytest.approx(value, rel=1e-12)
                assert not adj[np.ix_(chosen, chosen)].any()
    for n, band in ((150, 70), (200, 100)):
        i, j = np.triu_indices(n, 1)
        near = (j - i <= band) & (rng.random(len(i)) < 0.97)
        adj = np.zeros((n, n), dtype=bool)
        adj[i[near], j[near]] = True
        adj = adj | adj.T
        perm = rng.permutation(n)  # not in band order: the order is found
        adj = adj[np.ix_(perm, perm)]
        w = rng.random(n)
        assert 64 < xo._frontier_width(adj, np.argsort(perm)) <= 128
        got = xo._frontier_mwis(adj, w, 100_000)
        assert got is not None
        value, chosen = got
        assert value == pytest.approx(_milp_mwis(adj, w), rel=1e-9)
        assert sum(w[chosen]) == pytest.approx(value, rel=1e-12)
        assert not adj[np.ix_(chosen, chosen)].any()
    assert xo._frontier_mwis(~np.eye(130, dtype=bool), np.ones(130), 100_000) is None
    import unittest.mock

    with unittest.mock.patch.object(xo, "FRONTIER_WORDS", 1):
        assert xo._frontier_mwis(adj, w, 100_000) is None


@pytest.mark.parametrize("words", (1, 2))
def test_the_frontier_pricing_gives_more_heavy_sets(words):
    """``more`` (xo.FRONTIER_SETS: more sets an exact pricing adds) gets distinct independent
    sets, heaviest first, their weights right and none above the heaviest set's, which stays
    the brute-force optimum."""
    import numpy as np

    rng = np.random.default_rng(950 + words)
    for n in (3, 9, 15):
        adj = np.triu(rng.random((n, n)) < 0.3, 1)
        adj = adj | adj.T
        w = rng.random(n)
        more = []
        value, chosen = xo._frontier_mwis(adj, w, 100_000, words=words, more=more, count=5)
        sets = _independent_sets(n, [tuple(e) for e in np.transpose(np.nonzero(adj))])
        assert value == pytest.approx(max(float(w[list(s)].sum()) for s in sets), rel=1e-12)
        assert 0 < len(more) <= 5
        seen = {tuple(chosen)}
        for weight, links in more:
            assert tuple(links) not in seen
            seen.add(tuple(links))
            assert not adj[np.ix_(links, links)].any()
            assert weight == pytest.approx(float(w[links].sum()), rel=1e-12)
            assert weight <= value + 1e-12
        assert [m[0] for m in more] == sorted((m[0] for m in more), reverse=True)


def test_the_narrow_order_has_a_frontier_no_wider_than_needed():
    """xo._narrow_order (the frontier grown greedily) is an order of every link, and on a
    path of links (each conflicting with the next), shuffled, ranked from one end keeps a
    frontier of two links."""
    import numpy as np

    n = 30
    adj = np.zeros((n, n), dtype=bool)
    adj[np.arange(n - 1), np.arange(1, n)] = True
    adj = adj | adj.T
    perm = np.random.default_rng(3).permutation(n)
    adj = adj[np.ix_(perm, perm)]
    order = xo._narrow_order(adj, np.argsort(perm)[::-1])
    assert sorted(order.tolist()) == list(range(n))
    assert xo._frontier_width(adj, order) <= 2


@pytest.mark.parametrize("seed", range(3))
def test_the_frontier_pricing_and_the_milp_give_the_same_optimum_and_valid_bounds(
        seed, monkeypatch):
    """xo.FRONTIER_STATES = 0 prices by the MILP alone: both solves reach the brute-force
    optimum of every objective, with bounds at or above it."""
    rng = random.Random(700 + seed)
    m = _random_model(rng)
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    for routing in xo.ROUTINGS:
        for obj, key in (("proportional", "utility"), ("aggregate", "aggregate_bps"),
                         ("maxmin", "min_rate_bps")):
            direct = _link_formulation(m, obj, routing, everything)[key]
            for states in (0, xo.FRONTIER_STATES):
                monkeypatch.setattr(xo, "FRONTIER_STATES", states)
                got = xo.solve(m, obj, routing).summary
                assert got[key] == pytest.approx(direct, rel=1e-4), (routing, obj, states)
                assert got["gap"] <= xo.GAP_TOLERANCE
                assert got["bound"] >= direct - 1e-6 * max(1.0, abs(direct))


@pytest.mark.parametrize("seed", range(4))
def test_the_stabilised_proportional_fair_master_reaches_the_same_optimum(seed, monkeypatch):
    """xo.PROX (the proportional-fair master drawn towards the prices of the best bound, its
    value from the master without it) changes the prices priced, not the optimum nor the
    validity of its bound, whatever its weight and however often the value is taken."""
    rng = random.Random(800 + seed)
    m = _random_model(rng)
    everything = _independent_sets(len(m["links"]["from"]), m["conflicts"])
    for routing in xo.ROUTINGS:
        direct = _link_formulation(m, "proportional", routing, everything)["utility"]
        for prox, every in ((0.0, 1), (xo.PROX, xo.PROX_VALUE_EVERY), (0.05, 3), (20.0, 1)):
            monkeypatch.setattr(xo, "PROX", prox)
            monkeypatch.setattr(xo, "PROX_VALUE_EVERY", every)
            got = xo.solve(m, "proportional", routing).summary
            assert got["utility"] == pytest.approx(direct, rel=1e-4), (routing, prox)
            assert got["gap"] <= xo.GAP_TOLERANCE
            assert got["bound"] >= direct - 1e-6 * max(1.0, abs(direct))


def _saturated_grid(rows: int, cols: int, pairs) -> dict:
    """A grid at 200 m under range propagation (four neighbours each), saturated UDP flows
    between ``pairs`` of nodes."""
    return {"duration_s": 3.0,
            "radio": {"standard": "802.11b", "data_rate_mbps": 11.0, "basic_rate_mbps": 11.0,
                      "propagation": "range", "tx_range_m": 250.0},
            "topology": {"kind": "grid", "rows": rows, "cols": cols, "spacing_m": 200.0},
            "flows": [{"src": a, "dst": b, "rate_bps": "saturate", "payload_bytes": 1000}
                      for a, b in pairs]}


def test_the_stabilised_master_on_a_grid_agrees_with_the_plain_one_and_bounds_it(monkeypatch):
    """A 4x5 grid under multi-path routing over generated links, where the stabilised master
    (xo.PROX) runs for dozens of iterations: the same optimum as without it, each solve's
    bound above the other's utility, and its masters really were stabilised."""
    sc = _saturated_grid(4, 5, ((0, 19), (4, 15), (5, 9), (1, 18)))
    m = xo.model(sc)
    monkeypatch.setattr(xo, "ARC_LIMIT", 0)
    stabilised = []
    solve = xo._Master.solve

    def counting(self, cols):
        stabilised.append(self.center is not None and self.prox > 0)
        return solve(self, cols)

    monkeypatch.setattr(xo._Master, "solve", counting)
    out = {}
    for prox in (0.0, xo.PROX):
        monkeypatch.setattr(xo, "PROX", prox)
        stabilised.clear()
        out[prox] = xo.solve(m, "proportional", "multipath").summary
        assert out[prox]["form"] == "generated links"
        assert out[prox]["gap"] <= xo.GAP_TOLERANCE
        assert any(stabilised) == (prox > 0)
    plain, stab = out[0.0], out[xo.PROX]
    assert stab["utility"] == pytest.approx(plain["utility"], abs=4 * 2 * xo.GAP_TOLERANCE)
    assert stab["bound"] >= plain["utility"] - 1e-9 * abs(plain["utility"])
    assert plain["bound"] >= stab["utility"] - 1e-9 * abs(stab["utility"])


def test_a_stabilised_master_that_fails_gives_way_to_the_plain_one(monkeypatch):
    """When Clarabel fails on a stabilised proportional-fair master (xo.PROX), the next
    master is solved without the stabilisation and the solve still reaches the optimum."""
    sc = _saturated_grid(3, 4, ((0, 11), (3, 8), (4, 7), (1, 10)))
    m = xo.model(sc)
    monkeypatch.setattr(xo, "ARC_LIMIT", 0)
    plain = xo.solve(m, "proportional", "multipath").summary
    solve = xo._Master.solve
    failed = []

    def flaky(self, cols):
        if self.center is not None and self.prox > 0 and len(failed) < 3:
            failed.append(1)
            raise XlayerError("oracle: Clarabel could not solve the proportional-fair master")
        return solve(self, cols)

    monkeypatch.setattr(xo._Master, "solve", flaky)
    got = xo.solve(m, "proportional", "multipath").summary
    assert failed and got["stopped"] == "optimal"
    assert got["utility"] == pytest.approx(plain["utility"], abs=8 * xo.GAP_TOLERANCE)
    assert got["bound"] >= plain["utility"] - 1e-9 * abs(plain["utility"])


class _CountingThread(xo.threading.Thread):
    """A thread that counts how many were started (the solves xo.PARALLEL ran at once)."""
    started = 0

    def start(self):
        type(self).started += 1
        super().start()


def _same_solve(a, b):
    """Two OracleResults equal to the bit, but for the wall time of the solve."""
    sa = {k: v for k, v in a.summary.items() if k != "solve_s"}
    sb = {k: v for k, v in b.summary.items() if k != "solve_s"}
    assert sa == sb
    assert a.flows.equals(b.flows)
    assert a.columns == b.columns


@pytest.mark.parametrize("milp", [False, True], ids=["frontier", "milp"])
def test_solves_run_at_once_give_the_results_of_one_after_the_other(milp, monkeypatch):
    """xo.PARALLEL runs the plain and stabilised masters of an iteration (frontier pricing)
    and the two exact pricings (MILP pricing, xo.FRONTIER_STATES = 0) in two threads; the
    solve is the sequential one to the bit: the same rates, bound, gap, iterations and
    columns in the same order."""
    sc = _saturated_grid(4, 5, ((0, 19), (4, 15), (5, 9), (1, 18)))
    m = xo.model(sc)
    monkeypatch.setattr(xo, "ARC_LIMIT", 0)
    if milp:
        monkeypatch.setattr(xo, "FRONTIER_STATES", 0)
    monkeypatch.setattr(xo.threading, "Thread", _CountingThread)
    out = {}
    for parallel in (False, True):
        monkeypatch.setattr(xo, "PARALLEL", parallel)
        _CountingThread.started = 0
        out[parallel] = xo.solve(m, "proportional", "multipath")
        assert (_CountingThread.started > 0) == parallel
        assert out[parallel].summary["stopped"] == "optimal"
    _same_solve(out[False], out[True])


def test_a_stabilised_master_failing_beside_the_plain_one_gives_way_to_it(monkeypatch):
    """When Clarabel fails on the stabilised master solved at once with the plain one
    (xo.PARALLEL), the plain one's value stands, the next master is unstabilised, and the
    solve reaches the optimum of the sequential one; a failing plain master beside it is
    skipped as before."""
    import cvxpy as cp

    sc = _saturated_grid(3, 4, ((0, 11), (3, 8), (4, 7), (1, 10)))
    m = xo.model(sc)
    monkeypatch.setattr(xo, "ARC_LIMIT", 0)
    plain = xo.solve(m, "proportional", "multipath").summary
    real = xo._clarabel
    real_solve = cp.Problem.solve
    real_pair = xo._solve_conic
    in_pair = []

    def tracking(masters):
        in_pair.append(len(masters) > 1)
        try:
            return real_pair(masters)
        finally:
            in_pair.pop()

    monkeypatch.setattr(xo, "_solve_conic", tracking)
    for which in ("stabilised", "plain"):
        failed = []

        def flaky(c):
            if in_pair[-1] and c.stab == (which == "stabilised") and len(failed) < 2:
                failed.append(c)
                c.solution = cp.error.SolverError("Solver 'CLARABEL' failed.")
                return
            real(c)

        def no_retry(prob, *args, **kwargs):  # the retries of a failed master fail too
            if any(c.prob is prob for c in failed):
                raise cp.error.SolverError("Solver 'CLARABEL' failed.")
            return real_solve(prob, *args, **kwargs)

        monkeypatch.setattr(xo, "_clarabel", flaky)
        monkeypatch.setattr(cp.Problem, "solve", no_retry)
        got = xo.solve(m, "proportional", "multipath").summary
        assert failed and got["stopped"] == "optimal", which
        assert got["utility"] == pytest.approx(plain["utility"], abs=8 * xo.GAP_TOLERANCE)
        assert got["bound"] >= plain["utility"] - 1e-9 * abs(plain["utility"])


@pytest.mark.parametrize("objective,key", [("aggregate", "aggregate_bps"),
                                           ("maxmin", "min_rate_bps")])
def test_the_linear_masters_priced_twice_an_iteration_reach_the_same_optimum(
        objective, key, monkeypatch):
    """xo.PRICE_BOTH_FOR with a linear objective (off by default): the aggregate or max-min
    master priced at its own prices as well as the smoothed ones, both MILPs at once
    (xo.PARALLEL; xo.FRONTIER_STATES = 0 so the MILP prices), reaches the optimum of the
    solve priced once an iteration, and each solve's bound holds the other's value."""
    sc = _saturated_grid(4, 5, ((0, 19), (4, 15), (5, 9), (1, 18)))
    m = xo.model(sc)
    monkeypatch.setattr(xo, "ARC_LIMIT", 0)
    monkeypatch.setattr(xo, "FRONTIER_STATES", 0)
    monkeypatch.setattr(xo.threading, "Thread", _CountingThread)
    out = {}
    for both in ((), xo.OBJECTIVES):
        monkeypatch.setattr(xo, "PRICE_BOTH_FOR", both)
        _CountingThread.started = 0
        out[both] = xo.solve(m, objective, "multipath").summary
        assert (_CountingThread.started > 0) == bool(both)
        assert out[both]["stopped"] == "optimal"
    once, twice = out[()], out[xo.OBJECTIVES]
    assert twice[key] == pytest.approx(once[key], rel=2 * xo.GAP_TOLERANCE)
    assert twice["bound"] >= once[key] * (1 - 1e-9)
    assert once["bound"] >= twice[key] * (1 - 1e-9)
