"""Write settings (file sizes, small files, insert overwrite, durability), declared once."""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey

FSYNC_DATA_FILES = ConfigKey(
    "hoodie.pyhudi.fsync.data.files", bool, False,
    "pyhudi: fsync every data file (base and log) as it is written, for durability of committed data "
    "across power loss on local file systems. Off by default, like Hudi on a local file system and "
    "pyarrow's own writer: a killed process loses nothing either way (uncommitted files are rolled back).",
)

OVERWRITE_PARTITIONS = ConfigKey(
    "hoodie.pyhudi.overwrite.partitions", str, None,
    "pyhudi: insert_overwrite also replaces the file groups of these partitions (a JSON list of "
    "partition paths) even when the input has no row for them — SQL's static PARTITION (p = 'x').",
)

OVERWRITE_LOG_FILES = ConfigKey(
    "hoodie.pyhudi.overwrite.log.files", bool, False,
    "pyhudi: an overwrite of a bucketed table writes its new file groups as log files instead of base "
    "files — for engines whose tasks may each hold part of a bucket (two tasks must never both create "
    "a file group's base file).",
)

MAX_FILE_SIZE = ConfigKey(
    "hoodie.parquet.max.file.size", int, 125_829_120,
    "Upper bound in bytes for a base file created for new inserts on a table without a bucket index; "
    "inserts are split into file groups of this size, estimated from the records' in-memory size.",
)

PARQUET_BLOCK_SIZE = ConfigKey(
    "hoodie.parquet.block.size", int, 125_829_120,
    "Target size in bytes of a Parquet row group in the files a write creates, estimated from the "
    "records' in-memory size.",
)

SMALL_FILE_LIMIT = ConfigKey(
    "hoodie.parquet.small.file.limit", int, 104_857_600,
    "Base files smaller than this many bytes are small files: inserts on a table without a bucket index "
    "are assigned to them (up to hoodie.parquet.max.file.size) before new file groups are created; 0 turns "
    "small-file handling off.",
)

RECORD_SIZE_ESTIMATE = ConfigKey(
    "hoodie.copyonwrite.record.size.estimate", int, 1024,
    "Average record size in bytes assumed when assigning inserts to small files, until a commit has "
    "written enough data (see hoodie.record.size.estimation.threshold) to measure it.",
)

RECORD_SIZE_ESTIMATION_THRESHOLD = ConfigKey(
    "hoodie.record.size.estimation.threshold", float, 1.0,
    "A commit measures the average record size only if it wrote more than this fraction of "
    "hoodie.parquet.small.file.limit bytes.",
)

SMALL_FILE_GROUP_CANDIDATES_LIMIT = ConfigKey(
    "hoodie.merge.small.file.group.candidates.limit", int, 1,
    "Merge-on-read tables without an index on log files: how many small file groups per partition may "
    "receive inserts in one commit.",
)

MERGE_ALLOW_DUPLICATE_ON_INSERTS = ConfigKey(
    "hoodie.merge.allow.duplicate.on.inserts", bool, True,
    "Copy-on-write ``insert`` into a small file: keep a record whose key the file already holds as a "
    "second record (true, Hudi's default: insert never looks keys up) instead of replacing it.",
)

WRITE_RECORD_POSITIONS = ConfigKey(
    "hoodie.write.record.positions", bool, True,
    "Write the base-file positions of an update block's records in its header (RECORD_POSITIONS and "
    "BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS), so that readers merge it by position instead of by "
    "key. An append looks its keys up in the family's base file (one column read) to find them; in a "
    "file group without a base file (written by an insert), in its first log block, whose instant it names.",
)


FULL_ROW_INSERT = ConfigKey(
    "hoodie.pyhudi.insert.full.row", bool, True,
    "pyhudi: a bulk insert into new file groups of a column-family table writes ONE full-row base file "
    "per file group (no family suffix, as a full compaction does) instead of one base file per family; "
    "an insert or upsert into new file groups of a bucketed merge-on-read family table writes ONE "
    "full-row log file per file group instead of one log per family. "
    "Spark reads full-row base files with its own Parquet reader (pyhudi.spark.read: one file, no join of "
    "families), readers open one file per group, writers create one file per group, and later family "
    "updates and family compactions apply on top of it per family, as after a full compaction. A file "
    "group still gets one file per family when the input lacks a family or holds it partially, and "
    "always with false.",
)

METADATA_ENABLE = ConfigKey(
    "hoodie.metadata.enable", bool, False,
    "Apache Hudi's metadata table. pyhudi maintains none: before its first commit on a table that has "
    "one (Apache Hudi creates it by default), pyhudi turns it off as Apache Hudi's writer does with this "
    "key false — it "
    "empties hoodie.table.metadata.partitions and deletes .hoodie/metadata, so every reader lists storage "
    "and sees pyhudi's commits; Apache Hudi rebuilds it at its next write. Set true to have such a write "
    "refused instead (the table is left unchanged).",
)

