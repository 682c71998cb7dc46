"""How results show in Jupyter: :meth:`xlayer.Result._repr_html_` (a compact summary and the
flow table, in the units and number formats of the command line)."""

from __future__ import annotations

import html
from typing import Any, List, Sequence, Tuple

__all__ = ["result_html", "MAX_FLOW_ROWS"]

#: Flow rows shown; the rest are in ``result.flows``.
MAX_FLOW_ROWS = 20
#: (summary key, label) of the summary line, in this order.
SUMMARY = (("aggregate_throughput_bps", "aggregate throughput"), ("jain_index", "Jain's index"),
           ("log_utility", "log utility"), ("starved_flows", "starved flows"),
           ("delivery_ratio", "delivery ratio"), ("delay_mean_s", "mean delay"),
           ("events", "events"), ("wall_s", "wall time"))
#: Flow columns shown when present.
FLOW_COLUMNS = ("flow", "src", "dst", "hops", "transport", "sent", "received", "throughput_bps",
                "delivery_ratio", "delay_mean_s", "delay_p95_s")

_CELL = "padding:2px 8px;text-align:{align};font-variant-numeric:tabular-nums"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[bool]) -> str:
    esc = html.escape
    out = ['<table style="border-collapse:collapse;font-size:90%"><thead><tr>']
    for h, is_left in zip(head, left):
        out.append(f'<th style="{_CELL.format(align="left" if is_left else "right")}">'
                   f"{esc(h)}</th>")
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(
            f'<td style="{_CELL.format(align="left" if is_left else "right")}">{esc(c)}</td>'
            for c, is_left in zip(row, left)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def result_html(result: Any) -> str:
    """The result as HTML: name, seed, size and simulated time; the main summary numbers; the
    first :data:`MAX_FLOW_ROWS` flows; what else it holds (time series, TCP trace, captures,
    optimizers)."""
    from xlayer.analysis import format_value
    from xlayer.report import formatted_table

    esc = html.escape
    s = result.summary
    head = (f"<p><b>xlayer run {esc(str(s.get('name', '')))}</b>: seed {esc(str(s.get('seed')))}"
            f", {esc(str(s.get('nodes')))} nodes, {esc(str(s.get('flows')))} flows, "
            f"{esc(format_value('sim_time_s', s.get('sim_time_s')))} simulated</p>")
    pairs: List[Tuple[str, str]] = [(label, format_value(key, s.get(key)))
                                    for key, label in SUMMARY if key in s]
    summary = _table([p[0] for p in pairs], [[p[1] for p in pairs]], [False] * len(pairs))
    flows = result.flows
    body = ""
    if len(flows):
        shown = formatted_table(flows.head(MAX_FLOW_ROWS),
                                [c for c in FLOW_COLUMNS if c in flows.columns])
        text_cols = [str(c) for c in shown.columns]
        left = [c.lower().startswith("transport") for c in text_cols]
        body = _table(text_cols, shown.astype(str).values.tolist(), left)
        if len(flows) > MAX_FLOW_ROWS:
            body += (f"<p><small>… and {len(flows) - MAX_FLOW_ROWS} more flows in "
                     "<code>result.flows</code></small></p>")
    else:
        body = "<p>no flows</p>"
    extra = []
    if len(result.timeseries):
        extra.append(f"<code>timeseries</code> ({len(result.timeseries):,} rows)")
    if len(result.tcp_trace):
        extra.append(f"<code>tcp_trace</code> ({len(result.tcp_trace):,} rows)")
    if len(result.pcaps):
        extra.append(f"<code>pcaps</code> of {len(result.pcaps)} nodes")
    if len(result.optimizers):
        extra.append(f"<code>optimizers</code> ({len(result.optimizers)})")
    tail = (f"<p><small>also: {', '.join(extra)}</small></p>" if extra else "")
    return head + summary + body + tail
