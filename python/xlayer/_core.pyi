"""Type stubs of the native module ``xlayer._core`` (crates/xlayer-py): the Rust core's surface.

Scenarios cross the boundary as JSON text; results come back as plain dicts and lists.
"""

from typing import Any, Dict, List, Optional, Tuple

__version__: str

class XlayerError(Exception):
    """Base of every error xlayer raises on purpose."""

class ScenarioError(XlayerError):
    """A scenario field is malformed or out of range (the message names the field)."""

class TopologyError(XlayerError):
    """The topology cannot carry what the scenario asks (e.g. an unreachable destination)."""

class SimulationError(XlayerError):
    """The run itself failed."""

class TuningError(XlayerError):
    """A tuning-layer get/set named an unknown parameter or an out-of-range value."""

class PcapError(XlayerError):
    """A capture is not a pcap or pcapng file, or is truncated or malformed (the message says
    what and where: byte offset, record number)."""

def capture_flavors(data: bytes) -> List[Dict[str, Any]]:
    """The TCP connections of a capture (pcap or pcapng bytes) with the passive flavor
    detector's verdict: dicts with ``src, sport, dst, dport, packets, flavor, sack, confidence``
    and the details ``data_bytes, fast_recoveries, timeouts, decided_s, first_s, last_s``.
    Raises :class:`PcapError`."""

def normalize_scenario(json_text: str) -> str:
    """Validates a scenario given as JSON; returns it as JSON with every default filled in."""

def scenario_to_toml(json_text: str) -> str:
    """Validates a scenario given as JSON; returns it as TOML with every default filled in."""

def oracle_model(json_text: str) -> Dict[str, Any]:
    """The optimum oracle's model of a scenario (xlayer_core::oracle): ``nodes``,
    ``packet_bytes``, ``links`` (columns from, to, rate_bps, rx_dbm, success, backoff_s,
    attempt_s, capacity_pps; the last two per packet size), ``conflicts`` (pairs of link
    indices) and ``flows`` (flow, src, dst, payload_bits, size, route, window_s: the measured
    window's start and end in seconds)."""

class Simulation:
    """A network built from a scenario (JSON text), advanced with :meth:`run_until`."""

    end_s: float
    def __init__(self, json_text: str) -> None: ...
    def now_s(self) -> float: ...
    def events(self) -> int: ...
    def run_until(self, t_s: float) -> bool:
        """Advances to ``min(t_s, end_s)`` (releasing the GIL); True once the end is reached.
        A capture that could not be written raises :class:`OSError`."""
    def results(self) -> Dict[str, Any]:
        """``{"summary": dict, "flows": table, "nodes": table, "timeseries": table, "tcp_trace":
        table, "optimizers": table, "conflicts": table}``; a table is ``{column: (kind, data)}``,
        kind "i8"/"f8" with little-endian int64/float64 bytes or "obj" with a list
        (``xlayer.results.table`` makes it a DataFrame)."""
    def pcap_nodes(self) -> List[int]:
        """The nodes the scenario captures (``output.pcap``, ``output.pcap_nodes``)."""
    def open_pcaps(self, folder: str) -> List[int]:
        """Streams each captured node's frames into ``folder/node<N>.pcap`` from the start of
        the run; returns the nodes. Raises :class:`OSError` for a file it cannot create."""
    def flush_pcaps(self) -> None:
        """Writes out the captures' buffers; :class:`OSError` for a capture that failed."""
    def close_pcaps(self) -> None:
        """Flushes and closes the capture files; raises like :meth:`flush_pcaps`."""
    def params(self) -> List[Dict[str, Any]]:
        """Dicts with ``name, layer, doc, unit, min, max, read_only``; per-level names end in
        ``.<level>`` (address them as ``mac.cw_min.0``)."""
    def get_param(self, node: int, name: str) -> float: ...
    def set_param(self, node: int, name: str, value: float) -> None: ...
    def subscribe(self, kind: str) -> None:
        """Starts buffering tuning events of ``kind`` (e.g. ``"mac.tx_outcome"``)."""
    def take_events(self) -> List[Tuple[float, int, str, float, Optional[int]]]:
        """Events since the last call, oldest first, as ``(time_s, node, kind, value, flow)``."""
    def node_count(self) -> int: ...
    def python_optimizers(self) -> str:
        """The scenario's ``python = ...`` optimizer entries as JSON text (a list)."""
    def attach_python(
        self,
        node: int,
        obj: Any,
        name: str,
        latency_s: float = 0.0,
        conflict_window_s: float = 1.0,
        delivery: str = "off_path",
    ) -> int:
        """Attaches a Python optimizer object (``start``, ``on_events``, ``on_timer``)."""

def tunables() -> List[Dict[str, Any]]:
    """Every parameter and event of every tuning layer (``kind`` "param" or "event")."""

class OptimizerContext:
    """A node's tuning layers during one optimizer callback (invalid afterwards)."""

    node: int
    def now_s(self) -> float: ...
    def get(self, name: str) -> float: ...
    def set(self, name: str, value: float) -> None: ...
    def subscribe(self, kind: str) -> None: ...
    def unsubscribe(self, kind: str) -> None: ...
    def schedule(self, delay_s: float, tag: int = 0) -> None: ...
    def flows(self) -> List[Tuple[int, int, int]]: ...


def presets() -> List[str]: ...
