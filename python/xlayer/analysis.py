"""Analysis of a sweep: load it into pandas, group runs, means with 95 % confidence intervals,
and the names, units and number formats every output of xlayer shows.

    >>> from xlayer import analysis
    >>> s = analysis.load("results/sweep-mesh")
    >>> analysis.summarize(s)                       # mean and CI of each metric per group
    >>> analysis.stack_ratio(s, "rts", "dcf", "median_flow_throughput_bps")
    >>> analysis.label("aggregate_throughput_bps")  # 'Aggregate throughput (Mbit/s)'

The metrics of a run (columns of ``Sweep.runs``) are the summary's (``aggregate_throughput_bps``,
``jain_index``, ``log_utility``, ...) plus ``median_flow_throughput_bps``, the median of its
flows' throughputs.

**Confidence intervals** (:func:`mean_ci`) are intervals of the mean over the runs of a group
(its seeds) that stay inside the metric's range (:data:`FIELDS`): Student's t interval
``m ± t(0.975, n − 1) · s / √n`` for a metric without bounds (the log utility); for a
non-negative one (throughput, delay, counts) the log-transformed interval
``m · exp(± t · se / m)`` (the delta method on ln m, ``se = s / √n``), which never goes below
zero; for one in [0, 1] (Jain's index, delivery ratio) the logit-transformed interval
``expit(logit m ± t · se / (m (1 − m)))``, which stays inside [0, 1]. Both are asymmetric about
the mean, so they are reported as ``ci_low`` and ``ci_high``. A bootstrap percentile interval
was not chosen: with the 3-5 seeds of a typical sweep it cannot reach beyond the values seen and
covers far less than 95 %. NaN bounds for a group of one run; a group whose runs are all equal
has the interval [m, m].

**Units and numbers** (:func:`label`, :func:`display_unit`, :func:`format_value`,
:func:`format_interval`) are those of the command line: aggregate throughput in Mbit/s, a
flow's throughput in kbit/s, delays in ms, three significant digits (all the digits of an
integer part), counts as integers — used alike by the CLI, the plots and the report.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from xlayer._fields import (  # noqa: F401 - re-exported: this module is their public home
    FIELDS,
    Field,
    INF,
    _decimals,
    _missing,
    display_unit,
    field_info,
    format_number,
    format_value,
    label,
)
from xlayer.store import SweepStore

__all__ = ["Sweep", "load", "summarize", "stack_ratio", "mean_ci", "METRICS", "FIELDS",
           "Field", "field_info", "label", "display_unit", "format_number", "format_value",
           "format_interval", "interval_parts", "order_rows", "summary_table", "stack_order"]

PathLike = Union[str, "os.PathLike[str]"]

#: The metrics :func:`summarize` reports by default.
METRICS = ("aggregate_throughput_bps", "jain_index", "log_utility", "median_flow_throughput_bps")


def format_interval(name: str, mean: Any, low: Any, high: Any,
                    unit: Optional[Tuple[str, float]] = None, with_unit: bool = False,
                    digits: int = 3) -> str:
    """``mean [low, high]`` in the display unit, the bounds with the mean's decimals:
    ``3.99 [2.10, 5.88]``; the mean alone when the bounds are unknown (one run)."""
    if _missing(mean):
        return "—"
    shown = (unit if unit is not None else display_unit(name, mean))[0]
    text, bounds = interval_parts(name, mean, low, high, unit, digits)
    if bounds:
        text = f"{text} [{bounds[0]}, {bounds[1]}]"
    return f"{text} {shown}" if with_unit and shown else text


def interval_parts(name: str, mean: Any, low: Any, high: Any,
                   unit: Optional[Tuple[str, float]] = None,
                   digits: int = 3) -> Tuple[str, Optional[Tuple[str, str]]]:
    """``(mean, (low, high))`` as :func:`format_interval` writes them (``None`` for unknown
    bounds), for tables that lay the interval out themselves."""
    if _missing(mean):
        return "—", None
    factor = (unit if unit is not None else display_unit(name, mean))[1]
    m = float(mean) * factor
    decimals: Optional[int] = _decimals(m, digits)
    if abs(m) < 1e-4 and m != 0:
        decimals = None
    text = format_number(m, digits, decimals)
    if _missing(low) or _missing(high):
        return text, None
    return text, (format_number(float(low) * factor, digits, decimals),
                  format_number(float(high) * factor, digits, decimals))


# ----------------------------------------------------------------------------------------------
# Loading a sweep


@dataclass
class Sweep:
    """A sweep loaded from its folder: one row per run, one row per flow, and the plan.

    ``stacks`` are in the order the sweep file (or ``--stacks``) gives them; every table and
    plot of xlayer keeps that order."""

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

    def __repr__(self) -> str:
        counts = self.runs["status"].value_counts().to_dict() if len(self.runs) else {}
        return (f"<Sweep {self.plan.get('name', self.folder.name)!r} runs={len(self.runs)} "
                f"ok={counts.get('ok', 0)} failed={counts.get('failed', 0)} "
                f"stacks={self.stacks} swept={self.swept} folder={str(self.folder)!r}>")

    def _repr_html_(self) -> str:
        """Jupyter's view: what ran, and the mean and 95 % interval of the main metrics per
        stack and swept values."""
        esc = html.escape
        counts = self.runs["status"].value_counts().to_dict() if len(self.runs) else {}
        planned = len(self.plan.get("runs", [])) or len(self.runs)
        head = (f"<p><b>xlayer sweep {esc(str(self.plan.get('name', self.folder.name)))}</b>: "
                f"{counts.get('ok', 0)} of {planned} runs finished, "
                f"{counts.get('failed', 0)} failed; stacks {esc(', '.join(self.stacks))}"
                + (f"; swept {esc(', '.join(self.swept))}" if self.swept else "")
                + f"; folder <code>{esc(str(self.folder))}</code></p>")
        table = summary_table(self)
        if table.empty:
            return head
        cols = list(table.columns)
        rows = "".join("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in row) + "</tr>"
                       for row in table.itertuples(index=False))
        return (head + "<table><thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols)
                + f"</tr></thead><tbody>{rows}</tbody></table>"
                "<p><small>mean [95 % confidence interval] over seeds</small></p>")


def load(folder: PathLike, rebuild: bool = True) -> Sweep:
    """Loads a sweep folder. With ``rebuild`` (the default) the combined tables are brought up
    to date first — rebuilt from the run folders (and written back) when a run finished or
    failed since they were built, read as they are otherwise — so an interrupted sweep loads
    what it finished; without it runs.parquet and flows.parquet are read as they are."""
    from xlayer._extras import require

    store = SweepStore(folder)
    if not store.is_sweep_folder():
        raise FileNotFoundError(f"{folder}: not an xlayer sweep folder (no sweep.json)")
    require("sweep", "reading a sweep folder", ("pyarrow",))
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
    return Sweep(folder=Path(folder), runs=runs, flows=flows, swept=list(plan.get("swept", [])),
                 stacks=stack_order(plan, runs), plan=plan)


def stack_order(plan: Mapping[str, Any], runs: Optional[pd.DataFrame] = None) -> List[str]:
    """The stacks in the user's order: ``stack_order`` of sweep.json, else the order in which
    the planned runs name them (the plan lists runs stack by stack as the file gives them;
    sweep.json's ``stacks`` table itself is written with sorted keys), else the runs table's."""
    order = plan.get("stack_order")
    if isinstance(order, list) and order:
        return [str(s) for s in order]
    seen: Dict[str, None] = {}
    for r in plan.get("runs", []):
        seen.setdefault(str(r.get("stack")), None)
    if seen:
        return list(seen)
    if isinstance(plan.get("stacks"), dict) and plan["stacks"]:
        return list(plan["stacks"])
    if runs is not None and "stack" in runs.columns:
        return list(dict.fromkeys(runs["stack"].astype(str)))
    return []


def _with_median_flow(runs: pd.DataFrame, flows: pd.DataFrame) -> pd.DataFrame:
    runs = runs.copy()
    if flows.empty or "throughput_bps" not in flows.columns:
        runs["median_flow_throughput_bps"] = np.nan
        return runs
    med = flows.groupby("run")["throughput_bps"].median()
    runs["median_flow_throughput_bps"] = runs["run"].map(med).astype(float)
    return runs


# ----------------------------------------------------------------------------------------------
# Statistics


def _t_quantile(p: float, dof: int) -> float:
    # scipy.special (a quarter of a second to import) rather than scipy.stats (a second).
    from xlayer._extras import require

    require("sweep", "confidence intervals (xlayer.analysis)", ("scipy",))
    from scipy.special import stdtrit

    return float(stdtrit(dof, p))


def mean_ci(values: Sequence[float], confidence: float = 0.95, lower: float = -INF,
            upper: float = INF) -> Dict[str, Any]:
    """``{"mean", "ci_low", "ci_high", "ci_half", "std", "n", "method"}`` of the finite values.

    The interval stays inside [``lower``, ``upper``], the quantity's range (see the module doc):
    ``method`` is ``"t"`` (no bound: Student's t interval, symmetric), ``"log"`` (one bound: the
    log-transformed interval of the distance to it) or ``"logit"`` (two bounds: the
    logit-transformed interval), each from Student's t quantile with n − 1 degrees of freedom.
    ``ci_half`` is half the interval's width, ``(ci_high − ci_low) / 2``, the ± of a symmetric
    interval. Values outside the range given fall back to the t interval. NaN bounds when fewer
    than two values."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    n = int(x.size)
    nan = float("nan")
    out: Dict[str, Any] = {"mean": nan, "ci_low": nan, "ci_high": nan, "ci_half": nan,
                           "std": nan, "n": n, "method": "t"}
    if n == 0:
        return out
    mean = float(x.mean())
    out["mean"] = mean
    bounded_low, bounded_high = math.isfinite(lower), math.isfinite(upper)
    inside = bool(np.all(x >= lower) and np.all(x <= upper))
    method = "t"
    if inside and bounded_low and bounded_high:
        method = "logit"
    elif inside and (bounded_low or bounded_high):
        method = "log"
    out["method"] = method
    if n < 2:
        return out
    std = float(x.std(ddof=1))
    out["std"] = std
    t = _t_quantile(0.5 + confidence / 2, n - 1)
    se = std / math.sqrt(n)
    if std == 0.0:
        low = high = mean
    elif method == "t":
        low, high = mean - t * se, mean + t * se
    elif method == "log":
        # distance to the bound, d = m - lower (or upper - m): d · exp(± t · se / d)
        d = mean - lower if bounded_low else upper - mean
        if d <= 0:
            low = high = mean
        else:
            f = math.exp(min(t * se / d, 700.0))
            near, far = d / f, d * f
            low, high = (lower + near, lower + far) if bounded_low else (upper - far,
                                                                          upper - near)
    else:
        width = upper - lower
        p = (mean - lower) / width
        if p <= 0 or p >= 1:
            low = high = mean
        else:
            centre = math.log(p / (1 - p))
            spread = t * (se / width) / (p * (1 - p))
            lo_p, hi_p = _expit(centre - spread), _expit(centre + spread)
            low, high = lower + lo_p * width, lower + hi_p * width
    out.update({"ci_low": low, "ci_high": high, "ci_half": (high - low) / 2})
    return out


def _expit(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def order_rows(df: pd.DataFrame, sweep: Sweep) -> pd.DataFrame:
    """``df``'s rows in the sweep's order — grid points as the file lists their values, stacks
    as the user named them — keeping the order of rows that tie (a stable sort)."""
    if df.empty:
        return df
    keys = []
    grid = sweep.plan.get("grid", {}) if isinstance(sweep.plan.get("grid"), dict) else {}
    for path in sweep.swept:
        if path in df.columns:
            values = list(grid.get(path, []))
            keys.append(df[path].map(lambda v, values=values: _position(values, v)))
    if "stack" in df.columns:
        keys.append(df["stack"].map(lambda v: _position(sweep.stacks, v)))
    if not keys:
        return df
    order = pd.DataFrame({f"k{i}": k.to_numpy() for i, k in enumerate(keys)})
    positions = order.sort_values(list(order.columns), kind="stable").index
    return df.iloc[list(positions)].reset_index(drop=True)


def _position(values: Sequence[Any], value: Any) -> int:
    for i, v in enumerate(values):
        if v == value or str(v) == str(value):
            return i
    return len(values)


def summarize(
    sweep: Sweep,
    metrics: Sequence[str] = METRICS,
    by: Optional[Sequence[str]] = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per group (default: stack and every swept path) and metric: ``mean``,
    ``ci_low``, ``ci_high``, ``ci_half``, ``std``, ``n`` (runs) and ``method`` (of the interval,
    from the metric's range: see :func:`mean_ci`), over the finished runs; groups in the sweep's
    order (grid values as listed, stacks as named)."""
    groups = list(by) if by is not None else ["stack"] + sweep.swept
    ok = sweep.ok
    rows: List[Dict[str, Any]] = []
    columns = groups + ["metric", "mean", "ci_low", "ci_high", "ci_half", "std", "n", "method"]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    grouped = ok.groupby(groups, sort=False, dropna=False) if groups else [((), ok)]
    for key, df in grouped:
        key = key if isinstance(key, tuple) else (key,)
        for metric in metrics:
            info = field_info(metric)
            upper = info.upper
            if math.isinf(upper) and info.upper_field and info.upper_field in df:
                bound = pd.to_numeric(df[info.upper_field], errors="coerce").max()
                upper = float(bound) if pd.notna(bound) and bound > info.lower else upper
            row = dict(zip(groups, key))
            row["metric"] = metric
            row.update(mean_ci(df[metric].tolist() if metric in df else [], confidence,
                               info.lower, upper))
            rows.append(row)
    return order_rows(pd.DataFrame(rows, columns=columns), sweep)


def summary_table(sweep: Sweep, metrics: Sequence[str] = METRICS) -> pd.DataFrame:
    """The summary as people read it: one row per group, a column per metric headed by its
    name and unit (``Aggregate throughput (Mbit/s)``), cells ``mean [low, high]``, then
    ``Runs``."""
    table = summarize(sweep, metrics)
    keys = ["stack"] + sweep.swept
    if table.empty:
        return pd.DataFrame()
    units = {m: display_unit(m, sweep.ok[m] if m in sweep.ok else None) for m in metrics}
    out_rows = []
    for key, df in table.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        by_metric = df.set_index("metric")
        row: Dict[str, Any] = {("Stack" if k == "stack" else k): v for k, v in zip(keys, key)}
        for m in metrics:
            r = by_metric.loc[m]
            row[label(m, unit=units[m][0])] = format_interval(m, r["mean"], r["ci_low"],
                                                              r["ci_high"], units[m])
        row["Runs"] = int(by_metric["n"].max())
        out_rows.append(row)
    return pd.DataFrame(out_rows)


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
    stacks paired by seed; a ratio of non-negative metrics is non-negative, so its interval is
    the log-transformed one of :func:`mean_ci`), and ``n``, the pairs — e.g. DiffQ's Table 3
    quantity with ``metric = "median_flow_throughput_bps"``.
    """
    for s in (a, b):
        if s not in set(sweep.runs["stack"]):
            raise KeyError(f"no stack {s!r} in the sweep; stacks: {sweep.stacks}")
    ok = sweep.ok
    keys = sweep.swept + ["seed"]
    left = ok[ok["stack"] == a][keys + [metric]].rename(columns={metric: "a"})
    right = ok[ok["stack"] == b][keys + [metric]].rename(columns={metric: "b"})
    paired = left.merge(right, on=keys)
    info = field_info(metric)
    ratio_lower = 0.0 if info.lower >= 0 else -INF
    rows = []
    grouped = paired.groupby(sweep.swept, sort=False) if sweep.swept else [((), paired)]
    for key, df in grouped:
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(sweep.swept, key))
        mean_a, mean_b = float(df["a"].mean()), float(df["b"].mean())
        row.update({"metric": metric, "stack_a": a, "stack_b": b, "mean_a": mean_a,
                    "mean_b": mean_b, "ratio": mean_a / mean_b if mean_b else np.nan})
        per_seed = (df["a"] / df["b"]).replace([np.inf, -np.inf], np.nan)
        ci = mean_ci(per_seed.tolist(), confidence, lower=ratio_lower)
        row.update({"ratio_mean": ci["mean"], "ratio_ci_low": ci["ci_low"],
                    "ratio_ci_high": ci["ci_high"], "n": ci["n"]})
        rows.append(row)
    out = pd.DataFrame(rows)
    return order_rows(out, sweep) if len(out) else out


def describe_values(values: Dict[str, Any]) -> str:
    """``k=v, k=v`` for labels."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in values.items())
