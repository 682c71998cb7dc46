"""xlayer: a wireless multi-hop network simulator with a Rust core.

    >>> import xlayer
    >>> result = xlayer.run("scenarios/chain.toml", seed=2)
    >>> result.summary["aggregate_throughput_bps"], result.flows

The simulation runs in the compiled core (``xlayer._core``); this package loads scenarios, drives
runs and writes results. Scenario fields are documented in ``docs/scenario.md``.
"""

from __future__ import annotations

try:
    from xlayer import _core
except ImportError as e:  # pragma: no cover - only without a built core
    raise ImportError(
        "xlayer's native module (xlayer._core) is missing or broken: build and install the "
        "package with `pip install .` from the repository root"
    ) from e

from xlayer import analysis, optimizers
from xlayer.api import Simulation, run, tunables
from xlayer.optimum import oracle
from xlayer.errors import (
    ScenarioError,
    SimulationError,
    TopologyError,
    TuningError,
    XlayerError,
)
from xlayer.results import Result
from xlayer.scenario import (
    apply_overrides,
    default_scenario_text,
    load_scenario,
    normalize_scenario,
    scenario_to_toml,
)
from xlayer.sweeps import sweep

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "run",
    "sweep",
    "oracle",
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
]
