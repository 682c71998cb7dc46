"""Python optimizers (ECLAIR's protocol optimizers written in Python).

An optimizer is attached to one node. It registers for events of any layer of that node,
receives them off the data path — after the simulator has finished the current instant, in one
batch per instant (or ``latency_s`` later) — and reads and sets parameters through the node's
tuning layers (``xlayer tunables`` lists them). It may schedule its own timers. ::

    from xlayer.optimizers import Optimizer

    class QueueWatcher(Optimizer):
        events = ("mac.tx_outcome",)              # registered for at start

        def __init__(self, threshold=20):
            self.threshold = threshold

        def on_event(self, ctx, event):           # event: Event(time_s, node, kind, value, flow)
            if ctx.get("mac.queue_len.0") > self.threshold:
                ctx.set("mac.short_retry_limit", 2)

Attach it from a scenario::

    [[optimizers]]
    python = "my_module:QueueWatcher"   # imported with importlib (sys.path, then the current folder)
    nodes = [2, 3]                      # one instance per node (default: every node)
    args = { threshold = 10 }           # keyword arguments of the class

or from the API: ``sim.add_optimizer(QueueWatcher(threshold=10), node=2)``.

The ``ctx`` passed to every callback (``xlayer._core.OptimizerContext``) is valid during that
call only: ``ctx.node``, ``ctx.now_s()``, ``ctx.get(name)``, ``ctx.set(name, value)``,
``ctx.subscribe(kind)``, ``ctx.unsubscribe(kind)``, ``ctx.schedule(delay_s, tag=0)`` (calls
``on_timer(ctx, tag)`` later) and ``ctx.flows()`` (``(flow, src, dst)`` tuples).

Fault isolation: an exception escaping a callback unloads the optimizer (unregistered from every
event, its timers dropped); the failure with its traceback is in ``Result.optimizers``
(``status = "failed"``, ``error``) and the run goes on. Parameter errors raise
:class:`~xlayer.errors.TuningError` inside the callback, which the optimizer may catch.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, NamedTuple, Optional, Sequence

from xlayer.errors import ScenarioError

if TYPE_CHECKING:  # pragma: no cover
    from xlayer._core import OptimizerContext

__all__ = ["Optimizer", "Event", "load_class", "attach_scenario_optimizers"]


class Event(NamedTuple):
    """A tuning-layer event: when, where, which kind, its value, and its flow (or None)."""

    time_s: float
    node: int
    kind: str
    value: float
    flow: Optional[int]


class Optimizer:
    """Base class of Python optimizers; override what you need.

    ``events`` (class or instance attribute) lists the event kinds :meth:`start` registers
    for. :meth:`on_events` receives each delivery as one list and calls :meth:`on_event` per
    event; override :meth:`on_events` instead to handle a batch at once.
    """

    #: Event kinds registered for by :meth:`start`.
    events: Sequence[str] = ()

    def start(self, ctx: "OptimizerContext") -> None:
        """Called once when attached: registers for :attr:`events`."""
        for kind in self.events:
            ctx.subscribe(kind)

    def on_events(self, ctx: "OptimizerContext", events: List[tuple]) -> None:
        """One delivery: ``(time_s, node, kind, value, flow)`` tuples, oldest first."""
        for e in events:
            self.on_event(ctx, Event(*e))

    def on_event(self, ctx: "OptimizerContext", event: Event) -> None:
        """One event (called by the default :meth:`on_events`)."""

    def on_timer(self, ctx: "OptimizerContext", tag: int) -> None:
        """A timer set with ``ctx.schedule(delay_s, tag)`` fired."""


def load_class(path: str, field: str = "python") -> type:
    """Imports ``"module:Class"``; errors are :class:`ScenarioError` naming ``field``."""
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise ScenarioError(f'{field}: must be "module:Class", found "{path}"')
    try:
        module = _import(module_name)
    except ImportError as e:
        raise ScenarioError(f"{field}: cannot import module {module_name!r}: {e}") from None
    try:
        cls = getattr(module, class_name)
    except AttributeError:
        raise ScenarioError(f"{field}: module {module_name!r} has no {class_name!r}") from None
    if not isinstance(cls, type):
        raise ScenarioError(f"{field}: {path} is not a class")
    return cls


def _import(module_name: str) -> Any:
    """Imports a module; the current directory is searched too (the ``xlayer`` command does not
    put it on ``sys.path`` by itself)."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        cwd = os.getcwd()
        if cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        try:
            return importlib.import_module(module_name)
        finally:
            sys.path.remove(cwd)


def attach_scenario_optimizers(sim: Any, scenario: Dict[str, Any]) -> None:
    """Instantiates the ``python = "module:Class"`` entries of ``scenario["optimizers"]``, one
    per node, and attaches them to the core simulation ``sim`` (``xlayer._core.Simulation``) in
    scenario order."""
    for i, spec in enumerate(scenario.get("optimizers", [])):
        if "python" not in spec:
            continue
        field = f"optimizers[{i}]"
        cls = load_class(spec["python"], f"{field}.python")
        nodes: Iterable[int] = spec.get("nodes") or range(sim.node_count())
        args = spec.get("args") or {}
        for node in nodes:
            try:
                obj = cls(**args)
            except TypeError as e:
                raise ScenarioError(f"{field}.args: {e}") from None
            sim.attach_python(
                node, obj, spec["python"], spec.get("latency_s", 0.0),
                spec.get("conflict_window_s", 1.0), spec.get("delivery", "off_path"),
            )
