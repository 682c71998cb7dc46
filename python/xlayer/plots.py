"""Plots of a sweep or of one run, drawn with matplotlib (Agg backend), as PNG and SVG.

``xlayer plot DIR`` (or :func:`plot_folder`) writes into ``DIR/plots/``, each as ``.png`` and
``.svg``:

    throughput_cdf          CDF of per-flow throughput, one curve per stack
    metrics_vs_<path>       sweep only, one per swept path: aggregate throughput, Jain's index,
                            log utility and median per-flow throughput against the swept value,
                            mean and 95 % confidence bars per stack (other swept paths pooled)
    scatter_<a>_vs_<b>      sweep with two stacks or more: per-flow throughput under stack a
                            against stack b, flows paired by swept values, seed and flow id
                            (DiffQ Fig. 12 style); a is the first stack, b each other one
    throughput_vs_hops      per-flow throughput against the flow's hop count (DPCLO Fig. 9 style)
    drops_vs_hops           the flows' packets lost to full queues, summed by the flows' hop
                            count, one bar per stack (DiffQ Fig. 15 style; for a sweep, the mean
                            per run); only when some queue dropped something
    topology                node positions and the flows as arrows from source to destination
                            (for a sweep: its first finished run)
    throughput_timeseries   run folder with timeseries.csv (the scenario set
                            output.timeseries_bin_s): per-flow throughput over time, the ten
                            busiest flows (DiffQ Fig. 10 style)

``<path>`` is the swept path with characters other than letters, digits, ``_``, ``.`` and ``-``
replaced by ``_``.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from xlayer.errors import XlayerError  # noqa: E402
from xlayer.results import read_csv_table, read_json_object  # noqa: E402

__all__ = [
    "plot_folder",
    "figures",
    "throughput_cdf",
    "metrics_vs",
    "stack_scatter",
    "throughput_vs_hops",
    "drops_vs_hops",
    "topology",
]

PathLike = Union[str, "os.PathLike[str]"]

#: (metric column, axis label, scale) of the metrics_vs_<path> panels.
PANELS = (
    ("aggregate_throughput_bps", "aggregate throughput (Mbit/s)", 1e-6),
    ("jain_index", "Jain's fairness index", 1.0),
    ("log_utility", "log utility", 1.0),
    ("median_flow_throughput_bps", "median flow throughput (kbit/s)", 1e-3),
)

# Reproducible SVG files: no date, fixed ids.
matplotlib.rcParams["svg.hashsalt"] = "xlayer"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))


def throughput_cdf(flows: pd.DataFrame, by: Optional[str] = "stack") -> Figure:
    """Empirical CDF of per-flow throughput, one curve per value of ``by`` (if present)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = flows.groupby(by, sort=False) if by and by in flows.columns else [("flows", flows)]
    for name, df in groups:
        x = np.sort(df["throughput_bps"].astype(float).to_numpy() / 1e3)
        if x.size == 0:
            continue
        y = np.arange(1, x.size + 1) / x.size
        ax.step(x, y, where="post", label=f"{name} ({x.size} flows)")
    ax.set_xlabel("per-flow throughput (kbit/s)")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("CDF of per-flow throughput")
    fig.tight_layout()
    return fig


def metrics_vs(sweep: Any, path: str) -> Figure:
    """The four run metrics against swept ``path``: mean and 95 % CI bars, one line per stack."""
    from xlayer.analysis import summarize

    table = summarize(sweep, [m for m, _, _ in PANELS], by=["stack", path])
    values = list(dict.fromkeys(sweep.ok[path].tolist()))
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    positions = {v: (v if numeric else i) for i, v in enumerate(values)}
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (metric, label, scale) in zip(axes.flat, PANELS):
        rows = table[table["metric"] == metric]
        for stack, df in rows.groupby("stack", sort=False):
            df = df.assign(_x=[positions[v] for v in df[path]]).sort_values("_x")
            err = df["ci_half"].fillna(0).to_numpy() * scale
            ax.errorbar(df["_x"], df["mean"] * scale, yerr=err, marker="o", capsize=4,
                        label=str(stack))
        ax.set_xlabel(path)
        ax.set_ylabel(label)
        if not numeric:
            ax.set_xticks(list(positions.values()), [str(v) for v in values])
        ax.grid(alpha=0.3)
    axes.flat[0].legend()
    fig.suptitle(f"metrics against {path} (mean, 95 % confidence interval)")
    fig.tight_layout()
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
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.scatter(paired["b"] / 1e3, paired["a"] / 1e3, s=12, alpha=0.7)
    top = float(max(paired["a"].max(), paired["b"].max(), 1.0)) / 1e3 if len(paired) else 1.0
    ax.plot([0, top], [0, top], color="grey", linewidth=1, linestyle="--")
    ax.set_xlabel(f"flow throughput, {b} (kbit/s)")
    ax.set_ylabel(f"flow throughput, {a} (kbit/s)")
    ax.set_title(f"per-flow throughput: {a} vs {b} ({len(paired)} flows)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def drops_vs_hops(flows: pd.DataFrame, by: Optional[str] = "stack") -> Figure:
    """Queue overflows by path length: the flows' ``queue_drops`` summed per hop count, one bar
    per value of ``by``; with a ``run`` column (a sweep), divided by the runs of that value."""
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = list(flows.groupby(by, sort=False)) if by and by in flows.columns else [
        ("flows", flows)]
    width = 0.8 / max(len(groups), 1)
    for i, (name, df) in enumerate(groups):
        runs = df["run"].nunique() if "run" in df.columns else 1
        per_hops = df.groupby("hops")["queue_drops"].sum() / max(runs, 1)
        offset = (i - (len(groups) - 1) / 2) * width
        ax.bar(per_hops.index.astype(float) + offset, per_hops.to_numpy(), width=width,
               label=str(name))
    ax.set_xlabel("hops of the flow")
    ax.set_ylabel("queue drops" + (" per run" if "run" in flows.columns else ""))
    ax.set_title("queue overflows by path length")
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    fig.tight_layout()
    return fig


def _has_queue_drops(flows: pd.DataFrame) -> bool:
    return "queue_drops" in flows.columns and bool((flows["queue_drops"] > 0).any())


def throughput_vs_hops(flows: pd.DataFrame, by: Optional[str] = "stack") -> Figure:
    """Per-flow throughput against hop count: every flow as a dot, the mean per hop count as a
    line, one colour per value of ``by``."""
    fig, ax = plt.subplots(figsize=(6, 4))
    groups = list(flows.groupby(by, sort=False)) if by and by in flows.columns else [
        ("flows", flows)]
    width = 0.6 / max(len(groups), 1)
    for i, (name, df) in enumerate(groups):
        offset = (i - (len(groups) - 1) / 2) * width
        hops = df["hops"].astype(float)
        line = ax.plot([], [])[0]
        colour = line.get_color()
        ax.scatter(hops + offset, df["throughput_bps"] / 1e3, s=10, alpha=0.5, color=colour)
        mean = df.groupby("hops")["throughput_bps"].mean() / 1e3
        ax.plot(mean.index.astype(float) + offset, mean.to_numpy(), marker="s", color=colour,
                label=f"{name} (mean)")
    ax.set_xlabel("hops")
    ax.set_ylabel("per-flow throughput (kbit/s)")
    ax.set_title("throughput against hop count")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def topology(nodes: pd.DataFrame, flows: pd.DataFrame, title: str = "topology") -> Figure:
    """Nodes at their positions (``x``, ``y``) with ids, flows as arrows source → destination."""
    fig, ax = plt.subplots(figsize=(6, 6))
    pos = {int(r.node): (float(r.x), float(r.y)) for r in nodes.itertuples()}
    ax.scatter(nodes["x"], nodes["y"], s=60, color="#3b6ea5", zorder=3)
    if len(pos) <= 200:
        for n, (x, y) in pos.items():
            ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    cmap = plt.get_cmap("tab10")
    for i, f in enumerate(flows.itertuples()):
        (x0, y0), (x1, y1) = pos[int(f.src)], pos[int(f.dst)]
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="-|>", color=cmap(i % 10), lw=1.3,
                                    shrinkA=5, shrinkB=5, connectionstyle="arc3,rad=0.15"),
                    zorder=2)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"{title}: {len(pos)} nodes, {len(flows)} flows")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def throughput_timeseries(series: pd.DataFrame, flows: Optional[Sequence[int]] = None,
                          max_flows: int = 10) -> Figure:
    """Per-flow throughput over time (DiffQ Fig. 10 style) from a run's ``timeseries`` table.

    ``flows`` picks the flows to draw; by default the ``max_flows`` with the most traffic.
    """
    fig, ax = plt.subplots(figsize=(7, 4))
    totals = series.groupby("flow")["throughput_bps"].sum().sort_values(ascending=False)
    chosen = list(flows) if flows is not None else list(totals.index[:max_flows])
    for flow in chosen:
        s = series[series["flow"] == flow].sort_values("t_s")
        ax.step(s["t_s"], s["throughput_bps"] / 1e3, where="post", label=f"flow {flow}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput (kbit/s)")
    hidden = len(totals) - len(chosen)
    ax.set_title("throughput over time" + (f" ({hidden} quieter flows not drawn)" if hidden > 0 else ""))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig


def _is_run_folder(folder: Path) -> bool:
    return (folder / "summary.json").is_file() and (folder / "flows.csv").is_file()


#: Columns the plots of a run read.
FLOWS_NEEDED = ("flow", "src", "dst", "hops", "throughput_bps")
NODES_NEEDED = ("node", "x", "y")


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


def figures(folder: PathLike) -> List[Tuple[str, str, Figure]]:
    """``(file stem, caption, figure)`` of every plot of a sweep folder or a run folder."""
    folder = Path(folder)
    out: List[Tuple[str, str, Figure]] = []
    if (folder / "sweep.json").is_file():
        from xlayer.analysis import load

        sweep = load(folder)
        flows = sweep.flows
        if len(flows):
            out.append(("throughput_cdf", "CDF of per-flow throughput, per stack, over all runs",
                        throughput_cdf(flows)))
        if len(sweep.ok):
            for path in sweep.swept:
                out.append((f"metrics_vs_{_safe(path)}",
                            f"Run metrics against {path}: mean and 95 % confidence interval "
                            "over seeds (other swept values pooled)", metrics_vs(sweep, path)))
        stacks = [s for s in sweep.stacks if s in set(sweep.ok["stack"])]
        for other in stacks[1:]:
            out.append((f"scatter_{_safe(stacks[0])}_vs_{_safe(other)}",
                        f"Per-flow throughput, {stacks[0]} against {other}",
                        stack_scatter(sweep, stacks[0], other)))
        if len(flows):
            out.append(("throughput_vs_hops", "Per-flow throughput against hop count",
                        throughput_vs_hops(flows)))
            if _has_queue_drops(flows):
                out.append(("drops_vs_hops", "Packets lost to full queues, by the flow's hop "
                            "count (mean per run)", drops_vs_hops(flows)))
            first = sweep.ok.iloc[0]
            run_dir = folder / "runs" / str(first["run"])
            out.append(("topology", f"Topology and flows of run {first['run']} "
                        f"(stack {first['stack']}, seed {first['seed']})",
                        topology(read_csv_table(run_dir / "nodes.csv", NODES_NEEDED),
                                 read_csv_table(run_dir / "flows.csv", FLOWS_NEEDED))))
        return out
    if _is_run_folder(folder):
        flows = read_csv_table(folder / "flows.csv", FLOWS_NEEDED)
        nodes = read_csv_table(folder / "nodes.csv", NODES_NEEDED)
        name = read_json_object(folder / "summary.json").get("name", "")
        if len(flows):
            out.append(("throughput_cdf", "CDF of per-flow throughput",
                        throughput_cdf(flows, by=None)))
            out.append(("throughput_vs_hops", "Per-flow throughput against hop count",
                        throughput_vs_hops(flows, by=None)))
            if _has_queue_drops(flows):
                out.append(("drops_vs_hops", "Packets lost to full queues, by the flow's hop count",
                            drops_vs_hops(flows, by=None)))
        out.append(("topology", "Topology and flows", topology(nodes, flows, title=str(name))))
        if (folder / "timeseries.csv").is_file():
            series = read_csv_table(folder / "timeseries.csv", ("flow", "t_s", "throughput_bps"))
            if len(series):
                out.append(("throughput_timeseries", "Per-flow throughput over time "
                            "(output.timeseries_bin_s bins)", throughput_timeseries(series)))
        return out
    raise FileNotFoundError(f"{folder}: neither a sweep folder (sweep.json) nor a result folder "
                            "(summary.json, flows.csv)")


def plot_folder(folder: PathLike, out: Optional[PathLike] = None) -> List[Path]:
    """Writes every plot of ``folder`` as PNG and SVG into ``out`` (default ``folder/plots``);
    returns the files written. A folder whose files xlayer cannot read raises
    :class:`XlayerError`."""
    target = Path(out) if out is not None else Path(folder) / "plots"
    with unreadable_results(folder):
        figs = figures(folder)
    target.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    for stem, _, fig in figs:
        for ext in ("png", "svg"):
            path = target / f"{stem}.{ext}"
            tmp = target / f".{stem}.{ext}.partial"
            fig.savefig(tmp, format=ext, dpi=110, metadata={"Date": None} if ext == "svg" else {})
            os.replace(tmp, path)
            written.append(path)
        plt.close(fig)
    return written
