"""What the kernel needs of a table, typed: the read, write and service layers take these, never
the :class:`~pyhudi.table.Table` face itself, and never reach into its private state.

- :class:`TableHandle` — the live handle a driver-side operation works through (storage, the
  ``hoodie.properties`` config, the schema/family history read from the timeline, a fresh
  timeline listing on demand). :class:`pyhudi.table.Table` is one.
- :class:`TableContext` — a picklable snapshot of what reading a table's files needs (storage,
  config, and the schema and families in effect), which service tasks carry to workers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Protocol

import pyarrow as pa

from pyhudi.config import table as tc
from pyhudi.config.families import ColumnFamily
from pyhudi.storage.fs import Storage

if TYPE_CHECKING:  # (evolution sits above config; only its type is needed here)
    from pyhudi.evolution import SchemaHistory
    from pyhudi.timeline.timeline import Timeline


class TableHandle(Protocol):
    """A table as the kernel's driver-side operations see it."""

    storage: Storage
    config: tc.TableConfig

    @property
    def history(self) -> SchemaHistory: ...

    @property
    def name(self) -> str: ...

    @property
    def properties(self) -> dict[str, str]: ...

    @property
    def record_key_fields(self) -> tuple[str, ...]: ...

    @property
    def partition_fields(self) -> tuple[str, ...]: ...

    def active_timeline(self, options: Mapping[str, str] | None = None) -> Timeline: ...


@dataclass(frozen=True)
class TableContext:
    """What reading a table's files needs to know of the table (picklable; a service task
    carries it to the workers instead of a table handle): where it is, its ``hoodie.properties``,
    and the schema and families in effect for the files read."""

    storage: Storage
    config: tc.TableConfig
    schema: pa.Schema
    families: dict[str, ColumnFamily]
    family_since: dict[str, str] = field(default_factory=dict)  # when an ALTER added a family

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        return self.config.record_key_fields

    @property
    def partition_fields(self) -> tuple[str, ...]:
        return self.config.partition_fields

    @classmethod
    def of(cls, table: TableHandle, timeline: Timeline) -> TableContext:
        """The context of ``table`` as of ``timeline`` (its latest schema and families)."""
        history = table.history
        schema = history.schema_at(timeline, table.config)
        return cls(table.storage, table.config, schema, history.families_at(timeline, table.config, None, schema),
                   history.families_added(timeline))
