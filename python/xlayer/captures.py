"""TCP flavor detection on real captures (issue 18 item 5): ``xlayer.flavor(path)`` and
``xlayer flavor FILE``.

The capture is read here (gzip-compressed files, ``.pcap.gz``, are decompressed first) and its
bytes go to the core (``xlayer._core.capture_flavors``), which parses pcap or pcapng, groups
the TCP segments into connections, decides which side sends the data and runs the passive
detector of the simulator's nodes (``transport::flavor``) over each connection.

    >>> import xlayer
    >>> xlayer.flavor("tests/data/captures/cubic-sack-sender-upload-r10-d20-l0-q40-s1.pcap.gz")
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import TYPE_CHECKING, Any, Dict, List, Union

from xlayer import _core
from xlayer.errors import PcapError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["flavor", "read_capture", "capture_flavors", "COLUMNS", "FLAVORS"]

#: The columns of :func:`flavor` and the keys of ``xlayer flavor --json``, in order.
COLUMNS = ("src", "sport", "dst", "dport", "packets", "flavor", "sack", "confidence")
#: What ``flavor`` may be.
FLAVORS = ("reno", "newreno", "westwood", "cubic", "bbr", "unknown")
#: The details :func:`flavor` adds with ``details=True``.
DETAILS = ("data_bytes", "fast_recoveries", "timeouts", "decided_s", "first_s", "last_s")

_GZIP_MAGIC = b"\x1f\x8b"


def read_capture(path: Union[str, "os.PathLike[str]"]) -> bytes:
    """The bytes of a capture file, decompressed when it is gzip. Raises ``OSError`` for a file
    that cannot be read and :class:`~xlayer.errors.PcapError` for a damaged gzip stream."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise PcapError(f"{os.fspath(path)}: damaged gzip capture: {e}") from None
    return data


def capture_flavors(path: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    """Every TCP connection of the capture at ``path``, as dicts (the columns of :func:`flavor`
    and its details). A capture that cannot be read raises
    :class:`~xlayer.errors.PcapError` naming the file, what is wrong and where."""
    data = read_capture(path)
    try:
        return _core.capture_flavors(data)
    except PcapError as e:
        raise PcapError(f"{os.fspath(path)}: {e}") from None


def flavor(path: Union[str, "os.PathLike[str]"], details: bool = False) -> "pd.DataFrame":
    """The TCP flavor of every connection in a capture, one row per connection: ``src``,
    ``sport`` (the data sender), ``dst``, ``dport``, ``packets`` (segments both ways),
    ``flavor`` (one of :data:`FLAVORS`), ``sack`` and ``confidence`` (the share of the evidence
    that agrees; 0 while ``unknown``). ``details=True`` adds ``data_bytes``,
    ``fast_recoveries``, ``timeouts``, ``decided_s``, ``first_s`` and ``last_s``.

    Reads pcap and pcapng (optionally gzip-compressed) with link types Ethernet, Linux cooked
    (SLL, SLL2), raw IP, BSD loopback and 802.11 with or without radiotap. A file that is not a
    capture, or is truncated or malformed, raises :class:`~xlayer.errors.PcapError`."""
    import pandas as pd

    rows = capture_flavors(path)
    columns = list(COLUMNS) + (list(DETAILS) if details else [])
    return pd.DataFrame([{k: r[k] for k in columns} for r in rows], columns=columns)
