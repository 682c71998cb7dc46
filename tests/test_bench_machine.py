"""``benches/_machine.py``: the one line that says which machine a benchmark of a wall-time
target ran on (README, "Where issue 15's speed targets stand": the same build meets a target on
one machine and misses it on another)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("_machine", ROOT / "benches" / "_machine.py")
assert spec is not None and spec.loader is not None
machine = importlib.util.module_from_spec(spec)
spec.loader.exec_module(machine)


def cache_tree(root: Path, entries: list) -> Path:
    """A /sys/devices/system/cpu/cpu0/cache look-alike: (level, type, size, shared) each."""
    for i, (level, kind, size, shared) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        if shared is not None:
            (d / "shared_cpu_list").write_text(f"{shared}\n")
    return root


def test_caches_give_each_data_level_its_size_and_who_shares_it(tmp_path):
    root = cache_tree(tmp_path / "cache", [
        (1, "Data", "32K", "0"),
        (1, "Instruction", "32K", "0"),
        (2, "Unified", "1024K", "0"),
        (3, "Unified", "32768K", "0-1"),
    ])
    assert machine.caches(root) == ["L1d 32 KiB", "L2 1 MiB a core", "L3 32 MiB shared by 2"]


def test_a_cache_shared_by_a_list_of_ranges_counts_every_cpu_in_them(tmp_path):
    root = cache_tree(tmp_path / "cache", [
        (2, "Unified", "2048K", "0,4"),
        (3, "Unified", "48M", "0-3,8-11"),
    ])
    assert machine.caches(root) == ["L2 2 MiB shared by 2", "L3 48 MiB shared by 8"]


def test_what_a_system_does_not_have_is_left_out_not_an_error(tmp_path):
    root = cache_tree(tmp_path / "cache", [
        (1, "Data", "48K", None),           # no sharing file
        (2, "Unified", "not a size", "0"),  # unreadable size: the level is skipped
    ])
    assert machine.caches(root) == ["L1d 48 KiB"]
    assert machine.caches(tmp_path / "nowhere") == []
    assert machine.model(tmp_path / "no-cpuinfo") is None
    line = machine.describe(tmp_path / "nowhere", tmp_path / "no-cpuinfo")
    assert line.startswith("unknown CPU")
    assert "L1d" not in line


def test_the_line_names_the_model_the_caches_and_the_load(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\n"
                       "model name\t: AMD EPYC 7B13 64-Core Processor\n\nprocessor\t: 1\n")
    root = cache_tree(tmp_path / "cache", [(2, "Unified", "512K", "0")])
    line = machine.describe(root, cpuinfo)
    assert line.startswith("AMD EPYC 7B13 64-Core Processor, ")
    assert "logical CPU" in line
    assert "; L2 512 KiB a core" in line
    assert "; load " in line


def test_a_benchmark_prints_the_line_on_stderr_and_leaves_stdout_alone():
    p = subprocess.run([sys.executable, str(ROOT / "benches" / "_machine.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("\n") == 1 and "logical CPU" in p.stdout
    # the benchmarks call announce() after their arguments are read
    code = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('m', sys.argv[1]);"
            " m = importlib.util.module_from_spec(s); s.loader.exec_module(m); m.announce()")
    p = subprocess.run([sys.executable, "-c", code, str(ROOT / "benches" / "_machine.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout == ""
    assert p.stderr.startswith("machine: ") and p.stderr.endswith("\n")
