"""Analysis of a sweep: load it into pandas, group runs, means with 95 % confidence intervals.

    >>> from xlayer import analysis
    >>> s = analysis.load("results/sweep-mesh")
    >>> analysis.summarize(s)                       # mean and CI of each metric per group
    >>> analysis.stack_ratio(s, "rts", "dcf", "median_flow_throughput_bps")

The metrics of a run (columns of ``Sweep.runs``) are the summary's (``aggregate_throughput_bps``,
``jain_index``, ``log_utility``, ...) plus ``median_flow_throughput_bps``, the median of its
flows' throughputs. A confidence interval is Student's t interval of the mean over the runs of a
group (its seeds): mean ± t(0.975, n − 1) · s / √n; NaN for a group of one run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import pandas as pd

from xlayer.store import SweepStore

__all__ = ["Sweep", "load", "summarize", "stack_ratio", "mean_ci", "METRICS"]

PathLike = Union[str, "os.PathLike[str]"]

#: The metrics :func:`summarize` reports by default.
METRICS = ("aggregate_throughput_bps", "jain_index", "log_utility", "median_flow_throughput_bps")


@dataclass
class Sweep:
    """A sweep loaded from its folder: one row per run, one row per flow, and the plan."""

    folder: Path
    runs: pd.DataFrame
    flows: pd.DataFrame
    swept: List[str]
    stacks: List[str]
    plan: Dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def ok(self) -> pd.DataFrame:
        """The finished runs (status ``ok``)."""
        return self.runs[self.runs["status"] == "ok"]


def load(folder: PathLike, rebuild: bool = True) -> Sweep:
    """Loads a sweep folder. With ``rebuild`` (the default) the combined tables are brought up
    to date first — rebuilt from the run folders (and written back) when a run finished or
    failed since they were built, read as they are otherwise — so an interrupted sweep loads
    what it finished; without it runs.parquet and flows.parquet are read as they are."""
    store = SweepStore(folder)
    if not store.is_sweep_folder():
        raise FileNotFoundError(f"{folder}: not an xlayer sweep folder (no sweep.json)")
    plan = store.plan()
    if rebuild:
        try:
            runs, flows = store.current_tables()
        except OSError:  # a read-only folder: the tables in memory only
            runs, flows = store.tables()
    else:
        runs = pd.read_parquet(Path(folder) / "runs.parquet")
        flows = pd.read_parquet(Path(folder) / "flows.parquet")
    runs = _with_median_flow(runs, flows)
    stacks = list(plan.get("stacks", {})) or sorted(runs["stack"].unique())
    return Sweep(folder=Path(folder), runs=runs, flows=flows, swept=list(plan.get("swept", [])),
                 stacks=stacks, plan=plan)


def _with_median_flow(runs: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    runs = runs.copy()
    if flows.empty or "throughput_bps" not in flows.columns:
        runs["median_flow_throughput_bps"] = np.nan
        return runs
    med = flows.groupby("run")["throughput_bps"].median()
    runs["median_flow_throughput_bps"] = runs["run"].map(med).astype(float)
    return runs


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> Dict[str, float]:
    """``{"mean", "ci_low", "ci_high", "ci_half", "std", "n"}`` of the finite values: Student's
    t interval of the mean (NaN bounds when fewer than two values)."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return {"mean": np.nan, "ci_low": np.nan, "ci_high": np.nan, "ci_half": np.nan,
                "std": np.nan, "n": 0}
    mean = float(x.mean())
    if n < 2:
        return {"mean": mean, "ci_low": np.nan, "ci_high": np.nan, "ci_half": np.nan,
                "std": np.nan, "n": n}
    std = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * std / np.sqrt(n))
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half, "ci_half": half,
            "std": std, "n": n}


def summarize(
    sweep: Sweep,
    metrics: Sequence[str] = METRICS,
    by: Optional[Sequence[str]] = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per group (default: stack and every swept path) and metric: ``mean``,
    ``ci_low``, ``ci_high``, ``ci_half``, ``std`` and ``n`` (runs), over the finished runs."""
    groups = list(by) if by is not None else ["stack"] + sweep.swept
    ok = sweep.ok
    rows: List[Dict[str, Any]] = []
    if ok.empty:
        return pd.DataFrame(columns=groups + ["metric", "mean", "ci_low", "ci_high", "ci_half",
                                              "std", "n"])
    grouped = ok.groupby(groups, sort=False, dropna=False) if groups else [((), ok)]
    for key, df in grouped:
        key = key if isinstance(key, tuple) else (key,)
        for metric in metrics:
            row = dict(zip(groups, key))
            row["metric"] = metric
            row.update(mean_ci(df[metric].tolist() if metric in df else [], confidence))
            rows.append(row)
    return pd.DataFrame(rows)


def stack_ratio(
    sweep: Sweep,
    a: str,
    b: str,
    metric: str = "median_flow_throughput_bps",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The ratio ``metric(a) / metric(b)`` of two stacks at each grid point.

    Columns: the swept paths, ``mean_a``, ``mean_b``, ``ratio`` (of the means), and
    ``ratio_mean``, ``ratio_ci_low``, ``ratio_ci_high`` of the per-seed ratios (runs of the two
    stacks paired by seed), e.g. DiffQ's Table 3 quantity with ``metric =
    "median_flow_throughput_bps"``.
    """
    for s in (a, b):
        if s not in set(sweep.runs["stack"]):
            raise KeyError(f"no stack {s!r} in the sweep; stacks: {sweep.stacks}")
    ok = sweep.ok
    keys = sweep.swept + ["seed"]
    left = ok[ok["stack"] == a][keys + [metric]].rename(columns={metric: "a"})
    right = ok[ok["stack"] == b][keys + [metric]].rename(columns={metric: "b"})
    paired = left.merge(right, on=keys)
    rows = []
    grouped = paired.groupby(sweep.swept, sort=False) if sweep.swept else [((), paired)]
    for key, df in grouped:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(sweep.swept, key))
        mean_a, mean_b = float(df["a"].mean()), float(df["b"].mean())
        row.update({"metric": metric, "stack_a": a, "stack_b": b, "mean_a": mean_a,
                    "mean_b": mean_b, "ratio": mean_a / mean_b if mean_b else np.nan})
        per_seed = (df["a"] / df["b"]).replace([np.inf, -np.inf], np.nan)
        ci = mean_ci(per_seed.tolist(), confidence)
        row.update({"ratio_mean": ci["mean"], "ratio_ci_low": ci["ci_low"],
                    "ratio_ci_high": ci["ci_high"], "n": ci["n"]})
        rows.append(row)
    return pd.DataFrame(rows)


def describe_values(values: Dict[str, Any]) -> str:
    """``k=v, k=v`` for labels."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in values.items())
