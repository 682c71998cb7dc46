"""``xlayer reproduce``: the documents' experiments, one command each (issue 20 item 6).

The documents' claims themselves are asserted by the Rust tests that name them (README,
Validation); here: every experiment's sweep is valid, a claim is judged by its criterion (one
that fails is reported as not holding, not hidden), and one experiment runs end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List

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
