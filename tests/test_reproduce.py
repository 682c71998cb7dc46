"""``xlayer reproduce``: the documents' experiments, one command each (issue 20 item 6).

The documents' claims themselves are asserted by the Rust tests that name them (README,
Validation); here: every experiment's sweep is valid, a claim is judged by its criterion (one
that fails is reported as not holding, not hidden), and one experiment runs end to end."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pandas as pd
import pytest

from xlayer import reproduce as rep
from xlayer.cli import main

from conftest import SCENARIOS

ROOT = SCENARIOS.parent


def test_every_experiment_names_a_document_and_plans_a_valid_sweep(monkeypatch):
    pytest.importorskip("dask")
    from xlayer.sweeps import load_sweep, plan_runs

    monkeypatch.chdir(ROOT)
    assert len(rep.EXPERIMENTS) >= 8
    for e in rep.EXPERIMENTS.values():
        assert e.document and e.title, e.name
        for quick in (False, True):
            runs = plan_runs(load_sweep(e.sweep_spec(quick)))  # validates every run's scenario
            assert len(runs) == e.run_count(quick), (e.name, quick)
        assert e.run_count(True) < e.run_count(False) or e.quick_overrides, e.name


def test_list_prints_every_experiment(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["reproduce", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [x["name"] for x in listed] == list(rep.EXPERIMENTS)
    assert all(x["quick_runs"] <= x["runs"] for x in listed)


def test_an_unknown_experiment_is_a_one_line_error(capsys):
    assert main(["reproduce", "fig99"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown experiment 'fig99'" in err and "diffq-fig2" in err
    assert len(err.splitlines()) == 1
    assert main(["reproduce"]) == 2
    assert "--all" in capsys.readouterr().err


def test_outside_a_checkout_the_missing_scenarios_are_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(rep, "_checkout_folders", lambda: [])
    pytest.importorskip("dask")
    assert main(["reproduce", "clap-1hop", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "clap-1hop.toml" in err and "checkout" in err


@dataclass
class FakeSweep:
    """The parts of a loaded sweep the judges read."""

    runs: pd.DataFrame
    flows: pd.DataFrame
    stacks: List[str]

    @property
    def ok(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == "ok"]


def fake(rates: dict) -> FakeSweep:
    """rates: {stack: {seed: [flow throughputs]}}."""
    runs, flows = [], []
    for stack, by_seed in rates.items():
        for seed, values in by_seed.items():
            run = f"{stack}-{seed}"
            runs.append({"run": run, "stack": stack, "seed": seed, "status": "ok"})
            for i, v in enumerate(values):
                flows.append({"run": run, "stack": stack, "seed": seed, "flow": i,
                              "throughput_bps": float(v)})
    return FakeSweep(pd.DataFrame(runs), pd.DataFrame(flows), list(rates))


def test_the_starvation_claim_holds_only_when_the_long_flow_starves():
    fair = {"diffq-tcp": {1: [3e5, 3e5, 3e5]}, "diffq-udp": {1: [3e5, 3e5, 3e5]}}
    starving = rep.judge(rep.experiment("diffq-fig2"),
                         fake({"tcp-sack": {1: [5e4, 1.2e6, 1.2e6]}, **fair}))
    assert [v.holds for v in starving] == [True, True, True]
    assert "4.2%" in starving[0].measured
    # A 3-hop flow at half the 1-hop flows' rate does not starve: the claim does not hold.
    sharing = rep.judge(rep.experiment("diffq-fig2"),
                        fake({"tcp-sack": {1: [6e5, 1.2e6, 1.2e6]}, **fair}))
    assert sharing[0].holds is False
    # DiffQ no fairer than TCP-SACK: its fairness claims do not hold.
    unfair = rep.judge(rep.experiment("diffq-fig2"), fake({
        "tcp-sack": {1: [5e4, 1.2e6, 1.2e6]},
        "diffq-tcp": {1: [1e4, 1e6, 1e6]}, "diffq-udp": {1: [1e4, 1e6, 1e6]}}))
    assert [v.holds for v in unfair] == [True, False, False]


def test_the_asymmetry_claims_follow_their_medians():
    judge = lambda e, z: rep.judge(rep.experiment("dpclo-fig5a"), fake({  # noqa: E731
        "dpclo-80211e": {s: [a, 1e6] for s, a in enumerate(e, 1)},
        "dpclo-zmacplus": {s: [a, 1e6] for s, a in enumerate(z, 1)}}))
    held = judge([1e3, 2e4, 5e3], [5e5, 4e5, 9e5])
    assert [v.holds for v in held] == [True, True]
    # Both MACs even: 802.11e does not starve a flow, and ZMAC+ is not the more even.
    even = judge([9e5, 8e5, 9.5e5], [5e5, 4e5, 9e5])
    assert [v.holds for v in even] == [False, False]


def test_the_many_to_many_run_judges_fig_9_by_path_length_too():
    def sweep(dpclo_long: float) -> FakeSweep:
        # Per stack and seed: flows of 1, 2, 4 and 5 hops; TCP's long flows starve.
        rates = {"tcp-sack": [4e5, 3e5, 1e3, 2e3], "tcp-few": [4e5, 3e5, 1e3, 2e3],
                 "dpclo-zmacplus": [5e4, 5e4, dpclo_long, dpclo_long]}
        f = fake({s: {1: r} for s, r in rates.items()})
        f.flows["hops"] = [1, 2, 4, 5] * 3
        f.flows["delay_mean_s"] = 0.5
        return f

    flat = rep.judge(rep.experiment("dpclo-fig8"), sweep(4e4))
    fig9 = [v for v in flat if "Fig. 9" in v.claim]
    assert len(fig9) == 1 and "many-to-many" in fig9[0].claim and fig9[0].holds
    # DPCLO's long flows starving as TCP's do (short/long 250 against TCP's 233): it does not hold.
    steep = [v for v in rep.judge(rep.experiment("dpclo-fig8"), sweep(2e2)) if "Fig. 9" in v.claim]
    assert steep[0].holds is False


@pytest.mark.slow
def test_a_quick_reproduction_runs_writes_its_claims_and_figure(tmp_path):
    pytest.importorskip("dask")
    pytest.importorskip("matplotlib")
    out = tmp_path / "clap"
    proc = subprocess.run(
        [sys.executable, "-m", "xlayer", "reproduce", "clap-1hop", "--quick", "--workers", "1",
         "--out", str(out), "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    [doc] = json.loads(proc.stdout)
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert doc["claims"] == claims and len(claims) == 1
    assert set(claims[0]) == {"claim", "criterion", "measured", "holds"}
    assert (out / "clap-1hop.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The slides' claim (CLAP well ahead of TCP-SACK on a clean hop) holds at half its size.
    assert claims[0]["holds"] is True, claims[0]
    # Run again: the sweep folder is resumed, nothing runs twice, the verdict is the same.
    again = subprocess.run(
        [sys.executable, "-m", "xlayer", "reproduce", "clap-1hop", "--quick", "--workers", "1",
         "--out", str(out), "--json", "--no-plot"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)[0]["claims"] == claims


# --- the README's claims table, generated from the recorded runs (issue 20 item 6) ----------

def _claims_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("claims_table", ROOT / "scripts" / "claims_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_experiment_has_a_recorded_run_and_the_readme_table_is_the_records():
    mod = _claims_script()
    for name, e in rep.EXPERIMENTS.items():
        path = mod.RECORDS / f"{name}.json"
        assert path.is_file(), f"{name}: no recorded claims (python scripts/claims_table.py --record ...)"
        doc = json.loads(path.read_text())
        assert doc["experiment"] == name and doc["claims"], name
        assert doc["runs"] == e.run_count(doc["quick"]), (name, "recorded from another size")
    assert mod.main(["--check"]) == 0, "README.md's claims table is stale: python scripts/claims_table.py"


def test_recording_a_run_puts_each_claim_and_its_verdict_in_the_table(tmp_path, monkeypatch):
    mod = _claims_script()
    monkeypatch.setattr(mod, "RECORDS", tmp_path / "claims")
    monkeypatch.setattr(mod, "README", tmp_path / "README.md")
    mod.README.write_text(f"# x\n\n{mod.BEGIN}\nSTALE ROW\n{mod.END}\n\ntail\n")
    run = tmp_path / "results" / "repro-clap-1hop"
    run.mkdir(parents=True)
    (run / "claims.json").write_text(json.dumps({
        "experiment": "clap-1hop", "quick": False, "runs": 6, "seeds": [1, 2, 3],
        "claims": [{"claim": "CLAP | beats TCP", "criterion": "2x", "measured": "1.2x",
                    "holds": False},
                   {"claim": "second", "criterion": "c", "measured": "m", "holds": True}]}))
    assert mod.main(["--check"]) == 1  # the stale row is not the records' table
    assert mod.main(["--record", str(tmp_path / "results")]) == 0
    text = mod.README.read_text()
    assert text.startswith("# x\n\n") and text.endswith("\n\ntail\n") and "STALE ROW" not in text
    assert "1 of 2 claims hold in 1 experiments" in text
    assert "| `clap-1hop` (6 runs, seeds 1-3) | CLAP \\| beats TCP | 2x | 1.2x | **does not hold** |" in text
    assert "|  | second | c | m | holds |" in text
    assert "Not recorded yet: `diffq-fig2`" in text
    assert json.loads((mod.RECORDS / "clap-1hop.json").read_text())["recorded"]["date"]
    assert mod.main(["--check"]) == 0
    # Another experiment's claims under this name are refused, not recorded.
    (run / "claims.json").write_text(json.dumps({"experiment": "more-path", "claims": []}))
    with pytest.raises(SystemExit, match="more-path"):
        mod.main(["--record", str(tmp_path / "results"), "--only", "clap-1hop"])


def fake_testbed(rates: dict) -> FakeSweep:
    """rates: {stack: {flow count: {seed: [flow throughputs]}}}, as the diffq-testbed sweep."""
    runs, flows = [], []
    for stack, by_count in rates.items():
        for n, by_seed in by_count.items():
            for seed, values in by_seed.items():
                run = f"{stack}-{n}-{seed}"
                runs.append({"run": run, "stack": stack, "seed": seed, "status": "ok",
                             "flows_random.count": n})
                for i, v in enumerate(values):
                    flows.append({"run": run, "stack": stack, "seed": seed, "flow": i,
                                  "flows_random.count": n, "throughput_bps": float(v),
                                  "queue_drops": 0})
    return FakeSweep(pd.DataFrame(runs), pd.DataFrame(flows), list(rates))


def _testbed_runs(unfair: list, fair: list, fair_more: Optional[list] = None) -> dict:
    """Every stack of the diffq-testbed sweep with 4 and 8 flows, two seeds: the end-to-end
    stacks share as ``unfair`` (8 flows: four more starved ones), the DiffQ ones as ``fair``
    (8 flows: ``fair_more`` added, by default ``fair`` again)."""
    def by_count(x, more):
        return {4: {1: x, 2: x}, 8: {1: x + more, 2: x + more}}
    out = {s: by_count(unfair, [5e2] * 4) for s in ("tcp-sack", "tcp-few", "tfrc-ecn")}
    out.update({s: by_count(fair, fair if fair_more is None else fair_more) for s in ("diffq-tcp", "diffq-udp",
                                                  "diffq-tcp-literal", "diffq-udp-literal")})
    return out


def test_the_testbed_experiment_runs_every_stack_of_section_6_at_its_settings(monkeypatch):
    """DiffQ §6.1: 46 nodes, 802.11b at 11 Mbit/s without RTS/CTS, OLSR-ETX, 1400-byte packets,
    α = 0.01 and β = 0.5, one-minute runs; 4-32 flows, at least 10 scenarios each (issue 20)."""
    pytest.importorskip("dask")
    from xlayer.sweeps import load_sweep, plan_runs

    monkeypatch.chdir(ROOT)
    e = rep.experiment("diffq-testbed")
    assert {"tcp-sack", "tcp-few", "diffq-tcp", "tfrc-ecn", "diffq-udp"} <= set(e.stacks)
    assert e.grid["flows_random.count"] == [4, 8, 16, 32] and e.seeds[0] >= 10
    runs = plan_runs(load_sweep(e.sweep_spec(False)))
    for run in runs:
        sc = run.scenario
        assert sc["topology"]["count"] == 46 and sc["net"]["routing"] == "olsr"
        assert sc["radio"]["data_rate_mbps"] == 11.0 and sc["radio"]["rts_cts"] is False
        assert sc["flows_random"]["payload_bytes"] == 1400
        assert sc["duration_s"] - sc["flows_random"]["start_s"] == 60.0
        assert sc["warmup_s"] == sc["flows_random"]["start_s"]
        if run.stack.startswith("diffq"):
            d = sc["stack"]["diffq"]
            assert d["alpha_mbps"] == 0.01 and d["beta"] == 0.5
            assert d["hold_negative"] is (not run.stack.endswith("-literal"))


def test_the_testbed_claims_hold_on_fair_diffq_and_fail_when_diffq_is_no_better():
    e = rep.experiment("diffq-testbed")
    # End-to-end stacks: one flow takes the channel, one starves (< 1 kbit/s), five of eight
    # with 8 flows; DiffQ: medians far above theirs (6.8× / 13× at 4 / 8 flows, above half of
    # Table 3's 1.96 / 3.45), every flow served.
    unfair = [2e6, 2e4, 2e4, 5e2]
    fair = [2.5e5, 1.5e5, 1.2e5, 1.0e5]
    held = rep.judge(e, fake_testbed(_testbed_runs(unfair, fair)))
    by_claim = {v.claim: v for v in held}
    table3 = next(v for c, v in by_claim.items() if c.startswith("Table 3: DiffQ-TCP's"))
    assert table3.holds and "at 4 / 8 flows" in table3.measured
    assert any(c.startswith("Table 3: DiffQ-TCP (literal)") for c in by_claim)
    starve = next(v for c, v in by_claim.items() if c.startswith("Figs. 1 (b), 9 and 12: DiffQ-TCP "))
    assert starve.holds and "0% against TCP-SACK 62%" in starve.measured
    rescued = next(v for c, v in by_claim.items() if c.startswith("Fig. 12: the flows"))
    assert rescued.holds  # the starved pair gets 100 kbit/s under DiffQ-TCP
    # DiffQ no fairer than TCP-SACK (the same shares): every claim of DiffQ's advantage fails,
    # the literal variant's as well.
    same = rep.judge(e, fake_testbed(_testbed_runs(unfair, unfair, [5e2] * 4)))
    for v in same:
        if v.claim.startswith(("Table 3", "Fig. 11 (a)", "Fig. 11 (c)", "Figs. 1 (b)",
                               "Fig. 12", "Fig. 13: DiffQ-UDP (literal) achieves much",
                               "Fig. 13: DiffQ-UDP achieves much")):
            assert v.holds is False, v
    # The aggregate claim follows its criterion: DiffQ at a fifth of TCP's aggregate fails it.
    starved_agg = rep.judge(e, fake_testbed(_testbed_runs(unfair, [x / 5 for x in fair])))
    agg = next(v for v in starved_agg if v.claim.startswith("Fig. 11 (b): DiffQ-TCP's"))
    assert agg.holds is False
    json.dumps([v.as_dict() for v in held])  # the claims are JSON as claims.json holds them


@functools.lru_cache(maxsize=None)
def _testbed_rates(stack: str, n: int, seeds: range, duration_s: float = 40.0) -> List[List[float]]:
    """Each seed's flow throughputs on scenarios/diffq-testbed.toml under ``stack`` with ``n``
    random flows, the flows measured for ``duration_s`` less the 10-s start (cached: the tests
    below share their runs)."""
    import xlayer
    from xlayer.scenario import load_scenario, set_field

    out = []
    for seed in seeds:
        sc = load_scenario(SCENARIOS / "diffq-testbed.toml")
        for path, value in {"stack.preset": stack, "flows_random.count": n,
                            "duration_s": duration_s, "seed": seed}.items():
            set_field(sc, path, value)
        out.append([float(x) for x in xlayer.run(sc).flows["throughput_bps"]])
    return out


@pytest.mark.slow
def test_on_the_testbed_diffq_tcp_is_fairer_than_tcp_sack_and_its_median_flow_gains_with_flows():
    """DiffQ §6.3 at a small size (3 scenarios of 30-s flows, not 20 of a minute): Fig. 11 (a),
    DiffQ-TCP's mean Jain index above TCP-SACK's at 4 and at 32 flows; Table 3, the ratio of
    the mean per-run median flows above 1 at 32 flows and larger than at 4 (the document:
    1.96 at 4, 8.18 at 32). The sizes the document gives are judged by `xlayer reproduce
    diffq-testbed` (README, Validation)."""
    import statistics

    ratio = {}
    for n in (4, 32):
        tcp, dq = _testbed_rates("tcp-sack", n, range(1, 4)), _testbed_rates("diffq-tcp", n, range(1, 4))
        assert rep.mean([rep.jain(r) for r in dq]) > rep.mean([rep.jain(r) for r in tcp]), n
        ratio[n] = (rep.mean([statistics.median(r) for r in dq])
                    / rep.mean([statistics.median(r) for r in tcp]))
    assert ratio[32] > 1 and ratio[32] > ratio[4], ratio


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "DiffQ §6.3's sizes do not hold on the testbed network (README, Validation: 10 scenarios "
    "of a minute give a median ratio of 1.15 / 1.47 / 1.56 / 1.22 at 4 / 8 / 16 / 32 flows "
    "against Table 3's 1.96 / 3.45 / 4.35 / 8.18, and DiffQ-TCP's aggregate 0.53-0.32 of "
    "TCP-SACK's where the document has it comparable)"))
def test_on_the_testbed_diffq_tcp_reaches_table_3s_size_at_a_comparable_aggregate():
    """Table 3 at 32 flows, asked at half its size (8.18 / 2), and Fig. 11 (b): DiffQ-TCP's
    aggregate at least three quarters of TCP-SACK's (the document: "slightly less")."""
    import statistics

    tcp, dq = _testbed_rates("tcp-sack", 32, range(1, 4)), _testbed_rates("diffq-tcp", 32, range(1, 4))
    ratio = (rep.mean([statistics.median(r) for r in dq])
             / rep.mean([statistics.median(r) for r in tcp]))
    aggregate = rep.mean([sum(r) for r in dq]) / rep.mean([sum(r) for r in tcp])
    assert ratio >= 8.18 / 2 and aggregate >= 0.75, (ratio, aggregate)
