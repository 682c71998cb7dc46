"""Installing: without cargo, `pip install .` stops with one line naming what to install; what
`pip install .` installs is enough for `xlayer run`, and a command that needs an extra says which
one in one line; the test extra brings every extra (the README's test command stays true)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: The libraries of the extras: none may be needed by `xlayer run`.
OPTIONAL = ("dask", "distributed", "pyarrow", "scipy", "matplotlib", "cvxpy", "clarabel")


def _name(requirement: str) -> str:
    for stop in "[<>=;! ":
        requirement = requirement.split(stop)[0]
    return requirement.lower()


def test_the_default_install_leaves_the_heavy_parts_to_extras_and_test_brings_them_all():
    project = PYPROJECT["project"]
    core = {_name(r) for r in project["dependencies"]}
    assert core.isdisjoint(OPTIONAL), core
    extras = project["optional-dependencies"]
    assert {_name(r) for r in extras["sweep"]} >= {"dask", "pyarrow", "scipy"}
    assert {_name(r) for r in extras["plot"]} == {"matplotlib"}
    # `pip install '.[test]' && pytest` must install what every test imports: every extra.
    test = " ".join(extras["test"])
    assert "xlayer[sweep,plot,oracle]" in test.replace(" ", "")


def _without_cargo_path() -> str:
    keep = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not (Path(p) / "cargo").exists()]
    return os.pathsep.join(keep)


@pytest.mark.skipif(importlib.util.find_spec("maturin") is None,
                    reason="maturin is not installed (pip install '.[test]' brings it)")
def test_pip_install_without_cargo_stops_with_one_line_saying_what_to_install(tmp_path):
    # The build backend checks for cargo before maturin does anything: copy what the first
    # hook reads (no crates, which it never reaches) and build without cargo on PATH.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "build-backend", src / "build-backend")
    env = dict(os.environ, PATH=_without_cargo_path(), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("MATURIN_NO_INSTALL_RUST", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "-w", str(tmp_path / "wheels"), str(src)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    ours = [line.strip() for line in out.splitlines() if "xlayer: error:" in line]
    assert len(ours) == 1 and "needs Rust's cargo, which is not on PATH" in ours[0]
    assert "rustup" in ours[0]
    assert "Traceback" not in out and "puccinialin" not in out
    assert not (tmp_path / "wheels").exists() or not list((tmp_path / "wheels").iterdir())


def test_the_build_backend_is_maturins_when_cargo_is_there():
    if shutil.which("cargo") is None or importlib.util.find_spec("maturin") is None:
        pytest.skip("needs cargo and maturin")
    code = ("import sys; sys.path.insert(0, 'build-backend'); import xlayer_build, maturin; "
            "print(xlayer_build.get_requires_for_build_wheel()); "
            "print(xlayer_build.build_wheel.__doc__ == maturin.build_wheel.__doc__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "True"]  # no toolchain download asked for


# ----------------------------------------------------------------------------------------------
# Extras: a Python without them, simulated by making their imports fail


def _without_extras(code: str, cwd: Path) -> subprocess.CompletedProcess:
    blocked = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in OPTIONAL)
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve())
                                            for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return subprocess.run([sys.executable, "-c", blocked + code], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env=env)


def _cli(*args: str) -> str:
    return f"from xlayer.cli import main\nsys.exit(main({list(args)!r}))\n"


def test_xlayer_run_and_view_need_no_extra_and_print_their_summary(tmp_path):
    proc = _without_extras(_cli("run", "--set", "duration_s=2", "--out", "r"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "aggregate throughput" in proc.stdout and "Jain's fairness index" in proc.stdout
    assert (tmp_path / "r" / "flows.csv").is_file()
    proc = _without_extras(_cli("view", "r", "--frames", "5"), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "view.html").is_file()


@pytest.mark.parametrize("args,extra", [
    (("sweep", "sweep.toml"), "sweep"),
    (("compare", "s.toml", "--stacks", "udp"), "sweep"),
    (("plot", "r"), "plot"),
    (("report", "r"), "plot"),
    (("oracle",), "oracle"),
])
def test_a_command_needing_a_missing_extra_says_which_in_one_line(args, extra, tmp_path):
    proc = _without_extras(_cli(*args), tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlayer: error: "), proc.stderr
    assert f"pip install 'xlayer[{extra}]'" in lines[0]
    assert "not installed" in lines[0]


def test_the_python_api_raises_an_import_error_naming_the_extra(tmp_path):
    code = ("import xlayer\n"
            "try:\n    xlayer.sweep({'name': 'x', 'scenario': 'none.toml'})\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, isinstance(e, xlayer.XlayerError), e)\n")
    proc = _without_extras(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingExtraError True running a sweep needs Dask, pyarrow "
                                  "and SciPy, which are not installed")
