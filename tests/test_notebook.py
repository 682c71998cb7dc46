"""Jupyter: a Result and a Sweep show as HTML tables in the command line's units, and the
tutorial notebook (docs/tutorial.ipynb) runs from top to bottom without an error."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

import xlayer
from conftest import REPO, SMALL_CHAIN
from xlayer.scenario import load_toml

NOTEBOOK = REPO / "docs" / "tutorial.ipynb"


def _cells(table_html: str) -> list:
    return [html.unescape(c) for c in re.findall(r"<t[dh](?:\s[^>]*)?>(.*?)</t[dh]>", table_html)]


def test_a_result_shows_its_summary_and_flows_in_the_command_lines_units():
    result = xlayer.run(load_toml(SMALL_CHAIN))
    page = result._repr_html_()
    assert "xlayer run small-chain" in page and "seed 1" in page
    cells = _cells(page)
    # one flow of 200 kbit/s, all delivered: the summary in Mbit/s, the flow table in kbit/s
    assert result.summary["aggregate_throughput_bps"] == 200e3
    assert cells[:2] == ["aggregate throughput", "Jain's index"] and "0.200 Mbit/s" in cells
    assert "Throughput (kbit/s)" in cells and "Mean delay (ms)" in cells
    flow_head = cells[cells.index("Flow"):]
    width = flow_head.index("95th-percentile delay (ms)") + 1
    row = dict(zip(flow_head[:width], flow_head[width:2 * width]))
    assert row["Throughput (kbit/s)"] == "200" and row["Source"] == "0"


def test_a_result_with_many_flows_shows_the_first_twenty_and_says_how_many_more():
    scenario = load_toml(SMALL_CHAIN)
    scenario["flows"] = [{"src": i % 4, "dst": (i + 1) % 4, "rate_bps": 1e4} for i in range(25)]
    page = xlayer.run(scenario)._repr_html_()
    assert page.count("<tr>") == 1 + 1 + 1 + 20  # summary head and row, flow head, 20 flows
    assert "… and 5 more flows" in page


def test_a_sweep_shows_its_groups_with_intervals(tmp_path):
    pytest.importorskip("distributed")
    sweep = xlayer.sweep({"name": "tiny", "scenario": load_toml(SMALL_CHAIN), "seeds": 2,
                          "stacks": {"dcf": {}, "rts": {"radio.rts_cts": True}}},
                         out=tmp_path / "s", workers=1)
    page = sweep._repr_html_()
    assert "4 of 4 runs finished, 0 failed; stacks dcf, rts" in page
    assert page.count("<tr>") == 1 + 2  # a head and one row per stack
    assert "mean [95 % confidence interval] over seeds" in page


@pytest.mark.slow
def test_the_tutorial_notebook_runs_from_top_to_bottom(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("distributed")
    pytest.importorskip("matplotlib")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel is a child process: it must import the package these tests import.
    pythonpath = os.environ.get("PYTHONPATH")
    if pythonpath:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in pythonpath.split(os.pathsep) if p)
    try:
        client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                         resources={"metadata": {"path": str(tmp_path)}})
        client.execute()
    finally:
        if pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = pythonpath
    outputs = [o for cell in notebook.cells if cell.cell_type == "code"
               for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "xlayer run default" in shown and "xlayer sweep tutorial" in shown
    assert (tmp_path / "tutorial-results" / "grid" / "view.html").is_file()
    assert any("image/png" in o.get("data", {}) for o in outputs)
