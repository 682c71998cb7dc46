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

Attach it from the API: ``sim.add_optimizer(QueueWatcher(threshold=10), node=2)`` (your own
object: nothing more to allow), or name it in a scenario::

    [[optimizers]]
    python = "my_module:QueueWatcher"   # imported with importlib from sys.path
    nodes = [2, 3]                      # one instance per node (default: every node)
    args = { threshold = 10 }           # keyword arguments of the class

A scenario or sweep file naming a Python class makes xlayer import that module and run its code,
so it is refused unless asked for: ``xlayer run|params|sweep|compare --allow-python-optimizers``,
or ``allow_python=True`` on :func:`xlayer.run`, :class:`xlayer.Simulation` and
:func:`xlayer.sweep` (the sweep's workers check it too). Only subclasses of :class:`Optimizer` are
built, and the module is found on ``sys.path`` only: the current folder is not searched (install
the module, or put its folder on ``PYTHONPATH``).

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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from xlayer.errors import ScenarioError

if TYPE_CHECKING:  # pragma: no cover
    from xlayer._core import OptimizerContext

__all__ = ["Optimizer", "Event", "load_class", "attach_scenario_optimizers",
           "check_python_allowed", "OPT_IN_HINT"]


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


#: The refusal's explanation of how to opt in (CLI flag and API argument).
OPT_IN_HINT = (
    "pass --allow-python-optimizers to the xlayer command (run, params, sweep, compare), "
    "or allow_python=True to xlayer.run, xlayer.Simulation or xlayer.sweep"
)


def python_optimizer_specs(scenario: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """``(field, "module:Class")`` of every ``python`` optimizer a scenario names."""
    specs = scenario.get("optimizers") or []
    out: List[Tuple[str, str]] = []
    if isinstance(specs, list):
        for i, spec in enumerate(specs):
            if isinstance(spec, Mapping) and "python" in spec:
                out.append((f"optimizers[{i}].python", str(spec["python"])))
    return out


def check_python_allowed(scenario: Mapping[str, Any], allow_python: bool,
                         where: str = "") -> None:
    """Raises :class:`ScenarioError` if the scenario names a Python optimizer class and loading
    them was not allowed (``where`` prefixes the field, e.g. the sweep run it belongs to)."""
    if allow_python:
        return
    found = python_optimizer_specs(scenario)
    if found:
        field, path = found[0]
        prefix = f"{where}: " if where else ""
        raise ScenarioError(
            f"{prefix}{field}: {path!r} names Python code to import and run, which a scenario "
            f"or sweep file may do only when you allow it: {OPT_IN_HINT}"
        )


def load_class(path: str, field: str = "python") -> type:
    """Imports ``"module:Class"`` from ``sys.path`` (never the current folder) and returns the
    class, which must be a subclass of :class:`Optimizer`; errors are :class:`ScenarioError`
    naming ``field``. Importing runs the module's code: callers loading names from a scenario
    check the opt-in first (:func:`check_python_allowed`)."""
    module_name, _, class_name = path.partition(":")
    if not module_name or not class_name:
        raise ScenarioError(f'{field}: must be "module:Class", found "{path}"')
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ScenarioError(
            f"{field}: cannot import module {module_name!r}: {e} (modules are found on sys.path; "
            "the current folder is not searched: install the module or add its folder to "
            "PYTHONPATH)"
        ) from None
    except Exception as e:  # noqa: BLE001 - the module's own code failed (or a bad name)
        raise ScenarioError(f"{field}: importing module {module_name!r} failed: "
                            f"{type(e).__name__}: {e}") from None
    try:
        cls = getattr(module, class_name)
    except AttributeError:
        raise ScenarioError(f"{field}: module {module_name!r} has no {class_name!r}") from None
    if not isinstance(cls, type):
        raise ScenarioError(f"{field}: {path} is not a class")
    if not issubclass(cls, Optimizer):
        raise ScenarioError(
            f"{field}: {path} is the class {cls.__module__}.{cls.__qualname__}, not a subclass "
            "of xlayer.optimizers.Optimizer; only optimizers are built from a scenario"
        )
    return cls


def attach_scenario_optimizers(sim: Any, scenario: Dict[str, Any],
                               allow_python: bool = False) -> None:
    """Instantiates the ``python = "module:Class"`` entries of ``scenario["optimizers"]``, one
    per node, and attaches them to the core simulation ``sim`` (``xlayer._core.Simulation``) in
    scenario order. Without ``allow_python`` a scenario naming any is refused before anything
    is imported."""
    check_python_allowed(scenario, allow_python)
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
            except Exception as e:  # noqa: BLE001 - the class's own constructor failed
                raise ScenarioError(f"{field}.args: building {spec['python']} raised "
                                    f"{type(e).__name__}: {e}") from None
            sim.attach_python(
                node, obj, spec["python"], spec.get("latency_s", 0.0),
                spec.get("conflict_window_s", 1.0), spec.get("delivery", "off_path"),
            )
