"""Config keys, declared once each: key string, type, default, doc, aliases, allowed values.

Every ``hoodie.*`` key pyhudi reads or writes is a :class:`ConfigKey` constant in one of the
``pyhudi.config`` modules. Values are parsed by the key itself (:meth:`ConfigKey.get`), so the
same key is never parsed two ways, and the registry (:data:`REGISTRY`) lets a caller look a key
up by its string or any alias (and lets docs be generated from the declarations).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Generic, Mapping, TypeVar

from pyhudi.errors import ConfigError
from pyhudi.value import Value

T = TypeVar("T")

REGISTRY: dict[str, "ConfigKey[Any]"] = {}


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {raw!r}")


def _parse_list(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


_PARSERS: dict[type, Callable[[str], Any]] = {
    str: str,
    int: lambda raw: int(raw.strip()),
    float: lambda raw: float(raw.strip()),
    bool: _parse_bool,
    tuple: _parse_list,
}


class ConfigKey(Value, Generic[T]):
    """One configuration key: how it is spelled, typed, defaulted and documented (``register``:
    whether :data:`REGISTRY` lists it — not a field, neither compared nor shown)."""

    key: str
    type: type
    default: T | None
    doc: str
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None

    def __init__(self, key: str, type: type, default: T | None, doc: str, aliases: tuple[str, ...] = (),
                 choices: tuple[str, ...] | None = None, register: bool = True) -> None:
        if type not in _PARSERS:
            raise TypeError(f"unsupported config type {type!r} for {key}")
        self._set(key=key, type=type, default=default, doc=doc, aliases=aliases, choices=choices, register=register)
        if register:
            for name in (key, *aliases):
                REGISTRY[name] = self

    def parse(self, raw: Any) -> T:
        """Parse a raw (usually string) value; raise :class:`ConfigError` naming the key."""
        if raw is None:
            return self.default  # type: ignore[return-value]
        if self.type is tuple and isinstance(raw, (list, tuple)):
            return tuple(str(v) for v in raw)  # type: ignore[return-value]
        if not isinstance(raw, str):
            if self.type is bool and isinstance(raw, bool):
                return raw  # type: ignore[return-value]
            if self.type in (int, float) and isinstance(raw, (int, float)) and not isinstance(raw, bool):
                return self.type(raw)  # type: ignore[return-value]
            raw = str(raw)
        try:
            value = _PARSERS[self.type](raw)
        except ValueError as exc:
            raise ConfigError(f"invalid value {raw!r} for {self.key}: {exc}") from None
        if self.choices is not None and value not in self.choices:
            allowed = ", ".join(self.choices)
            raise ConfigError(f"invalid value {raw!r} for {self.key}: expected one of {allowed}")
        return value  # type: ignore[return-value]

    def raw(self, props: Mapping[str, str]) -> str | None:
        """The raw value under the key or its first present alias, or None."""
        for name in (self.key, *self.aliases):
            if name in props:
                return props[name]
        return None

    def get(self, props: Mapping[str, str], default: Any = ...) -> T:
        """The parsed value from ``props``; the declared default when absent."""
        raw = self.raw(props)
        if raw is None:
            return self.default if default is ... else default  # type: ignore[return-value]
        return self.parse(raw)

    def format(self, value: Any) -> str:
        """The string stored in a properties file for ``value``."""
        return format_value(value)


def format_value(value: Any) -> str:
    """How a Python value is spelled in a properties file (``true``/``false``, comma lists)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


AREA_MODULES: tuple[str, ...] = (
    "table", "keygen", "families", "write", "read", "concurrency", "lock", "compaction", "clustering", "clean",
    "archive", "storage", "datasource",
)
"""The modules (``pyhudi.config.<area>``) that declare keys. A module that reads a key imports its
area; :func:`load_areas` imports them all, for whoever needs every key (:func:`lookup`, the
docs): a read never loads the declarations of the writers and the table services (issue 15:
cold start)."""
_areas_loaded = False


def load_areas() -> None:
    """Import every area module, so that :data:`REGISTRY` holds every declared key."""
    global _areas_loaded
    if not _areas_loaded:
        import importlib

        for area in AREA_MODULES:
            importlib.import_module(f"pyhudi.config.{area}")
        _areas_loaded = True


_FAMILY_PREFIXES = ("hoodie.colfamily.", "hoodie.columnfamily.")  # (pattern keys: pyhudi.config.families)


def misspelled_key(name: str) -> str | None:
    """The declared key ``name`` is a typo of, or None: ``hoodie.compact.inlin`` →
    ``hoodie.compact.inline``; ``cleaner.commits.retained`` → ``hoodie.cleaner.commits.retained``.

    Hudi ignores keys it does not know, and so does pyhudi (a Spark job passes many keys meant for
    others), so a misspelled key silently has no effect. A key counts as a typo only when it is at
    most two edits from a declared key (case aside): Hudi's own keys that pyhudi does not read are
    further from every declared one (``hoodie.datasource.write.table.name`` is three from
    ``...table.type``).
    """
    if not isinstance(name, str) or lookup(name) is not None:
        return None
    return _closest_key(name)


@functools.lru_cache(maxsize=256)
def _closest_key(name: str) -> str | None:
    lowered = name.lower()
    if lowered.startswith(_FAMILY_PREFIXES):
        return None
    declared = {key.lower(): key for key in REGISTRY}
    if lowered in declared:  # (a case variant: Spark lower-cases option keys and pyhudi maps them back)
        return None
    import difflib  # (only for a key pyhudi does not declare: ``import pyhudi`` loads none of it)

    candidates = [lowered] if lowered.startswith("hoodie.") else [lowered, f"hoodie.{lowered}"]
    for candidate in candidates:
        if candidate in declared:
            return declared[candidate]
        for close in difflib.get_close_matches(candidate, list(declared), n=3, cutoff=0.8):
            if _edits(candidate, close) <= 2:
                return declared[close]
    return None


def _edits(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, adjacent swaps) of two short strings."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def warn_misspelled(options: Mapping[str, Any] | None) -> None:
    """Warn (:class:`~pyhudi.errors.UnknownOptionWarning`) of each option that is a typo of a
    declared key (:func:`misspelled_key`); other unknown keys pass silently, as in Hudi.

    The warning names the caller's line outside pyhudi, and is given once per call there however
    many of pyhudi's functions look at the options (``t.compact()`` schedules, then runs)."""
    for name in options or ():
        close = misspelled_key(name)
        if close is not None:
            import warnings

            from pyhudi.errors import UnknownOptionWarning

            message = f"option {name!r} is not a key pyhudi reads, so it has no effect; did you mean {close!r}?"
            level, frame = _caller()
            seen = (message, id(frame), getattr(frame, "f_lasti", None))
            if seen not in _WARNED:
                _WARNED[seen] = None
                while len(_WARNED) > 64:
                    del _WARNED[next(iter(_WARNED))]
                warnings.warn(message, UnknownOptionWarning, stacklevel=level)


_WARNED: dict[tuple[str, int, int | None], None] = {}
"""The latest warnings given, by message and the caller's frame and instruction (see above)."""


def _caller() -> tuple[int, Any]:
    """The ``stacklevel`` and frame of :func:`warn_misspelled`'s first caller outside pyhudi."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(2), 2  # (1: warn_misspelled)
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level, frame


def lookup(name: str) -> ConfigKey[Any] | None:
    """The declared key for a key string or alias, if any (every area's keys)."""
    load_areas()
    return REGISTRY.get(name)
