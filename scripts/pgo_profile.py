#!/usr/bin/env python3
"""Profile-guided optimisation: writes ``build-backend/xlayer.profdata``, the profile ``pip
install .`` builds the Rust core with (``build-backend/xlayer_build.py``).

Builds the package with the core instrumented (``-Cprofile-generate``) into a temporary folder,
runs every shipped scenario once there (seed 1; the cases of ``scripts/result_hashes.py``, the
long ones shortened as it shortens them, about half a minute), merges the counts with LLVM's
``llvm-profdata`` and writes the profile and ``xlayer.profdata.json`` (the commit, rustc, the
LLVM that merged it) atomically. Then ``pip install .`` builds with it.

    python scripts/pgo_profile.py                  # the profile anew
    python scripts/pgo_profile.py --profdata PATH  # with this llvm-profdata
    python scripts/pgo_profile.py --status         # how far the code has moved since the profile

Run it after a change to the simulator's hot paths: the profile is matched to the code function
by function, and a function changed since it was made is compiled as without a profile (its
results the same, its speed that of a build without the profile). ``llvm-profdata`` is not part
of Rust's default toolchain: Debian's ``llvm-19`` package has it (``apt-get install llvm-19``:
``/usr/lib/llvm-19/bin/llvm-profdata``), as does ``rustup component add llvm-tools``. Its LLVM
must read the format of rustc's LLVM (19 reads 22's); the profile it writes is read by rustc
whose LLVM is at least as new (the build backend checks, and builds without it otherwise).
"""
from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build-backend"))
try:
    # The build backend's paths and its reading of rustc's LLVM (it imports maturin, which the
    # instrumented build needs too: the test extra brings it).
    import xlayer_build
except ImportError as e:
    raise SystemExit(f"pgo_profile: error: {e}: pip install maturin (the test extra brings it)")

PROFILE = xlayer_build.PROFILE
META = xlayer_build.PROFILE_META


def profdata_major(tool: str) -> Optional[int]:
    """The LLVM major version of an ``llvm-profdata`` (``merge --version``, which LLVM 14 reads
    too), None if it does not run."""
    try:
        out = subprocess.run([tool, "merge", "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"LLVM version (\d+)", out)
    return int(m.group(1)) if m else None


def find_profdata(given: Optional[str]) -> Tuple[str, int]:
    """An ``llvm-profdata`` and its LLVM major version: ``given``, else the newest of those on
    PATH (plain or versioned) and under ``/usr/lib/llvm-*``."""
    if given:
        major = profdata_major(given)
        if major is None:
            raise SystemExit(f"pgo_profile: error: --profdata: {given} is not an llvm-profdata")
        return given, major
    candidates = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        candidates += glob.glob(os.path.join(d, "llvm-profdata"))
        candidates += glob.glob(os.path.join(d, "llvm-profdata-[0-9]*"))
    candidates += glob.glob("/usr/lib/llvm-[0-9]*/bin/llvm-profdata")
    found = [(major, path) for path in candidates
             for major in [profdata_major(path)] if major is not None]
    if not found:
        raise SystemExit("pgo_profile: error: no llvm-profdata found (PATH, /usr/lib/llvm-*): "
                         "install LLVM's tools (Debian: apt-get install llvm-19; or rustup "
                         "component add llvm-tools) or name one with --profdata")
    major, path = max(found)
    return path, major


def train() -> int:
    """Runs every shipped case once at seed 1 (in the instrumented package on PYTHONPATH)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import result_hashes
    import xlayer

    site = os.environ["XLAYER_PGO_SITE"]
    if not pathlib.Path(xlayer.__file__).resolve().is_relative_to(pathlib.Path(site).resolve()):
        raise SystemExit(f"pgo_profile: error: imported {xlayer.__file__}, not the instrumented "
                         f"build in {site}")
    cases = result_hashes.cases()
    for i, (name, scenario) in enumerate(cases, 1):
        t = time.perf_counter()
        xlayer.run(dict(scenario, seed=1))
        print(f"  [{i}/{len(cases)}] {name} {time.perf_counter() - t:.1f} s", flush=True)
    return 0


def status() -> int:
    """Prints the profile's commit and the Rust sources changed since it (each a file whose
    changed functions now build as without a profile)."""
    try:
        meta = json.loads(META.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SystemExit(f"pgo_profile: error: {META.relative_to(ROOT)}: {e}")
    commit = meta.get("commit")
    print(f"profile of {commit} ({meta.get('date')}, {meta.get('rustc')}, LLVM "
          f"{meta.get('llvm_major')}){', crates modified then' if meta.get('crates_modified_since_commit') else ''}")
    if not commit:
        return 0
    proc = subprocess.run(["git", "diff", "--numstat", commit, "--", "crates/*.rs",
                           ":(exclude)crates/*/tests/*"],
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"pgo_profile: error: git diff against {commit}: {proc.stderr.strip()}")
    rows = [line.split("\t") for line in proc.stdout.splitlines() if line.strip()]
    if not rows:
        print("no Rust source of the crates changed since: the profile matches the code")
        return 0
    print(f"{len(rows)} Rust source(s) changed since (lines added / removed); run "
          "python scripts/pgo_profile.py if these are on the hot paths:")
    for added, removed, path in rows:
        print(f"  {path}: +{added} -{removed}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profdata", metavar="PATH", help="the llvm-profdata to merge with")
    ap.add_argument("--status", action="store_true",
                    help="print the profile's commit and the Rust sources changed since; make nothing")
    ap.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.train:
        return train()
    if args.status:
        return status()

    profdata, merger = find_profdata(args.profdata)
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True,
                           check=True).stdout.strip()
    rustc_llvm = xlayer_build.rustc_llvm_major()
    if rustc_llvm is None:
        raise SystemExit(f"pgo_profile: error: rustc -vV names no LLVM version ({rustc})")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="xlayer-pgo-") as tmp:
        tmp_path = pathlib.Path(tmp)
        raw, wheels, site = tmp_path / "raw", tmp_path / "wheels", tmp_path / "site"
        # The build scripts, instrumented too, write their counts as they run: apart, unmerged.
        env = dict(os.environ, XLAYER_PGO="0",
                   CARGO_ENCODED_RUSTFLAGS=f"-Cprofile-generate={tmp_path / 'build-raw'}")
        env.pop("RUSTFLAGS", None)
        print(f"building the instrumented core (rustc {rustc_llvm}'s LLVM) ...", flush=True)
        # With this environment's maturin (imported above).
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(wheels), str(ROOT)], env=env,
                       check=True)
        wheel = next(wheels.glob("xlayer-*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--target", str(site), str(wheel)], check=True)
        print("running every shipped scenario once ...", flush=True)
        run_env = dict(os.environ, XLAYER_PGO_SITE=str(site),
                       LLVM_PROFILE_FILE=str(raw / "xlayer-%m.profraw"),
                       PYTHONPATH=os.pathsep.join(
                           [str(site)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--train"],
                       env=run_env, check=True, cwd=tmp)
        raws = sorted(raw.glob("*.profraw"))
        if not raws:
            raise SystemExit("pgo_profile: error: the instrumented runs wrote no profile")
        merged = tmp_path / "xlayer.profdata"
        proc = subprocess.run([profdata, "merge", "--sparse", "-o", str(merged),
                               *map(str, raws)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"pgo_profile: error: {profdata} (LLVM {merger}) could not merge "
                             f"rustc's profile (LLVM {rustc_llvm}): {proc.stderr.strip()}; "
                             "use an llvm-profdata at least as new (--profdata)")
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=ROOT).stdout.strip() or None
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "crates"],
                                    capture_output=True, text=True, cwd=ROOT).stdout.strip())
        meta = {
            "commit": commit,
            "crates_modified_since_commit": dirty,
            "date": datetime.date.today().isoformat(),
            "rustc": rustc,
            "llvm_major": merger,
            "llvm_profdata": os.path.basename(profdata),
            "training": "scripts/result_hashes.py cases, seed 1",
        }
        tmp_profile = PROFILE.with_suffix(".profdata.tmp")
        shutil.copyfile(merged, tmp_profile)
        os.replace(tmp_profile, PROFILE)
        tmp_meta = META.with_suffix(".json.tmp")
        tmp_meta.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp_meta, META)
    size = PROFILE.stat().st_size
    print(f"wrote {PROFILE.relative_to(ROOT)} ({size / 1e6:.2f} MB, LLVM {merger}) in "
          f"{time.perf_counter() - started:.0f} s; pip install . builds with it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
