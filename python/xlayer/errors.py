"""The xlayer exception tree.

Every error xlayer raises on purpose is an :class:`XlayerError`; the classes are defined by the
native module (``xlayer._core``) so that the core and the Python side raise the very same classes::

    XlayerError            base of everything below (a subclass of Exception)
    ├── ScenarioError      a scenario field is malformed or out of range; also TOML syntax errors
    │                      and bad ``--set`` overrides, which are caught on the Python side
    ├── TopologyError      the topology cannot carry what the scenario asks (unreachable node)
    ├── SimulationError    the run itself failed
    ├── TuningError        a tuning-layer get/set named an unknown parameter or a bad value
    ├── MissingExtraError  an optional part is not installed (also an ImportError); the message
    │                      names the extra to install: ``pip install 'xlayer[sweep]'``
    └── PcapError          a capture (``xlayer flavor``) is not a pcap/pcapng file, or is
                           truncated or malformed: the message says what and where

Messages name the field first: ``flows[0].rate_bps: must be a positive number, found -5``.
"""

from __future__ import annotations

from xlayer._core import (
    PcapError,
    ScenarioError,
    SimulationError,
    TopologyError,
    TuningError,
    XlayerError,
)

__all__ = [
    "XlayerError",
    "ScenarioError",
    "TopologyError",
    "SimulationError",
    "TuningError",
    "MissingExtraError",
    "PcapError",
    "scenario_error",
]


class MissingExtraError(XlayerError, ImportError):
    """A command or function needs a library of an extra that is not installed (``xlayer
    sweep`` without Dask); the message says which extra to install (:mod:`xlayer._extras`)."""


def scenario_error(field: str, message: str) -> ScenarioError:
    """A :class:`ScenarioError` raised from Python, formatted like the core's: ``field: message``."""
    return ScenarioError(f"{field}: {message}")
