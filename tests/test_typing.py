"""What a type checker (mypy) sees of the public API: the package ships py.typed, and
``xlayer.sweep`` / ``analysis.load`` / ``xlayer.run`` / ``xlayer.view`` have real return types,
so an IDE completes ``sweep.runs`` and a wrong argument is caught before anything runs."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import xlayer

pytest.importorskip("mypy")

USE = """
import xlayer
from xlayer import analysis

s = xlayer.sweep("sweep.toml", workers=2, overrides={"duration_s": 5})
reveal_type(s)
reveal_type(analysis.load("results/x"))
reveal_type(xlayer.run("chain.toml", seed=3))
reveal_type(xlayer.view("results/x"))
reveal_type(xlayer.Simulation("chain.toml").run())
xlayer.sweep("sweep.toml", workers="two")
"""


@pytest.mark.slow
def test_mypy_sees_the_return_types_of_the_public_api_and_catches_a_bad_argument(tmp_path):
    (tmp_path / "use.py").write_text(USE)
    env = dict(os.environ)
    package_root = Path(xlayer.__file__).resolve().parent.parent
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    if package_root not in site:  # a source checkout (PYTHONPATH): show mypy the same package
        env["MYPYPATH"] = str(package_root)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
         "--follow-imports=silent", "--ignore-missing-imports", "--no-error-summary",
         "use.py"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600,
    )
    lines = proc.stdout.splitlines()
    revealed = [line.split("Revealed type is ")[1].strip('"') for line in lines
                if "Revealed type is" in line]
    assert revealed[:3] == ["xlayer.analysis.Sweep", "xlayer.analysis.Sweep",
                            "xlayer.results.Result"], proc.stdout + proc.stderr
    assert revealed[3] == "pathlib.Path"
    assert revealed[4] == "xlayer.results.Result"
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 1 and 'Argument "workers" to "sweep"' in errors[0], proc.stdout


@pytest.mark.slow
def test_mypy_finds_no_error_in_the_package_itself(tmp_path):
    """The package ships py.typed, so a type checker takes its annotations at their word: what
    a user's mypy or IDE says of a call into xlayer is only right if the annotations say what
    the code does. mypy on xlayer's own source, with the repository's configuration
    (pyproject.toml: only the third-party modules without annotations silenced), finds no
    error."""
    repo = Path(__file__).resolve().parents[1]
    package = Path(xlayer.__file__).resolve().parent
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    if package.parent in site:  # an installed package, not a source checkout: check the source
        package = repo / "python" / "xlayer"
    if not (package / "py.typed").is_file():
        pytest.skip(f"no source of the package at {package}")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(repo / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), str(package)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
