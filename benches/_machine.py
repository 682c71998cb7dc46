"""What machine a benchmark ran on, in one line: the CPU model, the logical CPUs, the caches a
core sees (each level's size and how many CPUs share it) and the load average when it started.

Issue 15's targets are wall-time targets, and the same build meets them on one of this project's
machines and misses them on another (README, "Where issue 15's speed targets stand": mesh-7x7
115x ns-3 on one EPYC, 91x on another), so each benchmark that measures one prints this line on
stderr first (its stdout, and its ``--json``, stay as they were) and a figure copied from it
carries its machine:

    machine: AMD EPYC, 2 logical CPUs; L1d 32 KiB, L2 1 MiB a core, L3 32 MiB shared by 2; load 0.05 / 0.02 / 0.00

Linux's ``/proc/cpuinfo`` and ``/sys/devices/system/cpu/cpu0/cache``; what a system does not
have is left out of the line, never an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _size_text(size: str) -> str:
    """A sysfs cache size ("32K", "1024K", "32768K", "8M") in KiB or MiB."""
    units = {"K": 1, "M": 1024, "G": 1024 * 1024}
    s = size.strip().upper()
    kib = int(s[:-1]) * units[s[-1]] if s and s[-1] in units else int(s) // 1024
    if kib >= 1024 and kib % 1024 == 0:
        return f"{kib // 1024} MiB"
    return f"{kib} KiB"


def _cpus_in(cpu_list: str) -> int:
    """How many CPUs a sysfs list names ("0", "0-1", "0-3,8-11")."""
    n = 0
    for part in cpu_list.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            n += int(hi) - int(lo) + 1
        elif part.strip():
            n += 1
    return n


def caches(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> List[str]:
    """The data and unified caches cpu0 sees, lowest level first: "L1d 32 KiB",
    "L2 1 MiB a core", "L3 32 MiB shared by 2"."""
    out = []
    # index0, index1, ... in number order (a name sort puts index10 before index2)
    indexes = [d for d in root.glob("index*") if d.name[5:].isdigit()]
    for index in sorted(indexes, key=lambda d: int(d.name[5:])):
        level, kind, size = (_read(index / k) for k in ("level", "type", "size"))
        if level is None or kind is None or size is None or kind == "Instruction":
            continue
        try:
            text = f"L{level}{'d' if kind == 'Data' else ''} {_size_text(size)}"
        except ValueError:
            continue
        shared = _read(index / "shared_cpu_list")
        if shared is not None and level != "1":
            try:
                n = _cpus_in(shared)
            except ValueError:
                n = 0
            if n == 1:
                text += " a core"
            elif n > 1:
                text += f" shared by {n}"
        out.append(text)
    return out


def model(cpuinfo: Path = Path("/proc/cpuinfo")) -> Optional[str]:
    """The CPU's model name."""
    text = _read(cpuinfo)
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return value.strip()
    return None


def describe(sys_cache: Path = Path("/sys/devices/system/cpu/cpu0/cache"),
             cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The one-line description (without the ``machine:`` prefix)."""
    parts = []
    head = model(cpuinfo) or "unknown CPU"
    cpus = os.cpu_count()
    if cpus:
        head += f", {cpus} logical CPU{'s' if cpus != 1 else ''}"
    parts.append(head)
    found = caches(sys_cache)
    if found:
        parts.append(", ".join(found))
    try:
        load = os.getloadavg()
    except (OSError, AttributeError):
        load = None
    if load is not None:
        parts.append("load " + " / ".join(f"{x:.2f}" for x in load))
    return "; ".join(parts)


def announce() -> None:
    """Prints ``machine: ...`` on stderr."""
    print(f"machine: {describe()}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    print(describe())
