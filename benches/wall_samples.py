#!/usr/bin/env python3
"""Benchmark: where a run's *wall time* goes, by sampling its stack (issue 15).

cachegrind (``benches/dpclo_fig8.py --counts``) counts instructions and simulated cache misses,
but on this project's machines none of those counts predicts the wall time (the twentieth and
twenty-first sessions: 13 % fewer instructions, 4.4 % fewer L1 misses, a prefetch of DSDV's
table, each left it the same), and the machines lend no hardware counters (no ``perf``, no CPU
PMU in ``/sys/bus/event_source/devices``). A stack sampled at random instants of a running
process counts the time where it is spent, stalls included. This script builds the Rust runner
with line tables (``target/line-tables``; the code is the release build's), runs the scenario,
stops it with gdb ``--samples`` times at random instants (gdb attaches, prints the stack and
detaches, 50 times a gdb process; about 0.3 s a sample, while the process stands still, so the
run advances only between samples; it is started again if it ends), and attributes each sample
to the innermost frame in the core's own source (``crates/xlayer-core/src``), inlined functions
included, and to its handler path (the core's frames below the event loop, e.g.
``process_actions > transmit > arrive_in_bulk``). It prints the shares by source file, by
function, by line and by handler path, each with its standard error (a share p of n samples is
known to about sqrt(p(1-p)/n): 200 samples give a 20 % share to 3 points).

    python benches/wall_samples.py                               # benches/dpclo-fig8.toml
    python benches/wall_samples.py scenarios/random-200.toml --samples 300
    python benches/wall_samples.py FILE.toml --binary target/line-tables/release/examples/run_scenario
    python benches/wall_samples.py --set stack.preset=tcp-sack --set duration_s=100
    python benches/wall_samples.py --json

gdb must be installed (a system tool, not a Python package); without it the script says so.
``--set KEY=VALUE`` (repeatable) changes a field as ``xlayer run --set`` does: the installed
package (``pip install .``) loads the scenario, applies the overrides and writes it out as TOML
with every default filled in (``xlayer.scenario_to_toml``, what ``xlayer show`` prints), which
the runner reads.
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "benches" / "dpclo-fig8.toml"
TARGET_DIR = ROOT / "target" / "line-tables"
#: The core's sources, as gdb prints them in a frame's location.
CORE_SRC = "crates/xlayer-core/src/"
#: A frame of gdb's ``bt``: ``#3  0x... in name<...> (args) at path:line`` (the address and the
#: arguments are optional; inlined frames have no address).
FRAME = re.compile(
    r"^#\d+\s+(?:0x[0-9a-f]+ in )?(?P<name>[^\s(]+).*? at (?P<path>\S+):(?P<line>\d+)\s*$")
#: What gdb prints before each sample's backtrace (its ``echo`` in the command file).
MARK = "==xlayer-sample=="
#: Samples per gdb process: it reads the runner's line tables once, then attaches, prints the
#: stack and detaches this many times (0.3 s a sample instead of 1.5 s with a gdb each).
BATCH = 50
#: The event loop's frames: a sample's handler path starts below the innermost of them.
LOOP = ("dispatch", "run_until")
#: Handler frames kept in a sample's path, from the event loop inwards.
PATH_DEPTH = 3

#: A sample: file, function, line, handler path.
Sample = Tuple[str, str, int, str]


def core_frames(backtrace: str) -> List[Tuple[str, str, int]]:
    """The (file under ``crates/xlayer-core/src``, function, line) of every frame of
    ``backtrace`` (gdb's ``bt`` output) in the core's own source, innermost first."""
    out = []
    for line in backtrace.splitlines():
        m = FRAME.match(line.strip())
        if m and CORE_SRC in m.group("path"):
            name = re.sub(r"<.*", "", m.group("name"))  # generic arguments off
            out.append((m.group("path").split(CORE_SRC, 1)[1], name.rsplit("::", 1)[-1],
                        int(m.group("line"))))
    return out


def attribute(backtrace: str) -> Optional[Sample]:
    """A sample's file, function and line (its innermost frame in the core's source, inlined
    ones included) and its handler path (the core's frames from below the event loop inwards,
    at most :data:`PATH_DEPTH`, joined by " > "; "(event loop)" in the loop itself); None when
    no frame is the core's (the process was starting or ending, or in the C library)."""
    frames = core_frames(backtrace)
    if not frames:
        return None
    names = [f[1] for f in frames]
    loop = min((names.index(f) for f in LOOP if f in names), default=len(names))
    path = " > ".join(reversed(names[max(0, loop - PATH_DEPTH):loop])) or "(event loop)"
    return frames[0][0], frames[0][1], frames[0][2], path


def shares(samples: Iterable[Optional[Sample]]) -> Dict[str, Any]:
    """The number of samples (``total``) and their counts by file, by function, by line and by
    handler path, with each share and its standard error, most samples first; unattributed
    samples count in the total as ``(elsewhere)``."""
    items = list(samples)
    n = len(items)
    if n == 0:
        raise ValueError("no samples")
    by_file: collections.Counter = collections.Counter()
    by_function: collections.Counter = collections.Counter()
    by_path: collections.Counter = collections.Counter()
    by_line: collections.Counter = collections.Counter()
    for s in items:
        by_file[s[0] if s else "(elsewhere)"] += 1
        by_function[f"{s[0]} {s[1]}" if s else "(elsewhere)"] += 1
        by_line[f"{s[0]}:{s[2]} {s[1]}" if s else "(elsewhere)"] += 1
        by_path[s[3] if s else "(elsewhere)"] += 1

    def rows(c: collections.Counter) -> List[Dict[str, Any]]:
        out = []
        for key, k in c.most_common():
            p = k / n
            out.append({"where": key, "samples": k, "share": p,
                        "stderr": math.sqrt(p * (1 - p) / n)})
        return out

    return {"total": n, "by_file": rows(by_file),
            "by_function": rows(by_function), "by_line": rows(by_line),
            "by_path": rows(by_path)}


def build(target_dir: pathlib.Path) -> pathlib.Path:
    """Builds the runner (release, with line tables) and returns its path."""
    if shutil.which("cargo") is None:
        raise SystemExit("wall_samples: cargo is not on PATH (or pass --binary)")
    env = dict(os.environ, CARGO_PROFILE_RELEASE_DEBUG="line-tables-only")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "xlayer-core", "--example",
                    "run_scenario", "--target-dir", str(target_dir)], cwd=ROOT, env=env,
                   check=True)
    return target_dir / "release" / "examples" / "run_scenario"


def gdb_commands(pid: int, count: int, rng: random.Random) -> str:
    """A gdb command file taking ``count`` samples of process ``pid``, at random pauses of
    0-100 ms between them."""
    lines = ["set pagination off", "set confirm off"]
    for _ in range(count):
        lines += [f"attach {pid}", f"echo {MARK}\\n", "bt 12", "detach",
                  f"shell sleep {rng.uniform(0.0, 0.1):.3f}"]
    return "\n".join(lines) + "\n"


def split_samples(gdb_output: str) -> List[str]:
    """The backtraces of a gdb run of :func:`gdb_commands`, one per sample taken: those after
    the process ended (gdb could not attach: no frame) are left out."""
    return [b for b in gdb_output.split(MARK + "\n")[1:] if b.lstrip().startswith("#0")]


def sample(binary: pathlib.Path, scenario: pathlib.Path, count: int, seed: int,
           progress: bool, skip_s: float = 0.5) -> List[Optional[Sample]]:
    """``count`` attributed stack samples of ``binary scenario`` (restarted whenever it ends,
    each run sampled from ``skip_s`` seconds after its start), taken by gdb processes of
    :data:`BATCH` samples each."""
    rng = random.Random(seed)
    out: List[Optional[Sample]] = []
    proc: Optional[subprocess.Popen] = None
    with tempfile.TemporaryDirectory() as tmp:
        commands = pathlib.Path(tmp) / "samples.gdb"
        try:
            while len(out) < count:
                if proc is None or proc.poll() is not None:
                    if proc is not None and proc.returncode != 0:
                        raise SystemExit(f"wall_samples: {binary} {scenario} exited with status "
                                         f"{proc.returncode}")
                    proc = subprocess.Popen([str(binary), str(scenario)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(skip_s)  # past the set-up
                    continue
                commands.write_text(gdb_commands(proc.pid, min(BATCH, count - len(out)), rng))
                text = subprocess.run(["gdb", "-batch", "-nx", "-x", str(commands)],
                                      capture_output=True, text=True).stdout
                # Once the process has ended, gdb cannot attach: those samples have no frame.
                out += [attribute(bt) for bt in split_samples(text)]
                if progress:
                    print(f"\rsample {len(out)}/{count}", end="", file=sys.stderr, flush=True)
        finally:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
            if progress:
                print(file=sys.stderr)
    return out


def with_overrides(scenario: pathlib.Path, overrides: List[str], folder: pathlib.Path
                   ) -> pathlib.Path:
    """``scenario`` with ``overrides`` applied, validated and written as TOML into ``folder``
    (the scenario itself when there are none)."""
    if not overrides:
        return scenario
    from xlayer.errors import XlayerError
    from xlayer.scenario import load_scenario, scenario_to_toml

    try:
        text = scenario_to_toml(load_scenario(scenario, overrides))
    except XlayerError as e:
        raise SystemExit(f"wall_samples: {e}")
    out = folder / scenario.name
    out.write_text(text)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?", default=str(SCENARIO), help="scenario TOML "
                    "(default benches/dpclo-fig8.toml)")
    ap.add_argument("--samples", type=int, default=200, help="stack samples (default 200)")
    ap.add_argument("--binary", help="a run_scenario built with line tables (default: build one "
                    "into target/line-tables)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random pauses")
    ap.add_argument("--skip", type=float, default=0.5, metavar="S",
                    help="seconds of each run left unsampled (its set-up; default 0.5)")
    ap.add_argument("--top", type=int, default=25, help="functions printed (default 25)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="change a scenario field (repeatable), as xlayer run --set does")
    ap.add_argument("--json", action="store_true", help="print the shares as JSON")
    args = ap.parse_args()
    if args.samples < 1:
        ap.error("--samples must be at least 1")
    if not args.skip >= 0:
        ap.error("--skip must be a number of seconds, at least 0")
    scenario = pathlib.Path(args.scenario)
    if not scenario.is_file():
        ap.error(f"scenario {scenario} is not a file")
    with tempfile.TemporaryDirectory() as tmp:
        run = with_overrides(scenario, args.set, pathlib.Path(tmp))  # bad input first
        if shutil.which("gdb") is None:
            raise SystemExit("wall_samples: gdb is not installed (it samples the stacks); "
                             "install it with the system's package manager")
        binary = pathlib.Path(args.binary) if args.binary else build(TARGET_DIR)
        if not binary.is_file():
            ap.error(f"--binary {binary} is not a file")
        result = shares(sample(binary, run, args.samples, args.seed,
                               progress=sys.stderr.isatty() and not args.json,
                               skip_s=args.skip))
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    n = result["total"]
    changed = f" ({', '.join(args.set)})" if args.set else ""
    print(f"{scenario}{changed}: {n} samples")
    for title, key, limit in (("file", "by_file", None), ("function", "by_function", args.top),
                              ("line", "by_line", args.top),
                              ("handler path", "by_path", args.top)):
        print(f"\n| {title} | samples | share |\n|---|---|---|")
        for r in result[key][:limit]:
            print(f"| {r['where']} | {r['samples']} | {100 * r['share']:.1f} ± "
                  f"{100 * r['stderr']:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
