"""The result store of a sweep: one folder per sweep, one result folder per finished run.

Layout of a sweep folder::

    sweep.json          the sweep as planned: name, mode, swept paths, stacks, seeds, and every
                        planned run (its key, stack, seed and swept values)
    base.json           the base scenario as the sweep file gives it (overrides applied, defaults
                        not filled in: the base alone need not be a valid scenario)
    runs/<key>/         one result folder per finished run (scenario.toml, summary.json,
                        flows.csv, nodes.csv; see results.py) plus run.json: the run's key,
                        stack, seed, swept values and the hash of its scenario
    failed/<key>.json   one record per failed run: the same keys and the error message
    runs.parquet        one row per run (finished or failed): keys, status, error, summary
    flows.parquet       one row per flow of every finished run: keys, then flows.csv's columns
    runs.csv, flows.csv the same two tables as CSV
    tables.json         what the four tables were built from (a fingerprint of sweep.json, the
                        run folders and the failure records), so that they are rebuilt only when
                        that changed

A run's key is a hash of its swept values, stack and seed, so it names the same run in every
invocation of the same sweep. A run folder is first written whole under a hidden temporary name
in ``runs/`` (by :func:`xlayer.results.write_result`, itself atomic) and then renamed to its key:
it either exists whole or not at all, whenever the process is killed. Leftover hidden folders
are removed when the store is opened again. Failure records are written to a temporary file and
renamed the same way. The combined tables are rebuilt from the run folders, never updated in
place, so they can always be thrown away and rebuilt (:meth:`SweepStore.rebuild_tables`);
:meth:`SweepStore.current_tables` rebuilds them only when a run, a failure record or the plan
changed since they were built, so that rerunning a finished sweep or plotting it again does not
read every run folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Tuple, Union

# pandas (and xlayer.results, which needs it) are imported where they are used: this module is
# imported by the command line, which must start without them.
if TYPE_CHECKING:
    import pandas as pd

    from xlayer.results import Result

__all__ = ["SweepStore", "run_key", "scenario_hash", "RUN_KEY_COLUMNS"]

PathLike = Union[str, "os.PathLike[str]"]

#: The key columns that open every row of runs.parquet and flows.parquet (the swept paths follow).
RUN_KEY_COLUMNS = ("run", "stack", "seed")
#: The files :meth:`SweepStore.rebuild_tables` writes, and the fingerprint written after them.
TABLE_FILES = ("runs.parquet", "flows.parquet", "runs.csv", "flows.csv")
TABLES_FINGERPRINT = "tables.json"
#: Changes whenever the tables' layout does, so that tables built by an older xlayer are rebuilt.
TABLES_FORMAT = 1


def run_key(values: Mapping[str, Any], stack: str, seed: int) -> str:
    """The stable key of a run: a hash of its swept values, stack and seed (16 hex digits)."""
    text = json.dumps({"values": dict(values), "stack": stack, "seed": seed},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def scenario_hash(scenario: Mapping[str, Any]) -> str:
    """A hash of a normalized scenario, to notice a run folder made from another scenario."""
    text = json.dumps(scenario, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SweepStore:
    """A sweep folder (see the module doc). Opening it removes leftovers of interrupted writes."""

    def __init__(self, folder: PathLike) -> None:
        self.folder = Path(folder)
        self.runs_dir = self.folder / "runs"
        self.failed_dir = self.folder / "failed"

    # -- checks and set-up -------------------------------------------------------------------

    def is_sweep_folder(self) -> bool:
        return (self.folder / "sweep.json").is_file()

    def check_usable(self) -> None:
        """Raises FileExistsError if the folder exists, is not empty and is not a sweep folder."""
        f = self.folder
        if f.exists() or f.is_symlink():
            if not f.is_dir():
                raise FileExistsError(f"{f}: exists and is not a folder")
            if any(f.iterdir()) and not self.is_sweep_folder():
                raise FileExistsError(
                    f"{f}: folder exists, is not empty and holds no xlayer sweep; "
                    "choose another --out"
                )

    def prepare(self, plan: Mapping[str, Any], base: Mapping[str, Any]) -> None:
        """Creates the folder (if needed), removes partial writes, writes sweep.json and base.json."""
        self.check_usable()
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.failed_dir.mkdir(exist_ok=True)
        self.clean_partials()
        _write_text_if_changed(self.folder / "sweep.json",
                               json.dumps(plan, indent=2, sort_keys=True) + "\n")
        _write_text_if_changed(self.folder / "base.json",
                               json.dumps(base, indent=2, sort_keys=True) + "\n")

    def clean_partials(self) -> None:
        """Removes hidden temporary folders and files left by an interrupted write."""
        for d in (self.runs_dir, self.failed_dir, self.folder):
            if not d.is_dir():
                continue
            for p in d.iterdir():
                if p.name.startswith(".") and (".partial-" in p.name or ".old-" in p.name
                                               or p.name.startswith(".tmp-")):
                    if p.is_dir():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        p.unlink(missing_ok=True)

    def plan_sha256(self) -> str:
        """The SHA-256 of sweep.json's bytes: a worker that reads the same bytes at the same
        path sees this folder (not another one of that name), and may write runs into it."""
        return hashlib.sha256((self.folder / "sweep.json").read_bytes()).hexdigest()

    def plan(self) -> Dict[str, Any]:
        """The contents of sweep.json (:class:`XlayerError` naming it if it is malformed)."""
        from xlayer.results import malformed_result, read_json_object

        path = self.folder / "sweep.json"
        plan = read_json_object(path)
        runs = plan.get("runs", [])
        if not isinstance(runs, list) or not all(
                isinstance(r, dict) and isinstance(r.get("run"), str) and "stack" in r
                and "seed" in r for r in runs):
            raise malformed_result(path, '"runs" must be a list of {"run", "stack", "seed", '
                                   '"values"} objects')
        if not isinstance(plan.get("swept", []), list) or not all(
                isinstance(p, str) for p in plan.get("swept", [])):
            raise malformed_result(path, '"swept" must be a list of field paths')
        if not isinstance(plan.get("stacks", {}), dict):
            raise malformed_result(path, '"stacks" must be an object')
        return plan

    # -- runs --------------------------------------------------------------------------------

    def run_folder(self, key: str) -> Path:
        return self.runs_dir / key

    def finished(self) -> Dict[str, Dict[str, Any]]:
        """``{key: run.json}`` of every finished run folder."""
        from xlayer.results import read_json_object

        out: Dict[str, Dict[str, Any]] = {}
        if not self.runs_dir.is_dir():
            return out
        for p in sorted(self.runs_dir.iterdir()):
            if p.name.startswith(".") or not (p / "run.json").is_file():
                continue
            out[p.name] = read_json_object(p / "run.json")
        return out

    def failures(self) -> Dict[str, Dict[str, Any]]:
        """``{key: record}`` of every failed run (a record has the run's keys and ``error``)."""
        from xlayer.results import read_json_object

        out: Dict[str, Dict[str, Any]] = {}
        if not self.failed_dir.is_dir():
            return out
        for p in sorted(self.failed_dir.glob("*.json")):
            out[p.stem] = read_json_object(p)
        return out

    def write_run(self, meta: Mapping[str, Any], result: "Result") -> Path:
        """Writes a finished run's folder atomically; removes an earlier failure record.

        If a folder for the key already exists (another process finished the same run first),
        the new one is discarded: runs are deterministic, and a finished folder is never touched.
        """
        from xlayer.results import make_temp_folder, write_result

        key = str(meta["run"])
        target = self.run_folder(key)
        tmp = make_temp_folder(self.runs_dir, f".{key}.partial-")
        staged = tmp / "run"
        try:
            write_result(result, staged)
            (staged / "run.json").write_text(json.dumps(dict(meta), indent=2, sort_keys=True)
                                              + "\n", encoding="utf-8")
            _fsync_tree(staged)
            try:
                os.rename(staged, target)
            except OSError:
                if not (target / "run.json").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        (self.failed_dir / f"{key}.json").unlink(missing_ok=True)
        return target

    def write_failure(self, meta: Mapping[str, Any], error: str) -> None:
        """Records a failed run (atomically replacing an earlier record of it)."""
        record = dict(meta)
        record["error"] = error
        _write_text_atomic(self.failed_dir / f"{meta['run']}.json",
                           json.dumps(record, indent=2, sort_keys=True) + "\n")

    # -- combined tables ---------------------------------------------------------------------

    def tables(self) -> "tuple[pd.DataFrame, pd.DataFrame]":
        """``(runs, flows)`` built from the run folders and failure records (see module doc).

        Runs are listed in the order of the plan (sweep.json); runs on disk that the current
        plan does not name (left by an earlier, larger plan) are left out.
        """
        import pandas as pd

        from xlayer.results import read_json_object

        plan = self.plan() if self.is_sweep_folder() else {"runs": [], "swept": []}
        swept: List[str] = list(plan.get("swept", []))
        finished = self.finished()
        failures = self.failures()
        run_rows: List[Dict[str, Any]] = []
        flow_parts: List[Tuple[Dict[str, Any], Path]] = []
        for planned in plan.get("runs", []):
            key = planned["run"]
            keys = _key_columns(planned, swept)
            if key in finished:
                folder = self.run_folder(key)
                summary = read_json_object(folder / "summary.json")
                row = dict(keys)
                row["status"] = "ok"
                row["error"] = None
                for k, v in summary.items():
                    if k not in row:
                        row[k] = v
                run_rows.append(row)
                flow_parts.append((keys, folder / "flows.csv"))
            elif key in failures:
                row = dict(keys)
                row["status"] = "failed"
                row["error"] = failures[key].get("error")
                run_rows.append(row)
        runs = pd.DataFrame(run_rows)
        if runs.empty:
            runs = pd.DataFrame(columns=list(RUN_KEY_COLUMNS) + swept + ["status", "error"])
        flows_all = (_read_flow_tables(flow_parts) if flow_parts
                     else pd.DataFrame(columns=list(RUN_KEY_COLUMNS) + swept))
        return _parquet_safe(runs), _parquet_safe(flows_all)

    def rebuild_tables(self) -> "tuple[pd.DataFrame, pd.DataFrame]":
        """Rebuilds runs.parquet, flows.parquet, runs.csv and flows.csv (each atomically), then
        records what they were built from in tables.json."""
        fingerprint = self.fingerprint()
        (self.folder / TABLES_FINGERPRINT).unlink(missing_ok=True)
        runs, flows = self.tables()
        for name, df in (("runs", runs), ("flows", flows)):
            _write_atomic_with(self.folder / f"{name}.parquet",
                               lambda p, df=df: df.to_parquet(p, index=False))
            _write_atomic_with(self.folder / f"{name}.csv",
                               lambda p, df=df: df.to_csv(p, index=False))
        if self.fingerprint() == fingerprint:  # nothing arrived while the tables were built
            _write_text_atomic(self.folder / TABLES_FINGERPRINT,
                               json.dumps({"format": TABLES_FORMAT, "fingerprint": fingerprint})
                               + "\n")
        return runs, flows

    def fingerprint(self) -> str:
        """A hash of what the combined tables are built from: sweep.json's bytes, the name and
        modification time of every finished run folder and of every failure record. It
        changes when a run finishes or fails, a record or run folder is removed or replaced, or
        the plan changes; reading it costs one ``stat`` per run, not a read."""
        h = hashlib.sha256(f"format {TABLES_FORMAT}\n".encode())
        plan = self.folder / "sweep.json"
        h.update(plan.read_bytes() if plan.is_file() else b"")
        for d in (self.runs_dir, self.failed_dir):
            entries: List[Tuple[str, int]] = []
            if d.is_dir():
                with os.scandir(d) as it:
                    for e in it:
                        if not e.name.startswith("."):
                            entries.append((e.name, e.stat().st_mtime_ns))
            h.update(f"\n{d.name}\n".encode())
            for name, mtime in sorted(entries):
                h.update(f"{name} {mtime}\n".encode())
        return h.hexdigest()

    def tables_are_current(self) -> bool:
        """True when the four table files exist and were built from the folder as it is now."""
        if not all((self.folder / name).is_file() for name in TABLE_FILES):
            return False
        try:
            recorded = json.loads((self.folder / TABLES_FINGERPRINT).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return (isinstance(recorded, dict) and recorded.get("format") == TABLES_FORMAT
                and recorded.get("fingerprint") == self.fingerprint())

    def current_tables(self) -> "tuple[pd.DataFrame, pd.DataFrame]":
        """``(runs, flows)``: read from runs.parquet and flows.parquet when they are current
        (:meth:`tables_are_current`), else rebuilt from the run folders (and written)."""
        import pandas as pd

        if self.tables_are_current():
            try:
                return (pd.read_parquet(self.folder / "runs.parquet"),
                        pd.read_parquet(self.folder / "flows.parquet"))
            except (OSError, ValueError):  # damaged since: rebuild them
                pass
        return self.rebuild_tables()


#: The columns every run's flows.csv has.
FLOW_COLUMNS = ("flow", "throughput_bps")


def _read_flow_tables(parts: List[Tuple[Dict[str, Any], Path]]) -> "pd.DataFrame":
    """The flows.csv files of ``parts`` (``(key columns, path)``), each read on its own (with
    :func:`xlayer.results.read_csv_table`), its run's key columns inserted in front, and
    concatenated — or the same table parsed with one ``read_csv``, as a parse per file was most
    of the cost of building a sweep's tables. The one parse is used when every file has the
    same header line and at least one row (a sweep's runs write the same columns, each with one
    type in every file xlayer writes, so the values and types are those of the file-by-file
    concatenation); the key columns are concatenated run by run all the same, so that their
    types are too. A combined text that does not parse, or whose row count is not its line
    count (a quoted field holding a line break), is read file by file, which names a malformed
    file."""
    import io

    import pandas as pd

    from xlayer.results import read_csv_table

    texts = [path.read_bytes().decode("utf-8", errors="surrogateescape") for _, path in parts]
    header = texts[0].split("\n", 1)[0]
    bodies = [t[len(header) + 1:] for t in texts]
    counts = [b.count("\n") + (1 if not b.endswith("\n") else 0) for b in bodies]
    flows = None
    if (header.strip() and all(c in header.split(",") for c in FLOW_COLUMNS)
            and all(t.startswith(header + "\n") and b.strip("\n") for t, b in zip(texts, bodies))):
        text = header + "\n" + "".join(b if b.endswith("\n") else b + "\n" for b in bodies)
        try:
            flows = pd.read_csv(io.StringIO(text))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError):
            flows = None
        if flows is not None and len(flows) != sum(counts):
            flows = None
    if flows is None:  # file by file
        frames = []
        for keys, path in parts:
            df = read_csv_table(path, FLOW_COLUMNS)
            for i, (k, v) in enumerate(keys.items()):
                df.insert(i, k, [v] * len(df))
            frames.append(df)
        return pd.concat(frames, ignore_index=True)
    for j, name in enumerate(parts[0][0]):
        values = [keys[name] for keys, _ in parts]
        if _one_plain_type(values):  # typed alike piece by piece and whole
            column: Any = [v for v, n in zip(values, counts) for _ in range(n)]
        else:
            column = pd.concat([pd.Series([v] * n) for v, n in zip(values, counts)],
                               ignore_index=True)
        flows.insert(j, name, column)
    return flows


def _one_plain_type(values: List[Any]) -> bool:
    """All strings, all floats, or all integers within int64 (not bool): a column of them has
    one type, whether built whole or concatenated from pieces."""
    kinds = {type(v) for v in values}
    if kinds == {str} or kinds == {float}:
        return True
    return kinds == {int} and all(-(2 ** 63) <= v < 2 ** 63 for v in values)


def _key_columns(planned: Mapping[str, Any], swept: Iterable[str]) -> Dict[str, Any]:
    row: Dict[str, Any] = {"run": planned["run"], "stack": planned["stack"],
                           "seed": planned["seed"]}
    values = planned.get("values", {})
    for path in swept:
        row[path] = values.get(path)
    return row


def _parquet_safe(df: "pd.DataFrame") -> "pd.DataFrame":
    """Columns mixing types (a swept path taking numbers and strings) become strings."""
    for col in df.columns:
        if df[col].dtype == object:
            kinds = {type(v) for v in df[col] if v is not None and not _is_nan(v)}
            if len(kinds) > 1 or any(k in (list, dict) for k in kinds):
                df[col] = [None if v is None or _is_nan(v) else
                           (json.dumps(v) if isinstance(v, (list, dict)) else str(v))
                           for v in df[col]]
    return df


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _write_text_atomic(path: Path, text: str) -> None:
    _write_atomic_with(path, lambda p: p.write_text(text, encoding="utf-8"))


def _write_text_if_changed(path: Path, text: str) -> None:
    """Writes ``text`` (atomically) unless the file holds it already, leaving it untouched."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    _write_text_atomic(path, text)


def _write_atomic_with(path: Path, write: Any) -> None:
    from xlayer.results import make_temp_file

    tmp = make_temp_file(path.parent, f".tmp-{path.name}.")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fsync_tree(folder: Path) -> None:
    """Flushes a folder's files to disk before it is renamed into place (a crash of the
    machine, not only of the process, then also leaves no half-written run)."""
    for p in folder.iterdir():
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())
