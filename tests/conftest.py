"""Shared fixtures: small scenarios that run in well under a second, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

import pytest

from xlayer.scenario import load_toml

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"

#: Six nodes dropped at random in 300 m x 300 m, three saturated random flows, two seconds:
#: positions, pairs and backoffs all come from the seed, so different seeds give different numbers.
TINY_RANDOM = """
name = "tiny-random"
seed = 5
duration_s = 2.0
warmup_s = 0.5

[radio]
standard = "802.11b"
propagation = "two_ray_ground"
tx_range_m = 250.0
cs_range_m = 550.0

[topology]
kind = "random"
count = 6
width_m = 300.0
height_m = 300.0

[flows_random]
count = 3
rate_bps = "saturate"
payload_bytes = 1000
"""

#: Four nodes in a line, 200 m apart, one light constant-rate flow over one hop.
SMALL_CHAIN = """
name = "small-chain"
seed = 1
duration_s = 2.0
warmup_s = 0.5

[radio]
tx_range_m = 250.0
cs_range_m = 550.0

[topology]
kind = "chain"
count = 4
spacing_m = 200.0

[[flows]]
src = 0
dst = 1
rate_bps = 200e3
payload_bytes = 500
"""


@pytest.fixture
def tiny_text() -> str:
    return TINY_RANDOM


@pytest.fixture
def tiny_dict() -> dict:
    return load_toml(TINY_RANDOM)


@pytest.fixture
def tiny_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_RANDOM)
    return path


@pytest.fixture
def chain_path(tmp_path: Path) -> Path:
    path = tmp_path / "small-chain.toml"
    path.write_text(SMALL_CHAIN)
    return path


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write_scenario(text, name="scenario.toml")`` writes a scenario file into tmp_path."""

    def write(text: str, name: str = "scenario.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.fixture
def xlayer_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Runs ``python -m xlayer ARGS`` in tmp_path as a separate process (so an uncaught exception
    would show as a traceback and a non-2 exit status)."""

    # The child runs in another folder: a relative PYTHONPATH (a source checkout run with
    # PYTHONPATH=python) must name the same package there.
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )

    def run(*args: str, cwd: Path = tmp_path, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "xlayer", *map(str, args)],
            cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
        )

    return run


def hidden_leftovers(folder: Path) -> Sequence[Path]:
    """Temporary folders an interrupted write could leave behind (``.<name>.partial-*``)."""
    return sorted(p for p in folder.iterdir() if p.name.startswith("."))


def debian_tool(command: str, package: str) -> str:
    """Path of `command`; under CI (CI=true) it installs Debian's `package` first if missing.

    Elsewhere a missing tool skips the test with the command that installs it.
    """
    import os
    import shutil

    found = shutil.which(command)
    if found:
        return found
    if os.environ.get("CI") == "true" and shutil.which("apt-get"):
        subprocess.run(["apt-get", "update"], check=False, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", package], check=False,
                       capture_output=True, timeout=900)
        found = shutil.which(command)
        if found:
            return found
    pytest.skip(f"{command} is not installed (apt-get install -y {package}; the test installs it "
                "itself only when CI=true)")
