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

from typing import Any, Mapping

from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError

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
        if lower.startswith("hoodie.colfamily.") or lower.startswith("hoodie.columnfamily."):
            prefix = "hoodie.colFamily." if lower.startswith("hoodie.colfamily.") else "hoodie.columnFamily."
            k = prefix + k.split(".", 2)[2]
        elif lower in _CANONICAL:
            k = _CANONICAL[lower]
        out[k] = value if isinstance(value, str) else str(value)
    return out


def _canonical_names() -> dict[str, str]:
    from pyhudi.config.keys import REGISTRY

    names = {k.lower(): k for k in REGISTRY}
    for key in (QUERY_TYPE, AS_OF_INSTANT, BEGIN_INSTANT, END_INSTANT, COLUMNS, OPERATION, RECORD_KEY,
                PRECOMBINE, PARTITION_PATH, TABLE_TYPE):
        names[key.key.lower()] = key.key
    return names


_CANONICAL = _canonical_names()
