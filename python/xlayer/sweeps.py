"""Sweeps: many runs of one base scenario over a grid of overrides, stacks and seeds, on Dask.

    >>> import xlayer
    >>> sweep = xlayer.sweep("scenarios/sweep-mesh.toml", out="results/sweep-mesh", workers=2)
    >>> sweep.runs[["stack", "flows_random.count", "seed", "aggregate_throughput_bps"]]

The sweep file format is documented in ``docs/sweep.md``. In short::

    name = "mesh"
    scenario = "mesh-7x7.toml"     # relative to the sweep file; or an inline [scenario] table
    overrides = ["duration_s=10"]  # optional, applied to the base before anything else
                                   # (or a table: [overrides] duration_s = 10)
    mode = "cartesian"             # or "zip"
    seeds = 5                      # seeds 1..5; or a list [3, 7, 11]

    [grid]                         # dotted paths, as --set takes them; each a list of values
    "flows_random.count" = [4, 8, 16]

    [stacks.dcf]                   # named override bundles to compare
    "radio.rts_cts" = false
    [stacks.rts]
    "radio.rts_cts" = true

Every run's scenario is built and validated by the core before any run starts. Runs execute on a
Dask cluster: a ``LocalCluster`` of one single-threaded worker process per core by default,
``workers=N`` for another size, or ``scheduler="tcp://host:port"`` for an existing cluster
(dask-jobqueue's SLURMCluster/PBSCluster give such an address). Every worker imports xlayer
as it starts (a worker plugin, :func:`preload_workers`). Short runs go several to a task
(:class:`_BatchSizer`), so that Dask's cost per task is paid per batch. Each finished run is
written to the result store (:mod:`xlayer.store`) as soon as it ends: by the worker itself when
it sees the sweep folder (the local cluster; a remote one with ``shared_folder=True``), else by
this process when the run's batch comes back. Running the same sweep into the same folder again
skips the finished runs and runs the rest (failed runs are tried again).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from xlayer.errors import ScenarioError, SimulationError, XlayerError, scenario_error
from xlayer.optimizers import check_python_allowed

if TYPE_CHECKING:
    from xlayer.analysis import Sweep
    from xlayer.store import SweepStore

# xlayer.scenario (numpy) and xlayer.store (pandas) are imported where they are used, so that
# the command line can read this module's constants without loading them.

__all__ = ["SweepSpec", "PlannedRun", "load_sweep", "plan_runs", "sweep", "DEFAULT_STACK",
           "MAX_RUNS", "NO_WORKERS_TIMEOUT_S"]

PathLike = Union[str, "os.PathLike[str]"]

#: The stack name of every run when the sweep names no stacks.
DEFAULT_STACK = "base"
#: How long to try reaching a --scheduler before giving up (seconds).
SCHEDULER_TIMEOUT_S = 15
#: Fields a sweep file may have at its top level.
SWEEP_FIELDS = ("name", "scenario", "overrides", "mode", "seeds", "grid", "stacks")
#: At most this many runs (grid points x stacks x seeds) per sweep, checked before planning
#: (planning validates every run's scenario, about a millisecond each).
MAX_RUNS = 10_000
#: A sweep fails when its cluster has had no worker for this long while runs are left (s).
NO_WORKERS_TIMEOUT_S = 60.0

#: Overrides of a base scenario: ``KEY=VALUE`` strings, or a mapping of field paths to values.
Overrides = Union[Sequence[str], Mapping[str, Any]]


@dataclass
class SweepSpec:
    """A sweep file, read and checked (not yet expanded into runs)."""

    name: str
    base: Dict[str, Any]
    grid: Dict[str, List[Any]]
    stacks: Dict[str, Dict[str, Any]]
    seeds: List[int]
    mode: str = "cartesian"
    origin: str = "sweep"


@dataclass
class PlannedRun:
    """One run of a sweep: its key, stack, seed, swept values and validated scenario."""

    run: str
    stack: str
    seed: int
    values: Dict[str, Any]
    scenario: Dict[str, Any] = field(repr=False)

    def meta(self) -> Dict[str, Any]:
        from xlayer.store import scenario_hash

        return {"run": self.run, "stack": self.stack, "seed": self.seed,
                "values": self.values, "scenario_sha256": scenario_hash(self.scenario)}


# ----------------------------------------------------------------------------------------------
# Reading the sweep file


def load_sweep(source: Union[PathLike, Mapping[str, Any]],
               overrides: Overrides = ()) -> SweepSpec:
    """Reads a sweep file (a path, or a dict of the same shape) into a :class:`SweepSpec`.

    ``overrides`` — ``KEY=VALUE`` strings, or a dict of field paths to values
    (``{"duration_s": 10, "radio.rts_cts": True}``, nested dicts allowed) — are applied to the
    base scenario after the file's own ``overrides`` (which may be either form too). Raises :class:`ScenarioError` naming the field for anything malformed, and
    OSError for an unreadable file.
    """
    from xlayer.scenario import load_scenario, load_toml_file, plain_copy

    if isinstance(source, Mapping):
        doc = plain_copy(source, "sweep")
        origin = "sweep"
        folder = Path.cwd()
    else:
        sweep_path = Path(source)
        origin = str(sweep_path)
        doc = plain_copy(load_toml_file(sweep_path, "a sweep file"), origin)
        folder = sweep_path.parent
    unknown = sorted(set(doc) - set(SWEEP_FIELDS))
    if unknown:
        raise scenario_error(unknown[0], f"unknown sweep field; allowed: {list(SWEEP_FIELDS)}")

    base_src = doc.get("scenario")
    if base_src is None:
        raise scenario_error("scenario", "required: a scenario file (relative to the sweep "
                             "file) or an inline [scenario] table")
    if isinstance(base_src, str):
        base_path = folder / base_src
        try:
            base = load_scenario(base_path)
        except OSError as e:
            raise scenario_error("scenario", f"cannot read {base_path}: "
                                 f"{e.strerror or e}") from None
    elif isinstance(base_src, Mapping):
        base = load_scenario(base_src)
    else:
        raise scenario_error("scenario", "must be a file name or a table")

    base = apply_overrides_to(base, doc.get("overrides", []), "overrides")
    base = apply_overrides_to(base, overrides, "overrides")

    mode = doc.get("mode", "cartesian")
    if mode not in ("cartesian", "zip"):
        raise scenario_error("mode", f'must be "cartesian" or "zip", found {mode!r}')

    grid_doc = doc.get("grid", {})
    if not isinstance(grid_doc, Mapping):
        raise scenario_error("grid", "must be a table of dotted paths to lists of values")
    grid: Dict[str, List[Any]] = {}
    for path, values in _flatten(grid_doc, "grid").items():
        if not isinstance(values, list) or not values:
            raise scenario_error(f"grid.{path}", "must be a non-empty list of values")
        _check_path(path, f"grid.{path}")
        if path == "seed":
            raise scenario_error("grid.seed", "sweep seeds with the top-level seeds field")
        grid[path] = values
    if mode == "zip" and len({len(v) for v in grid.values()}) > 1:
        lengths = {p: len(v) for p, v in grid.items()}
        raise scenario_error("grid", f'with mode = "zip" every list has the same length; '
                             f"found {lengths}")

    stacks_doc = doc.get("stacks", {})
    if not isinstance(stacks_doc, Mapping):
        raise scenario_error("stacks", "must be a table of named override tables")
    stacks: Dict[str, Dict[str, Any]] = {}
    for name, table in stacks_doc.items():
        if not isinstance(table, Mapping):
            raise scenario_error(f"stacks.{name}", "must be a table of overrides "
                                 '(e.g. "radio.rts_cts" = true)')
        flat = _flatten(table, f"stacks.{name}")
        for path in flat:
            _check_path(path, f"stacks.{name}.{path}")
            if path in grid:
                raise scenario_error(f"stacks.{name}.{path}", "is also swept in [grid]")
        stacks[str(name)] = flat
    if not stacks:
        stacks = {DEFAULT_STACK: {}}

    seeds_doc = doc.get("seeds", [base.get("seed", 1)])
    if isinstance(seeds_doc, bool) or not isinstance(seeds_doc, (int, list)):
        raise scenario_error("seeds", "must be a count N (seeds 1..N) or a list of seeds")
    if isinstance(seeds_doc, int):
        if seeds_doc < 1:
            raise scenario_error("seeds", f"a count must be at least 1, found {seeds_doc}")
        if seeds_doc > MAX_RUNS:
            raise scenario_error("seeds", f"a sweep has at most {MAX_RUNS} runs, and "
                                 f"{seeds_doc} seeds alone are more")
        seeds = list(range(1, seeds_doc + 1))
    else:
        if not seeds_doc or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                    for s in seeds_doc):
            raise scenario_error("seeds", "a list of seeds holds non-negative integers")
        if len(set(seeds_doc)) != len(seeds_doc):
            raise scenario_error("seeds", "a seed is listed twice")
        seeds = list(seeds_doc)

    name = doc.get("name", Path(origin).stem if origin != "sweep" else "sweep")
    check_sweep_name(name)
    spec = SweepSpec(name=name, base=base, grid=grid, stacks=stacks, seeds=seeds, mode=mode,
                     origin=origin)
    count = run_count(spec)
    if count > MAX_RUNS:
        sizes = (f"{count // (len(stacks) * len(seeds))} grid points x {len(stacks)} stacks x "
                 f"{len(seeds)} seeds")
        raise scenario_error("sweep", f"{count} runs ({sizes}); a sweep has at most {MAX_RUNS}: "
                             "split it into several sweeps")
    return spec


def apply_overrides_to(scenario: Mapping[str, Any], overrides: Any,
                       where: str = "overrides") -> Dict[str, Any]:
    """A copy of ``scenario`` with ``overrides`` applied: ``KEY=VALUE`` strings (a list, or one
    string) as ``xlayer run --set`` takes them, or a mapping of dotted field paths to values
    (nested mappings become dotted paths, as in ``[stacks.NAME]``), applied in order. Anything
    else is a :class:`ScenarioError` naming ``where``."""
    from xlayer.scenario import load_scenario, plain_copy, set_field

    if isinstance(overrides, Mapping):
        result = plain_copy(scenario)
        for path, value in _flatten(plain_copy(overrides, where), where).items():
            _check_path(path, f"{where}.{path}")
            set_field(result, path, value)
        return result
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, (list, tuple)) or not all(isinstance(o, str) for o in overrides):
        raise scenario_error(where, 'must be a list of "KEY=VALUE" strings or a table of field '
                             f"paths to values, found {type(overrides).__name__}")
    return load_scenario(scenario, list(overrides))


def check_sweep_name(name: Any) -> None:
    """A sweep's name is a plain folder name (it names ``results/<name>``): no path separator
    (``/``, ``\\``), not ``.`` or ``..``, not blank. Without a separator a name is one path
    component, so ``..`` inside it (``v1..v2``) goes nowhere and is allowed."""
    if not isinstance(name, str):
        raise scenario_error("name", "must be a string")
    separators = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    bad = (not name.strip() or name.strip() in (".", "..") or "\0" in name
           or any(sep in name for sep in separators) or os.path.isabs(name))
    if bad:
        raise scenario_error("name", "must be a plain folder name (it names results/<name>): "
                             f'no "/" or "\\", not "." or "..", found {name!r}')


def run_count(spec: SweepSpec) -> int:
    """How many runs the sweep plans, computed without planning them."""
    lengths = [len(v) for v in spec.grid.values()]
    if not lengths:
        points = 1
    elif spec.mode == "zip":
        points = lengths[0]
    else:
        points = 1
        for n in lengths:
            points *= n
    return points * len(spec.stacks) * len(spec.seeds)


def _flatten(table: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """Nested tables become dotted paths: {radio: {rts_cts: true}} -> {"radio.rts_cts": true}."""
    out: Dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, Mapping):
            for k2, v2 in _flatten(v, f"{where}.{k}").items():
                out[f"{k}.{k2}"] = v2
        else:
            out[str(k)] = v
    return out


def _check_path(path: str, where: str) -> None:
    from xlayer.scenario import parse_override

    try:
        parse_override(f"{path}=0")
    except ScenarioError as e:
        raise scenario_error(where, str(e).split(": ", 1)[-1]) from None


# ----------------------------------------------------------------------------------------------
# Expanding it into runs


def grid_points(spec: SweepSpec) -> List[Dict[str, Any]]:
    """The swept values of every grid point, in file order (cartesian or zipped)."""
    paths = list(spec.grid)
    if not paths:
        return [{}]
    if spec.mode == "zip":
        return [dict(zip(paths, combo)) for combo in zip(*(spec.grid[p] for p in paths))]
    return [dict(zip(paths, combo)) for combo in itertools.product(*(spec.grid[p] for p in paths))]


def plan_runs(spec: SweepSpec) -> List[PlannedRun]:
    """Every run of the sweep (grid point x stack x seed), each scenario validated by the core.

    A field the core rejects raises :class:`ScenarioError` naming the stack and swept values.
    """
    from xlayer.scenario import normalize_scenario, set_field
    from xlayer.store import run_key

    runs: List[PlannedRun] = []
    seen: Dict[str, PlannedRun] = {}
    for values in grid_points(spec):
        for stack, stack_overrides in spec.stacks.items():
            for seed in spec.seeds:
                scenario = json.loads(json.dumps(spec.base))
                for path, value in values.items():
                    set_field(scenario, path, value)
                for path, value in stack_overrides.items():
                    set_field(scenario, path, value)
                scenario["seed"] = seed
                where = _describe(stack, values, seed)
                try:
                    normalized = normalize_scenario(scenario)
                except XlayerError as e:
                    raise type(e)(f"{where}: {e}") from None
                key = run_key(values, stack, seed)
                if key in seen:
                    raise scenario_error("grid", f"{where} is listed twice")
                run = PlannedRun(run=key, stack=stack, seed=seed, values=dict(values),
                                 scenario=normalized)
                seen[key] = run
                runs.append(run)
    return runs


def _describe(stack: str, values: Mapping[str, Any], seed: int) -> str:
    parts = [f"stack {stack}"] + [f"{k}={json.dumps(v)}" for k, v in values.items()]
    parts.append(f"seed {seed}")
    return "run (" + ", ".join(parts) + ")"


# ----------------------------------------------------------------------------------------------
# Running it


def execute_run(scenario: Dict[str, Any], allow_python: bool = False) -> Tuple[str, Any]:
    """Runs one scenario on a worker: ``("ok", Result)`` or ``("failed", message)``.

    An error of the run is returned rather than raised, so that Dask does not retry a run that
    would fail again; a worker dying under a run is Dask's to retry (see :func:`sweep`).
    ``allow_python`` is the sweep's opt-in to Python optimizer classes named in the scenario,
    checked here on the worker as in :class:`xlayer.Simulation`.
    """
    from xlayer.api import Simulation

    sim: Optional[Simulation] = None
    try:
        sim = Simulation(scenario, allow_python=allow_python)
        return "ok", sim.run()
    except Exception as e:  # noqa: BLE001 - every failure of a run is recorded, not raised
        return "failed", f"{type(e).__name__}: {e}"
    finally:
        # The core's simulation must be dropped by the thread that made it (it is not Send);
        # left to the garbage collector it could be dropped on Dask's event-loop thread.
        if sim is not None:
            sim._sim = None  # type: ignore[assignment]


@dataclass
class SweepOutcome:
    """What :func:`run_planned` did: runs planned, skipped as finished, run, and failed."""

    planned: int = 0
    skipped: int = 0
    ran: int = 0
    failed: int = 0
    failures: List[Tuple[str, str]] = field(default_factory=list)


def sweep(
    sweep_file: Union[PathLike, Mapping[str, Any]],
    out: Optional[PathLike] = None,
    *,
    workers: Optional[int] = None,
    scheduler: Optional[str] = None,
    progress: Union[bool, Callable[[int, int], None]] = False,
    overrides: Overrides = (),
    allow_python: bool = False,
    no_workers_timeout_s: float = NO_WORKERS_TIMEOUT_S,
    shared_folder: Optional[bool] = None,
    batch_runs: Optional[int] = None,
) -> "Sweep":
    """Runs a sweep (a sweep file path or a dict of the same shape) and returns it loaded.

    ``out`` is the sweep folder (default ``results/<name>``); an existing sweep folder is
    resumed. ``workers`` sizes the local cluster (default: one per core); ``scheduler`` is the
    address of an existing Dask scheduler instead. ``progress`` is False, True (a rich bar of
    runs done / total with time left, on stderr) or ``callback(done, total)``, called as each
    run ends. ``overrides`` (``KEY=VALUE`` strings or a dict of paths to values) change the
    base scenario. A relative ``scenario``
    path in a dict is relative to the working directory. ``allow_python=True`` lets the runs'
    scenarios name Python optimizer classes (imported and run on the workers); without it such
    a sweep raises :class:`ScenarioError` before anything runs. When the cluster has had no
    worker for ``no_workers_timeout_s`` seconds while runs are left, the sweep raises
    :class:`SimulationError`; the folder keeps the finished runs and resumes. A sweep has at
    most :data:`MAX_RUNS` runs. Failed runs do not raise: they are rows with ``status ==
    "failed"``. Returns :class:`xlayer.analysis.Sweep` (``.runs``, ``.flows`` DataFrames).

    ``shared_folder``: whether the workers write the run folders themselves, into ``out`` at
    the same absolute path (default: yes on the local cluster, no on a ``scheduler``; pass True
    when ``out`` is on a file system the cluster's workers share). ``batch_runs``: runs per Dask
    task (default: chosen from the runs' measured CPU time, see :class:`_BatchSizer`).
    """
    from xlayer._extras import require
    from xlayer.analysis import load

    require("sweep", "running a sweep")
    spec = load_sweep(sweep_file, overrides)
    folder = Path(out) if out is not None else Path("results") / spec.name
    runs = plan_runs(spec)
    run_planned(spec, runs, folder, workers=workers, scheduler=scheduler, progress=progress,
                allow_python=allow_python, no_workers_timeout_s=no_workers_timeout_s,
                shared_folder=shared_folder, batch_runs=batch_runs)
    return load(folder)


def run_planned(
    spec: SweepSpec,
    runs: Sequence[PlannedRun],
    folder: PathLike,
    *,
    workers: Optional[int] = None,
    scheduler: Optional[str] = None,
    progress: Union[bool, Callable[[int, int], None]] = False,
    allow_python: bool = False,
    no_workers_timeout_s: float = NO_WORKERS_TIMEOUT_S,
    shared_folder: Optional[bool] = None,
    batch_runs: Optional[int] = None,
) -> SweepOutcome:
    """Runs the planned runs not yet finished in ``folder`` on Dask, each stored as it ends
    (see :func:`sweep` for the options)."""
    from xlayer._extras import require
    from xlayer.store import SweepStore, scenario_hash

    require("sweep", "running a sweep")
    if not no_workers_timeout_s > 0:
        raise ValueError(f"no_workers_timeout_s must be positive, found {no_workers_timeout_s}")
    if batch_runs is not None and (isinstance(batch_runs, bool) or not isinstance(batch_runs, int)
                                   or batch_runs < 1):
        raise ValueError(f"batch_runs must be a whole number of runs, at least 1, found "
                         f"{batch_runs!r}")
    if shared_folder is None:
        shared_folder = scheduler is None  # the local cluster sees this machine's folders
    for r in runs:  # refused before the folder or the cluster is touched
        check_python_allowed(r.scenario, allow_python, _describe(r.stack, r.values, r.seed))
    store = SweepStore(folder)
    store.check_usable()
    finished = store.finished() if store.is_sweep_folder() else {}
    for r in runs:
        done = finished.get(r.run)
        if done is not None and done.get("scenario_sha256") != scenario_hash(r.scenario):
            raise FileExistsError(
                f"{folder}: holds run {r.run} ({_describe(r.stack, r.values, r.seed)}) made "
                "from a different scenario (the base scenario or a stack changed); "
                "choose another --out"
            )
    todo = [r for r in runs if r.run not in finished]
    outcome = SweepOutcome(planned=len(runs), skipped=len(runs) - len(todo))
    if not todo:
        store.prepare(_plan_document(spec, runs), spec.base)
    else:
        # Reach the cluster first: a scheduler that cannot be reached leaves no folder behind.
        client, cluster = _connect(workers, scheduler)
        try:
            store.prepare(_plan_document(spec, runs), spec.base)
            _run_on_dask(client, store, todo, outcome, progress=progress,
                         allow_python=allow_python, no_workers_timeout_s=no_workers_timeout_s,
                         where=scheduler, shared_folder=shared_folder, batch_runs=batch_runs)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    if not store.tables_are_current():  # a finished sweep run again leaves them as they are
        store.rebuild_tables()
    return outcome


def _plan_document(spec: SweepSpec, runs: Sequence[PlannedRun]) -> Dict[str, Any]:
    return {
        "name": spec.name,
        "mode": spec.mode,
        "swept": list(spec.grid),
        "grid": spec.grid,
        "stacks": spec.stacks,
        # sweep.json is written with sorted keys: the user's order of the stacks, for tables
        # and plots, is kept here.
        "stack_order": list(spec.stacks),
        "seeds": spec.seeds,
        "runs": [{"run": r.run, "stack": r.stack, "seed": r.seed, "values": r.values}
                 for r in runs],
    }


def _connect(workers: Optional[int], scheduler: Optional[str]) -> Tuple[Any, Any]:
    """``(client, cluster)``: a client of the scheduler at ``scheduler``, or of a new local
    cluster of ``workers`` single-threaded worker processes (``cluster`` is then not None)."""
    from distributed import Client

    if scheduler is not None:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT_S)
        try:
            preload_workers(client)
        except BaseException:
            client.close()
            raise
        return client, None
    n = workers if workers is not None else _cores()
    if n < 1:
        raise ValueError("workers must be at least 1")
    cluster = local_cluster(n)
    try:
        client = Client(cluster)
        try:
            preload_workers(client)
        except BaseException:
            client.close()
            raise
        return client, cluster
    except BaseException:
        cluster.close()
        raise


#: Dask settings of the local cluster a sweep starts. Its defaults sample the running task's
#: stack every 10 ms (statistical profiling, for the dashboard), check the event loops every
#: 20 ms and the system every 500 ms: about a tenth of a core on a 2-worker cluster, idle or
#: not, taken from the runs. A sweep needs none of that at that rate.
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.system-monitor.gil.enabled": False,
}


def local_cluster(workers: int) -> Any:
    """The ``LocalCluster`` a sweep starts: ``workers`` single-threaded worker processes, a
    dashboard on a free port, logs below critical silenced, :data:`LOCAL_CLUSTER_CONFIG`."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            dashboard_address=":0", silence_logs=50)


def preload_workers(client: Any) -> None:
    """Registers :class:`xlayer._sweep_worker.Preload` with the client's scheduler: every worker,
    now and joining later, imports xlayer as it starts rather than in its first run. A worker
    that cannot (xlayer missing there) is left to fail its runs, each recorded with the error."""
    from xlayer._sweep_worker import Preload

    try:
        client.register_plugin(Preload())
    except (ImportError, AttributeError, TypeError) as e:
        print(f"xlayer: could not preload xlayer on the workers ({type(e).__name__}: "
              f"{_first_line(e)}); the runs import it themselves", file=sys.stderr)


def _cores() -> int:
    """The cores this process may use (its CPU affinity where the OS tells, else all)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _run_on_dask(client: Any, store: "SweepStore", todo: Sequence[PlannedRun],
                 outcome: SweepOutcome, *,
                 progress: Union[bool, Callable[[int, int], None]],
                 allow_python: bool = False,
                 no_workers_timeout_s: float = NO_WORKERS_TIMEOUT_S,
                 where: Optional[str] = None,
                 shared_folder: bool = False,
                 batch_runs: Optional[int] = None) -> None:
    """Runs ``todo`` in batches (:class:`_BatchSizer`), keeping :data:`TASKS_PER_WORKER`
    batches per worker thread submitted; records each run as its batch reports it."""
    import asyncio
    import concurrent.futures
    from collections import deque

    from distributed import as_completed

    from xlayer._sweep_worker import execute_batch

    bar = _SweepProgress(progress, outcome.planned, outcome.skipped)
    folder = str(store.folder.resolve()) if shared_folder else None
    plan_sha256 = store.plan_sha256() if shared_folder else None
    pending = deque(todo)
    in_flight: Dict[str, List[PlannedRun]] = {}
    futures: List[Any] = []
    sizer = _BatchSizer(batch_runs)
    watch = _WorkerWatch(client, store, no_workers_timeout_s, where)
    ac = as_completed()
    noted_unshared = False

    def submit_more() -> None:
        threads = max(1, watch.threads())
        while pending and len(in_flight) < TASKS_PER_WORKER * threads:
            n = min(len(pending), sizer.size(len(pending), threads))
            batch = [pending.popleft() for _ in range(n)]
            key = f"xlayer-runs-{batch[0].run}-{n}"
            future = client.submit(execute_batch, [(r.meta(), r.scenario) for r in batch],
                                   allow_python, folder, plan_sha256, key=key, pure=False)
            in_flight[key] = batch
            futures.append(future)
            ac.add(future)

    def stored(run: PlannedRun) -> bool:
        return shared_folder and (store.run_folder(run.run) / "run.json").is_file()

    try:
        submit_more()
        for future in _completed(ac, watch, outcome, len(todo)):
            batch = in_flight.pop(str(future.key))
            try:
                wrote, results = _result(future, watch, outcome, len(todo))
            except _NoWorkers:
                raise
            except (concurrent.futures.CancelledError, asyncio.CancelledError, OSError) as e:
                # Not a failure of the runs (a run's own errors come back as "failed"): the
                # cluster cancelled the batch or its result could not be fetched, as when the
                # client loses its scheduler. Record nothing, so that the next invocation
                # runs what the workers did not store.
                raise _NoWorkers(
                    f"lost {watch.where} ({type(e).__name__}: {_first_line(e)}); "
                    f"{outcome.ran + outcome.failed} of {len(todo)} runs done. "
                    f"{store.folder} keeps the finished runs: run the same sweep into it again "
                    "to resume"
                ) from None
            except Exception as e:  # noqa: BLE001 - e.g. KilledWorker: the worker died
                # Runs the workers stored before that are kept; the others failed with it.
                wrote = shared_folder
                results = [("failed", f"{type(e).__name__}: {e}", None)] * len(batch)
            if shared_folder and not wrote and not noted_unshared:
                noted_unshared = True
                print(f"xlayer: a worker does not see {folder}; its runs come back to be "
                      "written here", file=sys.stderr)
            for run, (status, value, cpu_s) in zip(batch, results):
                sizer.measured(cpu_s)
                if status == "failed" and stored(run):
                    status = "stored"  # stored before its batch was lost
                if status == "stored":
                    outcome.ran += 1
                elif status == "ok":
                    store.write_run(run.meta(), value)
                    outcome.ran += 1
                else:
                    store.write_failure(run.meta(), str(value))
                    outcome.failed += 1
                    outcome.failures.append((run.run, str(value)))
                bar.advance()
            future.release()
            submit_more()
    except BaseException as e:
        # Nothing left to run for this client (a worker joining later must not start them).
        try:
            client.cancel(futures)
        except Exception:  # noqa: BLE001 - the scheduler may be gone too
            pass
        if isinstance(e, _NoWorkers):
            raise SimulationError(str(e)) from None
        raise
    finally:
        bar.close()


#: Batches kept submitted per worker thread: the one it runs and the next, so that a worker
#: never waits for the client between two batches.
TASKS_PER_WORKER = 2
#: A batch of runs is sized to take about this much CPU time on a worker (seconds): Dask's
#: cost per task is then about 1 % of it.
BATCH_TARGET_S = 0.5
#: ... and to hold at most 1 / (this x worker threads) of the runs left, so that batches shrink
#: as the sweep ends and the workers finish together (guided self-scheduling).
BATCH_SHARE = 4
#: At most this many runs in one batch.
MAX_BATCH_RUNS = 256


class _BatchSizer:
    """How many runs the next task holds.

    Unbatched until runs have been measured: the first tasks hold one run each. Then the
    number of runs that take :data:`BATCH_TARGET_S` at the mean CPU time per run measured so
    far on the workers (running and writing a run; CPU rather than wall time, which grows when
    other processes share the cores while Dask's cost per task, also CPU, grows with it), but
    at most the runs left divided by :data:`BATCH_SHARE` x worker threads (so that the last
    batches are small and the workers end together), at most :data:`MAX_BATCH_RUNS`, at least
    1. Runs of 0.5 s or more are never batched; runs of 25 ms go about 20 to a task.
    ``fixed`` (``batch_runs=``) overrides it.
    """

    def __init__(self, fixed: Optional[int] = None) -> None:
        self._fixed = fixed
        self._cpu_s = 0.0
        self._runs = 0

    def measured(self, cpu_s: Optional[float]) -> None:
        if cpu_s is not None and cpu_s > 0:
            self._cpu_s += cpu_s
            self._runs += 1

    def size(self, left: int, threads: int) -> int:
        if self._fixed is not None:
            return self._fixed
        if not self._runs:
            return 1
        by_time = int(BATCH_TARGET_S / (self._cpu_s / self._runs))
        by_share = -(-left // (BATCH_SHARE * max(1, threads)))
        return max(1, min(by_time, by_share, MAX_BATCH_RUNS))


def _first_line(e: BaseException) -> str:
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    return lines[0] if lines else type(e).__name__


def _result(future: Any, watch: "_WorkerWatch", outcome: SweepOutcome, total: int) -> Any:
    """``future.result()``, watching the workers meanwhile: a finished run whose result lived
    on a worker that died is recomputed, which needs a worker."""
    import asyncio

    from distributed import TimeoutError as DaskTimeout

    while True:
        try:
            return future.result(timeout=1.0)
        except (TimeoutError, asyncio.TimeoutError, DaskTimeout):
            watch.check(outcome.ran + outcome.failed, total)


class _NoWorkers(Exception):
    """The cluster cannot run the sweep on (no worker for too long, or it cancelled the runs);
    becomes a :class:`SimulationError` once cleaned up."""


def _completed(ac: Any, watch: "_WorkerWatch", outcome: SweepOutcome, total: int) -> Any:
    """The futures of ``ac`` as they finish; between them, ``watch`` checks that the cluster
    still has a worker (``as_completed`` alone would wait forever once the last one died)."""
    # Woken as a future finishes (the condition as_completed notifies then; a distributed
    # without it: polled), so that a finished task's successor is submitted at once.
    condition = getattr(ac, "thread_condition", None)
    while not ac.is_empty():
        batch = ac.next_batch(block=False)
        if batch:
            yield from batch
            continue
        watch.check(outcome.ran + outcome.failed, total)
        if condition is None:
            time.sleep(POLL_S)
            continue
        with condition:
            if not ac.has_ready():
                condition.wait(timeout=POLL_S)


#: How long a sweep waiting for results waits before it checks its cluster's workers again
#: (seconds; it checks the scheduler at most once a second).
POLL_S = 0.1


class _WorkerWatch:
    """Notices a cluster left without workers: says so on stderr at once, and raises
    :class:`_NoWorkers` (reported as :class:`SimulationError`) once none came back for
    ``timeout_s``; checks the scheduler at most once a second."""

    def __init__(self, client: Any, store: "SweepStore", timeout_s: float,
                 where: Optional[str]) -> None:
        self._client = client
        self._store = store
        self._timeout_s = timeout_s
        self.where = f"the scheduler at {where}" if where else "the local cluster"
        self._since: Optional[float] = None
        self._next_check = 0.0
        self._threads = 0
        self._threads_at = -1.0

    def threads(self) -> int:
        """The cluster's worker threads (asked of the scheduler at most once a second; 0 when
        it does not answer)."""
        now = time.monotonic()
        if now - self._threads_at >= 1.0:
            self._threads_at = now
            try:
                self._threads = sum(self._client.nthreads().values())
            except Exception:  # noqa: BLE001 - the scheduler is unreachable: none for now
                self._threads = 0
        return self._threads

    def check(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + 1.0
        state = "has no worker left"
        try:
            workers = len(self._client.nthreads())
        except Exception:  # noqa: BLE001 - the scheduler itself is unreachable: no workers
            workers, state = 0, "does not answer"
        if workers:
            if self._since is not None:
                print("xlayer: a Dask worker is back; the sweep goes on", file=sys.stderr)
            self._since = None
            return
        if self._since is None:
            self._since = now
            print(f"xlayer: {self.where} {state} ({done} of {total} runs done this time); "
                  f"waiting up to {self._timeout_s:g} s for a worker", file=sys.stderr)
        elif now - self._since >= self._timeout_s:
            raise _NoWorkers(
                f"{self.where} has had no worker for {self._timeout_s:g} s, with "
                f"{total - done} of {total} runs left; stopped. {self._store.folder} keeps the "
                "finished runs: run the same sweep into it again to resume"
            )


class _SweepProgress:
    """Runs done / total with elapsed and remaining time (rich, on stderr), or a callback."""

    def __init__(self, progress: Union[bool, Callable[[int, int], None]], total: int,
                 done: int) -> None:
        self._callback = progress if callable(progress) else None
        self._total = total
        self._done = done
        self._progress = None
        if progress is True:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self._progress = Progress(
                TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                TextColumn("runs,"), TimeElapsedColumn(), TextColumn("elapsed,"),
                TimeRemainingColumn(), TextColumn("left"),
                console=Console(stderr=True), transient=False,
            )
            self._task = self._progress.add_task("runs", total=total, completed=done)
            self._progress.start()

    def advance(self) -> None:
        self._done += 1
        if self._progress is not None:
            self._progress.update(self._task, completed=self._done)
        if self._callback is not None:
            self._callback(self._done, self._total)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
