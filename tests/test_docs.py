"""The documentation site builds (mkdocs, strict: a broken link or anchor fails it), with the
README as its home page and its links into docs/ leading to the pages."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("mkdocs")


def test_the_docs_site_builds_with_the_readme_as_home_and_working_links(tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
         "-d", str(site)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    home = (site / "index.html").read_text()
    readme_title = next(line for line in (REPO / "README.md").read_text().splitlines()
                        if line.startswith("## "))[3:]
    assert readme_title in home
    # README's docs/scenario.md#... links now lead to the scenario page's anchors
    assert 'href="scenario/#what-the-numbers-mean"' in home
    assert (site / "scenario" / "index.html").is_file() and (site / "sweep" / "index.html").is_file()
    assert (site / "tutorial.ipynb").is_file()
    assert not (site / "hooks").exists()
