"""Plots of a sweep or of one run, drawn with matplotlib, written as PNG, SVG and PDF.

``xlayer plot DIR`` (or :func:`plot_folder`) writes into ``DIR/plots/``, each as ``.png``,
``.svg`` and ``.pdf`` (``--format`` for fewer; ``--dpi``, default 150, for the PNG's
resolution; ``--style`` for a matplotlib style):

    throughput_cdf          CDF of per-flow throughput, one curve per stack (a step at each
                            flow, from 0: one flow is one step)
    metrics_vs_<path>       sweep only, one per swept path: aggregate throughput, Jain's index,
                            log utility and median per-flow throughput against the swept value,
                            mean and 95 % confidence interval per stack (other swept paths
                            pooled); the intervals respect each metric's range
                            (:func:`xlayer.analysis.mean_ci`)
    metrics_by_stack        sweep without swept paths (what ``xlayer compare`` runs): the same
                            four metrics as one bar per stack with its 95 % interval
    scatter_<a>_vs_<b>      sweep with two stacks or more: per-flow throughput under stack a
                            against stack b, flows paired by swept values, seed and flow id
                            (DiffQ Fig. 12 style); a is the first stack, b each other one
    throughput_vs_hops      per-flow throughput against the flow's hop count (DPCLO Fig. 9 style)
    drops_vs_hops           the flows' packets lost to full queues, summed by the flows' hop
                            count, one bar per stack (DiffQ Fig. 15 style; for a sweep, the mean
                            per run); only when some queue dropped something
    topology                nodes, radio links shaded by their frame success probability, the
                            reception and carrier-sense ranges around the first flow's source,
                            each flow's route (side by side where flows share a link), wired
                            links, and wired-only nodes (an access point's servers) drawn apart
                            from the radio cell (for a sweep: its first finished run)
    throughput_timeseries   run folder with timeseries.csv (the scenario set
                            output.timeseries_bin_s): per-flow throughput over time, the ten
                            busiest flows (DiffQ Fig. 10 style)
    tcp_trace               run folder with tcp_trace.csv (output.tcp_trace): each TCP flow's
                            congestion window and slow-start threshold, smoothed RTT and RTO
                            over time, losses marked
    measured_vs_optimal     with ``--oracle`` (``oracle=True``), or for a sweep whose oracle
                            column ``xlayer compare``/``sweep`` left in oracle.json: each flow's
                            measured throughput against its rate in the proportional-fair
                            optimum (``xlayer.optimum``), one colour per stack, the diagonal
                            where they are equal

Stacks keep the order the sweep file (or ``--stacks``) gives them, and one colour each, in
every plot. Axis labels name the quantity and its unit in the units of the command line
(:func:`xlayer.analysis.label`). Counts (hops, flows) get integer ticks. ``<path>`` is the
swept path with characters other than letters, digits, ``_``, ``.`` and ``-`` replaced by ``_``.

Figures are :class:`matplotlib.figure.Figure` objects made without pyplot, so drawing them
changes no global matplotlib state (backend, open figures) of a notebook that imports this.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from xlayer._extras import require

require("plot", "plots and reports (xlayer plot, xlayer report, xlayer.plots)")
import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from xlayer.analysis import display_unit, field_info, label  # noqa: E402
from xlayer.errors import XlayerError  # noqa: E402
from xlayer.network import (MAX_MODEL_NODES, LinkModel, _wired_pairs,  # noqa: E402,F401
                            layout as _layout, link_model)
from xlayer.results import read_csv_table, read_json_object  # noqa: E402

if TYPE_CHECKING:  # matplotlib >= 3.8 names the line styles Line2D takes
    from matplotlib.typing import LineStyleType

__all__ = [
    "plot_folder",
    "plan_figures",
    "figures",
    "throughput_cdf",
    "metrics_vs",
    "metrics_by_stack",
    "stack_scatter",
    "throughput_vs_hops",
    "drops_vs_hops",
    "topology",
    "throughput_timeseries",
    "tcp_trace",
    "measured_vs_optimal",
    "FORMATS",
    "DEFAULT_DPI",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The formats :func:`plot_folder` can write, and writes by default.
FORMATS = ("png", "svg", "pdf")
#: Resolution of PNG files (dots per inch).
DEFAULT_DPI = 150

#: (metric column, panel title) of the metrics_vs_<path> and metrics_by_stack panels.
PANELS = (
    ("aggregate_throughput_bps", "aggregate throughput"),
    ("jain_index", "fairness"),
    ("log_utility", "log utility"),
    ("median_flow_throughput_bps", "median flow throughput"),
)

#: xlayer's look, under any --style: light grid, no top/right frame, reproducible SVG and PDF.
HOUSE_STYLE = {
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "legend.fontsize": 8,
    "font.size": 9,
    "axes.titlesize": 10,
    "figure.titlesize": 11,
    "svg.hashsalt": "xlayer",  # fixed ids: the same plot gives the same SVG
    "savefig.bbox": "tight",
}

#: Colours of the stacks, in the sweep's order (matplotlib's tab10, then tab20's others).
_PALETTE = [matplotlib.colormaps["tab10"](i) for i in range(10)] + [
    matplotlib.colormaps["tab20"](i) for i in range(1, 20, 2)]


def _colour(i: int) -> Any:
    return _PALETTE[i % len(_PALETTE)]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))


def _figure(width: float, height: float, rows: int = 1, cols: int = 1,
            **kwargs: Any) -> Tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(rows, cols, **kwargs)
    return fig, axes


def _groups(df: pd.DataFrame, by: Optional[str],
            order: Optional[Sequence[str]] = None) -> List[Tuple[str, pd.DataFrame, int]]:
    """``(name, rows, colour index)`` per value of ``by`` in ``order`` (then any others in order
    of appearance); one group named "flows" without ``by``."""
    if not by or by not in df.columns:
        return [("flows", df, 0)]
    present = list(dict.fromkeys(df[by].tolist()))
    names = [s for s in (order or []) if s in present] + [
        s for s in present if s not in (order or [])]
    return [(str(n), df[df[by] == n], (list(order).index(n) if order and n in order
                                        else i)) for i, n in enumerate(names)]


def _integer_axis(axis: Any, values: Sequence[float]) -> None:
    """Ticks at integers only; with few distinct values, a tick at each of them."""
    distinct = sorted({int(v) for v in values if v is not None and np.isfinite(v)})
    if 0 < len(distinct) <= 12:
        axis.set_ticks(distinct)
    else:
        axis.set_major_locator(MaxNLocator(integer=True))


def _flows_word(n: int) -> str:
    return f"{n} flow" if n == 1 else f"{n} flows"


# ----------------------------------------------------------------------------------------------
# The plots


def throughput_cdf(flows: pd.DataFrame, by: Optional[str] = "stack",
                   order: Optional[Sequence[str]] = None) -> Figure:
    """Empirical CDF of per-flow throughput, one curve per value of ``by`` (if present).

    Each curve starts at 0 (no flow below 0 bit/s) and rises by 1/n at each of its n flows, so
    a single flow is drawn as one step from 0 to 1; the flows themselves are marked when there
    are few."""
    unit = display_unit("throughput_bps", flows["throughput_bps"])
    fig, ax = _figure(6, 4)
    top = 0.0
    for name, df, colour in _groups(flows, by, order):
        x = np.sort(df["throughput_bps"].astype(float).to_numpy() * unit[1])
        x = x[np.isfinite(x)]
        if x.size == 0:
            continue
        top = max(top, float(x[-1]))
        y = np.arange(1, x.size + 1) / x.size
        xs = np.concatenate([[min(0.0, float(x[0]))], x])
        ys = np.concatenate([[0.0], y])
        line = ax.step(xs, ys, where="post", color=_colour(colour),
                       label=f"{name} ({_flows_word(x.size)})")[0]
        if x.size <= 30:
            ax.plot(x, y, "o", markersize=3.5, color=line.get_color())
    right = top * 1.08 if top > 0 else 1.0
    for line in list(ax.get_lines()):
        if line.get_linestyle() != "None":  # extend each curve at 1 to the right edge
            xd, yd = line.get_xdata(), line.get_ydata()
            line.set_data(np.append(xd, right), np.append(yd, yd[-1]))
    ax.set_xlim(0, right)
    ax.set_ylim(0, 1.03)
    ax.set_xlabel(label("throughput_bps", unit=unit[0]).replace("Throughput", "Per-flow "
                                                                 "throughput"))
    ax.set_ylabel("Fraction of flows")
    ax.legend(loc="lower right")
    ax.set_title("CDF of per-flow throughput")
    return fig


def _swept_positions(sweep: Any, path: str) -> Tuple[List[Any], Dict[Any, float], bool]:
    """The swept values in the sweep file's order, their x positions, and whether numeric."""
    grid = sweep.plan.get("grid", {}) if isinstance(sweep.plan.get("grid"), dict) else {}
    present = list(dict.fromkeys(sweep.ok[path].tolist()))
    values = [v for v in grid.get(path, []) if v in present] or present
    values += [v for v in present if v not in values]
    numeric = all(isinstance(v, (int, float, np.integer, np.floating))
                  and not isinstance(v, (bool, np.bool_)) for v in values)
    positions = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
    return values, positions, numeric


def _error_bars(df: pd.DataFrame, factor: float) -> np.ndarray:
    """``[[below], [above]]`` of asymmetric intervals; 0 where unknown (one run)."""
    mean = df["mean"].to_numpy(dtype=float)
    low = df["ci_low"].to_numpy(dtype=float)
    high = df["ci_high"].to_numpy(dtype=float)
    below = np.where(np.isfinite(low), mean - low, 0.0) * factor
    above = np.where(np.isfinite(high), high - mean, 0.0) * factor
    return np.vstack([np.maximum(below, 0.0), np.maximum(above, 0.0)])


def _metric_axis(ax: Any, metric: str, unit: Tuple[str, float], title: str) -> None:
    ax.set_ylabel(label(metric, unit=unit[0]))
    ax.set_title(title)
    info = field_info(metric)
    if info.lower == 0.0 and info.upper == 1.0:
        ax.set_ylim(0, 1.04)
    elif info.lower == 0.0:
        ax.set_ylim(bottom=0)


def metrics_vs(sweep: Any, path: str) -> Figure:
    """The four run metrics against swept ``path``: mean and 95 % confidence interval (which
    respects each metric's range), one line per stack in the sweep's order."""
    from xlayer.analysis import summarize

    metrics = [m for m, _ in PANELS]
    table = summarize(sweep, metrics, by=["stack", path])
    values, positions, numeric = _swept_positions(sweep, path)
    fig, axes = _figure(10, 7, 2, 2)
    stacks = [s for s in sweep.stacks if s in set(table["stack"])]
    width = (max(positions.values()) - min(positions.values())) if numeric and values else 0.0
    nudge = (width or 1.0) * 0.01
    for ax, (metric, title) in zip(axes.flat, PANELS):
        unit = display_unit(metric, sweep.ok[metric] if metric in sweep.ok else None)
        rows = table[table["metric"] == metric]
        for i, stack in enumerate(stacks):
            df = rows[rows["stack"] == stack]
            df = df.assign(_x=[positions.get(v, np.nan) for v in df[path]]).sort_values("_x")
            offset = (i - (len(stacks) - 1) / 2) * nudge  # overlapping bars stay apart
            ax.errorbar(df["_x"] + offset, df["mean"] * unit[1], yerr=_error_bars(df, unit[1]),
                        marker="o", markersize=4, capsize=3, color=_colour(sweep.stacks.index(
                            stack)), label=str(stack))
        ax.set_xlabel(label(path))
        if numeric:
            if all(float(v).is_integer() for v in values):
                _integer_axis(ax.xaxis, [float(v) for v in values])
        else:
            ax.set_xticks(list(positions.values()), [_value_text(v) for v in values])
            ax.set_xlim(-0.5, len(values) - 0.5)
        _metric_axis(ax, metric, unit, title)
    axes.flat[0].legend(title="stack")
    fig.suptitle(f"Metrics against {path} (mean and 95 % confidence interval over seeds)")
    return fig


def _value_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def metrics_by_stack(sweep: Any) -> Figure:
    """The four run metrics per stack (what ``xlayer compare`` compares): a bar per stack in
    the sweep's order, its mean over the seeds with the 95 % confidence interval."""
    from xlayer.analysis import summarize

    metrics = [m for m, _ in PANELS]
    table = summarize(sweep, metrics, by=["stack"])
    stacks = [s for s in sweep.stacks if s in set(table["stack"])]
    fig, axes = _figure(max(7.0, 1.2 * len(stacks) + 4), 6.5, 2, 2)
    x = np.arange(len(stacks))
    for ax, (metric, title) in zip(axes.flat, PANELS):
        unit = display_unit(metric, sweep.ok[metric] if metric in sweep.ok else None)
        rows = table[table["metric"] == metric].set_index("stack").reindex(stacks).reset_index()
        ax.bar(x, rows["mean"].to_numpy(dtype=float) * unit[1], width=0.6,
               yerr=_error_bars(rows, unit[1]), capsize=4,
               color=[_colour(sweep.stacks.index(s)) for s in stacks])
        ax.set_xticks(x, stacks, rotation=30 if len(stacks) > 4 else 0,
                      ha="right" if len(stacks) > 4 else "center")
        ax.set_xlim(-0.6, len(stacks) - 0.4)
        ax.grid(axis="x", visible=False)
        _metric_axis(ax, metric, unit, title)
    runs = int(table["n"].max()) if len(table) else 0
    fig.suptitle(f"Metrics per stack (mean and 95 % confidence interval over {runs} "
                 f"seed{'s' if runs != 1 else ''})")
    return fig


def stack_scatter(sweep: Any, a: str, b: str) -> Figure:
    """Per-flow throughput under stack ``a`` (y) against stack ``b`` (x), flows paired by
    swept values, seed and flow id; the diagonal marks equal throughput."""
    keys = sweep.swept + ["seed", "flow"]
    fl = sweep.flows
    left = fl[fl["stack"] == a][keys + ["throughput_bps"]].rename(columns={"throughput_bps": "a"})
    right = fl[fl["stack"] == b][keys + ["throughput_bps"]].rename(
        columns={"throughput_bps": "b"})
    paired = left.merge(right, on=keys)
    unit = display_unit("throughput_bps", pd.concat([paired["a"], paired["b"]]))
    fig, ax = _figure(5.5, 5.5)
    ax.scatter(paired["b"] * unit[1], paired["a"] * unit[1], s=14, alpha=0.7,
               color=_colour(sweep.stacks.index(a) if a in sweep.stacks else 0))
    top = float(max(paired["a"].max(), paired["b"].max())) * unit[1] if len(paired) else 1.0
    top = top * 1.05 if top > 0 else 1.0
    ax.plot([0, top], [0, top], color="grey", linewidth=1, linestyle="--", label="equal")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_aspect("equal")
    ax.set_xlabel(f"Flow throughput under {b} ({unit[0]})")
    ax.set_ylabel(f"Flow throughput under {a} ({unit[0]})")
    ax.set_title(f"Per-flow throughput: {a} against {b} ({_flows_word(len(paired))})")
    ax.legend(loc="upper left")
    return fig


def drops_vs_hops(flows: pd.DataFrame, by: Optional[str] = "stack",
                  order: Optional[Sequence[str]] = None) -> Figure:
    """Queue overflows by path length: the flows' ``queue_drops`` summed per hop count, one bar
    per value of ``by``; with a ``run`` column (a sweep), divided by the runs of that value."""
    fig, ax = _figure(6, 4)
    groups = _groups(flows, by, order)
    width = 0.7 / max(len(groups), 1)
    whole = True
    for i, (name, df, colour) in enumerate(groups):
        runs = df["run"].nunique() if "run" in df.columns else 1
        per_hops = df.groupby("hops")["queue_drops"].sum() / max(runs, 1)
        whole = whole and bool(np.all(np.mod(per_hops.to_numpy(dtype=float), 1) == 0))
        offset = (i - (len(groups) - 1) / 2) * width
        ax.bar(per_hops.index.astype(float) + offset, per_hops.to_numpy(), width=width,
               label=str(name), color=_colour(colour))
    hop_values = flows["hops"].astype(float).tolist()
    _integer_axis(ax.xaxis, hop_values)
    if hop_values:
        ax.set_xlim(min(hop_values) - 1, max(hop_values) + 1)
    if whole:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("Hops of the flow")
    ax.set_ylabel("Queue drops (packets" + (" per run)" if "run" in flows.columns else ")"))
    ax.set_title("Queue overflows by path length")
    ax.grid(axis="x", visible=False)
    if by and by in flows.columns:
        ax.legend(title=by)
    return fig


def _has_queue_drops(flows: pd.DataFrame) -> bool:
    return "queue_drops" in flows.columns and bool((flows["queue_drops"] > 0).any())


def throughput_vs_hops(flows: pd.DataFrame, by: Optional[str] = "stack",
                       order: Optional[Sequence[str]] = None) -> Figure:
    """Per-flow throughput against hop count: every flow as a dot, the mean per hop count as a
    line, one colour per value of ``by``."""
    unit = display_unit("throughput_bps", flows["throughput_bps"])
    fig, ax = _figure(6, 4)
    groups = _groups(flows, by, order)
    width = 0.5 / max(len(groups), 1)
    for i, (name, df, colour) in enumerate(groups):
        offset = (i - (len(groups) - 1) / 2) * width if len(groups) > 1 else 0.0
        hops = df["hops"].astype(float)
        ax.scatter(hops + offset, df["throughput_bps"] * unit[1], s=12, alpha=0.5,
                   color=_colour(colour))
        mean = df.groupby("hops")["throughput_bps"].mean() * unit[1]
        ax.plot(mean.index.astype(float) + offset, mean.to_numpy(), marker="s",
                color=_colour(colour),
                label=f"{name} (mean)" if by and by in flows.columns else "mean per hop count")
    hop_values = flows["hops"].astype(float).tolist()
    _integer_axis(ax.xaxis, hop_values)
    if hop_values:
        ax.set_xlim(min(hop_values) - 0.6, max(hop_values) + 0.6)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Hops of the flow")
    ax.set_ylabel(label("throughput_bps", unit=unit[0]).replace("Throughput",
                                                                 "Per-flow throughput"))
    ax.set_title("Throughput against hop count")
    ax.legend()
    return fig


def throughput_timeseries(series: pd.DataFrame, flows: Optional[Sequence[int]] = None,
                          max_flows: int = 10) -> Figure:
    """Per-flow throughput over time (DiffQ Fig. 10 style) from a run's ``timeseries`` table.

    ``flows`` picks the flows to draw; by default the ``max_flows`` with the most traffic.
    """
    unit = display_unit("throughput_bps", series["throughput_bps"])
    fig, ax = _figure(7, 4)
    totals = series.groupby("flow")["throughput_bps"].sum().sort_values(ascending=False)
    chosen = list(flows) if flows is not None else sorted(totals.index[:max_flows])
    for i, flow in enumerate(chosen):
        s = series[series["flow"] == flow].sort_values("t_s")
        ax.step(s["t_s"], s["throughput_bps"] * unit[1], where="post", label=f"flow {flow}",
                color=_colour(i))
    ax.set_xlabel("Time (s)")
    ax.set_ylabel(label("throughput_bps", unit=unit[0]))
    ax.set_ylim(bottom=0)
    hidden = len(totals) - len(chosen)
    ax.set_title("Throughput over time" + (f" ({hidden} quieter flows not drawn)"
                                           if hidden > 0 else ""))
    ax.legend(fontsize=7, ncol=2)
    return fig


def tcp_trace(trace: pd.DataFrame, max_flows: int = 6) -> Figure:
    """Each TCP flow's congestion window (solid) and slow-start threshold (dashed) in segments,
    and its smoothed RTT (solid) and retransmission timeout (dotted) in ms, over time; losses
    detected by duplicate ACKs (▽) and by timeouts (×) marked on the window. The threshold is
    not drawn while it is unbounded (before the first loss). At most ``max_flows`` flows (the
    ones with the most trace events)."""
    fig, (top, bottom) = _figure(8, 6, 2, 1, sharex=True)
    busiest = trace.groupby("flow").size().sort_values(ascending=False)
    chosen = sorted(busiest.index[:max_flows])
    rtt_unit = display_unit("srtt_s", trace["srtt_s"])
    for i, flow in enumerate(chosen):
        t = trace[trace["flow"] == flow].sort_values("t_s")
        colour = _colour(i)
        top.step(t["t_s"], t["cwnd_segments"], where="post", color=colour, label=f"flow {flow}")
        ss = t["ssthresh_segments"].astype(float).where(
            np.isfinite(t["ssthresh_segments"].astype(float)) & (t["ssthresh_segments"] < 1e9))
        top.step(t["t_s"], ss, where="post", color=colour, linestyle="--", linewidth=1)
        for event, marker in (("loss_dupack", "v"), ("loss_timeout", "x")):
            hit = t[t["event"] == event] if "event" in t.columns else t.iloc[:0]
            if len(hit):
                top.plot(hit["t_s"], hit["cwnd_segments"], marker, color=colour, markersize=5)
        bottom.step(t["t_s"], t["srtt_s"] * rtt_unit[1], where="post", color=colour)
        bottom.step(t["t_s"], t["rto_s"] * rtt_unit[1], where="post", color=colour,
                    linestyle=":", linewidth=1)
    from matplotlib.lines import Line2D

    keys = [Line2D([], [], color="black", label="cwnd"),
            Line2D([], [], color="black", linestyle="--", label="ssthresh"),
            Line2D([], [], color="black", marker="v", linestyle="None", label="loss (dup ACKs)"),
            Line2D([], [], color="black", marker="x", linestyle="None", label="loss (timeout)")]
    first = top.legend(loc="upper left", ncol=2)
    top.add_artist(first)
    top.legend(handles=keys, loc="upper right", ncol=2)
    top.set_ylabel("Window (segments)")
    top.set_ylim(bottom=0)
    hidden = len(busiest) - len(chosen)
    top.set_title("TCP congestion window and slow-start threshold"
                  + (f" ({hidden} more flows not drawn)" if hidden > 0 else ""))
    bottom.legend(handles=[Line2D([], [], color="black", label="smoothed RTT"),
                           Line2D([], [], color="black", linestyle=":", label="RTO")],
                  loc="upper right")
    bottom.set_ylabel(f"Time ({rtt_unit[0]})")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel("Time (s)")
    bottom.set_title("Round-trip time estimate and retransmission timeout")
    return fig


def measured_vs_optimal(flows: pd.DataFrame, by: Optional[str] = "stack",
                        order: Optional[Sequence[str]] = None) -> Figure:
    """Each flow's measured throughput (``throughput_bps``, y) against its rate in the
    proportional-fair optimum (``optimal_bps``, x): the oracle's view of a run or a sweep, one
    colour per value of ``by``. The diagonal is the optimum's rate; a flow above it got more
    than its fair-optimal share (a run may, at other flows' cost), none can be far above it
    on both axes' sums (the aggregate is bounded)."""
    pairs = flows[["optimal_bps", "throughput_bps"]].astype(float)
    unit = display_unit("throughput_bps", pd.concat([pairs["optimal_bps"],
                                                     pairs["throughput_bps"]]))
    fig, ax = _figure(5.5, 5.5)
    top = 0.0
    for name, df, colour in _groups(flows, by, order):
        x = df["optimal_bps"].astype(float).to_numpy() * unit[1]
        y = df["throughput_bps"].astype(float).to_numpy() * unit[1]
        keep = np.isfinite(x) & np.isfinite(y)
        if not keep.any():
            continue
        top = max(top, float(x[keep].max()), float(y[keep].max()))
        ax.scatter(x[keep], y[keep], s=16, alpha=0.7, color=_colour(colour),
                   label=f"{name} ({_flows_word(int(keep.sum()))})"
                   if by and by in flows.columns else _flows_word(int(keep.sum())))
    top = top * 1.05 if top > 0 else 1.0
    ax.plot([0, top], [0, top], color="grey", linewidth=1, linestyle="--",
            label="measured = optimal")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_aspect("equal")
    ax.set_xlabel(f"Flow rate in the proportional-fair optimum ({unit[0]})")
    ax.set_ylabel(f"Measured flow throughput ({unit[0]})")
    ax.set_title("Per-flow throughput against the optimum")
    ax.legend(loc="upper left")
    return fig


# ----------------------------------------------------------------------------------------------
# Topology


def topology(nodes: pd.DataFrame, flows: pd.DataFrame, title: str = "topology",
             scenario: Optional[Mapping[str, Any]] = None,
             model: Optional[LinkModel] = None, max_labels: int = 200) -> Figure:
    """Nodes at their positions (``x``, ``y``) with ids; with the run's ``scenario`` (or a
    :class:`LinkModel`), also the radio links shaded by frame success probability, wired links,
    the reception and carrier-sense ranges around the first flow's source, and each flow's
    route hop by hop — flows sharing a link side by side, each in its own colour and line
    style. Without routes, flows are arrows from source to destination. Wired-only nodes far
    from the radio cell (an access point's servers) are drawn in a column beside it."""
    if model is None and scenario is not None:
        model = link_model(scenario, nodes)
    pos, apart, apart_note = _layout(nodes, model)
    fig, ax = _figure(7, 6.5)
    xs = np.array([p[0] for p in pos.values()])
    ys = np.array([p[1] for p in pos.values()])
    extent = max(float(np.ptp(xs)) if len(xs) else 0.0, float(np.ptp(ys)) if len(ys) else 0.0,
                 1.0)
    legend: List[Any] = []
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, FancyArrowPatch

    if model is not None and len(model.links):
        segs = [[pos[int(r.a)], pos[int(r.b)]] for r in model.links.itertuples()
                if int(r.a) in pos and int(r.b) in pos]
        quality = model.links["success"].astype(float).clip(0, 1).to_numpy()
        shades = matplotlib.colors.LinearSegmentedColormap.from_list(
            "link_success", ["#e0e0e0", "#000000"])  # a weak link stays visible
        lc = LineCollection(segs, cmap=shades, norm=matplotlib.colors.Normalize(0.0, 1.0),
                            linewidths=0.8, zorder=1)
        lc.set_array(quality)
        ax.add_collection(lc)
        bar = fig.colorbar(lc, ax=ax, shrink=0.6, pad=0.01)
        bar.set_label("Radio link: frame success probability")
        bar.set_ticks([0, 0.25, 0.5, 0.75, 1.0])
    if model is not None and model.wired:
        wsegs = [[pos[a], pos[b]] for a, b in model.wired if a in pos and b in pos]
        ax.add_collection(LineCollection(wsegs, colors="#6b4f2a", linewidths=2.2,
                                         linestyles="-", zorder=1.5))
        legend.append(Line2D([], [], color="#6b4f2a", linewidth=2.2, label="wired link"))
    # ranges around the first flow's source (or node 0)
    radio = (scenario or {}).get("radio", {}) if scenario is not None else {}
    centre_node = int(flows["src"].iloc[0]) if len(flows) else (min(pos) if pos else 0)
    if centre_node in apart:  # a server: the ranges are those of the node it reaches by wire
        centre_node = next((a if b == centre_node else b for a, b in (model.wired if model
                            else []) if centre_node in (a, b)), centre_node)
    reach: List[Tuple[float, float]] = []
    if centre_node in pos and centre_node not in apart:
        ranges: Tuple[Tuple[str, LineStyleType, str], ...] = (
            ("tx_range_m", "--", "reception range"), ("cs_range_m", ":", "carrier-sense range"))
        for range_field, range_style, text in ranges:
            r = radio.get(range_field) if isinstance(radio, Mapping) else None
            if isinstance(r, (int, float)) and r > 0:
                ax.add_patch(Circle(pos[centre_node], float(r), fill=False, linestyle=range_style,
                                    edgecolor="#888888", linewidth=1, zorder=0.5))
                cx0, cy0 = pos[centre_node]
                reach += [(cx0 - r, cy0 - r), (cx0 + r, cy0 + r)]
                legend.append(Line2D([], [], color="#888888", linestyle=range_style,
                                     label=f"{text} of node {centre_node} ({r:g} m)"))
    # flows: routes hop by hop, flows sharing a link side by side
    routes = model.routes if model is not None else {}
    styles: List[LineStyleType] = ["-", "--", "-.", ":"]
    shown = 0
    lanes: Dict[Tuple[int, int], List[int]] = {}
    flow_ids = [int(f) for f in flows["flow"]] if "flow" in flows.columns else list(
        range(len(flows)))
    for fid in flow_ids:
        for a, b in routes.get(fid, []):
            lanes.setdefault((min(a, b), max(a, b)), []).append(fid)
    lane_gap = extent * 0.012
    for k, f in enumerate(flows.itertuples()):
        fid = flow_ids[k]
        colour, style = _colour(k), styles[(k // 10) % len(styles)]
        src, dst = int(f.src), int(f.dst)
        hops = routes.get(fid)
        if hops:
            for a, b in hops:
                if a not in pos or b not in pos:
                    continue
                key = (min(a, b), max(a, b))
                sharing = lanes[key]
                lane = sharing.index(fid) - (len(sharing) - 1) / 2
                (x0, y0), (x1, y1) = pos[key[0]], pos[key[1]]
                length = math.hypot(x1 - x0, y1 - y0) or 1.0
                nx, ny = -(y1 - y0) / length * lane * lane_gap, (x1 - x0) / length * lane * lane_gap
                start, end = (pos[a][0] + nx, pos[a][1] + ny), (pos[b][0] + nx, pos[b][1] + ny)
                ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=9,
                                             color=colour, linestyle=style, linewidth=1.6,
                                             shrinkA=4, shrinkB=4, zorder=2))
        elif src in pos and dst in pos:
            ax.add_patch(FancyArrowPatch(pos[src], pos[dst], arrowstyle="-|>", mutation_scale=10,
                                         color=colour, linestyle=style, linewidth=1.4,
                                         shrinkA=5, shrinkB=5, zorder=2,
                                         connectionstyle="arc3,rad=0.15"))
        if src in pos:
            ax.plot(*pos[src], marker="o", markersize=11, markerfacecolor="none",
                    markeredgecolor=colour, markeredgewidth=1.5, zorder=3.5)
        if shown < 12:
            nhops = len(hops) if hops else getattr(f, "hops", None)
            text = f"flow {fid}: {src} → {dst}"
            if nhops is not None and not (isinstance(nhops, float) and math.isnan(nhops)):
                text += f" ({int(nhops)} hop{'s' if int(nhops) != 1 else ''})"
            legend.append(Line2D([], [], color=colour, linestyle=style, linewidth=1.6,
                                 label=text))
            shown += 1
    if len(flows) > shown:
        legend.append(Line2D([], [], color="none", label=f"… and {len(flows) - shown} more "
                             "flows"))
    radio_nodes = [n for n in pos if n not in apart]
    ax.scatter([pos[n][0] for n in radio_nodes], [pos[n][1] for n in radio_nodes], s=40,
               color="#3b6ea5", zorder=3, label="node")
    if apart:
        ax.scatter([pos[n][0] for n in apart], [pos[n][1] for n in apart], s=55, marker="s",
                   color="#6b4f2a", zorder=3)
        legend.append(Line2D([], [], color="#6b4f2a", marker="s", linestyle="None",
                             label=apart_note))
        sep = (max(pos[n][0] for n in apart) + min(pos[n][0] for n in radio_nodes)) / 2
        ax.axvline(sep, color="#bbbbbb", linestyle=(0, (2, 4)), linewidth=1, zorder=0)
    if len(pos) <= max_labels:
        for n, (x, y) in pos.items():
            ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7,
                        zorder=4)
    legend.insert(0, Line2D([], [], color="#3b6ea5", marker="o", linestyle="None",
                            label="node (circled: a flow's source)"))
    # a square view of the whole network and the ranges drawn, equal scales
    vx = list(xs) + [p[0] for p in reach]
    vy = list(ys) + [p[1] for p in reach]
    half = max(max(vx) - min(vx), max(vy) - min(vy), 1.0) / 2 * 1.1
    cx, cy = (min(vx) + max(vx)) / 2, (min(vy) + max(vy)) / 2
    ax.set_xlim(cx - half, cx + half)
    ax.set_ylim(cy - half, cy + half)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("x (m)" if not apart else "x (m), radio cell")
    ax.set_ylabel("y (m)")
    ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(0, -0.1), ncol=2, fontsize=7)
    notes = list(model.notes) if model is not None else []
    ax.set_title(f"{title}: {len(pos)} nodes, {_flows_word(len(flows))}"
                 + (f"\n{'; '.join(notes)}" if notes else ""))
    return fig


# ----------------------------------------------------------------------------------------------
# A folder's plots


def _is_run_folder(folder: Path) -> bool:
    return (folder / "summary.json").is_file() and (folder / "flows.csv").is_file()


#: Columns the plots of a run read.
FLOWS_NEEDED = ("flow", "src", "dst", "hops", "throughput_bps")
NODES_NEEDED = ("node", "x", "y")
TCP_TRACE_NEEDED = ("flow", "t_s", "cwnd_segments", "ssthresh_segments", "srtt_s", "rto_s")


@contextlib.contextmanager
def unreadable_results(folder: PathLike) -> Iterator[None]:
    """Turns what a damaged result file makes pandas or the plots raise (a column of text where
    numbers belong, a key missing from a JSON file) into one :class:`XlayerError` naming the
    folder; files that cannot be parsed at all are named by their readers already."""
    try:
        yield
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as e:
        first = next((x.strip() for x in str(e).splitlines() if x.strip()), "")
        raise XlayerError(f"{folder}: a result file is malformed and cannot be read "
                          f"({type(e).__name__}: {first})") from None


@dataclass
class PlotSpec:
    """One plot of a folder: its file stem, caption, and the function that draws it."""

    stem: str
    caption: str
    draw: Callable[[], Figure]


def _run_scenario(run_dir: Path) -> Optional[Dict[str, Any]]:
    """The scenario a run folder was run with, or None if it cannot be read."""
    from xlayer.scenario import load_scenario

    try:
        return load_scenario(run_dir / "scenario.toml")
    except (OSError, XlayerError):
        return None


def _topology_spec(run_dir: Path, caption: str, title: str) -> PlotSpec:
    def draw() -> Figure:
        nodes = read_csv_table(run_dir / "nodes.csv", NODES_NEEDED)
        flows = read_csv_table(run_dir / "flows.csv", FLOWS_NEEDED)
        return topology(nodes, flows, title=title, scenario=_run_scenario(run_dir))

    return PlotSpec("topology", caption, draw)


def plan_figures(folder: PathLike,
                 on_load: Optional[Callable[[str], None]] = None,
                 oracle: Optional[bool] = None) -> List[PlotSpec]:
    """The plots of a sweep folder or a run folder, not yet drawn. ``on_load(what)`` is called
    before a slow load (a sweep's tables, the oracle's solves) so that a caller can say what is
    going on. ``oracle``: True adds ``measured_vs_optimal``, solving the optimum if need be (a
    missing solver or a scenario the oracle refuses is an :class:`XlayerError`); None adds it
    for a sweep whose oracle column is cached (``xlayer compare``, ``xlayer sweep``); False
    never."""
    folder = Path(folder)
    out: List[PlotSpec] = []
    if (folder / "sweep.json").is_file():
        from xlayer.analysis import load

        if on_load is not None:
            on_load("loading the sweep's runs")
        sweep = load(folder)
        flows = sweep.flows
        order = sweep.stacks
        if len(flows):
            out.append(PlotSpec("throughput_cdf", "CDF of per-flow throughput, per stack, over "
                                "all runs", lambda: throughput_cdf(flows, order=order)))
        if len(sweep.ok):
            for path in sweep.swept:
                out.append(PlotSpec(
                    f"metrics_vs_{_safe(path)}",
                    f"Run metrics against {path}: mean and 95 % confidence interval over seeds "
                    "(other swept values pooled)", functools.partial(metrics_vs, sweep, path)))
            if not sweep.swept:
                out.append(PlotSpec("metrics_by_stack", "Run metrics per stack: mean and 95 % "
                                    "confidence interval over seeds",
                                    lambda: metrics_by_stack(sweep)))
        stacks = [s for s in sweep.stacks if s in set(sweep.ok["stack"])]
        for other in stacks[1:]:
            out.append(PlotSpec(f"scatter_{_safe(stacks[0])}_vs_{_safe(other)}",
                                f"Per-flow throughput, {stacks[0]} against {other}",
                                functools.partial(stack_scatter, sweep, stacks[0], other)))
        if len(flows):
            out.append(PlotSpec("throughput_vs_hops", "Per-flow throughput against hop count",
                                lambda: throughput_vs_hops(flows, order=order)))
            if _has_queue_drops(flows):
                out.append(PlotSpec("drops_vs_hops", "Packets lost to full queues, by the "
                                    "flow's hop count (mean per run)",
                                    lambda: drops_vs_hops(flows, order=order)))
            first = sweep.ok.iloc[0]
            out.append(_topology_spec(
                folder / "runs" / str(first["run"]),
                f"Topology, links, ranges and routes of run {first['run']} (stack "
                f"{first['stack']}, seed {first['seed']})", str(sweep.plan.get("name", ""))))
        if oracle is not False and len(sweep.ok):
            from xlayer.optimum import cached_sweep_oracle, sweep_oracle

            if oracle and on_load is not None:
                on_load("solving the optimum")
            judged = sweep_oracle(folder) if oracle else cached_sweep_oracle(folder)
            if judged is not None and judged.flows["optimal_bps"].notna().any():
                fl = judged.flows
                out.append(PlotSpec("measured_vs_optimal", "Per-flow throughput against the "
                                    "flow's rate in the proportional-fair optimum, every run",
                                    lambda: measured_vs_optimal(fl, order=order)))
        return out
    if _is_run_folder(folder):
        flows = read_csv_table(folder / "flows.csv", FLOWS_NEEDED)
        name = str(read_json_object(folder / "summary.json").get("name", ""))
        if len(flows):
            out.append(PlotSpec("throughput_cdf", "CDF of per-flow throughput",
                                lambda: throughput_cdf(flows, by=None)))
            out.append(PlotSpec("throughput_vs_hops", "Per-flow throughput against hop count",
                                lambda: throughput_vs_hops(flows, by=None)))
            if _has_queue_drops(flows):
                out.append(PlotSpec("drops_vs_hops", "Packets lost to full queues, by the "
                                    "flow's hop count", lambda: drops_vs_hops(flows, by=None)))
        out.append(_topology_spec(folder, "Topology, links, ranges and routes", name))
        if (folder / "timeseries.csv").is_file():
            series = read_csv_table(folder / "timeseries.csv", ("flow", "t_s", "throughput_bps"))
            if len(series):
                out.append(PlotSpec("throughput_timeseries", "Per-flow throughput over time "
                                    "(output.timeseries_bin_s bins)",
                                    lambda: throughput_timeseries(series)))
        if (folder / "tcp_trace.csv").is_file():
            trace = read_csv_table(folder / "tcp_trace.csv", TCP_TRACE_NEEDED)
            if len(trace):
                out.append(PlotSpec("tcp_trace", "TCP congestion window, slow-start threshold, "
                                    "smoothed RTT and RTO per flow (output.tcp_trace)",
                                    lambda: tcp_trace(trace)))
        if oracle:
            from xlayer.optimum import oracle as solve_oracle

            if on_load is not None:
                on_load("solving the optimum")
            run_judged = solve_oracle(folder)  # an OracleResult: a run folder's comparison
            fl = run_judged.flows.rename(columns={"measured_bps": "throughput_bps",
                                                  "rate_bps": "optimal_bps"})
            out.append(PlotSpec("measured_vs_optimal", "Per-flow throughput against the flow's "
                                "rate in the proportional-fair optimum",
                                lambda: measured_vs_optimal(fl, by=None)))
        return out
    raise FileNotFoundError(f"{folder}: neither a sweep folder (sweep.json) nor a result folder "
                            "(summary.json, flows.csv)")


def figures(folder: PathLike) -> List[Tuple[str, str, Figure]]:
    """``(file stem, caption, figure)`` of every plot of a sweep folder or a run folder."""
    with style_context():
        return [(s.stem, s.caption, s.draw()) for s in plan_figures(folder)]


@contextlib.contextmanager
def style_context(style: Optional[str] = None) -> Iterator[None]:
    """xlayer's look (:data:`HOUSE_STYLE`), then ``style`` over it: a name of
    ``matplotlib.style.available`` or a ``.mplstyle`` file. An unknown style is an
    :class:`XlayerError` listing the known ones."""
    import matplotlib.style

    styles: List[Any] = [HOUSE_STYLE]
    if style:
        if style not in matplotlib.style.available and not Path(style).is_file():
            raise XlayerError(f"--style: unknown matplotlib style {style!r}; known: "
                              f"{', '.join(sorted(matplotlib.style.available))}, or a "
                              ".mplstyle file")
        styles.append(style)
    try:
        with matplotlib.style.context(styles):
            yield
    except OSError as e:
        raise XlayerError(f"--style: cannot read {style}: {e}") from None


def check_formats(formats: Sequence[str]) -> List[str]:
    """The formats asked for, lower case, each once; an unknown one is an
    :class:`XlayerError` naming the known ones."""
    out: List[str] = []
    for f in formats:
        f = f.strip().lower().lstrip(".")
        if f not in FORMATS:
            raise XlayerError(f"--format: unknown format {f!r}; known: {', '.join(FORMATS)}")
        if f not in out:
            out.append(f)
    if not out:
        raise XlayerError(f"--format: name at least one of {', '.join(FORMATS)}")
    return out


#: ``progress(done, total, what)``: called before each step of :func:`plot_folder`.
PlotProgress = Callable[[int, int, str], None]


def plot_folder(folder: PathLike, out: Optional[PathLike] = None,
                formats: Sequence[str] = FORMATS, dpi: int = DEFAULT_DPI,
                style: Optional[str] = None,
                progress: Union[bool, PlotProgress, None] = None,
                oracle: Optional[bool] = None) -> List[Path]:
    """Writes every plot of ``folder`` into ``out`` (default ``folder/plots``) in each of
    ``formats`` (PNG at ``dpi``; SVG and PDF are vector and carry no date, so the same plot
    gives the same file); returns the files written. ``style`` is a matplotlib style laid over
    xlayer's. ``progress`` is True (a bar on stderr once the work has taken a moment),
    a callable ``progress(done, total, what)``, or None. A folder whose files xlayer cannot
    read raises :class:`XlayerError`. ``oracle``: as :func:`plan_figures`."""
    from xlayer._progress import StepProgress

    formats = check_formats(formats)
    if not (isinstance(dpi, int) and 10 <= dpi <= 2400):
        raise XlayerError(f"--dpi: a whole number of dots per inch from 10 to 2400, found {dpi}")
    target = Path(out) if out is not None else Path(folder) / "plots"
    written: List[Path] = []
    bar = StepProgress("plotting") if progress is True else None
    report = bar if bar is not None else (progress if callable(progress) else None)
    try:
        with style_context(style), unreadable_results(folder):
            specs = plan_figures(folder, on_load=(lambda what: report(0, 0, what))
                                 if report is not None else None, oracle=oracle)
            total = len(specs)
            target.mkdir(parents=True, exist_ok=True)
            for k, spec in enumerate(specs):
                if report is not None:
                    report(k, total, f"drawing {spec.stem}")
                fig = spec.draw()
                for ext in formats:
                    path = target / f"{spec.stem}.{ext}"
                    tmp = target / f".{spec.stem}.{ext}.partial"
                    metadata = ({"Date": None} if ext == "svg" else
                                {"CreationDate": None} if ext == "pdf" else {})
                    fig.savefig(tmp, format=ext, dpi=dpi, metadata=metadata)
                    os.replace(tmp, path)
                    written.append(path)
            if report is not None:
                report(total, total, "done")
    finally:
        if bar is not None:
            bar.close()
    return written
