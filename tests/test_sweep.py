"""Sweeps on Dask and their result store: expansion, validation, resume, kill -9, failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, Iterator

import pandas as pd
import pytest

import xlayer
from xlayer import analysis
from xlayer.errors import ScenarioError
from xlayer.store import SweepStore
from xlayer.sweeps import load_sweep, plan_runs

distributed = pytest.importorskip("distributed")

#: A 4x4 grid with random saturated flows; ``duration_s`` sets how long a run takes
#: (about 0.01 s of wall time per simulated second).
GRID_BASE = """
name = "grid-4x4"
seed = 1
duration_s = 1.0
warmup_s = 0.2

[radio]
tx_range_m = 250.0
cs_range_m = 550.0

[topology]
kind = "grid"
rows = 4
cols = 4
spacing_m = 200.0

[flows_random]
count = 2
rate_bps = "saturate"
"""

SWEEP = """
name = "small"
scenario = "base.toml"
seeds = 2

[grid]
flows_random.count = [1, 3]

[stacks.dcf]
"radio.rts_cts" = false

[stacks.rts]
"radio.rts_cts" = true
"""


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """One local Dask cluster (2 single-threaded worker processes) shared by this module."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=50)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture
def sweep_file(tmp_path: Path):
    def write(text: str = SWEEP, base: str = GRID_BASE) -> Path:
        (tmp_path / "base.toml").write_text(base)
        path = tmp_path / "sweep.toml"
        path.write_text(text)
        return path

    return write


def run_folders(out: Path) -> Dict[str, Path]:
    return {p.name: p for p in (out / "runs").iterdir() if not p.name.startswith(".")}


def summary_without_wall(folder: Path) -> str:
    summary = json.loads((folder / "summary.json").read_text())
    summary.pop("wall_s")
    return json.dumps(summary, sort_keys=True)


# ----------------------------------------------------------------------------------------------
# Expansion and validation


def test_cartesian_sweep_has_every_value_stack_and_seed(sweep_file, scheduler, tmp_path):
    out = tmp_path / "out"
    calls = []
    s = xlayer.sweep(sweep_file(), out, scheduler=scheduler,
                     progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, 8) for i in range(1, 9)]
    assert len(s.runs) == 2 * 2 * 2
    assert set(s.runs["status"]) == {"ok"}
    assert s.runs["run"].is_unique
    combos = set(zip(s.runs["flows_random.count"], s.runs["stack"], s.runs["seed"]))
    assert combos == {(c, st, sd) for c in (1, 3) for st in ("dcf", "rts") for sd in (1, 2)}
    # One row per flow, keyed like the runs.
    assert len(s.flows) == sum(s.runs["flows"])
    assert set(s.flows["run"]) == set(s.runs["run"])
    for name in ("runs.parquet", "flows.parquet", "runs.csv", "flows.csv", "sweep.json"):
        assert (out / name).is_file(), name
    assert len(pd.read_csv(out / "runs.csv")) == 8
    # The stack's overrides and the swept value reached the scenario as run.
    for key, folder in run_folders(out).items():
        meta = json.loads((folder / "run.json").read_text())
        text = (folder / "scenario.toml").read_text()
        assert f"rts_cts = {str(meta['stack'] == 'rts').lower()}" in text
        assert f"count = {meta['values']['flows_random.count']}" in text
        assert f"seed = {meta['seed']}" in text


def test_zip_mode_pairs_values_and_seeds_count_from_one(sweep_file):
    spec = load_sweep(sweep_file(
        'scenario = "base.toml"\nmode = "zip"\nseeds = 3\n'
        '[grid]\n"flows_random.count" = [1, 2]\nduration_s = [1.0, 2.0]\n'
    ))
    runs = plan_runs(spec)
    assert spec.seeds == [1, 2, 3]
    assert sorted({(r.values["flows_random.count"], r.values["duration_s"]) for r in runs}) == [
        (1, 1.0), (2, 2.0)]
    assert len(runs) == 2 * 3
    assert {r.stack for r in runs} == {"base"}


def test_inline_base_scenario_and_explicit_seeds_from_python():
    from xlayer.scenario import load_toml

    spec = load_sweep({"scenario": load_toml(GRID_BASE), "seeds": [7, 3],
                       "grid": {"flows[0]": [{"src": 0, "dst": 15}, {"src": 5, "dst": 6}]},
                       "stacks": {"short": {"mac": {"queue_packets": 5}}}})
    runs = plan_runs(spec)
    assert [(r.seed, r.scenario["flows"][0]["dst"]) for r in runs] == [
        (7, 15), (3, 15), (7, 6), (3, 6)]
    assert {r.scenario["mac"]["queue_packets"] for r in runs} == {5}
    assert {r.stack for r in runs} == {"short"}


def test_run_keys_are_stable_across_invocations(sweep_file):
    a = [r.run for r in plan_runs(load_sweep(sweep_file()))]
    b = [r.run for r in plan_runs(load_sweep(sweep_file()))]
    assert a == b and len(set(a)) == len(a)


@pytest.mark.parametrize("text, message", [
    ('scenario = "base.toml"\n[grid]\n"radio.no_such_field" = [1, 2]\n', "no_such_field"),
    ('scenario = "base.toml"\nmode = "zip"\n[grid]\nduration_s = [1.0]\nwarmup_s = [0.1, 0.2]\n',
     "same length"),
    ('scenario = "base.toml"\n[grid]\nduration_s = 3.0\n', "grid.duration_s"),
    ('scenario = "base.toml"\nseeds = 0\n', "seeds"),
    ('scenario = "base.toml"\ncolour = 3\n', "colour"),
    ('scenario = "missing.toml"\n', "missing.toml"),
    ('scenario = "base.toml"\n[grid]\nduration_s = [1.0, -1.0]\n', "duration_s"),
    ('scenario = "base.toml"\n[grid\n', "invalid TOML"),
])
def test_bad_sweep_file_is_one_line_error_and_runs_nothing(sweep_file, xlayer_cli, tmp_path,
                                                           text, message):
    path = sweep_file(text)
    out = tmp_path / "out"
    proc = xlayer_cli("sweep", path, "--out", out, "--workers", "1")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlayer: error: "), proc.stderr
    assert message in lines[0]
    assert not out.exists()


def test_a_bad_value_names_the_run(sweep_file):
    with pytest.raises(ScenarioError, match=r"stack rts.*duration_s"):
        plan_runs(load_sweep(sweep_file(
            'scenario = "base.toml"\n[stacks.dcf]\nwarmup_s = 0.1\n'
            '[stacks.rts]\nduration_s = -2.0\n')))


def test_out_that_is_not_a_sweep_folder_is_refused(sweep_file, xlayer_cli, tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    proc = xlayer_cli("sweep", sweep_file(), "--out", out, "--workers", "1")
    assert proc.returncode == 2
    assert "holds no xlayer sweep" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


# ----------------------------------------------------------------------------------------------
# Failures and resume


def test_failed_run_is_recorded_and_the_sweep_goes_on(sweep_file, scheduler, tmp_path):
    chain = (
        'duration_s = 1.0\n[radio]\ntx_range_m = 250.0\n'
        '[topology]\nkind = "chain"\ncount = 3\nspacing_m = 200.0\n'
        '[[flows]]\nsrc = 0\ndst = 2\nrate_bps = 1e5\n'
    )
    path = sweep_file('scenario = "base.toml"\n[grid]\n"topology.spacing_m" = [200.0, 1000.0]\n',
                      base=chain)
    s = xlayer.sweep(path, tmp_path / "out", scheduler=scheduler)
    by_spacing = s.runs.set_index("topology.spacing_m")
    assert by_spacing.loc[200.0, "status"] == "ok"
    assert by_spacing.loc[1000.0, "status"] == "failed"
    assert "TopologyError" in by_spacing.loc[1000.0, "error"]
    assert len(list((tmp_path / "out" / "failed").iterdir())) == 1
    # A sweep with failures, one stack and one swept path still plots and reports.
    from xlayer.plots import plot_folder
    from xlayer.report import write_report

    names = {p.stem for p in plot_folder(tmp_path / "out")}
    assert names - {"drops_vs_hops"} == {"throughput_cdf", "metrics_vs_topology.spacing_m",
                                         "throughput_vs_hops", "topology"}
    text = write_report(tmp_path / "out").read_text()
    assert "Failed runs" in text and "TopologyError" in text


def test_rerun_skips_finished_runs_and_runs_missing_ones(sweep_file, scheduler, tmp_path):
    out = tmp_path / "out"
    path = sweep_file()
    xlayer.sweep(path, out, scheduler=scheduler)
    folders = run_folders(out)
    stamps = {k: (p / "summary.json").stat().st_mtime_ns for k, p in folders.items()}
    victim = sorted(folders)[0]
    import shutil

    shutil.rmtree(folders[victim])
    # A half-written run left by a killed process is cleaned up, never counted.
    partial = out / "runs" / f".{victim}.partial-xyz"
    (partial / "run").mkdir(parents=True)
    s = xlayer.sweep(path, out, scheduler=scheduler)
    assert len(s.runs) == 8 and set(s.runs["status"]) == {"ok"}
    after = run_folders(out)
    assert set(after) == set(folders)
    assert not partial.exists()
    for k, p in after.items():
        if k != victim:
            assert (p / "summary.json").stat().st_mtime_ns == stamps[k], "finished run rerun"


def test_changed_base_scenario_is_not_mixed_into_an_old_sweep(sweep_file, scheduler, tmp_path,
                                                               xlayer_cli):
    out = tmp_path / "out"
    xlayer.sweep(sweep_file(), out, scheduler=scheduler)
    proc = xlayer_cli("sweep", sweep_file(), "--out", out, "--set", "warmup_s=0.3",
                      "--scheduler", scheduler)
    assert proc.returncode == 2
    assert "different scenario" in proc.stderr


def test_kill_9_of_the_client_then_resume_gives_each_run_once_identical(
        sweep_file, scheduler, tmp_path):
    base = GRID_BASE.replace("duration_s = 1.0", "duration_s = 25.0")
    text = SWEEP.replace("seeds = 2", "seeds = 4")  # 16 runs of about 0.3 s each
    path = sweep_file(text, base=base)
    killed = tmp_path / "killed"
    # Batches of 4 runs, each run written by the worker as it ends: the kill cuts a batch short.
    cmd = [sys.executable, "-m", "xlayer", "sweep", str(path), "--out", str(killed),
           "--workers", "1", "--batch", "4", "--quiet"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            runs = killed / "runs"
            if runs.is_dir() and len(run_folders(killed)) >= 2:  # in the first batch
                break
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        # The client is dead; end the worker processes it had started (its own session).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    done_at_kill = len(run_folders(killed))
    assert 0 < done_at_kill < 16, f"{done_at_kill} runs had finished when the client was killed"
    assert_whole_folders(killed)  # whatever the moment of the kill

    resumed = xlayer.sweep(path, killed, scheduler=scheduler)
    xlayer.sweep(path, tmp_path / "whole", scheduler=scheduler)  # uninterrupted
    assert len(resumed.runs) == 16 and resumed.runs["run"].is_unique
    assert set(resumed.runs["status"]) == {"ok"}
    a, b = run_folders(killed), run_folders(tmp_path / "whole")
    assert sorted(a) == sorted(b) and len(a) == 16
    for key in a:
        assert summary_without_wall(a[key]) == summary_without_wall(b[key]), key
        assert (a[key] / "flows.csv").read_bytes() == (b[key] / "flows.csv").read_bytes()
        assert (a[key] / "nodes.csv").read_bytes() == (b[key] / "nodes.csv").read_bytes()
        assert (a[key] / "scenario.toml").read_bytes() == (b[key] / "scenario.toml").read_bytes()
    assert not [p for p in (killed / "runs").iterdir() if p.name.startswith(".")]


def test_worker_killed_during_a_run_is_retried_or_recorded_never_missing(sweep_file, tmp_path):
    from distributed import Client, LocalCluster

    base = GRID_BASE.replace("duration_s = 1.0", "duration_s = 40.0")
    path = sweep_file(SWEEP.replace("seeds = 2", "seeds = 1"), base=base)  # 4 runs, ~0.5 s each
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=50)
    killed = []
    try:
        client = Client(cluster)

        def kill_a_busy_worker() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not killed:
                try:
                    busy = [w for w, tasks in client.processing().items() if tasks]
                    if busy:
                        for pid in client.run(os.getpid, workers=busy[:1]).values():
                            os.kill(pid, signal.SIGKILL)
                            killed.append(pid)
                except Exception:  # noqa: BLE001 - a worker going away mid-call: try again
                    pass
                time.sleep(0.02)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        s = xlayer.sweep(path, tmp_path / "out", scheduler=cluster.scheduler_address)
        killer.join()
        client.close()
    finally:
        cluster.close()
    assert killed, "no worker was caught running"
    assert len(s.runs) == 4 and s.runs["run"].is_unique
    for _, row in s.runs.iterrows():
        assert row["status"] == "ok" or "KilledWorker" in str(row["error"])
    store = SweepStore(tmp_path / "out")
    assert len(store.finished()) + len(store.failures()) == 4


def test_cli_sweep_on_its_own_local_cluster(sweep_file, xlayer_cli, tmp_path):
    out = tmp_path / "cli"
    proc = xlayer_cli("sweep", sweep_file(), "--out", out, "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    assert "8 runs: 0 already done, 8 run now, 0 failed" in proc.stdout
    assert "mean ± 95 % confidence interval" in proc.stdout and "aggregate Mbit/s" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert len(pd.read_parquet(out / "runs.parquet")) == 8
    again = xlayer_cli("sweep", sweep_file(), "--out", out, "--workers", "2")
    assert "8 runs: 8 already done, 0 run now" in again.stdout
    assert len(analysis.load(out).runs) == 8


# ----------------------------------------------------------------------------------------------
# The shipped example


EXAMPLE = Path(__file__).resolve().parents[1] / "scenarios" / "sweep-mesh.toml"


def test_example_sweep_plans_3_flow_counts_2_stacks_5_seeds():
    runs = plan_runs(load_sweep(EXAMPLE))
    assert len(runs) == 30 and len({r.run for r in runs}) == 30
    assert {(r.values["flows_random.count"], r.stack, r.seed) for r in runs} == {
        (c, st, sd) for c in (4, 8, 16) for st in ("dcf", "rts") for sd in range(1, 6)}
    for r in runs:
        assert r.scenario["radio"]["rts_cts"] is (r.stack == "rts")
        assert not r.scenario.get("flows") and r.scenario["topology"]["rows"] == 7


@pytest.mark.slow
def test_example_sweep_completes_with_30_keyed_runs(scheduler, tmp_path):
    s = xlayer.sweep(EXAMPLE, tmp_path / "mesh", scheduler=scheduler)
    assert len(s.runs) == 30 and s.runs["run"].is_unique
    assert set(s.runs["status"]) == {"ok"}
    assert list(s.runs.columns[:4]) == ["run", "stack", "seed", "flows_random.count"]
    table = pd.read_parquet(tmp_path / "mesh" / "runs.parquet")
    assert sorted(zip(table["flows_random.count"], table["stack"], table["seed"])) == sorted(
        (c, st, sd) for c in (4, 8, 16) for st in ("dcf", "rts") for sd in range(1, 6))
    flows = pd.read_parquet(tmp_path / "mesh" / "flows.parquet")
    assert flows.groupby("run").size().to_dict() == dict(zip(table["run"], table["flows"]))


# ----------------------------------------------------------------------------------------------
# Issue 14 (hardening): sweeps on Dask

CHAIN_BASE = (
    'duration_s = 1.0\n[radio]\ntx_range_m = 250.0\n'
    '[topology]\nkind = "chain"\ncount = 3\nspacing_m = 200.0\n'
    '[[flows]]\nsrc = 0\ndst = 2\nrate_bps = 1e5\n'
)


def test_python_optimizers_in_a_sweep_need_the_opt_in_which_reaches_the_workers(
        sweep_file, scheduler, tmp_path, xlayer_cli):
    base = CHAIN_BASE + '[[optimizers]]\npython = "test_optimizers:Listening"\nnodes = [0]\n'
    path = sweep_file('scenario = "base.toml"\nseeds = 2\n', base=base)
    out = tmp_path / "out"
    with pytest.raises(ScenarioError) as e:
        xlayer.sweep(path, out, scheduler=scheduler)
    assert "optimizers[0].python" in str(e.value) and "allow_python=True" in str(e.value)
    proc = xlayer_cli("sweep", path, "--out", out, "--scheduler", scheduler)
    assert proc.returncode == 2 and "--allow-python-optimizers" in proc.stderr
    assert not out.exists()
    s = xlayer.sweep(path, out, scheduler=scheduler, allow_python=True)
    assert list(s.runs["status"]) == ["ok", "ok"]
    for folder in run_folders(out).values():
        table = pd.read_csv(folder / "optimizers.csv")
        assert list(table["name"]) == ["test_optimizers:Listening"]
        assert list(table["status"]) == ["active"]


def test_cli_sweep_with_failed_runs_exits_1_saying_how_many_unless_allowed(
        sweep_file, scheduler, tmp_path, xlayer_cli):
    path = sweep_file('scenario = "base.toml"\n[grid]\n"topology.spacing_m" = [200.0, 1000.0]\n',
                      base=CHAIN_BASE)
    out = tmp_path / "out"
    proc = xlayer_cli("sweep", path, "--out", out, "--scheduler", scheduler, "--quiet")
    assert proc.returncode == 1, proc.stderr
    assert "1 of 2 runs failed" in proc.stderr and "--allow-failures" in proc.stderr
    assert "Traceback" not in proc.stderr
    allowed = xlayer_cli("sweep", path, "--out", out, "--scheduler", scheduler, "--quiet",
                         "--allow-failures")
    assert allowed.returncode == 0, allowed.stderr
    assert "1 of 2 runs failed" in allowed.stderr


def test_a_sweep_whose_last_worker_dies_says_so_fails_in_time_and_resumes(sweep_file, tmp_path):
    from distributed import LocalCluster

    base = GRID_BASE.replace("duration_s = 1.0", "duration_s = 40.0")
    path = sweep_file(SWEEP.replace("seeds = 2", "seeds = 3"), base=base)  # 12 runs, ~0.5 s
    out = tmp_path / "out"
    cluster = LocalCluster(n_workers=0, processes=True, dashboard_address=":0", silence_logs=50)
    address = cluster.scheduler_address

    def start_worker() -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
             "--no-nanny", "--no-dashboard"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    worker = start_worker()
    sweep_proc = None
    try:
        sweep_proc = subprocess.Popen(
            [sys.executable, "-m", "xlayer", "sweep", str(path), "--out", str(out),
             "--scheduler", address, "--no-workers-timeout", "3", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sweep_proc.poll() is None:
            if (out / "runs").is_dir() and len(run_folders(out)) >= 2:
                break
            time.sleep(0.02)
        # The clock starts before the kill: the scheduler may see the worker gone (and the
        # sweep start its 3 s) before `wait` returns here, so a clock started after `wait`
        # could read a little under 3 s for a sweep that waited its full 3 s.
        killed_at = time.monotonic()
        worker.kill()
        worker.wait(timeout=10)
        _, stderr = sweep_proc.communicate(timeout=60)
        waited = time.monotonic() - killed_at
        assert sweep_proc.returncode == 2, stderr
        assert "Traceback" not in stderr
        assert "has no worker left" in stderr and "waiting up to 3 s for a worker" in stderr
        assert "has had no worker for 3 s" in stderr and "run the same sweep into it again" \
            in stderr
        # It waited for a worker rather than giving up at once, and not much longer than asked.
        # Not 3 s to the letter: a CI run whose cores other jobs also took measured 2.74 s, the
        # sweep having found its cluster without a worker a moment before the kill (a worker
        # starved of CPU can look gone to the scheduler).
        assert 2 <= waited < 30
        done = run_folders(out)
        assert 0 < len(done) < 12
        stamps = {k: (p / "summary.json").stat().st_mtime_ns for k, p in done.items()}

        worker = start_worker()
        resumed = xlayer.sweep(path, out, scheduler=address)
        assert len(resumed.runs) == 12 and set(resumed.runs["status"]) == {"ok"}
        for k, p in run_folders(out).items():
            if k in stamps:
                assert (p / "summary.json").stat().st_mtime_ns == stamps[k], "finished run rerun"
    finally:
        if sweep_proc is not None and sweep_proc.poll() is None:
            sweep_proc.kill()
        worker.kill()
        worker.wait(timeout=10)
        cluster.close()


def test_a_sweep_whose_scheduler_dies_stops_in_one_line_recording_no_failures(sweep_file,
                                                                              tmp_path):
    base = GRID_BASE.replace("duration_s = 1.0", "duration_s = 40.0")
    path = sweep_file(SWEEP.replace("seeds = 2", "seeds = 5"), base=base)  # 20 runs, ~0.5 s
    out = tmp_path / "out"
    address_file = tmp_path / "scheduler.json"
    procs = []

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-m", *args], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    try:
        scheduler = start("distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard",
                          "--scheduler-file", str(address_file))
        deadline = time.monotonic() + 30
        while not address_file.is_file() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        address = json.loads(address_file.read_text())["address"]
        start("distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
              "--no-dashboard")
        sweep_proc = subprocess.Popen(
            [sys.executable, "-m", "xlayer", "sweep", str(path), "--out", str(out),
             "--scheduler", address, "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(sweep_proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sweep_proc.poll() is None:
            if (out / "runs").is_dir() and len(run_folders(out)) >= 2:
                break
            time.sleep(0.02)
        scheduler.kill()
        _, stderr = sweep_proc.communicate(timeout=60)
        assert sweep_proc.returncode == 2, stderr
        assert "Traceback" not in stderr and "ERROR" not in stderr
        errors = [line for line in stderr.splitlines() if line.startswith("xlayer: error: ")]
        assert len(errors) == 1 and "lost the scheduler at" in errors[0]
        assert "run the same sweep into it again to resume" in errors[0]
        assert 0 < len(run_folders(out)) < 20
        assert list((out / "failed").iterdir()) == []  # cut short, not failed
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)


def test_a_dropped_dask_connection_prints_no_traceback_during_a_sweep() -> None:
    # When the scheduler dies, Dask's modules may log the closed connection with a traceback
    # ("Batched Comm Closed", distributed.batched, at INFO) before the sweep's one-line error,
    # depending on timing (the test above caught one in CI); the sweep keeps Dask's warnings
    # but not its tracebacks or errors. Run in a fresh process: Dask's handler is its own.
    code = (
        "import logging, distributed\n"
        "from xlayer.cli import _dask_client_logs_silenced\n"
        "with _dask_client_logs_silenced():\n"
        "    try:\n"
        "        raise RuntimeError('closed')\n"
        "    except RuntimeError:\n"
        "        logging.getLogger('distributed.batched').info('Batched Comm Closed', exc_info=True)\n"
        "    logging.getLogger('distributed.core').error('lost the connection')\n"
        "    logging.getLogger('distributed.core').warning('kept warning')\n"
        "try:\n"
        "    raise RuntimeError('after')\n"
        "except RuntimeError:\n"
        "    logging.getLogger('distributed.batched').info('after the sweep', exc_info=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    inside, _, after = proc.stderr.partition("after the sweep")
    assert "Traceback" not in inside and "Batched Comm Closed" not in inside
    assert "lost the connection" not in inside and "kept warning" in inside
    assert "Traceback" in after  # Dask's logging is as it was once the sweep ends


# ----------------------------------------------------------------------------------------------
# Issue 15 item 6: short runs batched, xlayer preloaded, folders written by the workers


RESULT_FILES = ("scenario.toml", "summary.json", "flows.csv", "nodes.csv", "run.json")


def assert_same_runs(a: Path, b: Path) -> None:
    """Two sweep folders hold the same finished runs with the same result files (wall_s aside)."""
    fa, fb = run_folders(a), run_folders(b)
    assert sorted(fa) == sorted(fb) and fa
    for key in fa:
        assert sorted(p.name for p in fa[key].iterdir()) == sorted(
            p.name for p in fb[key].iterdir()), key
        assert summary_without_wall(fa[key]) == summary_without_wall(fb[key]), key
        for name in ("scenario.toml", "flows.csv", "nodes.csv", "run.json"):
            assert (fa[key] / name).read_bytes() == (fb[key] / name).read_bytes(), (key, name)


def assert_whole_folders(out: Path) -> None:
    """Every visible run folder is complete; nothing half-written is visible."""
    for key, folder in run_folders(out).items():
        for name in RESULT_FILES:
            assert (folder / name).is_file(), (key, name)
        json.loads((folder / "summary.json").read_text())
        assert json.loads((folder / "run.json").read_text())["run"] == key


def test_batched_runs_written_by_workers_equal_unbatched_runs_written_by_the_client(
        sweep_file, scheduler, tmp_path):
    path = sweep_file(SWEEP.replace("seeds = 2", "seeds = 3"))  # 12 runs
    one = xlayer.sweep(path, tmp_path / "one", scheduler=scheduler, batch_runs=1,
                       shared_folder=False)
    calls = []
    five = xlayer.sweep(path, tmp_path / "five", scheduler=scheduler, batch_runs=5,
                        shared_folder=True, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(i, 12) for i in range(1, 13)]  # progress per run, batches or not
    assert set(one.runs["status"]) == set(five.runs["status"]) == {"ok"}
    assert_same_runs(tmp_path / "one", tmp_path / "five")
    assert_whole_folders(tmp_path / "five")
    assert not [p for p in (tmp_path / "five" / "runs").iterdir() if p.name.startswith(".")]
    cols = [c for c in one.runs.columns if c != "wall_s"]
    pd.testing.assert_frame_equal(one.runs[cols], five.runs[cols])
    # The adaptive batches (the default) give the same runs again.
    xlayer.sweep(path, tmp_path / "auto", scheduler=scheduler, shared_folder=True)
    assert_same_runs(tmp_path / "one", tmp_path / "auto")


@pytest.mark.parametrize("shared", [True, False])
def test_a_failing_run_in_a_batch_is_reported_and_its_batch_mates_stored(
        sweep_file, scheduler, tmp_path, shared):
    path = sweep_file('scenario = "base.toml"\n'
                      '[grid]\n"topology.spacing_m" = [200.0, 1000.0, 150.0]\n', base=CHAIN_BASE)
    out = tmp_path / "out"
    s = xlayer.sweep(path, out, scheduler=scheduler, batch_runs=3, shared_folder=shared)
    by_spacing = s.runs.set_index("topology.spacing_m")
    assert by_spacing.loc[200.0, "status"] == "ok" and by_spacing.loc[150.0, "status"] == "ok"
    assert by_spacing.loc[1000.0, "status"] == "failed"
    assert "TopologyError" in by_spacing.loc[1000.0, "error"]
    assert len(run_folders(out)) == 2 and len(list((out / "failed").iterdir())) == 1
    assert_whole_folders(out)


def test_a_batch_interrupted_keeps_its_finished_runs_and_the_sweep_resumes_without_them(
        sweep_file, scheduler, tmp_path, monkeypatch):
    """The worker stores each run of a batch as it ends: a batch cut short after two runs leaves
    those two whole, and running the sweep again runs only the others."""
    from xlayer import _sweep_worker, sweeps
    from xlayer.store import SweepStore

    path = sweep_file()  # 8 runs
    spec = load_sweep(path)
    runs = plan_runs(spec)
    out = tmp_path / "out"
    store = SweepStore(out)
    store.prepare(sweeps._plan_document(spec, runs), spec.base)
    real = sweeps.execute_run
    calls = []

    def third_run_interrupted(scenario, allow_python=False):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the worker is stopped in the middle of the batch
        return real(scenario, allow_python)

    monkeypatch.setattr(sweeps, "execute_run", third_run_interrupted)
    with pytest.raises(KeyboardInterrupt):
        _sweep_worker.execute_batch([(r.meta(), r.scenario) for r in runs[:4]], False,
                                    str(out.resolve()), store.plan_sha256())
    monkeypatch.setattr(sweeps, "execute_run", real)
    stored = run_folders(out)
    assert sorted(stored) == sorted(r.run for r in runs[:2])
    assert_whole_folders(out)
    stamps = {k: (p / "summary.json").stat().st_mtime_ns for k, p in stored.items()}

    outcome = sweeps.run_planned(spec, runs, out, scheduler=scheduler, batch_runs=4)
    assert (outcome.skipped, outcome.ran, outcome.failed) == (2, 6, 0)
    for k, p in run_folders(out).items():
        if k in stamps:
            assert (p / "summary.json").stat().st_mtime_ns == stamps[k], "finished run rerun"
    xlayer.sweep(path, tmp_path / "whole", scheduler=scheduler, batch_runs=1)
    assert_same_runs(out, tmp_path / "whole")


def test_a_worker_writes_only_into_the_clients_sweep_folder(sweep_file, tmp_path):
    """With the folder's sweep.json as the client wrote it, the worker writes the runs there;
    another folder at that path (a worker that does not share the file system) gets nothing,
    and the results go back to the client."""
    from xlayer import _sweep_worker, sweeps
    from xlayer.store import SweepStore

    spec = load_sweep(sweep_file('scenario = "base.toml"\nseeds = 2\n', base=CHAIN_BASE))
    runs = plan_runs(spec)
    out = tmp_path / "out"
    store = SweepStore(out)
    store.prepare(sweeps._plan_document(spec, runs), spec.base)
    batch = [(r.meta(), r.scenario) for r in runs]
    wrote, results = _sweep_worker.execute_batch(batch, False, str(out), "0" * 64)
    assert not wrote and [s for s, _, _ in results] == ["ok", "ok"]
    assert isinstance(results[0][1], xlayer.Result) and not run_folders(out)
    wrote, results = _sweep_worker.execute_batch(batch, False, str(out), store.plan_sha256())
    assert wrote and [(s, v) for s, v, _ in results] == [("stored", None)] * 2
    assert sorted(run_folders(out)) == sorted(r.run for r in runs)
    assert_whole_folders(out)
    # Run again (a batch retried after its worker died): the stored runs are not run again.
    wrote, results = _sweep_worker.execute_batch(batch, False, str(out), store.plan_sha256())
    assert results == [("stored", None, None)] * 2


def test_workers_import_xlayer_when_they_start_or_join(tmp_path):
    from distributed import Client, LocalCluster

    from xlayer.sweeps import preload_workers

    def imported() -> bool:
        import sys as worker_sys

        # what a run and the writing of its folder need; pandas is not among them any more
        # (xlayer.results.CoreTable writes the core's tables itself)
        return "xlayer.api" in worker_sys.modules and "xlayer.results" in worker_sys.modules

    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=50)
    try:
        with Client(cluster) as client:
            assert list(client.run(imported).values()) == [False]
            preload_workers(client)
            assert list(client.run(imported).values()) == [True]
            cluster.scale(2)
            client.wait_for_workers(2, timeout=60)
            assert list(client.run(imported).values()) == [True, True]
    finally:
        cluster.close()


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "--batch: must be at least 1"),
    (["--shared-folder", "--workers", "1"], "--shared-folder: only with --scheduler"),
])
def test_cli_batch_and_shared_folder_are_checked(sweep_file, xlayer_cli, tmp_path, args,
                                                 message):
    out = tmp_path / "out"
    proc = xlayer_cli("sweep", sweep_file(), "--out", out, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
