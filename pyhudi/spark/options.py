"""Options of the ``pyhudi`` Spark data source, with Apache Hudi's option names.

Read: ``as.of.instant``, ``hoodie.datasource.query.type`` (snapshot / read_optimized /
incremental), ``hoodie.datasource.read.begin.instanttime`` / ``.end.instanttime`` (incremental:
commits completed in (begin, end]), ``columns`` (comma-separated projection).

Write: ``hoodie.datasource.write.operation`` and the table-creating options of the first write
(record key, precombine, partition path, table name and type, bucket and family options). Every
other ``hoodie.*`` option is handed to the table (``create_table`` persists table properties)
or to the write client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyhudi.config.datasource import (  # noqa: F401 (re-exported: the data source's options)
    AS_OF_INSTANT, BEGIN_INSTANT, COLUMNS, END_INSTANT, NATIVE_SCAN, OPERATION, PARTITION_PATH, PRECOMBINE, QUERY_TYPE,
    RECORD_KEY, TABLE_TYPE,
)
from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError

PATH = "path"


def open_table(path: str, options: Mapping[str, Any] | None = None) -> Any:
    """``pyhudi.open_table`` with the storage options (``hoodie.pyhudi.s3.*``: endpoint, region,
    credentials) found among a read's or write's options: the driver and every task open the
    table on the same store with the same settings."""
    import pyhudi
    from pyhudi.storage.s3 import split_storage_options

    return pyhudi.open_table(path, split_storage_options(options)[0])


def write_operation(options: Mapping[str, str], overwrite: bool) -> str:
    """The write operation of a ``df.write`` with these options and save mode.

    As in Hudi's Spark writer (``SaveMode.Overwrite`` since 0.14): ``mode("overwrite")`` of an
    upsert / insert / bulk_insert is an ``insert_overwrite_table`` — the table keeps its history
    and gets a replacecommit replacing every file group; an explicit ``insert_overwrite`` stays a
    partition overwrite. A delete cannot overwrite.
    """
    operation = OPERATION.get(options)
    if not overwrite or operation in ("insert_overwrite", "insert_overwrite_table"):
        return operation
    if operation == "delete":
        raise ConfigError("mode('overwrite') cannot be combined with hoodie.datasource.write.operation=delete: "
                          "an overwrite replaces the table's rows with the DataFrame's; use mode('append') to delete")
    return "insert_overwrite_table"


#: Options that steer one write and never become table properties.
WRITE_ONLY_KEYS = frozenset({
    PATH, OPERATION.key, RECORD_KEY.key, PRECOMBINE.key, PARTITION_PATH.key, TABLE_TYPE.key,
})


def table_property_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options a first write persists in ``hoodie.properties``: declared table keys (and
    their aliases), bucket-index keys, family definitions and undeclared ``hoodie.table.*`` keys.
    Write-client settings (heartbeats, file sizes, ...) only steer the write."""
    from pyhudi.config import table as table_config
    from pyhudi.config.keys import lookup

    declared = {id(v) for v in vars(table_config).values() if isinstance(v, ConfigKey)}
    out = {}
    for key, value in options.items():
        if key in WRITE_ONLY_KEYS or not key.startswith("hoodie."):
            continue
        known = lookup(key)
        family = key.startswith(("hoodie.colFamily.", "hoodie.columnFamily."))
        if family or (known is not None and id(known) in declared) or (known is None and key.startswith("hoodie.table.")):
            out[key] = value
    return out
READ_KEYS = frozenset({PATH, QUERY_TYPE.key, AS_OF_INSTANT.key, BEGIN_INSTANT.key, END_INSTANT.key, COLUMNS.key})

def lowered(options: Mapping[str, Any], families: Iterable[str] | None = None) -> dict[str, str]:
    """Options under their canonical spelling (Spark hands ``.option()`` keys lower-cased).

    Declared ``hoodie.*`` keys (and the data source's own) get their declared spelling, so a
    lower-cased ``hoodie.datasource.write.recordkey.field`` or a camel-case key of the registry
    are found. ``hoodie.colFamily.<name>`` / ``hoodie.columnFamily.<name>``: the prefix is
    canonical; the family name is matched case-insensitively against ``families`` (the existing
    table's family names) and takes their spelling; without a match it keeps the case it arrives
    in (lower case through Spark's ``.option()``; ``pyhudi.spark.write`` and SQL keep the case
    given). Two family keys equal but for case are refused (:func:`check_family_case`): Spark
    could not tell them apart.
    """
    by_lower: dict[str, list[str]] = {}
    for name in families or ():
        by_lower.setdefault(name.lower(), []).append(name)
    check_family_case(k for k in options if isinstance(k, str))
    out: dict[str, str] = {}
    for key, value in options.items():
        if value is None:
            continue
        k = str(key)
        lower = k.lower()
        if lower.startswith(("hoodie.colfamily.", "hoodie.columnfamily.")):
            prefix = "hoodie.colFamily." if lower.startswith("hoodie.colfamily.") else "hoodie.columnFamily."
            name = k.split(".", 2)[2]
            spellings = by_lower.get(name.lower(), [name])
            if len(spellings) > 1:
                raise ConfigError(f"option {k} is ambiguous: the table has column families {', '.join(spellings)}, "
                                  "equal but for case, and Spark passes option keys lower-cased; use pyhudi.Table")
            k = prefix + spellings[0]
        else:
            k = _canonical_names().get(lower, k)
        text = value if isinstance(value, str) else str(value)
        if k in _UPPER_VALUES:
            text = text.strip().upper()
        elif k in _LOWER_VALUES:
            text = text.strip().lower()
        out[k] = text
    return out


def check_family_case(keys: Iterable[str]) -> None:
    """Refuse family keys whose names are equal but for case (``hoodie.colFamily.fA`` and
    ``hoodie.colFamily.FA``): through Spark's case-insensitive options they would be one key."""
    seen: dict[str, str] = {}
    for key in keys:
        lower = key.lower()
        if not lower.startswith(("hoodie.colfamily.", "hoodie.columnfamily.")):
            continue
        name = key.split(".", 2)[2]
        other = seen.setdefault(name.lower(), name)
        if other != name:
            raise ConfigError(f"column families {other!r} and {name!r} differ only in case: Spark passes option keys "
                              "lower-cased, so they cannot be told apart; give the families names that differ "
                              "in more than case")


_UPPER_VALUES = frozenset({TABLE_TYPE.key, "hoodie.table.type", "hoodie.index.type"})
_LOWER_VALUES = frozenset({OPERATION.key, QUERY_TYPE.key})  # Hudi takes these in any case


def _canonical_names() -> dict[str, str]:
    """Lower-case spelling → declared spelling of every key (computed per call: small)."""
    from pyhudi.config.keys import REGISTRY, load_areas

    load_areas()  # (every area's keys: a process that only read has loaded few)

    names = {k.lower(): k for k in REGISTRY}
    for key in (QUERY_TYPE, AS_OF_INSTANT, BEGIN_INSTANT, END_INSTANT, COLUMNS, OPERATION, RECORD_KEY,
                PRECOMBINE, PARTITION_PATH, TABLE_TYPE):
        names[key.key.lower()] = key.key
    return names

