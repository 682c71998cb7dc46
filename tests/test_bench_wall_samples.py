"""``benches/wall_samples.py``: where a run's wall time goes, from gdb's stacks sampled at random
instants (README, "Where the wall time goes, sampled")."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benches" / "wall_samples.py"
spec = importlib.util.spec_from_file_location("wall_samples", BENCH)
assert spec is not None and spec.loader is not None
ws = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ws)

#: gdb's `bt` of the release runner with line tables, stopped inside a transmission's delivery
#: in bulk (library frames below the core's, inlined frames without an address).
BACKTRACE = """\
#0  0x00007f0c2a4e1a10 in core::ptr::write<xlayer_core::phy::WeakSignal> () at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ptr/mod.rs:1917
#1  push<xlayer_core::phy::WeakSignal, alloc::alloc::Global> () at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/alloc/src/vec/mod.rs:2444
#2  0x00005643fe97b62e in prune_weak () at crates/xlayer-core/src/phy/mod.rs:560
#3  add_weak () at crates/xlayer-core/src/phy/mod.rs:527
#4  arrive_in_bulk () at crates/xlayer-core/src/world/mod.rs:193
#5  transmit () at crates/xlayer-core/src/world/mod.rs:1066
#6  process_actions () at crates/xlayer-core/src/world/mod.rs:872
#7  0x00005643fe96d6b1 in dispatch () at crates/xlayer-core/src/world/mod.rs:782
#8  run_until () at crates/xlayer-core/src/world/mod.rs:558
#9  0x00005643fe7ca708 in run () at crates/xlayer-core/src/lib.rs:81
#10 main () at crates/xlayer-core/examples/run_scenario.rs:20
#11 0x00005643fe7cf3b1 in main ()
"""


def test_a_sample_is_the_innermost_frame_of_the_core_and_its_handler_path():
    assert ws.attribute(BACKTRACE) == (
        "phy/mod.rs", "prune_weak", 560, "process_actions > transmit > arrive_in_bulk")
    # Code the event loop calls itself (the queue's) has its own path; the loop's own, none.
    popping = "#0  sift_down () at crates/xlayer-core/src/sim/queue.rs:80\n" + BACKTRACE.split(
        "\n", 8)[8]
    assert ws.attribute(popping) == ("sim/queue.rs", "sift_down", 80, "sift_down")
    looping = BACKTRACE.split("\n", 8)[8]
    assert ws.attribute(looping) == ("world/mod.rs", "run_until", 558, "(event loop)")


def test_a_sample_outside_the_core_counts_as_elsewhere_in_the_shares():
    libc = "#0  0x00007fb605cbcbd3 in __GI___wait4 () at ../sysdeps/unix/sysv/linux/wait4.c:30\n"
    assert ws.attribute(libc) is None
    s = ws.shares([ws.attribute(BACKTRACE)] * 3 + [None])
    assert s["total"] == 4
    files = {r["where"]: (r["samples"], r["share"]) for r in s["by_file"]}
    assert files == {"phy/mod.rs": (3, 0.75), "(elsewhere)": (1, 0.25)}
    # The standard error of a share p of n samples: sqrt(p (1 - p) / n).
    assert s["by_function"][0]["stderr"] == pytest.approx((0.75 * 0.25 / 4) ** 0.5)
    assert s["by_line"][0]["where"] == "phy/mod.rs:560 prune_weak"


def test_the_samples_of_one_gdb_process_are_split_at_its_marks():
    commands = ws.gdb_commands(1234, 3, ws.random.Random(1))
    assert commands.count("attach 1234") == 3 and commands.count("detach") == 3
    # gdb echoes the mark and a newline before each backtrace (its output also has lines of
    # its own before the first, which are no sample).
    output = "Attaching to process 1234\n" + "".join(
        f"{ws.MARK}\n{BACKTRACE}[Inferior 1 (process 1234) detached]\n" for _ in range(3))
    # A sample after the process ended: gdb could not attach, and there is no stack.
    output += f"{ws.MARK}\nptrace: No such process.\nNo stack.\n"
    samples = ws.split_samples(output)
    assert len(samples) == 3
    assert all(ws.attribute(b)[1] == "prune_weak" for b in samples)


def test_a_missing_scenario_is_refused_naming_it(tmp_path):
    p = subprocess.run([sys.executable, str(BENCH), str(tmp_path / "nope.toml")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "nope.toml is not a file" in p.stderr


def test_a_bad_override_is_refused_naming_the_field_before_anything_is_built():
    p = subprocess.run([sys.executable, str(BENCH), "--set", "duration_s=-3",
                        "--binary", "/nonexistent"], capture_output=True, text=True)
    assert p.returncode == 1 and "duration_s" in p.stderr and "positive" in p.stderr


def test_overrides_give_the_scenario_xlayer_runs_with_them(tmp_path):
    scenario = BENCH.parent / "dpclo-fig8.toml"
    assert ws.with_overrides(scenario, [], tmp_path) == scenario
    # 21 simulated seconds: the routing warm-up and the first second of flows.
    changes = ["stack.preset=tcp-sack", "duration_s=21"]
    out = ws.with_overrides(scenario, changes, tmp_path)
    from xlayer.scenario import load_toml_file

    sc = load_toml_file(out)
    assert out.suffix == ".toml" and sc["duration_s"] == 21 and sc["stack"]["preset"] == "tcp-sack"
    import xlayer

    # What the runner reads from it is what xlayer runs with the same overrides.
    a = xlayer.run(str(out))
    b = xlayer.run(str(scenario), overrides=changes)
    assert a.summary["events"] == b.summary["events"] > 0


@pytest.mark.skipif(shutil.which("gdb") is not None, reason="gdb is installed")
def test_without_gdb_it_says_so():
    p = subprocess.run([sys.executable, str(BENCH)], capture_output=True, text=True)
    assert p.returncode != 0 and "gdb is not installed" in p.stderr
