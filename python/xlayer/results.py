"""Results of a run, and the result folder written from them.

A :class:`Result` holds what the core measured: the ``summary`` dict, per-flow and per-node
tables as pandas DataFrames, the scenario as run (every default filled in, seed included), and
pcap captures when ``output.pcap`` is on. :meth:`Result.write` writes the result folder::

    scenario.toml   the scenario as run; first line a comment with the xlayer version
    summary.json    the summary (keys sorted, indent 2; NaN written as null)
    flows.csv       one row per flow
    nodes.csv       one row per node
    timeseries.csv  per-flow throughput per bin, when output.timeseries_bin_s is set
    tcp_trace.csv   per-connection TCP cwnd/ssthresh/RTT/RTO trace, when output.tcp_trace is set
    optimizers.csv  one row per ECLAIR optimizer (status, failure, counts), when there are any
    conflicts.csv   conflicts and dependency cycles between optimizers, when there are optimizers
    core.csv        ECLAIR's core: every item optimizers read or layers wrote, its score, whether
                    cached, when optimizers read or wrote any
    node<N>.pcap    one capture per captured node, when output.pcap = true

Writes are atomic: everything goes into a hidden temporary folder next to the target, which is
renamed into place only once complete, so a failed or interrupted write leaves no partial folder.
An existing result folder is replaced only if every file in it is one of the files above (a
folder holding ``summary.json`` and ``scenario.toml``, nothing else but these files); any other
non-empty folder is refused, so ``--out .`` cannot clobber a working directory and a file of
yours put into a result folder is never deleted. The folder and files get the usual permissions
(``0777`` / ``0666`` less the umask), so a group can share them.

Captures are never held in memory: the core streams each node's frames into its file as the
run goes (:class:`PcapFiles`). ``xlayer.run(out=...)`` streams them into the result folder's
hidden temporary folder itself, so they are in place when it is renamed; a run without a
folder streams them into a temporary folder of its own (:class:`CaptureFolder`), removed once
neither the simulation nor its result needs it, and :meth:`Result.write` hard-links or copies
them from there, never reading a whole capture into memory.
"""

from __future__ import annotations

import array
import csv
import errno
import json
import math
import os
import re
import shutil
import sys
import tempfile
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from xlayer import _core
from xlayer.errors import XlayerError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Result",
    "CaptureFolder",
    "CoreTable",
    "PcapFiles",
    "SUMMARY_KEYS",
    "FLOW_COLUMNS",
    "TCP_TRACE_COLUMNS",
    "NODE_COLUMNS",
    "OPTIMIZER_COLUMNS",
    "CONFLICT_COLUMNS",
    "CORE_COLUMNS",
    "RESULT_FILES",
    "check_output_folder",
    "read_csv_table",
    "read_json_object",
    "summary_json",
    "table",
    "write_result",
]

#: Keys of ``Result.summary`` (the core's summary; more may be added).
SUMMARY_KEYS = (
    "aggregate_throughput_bps", "jain_index", "log_utility", "starved_flows", "delivery_ratio",
    "delay_mean_s", "events", "wall_s", "sim_time_s", "nodes", "flows", "seed", "name",
)
#: Columns of ``Result.flows`` / ``flows.csv``, in this order (more may follow).
FLOW_COLUMNS = (
    "flow", "src", "dst", "hops", "sent", "received", "throughput_bps",
    "delay_mean_s", "delay_median_s", "delay_p95_s", "delivery_ratio",
)
#: Columns of ``Result.nodes`` / ``nodes.csv``, in this order (more may follow).
NODE_COLUMNS = (
    "node", "x", "y", "mac_tx", "mac_retries", "drops_retry_limit", "drops_queue", "rx_errors",
    "forwarded",
)
#: Columns of ``Result.tcp_trace`` / ``tcp_trace.csv``.
TCP_TRACE_COLUMNS = ("flow", "t_s", "event", "cwnd_segments", "ssthresh_segments", "srtt_s",
                     "rto_s", "retransmits", "timeouts")
#: Columns of ``Result.optimizers`` / ``optimizers.csv`` (one row per attached optimizer).
OPTIMIZER_COLUMNS = ("id", "name", "language", "node", "status", "ended_s", "error", "deliveries",
                     "events", "timers", "sets")
#: Columns of ``Result.conflicts`` / ``conflicts.csv``.
CONFLICT_COLUMNS = ("kind", "t_s", "node", "param", "optimizer_id", "optimizer", "value",
                    "other_id", "other", "other_value", "other_t_s")
#: Columns of ``Result.core`` / ``core.csv`` (ECLAIR's core: one row per item, a parameter of a
#: node, that optimizers read or tuning layers wrote; ``score`` and ``in_core`` as of the last
#: selection).
CORE_COLUMNS = ("node", "item", "layer", "cacheable", "reads", "writes", "hits", "reads_per_s",
                "writes_per_s", "cost_read_layer_ns", "cost_write_core_ns", "score", "in_core")
#: Columns of ``Result.timeseries`` / ``timeseries.csv``.
TIMESERIES_COLUMNS = ("flow", "t_s", "throughput_bps")
#: The files every result folder has.
RESULT_FILES = ("scenario.toml", "summary.json", "flows.csv", "nodes.csv")

PathLike = Union[str, "os.PathLike[str]"]


def table(data: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
          columns: Sequence[str]) -> pd.DataFrame:
    """A table from the core as a DataFrame; the known ``columns`` first, in order, then the rest.

    ``data`` is the core's column form (``{column: (kind, data)}``: "i8"/"f8" little-endian
    int64/float64 bytes, "obj" a list), which costs no Python object per row or number, or a list
    of row dicts.
    """
    import pandas as pd

    if not data:
        return pd.DataFrame(columns=list(columns))
    if isinstance(data, Mapping):
        df = pd.DataFrame({name: _column(kind, payload) for name, (kind, payload) in data.items()})
    else:
        df = pd.DataFrame.from_records(list(data))
    first = [c for c in columns if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def _column(kind: str, payload: Any) -> Any:
    if kind in ("i8", "f8"):
        import numpy as np

        return np.frombuffer(payload, dtype="<" + kind).copy()
    return list(payload)


class CoreTable:
    """A table as the core returned it (see :func:`table`), kept so until it is read.

    A :class:`Result` holds its tables in this form and turns each into a DataFrame the first
    time it is read, so that a run whose tables are only written to its folder or printed (the
    CLI's ``xlayer run``) never imports pandas and numpy: 0.3-0.6 s of a process's start on this
    project's machines, half the core's time on mesh-7x7.
    """

    __slots__ = ("data", "columns")

    def __init__(self, data: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
                 columns: Sequence[str]) -> None:
        self.data = data
        self.columns = tuple(columns)

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame (:func:`table`)."""
        return table(self.data, self.columns)

    def __len__(self) -> int:
        data = self.data
        if not data:
            return 0
        if not isinstance(data, Mapping):
            return len(data)
        kind, payload = next(iter(data.values()))
        return len(payload) // 8 if kind in ("i8", "f8") else len(payload)

    def _names(self) -> List[str]:
        """The column names, the known ``columns`` first (the column form, or an empty table)."""
        data = self.data
        if not data:
            return list(self.columns)
        assert isinstance(data, Mapping), "only a table in column form has column names here"
        first = [c for c in self.columns if c in data]
        return first + [c for c in data if c not in first]

    def _values(self, name: str) -> Sequence[Any]:
        """A column's values as Python numbers, strings or None (NaN where "f8" has none)."""
        data = self.data
        assert isinstance(data, Mapping), "only a table in column form has columns here"
        kind, payload = data[name]
        if kind not in ("i8", "f8"):
            return payload
        values = array.array("q" if kind == "i8" else "d", payload)
        if sys.byteorder != "little":  # pragma: no cover - the core sends little-endian
            values.byteswap()
        return values

    def rows(self, limit: Optional[int] = None) -> Optional[List[Dict[str, Any]]]:
        """The first ``limit`` rows (all with None) as dicts, without pandas; None when the
        table is in row form (read it as a DataFrame)."""
        if self.data and not isinstance(self.data, Mapping):
            return None
        n = len(self) if limit is None else min(limit, len(self))
        names = self._names() if self.data else []
        columns = [self._values(c) for c in names]
        return [{c: col[i] for c, col in zip(names, columns)} for i in range(n)]

    def write_csv(self, path: Path) -> bool:
        """Writes the table as ``DataFrame.to_csv(path, index=False)`` writes it, byte for byte,
        without pandas; False (nothing written) for what only pandas writes the same way: a
        table in row form, or a text column holding numbers with a fraction."""
        data = self.data
        if data and not isinstance(data, Mapping):
            return False
        names = self._names()
        # the column form, or {} for an empty table in row form (which has no cells to write)
        by_name: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
        cells: List[Sequence[str]] = []
        for name in names if by_name else ():
            kind, payload = by_name[name]
            if kind == "i8":
                cells.append([str(v) for v in self._values(name)])
            elif kind == "f8":
                # pandas writes a float64 column with numpy's str, the shortest text that reads
                # back as the number (Python's repr), and NaN as an empty field.
                cells.append(["" if v != v else repr(v) for v in self._values(name)])
            else:
                if any(isinstance(v, float) for v in payload):
                    return False
                cells.append(["" if v is None else str(v) for v in payload])
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(names)
            writer.writerows(zip(*cells))
        return True


class CaptureFolder:
    """A temporary folder (under ``TMPDIR``) holding a run's captures while no result folder
    does; it is removed when the last object holding it — the simulation, its results — is
    garbage-collected, or when the interpreter exits."""

    def __init__(self) -> None:
        #: The folder's path.
        self.path = Path(tempfile.mkdtemp(prefix="xlayer-pcap-"))
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), True)

    def __repr__(self) -> str:
        return f"<CaptureFolder {str(self.path)!r}>"


class PcapFiles(Mapping[int, bytes]):
    """``Result.pcaps``: node → the bytes of its capture, read from its file when asked (each
    read returns the whole file, so keep what you read of a long capture small, or open
    :meth:`path` yourself). Iterates over the captured nodes in ascending order.

    The files are ``node<N>.pcap`` in ``folder``: the result folder for ``xlayer.run(out=...)``,
    else the run's :class:`CaptureFolder`, which this mapping keeps alive. Pickled (a sweep's
    Dask workers send results back), the mapping becomes a plain dict of bytes.
    """

    def __init__(self, folder: Union[str, "os.PathLike[str]"], nodes: Sequence[int],
                 owner: Optional[CaptureFolder] = None) -> None:
        self._folder = Path(folder)
        self._nodes = tuple(sorted(int(n) for n in nodes))
        self._owner = owner

    def path(self, node: int) -> Path:
        """The file of ``node``'s capture (``KeyError`` for a node not captured)."""
        if node not in self._nodes:
            raise KeyError(node)
        return self._folder / f"node{node}.pcap"

    def __getitem__(self, node: int) -> bytes:
        return self.path(node).read_bytes()

    def __iter__(self) -> Iterator[int]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node: object) -> bool:
        return node in self._nodes

    def __reduce__(self) -> Any:
        return (dict, (dict(self.items()),))

    def __repr__(self) -> str:
        return f"<PcapFiles nodes={list(self._nodes)} in {str(self._folder)!r}>"


@dataclass
class Result:
    """What one run measured. ``summary`` is a dict, ``flows`` and ``nodes`` are DataFrames.

    A table given as a :class:`CoreTable` (as :meth:`xlayer.Simulation.results` gives them)
    becomes a DataFrame when it is first read.
    """

    summary: Dict[str, Any]
    flows: pd.DataFrame
    nodes: pd.DataFrame
    scenario: Dict[str, Any]
    #: node → pcap bytes (:class:`PcapFiles`, read from the capture files when asked); empty
    #: unless ``output.pcap`` is on.
    pcaps: Mapping[int, bytes] = field(default_factory=dict)
    xlayer_version: str = _core.__version__
    #: Per-flow throughput per time bin (``flow``, ``t_s``, ``throughput_bps``); empty unless
    #: the scenario sets ``output.timeseries_bin_s``.
    timeseries: pd.DataFrame = field(default_factory=lambda: CoreTable((), TIMESERIES_COLUMNS))
    #: Per-connection TCP trace (cwnd, ssthresh, RTT estimate, RTO, retransmissions, timeouts at
    #: every window change and loss); empty unless the scenario sets ``output.tcp_trace``.
    tcp_trace: pd.DataFrame = field(default_factory=lambda: CoreTable((), TCP_TRACE_COLUMNS))
    #: One row per attached optimizer (status active/failed/shutdown, error, counts).
    optimizers: pd.DataFrame = field(default_factory=lambda: CoreTable((), OPTIMIZER_COLUMNS))
    #: Conflicts (two optimizers set one parameter to different values) and dependency cycles.
    conflicts: pd.DataFrame = field(default_factory=lambda: CoreTable((), CONFLICT_COLUMNS))
    #: ECLAIR's core: per item, reads, writes, cache hits, measured costs, score, in the core.
    core: pd.DataFrame = field(default_factory=lambda: CoreTable((), CORE_COLUMNS))

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if type(value) is CoreTable:
            value = value.frame()
            object.__setattr__(self, name, value)
        return value

    def _table_length(self, name: str) -> int:
        """Rows of table ``name``, without making it a DataFrame."""
        return len(object.__getattribute__(self, name))

    def _table_rows(self, name: str, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The first ``limit`` rows of table ``name`` as dicts, without pandas while the table
        has not been read as a DataFrame."""
        value = object.__getattribute__(self, name)
        if type(value) is CoreTable and (rows := value.rows(limit)) is not None:
            return rows
        df = getattr(self, name)
        return (df if limit is None else df.head(limit)).to_dict("records")

    def write(self, out: PathLike) -> Path:
        """Writes the result folder ``out`` atomically (see the module doc) and returns its path."""
        return write_result(self, out)

    def _repr_html_(self) -> str:
        """Jupyter's view: a compact summary and the flow table (:mod:`xlayer._repr`)."""
        from xlayer._repr import result_html

        return result_html(self)

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<Result {s.get('name')!r} seed={s.get('seed')} nodes={s.get('nodes')} "
            f"flows={s.get('flows')} aggregate_throughput_bps={s.get('aggregate_throughput_bps')}>"
        )


def read_json_object(path: Path) -> Dict[str, Any]:
    """A result folder's JSON file (``summary.json``, ``sweep.json``, ``run.json``) as a dict;
    a file that is not UTF-8 JSON holding an object raises :class:`XlayerError` naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise malformed_result(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise malformed_result(path, f"not JSON ({e})") from None
    except RecursionError:
        raise malformed_result(path, "JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise malformed_result(path, f"holds a JSON {type(data).__name__}, not an object")
    return data


def read_csv_table(path: Path, required: Sequence[str] = ()) -> pd.DataFrame:
    """A result folder's CSV file as a DataFrame; one that pandas cannot parse, or without the
    ``required`` columns, raises :class:`XlayerError` naming it."""
    import pandas as pd

    try:
        df = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError,
            ValueError) as e:
        raise malformed_result(path, f"not a readable CSV table ({_first_line(e)})") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise malformed_result(path, f"has no column {', '.join(missing)}")
    return df


def malformed_result(path: Path, what: str) -> XlayerError:
    """The error of a result file xlayer cannot read (damaged or edited by hand)."""
    return XlayerError(f"{path}: malformed xlayer result file: {what}")


def _first_line(e: BaseException) -> str:
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    return lines[0] if lines else type(e).__name__


def summary_json(summary: Mapping[str, Any]) -> str:
    """The summary as strict JSON: keys sorted, indent 2, NaN and infinities as null."""
    return json.dumps(_json_safe(summary), sort_keys=True, indent=2, allow_nan=False) + "\n"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _json_safe(value.item())
    return value


#: Files a run may write besides RESULT_FILES (``node<N>.pcap`` too).
OPTIONAL_RESULT_FILES = ("timeseries.csv", "tcp_trace.csv", "optimizers.csv", "conflicts.csv",
                         "core.csv",
                         "view.html")  # view.html: xlayer view / run --view (xlayer.viewer)
_PCAP_NAME = re.compile(r"node[0-9]+\.pcap")


def _is_result_folder(path: Path) -> bool:
    return (path / "summary.json").is_file() and (path / "scenario.toml").is_file()


def _is_result_file(entry: Path) -> bool:
    name = entry.name
    known = name in RESULT_FILES or name in OPTIONAL_RESULT_FILES or _PCAP_NAME.fullmatch(name)
    return bool(known) and entry.is_file() and not entry.is_symlink()


def check_output_folder(out: PathLike) -> Path:
    """Checks, before a run, that ``out`` can receive a result folder; returns it as a Path.

    Raises :class:`FileExistsError` if ``out`` is a file, or a non-empty folder that is not an
    earlier result folder, or one holding anything a run does not write (which replacing the
    folder would delete).
    """
    target = Path(out)
    if target.exists() or target.is_symlink():
        if not target.is_dir():
            raise FileExistsError(f"{out}: exists and is not a folder")
        entries = sorted(target.iterdir())
        if entries and not _is_result_folder(target):
            raise FileExistsError(
                f"{out}: folder exists, is not empty and holds no xlayer result; "
                "choose another --out"
            )
        foreign = [p.name for p in entries if not _is_result_file(p)]
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more"
                                              if len(foreign) > 3 else "")
            raise FileExistsError(
                f"{out}: holds an xlayer result but also {shown}, which xlayer did not write "
                "and would delete by replacing the folder; move them away or choose another "
                "--out"
            )
    return target


def write_result(result: Result, out: PathLike) -> Path:
    """Writes ``result`` as a folder at ``out``, atomically; returns the folder's path.

    An error while writing (:class:`OSError`) names ``out``, not the hidden temporary folder.
    """
    target = check_output_folder(out)
    with staged_result_folder(target, out) as tmp:
        _write_files(result, tmp)
        _move_into_place(tmp, target)
    return target


@contextmanager
def staged_result_folder(target: Path, out: PathLike) -> Iterator[Path]:
    """A hidden temporary folder beside ``target`` (missing parents created) to stage a result
    folder in; the body renames it into place (``_move_into_place``). If the body raises, the
    folder and the parents made for it are removed, and an :class:`OSError` is raised again
    naming ``out``, not the hidden folder."""
    parent = target.absolute().parent
    tmp = None
    created: List[Path] = []
    try:
        created = _make_parents(parent)
        tmp = make_temp_folder(parent, f".{target.name}.partial-")
        yield tmp
    except BaseException as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(e, OSError) and not isinstance(e, FileExistsError):
            raise OSError(e.errno, f"cannot write the result folder: "
                          f"{e.strerror or e}", str(out)) from e
        raise


def make_temp_folder(parent: Path, prefix: str) -> Path:
    """A new hidden folder in ``parent`` made with mode 0777 less the umask (``mkdtemp`` would
    make it 0700, and renamed into place it would keep that: readable by its owner only)."""
    for _ in range(100):
        path = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            os.mkdir(path, 0o777)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent / prefix))


def make_temp_file(parent: Path, prefix: str) -> Path:
    """A new empty hidden file in ``parent`` made with mode 0666 less the umask (``mkstemp``
    would make it 0600)."""
    for _ in range(100):
        path = parent / f"{prefix}{os.urandom(6).hex()}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return path
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(parent / prefix))


def _make_parents(parent: Path) -> List[Path]:
    """Creates the missing folders above the target; returns them, outermost first."""
    missing = []
    p = parent
    while not p.exists():
        missing.append(p)
        p = p.parent
    missing.reverse()
    for folder in missing:
        folder.mkdir()
    return missing


def _write_files(result: Result, folder: Path) -> None:
    """Writes the result's files into ``folder``. Captures already there (streamed into it by
    ``xlayer.run(out=...)``) are left as they are; others are hard-linked from their files, or
    copied where a link cannot be made, never read whole into memory."""
    version = result.xlayer_version
    scenario_toml = _core.scenario_to_toml(json.dumps(result.scenario, allow_nan=False))
    header = (
        f'# xlayer_version = "{version}"\n'
        "# The scenario as run, every default filled in; run it again with\n"
        "#   xlayer run scenario.toml\n\n"
    )
    (folder / "scenario.toml").write_text(header + scenario_toml, encoding="utf-8")
    (folder / "summary.json").write_text(summary_json(result.summary), encoding="utf-8")
    _write_table(result, "flows", folder / "flows.csv")
    _write_table(result, "nodes", folder / "nodes.csv")
    for name in ("timeseries", "tcp_trace", "optimizers", "core"):
        if result._table_length(name):
            _write_table(result, name, folder / f"{name}.csv")
            if name == "optimizers":
                _write_table(result, "conflicts", folder / "conflicts.csv")
    pcaps = result.pcaps
    for node in sorted(pcaps):
        dest = folder / f"node{node}.pcap"
        if isinstance(pcaps, PcapFiles):
            _link_or_copy(pcaps.path(node), dest)
        else:
            dest.write_bytes(pcaps[node])


def _write_table(result: Result, name: str, path: Path) -> None:
    """Writes table ``name`` as ``DataFrame.to_csv(index=False)`` does (without pandas while it
    is still a :class:`CoreTable`)."""
    value = object.__getattribute__(result, name)
    if type(value) is CoreTable and value.write_csv(path):
        return
    getattr(result, name).to_csv(path, index=False)


def _link_or_copy(src: Path, dest: Path) -> None:
    if dest.exists() and os.path.samefile(src, dest):
        return
    try:
        os.link(src, dest)
    except OSError:
        shutil.copyfile(src, dest)  # chunked: bounded memory


def _move_into_place(tmp: Path, target: Path) -> None:
    """Renames the staged folder ``tmp`` to ``target``, replacing an earlier result folder
    there (moved aside first, so that a failure leaves the old one in place)."""
    if not target.exists():
        os.rename(tmp, target)
        return
    if not any(target.iterdir()):
        target.rmdir()
        os.rename(tmp, target)
        return
    # An earlier result folder: move it aside, move the new one in, then delete the old one.
    old = make_temp_folder(tmp.parent, f".{target.name}.old-")
    old.rmdir()
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
