"""Fields and number formats: what a summary key or table column holds (its readable name,
unit and range) and how its values are shown (``0.344 Mbit/s``, ``2,426 ms``, ``1,748``).

Kept apart from :mod:`xlayer.analysis` (which re-exports every name here) and free of pandas and
numpy imports, so that ``xlayer run`` prints its summary without importing them.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

INF = math.inf


# ----------------------------------------------------------------------------------------------
# Fields: what a number is, its unit, its range


@dataclass(frozen=True)
class Field:
    """What a summary key or table column holds.

    ``name`` is a readable name; ``unit`` the unit of the stored value (``bit/s``, ``s``,
    ``bytes``, ``m``, ... or ``""``); ``lower``/``upper`` the range of the quantity, which
    confidence intervals respect; ``integer`` a count; ``show`` the unit values are shown in
    (``Mbit/s``), or None to choose one from the values' size; ``doc`` one line for tables."""

    name: str
    unit: str = ""
    lower: float = -INF
    upper: float = INF
    integer: bool = False
    show: Optional[str] = None
    doc: str = ""
    #: A column of the same table whose value bounds this one from above in each row (the
    #: starved flows of a run are at most its flows), used when ``upper`` is infinite.
    upper_field: Optional[str] = None


def _count(name: str, doc: str = "") -> Field:
    return Field(name, "", 0.0, INF, True, None, doc)


def _ratio(name: str, doc: str = "") -> Field:
    return Field(name, "", 0.0, 1.0, False, None, doc)


def _rate(name: str, show: Optional[str] = None, doc: str = "") -> Field:
    return Field(name, "bit/s", 0.0, INF, False, show, doc)


def _time(name: str, show: Optional[str] = None, doc: str = "") -> Field:
    return Field(name, "s", 0.0, INF, False, show, doc)


#: The summary keys and the columns of runs, flows and nodes tables xlayer knows by name
#: (docs/scenario.md, "What the numbers mean"); others are described from their suffix.
FIELDS: Dict[str, Field] = {
    # summary.json / runs.parquet
    "aggregate_throughput_bps": _rate("Aggregate throughput", "Mbit/s",
                                      "sum of the flows' throughputs"),
    "median_flow_throughput_bps": _rate("Median flow throughput", "kbit/s",
                                        "median of a run's per-flow throughputs"),
    "jain_index": _ratio("Jain's fairness index", "(Σ r)² / (N · Σ r²) over the flows"),
    "log_utility": Field("Log utility", doc="Σ ln r over the flows (r in bit/s)"),
    "starved_flows": Field("Starved flows", "", 0.0, INF, True, None, "flows below 1 bit/s",
                           upper_field="flows"),
    "delivery_ratio": _ratio("Delivery ratio", "share of the packets sent that arrived"),
    "delay_mean_s": _time("Mean delay", "ms"),
    "events": _count("Events"),
    "wall_s": _time("Wall-clock time", "s"),
    "sim_time_s": _time("Simulated time", "s"),
    "duration_s": _time("Duration", "s"),
    "warmup_s": _time("Warm-up", "s"),
    "nodes": _count("Nodes"),
    "flows": _count("Flows"),
    "seed": _count("Seed"),
    "name": Field("Name"),
    "xlayer_version": Field("xlayer version"),
    "ctrl_tx": _count("Control packets sent"),
    "ctrl_tx_bytes": Field("Control bytes sent", "bytes", 0.0, INF, True),
    "ctrl_airtime_s": _time("Control airtime", "s"),
    "dclo_intervals": _count("DCLO matching intervals"),
    "dclo_links_per_interval": Field("DCLO links matched per interval", "", 0.0),
    "mac_level_use": Field("Packets per MAC priority level", doc="n0/n1/…, lowest level first"),
    "backpressure_holds": _count("Back-pressure holds",
                                 "times a scheduler had packets but sent none"),
    "optimizers": _count("Optimizers"),
    "optimizer_failures": _count("Optimizer failures"),
    "optimizer_conflicts": _count("Optimizer conflicts"),
    "optimizer_memory_bytes": Field("Optimizer memory", "bytes", 0.0, INF, True),
    "optimizer_wall_s": _time("Optimizer wall-clock time", "s"),
    # keys of the runs table
    "run": Field("Run"),
    "stack": Field("Stack"),
    "status": Field("Status"),
    "error": Field("Error"),
    # flows.csv
    "flow": _count("Flow"),
    "src": _count("Source"),
    "dst": _count("Destination"),
    "hops": _count("Hops", "static shortest-path hop count"),
    "sent": _count("Sent", "packets created in the window"),
    "received": _count("Received", "of those, packets that arrived"),
    "throughput_bps": _rate("Throughput", "kbit/s"),
    "delay_median_s": _time("Median delay", "ms"),
    "delay_p95_s": _time("95th-percentile delay", "ms"),
    "rate": Field("Offered rate"),
    "hops_mean": Field("Hops travelled (mean)", "", 0.0),
    "payload_bytes": Field("Payload", "bytes", 0.0, INF, True),
    "arrived_in_window": _count("Arrived in window"),
    "duplicates": _count("Duplicates"),
    "queue_drops": _count("Queue drops", "the flow's packets lost to full queues"),
    "link_drops": _count("Link drops", "the flow's packets lost at the MAC retry limit"),
    "mac_attempts_mean": Field("MAC attempts per packet", "", 0.0),
    "transport": Field("Transport"),
    "completion_s": _time("Completion time", "s"),
    "app_bytes": Field("Application bytes", "bytes", 0.0, INF, True),
    "retransmits": _count("Retransmissions"),
    "fast_retransmits": _count("Fast retransmissions"),
    "timeouts": _count("Timeouts"),
    "stream_errors": _count("Stream errors"),
    # nodes.csv
    "node": _count("Node"),
    "x": Field("x", "m"),
    "y": Field("y", "m"),
    # tcp_trace.csv
    "cwnd_segments": Field("Congestion window", "segments", 0.0),
    "ssthresh_segments": Field("Slow-start threshold", "segments", 0.0),
    "srtt_s": _time("Smoothed RTT", "ms"),
    "rto_s": _time("Retransmission timeout", "ms"),
    "t_s": Field("Time", "s", 0.0),
}

#: Units of a field named by its suffix (``spacing_m``), for names not in :data:`FIELDS`.
_SUFFIX_UNITS = (("_bps", "bit/s", 0.0), ("_mbps", "Mbit/s", 0.0), ("_bytes", "bytes", 0.0),
                 ("_s", "s", 0.0), ("_m", "m", -INF), ("_dbm", "dBm", -INF), ("_db", "dB", -INF),
                 ("_pps", "packets/s", 0.0), ("_mw", "mW", 0.0), ("_w", "W", 0.0),
                 ("_mhz", "MHz", 0.0), ("_ratio", "", 0.0), ("_index", "", 0.0))

#: Display units: (stored unit, shown unit, factor from stored to shown), largest first.
_SCALES: Dict[str, Tuple[Tuple[str, float], ...]] = {
    "bit/s": (("Gbit/s", 1e-9), ("Mbit/s", 1e-6), ("kbit/s", 1e-3), ("bit/s", 1.0)),
    "bytes": (("GB", 1e-9), ("MB", 1e-6), ("kB", 1e-3), ("bytes", 1.0)),
    "s": (("s", 1.0), ("ms", 1e3), ("µs", 1e6)),
}


def field_info(name: str) -> Field:
    """The :class:`Field` of a summary key or column; for an unknown one, its unit and range
    from the name's suffix (``_bps``, ``_s``, ``_bytes``, ``_m``, ``_ratio``, ...), else a field
    without unit or bounds. Swept paths (``topology.spacing_m``) are described by their last
    component's suffix and keep the path as their name."""
    if name in FIELDS:
        return FIELDS[name]
    last = name.rsplit(".", 1)[-1].lower()
    last = re.sub(r"\[\d+\]$", "", last)
    for suffix, unit, lower in _SUFFIX_UNITS:
        if last.endswith(suffix):
            upper = 1.0 if suffix in ("_ratio", "_index") else INF
            return Field(name, unit, lower, upper)
    return Field(name)


def display_unit(name: str, values: Any = None) -> Tuple[str, float]:
    """``(unit shown, factor)``: the unit values of ``name`` are shown in and the factor from
    the stored value (``Mbit/s``, ``1e-6`` for ``aggregate_throughput_bps``). A field without a
    fixed display unit takes the largest unit in which the typical (median) absolute value of
    ``values`` is at least 1."""
    info = field_info(name)
    scales = _SCALES.get(info.unit)
    if scales is None:
        return info.unit, 1.0
    if info.show is not None:
        return info.show, dict(scales)[info.show]
    typical = _typical(values)
    if typical is None:
        return scales[-1] if info.unit != "s" else scales[0]
    for unit, factor in scales:
        if typical * factor >= 1:
            return unit, factor
    return scales[-1]


def _typical(values: Any) -> Optional[float]:
    """The median absolute value of the finite, non-zero ``values`` (one number or many)."""
    if values is None:
        return None
    if isinstance(values, (int, float)) or _is_numpy_number(values):
        x = abs(float(values))
        return x if math.isfinite(x) and x > 0 else None
    import numpy as np  # a column of values: the caller has numpy (pandas) at hand

    try:
        arr = np.asarray(list(values), dtype=float)
    except (TypeError, ValueError):
        return None
    arr = np.abs(arr[np.isfinite(arr)])
    arr = arr[arr > 0]
    return float(np.median(arr)) if arr.size else None


def _is_numpy_number(value: Any) -> bool:
    # Without importing numpy: a value is a numpy scalar only if numpy is imported already.
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, (np.integer, np.floating))


def label(name: str, values: Any = None, unit: Optional[str] = None) -> str:
    """A readable name with its display unit: ``Aggregate throughput (Mbit/s)``; ``unit``
    overrides the unit shown (from :func:`display_unit`)."""
    shown = unit if unit is not None else display_unit(name, values)[0]
    return f"{field_info(name).name} ({shown})" if shown else field_info(name).name


# ----------------------------------------------------------------------------------------------
# Number formats


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool((isinstance(value, float) or _is_numpy_number(value)) and math.isnan(value))
    except TypeError:
        return False


def _decimals(value: float, digits: int = 3) -> int:
    """Decimals that give ``digits`` significant digits, never cutting the integer part."""
    if value == 0 or not math.isfinite(value):
        return 0
    magnitude = math.floor(math.log10(abs(value)))
    return max(0, digits - 1 - magnitude)


def format_number(value: Any, digits: int = 3, decimals: Optional[int] = None) -> str:
    """A number as people read it: ``digits`` significant digits but every digit of the integer
    part (``1,239``, ``24.4``, ``3.99``, ``0.694``), thousands separated, integers exact,
    ``∞`` for infinity (and for ±1.8e308, the largest float, which the core uses as
    "unbounded"), ``—`` for a missing value; scientific notation only below 1e-4."""
    if _missing(value):
        return "—"
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if not isinstance(value, float):
        return str(value)
    if math.isinf(value) or abs(value) >= 1.7e308:
        return "∞" if value > 0 else "−∞"
    if decimals is None:
        if value != 0 and abs(value) < 1e-4:
            return f"{value:.{max(digits - 1, 0)}e}"
        decimals = _decimals(value, digits)
    text = f"{value:,.{decimals}f}"
    return "0" if text.strip("-0.,") == "" else text


def format_value(name: str, value: Any, unit: Optional[Tuple[str, float]] = None,
                 with_unit: bool = True, digits: int = 3) -> str:
    """One value of field ``name`` in its display unit: ``0.344 Mbit/s``, ``2,426 ms``,
    ``0.383``, ``1,748`` (counts as integers). ``unit`` is a ``(unit, factor)`` from
    :func:`display_unit` to share one unit over a column."""
    if _missing(value):
        return "—"
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    info = field_info(name)
    shown, factor = unit if unit is not None else display_unit(name, value)
    if info.integer and factor == 1.0 and float(value).is_integer():
        text = f"{int(value):,}"
    else:
        text = format_number(float(value) * factor, digits)
    return f"{text} {shown}" if with_unit and shown and text != "—" else text
