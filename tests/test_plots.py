"""The plots a user publishes: correct for one flow, one hop and one group, intervals inside
each metric's range, units on the axes, the user's stack order, PNG/SVG/PDF at a chosen dpi and
style, TCP traces, and a topology with links, ranges, routes and wired servers kept in view."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xlayer
from xlayer import plots
from xlayer.analysis import Sweep
from conftest import SMALL_CHAIN


@pytest.fixture(scope="module")
def one_flow_run(tmp_path_factory) -> Path:
    """SMALL_CHAIN: one flow over one hop, a TCP trace and a time series."""
    folder = tmp_path_factory.mktemp("one") / "run"
    scenario = xlayer.scenario.load_toml(SMALL_CHAIN)
    del scenario["flows"][0]["rate_bps"]  # a TCP bulk transfer
    scenario["flows"][0]["transport"] = "tcp"
    scenario["output"] = {"tcp_trace": True, "timeseries_bin_s": 0.5}
    xlayer.run(scenario, out=folder)
    return folder


def _sweep(values, stacks=("zeta", "alpha"), metric="aggregate_throughput_bps"):
    """A sweep without swept paths: per stack, one run per value of ``values``."""
    rows, flows = [], []
    for stack in stacks:
        for seed, v in enumerate(values, start=1):
            run = f"{stack}{seed}"
            rows.append({"run": run, "stack": stack, "seed": seed, "status": "ok", "error": None,
                         "aggregate_throughput_bps": v, "jain_index": 0.9,
                         "log_utility": 10.0, "median_flow_throughput_bps": v / 2})
            flows.append({"run": run, "stack": stack, "seed": seed, "flow": 0, "hops": 2,
                          "throughput_bps": v / 2, "queue_drops": 0})
    runs = pd.DataFrame(rows)
    runs[metric] = runs[metric].astype(float)
    return Sweep(folder=Path("."), runs=runs, flows=pd.DataFrame(flows), swept=[],
                 stacks=list(stacks), plan={"name": "t"})


# ----------------------------------------------------------------------------------------------
# One flow, one hop, one group


def test_the_cdf_of_a_single_flow_is_a_visible_step_from_0_to_1(one_flow_run):
    flows = pd.read_csv(one_flow_run / "flows.csv")
    assert len(flows) == 1
    ax = plots.throughput_cdf(flows, by=None).axes[0]
    curve = [line for line in ax.get_lines() if line.get_linestyle() != "None"][0]
    x, y = np.asarray(curve.get_xdata(), float), np.asarray(curve.get_ydata(), float)
    assert y.min() == 0.0 and y.max() == 1.0  # it rises, rather than being a lone point
    assert x.max() > x.min() >= 0.0
    kbps = flows["throughput_bps"].iloc[0] / 1e3
    assert x[np.argmax(y == 1.0)] == pytest.approx(kbps)  # the step is at the flow's throughput
    assert "kbit/s" in ax.get_xlabel()


def test_counts_get_integer_ticks_for_a_single_hop(one_flow_run):
    flows = pd.read_csv(one_flow_run / "flows.csv").assign(queue_drops=[7])
    for fig in (plots.throughput_vs_hops(flows, by=None), plots.drops_vs_hops(flows, by=None)):
        ticks = fig.axes[0].get_xticks()
        assert list(ticks) == [1.0]  # one tick, at the one hop count: no 0.8, 0.9, 1.1 ...
    bars = plots.drops_vs_hops(flows, by=None).axes[0]
    lo, hi = bars.get_ylim()
    assert all(float(t).is_integer() for t in bars.get_yticks() if lo <= t <= hi)


def test_metrics_of_one_group_of_one_run_still_plot():
    s = _sweep([2e6], stacks=("only",))
    fig = plots.metrics_by_stack(s)
    bars = fig.axes[0].patches
    assert len(bars) == 1 and bars[0].get_height() == pytest.approx(2.0)  # Mbit/s


# ----------------------------------------------------------------------------------------------
# Intervals, units, order


def _error_bar_bottoms(ax):
    """The lowest y of every error bar drawn on ``ax``."""
    from matplotlib.collections import LineCollection

    lows = []
    for c in ax.collections:
        if isinstance(c, LineCollection):
            for seg in c.get_segments():
                if len(seg) == 2 and seg[0][0] == pytest.approx(seg[1][0]):  # vertical
                    lows.append(min(seg[0][1], seg[1][1]))
    return lows


def test_confidence_bars_of_a_throughput_never_go_below_zero():
    # Two of three seeds starved: Student's t would draw the bar down to about -0.8 Mbit/s.
    s = _sweep([0.0, 0.0, 1.2e6])
    ax = plots.metrics_by_stack(s).axes[0]
    lows = _error_bar_bottoms(ax)
    assert lows and min(lows) >= 0.0
    assert ax.get_ylabel() == "Aggregate throughput (Mbit/s)"


def test_metrics_against_a_swept_value_keep_the_users_stack_order_and_units():
    s = _sweep([1e6, 2e6, 3e6], stacks=("zeta", "alpha", "mid"))
    s.runs["n.count"] = 4
    s.swept = ["n.count"]
    s.plan = {"grid": {"n.count": [4]}}
    fig = plots.metrics_vs(s, "n.count")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["zeta", "alpha", "mid"]
    assert fig.axes[0].get_ylabel() == "Aggregate throughput (Mbit/s)"
    assert fig.axes[1].get_ylim() == pytest.approx((0, 1.04))  # Jain's index lives in [0, 1]
    assert [t for t in fig.axes[0].get_xticks()] == [4.0]


def test_bars_per_stack_follow_the_sweep_files_order():
    s = _sweep([1e6, 2e6], stacks=("tcp-sack", "diffq-tcp", "alpha"))
    ax = plots.metrics_by_stack(s).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["tcp-sack", "diffq-tcp", "alpha"]
    cdf = plots.throughput_cdf(s.flows, order=s.stacks).axes[0]
    assert [t.get_text().split(" (")[0] for t in cdf.get_legend().get_texts()] == s.stacks


# ----------------------------------------------------------------------------------------------
# Files, dpi, style


def test_plot_folder_writes_png_svg_and_pdf_at_the_dpi_asked(one_flow_run, tmp_path):
    from PIL import Image

    out = plots.plot_folder(one_flow_run, tmp_path / "a", formats=["png", "pdf"], dpi=200)
    assert {p.suffix for p in out} == {".png", ".pdf"}
    png = next(p for p in out if p.name == "throughput_cdf.png")
    assert Image.open(png).info["dpi"] == pytest.approx((200, 200), abs=1)
    assert (tmp_path / "a" / "topology.pdf").read_bytes()[:5] == b"%PDF-"
    plots.plot_folder(one_flow_run, tmp_path / "b", formats=["png"])  # the default dpi
    assert Image.open(tmp_path / "b" / "throughput_cdf.png").info["dpi"][0] >= 150


@pytest.mark.slow
def test_vector_files_are_the_same_bytes_when_drawn_again(one_flow_run, tmp_path):
    plots.plot_folder(one_flow_run, tmp_path / "a", formats=["svg", "pdf"])
    plots.plot_folder(one_flow_run, tmp_path / "b", formats=["svg", "pdf"])
    for p in (tmp_path / "a").iterdir():
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes(), p.name


def test_a_style_applies_and_an_unknown_one_is_a_one_line_error(one_flow_run, tmp_path,
                                                                 xlayer_cli, capsys):
    from xlayer.cli import main

    flows = pd.read_csv(one_flow_run / "flows.csv")
    with plots.style_context("dark_background"):
        fig = plots.throughput_cdf(flows, by=None)
    assert fig.axes[0].get_facecolor()[:3] == (0.0, 0.0, 0.0)
    proc = xlayer_cli("plot", one_flow_run, "--style", "no-such-style", "--out", tmp_path / "p")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--style: unknown matplotlib style 'no-such-style'" in proc.stderr
    assert "grayscale" in proc.stderr
    proc = xlayer_cli("plot", one_flow_run, "--format", "png,gif", "--out", tmp_path / "p")
    assert proc.returncode == 2 and "--format: unknown format 'gif'" in proc.stderr
    assert main(["plot", str(one_flow_run), "--format", "svg", "--dpi", "300", "--style",
                 "grayscale", "--out", str(tmp_path / "p"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert {p.suffix for p in (tmp_path / "p").iterdir()} == {".svg"}


def test_the_clis_plot_defaults_are_the_plot_modules():
    from xlayer import cli

    assert cli.PLOT_FORMATS == plots.FORMATS and cli.PLOT_DPI == plots.DEFAULT_DPI >= 150


def test_progress_is_reported_for_every_plot(one_flow_run, tmp_path):
    calls = []
    written = plots.plot_folder(one_flow_run, tmp_path, formats=["png"],
                                progress=lambda done, total, what: calls.append((done, total,
                                                                                 what)))
    assert calls[-1][0] == calls[-1][1] == len(written)
    assert [c[0] for c in calls] == list(range(len(written) + 1))
    assert any("topology" in c[2] for c in calls)


# ----------------------------------------------------------------------------------------------
# TCP traces


def test_a_run_with_a_tcp_trace_gets_its_window_and_rtt_plot(one_flow_run, tmp_path):
    written = {p.stem for p in plots.plot_folder(one_flow_run, tmp_path, formats=["png"])}
    assert {"tcp_trace", "throughput_timeseries"} <= written
    trace = pd.read_csv(one_flow_run / "tcp_trace.csv")
    fig = plots.tcp_trace(trace)
    window, rtt = fig.axes[:2]
    cwnd = [line for line in window.get_lines() if line.get_label() == "flow 0"][0]
    assert np.nanmax(np.asarray(cwnd.get_ydata(), float)) == pytest.approx(
        trace["cwnd_segments"].max())
    assert "segments" in window.get_ylabel() and "ms" in rtt.get_ylabel()


def test_ssthresh_is_not_drawn_while_unbounded():
    trace = pd.DataFrame({"flow": [0, 0, 0], "t_s": [0.0, 1.0, 2.0], "event": ["window"] * 3,
                          "cwnd_segments": [2.0, 4.0, 8.0],
                          "ssthresh_segments": [np.nan, np.inf, 6.0],
                          "srtt_s": [0.1, 0.1, 0.1], "rto_s": [1.0, 1.0, 1.0]})
    lines = [line for line in plots.tcp_trace(trace).axes[0].get_lines()
             if line.get_linestyle() == "--"]
    y = np.asarray(lines[0].get_ydata(), float)
    assert np.isnan(y[:2]).all() and y[2] == 6.0


# ----------------------------------------------------------------------------------------------
# Topology


def _arrows(ax):
    from matplotlib.patches import FancyArrowPatch

    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


def test_topology_draws_the_cores_links_the_ranges_and_each_flows_route(write_scenario,
                                                                          tmp_path):
    # Two flows share the link 1-2 of a 4-node chain: drawn side by side, not on top.
    text = SMALL_CHAIN.replace("src = 0\ndst = 1", "src = 0\ndst = 2") + (
        "\n[[flows]]\nsrc = 1\ndst = 3\nrate_bps = 1e5\n")
    out = tmp_path / "run"
    xlayer.run(write_scenario(text), out=out)
    nodes, flows = pd.read_csv(out / "nodes.csv"), pd.read_csv(out / "flows.csv")
    scenario = xlayer.load_scenario(out / "scenario.toml")
    model = plots.link_model(scenario, nodes)
    assert set(map(tuple, model.links[["a", "b"]].to_numpy())) == {(0, 1), (1, 2), (2, 3)}
    assert model.routes == {0: [(0, 1), (1, 2)], 1: [(1, 2), (2, 3)]}
    ax = plots.topology(nodes, flows, scenario=scenario).axes[0]
    arrows = _arrows(ax)
    assert len(arrows) == 4  # one per hop of each route
    shared = [a for a in arrows if abs(a._posA_posB[0][0] - 200) < 20
              and abs(a._posA_posB[1][0] - 400) < 20]
    assert len(shared) == 2
    assert abs(shared[0]._posA_posB[0][1] - shared[1]._posA_posB[0][1]) > 1.0  # side by side
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "reception range of node 0 (250 m)" in legend
    assert "carrier-sense range of node 0 (550 m)" in legend
    assert "flow 0: 0 → 2 (2 hops)" in legend


def test_an_access_points_wired_servers_are_drawn_beside_the_cell_not_1000_km_away(tmp_path):
    scenario = {"duration_s": 1.0, "radio": {"standard": "802.11a", "data_rate_mbps": 6.0},
                "topology": {"kind": "access_point", "count": 2, "distance_m": 100.0},
                "flows": [{"src": 1, "dst": 3, "rate_bps": 1e5},
                          {"src": 2, "dst": 4, "rate_bps": 1e5}]}
    out = tmp_path / "ap"
    xlayer.run(scenario, out=out)
    nodes, flows = pd.read_csv(out / "nodes.csv"), pd.read_csv(out / "flows.csv")
    assert nodes["x"].abs().max() >= 1e6  # the servers really are 1000 km away
    fig = plots.topology(nodes, flows, scenario=xlayer.load_scenario(out / "scenario.toml"))
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert hi - lo < 1000  # the view is the cell's size, with the servers in it
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "wired link" in legend and "drawn apart (really 1,000 km away)" in legend
    assert "routes not drawn" in ax.get_title()


def test_the_step_bar_appears_by_itself_during_a_long_step_and_not_for_a_quick_one():
    import io
    import time

    from rich.console import Console

    from xlayer._progress import StepProgress

    out = io.StringIO()
    quick = StepProgress("plotting", delay_s=0.3, console=Console(file=out, force_terminal=True))
    quick(0, 2, "drawing a")
    quick.close()
    time.sleep(0.4)
    assert not quick.shown and out.getvalue() == ""
    out = io.StringIO()
    slow = StepProgress("plotting", delay_s=0.05, console=Console(file=out, force_terminal=True))
    slow(0, 0, "loading the sweep's runs")  # then nothing is heard for a while
    deadline = time.monotonic() + 5
    while not slow.shown and time.monotonic() < deadline:
        time.sleep(0.02)
    assert slow.shown
    slow(1, 3, "drawing topology")
    slow.close()
    assert "plotting" in out.getvalue()
