"""The Python API: build a simulation from a scenario, run it, get a :class:`Result`.

    >>> import xlayer
    >>> result = xlayer.run("scenarios/chain.toml", seed=3, out="results/chain")
    >>> result.summary["aggregate_throughput_bps"]
    >>> result.flows[["flow", "throughput_bps", "delay_mean_s"]]

A scenario is a TOML path, a dict of the same shape, or ``None`` for the built-in default; see
``docs/scenario.md``. This module drives the core (``xlayer._core``) and holds no simulation
logic of its own.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from xlayer import _core
from xlayer import results as _results
from xlayer.errors import ScenarioError, SimulationError
from xlayer.optimizers import attach_scenario_optimizers, check_python_allowed
from xlayer.results import (
    CONFLICT_COLUMNS,
    CORE_COLUMNS,
    FLOW_COLUMNS,
    OPTIMIZER_COLUMNS,
    NODE_COLUMNS,
    TCP_TRACE_COLUMNS,
    TIMESERIES_COLUMNS,
    CaptureFolder,
    CoreTable,
    PcapFiles,
    Result,
    check_output_folder,
    staged_result_folder,
)
from xlayer.scenario import ScenarioSource, load_scenario, normalize_scenario

if TYPE_CHECKING:
    from xlayer._progress import ProgressBar

__all__ = ["Simulation", "run", "tunables"]

#: A run advances in this many steps, so progress can be shown and Ctrl-C is honoured.
PROGRESS_STEPS = 100

#: ``callback(now_s, end_s)`` (:data:`xlayer._progress.ProgressCallback`; that module, and rich
#: with it, is imported only when a bar is drawn).
ProgressCallback = Callable[[float, float], None]
Progress = Union[bool, ProgressCallback, None]


class Simulation:
    """A network built from a scenario, ready to run: a thin wrapper of ``_core.Simulation``.

    ``Simulation(scenario, seed=None, overrides=(), allow_python=False)`` loads and validates
    the scenario (raising :class:`ScenarioError` or :class:`TopologyError`) and builds the
    network. A scenario naming Python optimizer classes (``[[optimizers]] python =
    "module:Class"``) is refused unless ``allow_python=True``: loading them imports and runs
    that module's code. Optimizer objects given to :meth:`add_optimizer` need no such opt-in. Advance it with
    :meth:`run_until` or run it to the end with :meth:`run`; tuning parameters are read and set
    per node with :meth:`get_param` / :meth:`set_param`.

    With ``output.pcap = true`` each captured node's frames are streamed, as the run goes, into
    ``node<N>.pcap`` in ``pcap_dir`` (an existing folder), or by default in a temporary folder
    that is removed once neither this simulation nor its results need it. A capture that cannot
    be written (a full disk, a folder removed) raises :class:`OSError` naming its file.
    """

    def __init__(
        self,
        scenario: ScenarioSource = None,
        *,
        seed: Optional[int] = None,
        overrides: Iterable[str] = (),
        allow_python: bool = False,
        pcap_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        raw = load_scenario(scenario, overrides, seed)
        #: The scenario as run, every default filled in (a dict).
        self.scenario: Dict[str, Any] = normalize_scenario(raw)
        check_python_allowed(self.scenario, allow_python)  # before building anything
        self._sim = _core.Simulation(json.dumps(self.scenario, allow_nan=False))
        self._pcap_owner: Optional[CaptureFolder] = None
        self._pcap_dir: Optional[Path] = None
        self._pcap_nodes: List[int] = []
        if self._captures_on():
            if pcap_dir is None:
                self._pcap_owner = CaptureFolder()
                self._pcap_dir = self._pcap_owner.path
            else:
                self._pcap_dir = Path(pcap_dir)
            self._pcap_nodes = list(self._sim.open_pcaps(str(self._pcap_dir)))
        attach_scenario_optimizers(self._sim, self.scenario, allow_python=allow_python)

    def _captures_on(self) -> bool:
        output = self.scenario.get("output")
        return isinstance(output, Mapping) and bool(output.get("pcap"))

    @property
    def end_s(self) -> float:
        """Simulated time at which the run ends (``duration_s``)."""
        return self._sim.end_s

    def now_s(self) -> float:
        """Current simulated time in seconds."""
        return self._sim.now_s()

    def events(self) -> int:
        """Number of events processed so far."""
        return self._sim.events()

    def node_count(self) -> int:
        """Number of nodes of the network."""
        return self._sim.node_count()

    def run_until(self, t_s: float) -> bool:
        """Advances simulated time to ``min(t_s, end_s)``; True once the end is reached."""
        return self._sim.run_until(t_s)

    def run(self, progress: Progress = False) -> Result:
        """Runs to the end and returns the :class:`Result`.

        ``progress`` is False (nothing), True (a rich progress bar on stderr for runs that last
        more than half a second) or a callable ``callback(now_s, end_s)`` called after each of
        about 100 steps.
        """
        callback: Optional[Callable[[float, float], None]]
        bar: Optional["ProgressBar"] = None
        if progress is True:
            from xlayer._progress import ProgressBar

            bar = ProgressBar(str(self.scenario.get("name", "simulating")))
            callback = bar
        elif progress is False or progress is None:
            callback = None
        elif callable(progress):
            callback = progress
        else:
            raise TypeError("progress is True, False or a callable(now_s, end_s)")
        try:
            self._advance_to_end(callback)
        finally:
            if bar is not None:
                bar.close()
        self._sim.close_pcaps()  # complete files; nothing more happens after the end
        return self.results()

    def _advance_to_end(self, callback: Optional[Callable[[float, float], None]]) -> None:
        end = self.end_s
        for k in range(1, PROGRESS_STEPS + 1):
            t = end * k / PROGRESS_STEPS
            if t <= self.now_s() and k < PROGRESS_STEPS:
                continue
            done = self._sim.run_until(t)
            if callback is not None:
                callback(self.now_s(), end)
            if done:
                return
        if not self._sim.run_until(end):
            raise SimulationError(
                f"the run stopped at {self.now_s()} s without reaching its end at {end} s"
            )

    def results(self) -> Result:
        """The :class:`Result` of the run so far (normally called once the end is reached)."""
        raw = self._sim.results()
        nodes = CoreTable(raw["nodes"], NODE_COLUMNS)
        pcaps: Mapping[int, bytes] = {}
        if self._pcap_dir is not None:
            self._sim.flush_pcaps()
            pcaps = PcapFiles(self._pcap_dir, self._pcap_nodes, owner=self._pcap_owner)
        return Result(
            summary=dict(raw["summary"]),
            flows=CoreTable(raw["flows"], FLOW_COLUMNS),
            nodes=nodes,
            scenario=copy.deepcopy(self.scenario),
            pcaps=pcaps,
            xlayer_version=_core.__version__,
            timeseries=CoreTable(raw.get("timeseries", []), TIMESERIES_COLUMNS),
            tcp_trace=CoreTable(raw.get("tcp_trace", []), TCP_TRACE_COLUMNS),
            optimizers=CoreTable(raw.get("optimizers", []), OPTIMIZER_COLUMNS),
            conflicts=CoreTable(raw.get("conflicts", []), CONFLICT_COLUMNS),
            core=CoreTable(raw.get("core", []), CORE_COLUMNS),
        )

    def pcap(self, node: int) -> bytes:
        """The pcap capture of ``node`` so far (needs ``output.pcap = true`` and ``node`` among
        ``output.pcap_nodes``), read from its file; raises :class:`ScenarioError` otherwise."""
        if self._pcap_dir is None:
            raise ScenarioError("output.pcap: traces were not recorded; set output.pcap = true")
        if node not in self._pcap_nodes:
            count = self.node_count()
            if not 0 <= node < count:
                raise ScenarioError(f"node {node} does not exist (the topology has nodes "
                                    f"0..{count - 1})")
            raise ScenarioError(f"output.pcap_nodes: node {node} is not captured "
                                f"(captured: {self._pcap_nodes})")
        self._sim.flush_pcaps()
        return (self._pcap_dir / f"node{node}.pcap").read_bytes()

    def params(self) -> List[Dict[str, Any]]:
        """The tuning parameters every node exposes: dicts with ``name, layer, doc, unit, min,
        max, read_only``. Per-level parameters are listed as ``mac.cw_min.<level>`` and addressed
        as ``mac.cw_min.0``, ``mac.cw_min.1``, ..."""
        return self._sim.params()

    def get_param(self, node: int, name: str) -> float:
        """Reads tuning parameter ``name`` of ``node`` (raises :class:`TuningError`)."""
        return self._sim.get_param(node, name)

    def set_param(self, node: int, name: str, value: float) -> None:
        """Sets tuning parameter ``name`` of ``node`` (raises :class:`TuningError`)."""
        self._sim.set_param(node, name, value)

    def subscribe(self, kind: str) -> None:
        """Starts buffering tuning events of ``kind`` (e.g. ``"mac.tx_outcome"``)."""
        self._sim.subscribe(kind)

    def take_events(self) -> List[Tuple[float, int, str, float, Optional[int]]]:
        """Tuning events since the last call, oldest first: ``(time_s, node, kind, value)``."""
        return self._sim.take_events()

    def add_optimizer(
        self,
        optimizer: Any,
        node: int,
        *,
        name: Optional[str] = None,
        latency_s: float = 0.0,
        conflict_window_s: float = 1.0,
        delivery: str = "off_path",
    ) -> int:
        """Attaches a Python optimizer (an :class:`xlayer.optimizers.Optimizer`) to ``node``; its
        ``start(ctx)`` runs at once. ``latency_s`` delays its events; ``conflict_window_s`` is
        the conflict window of its sets; ``delivery="per_packet"`` calls it inside the TCP
        receive path instead (for overhead comparisons only). Returns its row in
        ``Result.optimizers``. Raises :class:`TuningError` for a bad node or option."""
        label = name if name is not None else type(optimizer).__name__
        return self._sim.attach_python(
            node, optimizer, label, latency_s, conflict_window_s, delivery
        )

    def __repr__(self) -> str:
        return (
            f"<Simulation {self.scenario.get('name')!r} now_s={self.now_s()} end_s={self.end_s}>"
        )


def run(
    scenario: ScenarioSource = None,
    seed: Optional[int] = None,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    progress: Progress = False,
    overrides: Iterable[str] = (),
    allow_python: bool = False,
) -> Result:
    """Runs a scenario to the end and returns its :class:`Result`.

    ``scenario``: a TOML path, a dict, or None for the built-in default. ``seed`` replaces the
    scenario's seed; ``overrides`` are ``KEY=VALUE`` strings (``"topology.count=3"``) applied
    before validation. With ``out``, the result folder is written there atomically (an existing
    non-result folder is refused before the run starts); pcap captures are streamed straight
    into its hidden temporary folder during the run, so an interrupted run leaves nothing
    behind, and the result's ``pcaps`` then read the files in ``out``. ``allow_python=True`` lets the
    scenario name Python optimizer classes (``[[optimizers]] python = "module:Class"``), whose
    modules are then imported and run; without it such a scenario raises
    :class:`ScenarioError` before anything is imported. Errors are :class:`XlayerError`
    subclasses; a missing scenario file raises :class:`FileNotFoundError`.
    """
    raw = load_scenario(scenario, overrides, seed)
    if out is None:
        return Simulation(raw, allow_python=allow_python).run(progress=progress)
    target = check_output_folder(out)
    with staged_result_folder(target, out) as stage:
        sim = Simulation(raw, allow_python=allow_python, pcap_dir=stage)
        result = sim.run(progress=progress)
        _results._write_files(result, stage)  # the captures are in place already
        _results._move_into_place(stage, target)
    if isinstance(result.pcaps, PcapFiles):
        result.pcaps = PcapFiles(target, list(result.pcaps))
    return result



def tunables() -> List[Dict[str, Any]]:
    """Every parameter and event of every layer's tuning layer: dicts with ``kind`` ("param" or
    "event"), ``name`` (``<level>``, ``<neighbour>``, ``<destination>`` or ``<flow>`` placeholders for indexed ones),
    ``layer``, ``type``, ``unit``, ``settable``, ``doc``, and ``min``/``max`` for parameters."""
    return list(_core.tunables())
