"""``benches/ab.py``: two builds run at once, pair after pair, and each pair's ratio of core wall
times (README, "A profile-guided build")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import xlayer

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benches" / "ab.py"
#: The folder the installed xlayer is in: a build as `pip install --target` leaves one.
SITE = Path(xlayer.__file__).resolve().parent.parent


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=300)


def test_a_build_against_itself_gives_each_pair_a_ratio_near_one():
    p = bench(str(SITE), str(SITE), "--pairs", "2", "--scenario",
              str(ROOT / "scenarios" / "chain.toml"), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert len(out["pairs"]) == 2
    r = out["ratios"]["chain"]
    assert r["min_ratio"] <= r["median_ratio"] <= r["max_ratio"]
    # Both sides ran the same scenario (a ratio of 0 or a missing side would be a plumbing bug);
    # how near 1 is the machine's business, not asserted.
    assert all(p["a"]["chain"] > 0 and p["b"]["chain"] > 0 for p in out["pairs"])


def test_a_folder_without_an_installed_xlayer_is_refused_naming_it(tmp_path):
    p = bench(str(SITE), str(tmp_path))
    assert p.returncode != 0
    assert "holds no installed xlayer" in p.stderr and str(tmp_path) in p.stderr
    assert "Traceback" not in p.stderr


def test_bad_counts_are_refused_naming_the_option():
    p = bench(str(SITE), str(SITE), "--pairs", "0")
    assert p.returncode == 2 and "--pairs must be at least 1, found 0" in p.stderr
    p = bench(str(SITE), str(SITE), "--duration", "-5")
    assert p.returncode == 2 and "--duration must be positive, found -5.0" in p.stderr
