"""Config keys, declared once each: key string, type, default, doc, aliases, allowed values.

Every ``hoodie.*`` key pyhudi reads or writes is a :class:`ConfigKey` constant in one of the
``pyhudi.config`` modules. Values are parsed by the key itself (:meth:`ConfigKey.get`), so the
same key is never parsed two ways, and the registry (:data:`REGISTRY`) lets a caller look a key
up by its string or any alias (and lets docs be generated from the declarations).
"""

from __future__ import annotations

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


def lookup(name: str) -> ConfigKey[Any] | None:
    """The declared key for a key string or alias, if any (every area's keys)."""
    load_areas()
    return REGISTRY.get(name)
