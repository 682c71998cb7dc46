"""Loading scenarios: TOML files, dicts, the built-in default, and ``--set`` overrides.

This module only gets a scenario into the shape the core reads (a JSON document); every check of
the values themselves (names of fields, ranges, references between fields) is the core's, so
there is one source of truth: ``crates/xlayer-core/src/scenario/`` (one file per section),
documented field by field in ``docs/scenario.md``.

- :func:`load_scenario` reads a TOML path, copies a dict, or takes the built-in default, and
  applies overrides and a seed. It returns the scenario as written (defaults not filled in).
- :func:`normalize_scenario` asks the core to validate it and fill every default.
- :func:`apply_overrides` applies ``KEY=VALUE`` strings: ``radio.rts_cts=true``,
  ``flows[0].rate_bps=2e6``, ``topology.positions[1]=[0, 300]``. The value is read as a TOML
  value (``true``, ``3``, ``"x"``, ``[1, 2]``); anything that is not one (a bare word such as
  ``range`` or ``802.11e``) is taken as a string. A key naming an unknown field is not checked
  here: the core rejects it when the scenario is validated, naming the field.

A scenario (or sweep) given as a dict is copied into plain Python values first
(:func:`plain_copy`): numpy scalars and arrays become numbers and lists, and a table or array
that contains itself, or nesting deeper than :data:`MAX_DEPTH` levels, is a
:class:`ScenarioError` rather than a ``RecursionError``. Integers must fit the core's 64-bit
fields (``-2^63`` to ``2^64 - 1``); a larger one is reported exactly.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterable, List, Optional, Tuple, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

from xlayer import _core
from xlayer.errors import scenario_error

__all__ = [
    "ScenarioSource",
    "load_scenario",
    "load_toml",
    "default_scenario_text",
    "apply_overrides",
    "parse_override",
    "set_field",
    "normalize_scenario",
    "scenario_to_json",
    "scenario_to_toml",
    "plain_copy",
    "MAX_DEPTH",
]

#: Tables and arrays nest at most this deep in a scenario or sweep (real ones need 4 or 5).
MAX_DEPTH = 64
#: The range of the integers the core reads (its fields are at most 64 bits).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1

#: What the API accepts as a scenario: a TOML file path, a dict, or None for the built-in default.
ScenarioSource = Union[str, "os.PathLike[str]", Mapping, None]

_DEFAULT_RESOURCE = "default.toml"


def default_scenario_text() -> str:
    """The TOML text of the built-in default scenario (a copy of ``scenarios/default.toml``)."""
    from importlib import resources  # here: a run of a scenario file does not need the package

    return resources.files("xlayer").joinpath("data", _DEFAULT_RESOURCE).read_text(encoding="utf-8")


def load_toml(text: str, origin: str = "scenario") -> dict:
    """Parses TOML text; a syntax error becomes a one-line :class:`ScenarioError` naming ``origin``."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise scenario_error(origin, f"invalid TOML: {_one_line(str(e))}") from None
    except RecursionError:
        raise scenario_error(origin, f"invalid TOML: arrays or tables nested too deeply "
                             f"(a scenario nests at most {MAX_DEPTH} levels)") from None
    except ValueError as e:  # an integer of more than 4300 digits (Python's str/int limit)
        raise scenario_error(origin, f"invalid TOML: {_one_line(str(e))}") from None


def load_toml_file(path: Path, what: str = "a scenario") -> dict:
    """Reads and parses a TOML file; a file that is not UTF-8 text or not TOML raises a one-line
    :class:`ScenarioError` naming the file (``what`` says what the file should be)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise scenario_error(str(path), f"not a UTF-8 text file ({what} is TOML)") from None
    return load_toml(text, str(path))


def load_scenario(
    source: ScenarioSource = None,
    overrides: Iterable[str] = (),
    seed: Optional[int] = None,
) -> dict:
    """The scenario as a plain dict, overrides and seed applied, defaults *not* filled in.

    ``source`` is a path to a TOML file (``str`` or ``os.PathLike``), a dict in the same shape as
    the TOML file, or ``None`` for the built-in default scenario. A missing or unreadable file
    raises :class:`OSError` (``FileNotFoundError``); malformed TOML and bad overrides raise
    :class:`xlayer.errors.ScenarioError`. The dict given is never modified.
    """
    if source is None:
        scenario = load_toml(default_scenario_text(), "default scenario")
    elif isinstance(source, Mapping):
        scenario = plain_copy(source)
    elif isinstance(source, (str, os.PathLike)):
        scenario = load_toml_file(Path(source))
    else:
        raise TypeError(
            f"a scenario is a TOML file path, a dict, or None; got {type(source).__name__}"
        )
    scenario = apply_overrides(scenario, overrides)
    if seed is not None:
        scenario["seed"] = _plain(seed, "seed", 0, set())
    return scenario


def plain_copy(value: Mapping, origin: str = "scenario") -> dict:
    """A deep copy of a scenario or sweep dict in plain Python values (dicts, lists, str, int,
    float, bool, dates): numpy scalars become ``int``/``float``/``bool``, arrays and tuples
    lists. A table or array containing itself, a key that is not a string, or nesting deeper
    than :data:`MAX_DEPTH` raise :class:`ScenarioError` naming the field."""
    return _plain(value, "", 0, set(), origin)


def _plain(value: Any, path: str, depth: int, on_path: set, origin: str = "scenario") -> Any:
    # numpy is not imported for this: a value can only be a numpy object once the caller has
    # imported numpy (a run that never does is spared its import, a tenth of a second).
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
    if isinstance(value, (Mapping, list, tuple)):
        where = path or origin
        if depth >= MAX_DEPTH:
            raise scenario_error(where, f"nested more than {MAX_DEPTH} levels deep")
        if id(value) in on_path:
            raise scenario_error(where, "contains itself (a table or array that refers to "
                                 "itself cannot be a scenario value)")
        on_path.add(id(value))
        try:
            if isinstance(value, Mapping):
                out = {}
                for k, v in value.items():
                    if not isinstance(k, str):
                        raise scenario_error(where, f"keys must be strings, found {_show(k)}")
                    out[k] = _plain(v, f"{path}.{k}" if path else k, depth + 1, on_path, origin)
                return out
            return [_plain(v, f"{path}[{i}]", depth + 1, on_path, origin)
                    for i, v in enumerate(value)]
        finally:
            on_path.discard(id(value))
    return value


def normalize_scenario(scenario: Mapping) -> dict:
    """Validates the scenario with the core and returns it with every default filled in."""
    return json.loads(_core.normalize_scenario(scenario_to_json(scenario)))


def scenario_to_toml(scenario: Mapping) -> str:
    """Validates the scenario with the core and returns it, every default filled in, as TOML."""
    return _core.scenario_to_toml(scenario_to_json(scenario))


def scenario_to_json(scenario: Mapping) -> str:
    """The scenario as the JSON text the core reads.

    JSON has no NaN, infinity or dates, which TOML has: such values are rejected here with the
    field's name rather than as an obscure JSON error from the core.
    """
    scenario = plain_copy(scenario)
    _check_json_values(scenario, "")
    return json.dumps(scenario, allow_nan=False)


def _show(value: Any) -> str:
    """A value for an error message: its repr, cut to 80 characters (or its type, for what
    cannot be shown, such as an integer past Python's 4300-digit limit)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _int_text(value)
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value whose repr fails still gets a one-line error
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def _int_text(value: int) -> str:
    """The integer exactly, unless it is too long to read (or for Python to print)."""
    if abs(value) < 10**60:
        return str(value)
    digits = int(abs(value).bit_length() * math.log10(2)) + 1  # str() fails past 4300 digits
    return f"{'-' if value < 0 else ''}an integer of about {digits} digits"


def _check_json_values(value: Any, path: str) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise scenario_error(path or "scenario", f"keys must be strings, found {_show(k)}")
            _check_json_values(v, f"{path}.{k}" if path else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_json_values(v, f"{path}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise scenario_error(path, f"must be a finite number, found {value}")
    elif isinstance(value, int) and not isinstance(value, bool) and not (
            INT_MIN <= value <= INT_MAX):
        raise scenario_error(path, f"integer out of range, found {_int_text(value)} (at most "
                             f"2^64 - 1 = {INT_MAX}, at least -2^63)")
    elif isinstance(value, (datetime.date, datetime.time)):
        raise scenario_error(path, f"dates and times are not scenario values, found {value}")
    elif not isinstance(value, (str, int, float, bool)) and value is not None:
        raise scenario_error(path, f"not a scenario value: {_show(value)}")


# ----------------------------------------------------------------------------------------------
# Overrides

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)((?:\[\d+\])*)$")
_INDEX = re.compile(r"\[(\d+)\]")

Step = Union[str, int]


def parse_override(text: str) -> Tuple[str, List[Step], Any]:
    """Splits ``KEY=VALUE`` into the key as written, its steps (names and indices), and the value.

    >>> parse_override("flows[0].rate_bps=2e6")
    ('flows[0].rate_bps', ['flows', 0, 'rate_bps'], 2000000.0)
    >>> parse_override("radio.propagation=range")
    ('radio.propagation', ['radio', 'propagation'], 'range')
    """
    if "=" not in text:
        raise scenario_error(text or "--set", "an override is KEY=VALUE, e.g. radio.rts_cts=true")
    key, raw = text.split("=", 1)
    key = key.strip()
    raw = raw.strip()
    steps: List[Step] = []
    for segment in key.split("."):
        m = _SEGMENT.match(segment.strip())
        if not m:
            raise scenario_error(
                key or "--set",
                "an override key is a dotted path of field names with optional [index], "
                "e.g. flows[0].rate_bps",
            )
        steps.append(m.group(1))
        steps.extend(int(i) for i in _INDEX.findall(m.group(2)))
    if raw == "":
        raise scenario_error(key, 'missing value after "=" (write "" for an empty string)')
    return key, steps, _parse_value(raw, key)


def _parse_value(raw: str, key: str = "--set") -> Any:
    """A TOML value (``true``, ``3``, ``2.5``, ``"x"``, ``[1, 2]``, ``{a = 1}``), else the bare word."""
    try:
        parsed = tomllib.loads(f"v = {raw}")
    except tomllib.TOMLDecodeError:
        return raw
    except RecursionError:
        raise scenario_error(key, f"value nested too deeply (at most {MAX_DEPTH} levels)") from None
    if set(parsed) != {"v"}:  # e.g. a value smuggling a newline and a second key
        return raw
    return parsed["v"]


def apply_overrides(scenario: Mapping, overrides: Iterable[str]) -> dict:
    """A copy of ``scenario`` with each ``KEY=VALUE`` override applied in order.

    Missing tables along the path are created; an index may name an existing entry of an array or
    the next one (to append). An override that cannot be applied (indexing a table, an index past
    the end) raises :class:`ScenarioError` naming the key. A mapping of dotted field paths to
    values (``{"duration_s": 5, "radio": {"rts_cts": True}}``, nested tables becoming dotted
    paths) works too, as in a sweep's ``overrides``.
    """
    if isinstance(overrides, Mapping):
        from xlayer.sweeps import apply_overrides_to

        return apply_overrides_to(scenario, overrides)
    if isinstance(overrides, str):
        overrides = [overrides]
    try:
        overrides = list(overrides)
    except TypeError:
        raise scenario_error("overrides", 'must be a list of "KEY=VALUE" strings, found '
                             f"{_show(overrides)}") from None
    result = plain_copy(scenario)
    for i, text in enumerate(overrides):
        if not isinstance(text, str):
            raise scenario_error(f"overrides[{i}]", 'an override is a "KEY=VALUE" string, '
                                 f"found {_show(text)}")
        key, steps, value = parse_override(text)
        _set_path(result, key, steps, value)
    return result


def set_field(scenario: dict, key: str, value: Any) -> None:
    """Sets the field at ``key`` (a dotted path as overrides write it, ``flows[0].rate_bps``) to
    ``value``, a Python value rather than TOML text, in place. Used by sweeps, whose values are
    already parsed."""
    _, steps, _ = parse_override(f"{key}=0")
    _set_path(scenario, key, steps, value)


def _set_path(root: dict, key: str, steps: List[Step], value: Any) -> None:
    container: Any = root
    where = ""  # the path walked so far, for messages
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if isinstance(step, str):
            if not isinstance(container, dict):
                raise scenario_error(key, f"{where} is {_kind(container)}, not a table")
            if last:
                container[step] = value
                return
            child = container.get(step)
            if child is None:
                child = [] if isinstance(steps[i + 1], int) else {}
                container[step] = child
            container = child
            where = f"{where}.{step}" if where else step
        else:
            if not isinstance(container, list):
                raise scenario_error(key, f"{where} is {_kind(container)}, not an array")
            if step > len(container):
                raise scenario_error(
                    key,
                    f"{where} has {len(container)} entries; an index may be at most "
                    f"{len(container)} (to append one)",
                )
            if last:
                if step == len(container):
                    container.append(value)
                else:
                    container[step] = value
                return
            if step == len(container):
                container.append([] if isinstance(steps[i + 1], int) else {})
            container = container[step]
            where = f"{where}[{step}]"


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in message.splitlines() if part.strip())
