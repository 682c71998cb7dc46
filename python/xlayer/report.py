"""A self-contained HTML report of a sweep folder or a run's result folder.

``xlayer report DIR`` (or :func:`write_report`) writes ``DIR/report.html``: one file with no
external resources (no scripts, styles, fonts or images fetched from anywhere; plots are PNG
images embedded as ``data:`` URIs), so it can be mailed or opened offline. It is meant to be read
without the code: a contents list, every number in the units and format of the command line
(``3.99 [2.10, 5.88] Mbit/s``: :mod:`xlayer.analysis`), readable column names with their
units, and a sentence saying what each table holds. It shows:

- a sweep: its definition as tables (grid, stacks and their overrides, seeds), how many runs
  finished, the mean and 95 % confidence interval of each metric per group, the ratio between the
  first stack and each other one (explained), failed runs with their errors, the plots of
  :mod:`xlayer.plots`, every run, and the scenario of its first run;
- a run: its summary (the keys that are zero or empty in this run, such as the control traffic
  of a run without routing protocol, are named in one line instead of shown), its flow table
  (likewise for columns), its plots and its scenario.

Stacks keep the order the sweep file gives them. A tiny inline script marks the page once loaded
(``<body data-images-loaded="N/M">``, the number of images that decoded), which is what the
tests check in headless Chromium.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import pandas as pd

from xlayer.analysis import (FIELDS, display_unit, field_info, format_interval, format_number,
                             format_value, label)

__all__ = ["write_report", "render_report", "html_table"]

PathLike = Union[str, "os.PathLike[str]"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1100px; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em;
       margin-top: 2em; } h3 { font-size: 1.05em; margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right;
         font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; } td { white-space: nowrap; }
td.text, th.text { text-align: left; white-space: normal; }
pre { background: #f7f7f7; padding: .8em; overflow-x: auto; font-size: .85em; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: .9em; }
.scroll { overflow-x: auto; } nav ol { columns: 2; } .note { color: #555; font-size: .9em; }
.failed { color: #a00; } code { font-size: .95em; }
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

#: Summary keys a run's report always shows; any other key only when it is not zero or empty.
SUMMARY_ALWAYS = ("name", "seed", "nodes", "flows", "duration_s", "warmup_s", "sim_time_s",
                  "aggregate_throughput_bps", "jain_index", "log_utility", "starved_flows",
                  "delivery_ratio", "delay_mean_s", "events", "wall_s", "xlayer_version")
#: Flow columns a run's report always shows; any other only when some flow has a value in it.
FLOWS_ALWAYS = ("flow", "src", "dst", "hops", "transport", "sent", "received", "throughput_bps",
                "delivery_ratio", "delay_mean_s", "delay_median_s", "delay_p95_s")
#: Columns of the sweep's run table.
RUN_COLUMNS = ("aggregate_throughput_bps", "jain_index", "log_utility",
               "median_flow_throughput_bps", "starved_flows", "delivery_ratio", "delay_mean_s")


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _is_text_column(series: pd.Series) -> bool:
    return series.dtype == object or str(series.dtype) in ("str", "string", "bool")


def html_table(df: pd.DataFrame, max_rows: int = 500,
               text_columns: Optional[Sequence[str]] = None) -> str:
    """A DataFrame of display strings (or plain values) as an HTML table: numbers
    right-aligned, text left-aligned (``text_columns``, default: the non-numeric columns)."""
    cols = list(df.columns)
    if text_columns is None:
        text_cols = {c for c in cols if _is_text_column(df[c]) and not _numeric_text(df[c])}
    else:
        text_cols = set(text_columns)
    out = ['<div class="scroll"><table>', "<thead><tr>"]
    for c in cols:
        cls = ' class="text"' if c in text_cols else ""
        out.append(f"<th{cls}>{_esc(c)}</th>")
    out.append("</tr></thead><tbody>")
    for row in df.head(max_rows).itertuples(index=False):
        out.append("<tr>")
        for c, v in zip(cols, row):
            cls = ' class="text"' if c in text_cols else ""
            out.append(f"<td{cls}>{_esc(_cell(v))}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if len(df) > max_rows:
        out.append(f'<p class="note">… and {len(df) - max_rows} more rows (see the CSV '
                   "files).</p>")
    return "".join(out)


def _numeric_text(series: pd.Series) -> bool:
    """A column of already formatted numbers (``1,234``, ``3.99 [2.10, 5.88]``, ``—``)."""
    import re

    pattern = re.compile(r"^[−\-]?[\d,.]+(e[−\-+]?\d+)?( \[[^\]]*\])?( \S+)?$|^—$|^∞$")
    values = [str(v) for v in series.tolist() if v is not None]
    return bool(values) and all(pattern.match(v) for v in values)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "—"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return format_number(value)
    return str(value)


def _column_label(name: str, unit: Tuple[str, float]) -> str:
    return label(name, unit=unit[0])


def formatted_table(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``df``'s ``columns`` as display strings under readable headers with units: each
    column in one unit (:func:`xlayer.analysis.display_unit` over its values), values with
    three significant digits, counts as integers."""
    out: Dict[str, List[str]] = {}
    for col in columns:
        if col not in df.columns:
            continue
        values = df[col]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(
            values)
        if numeric:
            unit = display_unit(col, values)
            out[_column_label(col, unit)] = [format_value(col, v, unit, with_unit=False)
                                             for v in values.tolist()]
        else:
            out[field_info(col).name] = [_cell(v) if not isinstance(v, bool) else
                                         str(v).lower() for v in values.tolist()]
    return pd.DataFrame(out)


def _is_blank(value: Any) -> bool:
    if value is None:
        return True
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value == 0 or (isinstance(value, float) and math.isnan(value))
    return str(value).strip() == ""


# ----------------------------------------------------------------------------------------------
# Plots


def _figures_html(folder: Path, style: Optional[str] = None, progress: Any = None) -> List[str]:
    from xlayer.plots import plan_figures, style_context

    parts = []
    with style_context(style):
        specs = plan_figures(folder, on_load=(lambda what: progress(0, 0, what))
                             if progress is not None else None)
        for k, spec in enumerate(specs):
            if progress is not None:
                progress(k, len(specs), f"drawing {spec.stem}")
            fig = spec.draw()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=110)
            data = base64.b64encode(buf.getvalue()).decode("ascii")
            parts.append(
                f'<figure id="{_esc(spec.stem)}"><img alt="{_esc(spec.caption)}" '
                f'src="data:image/png;base64,{data}"><figcaption>{_esc(spec.caption)} '
                f"(<code>plots/{_esc(spec.stem)}.png</code>)</figcaption></figure>"
            )
    return parts


# ----------------------------------------------------------------------------------------------
# Sections


class _Page:
    """Sections with ids, and the contents list they make."""

    def __init__(self) -> None:
        self.body: List[str] = []
        self.contents: List[Tuple[str, str]] = []

    def section(self, anchor: str, title: str, cls: str = "") -> None:
        self.contents.append((anchor, title))
        extra = f' class="{cls}"' if cls else ""
        self.body.append(f'<h2 id="{_esc(anchor)}"{extra}>{_esc(title)}</h2>')

    def add(self, *parts: str) -> None:
        self.body.extend(parts)

    def nav(self) -> str:
        items = "".join(f'<li><a href="#{_esc(a)}">{_esc(t)}</a></li>' for a, t in self.contents)
        return f"<nav><h2>Contents</h2><ol>{items}</ol></nav>"


def _value_text(value: Any) -> str:
    """A swept or override value as the sweep file writes it."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _seeds_text(seeds: Sequence[Any]) -> str:
    seeds = list(seeds)
    if seeds and all(isinstance(s, int) for s in seeds) and seeds == list(
            range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]} ({len(seeds)} seeds)"
    return ", ".join(str(s) for s in seeds) + f" ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})"


def _definition(sweep: Any, page: _Page) -> None:
    plan = sweep.plan
    page.section("definition", "Sweep definition")
    grid = plan.get("grid", {}) if isinstance(plan.get("grid"), dict) else {}
    stacks = plan.get("stacks", {}) if isinstance(plan.get("stacks"), dict) else {}
    seeds = plan.get("seeds", [])
    mode = plan.get("mode", "cartesian")
    points = 1
    if sweep.swept:
        lengths = [len(grid.get(p, [])) for p in sweep.swept]
        points = (lengths[0] if mode == "zip" else math.prod(lengths)) if lengths else 1
    base = _base_name(sweep.folder)
    rows = [("Base scenario", base),
            ("Runs planned", f"{len(plan.get('runs', []))} = {points} grid point"
             f"{'s' if points != 1 else ''} × {len(sweep.stacks)} stack"
             f"{'s' if len(sweep.stacks) != 1 else ''} × {len(seeds)} seed"
             f"{'s' if len(seeds) != 1 else ''}"),
            ("Seeds", _seeds_text(seeds))]
    if sweep.swept:
        rows.insert(1, ("Grid", "every combination of the values below (cartesian)"
                        if mode == "cartesian" else "the value lists below paired element by "
                        "element (zip)"))
    page.add(html_table(pd.DataFrame(rows, columns=["", "value"]), text_columns=["", "value"]))
    if sweep.swept:
        page.add("<h3>Swept fields</h3>", html_table(pd.DataFrame(
            [(p, ", ".join(_value_text(v) for v in grid.get(p, []))) for p in sweep.swept],
            columns=["field", "values"]), text_columns=["field", "values"]))
    page.add("<h3>Stacks</h3>",
             '<p class="note">Each stack is the base scenario with these fields changed, in '
             "the order the sweep names them.</p>",
             html_table(pd.DataFrame(
                 [(s, "; ".join(f"{k} = {_value_text(v)}" for k, v in
                                (stacks.get(s) or {}).items()) or "(the base scenario as it is)")
                  for s in sweep.stacks], columns=["stack", "changes"]),
                 text_columns=["stack", "changes"]))


def _base_name(folder: Path) -> str:
    try:
        base = json.loads((folder / "base.json").read_text(encoding="utf-8"))
        return str(base.get("name", "")) or "(no name given)"
    except (OSError, ValueError, AttributeError):
        return "(base.json unreadable)"


def _metric_notes(metrics: Sequence[str]) -> str:
    items = []
    for m in metrics:
        info = FIELDS.get(m)
        if info is None:
            continue
        if info.lower == 0 and info.upper == 1:
            method = "logit-transformed interval (stays in [0, 1])"
        elif info.lower == 0:
            method = "log-transformed interval (never below 0)"
        else:
            method = "Student's t interval"
        doc = f": {info.doc}" if info.doc else ""
        items.append(f"<li><b>{_esc(info.name)}</b>{_esc(doc)}; {_esc(method)}</li>")
    return f"<ul class=\"note\">{''.join(items)}</ul>"


def _sweep_body(folder: Path, style: Optional[str], progress: Any) -> Tuple[str, List[str]]:
    from xlayer.analysis import METRICS, load, stack_ratio, summary_table

    if progress is not None:
        progress(0, 0, "loading the sweep's runs")
    sweep = load(folder)
    plan = sweep.plan
    name = plan.get("name", folder.name)
    page = _Page()
    counts = sweep.runs["status"].value_counts().to_dict() if len(sweep.runs) else {}
    planned = len(plan.get("runs", []))
    head = [f"<h1>xlayer sweep report — {_esc(name)}</h1>",
            f"<p>{planned} runs planned: <b>{counts.get('ok', 0)} finished</b>, "
            f"{counts.get('failed', 0)} failed, {planned - len(sweep.runs)} not run yet. "
            f"Folder: <code>{_esc(folder)}</code>.</p>"]
    _definition(sweep, page)

    table = summary_table(sweep, METRICS)
    if len(table):
        page.section("metrics", "Metrics per group")
        page.add('<p class="note">Each cell: the mean over the group\'s seeds, and in brackets '
                 "its 95 % confidence interval (none for a single run). Intervals stay inside "
                 "each metric's range, so they need not be symmetric about the mean:</p>",
                 _metric_notes(METRICS),
                 html_table(table, text_columns=["Stack"]))
    ok_stacks = [s for s in sweep.stacks if len(sweep.ok) and s in set(sweep.ok["stack"])]
    if len(ok_stacks) > 1:
        metric = "median_flow_throughput_bps"
        page.section("ratios", f"Stacks compared with {ok_stacks[0]}")
        unit = display_unit(metric, sweep.ok[metric])
        page.add(f'<p class="note">The median flow throughput (the median of a run\'s '
                 f"per-flow throughputs) of <b>{_esc(ok_stacks[0])}</b> divided by that of each "
                 "other stack, per grid point. <i>Ratio of means</i> divides the two stacks' "
                 "means over the seeds; <i>mean ratio</i> pairs the runs of the two stacks by "
                 "seed, divides each pair, and gives the mean of those ratios with its 95 % "
                 "confidence interval (log-transformed: a ratio is never negative). Above 1: "
                 f"{_esc(ok_stacks[0])}'s median flow does better.</p>")
        for other in ok_stacks[1:]:
            ratio = stack_ratio(sweep, ok_stacks[0], other, metric)
            rows = pd.DataFrame({p: ratio[p].map(_value_text) for p in sweep.swept})
            rows[f"{ok_stacks[0]} ({unit[0]})"] = [format_value(metric, v, unit, False)
                                                   for v in ratio["mean_a"]]
            rows[f"{other} ({unit[0]})"] = [format_value(metric, v, unit, False)
                                            for v in ratio["mean_b"]]
            rows["ratio of means"] = [format_number(v) for v in ratio["ratio"]]
            rows["mean ratio [95 % CI]"] = [
                format_interval("ratio", m, lo, hi, ("", 1.0))
                for m, lo, hi in zip(ratio["ratio_mean"], ratio["ratio_ci_low"],
                                     ratio["ratio_ci_high"])]
            rows["seed pairs"] = [format_number(int(n)) for n in ratio["n"]]
            page.add(f"<h3>{_esc(ok_stacks[0])} / {_esc(other)}</h3>",
                     html_table(rows, text_columns=list(sweep.swept)))
    failed = sweep.runs[sweep.runs["status"] == "failed"]
    if len(failed):
        page.section("failed", "Failed runs", "failed")
        cols = ["run", "stack", "seed"] + sweep.swept + ["error"]
        shown = failed[cols].copy()
        for p in sweep.swept:
            shown[p] = shown[p].map(_value_text)
        page.add(html_table(shown.rename(columns={"run": "Run", "stack": "Stack",
                                                  "seed": "Seed", "error": "Error"}),
                            text_columns=["Run", "Stack", "Error"] + sweep.swept))
    page.section("plots", "Plots")
    page.add(*_figures_html(folder, style, progress))
    page.section("runs", "Every run")
    runs = sweep.runs
    keys = pd.DataFrame({"Run": runs["run"], "Stack": runs["stack"], "Seed": runs["seed"]})
    for p in sweep.swept:
        keys[p] = runs[p].map(_value_text)
    keys["Status"] = runs["status"]
    values = formatted_table(runs, [c for c in RUN_COLUMNS if c in runs.columns])
    page.add('<p class="note">One row per planned run that finished or failed, in the '
             "order of the plan; the run folders are <code>runs/&lt;Run&gt;/</code>.</p>",
             html_table(pd.concat([keys.reset_index(drop=True), values], axis=1),
                        text_columns=["Run", "Stack", "Status"] + list(sweep.swept)))
    if len(sweep.ok):
        first = sweep.ok.iloc[0]
        scenario = folder / "runs" / str(first["run"]) / "scenario.toml"
        page.section("scenario", f"Scenario of run {first['run']} (stack {first['stack']}, "
                     f"seed {first['seed']})")
        page.add("<pre>" + _esc(scenario.read_text(encoding="utf-8")) + "</pre>")
    return "xlayer sweep report", head + [page.nav()] + page.body


def _run_body(folder: Path, style: Optional[str], progress: Any) -> Tuple[str, List[str]]:
    from xlayer.results import read_csv_table, read_json_object

    summary = read_json_object(folder / "summary.json")
    flows = read_csv_table(folder / "flows.csv")
    page = _Page()
    head = [f"<h1>xlayer run report — {_esc(summary.get('name', folder.name))}</h1>",
            f"<p>Folder: <code>{_esc(folder)}</code>. Definitions of every number: "
            "<code>docs/scenario.md</code>, “What the numbers mean”.</p>"]
    page.section("summary", "Summary")
    shown, hidden = [], []
    for key in list(SUMMARY_ALWAYS) + sorted(k for k in summary if k not in SUMMARY_ALWAYS):
        if key not in summary:
            continue
        value = summary[key]
        if key not in SUMMARY_ALWAYS and _is_blank(value):
            hidden.append(key)
            continue
        info = field_info(key)
        text = (format_value(key, value) if isinstance(value, (int, float))
                and not isinstance(value, bool) else _cell(value))
        shown.append((info.name, text, info.doc))
    page.add(html_table(pd.DataFrame(shown, columns=["", "value", "meaning"]),
                        text_columns=["", "meaning"]))
    if hidden:
        page.add(f'<p class="note">Zero or empty in this run, so not shown: '
                 f"{_esc(', '.join(hidden))} (all in <code>summary.json</code>).</p>")
    page.section("flows", "Flows")
    keep = [c for c in flows.columns if c in FLOWS_ALWAYS or not all(
        _is_blank(v) for v in flows[c].tolist())]
    dropped = [c for c in flows.columns if c not in keep]
    ordered = [c for c in FLOWS_ALWAYS if c in keep] + [c for c in keep if c not in FLOWS_ALWAYS]
    page.add('<p class="note">One row per flow; throughput is payload received in the '
             "measured window (after warm-up), delays from source to destination.</p>",
             html_table(formatted_table(flows, ordered),
                        text_columns=[field_info("transport").name, field_info("rate").name]))
    if dropped:
        page.add(f'<p class="note">Zero or empty for every flow, so not shown: '
                 f"{_esc(', '.join(dropped))} (all in <code>flows.csv</code>).</p>")
    page.section("plots", "Plots")
    page.add(*_figures_html(folder, style, progress))
    page.section("scenario", "Scenario as run")
    page.add("<pre>" + _esc((folder / "scenario.toml").read_text(encoding="utf-8")) + "</pre>")
    return "xlayer run report", head + [page.nav()] + page.body


def render_report(folder: PathLike, style: Optional[str] = None,
                  progress: Any = None) -> str:
    """The report of a sweep folder or a result folder as one HTML string; a folder whose files
    xlayer cannot read raises :class:`XlayerError`. ``style`` is a matplotlib style for the
    plots (as ``xlayer plot --style``); ``progress(done, total, what)`` hears of each step."""
    from xlayer.plots import unreadable_results

    folder = Path(folder)
    if (folder / "sweep.json").is_file():
        with unreadable_results(folder):
            title, body = _sweep_body(folder, style, progress)
    elif (folder / "summary.json").is_file() and (folder / "flows.csv").is_file():
        with unreadable_results(folder):
            title, body = _run_body(folder, style, progress)
    else:
        raise FileNotFoundError(f"{folder}: neither a sweep folder (sweep.json) nor a result "
                                "folder (summary.json, flows.csv)")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body)
        + f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_report(folder: PathLike, out: Optional[PathLike] = None, *,
                 style: Optional[str] = None, progress: Any = False) -> Path:
    """Writes the report (default ``folder/report.html``, atomically); returns its path.
    ``progress`` is True (a bar on stderr once it takes a moment), a callable
    ``progress(done, total, what)``, or False."""
    from xlayer._progress import StepProgress

    target = Path(out) if out is not None else Path(folder) / "report.html"
    bar = StepProgress("report") if progress is True else None
    try:
        text = render_report(folder, style, bar if bar is not None else (
            progress if callable(progress) else None))
    finally:
        if bar is not None:
            bar.close()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return target

