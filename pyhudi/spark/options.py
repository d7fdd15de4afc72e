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

from collections.abc import Mapping
from typing import Any

from pyhudi.config.keys import ConfigKey

PATH = "path"

# --------------------------------------------------------------------------- read
QUERY_TYPE = ConfigKey(
    "hoodie.datasource.query.type", str, "snapshot",
    "snapshot (merged latest rows), read_optimized (base files only) or incremental (rows of commits in a range).",
    choices=("snapshot", "read_optimized", "incremental"), register=False,
)
AS_OF_INSTANT = ConfigKey(
    "as.of.instant", str, None,
    "Time travel: read the table as of this instant (yyyyMMddHHmmssSSS, or 'yyyy-MM-dd HH:mm:ss[.SSS]').",
    register=False,
)
BEGIN_INSTANT = ConfigKey(
    "hoodie.datasource.read.begin.instanttime", str, None,
    "Incremental query: commits completed after this instant (exclusive).", register=False,
)
END_INSTANT = ConfigKey(
    "hoodie.datasource.read.end.instanttime", str, None,
    "Incremental query: commits completed at or before this instant (default: latest).", register=False,
)
COLUMNS = ConfigKey("columns", tuple, None, "Columns to read (prunes column families).", register=False)

# --------------------------------------------------------------------------- write
OPERATION = ConfigKey(
    "hoodie.datasource.write.operation", str, "upsert",
    "upsert, insert, bulk_insert or delete; mode('overwrite') replaces the table's rows instead.",
    choices=("upsert", "insert", "bulk_insert", "delete"), register=False,
)
RECORD_KEY = ConfigKey(
    "hoodie.datasource.write.recordkey.field", tuple, None,
    "Record key column(s) of a table created by the first write.", register=False,
)
PRECOMBINE = ConfigKey(
    "hoodie.datasource.write.precombine.field", str, None,
    "Ordering (precombine) column of a table created by the first write.", register=False,
)
PARTITION_PATH = ConfigKey(
    "hoodie.datasource.write.partitionpath.field", tuple, None,
    "Partition column(s) of a table created by the first write.", register=False,
)
TABLE_TYPE = ConfigKey(
    "hoodie.datasource.write.table.type", str, "MERGE_ON_READ",
    "Table type of a table created by the first write.", choices=("MERGE_ON_READ", "COPY_ON_WRITE"),
    register=False,
)

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

def lowered(options: Mapping[str, Any]) -> dict[str, str]:
    """Spark hands options case-insensitively; pyhudi looks them up by Hudi's lower-case names.

    ``hoodie.colFamily.<name>`` keeps the family name's case (family names are case-sensitive).
    """
    out: dict[str, str] = {}
    for key, value in options.items():
        if value is None:
            continue
        k = str(key)
        lower = k.lower()
        if lower.startswith(("hoodie.colfamily.", "hoodie.columnfamily.")):
            prefix = "hoodie.colFamily." if lower.startswith("hoodie.colfamily.") else "hoodie.columnFamily."
            k = prefix + k.split(".", 2)[2]
        else:
            k = _canonical_names().get(lower, k)
        text = value if isinstance(value, str) else str(value)
        if k in _UPPER_VALUES:
            text = text.strip().upper()
        elif k in _LOWER_VALUES:
            text = text.strip().lower()
        out[k] = text
    return out


_UPPER_VALUES = frozenset({TABLE_TYPE.key, "hoodie.table.type", "hoodie.index.type"})
_LOWER_VALUES = frozenset({OPERATION.key, QUERY_TYPE.key})  # Hudi takes these in any case


def _canonical_names() -> dict[str, str]:
    """Lower-case spelling → declared spelling of every key known so far (the registry grows as
    modules declaring keys are imported, so this is computed per call; it is small)."""
    import pyhudi.write.client  # noqa: F401  (declares the write keys)
    from pyhudi.config.keys import REGISTRY

    names = {k.lower(): k for k in REGISTRY}
    for key in (QUERY_TYPE, AS_OF_INSTANT, BEGIN_INSTANT, END_INSTANT, COLUMNS, OPERATION, RECORD_KEY,
                PRECOMBINE, PARTITION_PATH, TABLE_TYPE):
        names[key.key.lower()] = key.key
    return names

