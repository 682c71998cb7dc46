"""xlayer's PEP 517 build backend: maturin's, after checking that Rust's ``cargo`` is on PATH.

``pip install .`` compiles the Rust core with cargo. Without cargo, maturin's own backend asks
pip for ``puccinialin`` and tries to download a Rust toolchain into a cache folder; where that
cannot work (no network, an unsupported platform) the install ends in a long traceback. This
backend stops first, with one line saying what is missing and how to get it. Everything else
is maturin's (its hooks are re-exported unchanged); ``MATURIN_NO_INSTALL_RUST`` is set so maturin
never tries the download either.

It also builds the core with profile-guided optimisation when it can: ``xlayer.profdata`` beside
this file is a profile of every shipped scenario's run (``scripts/pgo_profile.py`` writes it, and
``xlayer.profdata.json`` says from which commit, by which LLVM); ``-Cprofile-use`` hands it to
rustc, which lays out the hot paths by it. The results are the same to the bit (the profile moves
code and its inlining, never the arithmetic); the speed is in README.md ("A profile-guided
build"). It is skipped, and the core built as without it, when ``XLAYER_PGO=0`` is set, when the
profile is missing, or when rustc's LLVM is older than the one that wrote the profile (an older
LLVM cannot read a newer profile's format).

pyproject.toml names it: ``build-backend = "xlayer_build"``, ``backend-path = ["build-backend"]``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional

import maturin

HERE = Path(__file__).resolve().parent
#: The profile of the Rust core (``scripts/pgo_profile.py``) and what it was made from.
PROFILE = HERE / "xlayer.profdata"
PROFILE_META = HERE / "xlayer.profdata.json"
#: Values of ``XLAYER_PGO`` that build without the profile.
PGO_OFF = ("0", "off", "no", "false")

#: The line printed when cargo is missing (pip shows it under "[1 lines of output]").
NO_CARGO = (
    "xlayer: error: building xlayer from source needs Rust's cargo, which is not on PATH: "
    "install a stable Rust with rustup (https://rustup.rs) or your system's packages "
    "(Debian: apt-get install cargo), open a new shell so that cargo is on PATH, and run pip "
    "install again"
)


def _check_cargo() -> None:
    os.environ["MATURIN_NO_INSTALL_RUST"] = "1"
    if shutil.which("cargo") is None:
        sys.stderr.write(NO_CARGO + "\n")
        sys.stderr.flush()
        raise SystemExit(1)


def rustc_llvm_major(rustc: str = "rustc") -> Optional[int]:
    """The major version of the LLVM behind ``rustc`` (``rustc -vV``), None if it cannot tell."""
    try:
        out = subprocess.run([rustc, "-vV"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^LLVM version: (\d+)", out, re.M)
    return int(m.group(1)) if m else None


def pgo_env(env: Mapping[str, str], profile: Path, profile_llvm: Optional[int],
            rustc_llvm: Optional[int]) -> Dict[str, str]:
    """The variables to set so that cargo builds with ``profile`` (empty: build without it).

    ``profile_llvm`` is the major version of the LLVM that wrote the profile, ``rustc_llvm``
    that of rustc's. The flag joins any the caller set (``CARGO_ENCODED_RUSTFLAGS``, or
    ``RUSTFLAGS``, which the encoded form then carries: it takes precedence in cargo, and it
    keeps a path with spaces in one argument); flags that already name a profile are left alone.
    """
    if env.get("XLAYER_PGO", "").strip().lower() in PGO_OFF or not profile.is_file():
        return {}
    if profile_llvm is None or rustc_llvm is None or rustc_llvm < profile_llvm:
        return {}
    if env.get("CARGO_ENCODED_RUSTFLAGS"):
        flags = env["CARGO_ENCODED_RUSTFLAGS"].split("\x1f")
    else:
        flags = env.get("RUSTFLAGS", "").split()
    if any("profile-use" in f or "profile-generate" in f for f in flags):
        return {}
    return {"CARGO_ENCODED_RUSTFLAGS": "\x1f".join(flags + [f"-Cprofile-use={profile}"])}


def _profile_llvm() -> Optional[int]:
    try:
        return int(json.loads(PROFILE_META.read_text(encoding="utf-8"))["llvm_major"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _use_profile(announce: bool) -> None:
    update = pgo_env(os.environ, PROFILE, _profile_llvm(),
                     rustc_llvm_major(os.environ.get("RUSTC", "rustc")))
    if update and announce:
        # pip shows it with -v.
        sys.stderr.write(f"xlayer: building the Rust core with its profile ({PROFILE.name}; "
                         "XLAYER_PGO=0 builds without)\n")
    os.environ.update(update)


def _checked(hook: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        _check_cargo()
        _use_profile(announce=hook.__name__ in ("build_wheel", "build_editable"))
        return hook(*args, **kwargs)

    run.__name__ = hook.__name__
    run.__doc__ = hook.__doc__
    return run


get_requires_for_build_wheel = _checked(maturin.get_requires_for_build_wheel)
get_requires_for_build_sdist = _checked(maturin.get_requires_for_build_sdist)
prepare_metadata_for_build_wheel = _checked(maturin.prepare_metadata_for_build_wheel)
build_wheel = _checked(maturin.build_wheel)
build_sdist = _checked(maturin.build_sdist)
get_requires_for_build_editable = _checked(maturin.get_requires_for_build_editable)
prepare_metadata_for_build_editable = _checked(maturin.prepare_metadata_for_build_editable)
build_editable = _checked(maturin.build_editable)

__all__ = [
    "NO_CARGO",
    "pgo_env",
    "rustc_llvm_major",
    "get_requires_for_build_wheel",
    "get_requires_for_build_sdist",
    "prepare_metadata_for_build_wheel",
    "build_wheel",
    "build_sdist",
    "get_requires_for_build_editable",
    "prepare_metadata_for_build_editable",
    "build_editable",
]

