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
    # a throughput is never negative: its interval is the log-transformed one
    expected = mean_ci([2 * (4e6 + 1e5 * seed) for seed in (1, 2, 3)], lower=0.0)
    assert row["mean"] == pytest.approx(expected["mean"])
    assert row["ci_low"] == pytest.approx(expected["ci_low"])
    assert row["ci_high"] == pytest.approx(expected["ci_high"])
    assert row["n"] == 3 and row["method"] == "log"


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


# ----------------------------------------------------------------------------------------------
# Intervals that respect the metric's range


def test_an_interval_of_a_non_negative_metric_never_goes_below_zero():
    values = [0.0, 0.0, 9e5]  # one seed carried traffic, two starved
    assert mean_ci(values)["ci_low"] < 0  # Student's t would say "negative throughput"
    ci = mean_ci(values, lower=0.0)
    assert ci["method"] == "log"
    assert ci["mean"] == pytest.approx(3e5)
    assert 0.0 <= ci["ci_low"] < ci["mean"] < ci["ci_high"]


def test_an_interval_of_a_metric_in_0_1_stays_inside_it():
    ci = mean_ci([1.0, 1.0, 0.4], lower=0.0, upper=1.0)
    assert ci["method"] == "logit"
    assert 0.0 <= ci["ci_low"] < ci["mean"] < ci["ci_high"] <= 1.0
    assert mean_ci([1.0, 1.0, 0.4])["ci_high"] > 1.0  # what a t interval would claim


def test_summarize_bounds_each_metric_by_its_range():
    s = synthetic_sweep()
    s.runs["jain_index"] = [1.0, 1.0, 0.3] * 4
    s.runs.loc[s.runs["stack"] == "a", "aggregate_throughput_bps"] = [0.0, 0.0, 5e6] * 2
    table = summarize(s)
    by = table.set_index(["stack", "n.count", "metric"])
    assert (table[table["metric"] != "log_utility"]["ci_low"] >= 0).all()
    assert (table[table["metric"] == "jain_index"]["ci_high"] <= 1).all()
    assert by.loc[("a", 2, "aggregate_throughput_bps"), "method"] == "log"
    assert by.loc[("a", 2, "jain_index"), "method"] == "logit"
    assert by.loc[("a", 2, "log_utility"), "method"] == "t"


def test_transformed_intervals_cover_the_mean_of_skewed_samples_95_percent_of_the_time():
    # Exponential per-seed throughputs, five seeds: the log interval keeps its promise where
    # the t interval covers under 90 % (and is below zero more than half the time).
    rng = np.random.default_rng(1)
    samples = [rng.exponential(1.0, 5) for _ in range(2000)]
    log_cover = np.mean([(c := mean_ci(x, lower=0.0))["ci_low"] <= 1.0 <= c["ci_high"]
                         for x in samples])
    t_cover = np.mean([(c := mean_ci(x))["ci_low"] <= 1.0 <= c["ci_high"] for x in samples])
    assert 0.92 <= log_cover <= 0.97
    assert t_cover < 0.9


def test_stack_ratio_interval_is_positive():
    s = synthetic_sweep()
    s.runs.loc[s.runs["stack"] == "b", "median_flow_throughput_bps"] = [1e5, 1e5, 9e5] * 2
    ratio = stack_ratio(s, "b", "a")
    assert (ratio["ratio_ci_low"] > 0).all()


# ----------------------------------------------------------------------------------------------
# The user's order


def test_groups_keep_the_users_stack_and_grid_order():
    s = synthetic_sweep()
    s.stacks = ["b", "a"]  # as the sweep file named them; the runs table lists "a" first
    s.plan = {"grid": {"n.count": [4, 2]}}
    table = summarize(s, ["jain_index"])
    assert list(zip(table["n.count"], table["stack"])) == [(4, "b"), (4, "a"), (2, "b"),
                                                           (2, "a")]


def test_a_loaded_sweep_lists_its_stacks_in_the_files_order_not_alphabetically(tmp_path):
    from xlayer.store import SweepStore

    store = SweepStore(tmp_path / "s")
    runs = [{"run": f"{st}{seed}", "stack": st, "seed": seed, "values": {}}
            for st in ("zeta", "alpha", "mid") for seed in (1, 2)]
    # An older sweep.json has no stack_order: the order of its planned runs is the user's.
    store.prepare({"name": "s", "swept": [], "stacks": {"zeta": {}, "alpha": {}, "mid": {}},
                   "runs": runs}, {})
    assert analysis.load(tmp_path / "s").stacks == ["zeta", "alpha", "mid"]
    assert analysis.stack_order({"stack_order": ["mid", "zeta"], "runs": runs}) == ["mid", "zeta"]


# ----------------------------------------------------------------------------------------------
# Names, units and numbers as the CLI shows them


def test_values_are_shown_in_the_clis_units_with_three_significant_digits():
    from xlayer.analysis import format_interval, format_number, format_value, label

    assert format_value("aggregate_throughput_bps", 3.988e6) == "3.99 Mbit/s"
    assert format_value("throughput_bps", 343555.6) == "344 kbit/s"
    assert format_value("delay_mean_s", 2.4261) == "2,426 ms"
    assert format_value("jain_index", 0.69412) == "0.694"
    assert format_value("sent", 1748) == "1,748" and format_value("starved_flows", 0) == "0"
    assert format_interval("aggregate_throughput_bps", 3.988e6, 1.2e6, 8.01e6) == \
        "3.99 [1.20, 8.01]"
    assert format_interval("jain_index", 0.5, float("nan"), float("nan")) == "0.500"
    assert label("aggregate_throughput_bps") == "Aggregate throughput (Mbit/s)"
    assert label("topology.spacing_m") == "topology.spacing_m (m)"
    assert label("throughput_bps", [2e3, 5e3], unit=None) == "Throughput (kbit/s)"
    assert format_number(1.7976931348623157e308) == "∞" and format_number(float("inf")) == "∞"
    assert format_number(1_000_000.0) == "1,000,000" and format_number(65535) == "65,535"
    assert format_number(float("nan")) == "—" and format_number(2.5e-6) == "2.50e-06"


def test_a_sweep_shows_itself_in_jupyter_as_a_table_of_its_groups():
    s = synthetic_sweep()
    s.plan = {"name": "demo", "runs": [{}] * len(s.runs)}
    page = s._repr_html_()
    assert "demo" in page and "<table>" in page and page.count("<tr>") == 1 + 4
    assert "Aggregate throughput (Mbit/s)" in page and "Jain" in page
    assert "stacks=['a', 'b']" in repr(s)


def test_starved_flows_are_bounded_by_the_runs_flows():
    s = synthetic_sweep()
    s.runs["starved_flows"] = [0, 1, 0] * 4
    s.runs["flows"] = 2
    table = summarize(s, ["starved_flows"])
    assert (table["ci_low"] >= 0).all() and (table["ci_high"] <= 2).all()
    assert set(table["method"]) == {"logit"}
