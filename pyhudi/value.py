"""Small immutable values built without :mod:`dataclasses` (issue 15: cold start).

``@dataclass(frozen=True)`` writes a class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` as source text and compiles each with ``exec`` when its module
is imported: ~0.3–0.4 ms a class, ~10 ms for the value classes a cold read imports — a tenth of
the whole cold read. A :class:`Value` writes its ``__init__`` by hand (setting its fields with
:meth:`Value._set`) and gets the rest from here, as the dataclass had them:

- its fields are the names its own annotations declare, in order, after those of a base class
  (a ``ClassVar`` annotation is not a field);
- equal to another instance of the very same class whose fields are equal (else
  ``NotImplemented``), hashed by the fields, shown as ``Name(field=value, ...)``; fields named in
  ``_value_uncompared`` are shown but neither compared nor hashed (a dataclass ``compare=False``);
- frozen: assigning or deleting an attribute raises :class:`dataclasses.FrozenInstanceError`.

Building one is faster than building the dataclass (one ``dict.update``); comparing and hashing
are ~0.1 µs slower (``operator.attrgetter`` instead of generated code), which no hot path feels.
Instances keep a ``__dict__``, so :func:`functools.cached_property`, :mod:`copy` and
:mod:`pickle` work on them unchanged. :func:`dataclasses.replace` and
:func:`dataclasses.fields` do not: :meth:`Value.replace` builds a changed copy the same way, by
calling ``__init__`` with every field by name (so a class's ``__init__`` takes each field as a
keyword argument of the same name).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Callable, ClassVar


class Value:
    """Base of a small immutable value (see the module docstring)."""

    __slots__ = ()
    _value_fields: ClassVar[tuple[str, ...]] = ()
    _value_uncompared: ClassVar[tuple[str, ...]] = ()
    _value_key: ClassVar[Callable[[Any], tuple]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = [name for name, kind in cls.__dict__.get("__annotations__", {}).items()
               if not str(kind).startswith(("ClassVar", "typing.ClassVar"))]
        cls._value_fields = (*cls._value_fields, *(n for n in own if n not in cls._value_fields))
        compared = [n for n in cls._value_fields if n not in cls._value_uncompared]
        if len(compared) > 1:
            cls._value_key = attrgetter(*compared)  # (not a descriptor: called unbound, in C)
        else:  # (attrgetter of one name returns the value, not a tuple)
            cls._value_key = staticmethod(lambda value, names=tuple(compared): tuple(getattr(value, n) for n in names))

    def _set(self, **fields: Any) -> None:
        """Set fields from ``__init__`` (the instance is frozen for everyone else)."""
        self.__dict__.update(fields)

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes``: ``__init__`` called with every field by name, as
        :func:`dataclasses.replace` does (so ``__init__``'s checks and derived state run again)."""
        unknown = changes.keys() - set(self._value_fields)
        if unknown:
            raise TypeError(f"{self.__class__.__qualname__} has no field {sorted(unknown)[0]!r}")
        return self.__class__(**{name: changes[name] if name in changes else getattr(self, name)
                                 for name in self._value_fields})

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        key = self._value_key
        return key(self) == key(other)

    def __hash__(self) -> int:
        return hash(self._value_key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._value_fields)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        from dataclasses import FrozenInstanceError  # (only when raising: a cold read loads no dataclasses)

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")


class Record(Value):
    """A :class:`Value` whose fields may change (a plain ``@dataclass``): compared and shown the
    same way, not hashable."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__
