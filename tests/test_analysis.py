"""xlayer.analysis: confidence intervals, grouping, stack ratios, loading a sweep folder."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xlayer import analysis
from xlayer.analysis import Sweep, mean_ci, stack_ratio, summarize


def test_confidence_interval_is_students_t():
    ci = mean_ci([1.0, 2.0, 3.0, 4.0])
    # t(0.975, 3) = 3.182446305284263; s = sqrt(5/3); half = t * s / 2
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert ci["mean"] == pytest.approx(2.5)
    assert ci["ci_half"] == pytest.approx(half, rel=1e-9)
    assert ci["ci_low"] == pytest.approx(2.5 - half) and ci["ci_high"] == pytest.approx(2.5 + half)
    assert ci["n"] == 4


def test_confidence_interval_of_one_run_is_unknown_and_nan_is_ignored():
    one = mean_ci([7.0, float("nan")])
    assert one["mean"] == 7.0 and one["n"] == 1 and math.isnan(one["ci_half"])
    assert mean_ci([])["n"] == 0


def synthetic_sweep() -> Sweep:
    """Two stacks x two flow counts x three seeds; stack b is exactly twice stack a."""
    rows, flows = [], []
    for count in (2, 4):
        for stack, factor in (("a", 1.0), ("b", 2.0)):
            for seed in (1, 2, 3):
                run = f"{stack}{count}{seed}"
                base = 1e6 * count + 1e5 * seed
                rows.append({"run": run, "stack": stack, "seed": seed, "n.count": count,
                             "status": "ok", "error": None,
                             "aggregate_throughput_bps": factor * base,
                             "jain_index": 0.5, "log_utility": 10.0 * factor})
                for flow in range(count):
                    flows.append({"run": run, "stack": stack, "seed": seed, "n.count": count,
                                  "flow": flow, "hops": 1 + flow,
                                  "throughput_bps": factor * (flow + 1) * 1e5 * seed})
    runs = pd.DataFrame(rows)
    fl = pd.DataFrame(flows)
    runs["median_flow_throughput_bps"] = runs["run"].map(fl.groupby("run")["throughput_bps"]
                                                         .median())
    return Sweep(folder=Path("."), runs=runs, flows=fl, swept=["n.count"], stacks=["a", "b"])


def test_summarize_groups_by_stack_and_swept_values():
    s = synthetic_sweep()
    table = summarize(s)
    assert len(table) == 2 * 2 * len(analysis.METRICS)
    row = table[(table["stack"] == "b") & (table["n.count"] == 4)
                & (table["metric"] == "aggregate_throughput_bps")].iloc[0]
    expected = mean_ci([2 * (4e6 + 1e5 * seed) for seed in (1, 2, 3)])
    assert row["mean"] == pytest.approx(expected["mean"])
    assert row["ci_half"] == pytest.approx(expected["ci_half"])
    assert row["n"] == 3


def test_failed_runs_are_left_out_of_the_statistics():
    s = synthetic_sweep()
    s.runs.loc[0, "status"] = "failed"
    s.runs.loc[0, "aggregate_throughput_bps"] = np.nan
    table = summarize(s, ["aggregate_throughput_bps"])
    assert table.iloc[0]["n"] == 2


def test_stack_ratio_pairs_runs_by_seed():
    ratio = stack_ratio(synthetic_sweep(), "b", "a", "median_flow_throughput_bps")
    assert list(ratio["n.count"]) == [2, 4]
    assert ratio["ratio"].tolist() == pytest.approx([2.0, 2.0])
    assert ratio["ratio_mean"].tolist() == pytest.approx([2.0, 2.0])
    assert ratio["n"].tolist() == [3, 3]
    with pytest.raises(KeyError, match="no stack"):
        stack_ratio(synthetic_sweep(), "b", "tcp")


def test_median_flow_throughput_comes_from_the_flow_table(tmp_path):
    from xlayer.analysis import _with_median_flow

    s = synthetic_sweep()
    again = _with_median_flow(s.runs.drop(columns=["median_flow_throughput_bps"]), s.flows)
    one = again[again["run"] == "a43"].iloc[0]
    # flows of run a43: (1, 2, 3, 4) * 3e5 -> median 7.5e5
    assert one["median_flow_throughput_bps"] == pytest.approx(7.5e5)


def test_load_refuses_a_folder_that_is_not_a_sweep(tmp_path):
    with pytest.raises(FileNotFoundError, match="not an xlayer sweep"):
        analysis.load(tmp_path)
