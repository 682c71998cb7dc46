"""Refactors change no result: every shipped scenario, at two seeds, writes the same flows.csv,
nodes.csv and summary.json (less wall-clock keys) as the hashes recorded in
tests/data/result_hashes.json (scripts/result_hashes.py; record anew only for a change of model,
with the reason in the commit message)."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_every_shipped_scenario_gives_the_recorded_results():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "result_hashes.py")],
        capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "byte-identical" in proc.stdout
