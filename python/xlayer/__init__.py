"""xlayer: a wireless multi-hop network simulator with a Rust core.

    >>> import xlayer
    >>> result = xlayer.run("scenarios/chain.toml", seed=2)
    >>> result.summary["aggregate_throughput_bps"], result.flows

The simulation runs in the compiled core (``xlayer._core``); this package loads scenarios, drives
runs and writes results. Scenario fields are documented in ``docs/scenario.md``.

Importing the package loads the core and the error classes only. Everything else (``run``,
``sweep``, ``Result``, ``analysis``, ...) is imported the first time it is used (PEP 562), so
``import xlayer`` and ``xlayer --help`` do not pay for pandas, pyarrow, matplotlib, Dask or
SciPy; ``from xlayer import run`` works as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, List

try:
    from xlayer import _core
except ImportError as e:  # pragma: no cover - only without a built core
    raise ImportError(
        "xlayer's native module (xlayer._core) is missing or broken: build and install the "
        "package with `pip install .` from the repository root"
    ) from e

from xlayer.errors import (
    MissingExtraError,
    PcapError,
    ScenarioError,
    SimulationError,
    TopologyError,
    TuningError,
    XlayerError,
)

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and IDEs
    from xlayer import analysis, optimizers
    from xlayer.api import Simulation, run, tunables
    from xlayer.captures import flavor
    from xlayer.optimum import oracle
    from xlayer.results import Result
    from xlayer.scenario import (
        apply_overrides,
        default_scenario_text,
        load_scenario,
        normalize_scenario,
        scenario_to_toml,
    )
    from xlayer.sweeps import sweep
    from xlayer.viewer import view

__version__: str = _core.__version__

#: Public names imported on first use: name -> the module that defines it.
_LAZY = {
    "run": "xlayer.api",
    "Simulation": "xlayer.api",
    "tunables": "xlayer.api",
    "sweep": "xlayer.sweeps",
    "view": "xlayer.viewer",
    "oracle": "xlayer.optimum",
    "flavor": "xlayer.captures",
    "Result": "xlayer.results",
    "load_scenario": "xlayer.scenario",
    "normalize_scenario": "xlayer.scenario",
    "scenario_to_toml": "xlayer.scenario",
    "apply_overrides": "xlayer.scenario",
    "default_scenario_text": "xlayer.scenario",
}
#: Submodules reachable as attributes of the package (``xlayer.analysis``) before an import.
_SUBMODULES = ("analysis", "optimizers", "api", "results", "scenario", "sweeps", "store",
               "optimum", "plots", "report", "cli", "errors", "viewer", "network",
               "captures")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"xlayer.{name}")
    else:
        raise AttributeError(f"module 'xlayer' has no attribute {name!r}")
    globals()[name] = value  # the next access is a plain attribute lookup
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


__all__ = [
    "__version__",
    "run",
    "sweep",
    "view",
    "oracle",
    "flavor",
    "analysis",
    "optimizers",
    "tunables",
    "Simulation",
    "Result",
    "load_scenario",
    "normalize_scenario",
    "scenario_to_toml",
    "apply_overrides",
    "default_scenario_text",
    "XlayerError",
    "ScenarioError",
    "TopologyError",
    "SimulationError",
    "TuningError",
    "MissingExtraError",
    "PcapError",
]
