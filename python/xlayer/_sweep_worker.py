"""What a sweep runs on its Dask workers: the preload plugin and batches of runs.

:class:`Preload` is a Dask worker plugin that imports xlayer (its core, the result writer)
when a worker starts or joins, so that the first task does not pay the import. The sweep
registers it with the scheduler, its own local cluster's or a user's: the scheduler hands it to
every worker, those that join later included.

:func:`execute_batch` runs several planned runs one after the other in one task (the sweep
groups short runs so that Dask's cost per task is paid once per batch, not once per run). With a
sweep folder the worker can see, it writes each finished run's folder there itself, through the
store (atomically, as the client would), as soon as the run ends; otherwise it returns the
results for the client to write. Each run's outcome is reported on its own: a failing run does
not lose its batch-mates.

This module imports distributed, so only the sweep itself imports it.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["Preload", "execute_batch", "RunOutcome"]

#: One run's outcome in a batch: ``(status, value, cpu_s)``. ``status`` is ``"stored"`` (the
#: worker wrote the run's folder; value None), ``"ok"`` (value: the Result, for the client to
#: write) or ``"failed"`` (value: the error message). ``cpu_s`` is the CPU time the worker's
#: thread spent on the run (running and writing it: what batches are sized by, unlike wall
#: time not inflated when other processes share the cores), None for a run it found stored.
RunOutcome = Tuple[str, Any, Optional[float]]


class Preload(WorkerPlugin):
    """Imports xlayer on every worker of the sweep's cluster as it starts (or joins)."""

    name = "xlayer-preload"
    #: Registered again by a later sweep on the same cluster: nothing to do.
    idempotent = True

    def setup(self, worker: Any) -> None:
        preload()


def preload() -> None:
    """Imports what a run and the writing of its folder need (the core, the store); neither
    imports pandas any more (:class:`xlayer.results.CoreTable`)."""
    import xlayer.api  # noqa: F401 - the core and the Simulation
    import xlayer.results  # noqa: F401 - the result writer
    import xlayer.store  # noqa: F401
    import xlayer.sweeps  # noqa: F401


def execute_batch(runs: Sequence[Tuple[Dict[str, Any], Dict[str, Any]]],
                  allow_python: bool = False, folder: Optional[str] = None,
                  plan_sha256: Optional[str] = None) -> Tuple[bool, List[RunOutcome]]:
    """Runs ``runs`` (``(meta, scenario)`` pairs, ``meta`` as :meth:`PlannedRun.meta`) one after
    the other; returns ``(wrote, outcomes)``, one :data:`RunOutcome` per run in order.

    With ``folder`` (the sweep folder's absolute path) whose ``sweep.json`` this worker sees
    with the SHA-256 ``plan_sha256`` (the client's folder, not another one of that name), each
    finished run is written there as it ends and reported ``"stored"``; a run already stored
    there (the batch run again after its worker died) is not run again. ``wrote`` says whether
    the worker saw the folder. Without it, or for a run whose folder cannot be written here
    (the client then writes it, or says why it cannot), the run comes back ``"ok"`` with its
    Result. A run's error is its ``"failed"`` outcome; the batch goes on.
    """
    from xlayer.sweeps import execute_run

    store = _visible_store(folder, plan_sha256)
    outcomes: List[RunOutcome] = []
    for meta, scenario in runs:
        t0 = time.thread_time()
        key = str(meta["run"])
        if store is not None and (store.run_folder(key) / "run.json").is_file():
            outcomes.append(("stored", None, None))
            continue
        status, value = execute_run(scenario, allow_python)
        if status == "ok" and store is not None:
            try:
                store.write_run(meta, value)
                status, value = "stored", None
            except OSError:
                pass  # sent back: the client writes it, or reports why it cannot
        outcomes.append((status, value, time.thread_time() - t0))
    return store is not None, outcomes


#: The (folder, plan hash) pairs this worker process has found visible: checked once, not
#: once per batch (a plan of 10,000 runs is a sweep.json of some megabytes).
_SEEN: set = set()


def _visible_store(folder: Optional[str], plan_sha256: Optional[str]) -> Any:
    """The sweep folder's store if this worker sees the client's folder there, else None."""
    if folder is None or plan_sha256 is None:
        return None
    from xlayer.store import SweepStore

    if (folder, plan_sha256) not in _SEEN:
        try:
            plan = (Path(folder) / "sweep.json").read_bytes()
        except OSError:
            return None
        if hashlib.sha256(plan).hexdigest() != plan_sha256:
            return None
        _SEEN.add((folder, plan_sha256))
    return SweepStore(folder)
