"""The sweep folder's combined tables: rebuilt when a run finished or failed since they were
built, reused otherwise — so a finished sweep run again, plotted or reported, does not read
every run folder."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest

import xlayer
from xlayer.store import SweepStore


@pytest.fixture(scope="module")
def result():
    return xlayer.run(xlayer.load_scenario(None, ["duration_s=1.5"]))


def plan(keys):
    return {"name": "s", "swept": [], "stacks": {"base": {}},
            "runs": [{"run": k, "stack": "base", "seed": i + 1, "values": {}}
                     for i, k in enumerate(keys)]}


def meta(key, seed):
    return {"run": key, "stack": "base", "seed": seed, "values": {}}


@pytest.fixture
def store(tmp_path, result):
    store = SweepStore(tmp_path / "sweep")
    store.prepare(plan(["a", "b", "c"]), {})
    store.write_run(meta("a", 1), result)
    store.write_failure(meta("b", 2), "boom")
    store.rebuild_tables()
    return store


def never_rebuilt(monkeypatch):
    def fail(self):
        raise AssertionError("the tables were rebuilt from the run folders")

    monkeypatch.setattr(SweepStore, "tables", fail)


def test_current_tables_are_read_back_without_reading_the_run_folders(store, monkeypatch):
    assert store.tables_are_current()
    before = store.current_tables()
    never_rebuilt(monkeypatch)
    runs, flows = store.current_tables()
    pd.testing.assert_frame_equal(runs, before[0])
    assert list(runs["status"]) == ["ok", "failed"] and len(flows) == len(before[1]) > 0


def test_a_finished_run_makes_the_tables_stale_and_they_are_rebuilt(store, result):
    store.write_run(meta("c", 3), result)
    assert not store.tables_are_current()
    runs, _ = store.current_tables()
    assert list(runs["run"]) == ["a", "b", "c"]
    assert store.tables_are_current()
    assert list(pd.read_parquet(store.folder / "runs.parquet")["run"]) == ["a", "b", "c"]


def test_a_failure_recorded_again_makes_the_tables_stale(store):
    record = store.failed_dir / "b.json"
    stamp = record.stat().st_mtime_ns
    while record.stat().st_mtime_ns == stamp:  # a new error message for the same run
        time.sleep(0.01)
        store.write_failure(meta("b", 2), "boom again")
    assert not store.tables_are_current()
    runs, _ = store.current_tables()
    assert runs.set_index("run").loc["b", "error"] == "boom again"


def test_a_run_folder_removed_or_a_table_deleted_makes_them_stale(store, result):
    (store.folder / "flows.csv").unlink()
    assert not store.tables_are_current()
    store.current_tables()
    assert (store.folder / "flows.csv").is_file() and store.tables_are_current()
    import shutil

    shutil.rmtree(store.run_folder("a"))
    assert not store.tables_are_current()
    assert list(store.current_tables()[0]["run"]) == ["b"]


def test_preparing_the_same_plan_again_leaves_its_files_untouched(store):
    stamps = {n: (store.folder / n).stat().st_mtime_ns for n in ("sweep.json", "base.json")}
    store.prepare(plan(["a", "b", "c"]), {})
    assert {n: (store.folder / n).stat().st_mtime_ns for n in stamps} == stamps
    assert store.tables_are_current()
    store.prepare(plan(["a", "b", "c", "d"]), {})  # a larger plan: the tables must follow
    assert not store.tables_are_current()


def test_a_finished_sweep_run_again_neither_starts_dask_nor_rebuilds(tmp_path, monkeypatch):
    from xlayer import sweeps

    spec = sweeps.load_sweep({"name": "again", "scenario": {"duration_s": 0.5}, "seeds": 2})
    runs = sweeps.plan_runs(spec)
    store = SweepStore(tmp_path / "out")
    store.prepare(sweeps._plan_document(spec, runs), spec.base)
    for r in runs:
        store.write_run(r.meta(), sweeps.execute_run(r.scenario)[1])
    store.rebuild_tables()
    never_rebuilt(monkeypatch)

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for a finished sweep")

    monkeypatch.setattr(sweeps, "_connect", no_cluster)
    outcome = sweeps.run_planned(spec, runs, tmp_path / "out")
    assert (outcome.planned, outcome.skipped, outcome.ran) == (2, 2, 0)
    assert os.listdir(tmp_path / "out" / "failed") == []


def test_the_flows_table_is_every_run_folders_flows_csv_in_plan_order(tmp_path, result):
    """Read in one parse when the files share a header, file by file otherwise: either way the
    table is each run's flows.csv as pandas reads it alone, its run's keys in front."""
    store = SweepStore(tmp_path / "sweep")
    keys = ["k1", "k2", "k3", "k4"]
    store.prepare(plan(keys), {})
    empty = result.flows.iloc[0:0]
    for i, key in enumerate(keys):
        store.write_run(meta(key, i + 1), result)
    # A run without flows: its header only.
    empty.to_csv(store.run_folder("k3") / "flows.csv", index=False)

    def expected() -> pd.DataFrame:
        frames = []
        for i, key in enumerate(keys):
            df = pd.read_csv(store.run_folder(key) / "flows.csv")
            for j, (name, value) in enumerate((("run", key), ("stack", "base"), ("seed", i + 1))):
                df.insert(j, name, [value] * len(df))
            frames.append(df)
        return pd.concat(frames, ignore_index=True)

    _, flows = store.tables()
    assert len(flows) == 3 * len(result.flows)
    pd.testing.assert_frame_equal(flows, expected())
    # One run's file with another column: read file by file, the same way.
    extra = pd.read_csv(store.run_folder("k2") / "flows.csv")
    extra["note"] = "x"
    extra.to_csv(store.run_folder("k2") / "flows.csv", index=False)
    _, flows = store.tables()
    pd.testing.assert_frame_equal(flows, expected())
    assert list(flows["note"].notna()) == [k == "k2" for k in flows["run"]]
