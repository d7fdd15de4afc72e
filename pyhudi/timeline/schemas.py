"""Avro schemas of Hudi's timeline metadata, as plain Python dicts.

Why dicts and not bundled ``.avsc`` files: Apache Hudi embeds the *Java-generated* form of each
schema in every instant file it writes (the ``SCHEMA$`` of the generated class: every ``string``
carries ``"avro.java.string": "String"``, maps carry it for their keys, and a few array/map types
carry a stray ``"default"``). Readers resolve by field name, so any compatible schema would do, but
writing the same JSON that Hudi writes keeps our files indistinguishable from Hudi's and lets the
tests compare schemas byte for byte against files written by Hudi.

Each record keeps Hudi's record name (namespace ``org.apache.hudi.avro.model``), field names, field
order, types and defaults. Keys are declared in the order Java's ``Schema.toString()`` prints them
(record: type, name, namespace, fields; field: name, type, doc, default; map/array: type,
values/items, then properties), so ``json.dumps(schema, separators=(",", ":"))`` reproduces it.

Sources: the writer schemas embedded in the fixture instants (commit, replace commit, requested
replace / clustering plan, compaction plan, rollback plan and metadata: table versions 6 to 9) and
``hudi-common/src/main/avro/HoodieCleanerPlan.avsc`` / ``HoodieCleanMetadata.avsc`` /
``HoodieCleanPartitionMetadata.avsc`` (no clean instant among the fixtures).

The dicts are shared between schemas (e.g. ``HoodieWriteStat``); treat them as read-only.
"""

from __future__ import annotations

import json
from typing import Any

NAMESPACE = "org.apache.hudi.avro.model"

_NO_DEFAULT = object()


def _str() -> dict[str, Any]:
    """A Java ``String`` (as opposed to ``CharSequence``) string type."""
    return {"type": "string", "avro.java.string": "String"}


def _map(values: Any, **props: Any) -> dict[str, Any]:
    """A map type; Java adds the string-key property after ``values``."""
    return {"type": "map", "values": values, "avro.java.string": "String", **props}


def _array(items: Any, **props: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **props}


def _field(name: str, type_: Any, *, doc: str | None = None, default: Any = _NO_DEFAULT) -> dict[str, Any]:
    field: dict[str, Any] = {"name": name, "type": type_}
    if doc is not None:
        field["doc"] = doc
    if default is not _NO_DEFAULT:
        field["default"] = default
    return field


def _opt(name: str, type_: Any, *, doc: str | None = None) -> dict[str, Any]:
    """The common ``["null", T]`` field with default null."""
    return _field(name, ["null", type_], doc=doc, default=None)


def _version(name: str = "version") -> dict[str, Any]:
    """Hudi's ``["int", "null"]`` version field defaulting to 1."""
    return _field(name, ["int", "null"], default=1)


def _record(name: str, fields: list[dict[str, Any]], *, top_level: bool = False) -> dict[str, Any]:
    if top_level:
        return {"type": "record", "name": name, "namespace": NAMESPACE, "fields": fields}
    return {"type": "record", "name": name, "fields": fields}


def _long(name: str) -> dict[str, Any]:
    return _opt(name, "long")


# ---------------------------------------------------------------------------------------------
# Commit metadata (.commit / .deltacommit, and the inflight workload profile)
# ---------------------------------------------------------------------------------------------

RUNTIME_STATS = _record(
    "HoodieRuntimeStats",
    [_long("totalScanTime"), _long("totalCreateTime"), _long("totalUpsertTime")],
)

WRITE_STAT = _record(
    "HoodieWriteStat",
    [
        _opt("fileId", _str()),
        _opt("path", _str()),
        _opt("prevCommit", _str()),
        _long("numWrites"),
        _long("numDeletes"),
        _long("numUpdateWrites"),
        _long("totalWriteBytes"),
        _long("totalWriteErrors"),
        _opt("partitionPath", _str()),
        _long("totalLogRecords"),
        _long("totalLogFiles"),
        _long("totalUpdatedRecordsCompacted"),
        _long("numInserts"),
        _long("totalLogBlocks"),
        _long("totalCorruptLogBlock"),
        _long("totalRollbackBlocks"),
        _long("fileSizeInBytes"),
        _opt("logVersion", "int"),
        _long("logOffset"),
        _opt("baseFile", _str()),
        _opt("logFiles", _array(_str(), default=None)),
        _opt("cdcStats", _map("long", default=None)),
        _opt("prevBaseFile", _str()),
        _long("minEventTime"),
        _long("maxEventTime"),
        _opt("runtimeStats", RUNTIME_STATS),
        _long("totalLogFilesCompacted"),
        _long("totalLogReadTimeMs"),
        _long("totalLogSizeCompacted"),
        _opt("tempPath", _str()),
        _long("numUpdates"),
    ],
)


def _commit_fields(extra_metadata_default_in_type: bool) -> list[dict[str, Any]]:
    # HoodieCommitMetadata's extraMetadata map carries a stray "default": null inside the map type;
    # HoodieReplaceCommitMetadata's does not. Both are reproduced as Hudi writes them.
    extra = _map(_str(), default=None) if extra_metadata_default_in_type else _map(_str())
    return [
        _opt("partitionToWriteStats", _map(_array(WRITE_STAT))),
        _opt("compacted", "boolean"),
        _opt("extraMetadata", extra),
        _version(),
        _opt("operationType", _str()),
    ]


COMMIT_METADATA = _record("HoodieCommitMetadata", _commit_fields(True), top_level=True)

REPLACE_COMMIT_METADATA = _record(
    "HoodieReplaceCommitMetadata",
    [*_commit_fields(False), _opt("partitionToReplaceFileIds", _map(_array(_str())))],
    top_level=True,
)

# ---------------------------------------------------------------------------------------------
# Compaction plan (.compaction.requested / .logcompaction.requested)
# ---------------------------------------------------------------------------------------------

COMPACTION_OPERATION = _record(
    "HoodieCompactionOperation",
    [
        _field("baseInstantTime", ["null", _str()]),  # no default in Hudi's schema
        _opt("deltaFilePaths", _array(_str())),
        _opt("dataFilePath", _str()),
        _field("fileId", ["null", _str()]),  # no default in Hudi's schema
        _opt("partitionPath", _str()),
        _opt("metrics", _map("double")),
        _opt("bootstrapFilePath", _str()),
    ],
)

COMPACTION_STRATEGY = _record(
    "HoodieCompactionStrategy",
    [
        _opt(
            "compactorClassName",
            _str(),
            doc="The class name that is provided here should extend CompactionExecutionStrategy abstract class, "
            "idea is that the plan generator will also provide the execution strategy to use.",
        ),
        _opt(
            "strategyParams",
            _map(_str()),
            doc="These parameters play a key role in determining which action type it is i.e. compaction or "
            "logcompaction and it will also include configs that determine how compaction needs to be executed.",
        ),
        _version(),
    ],
)

COMPACTION_PLAN = _record(
    "HoodieCompactionPlan",
    [
        _opt("operations", _array(COMPACTION_OPERATION)),
        _opt("extraMetadata", _map(_str())),
        _version(),
        _opt("strategy", COMPACTION_STRATEGY),
        _field("preserveHoodieMetadata", ["boolean", "null"], default=False),
        _opt("missingSchedulePartitions", _array(_str())),
    ],
    top_level=True,
)

# ---------------------------------------------------------------------------------------------
# Clustering plan (.clustering.requested, and .replacecommit.requested of any replace operation)
# ---------------------------------------------------------------------------------------------

SLICE_INFO = _record(
    "HoodieSliceInfo",
    [
        _opt("dataFilePath", _str()),
        _opt("deltaFilePaths", _array(_str())),
        _field("fileId", ["null", _str()]),  # no default in Hudi's schema
        _opt("partitionPath", _str()),
        _opt("bootstrapFilePath", _str()),
        _version(),
    ],
)

CLUSTERING_GROUP = _record(
    "HoodieClusteringGroup",
    [
        _opt("slices", _array(SLICE_INFO)),
        _opt("metrics", _map("double")),
        _field("numOutputFileGroups", ["int", "null"], default=1),
        _opt("extraMetadata", _map(_str())),
        _version(),
    ],
)

CLUSTERING_STRATEGY = _record(
    "HoodieClusteringStrategy",
    [_opt("strategyClassName", _str()), _opt("strategyParams", _map(_str())), _version()],
)

CLUSTERING_PLAN = _record(
    "HoodieClusteringPlan",
    [
        _opt("inputGroups", _array(CLUSTERING_GROUP)),
        _opt("strategy", CLUSTERING_STRATEGY),
        _opt("extraMetadata", _map(_str())),
        _version(),
        _opt("preserveHoodieMetadata", "boolean"),
        _opt("missingSchedulePartitions", _array(_str())),
    ],
)

REQUESTED_REPLACE_METADATA = _record(
    "HoodieRequestedReplaceMetadata",
    [
        _opt("operationType", _str()),
        _opt("clusteringPlan", CLUSTERING_PLAN),
        _opt("extraMetadata", _map(_str())),
        _version(),
    ],
    top_level=True,
)

# ---------------------------------------------------------------------------------------------
# Cleaning (.clean.requested / .clean.inflight = plan, .clean = metadata)
# ---------------------------------------------------------------------------------------------

ACTION_INSTANT = _record(
    "HoodieActionInstant",
    [_field("timestamp", _str()), _field("action", _str()), _field("state", _str())],
)

CLEAN_FILE_INFO = _record(
    "HoodieCleanFileInfo",
    [_opt("filePath", _str()), _opt("isBootstrapBaseFile", "boolean")],
)

CLEANER_PLAN = _record(
    "HoodieCleanerPlan",
    [
        _opt("earliestInstantToRetain", ACTION_INSTANT),
        _field("lastCompletedCommitTimestamp", _str(), default=""),
        _field("policy", _str()),
        _opt("filesToBeDeletedPerPartition", _map(_array(_str()))),  # deprecated by the next-but-one
        _version(),
        _opt(
            "filePathsToBeDeletedPerPartition",
            _map(_array(CLEAN_FILE_INFO)),
            doc="This field replaces the field filesToBeDeletedPerPartition",
        ),
        _opt("partitionsToBeDeleted", _array(_str()), doc="partitions to be deleted"),
        _opt("extraMetadata", _map(_str(), default=None)),
    ],
    top_level=True,
)

CLEAN_PARTITION_METADATA = _record(
    "HoodieCleanPartitionMetadata",
    [
        _field("partitionPath", _str()),
        _field("policy", _str()),
        _field("deletePathPatterns", _array(_str())),
        _field("successDeleteFiles", _array(_str())),
        _field("failedDeleteFiles", _array(_str())),
        _opt("isPartitionDeleted", "boolean"),
    ],
)

CLEAN_METADATA = _record(
    "HoodieCleanMetadata",
    [
        _field("startCleanTime", _str()),
        _field("timeTakenInMillis", "long"),
        _field("totalFilesDeleted", "int"),
        _field("earliestCommitToRetain", _str()),
        _field("lastCompletedCommitTimestamp", _str(), default=""),
        _field("partitionMetadata", _map(CLEAN_PARTITION_METADATA)),
        _version(),
        # second use of a named type: a reference by (namespace-relative) name, as Java prints it
        _opt("bootstrapPartitionMetadata", _map("HoodieCleanPartitionMetadata", default=None)),
        _opt("extraMetadata", _map(_str(), default=None)),
    ],
    top_level=True,
)

# ---------------------------------------------------------------------------------------------
# Rollback (.rollback.requested = plan, .rollback = metadata)
# ---------------------------------------------------------------------------------------------


INSTANT_INFO = _record("HoodieInstantInfo", [_field("commitTime", _str()), _field("action", _str())])


ROLLBACK_REQUEST = _record(
    "HoodieRollbackRequest",
    [
        _field("partitionPath", _str()),
        _opt("fileId", _str()),
        _opt("latestBaseInstant", _str()),
        _field("filesToBeDeleted", _array(_str(), default=[]), default=[]),
        _opt("logBlocksToBeDeleted", _map("long")),
    ],
)

ROLLBACK_PLAN = _record(
    "HoodieRollbackPlan",
    [
        _opt("instantToRollback", INSTANT_INFO, doc="Hoodie instant that needs to be rolled back"),
        _opt("RollbackRequests", _array(ROLLBACK_REQUEST)),
        _version(),
    ],
    top_level=True,
)

ROLLBACK_PARTITION_METADATA = _record(
    "HoodieRollbackPartitionMetadata",
    [
        _field("partitionPath", _str()),
        _field("successDeleteFiles", _array(_str())),
        _field("failedDeleteFiles", _array(_str())),
        _opt("rollbackLogFiles", _map("long")),
        _opt("logFilesFromFailedCommit", _map("long")),
    ],
)

ROLLBACK_METADATA = _record(
    "HoodieRollbackMetadata",
    [
        _field("startRollbackTime", _str()),
        _field("timeTakenInMillis", "long"),
        _field("totalFilesDeleted", "int"),
        _field("commitsRollback", _array(_str())),
        _field("partitionMetadata", _map(ROLLBACK_PARTITION_METADATA)),
        _version(),
        _field("instantsRollback", _array(INSTANT_INFO, default=[]), default=[]),
    ],
    top_level=True,
)

#: Every top-level schema (the record stored in an instant file), by short record name.
TOP_LEVEL: dict[str, dict[str, Any]] = {
    s["name"]: s
    for s in (
        COMMIT_METADATA,
        REPLACE_COMMIT_METADATA,
        COMPACTION_PLAN,
        REQUESTED_REPLACE_METADATA,
        CLEANER_PLAN,
        CLEAN_METADATA,
        ROLLBACK_PLAN,
        ROLLBACK_METADATA,
    )
}


def full_name(record: dict[str, Any]) -> str:
    """The fully qualified name of one of the records above (all live in :data:`NAMESPACE`)."""
    return f"{NAMESPACE}.{record['name']}"


def standalone(record: dict[str, Any]) -> dict[str, Any]:
    """A record schema usable as a file's writer schema on its own (namespace added if nested)."""
    if "namespace" in record:
        return record
    return {"type": "record", "name": record["name"], "namespace": NAMESPACE, "fields": record["fields"]}


def to_json(schema: dict[str, Any]) -> str:
    """The compact JSON that Java's ``Schema.toString()`` prints for the same schema."""
    return json.dumps(schema, separators=(",", ":"))


__all__ = [
    "NAMESPACE",
    "RUNTIME_STATS",
    "WRITE_STAT",
    "COMMIT_METADATA",
    "REPLACE_COMMIT_METADATA",
    "COMPACTION_OPERATION",
    "COMPACTION_STRATEGY",
    "COMPACTION_PLAN",
    "SLICE_INFO",
    "CLUSTERING_GROUP",
    "CLUSTERING_STRATEGY",
    "CLUSTERING_PLAN",
    "REQUESTED_REPLACE_METADATA",
    "ACTION_INSTANT",
    "CLEAN_FILE_INFO",
    "CLEANER_PLAN",
    "CLEAN_PARTITION_METADATA",
    "CLEAN_METADATA",
    "INSTANT_INFO",
    "ROLLBACK_REQUEST",
    "ROLLBACK_PLAN",
    "ROLLBACK_PARTITION_METADATA",
    "ROLLBACK_METADATA",
    "TOP_LEVEL",
    "full_name",
    "standalone",
    "to_json",
]
