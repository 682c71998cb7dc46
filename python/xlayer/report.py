"""A self-contained HTML report of a sweep folder or a run's result folder.

``xlayer report DIR`` (or :func:`write_report`) writes ``DIR/report.html``: one file with no
external resources (no scripts, styles, fonts or images fetched from anywhere; plots are PNG
images embedded as ``data:`` URIs), so it can be mailed or opened offline. It shows:

- a sweep: its definition (grid, stacks, seeds), the scenario of its first run, the run counts,
  the mean and 95 % confidence interval of each metric per group, the ratio between the first
  stack and each other one, failed runs with their errors, and the plots of :mod:`xlayer.plots`;
- a run: its scenario, its summary, its flow table and its plots.

A tiny inline script marks the page once loaded (``<body data-images-loaded="N/M">``, the number
of images that decoded), which is what the tests check in headless Chromium.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from pathlib import Path
from typing import Any, List, Optional, Union

import pandas as pd

__all__ = ["write_report", "render_report"]

PathLike = Union[str, "os.PathLike[str]"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: .85em; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: .9em; }
.failed { color: #a00; }
"""

_SCRIPT = """
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) {
    if (imgs[i].complete && imgs[i].naturalWidth > 0) { ok++; }
  }
  document.body.setAttribute("data-images-loaded", ok + "/" + imgs.length);
});
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.4g}"
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def html_table(df: pd.DataFrame, max_rows: int = 500) -> str:
    """A DataFrame as an HTML table (numbers right-aligned, text left-aligned)."""
    cols = list(df.columns)
    out = ["<table>", "<thead><tr>"]
    text_cols = {c for c in cols if df[c].dtype == object or str(df[c].dtype) in ("str", "string")}
    for c in cols:
        cls = ' class="text"' if c in text_cols else ""
        out.append(f"<th{cls}>{_esc(c)}</th>")
    out.append("</tr></thead><tbody>")
    for row in df.head(max_rows).itertuples(index=False):
        out.append("<tr>")
        for c, v in zip(cols, row):
            cls = ' class="text"' if c in text_cols else ""
            out.append(f"<td{cls}>{_esc(_fmt(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    if len(df) > max_rows:
        out.append(f"<p>… and {len(df) - max_rows} more rows (see the CSV files).</p>")
    return "".join(out)


def _figures_html(folder: Path) -> List[str]:
    import matplotlib.pyplot as plt

    from xlayer.plots import figures

    parts = []
    for stem, caption, fig in figures(folder):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        plt.close(fig)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        parts.append(
            f'<figure id="{_esc(stem)}"><img alt="{_esc(caption)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{_esc(caption)} '
            f"(<code>plots/{_esc(stem)}.png</code>)</figcaption></figure>"
        )
    return parts


def _sweep_body(folder: Path) -> List[str]:
    from xlayer.analysis import load, stack_ratio, summarize

    sweep = load(folder)
    plan = sweep.plan
    parts = [f"<h1>xlayer sweep — {_esc(plan.get('name', folder.name))}</h1>"]
    counts = sweep.runs["status"].value_counts().to_dict() if len(sweep.runs) else {}
    planned = len(plan.get("runs", []))
    parts.append(
        f"<p>{planned} runs planned: {counts.get('ok', 0)} finished, "
        f"{counts.get('failed', 0)} failed, {planned - len(sweep.runs)} not run yet. "
        f"Folder: <code>{_esc(folder)}</code>.</p>"
    )
    definition = {k: plan.get(k) for k in ("mode", "grid", "stacks", "seeds")}
    parts.append("<h2>Sweep</h2><pre>" + _esc(json.dumps(definition, indent=2)) + "</pre>")

    summary = summarize(sweep)
    if len(summary):
        parts.append("<h2>Metrics per group (mean and 95 % confidence interval over seeds)</h2>")
        table = summary.copy()
        table["mean ± ci"] = [f"{_fmt(m)} ± {_fmt(h)}" for m, h in
                              zip(table["mean"], table["ci_half"])]
        keys = ["stack"] + sweep.swept
        wide = table.pivot_table(index=keys, columns="metric", values="mean ± ci",
                                 aggfunc="first", sort=False).reset_index()
        wide.columns.name = None
        n = table.groupby(keys, sort=False)["n"].first().reset_index()
        wide = wide.merge(n, on=keys)
        parts.append(html_table(wide))
    ok_stacks = [s for s in sweep.stacks if len(sweep.ok) and s in set(sweep.ok["stack"])]
    for other in ok_stacks[1:]:
        ratio = stack_ratio(sweep, ok_stacks[0], other)
        parts.append(f"<h2>Median per-flow throughput, {_esc(ok_stacks[0])} / {_esc(other)}</h2>")
        parts.append(html_table(ratio.drop(columns=["metric", "stack_a", "stack_b"])))
    failed = sweep.runs[sweep.runs["status"] == "failed"]
    if len(failed):
        parts.append('<h2 class="failed">Failed runs</h2>')
        parts.append(html_table(failed[["run", "stack", "seed"] + sweep.swept + ["error"]]))
    parts.append("<h2>Runs</h2>")
    cols = [c for c in ["run", "stack", "seed"] + sweep.swept + [
        "status", "aggregate_throughput_bps", "jain_index", "log_utility",
        "median_flow_throughput_bps", "starved_flows", "delivery_ratio", "delay_mean_s"]
        if c in sweep.runs.columns]
    parts.append(html_table(sweep.runs[cols]))
    parts.append("<h2>Plots</h2>")
    parts.extend(_figures_html(folder))
    if len(sweep.ok):
        first = folder / "runs" / str(sweep.ok.iloc[0]["run"]) / "scenario.toml"
        parts.append(f"<h2>Scenario of run {_esc(sweep.ok.iloc[0]['run'])}</h2>")
        parts.append("<pre>" + _esc(first.read_text(encoding="utf-8")) + "</pre>")
    return parts


def _run_body(folder: Path) -> List[str]:
    from xlayer.results import read_csv_table, read_json_object

    summary = read_json_object(folder / "summary.json")
    flows = read_csv_table(folder / "flows.csv")
    parts = [f"<h1>xlayer run — {_esc(summary.get('name', folder.name))}</h1>",
             f"<p>Folder: <code>{_esc(folder)}</code>.</p>", "<h2>Summary</h2>"]
    parts.append(html_table(pd.DataFrame(
        {"what": list(summary), "value": [summary[k] for k in summary]})))
    parts.append("<h2>Flows</h2>")
    parts.append(html_table(flows))
    parts.append("<h2>Plots</h2>")
    parts.extend(_figures_html(folder))
    parts.append("<h2>Scenario</h2><pre>"
                 + _esc((folder / "scenario.toml").read_text(encoding="utf-8")) + "</pre>")
    return parts


def render_report(folder: PathLike) -> str:
    """The report of a sweep folder or a result folder as one HTML string; a folder whose files
    xlayer cannot read raises :class:`XlayerError`."""
    from xlayer.plots import unreadable_results

    folder = Path(folder)
    if (folder / "sweep.json").is_file():
        with unreadable_results(folder):
            body, title = _sweep_body(folder), "xlayer sweep report"
    elif (folder / "summary.json").is_file() and (folder / "flows.csv").is_file():
        with unreadable_results(folder):
            body, title = _run_body(folder), "xlayer run report"
    else:
        raise FileNotFoundError(f"{folder}: neither a sweep folder (sweep.json) nor a result "
                                "folder (summary.json, flows.csv)")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body)
        + f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_report(folder: PathLike, out: Optional[PathLike] = None) -> Path:
    """Writes the report (default ``folder/report.html``, atomically); returns its path."""
    target = Path(out) if out is not None else Path(folder) / "report.html"
    text = render_report(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return target
