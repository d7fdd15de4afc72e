"""The exception hierarchy of pyhudi.

Every error pyhudi raises on purpose derives from :class:`HudiError`, so callers can catch one
type; the subclasses say which layer refused the operation. Messages always name the offending
value (the family, the column, the file, the key) so a user can fix the input without a debugger.
"""

from __future__ import annotations


class HudiError(Exception):
    """Root of every error raised by pyhudi."""


class ConfigError(HudiError, ValueError):
    """A configuration value or table property is missing, malformed or contradictory."""


class ColumnFamilyError(ConfigError):
    """A column family definition breaks one of the RFC-80 / DESIGN §4 rules."""


class WorkerEnvironmentError(ConfigError):
    """Spark's Python workers cannot import pyhudi: they run another Python than the program
    (``PYSPARK_PYTHON`` / ``spark.pyspark.python`` choose it)."""


class SchemaError(HudiError, ValueError):
    """Input data does not match the table schema (unknown column, bad type, null key)."""


class StorageError(HudiError, OSError):
    """A storage operation failed, or a path would escape the table's base path."""


class PathEscapeError(StorageError):
    """A relative path, partition value, family or file name would leave the base path."""


class AlreadyExistsError(StorageError):
    """A write-once file (timeline instant, marker) already exists."""


class TableExistsError(HudiError):
    """``create_table`` was pointed at a path that already holds a Hudi table."""


class TableNotFoundError(HudiError):
    """No ``.hoodie/hoodie.properties`` (nor its backup) exists at the given path."""


class FileNameError(HudiError, ValueError):
    """A base, log or instant file name does not follow the Hudi grammar."""


class TimelineError(HudiError):
    """An instant transition is invalid (wrong state, already completed, unknown action)."""


class StaleTimelineError(TimelineError):
    """An instant listed a moment ago left the active timeline (another process archived or rolled it back)."""


class StaleSnapshotError(StaleTimelineError):
    """A clean that completed after a read listed the timeline deleted files that listing still
    counts (older file versions, or the slice before a compaction or clustering it listed as
    pending): planning the read again on a fresh listing reads the table as it is now
    (``Table.read``, ``scan`` and ``read_incremental`` do so once)."""


class LockError(HudiError):
    """The timeline lock could not be acquired in time."""


class MetadataError(HudiError, ValueError):
    """Timeline metadata (Avro or JSON) cannot be decoded or encoded."""


class LogFormatError(HudiError, ValueError):
    """A log block cannot be encoded, or a log file is unreadable as a whole."""


class CorruptBlockError(LogFormatError):
    """One log block is torn or corrupt; readers skip it and count it."""


class CorruptFileError(HudiError, ValueError):
    """A data file a completed commit wrote is missing, cut short, or does not decode; the
    message names the file and the table (:mod:`pyhudi.read.damage`)."""


class ReadError(HudiError, ValueError):
    """A read request is invalid: unknown query type, malformed instant time, a query the table
    cannot answer (e.g. incremental reads of a table without meta fields)."""


class CleanedSnapshotError(ReadError):
    """A time-travel read asks for a snapshot whose files a completed clean deleted (it was no
    longer retained: ``hoodie.cleaner.*``); :mod:`pyhudi.read.retention`."""


class CommitConflictError(HudiError):
    """Two writers changed the same file group in a way that cannot be reconciled."""


class ConcurrentWriteError(CommitConflictError):
    """A second writer ran at the same time on a table whose concurrency mode allows one
    (``hoodie.write.concurrency.mode=SINGLE_WRITER``): it is refused, the live writer goes on."""


class SplitFileGroupError(CommitConflictError):
    """Two tasks of one write each wrote a new base file of the same file group: the rows of a
    file group must reach one task (``pyhudi.spark.write`` routes them so)."""


class ClusteringConflictError(CommitConflictError):
    """A write meets a pending clustering it cannot go past: an update or delete of a file group
    the clustering is rewriting (``hoodie.clustering.updates.strategy`` rejects it), an insert
    overwrite of its partitions — or a clustering whose inputs a write changed after its plan."""


class ClusteredMeanwhileError(CommitConflictError):
    """A write's file groups were replaced by a clustering that completed while the write ran
    (its files would never be read). In allow mode the write client plans the write again."""


class UnknownOptionWarning(UserWarning):
    """An option pyhudi does not read, spelled like one it does (a typo: it would have no effect)."""


__all__ = [
    "HudiError",
    "UnknownOptionWarning",
    "ConfigError",
    "ColumnFamilyError",
    "WorkerEnvironmentError",
    "SchemaError",
    "StorageError",
    "PathEscapeError",
    "AlreadyExistsError",
    "TableExistsError",
    "TableNotFoundError",
    "FileNameError",
    "TimelineError",
    "StaleTimelineError",
    "StaleSnapshotError",
    "LockError",
    "MetadataError",
    "LogFormatError",
    "CorruptBlockError",
    "CorruptFileError",
    "ReadError",
    "CleanedSnapshotError",
    "CommitConflictError",
    "ConcurrentWriteError",
    "SplitFileGroupError",
    "ClusteringConflictError",
    "ClusteredMeanwhileError",
]
