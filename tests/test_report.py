"""Plots and the HTML report, for a sweep folder and a run folder; the report is opened in a
real headless Chromium (Debian's ``chromium``), which must show every image and log nothing to
the console."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import xlayer
from xlayer.plots import plot_folder
from xlayer.report import write_report
from conftest import debian_tool

pytest.importorskip("distributed")

BASE = """
duration_s = 2.0
warmup_s = 0.2
[radio]
tx_range_m = 250.0
cs_range_m = 550.0
[topology]
kind = "grid"
rows = 3
cols = 3
spacing_m = 200.0
[flows_random]
count = 2
rate_bps = "saturate"
"""

SWEEP = """
name = "report-test"
scenario = "base.toml"
seeds = 2
[grid]
"flows_random.count" = [2, 4]
[stacks.dcf]
"radio.rts_cts" = false
[stacks.rts]
"radio.rts_cts" = true
"""

SWEEP_PLOTS = ["throughput_cdf", "metrics_vs_flows_random.count", "scatter_dcf_vs_rts",
               "throughput_vs_hops", "topology"]
RUN_PLOTS = ["throughput_cdf", "throughput_vs_hops", "topology"]


def _files(stems, flows):
    """The PNG, SVG and PDF files of these plots, plus drops_vs_hops when a queue overflowed."""
    if flows["queue_drops"].gt(0).any():
        stems = stems + ["drops_vs_hops"]
    return sorted(f"{stem}.{ext}" for stem in stems for ext in ("png", "svg", "pdf"))


def _plot_count(folder, sweep):
    """How many plots the folder's report shows."""
    import pandas as pd
    from xlayer.analysis import load

    flows = load(folder).flows if sweep else pd.read_csv(folder / "flows.csv")
    return len(_files(SWEEP_PLOTS if sweep else RUN_PLOTS, flows)) // 3


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    (root / "base.toml").write_text(BASE)
    (root / "sweep.toml").write_text(SWEEP)
    xlayer.sweep(root / "sweep.toml", root / "out", workers=2)
    return root / "out"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "chain"
    xlayer.run(None, out=out, overrides=["duration_s=2"])
    return out


def test_sweep_plots_have_the_documented_names(sweep_dir):
    files = plot_folder(sweep_dir)
    names = sorted(p.name for p in files)
    from xlayer.analysis import load

    assert names == _files(SWEEP_PLOTS, load(sweep_dir).flows)
    for p in files:
        data = p.read_bytes()
        magic = {".png": data[:8] == b"\x89PNG\r\n\x1a\n", ".svg": b"<svg" in data[:2000],
                 ".pdf": data[:5] == b"%PDF-"}
        assert magic[p.suffix], p
        assert len(data) > 5000


def test_run_plots_and_cli(run_dir, xlayer_cli, tmp_path):
    proc = xlayer_cli("plot", run_dir, "--out", tmp_path / "p")
    assert proc.returncode == 0, proc.stderr
    import pandas as pd

    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == _files(
        RUN_PLOTS, pd.read_csv(run_dir / "flows.csv"))


def test_report_cli_writes_the_page_it_names(run_dir, xlayer_cli, tmp_path):
    target = tmp_path / "pages" / "run.html"
    proc = xlayer_cli("report", run_dir, "--out", target)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(target)
    text = target.read_text()
    assert text.startswith("<!DOCTYPE html>") and '<h2 id="flows">Flows</h2>' in text
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]


def test_plot_and_report_of_a_folder_that_is_neither_is_an_error(xlayer_cli, tmp_path):
    for cmd in ("plot", "report"):
        proc = xlayer_cli(cmd, tmp_path)
        assert proc.returncode == 2
        assert proc.stderr.startswith("xlayer: error: ") and "neither a sweep" in proc.stderr


def test_report_is_self_contained(sweep_dir, run_dir):
    for folder in (sweep_dir, run_dir):
        text = write_report(folder).read_text()
        # Nothing fetched from anywhere: every src and href is a data: URI or an anchor.
        for url in re.findall(r'(?:src|href)="([^"]*)"', text):
            assert url.startswith("data:") or url.startswith("#"), url
        assert "http://" not in text and "https://" not in text
        assert text.count("<img ") == _plot_count(folder, folder == sweep_dir)
    sweep_text = (sweep_dir / "report.html").read_text()
    assert "Metrics per group" in sweep_text and "dcf / rts" in sweep_text
    assert "flows_random.count" in sweep_text


def _chromium() -> str:
    return debian_tool("chromium", "chromium")


@pytest.mark.parametrize("which", ["sweep", "run"])
def test_report_opens_in_headless_chromium_with_images_and_no_console_errors(
        which, sweep_dir, run_dir, tmp_path):
    chromium = _chromium()
    folder = sweep_dir if which == "sweep" else run_dir
    report = write_report(folder, tmp_path / f"{which}.html")
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
         "--enable-logging=stderr", "--v=0", "--dump-dom", report.absolute().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    # The page's own check ran after load: every image decoded.
    n = _plot_count(folder, which == "sweep")
    assert f'data-images-loaded="{n}/{n}"' in dom, re.findall(r"data-images-loaded=\S+", dom)
    # Tables rendered with rows.
    assert dom.count("<table>") >= 2 and dom.count("<td") > 10
    # Chromium logs every console message (errors, warnings, uncaught exceptions) as CONSOLE.
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []


def test_drops_vs_hops_sums_each_stacks_queue_drops_per_hop_count_and_run():
    import pandas as pd

    from xlayer.plots import drops_vs_hops

    flows = pd.DataFrame({"stack": ["a", "a", "a", "b"], "run": ["r1", "r1", "r2", "r3"],
                          "hops": [1, 2, 2, 1], "queue_drops": [4, 6, 2, 10]})
    fig = drops_vs_hops(flows)
    bars = {c.get_label(): sorted((round(p.get_x() + p.get_width() / 2), p.get_height())
                                  for p in c.patches) for c in fig.axes[0].containers}
    # stack a: two runs, 4 drops on 1-hop flows and 8 on 2-hop flows; stack b: one run.
    assert bars == {"a": [(1, 2.0), (2, 4.0)], "b": [(1, 10.0)]}
