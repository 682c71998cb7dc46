"""A self-contained, animated HTML view of a network and a run: ``xlayer view``.

    xlayer view results/chain            # a run's result folder: writes results/chain/view.html
    xlayer view scenarios/chain.toml     # a scenario: runs it, writes chain-view.html here
    xlayer run scenarios/chain.toml --out results/chain --view   # the run writes it too

    >>> import xlayer
    >>> xlayer.view("results/chain")     # the path of the page written

The page (:func:`render`) is one HTML file with its data, style and script inline — nothing is
fetched from anywhere, so it opens offline and can be mailed. It draws:

- the nodes at their positions (wired-only nodes, such as an access point's servers, in a
  column beside the radio cell), the radio links shaded by their frame success probability and
  the wired links (:mod:`xlayer.network`, the core's own link model);
- each flow's route as the nodes' routing tables give it at that moment, hop by hop in the
  flow's colour (flows sharing a link side by side), its source circled;
- over time, stepped with a slider or animated with Play: each node's queue (the packets it
  holds, its colour how full its fullest queue is, a red ring where a full queue dropped
  packets since the last frame), the routes (DSDV or OLSR changing them shows), and each flow's
  throughput in that frame; two charts below follow the flows' throughput and the packets
  queued in the network over the whole run, with the current frame marked.

**How the data is recorded.** The core keeps no history of queues or routes, so the view runs
the scenario itself and reads the nodes' tuning parameters (``mac.queue_len.<level>``,
``net.dest_queue_len.<destination>``, ``net.next_hop.<destination>``, ``mac.drops_queue``,
``app.received_bytes.<flow>``; ``xlayer tunables``) at ``frames`` evenly spaced instants.
Reading parameters changes nothing in the simulation, so the run is the same, bit for bit, as
``xlayer run`` gives. For a result folder it runs the folder's ``scenario.toml`` (seed
included) and checks the replay against the folder's ``summary.json``: the page and the
command say whether they agree. Throughput in a frame is the application bytes the flow's
receiver got during it, over its length.
"""

from __future__ import annotations

import html
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from xlayer.errors import TuningError, XlayerError

__all__ = ["Recording", "record", "render", "view", "view_with_check", "write_view",
           "DEFAULT_FRAMES", "MAX_FRAMES", "VIEW_FILE"]

PathLike = Union[str, "os.PathLike[str]"]

#: Frames recorded by default (evenly spaced over the run, plus the start).
DEFAULT_FRAMES = 200
#: At most this many frames: the page holds every frame's numbers.
MAX_FRAMES = 5000
#: The page's name in a result folder.
VIEW_FILE = "view.html"
#: Summary keys that measure the machine, not the simulation (left out of the replay check).
WALL_CLOCK_KEYS = ("wall_s", "optimizer_wall_s", "eclair_wall_s", "eclair_time_per_event_ns",
                   "eclair_time_per_packet_ns", "eclair_cost_read_layer_ns",
                   "eclair_cost_read_core_ns", "eclair_cost_write_core_ns", "eclair_core_items",
                   "eclair_core_hits", "eclair_core_gain_ns_per_s")
#: At most this many MAC priority levels are probed per node.
MAX_LEVELS = 16


@dataclass
class Recording:
    """What :func:`record` read during a run, frame by frame.

    ``t_s[k]`` is frame k's simulated time (frame 0 at the start). Per frame and node:
    ``queue`` (packets held: the MAC levels' queues, or the per-destination queues, which count
    the packet at the MAC), ``fill`` (the fullest of the node's queues over its capacity, 0-1),
    ``drops`` (packets refused by a full interface queue since the previous frame). Per frame
    and flow: ``routes`` (the nodes from source to as far as the routing tables lead, the
    destination last when the route is complete) and ``received_bytes`` (cumulative
    application bytes at the flow's receiver). ``None`` where a node has no such queue (a
    wired-only server) or a flow's receiver was not readable."""

    t_s: List[float] = field(default_factory=list)
    queue: List[List[Optional[int]]] = field(default_factory=list)
    fill: List[List[Optional[float]]] = field(default_factory=list)
    drops: List[List[int]] = field(default_factory=list)
    routes: List[List[List[int]]] = field(default_factory=list)
    received_bytes: List[List[Optional[float]]] = field(default_factory=list)
    flows: List[Dict[str, Any]] = field(default_factory=list)

    def throughput_bps(self) -> List[List[Optional[float]]]:
        """Per frame (from frame 1) and flow: bits received during the frame over its length."""
        out: List[List[Optional[float]]] = []
        for k in range(1, len(self.t_s)):
            dt = self.t_s[k] - self.t_s[k - 1]
            row: List[Optional[float]] = []
            for a, b in zip(self.received_bytes[k - 1], self.received_bytes[k]):
                row.append(None if a is None or b is None or dt <= 0 else (b - a) * 8 / dt)
            out.append(row)
        return out


class _Probe:
    """Reads one simulation's tuning parameters; what a node does not have reads as None."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim

    def get(self, node: int, name: str) -> Optional[float]:
        try:
            value = self.sim.get_param(node, name)
        except TuningError:
            return None
        return None if value is None or (isinstance(value, float) and math.isnan(value)) \
            else float(value)


def _levels(probe: _Probe, node: int) -> int:
    n = 0
    while n < MAX_LEVELS and probe.get(node, f"mac.queue_len.{n}") is not None:
        n += 1
    return n


def record(sim: Any, frames: int = DEFAULT_FRAMES,
           progress: Optional[Callable[[float, float], None]] = None) -> Recording:
    """Runs ``sim`` (an :class:`xlayer.Simulation` not yet started) to its end, reading its
    queues, routes and receivers at ``frames`` evenly spaced instants after the start
    (:class:`Recording`). The simulation is left at its end: ``sim.run()`` then returns its
    result at once. ``progress(now_s, end_s)`` is called after each frame."""
    if not isinstance(frames, int) or isinstance(frames, bool) or not 1 <= frames <= MAX_FRAMES:
        raise ValueError(f"frames: a whole number from 1 to {MAX_FRAMES}, found {frames!r}")
    if sim.now_s() > 0:
        raise XlayerError("the view records a simulation from its start; this one is at "
                          f"{sim.now_s():g} s")
    start = sim.results()  # the flows (random ones drawn) and the nodes, before anything runs
    flows = [{"flow": int(r.flow), "src": int(r.src), "dst": int(r.dst)}
             for r in start.flows.itertuples()]
    nodes = [int(n) for n in start.nodes["node"]]
    scenario = sim.scenario
    net = scenario.get("net", {}) if isinstance(scenario.get("net"), Mapping) else {}
    per_destination = net.get("queueing") == "per_destination"
    destinations = sorted({f["dst"] for f in flows})
    probe = _Probe(sim)
    levels = {n: _levels(probe, n) for n in nodes}
    capacity: Dict[int, Optional[float]] = {}
    for n in nodes:
        if per_destination:
            capacity[n] = float(net.get("dest_queue_packets") or 0) or None
        else:
            capacity[n] = probe.get(n, "net.queue_capacity")
    rec = Recording(flows=flows)
    last_drops = {n: probe.get(n, "mac.drops_queue") or 0.0 for n in nodes}

    def sample() -> None:
        rec.t_s.append(sim.now_s())
        queue: List[Optional[int]] = []
        fill: List[Optional[float]] = []
        drops: List[int] = []
        for n in nodes:
            if per_destination:
                lengths = [probe.get(n, f"net.dest_queue_len.{d}") for d in destinations]
            else:
                lengths = [probe.get(n, f"mac.queue_len.{k}") for k in range(levels[n])]
            known = [x for x in lengths if x is not None]
            if not known:
                queue.append(None)
                fill.append(None)
            else:
                queue.append(int(round(sum(known))))
                cap = capacity[n]
                fill.append(round(min(max(known) / cap, 1.0), 4) if cap else None)
            dropped = probe.get(n, "mac.drops_queue")
            if dropped is None:
                drops.append(0)
            else:
                drops.append(int(round(dropped - last_drops[n])))
                last_drops[n] = dropped
        rec.queue.append(queue)
        rec.fill.append(fill)
        rec.drops.append(drops)
        rec.routes.append([_route(probe, f["src"], f["dst"], len(nodes)) for f in flows])
        rec.received_bytes.append([probe.get(f["dst"], f"app.received_bytes.{f['flow']}")
                                   for f in flows])

    sample()
    end = sim.end_s
    for k in range(1, frames + 1):
        sim.run_until(end * k / frames)
        sample()
        if progress is not None:
            progress(sim.now_s(), end)
    return rec


def _route(probe: _Probe, src: int, dst: int, count: int) -> List[int]:
    """The nodes from ``src`` following each node's ``net.next_hop.<dst>`` as far as it leads
    (``dst`` last when it is reached; a loop or a missing entry ends it)."""
    path = [src]
    seen = {src}
    node = src
    while node != dst and len(path) <= count:
        nxt = probe.get(node, f"net.next_hop.{dst}")
        if nxt is None or nxt < 0:
            break
        node = int(nxt)
        if node in seen:
            break
        path.append(node)
        seen.add(node)
    return path


# ----------------------------------------------------------------------------------------------
# The page


def _page_data(rec: Recording, result: Any, scenario: Mapping[str, Any], *, title: str,
               source: str, check: Optional[Tuple[bool, str]]) -> Dict[str, Any]:
    from xlayer.analysis import format_value
    from xlayer.network import layout, link_model

    nodes = result.nodes
    model = link_model(scenario, nodes)
    pos, apart, apart_note = layout(nodes, model)
    flows = result.flows
    final = {int(r.flow): r for r in flows.itertuples()}
    counters = [c for c in ("mac_tx", "mac_retries", "drops_queue", "drops_retry_limit",
                            "rx_errors", "forwarded", "delivered") if c in nodes.columns]
    node_rows = []
    for r in nodes.itertuples():
        n = int(r.node)
        x, y = pos[n]
        node_rows.append({"id": n, "x": round(x, 3), "y": round(y, 3), "apart": n in apart,
                          "at": [round(float(r.x), 3), round(float(r.y), 3)],
                          "counters": {c: _plain(getattr(r, c)) for c in counters}})
    flow_rows = []
    for f in rec.flows:
        row = final.get(f["flow"])
        flow_rows.append({
            "id": f["flow"], "src": f["src"], "dst": f["dst"],
            "hops": _plain(getattr(row, "hops", None)) if row is not None else None,
            "transport": str(getattr(row, "transport", "") or "") if row is not None else "",
            "throughput": format_value("throughput_bps", getattr(row, "throughput_bps", None))
            if row is not None else "—",
        })
    s = result.summary
    # the link model's notes about its static routes do not apply: the view reads the routes
    notes = [n for n in model.notes if not n.startswith("route")]
    if apart_note:
        notes.append(apart_note)
    return {
        "title": title,
        "source": source,
        "check": None if check is None else {"ok": check[0], "text": check[1]},
        "summary": [
            ["seed", str(s.get("seed"))],
            ["nodes / flows", f"{s.get('nodes')} / {s.get('flows')}"],
            ["simulated", format_value("sim_time_s", s.get("sim_time_s"))],
            ["aggregate throughput", format_value("aggregate_throughput_bps",
                                                  s.get("aggregate_throughput_bps"))],
            ["Jain's index", format_value("jain_index", s.get("jain_index"))],
            ["delivery ratio", format_value("delivery_ratio", s.get("delivery_ratio"))],
            ["mean delay", format_value("delay_mean_s", s.get("delay_mean_s"))],
        ],
        "ranges": {k: _plain(scenario.get("radio", {}).get(k))
                   for k in ("tx_range_m", "cs_range_m")},
        "nodes": node_rows,
        "links": [[int(r.a), int(r.b), round(float(r.success), 4)]
                  for r in model.links.itertuples()],
        "wired": [[a, b] for a, b in model.wired],
        "flows": flow_rows,
        "notes": notes,
        "frames": {
            "t": [round(t, 6) for t in rec.t_s],
            "queue": rec.queue,
            "fill": rec.fill,
            "drops": rec.drops,
            "routes": rec.routes,
            "throughput": [[None if v is None else round(v, 1) for v in row]
                           for row in rec.throughput_bps()],
        },
    }


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def render(rec: Recording, result: Any, scenario: Mapping[str, Any], *, title: str = "",
           source: str = "", check: Optional[Tuple[bool, str]] = None) -> str:
    """The HTML page of a recorded run: ``result`` is its :class:`xlayer.Result`, ``check`` an
    optional ``(agrees, sentence)`` about the replay of a result folder."""
    name = title or str(result.summary.get("name") or scenario.get("name") or "xlayer run")
    data = _page_data(rec, result, scenario, title=name, source=source, check=check)
    # Inside <script>, "</script" would close the element and "<!--" change how it is parsed:
    # no "<" at all (JSON reads "\u003c" as "<").
    payload = json.dumps(data, allow_nan=False, separators=(",", ":")).replace("<", "\\u003c")
    return _PAGE.format(title=html.escape(f"xlayer view — {name}"), style=_STYLE,
                        data=payload, script=_SCRIPT)


def view(source: Any = None, out: Optional[PathLike] = None, *, frames: int = DEFAULT_FRAMES,
         seed: Optional[int] = None, overrides: Any = (), allow_python: bool = False,
         progress: Any = False) -> Path:
    """Writes the view of a run and returns its path.

    ``source`` is a run's result folder — its ``scenario.toml`` is run again and the page goes
    to ``<folder>/view.html`` — or a scenario (TOML path, dict, or None for the built-in
    default), run as :func:`xlayer.run` would, the page going to ``<name>-view.html`` in the
    working folder; ``out`` names another file. ``frames`` instants are recorded
    (:func:`record`). For a folder, the page and :attr:`check` say whether the replay gave
    the folder's ``summary.json`` again. ``progress``: as :meth:`xlayer.Simulation.run`.
    """
    path, _ = view_with_check(source, out, frames=frames, seed=seed, overrides=overrides,
                              allow_python=allow_python, progress=progress)
    return path


def view_with_check(source: Any = None, out: Optional[PathLike] = None, *,
                    frames: int = DEFAULT_FRAMES, seed: Optional[int] = None,
                    overrides: Any = (), allow_python: bool = False, progress: Any = False
                    ) -> Tuple[Path, Optional[Tuple[bool, str]]]:
    """:func:`view`, also returning the replay check of a result folder (``None`` for a
    scenario): ``(agrees, sentence)``."""
    from xlayer.api import Simulation
    from xlayer.results import read_json_object
    from xlayer.scenario import load_scenario

    folder: Optional[Path] = None
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        folder = Path(source)
        if not (folder / "scenario.toml").is_file() or not (folder / "summary.json").is_file():
            raise XlayerError(f"{source}: neither a run's result folder (no scenario.toml and "
                              "summary.json) nor a scenario file")
        if (overrides or seed is not None) and out is None:
            raise XlayerError(f"{source}: a changed seed or field makes another run than the "
                              "folder's; name the page with --out (out=) rather than put it "
                              "into the folder")
        raw = load_scenario(folder / "scenario.toml", overrides, seed)
        where = str(folder)
    else:
        raw = load_scenario(source, overrides, seed)
        where = str(source) if source is not None and not isinstance(source, Mapping) else ""
    sim = Simulation(raw, allow_python=allow_python)
    name = str(sim.scenario.get("name") or "xlayer")
    if out is not None:
        target = Path(out)
    elif folder is not None:
        target = folder / VIEW_FILE
    else:
        target = Path(f"{_file_stem(name)}-view.html")
    if target.is_dir():
        raise IsADirectoryError(21, "is a folder; --out names the HTML file", str(out))
    bar = None
    callback = None
    if progress is True:
        from xlayer._progress import ProgressBar

        bar = ProgressBar(f"{name} (recording the view)")
        callback = bar
    elif callable(progress):
        callback = progress
    try:
        rec = record(sim, frames=frames, progress=callback)
    finally:
        if bar is not None:
            bar.close()
    result = sim.run()
    check = None
    if folder is not None and not overrides and seed is None:
        check = _replay_check(result.summary, read_json_object(folder / "summary.json"))
    text = render(rec, result, sim.scenario, title=name, source=where, check=check)
    write_view(target, text)
    return target, check


def _replay_check(replayed: Mapping[str, Any], recorded: Mapping[str, Any]
                  ) -> Tuple[bool, str]:
    """Whether a replay gave the recorded summary again (wall-clock keys aside)."""
    from xlayer.results import _json_safe

    ours = _json_safe({k: v for k, v in replayed.items() if k not in WALL_CLOCK_KEYS})
    theirs = {k: v for k, v in recorded.items() if k not in WALL_CLOCK_KEYS}
    differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
    if not differ:
        return True, (f"replayed from the folder's scenario.toml: the run is identical to its "
                      f"summary.json ({replayed.get('events'):,} events)")
    version = recorded.get("xlayer_version")
    shown = ", ".join(differ[:4]) + (f" and {len(differ) - 4} more" if len(differ) > 4 else "")
    return False, (f"the replay of the folder's scenario.toml differs from its summary.json "
                   f"({shown}): the folder was written by xlayer {version}, this is "
                   f"{replayed.get('xlayer_version')}, or was edited; the view shows the "
                   "replay")


def _file_stem(name: str) -> str:
    stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return stem or "xlayer"


def write_view(target: Path, text: str) -> None:
    """Writes a page atomically (a hidden temporary file beside it, then renamed), making
    missing folders."""
    from xlayer.results import make_temp_file

    parent = target.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = make_temp_file(parent, f".{target.name}.partial-")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------------------------
# The page's HTML, style and script (all inline: the page fetches nothing)

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<header><h1 id="title"></h1><p id="source" class="note"></p><p id="check"></p>
<dl id="summary"></dl></header>
<main>
<section id="stage">
<svg id="net" role="img" aria-label="the network: nodes, links, routes and queues"></svg>
<div id="legend" class="note"></div>
</section>
<aside>
<div id="controls">
<button id="play" type="button">Play</button>
<button id="prev" type="button" title="previous frame (←)">◀</button>
<button id="next" type="button" title="next frame (→)">▶</button>
<label>speed <select id="speed"><option value="4">¼×</option><option value="2">½×</option>
<option value="1" selected>1×</option><option value="0.5">2×</option>
<option value="0.25">4×</option></select></label>
<input id="slider" type="range" min="0" max="0" value="0" aria-label="frame">
<p><b>t = <span id="time"></span></b> <span id="frame" class="note"></span></p>
<p id="totals" class="note"></p>
</div>
<h2>Flows</h2>
<table id="flows"><thead><tr><th>flow</th><th>src → dst</th><th>route now</th>
<th>in this frame</th><th>whole run</th></tr></thead><tbody></tbody></table>
<h2>Node</h2>
<div id="node" class="note">Point at a node.</div>
</aside>
</main>
<section id="charts">
<figure><svg id="chart-throughput" class="chart"></svg>
<figcaption>Throughput of each flow per frame (the ten busiest drawn), kbit/s; click to go
to a moment.</figcaption></figure>
<figure><svg id="chart-queue" class="chart"></svg>
<figcaption>Packets queued in the network (all nodes), and in the node that queued the
most.</figcaption></figure>
</section>
<footer id="notes" class="note"></footer>
<script type="application/json" id="xlayer-data">{data}</script>
<script>{script}</script>
</body>
</html>
"""

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1em 2em;
       color: #222; line-height: 1.35; }
h1 { font-size: 1.4em; margin: 0 0 .2em; } h2 { font-size: 1em; margin: 1em 0 .3em; }
.note { color: #555; font-size: .85em; }
#check.ok { color: #276221; } #check.bad { color: #a00; font-weight: bold; }
dl#summary { display: flex; flex-wrap: wrap; gap: .2em 1.4em; margin: .4em 0; }
dl#summary div { display: flex; gap: .4em; } dl#summary dt { color: #555; }
dl#summary dd { margin: 0; font-variant-numeric: tabular-nums; }
main { display: flex; gap: 1.5em; align-items: flex-start; flex-wrap: wrap; }
#stage { flex: 0 0 640px; width: 640px; } svg#net { width: 640px; height: 640px;
       border: 1px solid #ddd; background: #fff; display: block; }
aside { flex: 1 1 360px; min-width: 340px; }
#controls button { font-size: 1em; min-width: 2.4em; }
#slider { width: 100%; margin-top: .5em; }
table { border-collapse: collapse; font-size: .85em; }
th, td { border: 1px solid #ddd; padding: .15em .45em; text-align: right;
         font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; } td.text { text-align: left; }
td .swatch { display: inline-block; width: .9em; height: .9em; vertical-align: -.1em;
             margin-right: .3em; border-radius: 2px; }
#charts { display: flex; gap: 1.5em; flex-wrap: wrap; } #charts figure { margin: 1em 0;
       width: 560px; } figcaption { color: #555; font-size: .85em; }
svg.chart { width: 560px; height: 200px; border: 1px solid #eee; cursor: crosshair; }
.link { stroke-linecap: round; } .wired { stroke: #6b4f2a; stroke-width: 3; }
.node { stroke: #3b6ea5; stroke-width: 1.4; cursor: pointer; }
.node.apart { stroke: #6b4f2a; } .node.dropped { stroke: #d00; stroke-width: 3.2; }
.label { font-size: 10px; fill: #333; pointer-events: none; }
.qlabel { font-size: 9px; fill: #8a1c00; font-weight: bold; pointer-events: none; }
.route { fill: none; stroke-width: 2.2; stroke-linecap: round; stroke-linejoin: round; }
.range { fill: none; stroke: #999; stroke-width: 1; }
.cursor { stroke: #d00; stroke-width: 1; }
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("xlayer-data").textContent);
  var F = D.frames, NF = F.t.length, SVG = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                 "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  function colour(i) { return PALETTE[i % PALETTE.length]; }
  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function text(id, s) { document.getElementById(id).textContent = s; }
  function kbit(bps) {
    if (bps === null || bps === undefined) { return "—"; }
    var k = bps / 1000;
    return k >= 100 ? k.toFixed(0) : k >= 10 ? k.toFixed(1) : k.toFixed(2);
  }
  function seconds(t) { return (Math.round(t * 1000) / 1000).toFixed(3) + " s"; }

  // ---- header
  text("title", D.title);
  text("source", D.source ? "from " + D.source : "");
  if (D.check) {
    var c = document.getElementById("check");
    c.textContent = D.check.text;
    c.className = D.check.ok ? "ok" : "bad";
  }
  var dl = document.getElementById("summary");
  D.summary.forEach(function (kv) {
    var d = document.createElement("div");
    var dt = document.createElement("dt"); dt.textContent = kv[0];
    var dd = document.createElement("dd"); dd.textContent = kv[1];
    d.appendChild(dt); d.appendChild(dd); dl.appendChild(d);
  });
  text("notes", D.notes.join("; "));

  // ---- the network's geometry: metres to a square view, y up
  var byId = {}, xs = [], ys = [];
  D.nodes.forEach(function (n) { byId[n.id] = n; xs.push(n.x); ys.push(n.y); });
  var minX = Math.min.apply(null, xs), maxX = Math.max.apply(null, xs);
  var minY = Math.min.apply(null, ys), maxY = Math.max.apply(null, ys);
  var span = Math.max(maxX - minX, maxY - minY, 1), SIZE = 640, PAD = 36;
  var scale = (SIZE - 2 * PAD) / span;
  var offX = PAD + ((SIZE - 2 * PAD) - (maxX - minX) * scale) / 2;
  var offY = PAD + ((SIZE - 2 * PAD) - (maxY - minY) * scale) / 2;
  function px(n) { return offX + (n.x - minX) * scale; }
  function py(n) { return SIZE - (offY + (n.y - minY) * scale); }
  var svg = document.getElementById("net");
  svg.setAttribute("viewBox", "0 0 " + SIZE + " " + SIZE);
  var defs = el("defs", {}, svg);
  D.flows.forEach(function (f, i) {
    var m = el("marker", {id: "arrow-" + i, viewBox: "0 0 10 10", refX: "9", refY: "5",
                          markerWidth: "5", markerHeight: "5", orient: "auto-start-reverse"},
               defs);
    el("path", {d: "M0,0 L10,5 L0,10 z", fill: colour(i)}, m);
  });
  var gRange = el("g", {}, svg), gLinks = el("g", {}, svg), gRoutes = el("g", {}, svg);
  var gNodes = el("g", {}, svg), gLabels = el("g", {}, svg);
  // reception and carrier-sense ranges around the first flow's source
  var centre = D.flows.length ? byId[D.flows[0].src] : D.nodes[0];
  if (centre && !centre.apart) {
    [["tx_range_m", "6,4"], ["cs_range_m", "2,4"]].forEach(function (r) {
      var m = D.ranges[r[0]];
      if (m) { el("circle", {class: "range", cx: px(centre), cy: py(centre), r: m * scale,
                             "stroke-dasharray": r[1]}, gRange); }
    });
  }
  D.links.forEach(function (l) {
    var a = byId[l[0]], b = byId[l[1]];
    if (!a || !b) { return; }
    var shade = Math.round(224 - 224 * l[2]);
    el("line", {class: "link", x1: px(a), y1: py(a), x2: px(b), y2: py(b),
                stroke: "rgb(" + shade + "," + shade + "," + shade + ")",
                "stroke-width": 1 + l[2], "data-success": l[2]}, gLinks);
  });
  D.wired.forEach(function (w) {
    var a = byId[w[0]], b = byId[w[1]];
    if (a && b) { el("line", {class: "wired", x1: px(a), y1: py(a), x2: px(b), y2: py(b)},
                     gLinks); }
  });
  var R = Math.max(5, Math.min(11, 260 / Math.sqrt(D.nodes.length + 1)));
  var sources = {};
  D.flows.forEach(function (f, i) { if (!(f.src in sources)) { sources[f.src] = i; } });
  var circles = {}, qlabels = {};
  D.nodes.forEach(function (n, i) {
    if (n.id in sources) {
      el("circle", {cx: px(n), cy: py(n), r: R + 4, fill: "none",
                    stroke: colour(sources[n.id]), "stroke-width": 2}, gNodes);
    }
    var c = el("circle", {class: "node" + (n.apart ? " apart" : ""), cx: px(n), cy: py(n),
                          r: R, fill: "#fff", "data-node": n.id}, gNodes);
    c.addEventListener("mouseenter", function () { showNode(i); });
    circles[n.id] = c;
    if (D.nodes.length <= 200) {
      var t = el("text", {class: "label", x: px(n) + R + 1, y: py(n) - R + 1}, gLabels);
      t.textContent = n.id;
    }
    qlabels[n.id] = el("text", {class: "qlabel", x: px(n) + R + 1, y: py(n) + R + 8},
                       gLabels);
  });
  document.getElementById("legend").textContent =
    "Links: grey to black by frame success probability" +
    (D.wired.length ? "; brown: wired" : "") +
    ". Nodes: white to red by how full their fullest queue is, the number of packets held " +
    "beside them; a red ring: a full queue dropped packets in this frame." +
    (centre && D.ranges.tx_range_m ? " Dashed circles: reception and carrier-sense ranges " +
     "of node " + centre.id + "." : "");

  // ---- the flow table
  var tbody = document.querySelector("#flows tbody"), cells = [];
  D.flows.forEach(function (f, i) {
    var tr = document.createElement("tr");
    tr.innerHTML = "<td class='text'><span class='swatch'></span></td><td></td>" +
                   "<td class='text'></td><td></td><td></td>";
    tr.children[0].firstChild.style.background = colour(i);
    tr.children[0].appendChild(document.createTextNode(f.id +
      (f.transport ? " " + f.transport : "")));
    tr.children[1].textContent = f.src + " → " + f.dst;
    tr.children[4].textContent = f.throughput;
    tbody.appendChild(tr);
    cells.push(tr);
  });

  function fillColour(fill) {
    if (fill === null || fill === undefined) { return "#eee"; }
    var f = Math.max(0, Math.min(1, fill));
    // white -> orange -> red
    var r = 255, g = Math.round(255 - 200 * f), b = Math.round(255 - 255 * Math.min(1, 2 * f));
    return "rgb(" + r + "," + g + "," + b + ")";
  }

  // ---- a frame
  var current = 0, lastNode = null;
  function routePath(nodes, i, shared) {
    var pts = [];
    for (var h = 0; h < nodes.length; h++) { if (!byId[nodes[h]]) { return null; } }
    var d = "";
    for (var k = 0; k + 1 < nodes.length; k++) {
      var a = byId[nodes[k]], b = byId[nodes[k + 1]];
      var key = Math.min(a.id, b.id) + "-" + Math.max(a.id, b.id);
      var lane = shared[key].indexOf(i) - (shared[key].length - 1) / 2;
      var dx = px(b) - px(a), dy = py(b) - py(a), len = Math.sqrt(dx * dx + dy * dy) || 1;
      var sign = a.id < b.id ? 1 : -1;  // the same side for both directions of a link
      var nx = -dy / len * lane * 4 * sign, ny = dx / len * lane * 4 * sign;
      var sx = px(a) + nx + dx / len * R, sy = py(a) + ny + dy / len * R;
      var ex = px(b) + nx - dx / len * (R + 2), ey = py(b) + ny - dy / len * (R + 2);
      d += "M" + sx.toFixed(1) + "," + sy.toFixed(1) + " L" + ex.toFixed(1) + "," +
           ey.toFixed(1) + " ";
    }
    return d;
  }
  function show(k) {
    current = Math.max(0, Math.min(NF - 1, k));
    document.getElementById("slider").value = current;
    document.body.setAttribute("data-frame", current);
    text("time", seconds(F.t[current]));
    text("frame", "frame " + current + " of " + (NF - 1));
    var total = 0, peak = 0, peakNode = null;
    D.nodes.forEach(function (n, i) {
      var q = F.queue[current][i], c = circles[n.id];
      c.setAttribute("fill", fillColour(F.fill[current][i]));
      c.setAttribute("data-queue", q === null ? "" : q);
      c.setAttribute("class", "node" + (n.apart ? " apart" : "") +
                     (F.drops[current][i] > 0 ? " dropped" : ""));
      qlabels[n.id].textContent = q ? q : "";
      if (q) { total += q; if (q > peak) { peak = q; peakNode = n.id; } }
    });
    text("totals", total + " packets queued in the network" +
         (peakNode !== null ? ", most at node " + peakNode + " (" + peak + ")" : ""));
    // routes: flows sharing a link side by side
    while (gRoutes.firstChild) { gRoutes.removeChild(gRoutes.firstChild); }
    var routes = F.routes[current], shared = {};
    routes.forEach(function (r, i) {
      for (var h = 0; h + 1 < r.length; h++) {
        var key = Math.min(r[h], r[h + 1]) + "-" + Math.max(r[h], r[h + 1]);
        (shared[key] = shared[key] || []).push(i);
      }
    });
    routes.forEach(function (r, i) {
      var f = D.flows[i], complete = r[r.length - 1] === f.dst;
      var tput = current > 0 ? F.throughput[current - 1][i] : null;
      cells[i].children[2].textContent = r.length > 1 ? r.join("→") +
        (complete ? "" : " (no route on)") : (f.src === f.dst ? "" : "no route");
      cells[i].children[3].textContent = current > 0 ? kbit(tput) + " kbit/s" : "—";
      if (r.length < 2) { return; }
      var d = routePath(r, i, shared);
      if (d === null) { return; }
      el("path", {class: "route", d: d, stroke: colour(i),
                  "stroke-dasharray": complete ? "none" : "5,4",
                  "marker-end": "url(#arrow-" + i + ")", "data-flow": f.id,
                  "data-nodes": r.join(" ")}, gRoutes);
    });
    cursor(current);
    if (lastNode !== null) { showNode(lastNode); }
  }
  function showNode(i) {
    lastNode = i;
    var n = D.nodes[i], q = F.queue[current][i], lines = [];
    lines.push("node " + n.id + " at (" + n.at[0] + ", " + n.at[1] + ") m" +
               (n.apart ? ", drawn apart" : ""));
    lines.push("queue now: " + (q === null ? "none" : q + " packets") +
               (F.fill[current][i] !== null ? " (fullest queue " +
                Math.round(F.fill[current][i] * 100) + " % full)" : ""));
    lines.push("queue drops in this frame: " + F.drops[current][i]);
    var cs = n.counters, keys = Object.keys(cs);
    if (keys.length) {
      lines.push("whole run: " + keys.map(function (k) { return k + " " + cs[k]; })
                 .join(", "));
    }
    document.getElementById("node").textContent = lines.join("\n");
    document.getElementById("node").style.whiteSpace = "pre-line";
  }

  // ---- charts
  var charts = [];
  function chart(id, series, yLabel) {
    var s = document.getElementById(id), W = 560, H = 200, L = 52, B = 22, T = 20, Rm = 8;
    s.setAttribute("viewBox", "0 0 " + W + " " + H);
    var tmax = F.t[NF - 1] || 1, ymax = 0;
    series.forEach(function (se) { se.values.forEach(function (v) {
      if (v !== null && v > ymax) { ymax = v; } }); });
    ymax = ymax > 0 ? ymax * 1.05 : 1.05;
    function X(t) { return L + (W - L - Rm) * t / tmax; }
    function Y(v) { return H - B - (H - B - T) * v / ymax; }
    el("line", {x1: L, y1: H - B, x2: W - Rm, y2: H - B, stroke: "#999"}, s);
    el("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#999"}, s);
    [0, 0.5, 1].forEach(function (q) {
      var t = el("text", {x: L - 4, y: Y(ymax / 1.05 * q) + 3, "text-anchor": "end",
                          "font-size": 9}, s);
      t.textContent = tick(ymax / 1.05 * q);
      var u = el("text", {x: X(tmax * q), y: H - 6, "text-anchor": q === 1 ? "end" :
                          "middle", "font-size": 9}, s);
      u.textContent = tick(tmax * q) + " s";
    });
    var yl = el("text", {x: L, y: 12, "font-size": 10}, s); yl.textContent = yLabel;
    series.forEach(function (se) {
      var d = "", pen = false;
      se.values.forEach(function (v, k) {
        if (v === null) { pen = false; return; }
        d += (pen ? "L" : "M") + X(se.t[k]).toFixed(1) + "," + Y(v).toFixed(1) + " ";
        pen = true;
      });
      el("path", {d: d, fill: "none", stroke: se.colour, "stroke-width": 1.3,
                  "stroke-dasharray": se.dash || "none"}, s);
    });
    var cur = el("line", {class: "cursor", x1: L, x2: L, y1: T, y2: H - B}, s);
    s.addEventListener("click", function (ev) {
      var box = s.getBoundingClientRect();
      var t = ((ev.clientX - box.left) * W / box.width - L) / (W - L - Rm) * tmax;
      var best = 0;
      for (var k = 0; k < NF; k++) {
        if (Math.abs(F.t[k] - t) < Math.abs(F.t[best] - t)) { best = k; }
      }
      stop(); show(best);
    });
    charts.push(function (k) { cur.setAttribute("x1", X(F.t[k])); cur.setAttribute("x2",
                                                                               X(F.t[k])); });
  }
  function tick(v) {
    if (v >= 100) { return Math.round(v).toLocaleString("en-US"); }
    return String(parseFloat(v.toPrecision(3)));
  }
  function cursor(k) { charts.forEach(function (c) { c(k); }); }
  var busiest = D.flows.map(function (f, i) {
    var sum = 0;
    F.throughput.forEach(function (row) { sum += row[i] || 0; });
    return [sum, i];
  }).sort(function (a, b) { return b[0] - a[0]; }).slice(0, 10);
  chart("chart-throughput", busiest.map(function (p) {
    return {t: F.t.slice(1), colour: colour(p[1]),
            values: F.throughput.map(function (row) {
              return row[p[1]] === null ? null : row[p[1]] / 1000; })};
  }), "kbit/s");
  var totals = F.queue.map(function (row) {
    return row.reduce(function (a, q) { return a + (q || 0); }, 0); });
  var peakIdx = 0, peakSum = -1;
  D.nodes.forEach(function (n, i) {
    var s = 0; F.queue.forEach(function (row) { s += row[i] || 0; });
    if (s > peakSum) { peakSum = s; peakIdx = i; }
  });
  chart("chart-queue", [
    {t: F.t, colour: "#333", values: totals},
    {t: F.t, colour: "#d62728", dash: "4,3",
     values: F.queue.map(function (row) { return row[peakIdx]; })}
  ], "packets (dashed: node " + D.nodes[peakIdx].id + ")");

  // ---- controls
  var timer = null, slider = document.getElementById("slider");
  slider.max = NF - 1;
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    text("play", "Play");
  }
  function play() {
    if (current >= NF - 1) { show(0); }
    var period = 80 * parseFloat(document.getElementById("speed").value);
    timer = setInterval(function () {
      if (current >= NF - 1) { stop(); return; }
      show(current + 1);
    }, period);
    text("play", "Pause");
  }
  document.getElementById("play").addEventListener("click", function () {
    if (timer === null) { play(); } else { stop(); }
  });
  document.getElementById("speed").addEventListener("change", function () {
    if (timer !== null) { stop(); play(); }
  });
  document.getElementById("prev").addEventListener("click", function () {
    stop(); show(current - 1); });
  document.getElementById("next").addEventListener("click", function () {
    stop(); show(current + 1); });
  slider.addEventListener("input", function () { stop(); show(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "ArrowRight") { stop(); show(current + 1); }
    else if (ev.key === "ArrowLeft") { stop(); show(current - 1); }
    else if (ev.key === " ") { ev.preventDefault(); if (timer === null) { play(); } else {
      stop(); } }
  });
  // #frame=K opens at frame K (paused; "last" for the last frame); otherwise the run plays
  // from the start.
  var m = /frame=(\d+|last)/.exec(window.location.hash);
  if (m) { show(m[1] === "last" ? NF - 1 : parseInt(m[1], 10)); }
  else { show(0); play(); }
  document.body.setAttribute("data-ready", "frames=" + NF + " nodes=" + D.nodes.length +
                             " links=" + D.links.length + " flows=" + D.flows.length);
})();
"""
