"""Optional parts of xlayer and the extras that install them.

``pip install .`` installs what a single run needs (the core, NumPy, pandas, rich): ``xlayer
run``, ``scenario``, ``params``, ``tunables``, ``view`` and the Python API's ``run`` and
``Simulation``. The rest comes with extras (``pyproject.toml``)::

    sweep    Dask (distributed), pyarrow, SciPy   xlayer sweep / compare, xlayer.sweep,
                                                  xlayer.analysis (sweep folders, intervals)
    plot     matplotlib                           xlayer plot / report, xlayer.plots
    oracle   SciPy, cvxpy, Clarabel               xlayer oracle, xlayer.optimum
    all      all of the above

:func:`require` is called where such a part starts; a missing module raises
:class:`MissingExtraError` (an :class:`~xlayer.errors.XlayerError` and an :class:`ImportError`),
whose one-line message names the extra to install, and which the command line prints as its
usual one-line ``xlayer: error:``.
"""

from __future__ import annotations

import importlib
from typing import Dict, Tuple

from xlayer.errors import MissingExtraError

__all__ = ["EXTRAS", "require", "MissingExtraError"]

#: extra -> (import name, what it is called) of the modules it brings, in the order checked.
EXTRAS: Dict[str, Tuple[Tuple[str, str], ...]] = {
    "sweep": (("distributed", "Dask"), ("pyarrow", "pyarrow"), ("scipy", "SciPy")),
    "plot": (("matplotlib", "matplotlib"),),
    "oracle": (("scipy", "SciPy"),),
}


def require(extra: str, what: str, modules: Tuple[str, ...] = ()) -> None:
    """Raises :class:`MissingExtraError` unless the modules of ``extra`` (or only ``modules``
    among them) import; ``what`` names what needs them (``"xlayer sweep"``). Each module is
    imported (it is about to be used): a module that is installed but broken counts as
    missing too, with its own error added."""
    missing = []
    reason = ""
    for module, name in EXTRAS[extra]:
        if modules and module not in modules:
            continue
        try:
            importlib.import_module(module)
        except ImportError as e:
            missing.append(name)
            if not isinstance(e, ModuleNotFoundError) or (e.name or module).split(".")[0] \
                    != module:
                reason = f" ({module}: {str(e).splitlines()[0] if str(e) else type(e).__name__})"
    if missing:
        names = " and ".join(missing) if len(missing) <= 2 else (
            ", ".join(missing[:-1]) + " and " + missing[-1])
        verb = "is" if len(missing) == 1 else "are"
        raise MissingExtraError(
            f"{what} needs {names}, which {verb} not installed{reason}: install xlayer's "
            f"'{extra}' extra, pip install 'xlayer[{extra}]' (from a source checkout: "
            f"pip install '.[{extra}]')"
        )
