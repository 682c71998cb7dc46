"""The network a scenario builds, as the plots and the viewer draw it: the radio links with
their frame success probability and each flow's static route, from the core's own link model
(``xlayer._core.oracle_model``, the optimum oracle's model), the wired links, and where to draw
nodes that are wired only (an access point's servers, 1000 km away in the scenario).

Needs pandas only (no matplotlib): :mod:`xlayer.plots` and :mod:`xlayer.viewer` both use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import pandas as pd

from xlayer.errors import XlayerError

__all__ = ["MAX_MODEL_NODES", "LinkModel", "link_model", "layout"]


#: Above this many nodes the topology plot draws no links or routes: the core's model also
#: computes the conflict graph, whose size grows with the square of the links.
MAX_MODEL_NODES = 500


@dataclass
class LinkModel:
    """What the topology plot draws besides positions: the radio links (``links``: columns
    ``a``, ``b``, ``success``, one row per node pair, the better direction's frame success
    probability), the wired links (``wired``: pairs), each flow's route as node pairs
    (``routes``), and why a part is missing (``notes``)."""

    links: pd.DataFrame
    wired: List[Tuple[int, int]]
    routes: Dict[int, List[Tuple[int, int]]]
    notes: List[str]


def link_model(scenario: Mapping[str, Any], nodes: pd.DataFrame) -> LinkModel:
    """The links and routes of a scenario as the core models them (``xlayer._core.oracle_model``,
    the optimum oracle's model: links that can carry data with their success probability, and
    each flow's static route). The core's model refuses wired links, so for a scenario with
    wires the radio links come from the same model of the radio nodes alone (the scenario with
    its positions made explicit and its wires and flows left out), and the routes are not
    known."""
    from xlayer import _core
    from xlayer.scenario import scenario_to_json

    wired = _wired_pairs(scenario)
    notes: List[str] = []
    routes: Dict[int, List[Tuple[int, int]]] = {}
    model = None
    if len(nodes) > MAX_MODEL_NODES:  # the model builds the conflict graph too: quadratic
        return LinkModel(links=pd.DataFrame(columns=["a", "b", "success"]), wired=wired,
                         routes={}, notes=[f"links and routes not drawn for more than "
                                           f"{MAX_MODEL_NODES} nodes"])
    try:
        model = _core.oracle_model(scenario_to_json(scenario))
    except XlayerError:
        radio_only = dict(scenario)
        radio_only["topology"] = {"kind": "explicit",
                                  "positions": nodes[["x", "y"]].astype(float).values.tolist()}
        for key in ("flows", "flows_random", "wired", "optimizers", "events"):
            radio_only.pop(key, None)
        radio_only["flows"] = []
        try:
            model = _core.oracle_model(scenario_to_json(radio_only))
            notes.append("routes not drawn (the link model covers radio links only)")
        except XlayerError as e:
            notes.append(f"links and routes not drawn ({str(e).splitlines()[0]})")
    links = pd.DataFrame(columns=["a", "b", "success"])
    if model is not None:
        raw = pd.DataFrame({"from": model["links"]["from"], "to": model["links"]["to"],
                            "success": model["links"]["success"]})
        if len(raw):
            raw["a"] = raw[["from", "to"]].min(axis=1)
            raw["b"] = raw[["from", "to"]].max(axis=1)
            links = raw.groupby(["a", "b"], as_index=False)["success"].max()
        pairs = [(int(a), int(b)) for a, b in zip(model["links"]["from"], model["links"]["to"])]
        for f in model.get("flows", []):
            routes[int(f["flow"])] = [pairs[i] for i in f.get("route", [])]
        routing = str(scenario.get("net", {}).get("routing", "static"))
        if routes and routing != "static":
            notes.append(f"routes are the static shortest paths; {routing} may choose "
                         "others during the run")
    return LinkModel(links=links, wired=wired, routes=routes, notes=notes)


def _wired_pairs(scenario: Mapping[str, Any]) -> List[Tuple[int, int]]:
    pairs = [(int(w["a"]), int(w["b"])) for w in scenario.get("wired", []) or []
             if isinstance(w, Mapping) and "a" in w and "b" in w]
    topo = scenario.get("topology", {}) or {}
    if topo.get("kind") == "access_point":  # node 0 the access point, 1..count its servers
        pairs += [(0, i) for i in range(1, int(topo.get("count", 0)) + 1)]
    return pairs


def layout(nodes: pd.DataFrame, model: Optional[LinkModel]
           ) -> Tuple[Dict[int, Tuple[float, float]], List[int], str]:
    """Positions to draw: the nodes' own, except wired-only nodes (wired links, no radio link)
    far from the radio cell, which are placed in a column beside it. Returns the positions,
    the wired-only nodes and a note saying how far they really are."""
    pos = {int(r.node): (float(r.x), float(r.y)) for r in nodes.itertuples()}
    if model is None or not model.wired:
        return pos, [], ""
    radio = set(model.links["a"].astype(int)) | set(model.links["b"].astype(int))
    wired_nodes = {n for pair in model.wired for n in pair}
    apart = sorted(n for n in wired_nodes if n not in radio and n in pos)
    if not apart or len(apart) == len(pos):
        return pos, [], ""
    cell = [p for n, p in pos.items() if n not in apart]
    xs, ys = [p[0] for p in cell], [p[1] for p in cell]
    extent = max(max(xs) - min(xs), max(ys) - min(ys), 1.0)
    centre = (sum(xs) / len(xs), sum(ys) / len(ys))
    distance = min(math.dist(pos[n], centre) for n in apart)
    if distance < 3 * extent:  # near enough to draw where they are
        return pos, [], ""
    column_x = min(xs) - 0.45 * extent
    span = max(max(ys) - min(ys), extent * 0.5)
    step = span / max(len(apart) - 1, 1)
    top = (max(ys) + min(ys)) / 2 + span / 2 if len(apart) > 1 else centre[1]
    for i, n in enumerate(apart):
        pos[n] = (column_x, top - i * step)
    return pos, apart, f"wired-only nodes drawn apart (really {distance / 1000:,.0f} km away)"
