"""Installing: without cargo, `pip install .` stops with one line naming what to install; what
`pip install .` installs is enough for `xlayer run`, and a command that needs an extra says which
one in one line; the test extra brings every extra (the README's test command stays true)."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
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


# ----------------------------------------------------------------------------------------------
# The profile-guided build (build-backend/xlayer_build.py, scripts/pgo_profile.py)


def _backend():
    spec = importlib.util.spec_from_file_location("xlayer_build_under_test",
                                                  REPO / "build-backend" / "xlayer_build.py")
    if importlib.util.find_spec("maturin") is None:
        pytest.skip("the build backend imports maturin (pip install '.[test]' brings it)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _flags(update):
    return update["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")


def test_the_build_hands_rustc_the_profile_and_keeps_the_callers_flags(tmp_path):
    b = _backend()
    profile = tmp_path / "a dir" / "xlayer.profdata"
    profile.parent.mkdir()
    profile.write_bytes(b"\xfflprofi\x81")
    # Nothing set: the one flag, its path with a space still one argument.
    assert _flags(b.pgo_env({}, profile, 19, 22)) == [f"-Cprofile-use={profile}"]
    # The caller's RUSTFLAGS (split on spaces, as cargo splits them) come first.
    update = b.pgo_env({"RUSTFLAGS": "-Ctarget-cpu=native  -Dwarnings"}, profile, 19, 19)
    assert _flags(update) == ["-Ctarget-cpu=native", "-Dwarnings", f"-Cprofile-use={profile}"]
    # An encoded form set by the caller is extended (cargo reads it before RUSTFLAGS).
    update = b.pgo_env({"CARGO_ENCODED_RUSTFLAGS": "-Cfoo=a b", "RUSTFLAGS": "-Cignored"},
                       profile, 19, 20)
    assert _flags(update) == ["-Cfoo=a b", f"-Cprofile-use={profile}"]


def test_the_build_goes_without_the_profile_when_it_cannot_or_is_told_not_to(tmp_path):
    b = _backend()
    profile = tmp_path / "xlayer.profdata"
    profile.write_bytes(b"\xfflprofi\x81")
    for off in ("0", "off", "No", "false "):
        assert b.pgo_env({"XLAYER_PGO": off}, profile, 19, 22) == {}
    assert b.pgo_env({"XLAYER_PGO": "1"}, profile, 19, 22) != {}
    assert b.pgo_env({}, tmp_path / "missing.profdata", 19, 22) == {}
    # rustc's LLVM older than the profile's cannot read it; unknown versions are not guessed.
    assert b.pgo_env({}, profile, 19, 18) == {}
    assert b.pgo_env({}, profile, None, 22) == {}
    assert b.pgo_env({}, profile, 19, None) == {}
    # Flags that already instrument or use a profile (scripts/pgo_profile.py's build) win.
    assert b.pgo_env({"RUSTFLAGS": "-Cprofile-generate=/tmp/raw"}, profile, 19, 22) == {}
    assert b.pgo_env({"CARGO_ENCODED_RUSTFLAGS": "-Cprofile-use=/x"}, profile, 19, 22) == {}


def test_the_shipped_profile_is_an_llvm_profile_that_travels_with_the_source():
    b = _backend()
    # An indexed LLVM profile (not a truncated copy nor a Git LFS pointer) ...
    assert b.PROFILE.read_bytes()[:8] == b"\xfflprofi\x81"
    meta = json.loads(b.PROFILE_META.read_text())
    assert isinstance(meta["llvm_major"], int) and meta["llvm_major"] >= 14
    assert len(meta["commit"]) == 40
    # ... in the source distribution, which builds with it as a checkout does.
    included = [i["path"] for i in PYPROJECT["tool"]["maturin"]["include"]
                if i.get("format") == "sdist"]
    for name in ("xlayer.profdata", "xlayer.profdata.json"):
        assert any(fnmatch.fnmatch(f"build-backend/{name}", pattern) for pattern in included)
    # Where rustc's LLVM reads it, the build uses it.
    rustc = b.rustc_llvm_major()
    if rustc is None:
        pytest.skip("no rustc")
    update = b.pgo_env({}, b.PROFILE, meta["llvm_major"], rustc)
    assert (update != {}) == (rustc >= meta["llvm_major"])


def test_the_profile_script_says_which_commit_the_profile_is_of_and_what_changed_since():
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs a git checkout")
    meta = json.loads((REPO / "build-backend" / "xlayer.profdata.json").read_text())
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "pgo_profile.py"), "--status"],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"profile of {meta['commit']}")
    assert ("the profile matches the code" in lines[1]) or ("changed since" in lines[1])
