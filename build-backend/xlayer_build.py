"""xlayer's PEP 517 build backend: maturin's, after checking that Rust's ``cargo`` is on PATH.

``pip install .`` compiles the Rust core with cargo. Without cargo, maturin's own backend asks
pip for ``puccinialin`` and tries to download a Rust toolchain into a cache folder; where that
cannot work (no network, an unsupported platform) the install ends in a long traceback. This
backend stops first, with one line saying what is missing and how to get it. Everything else
is maturin's (its hooks are re-exported unchanged); ``MATURIN_NO_INSTALL_RUST`` is set so maturin
never tries the download either.

pyproject.toml names it: ``build-backend = "xlayer_build"``, ``backend-path = ["build-backend"]``.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, Callable

import maturin

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


def _checked(hook: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        _check_cargo()
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
    "get_requires_for_build_wheel",
    "get_requires_for_build_sdist",
    "prepare_metadata_for_build_wheel",
    "build_wheel",
    "build_sdist",
    "get_requires_for_build_editable",
    "prepare_metadata_for_build_editable",
    "build_editable",
]

