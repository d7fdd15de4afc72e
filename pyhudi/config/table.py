"""``.hoodie/hoodie.properties``: the table's persisted configuration (table versions 6, 8, 9).

pyhudi writes table version 8 with timeline layout 2 and reads versions 6, 8 and 9. The file is
Java properties text (:mod:`pyhudi.config.properties`). Updates follow Hudi's crash-safe
protocol — write ``hoodie.properties.backup``, replace the original, re-read and verify, then
delete the backup — and readers fall back to the backup when the original is missing, so a crash
at any point never leaves a table without properties.
"""

from __future__ import annotations

import binascii
from typing import Iterable, Mapping

from pyhudi.config import properties
from pyhudi.config.families import ColumnFamily, families_from_properties, family_properties, is_family_key
from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError, StorageError, TableNotFoundError
from pyhudi.storage.fs import Storage
from pyhudi.value import Record

METAFOLDER = ".hoodie"
PROPERTIES_FILE = f"{METAFOLDER}/hoodie.properties"
BACKUP_FILE = f"{METAFOLDER}/hoodie.properties.backup"

EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
CUSTOM_STRATEGY_ID = "1897ef5f-18bc-4557-939c-9d6a8afd1519"
PAYLOAD_STRATEGY_ID = "00000000-0000-0000-0000-000000000000"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
COMMIT_TIME_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"

# One table per mapping (merge mode ↔ strategy id ↔ payload class), so the directions cannot drift.
MERGE_MODES: dict[str, tuple[str, str]] = {
    "EVENT_TIME_ORDERING": (EVENT_TIME_STRATEGY_ID, EVENT_TIME_PAYLOAD),
    "COMMIT_TIME_ORDERING": (COMMIT_TIME_STRATEGY_ID, COMMIT_TIME_PAYLOAD),
}

SUPPORTED_READ_VERSIONS = (6, 8, 9)
WRITE_VERSION = 8

# ---------------------------------------------------------------------------------------- keys
TABLE_NAME = ConfigKey("hoodie.table.name", str, None, "Table name (required).")
DATABASE_NAME = ConfigKey("hoodie.database.name", str, None, "Database name; part of the checksum.")
TABLE_TYPE = ConfigKey(
    "hoodie.table.type", str, "COPY_ON_WRITE", "COPY_ON_WRITE or MERGE_ON_READ.",
    choices=("COPY_ON_WRITE", "MERGE_ON_READ"),
)
TABLE_VERSION = ConfigKey("hoodie.table.version", int, None, "Table format version (6, 8 or 9 read; 8 written).")
INITIAL_VERSION = ConfigKey("hoodie.table.initial.version", int, None, "Version the table was created with.")
TIMELINE_LAYOUT = ConfigKey("hoodie.timeline.layout.version", int, None, "Timeline layout: 1 (v6) or 2 (v8+).")
TIMELINE_PATH = ConfigKey("hoodie.timeline.path", str, "timeline", "Active timeline folder, relative to .hoodie.")
TIMELINE_HISTORY_PATH = ConfigKey(
    "hoodie.timeline.history.path", str, "history", "Archived timeline folder, relative to the timeline path."
)
RECORD_KEY_FIELDS = ConfigKey("hoodie.table.recordkey.fields", tuple, (), "Record key columns, comma separated.")
PARTITION_FIELDS = ConfigKey("hoodie.table.partition.fields", tuple, (), "Partition columns (v8 may carry ':TYPE').")
PRECOMBINE_FIELD = ConfigKey(
    "hoodie.table.precombine.field", str, None, "Ordering field of the table (v8 name; v9: ordering.fields)."
)
ORDERING_FIELDS = ConfigKey("hoodie.table.ordering.fields", str, None, "Ordering fields (table version 9 name).")
MERGE_MODE = ConfigKey(
    "hoodie.record.merge.mode", str, None, "EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING or CUSTOM.",
    choices=("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM"),
)
MERGE_STRATEGY_ID = ConfigKey("hoodie.record.merge.strategy.id", str, None, "Merge strategy UUID.")
PAYLOAD_CLASS = ConfigKey("hoodie.compaction.payload.class", str, None, "Legacy payload class (v8 writes it).")
KEYGEN_TYPE = ConfigKey("hoodie.table.keygenerator.type", str, None, "Key generator type (SIMPLE, COMPLEX, ...).")
KEYGEN_CLASS = ConfigKey("hoodie.table.keygenerator.class", str, None, "Key generator class (pre-1.0 tables).")
POPULATE_META_FIELDS = ConfigKey("hoodie.populate.meta.fields", bool, True, "Whether files carry _hoodie_* columns.")
BASE_FILE_FORMAT = ConfigKey("hoodie.table.base.file.format", str, "PARQUET", "Base file format.",
                             aliases=("hoodie.table.ro.file.format",))  # (Hudi's older names)
LOG_FILE_FORMAT = ConfigKey("hoodie.table.log.file.format", str, "HOODIE_LOG", "Log file format.",
                            aliases=("hoodie.table.rt.file.format",))
HIVE_STYLE_PARTITIONING = ConfigKey(
    "hoodie.datasource.write.hive_style_partitioning", bool, False, "Partition folders named col=value."
)
URL_ENCODE_PARTITIONING = ConfigKey(
    "hoodie.datasource.write.partitionpath.urlencode", bool, False, "URL-encode partition values."
)
DROP_PARTITION_COLUMNS = ConfigKey(
    "hoodie.datasource.write.drop.partition.columns", bool, False, "Drop partition columns from data files."
)
TIMELINE_TIMEZONE = ConfigKey(
    "hoodie.table.timeline.timezone", str, "LOCAL", "Time zone of instant times (pyhudi writes UTC).",
    choices=("LOCAL", "UTC"),
)
METADATA_PARTITIONS = ConfigKey("hoodie.table.metadata.partitions", tuple, (), "Metadata table partitions.")
METADATA_PARTITIONS_INFLIGHT = ConfigKey(
    "hoodie.table.metadata.partitions.inflight", tuple, (), "Metadata table partitions being built."
)
CDC_ENABLED = ConfigKey("hoodie.table.cdc.enabled", bool, False, "Change data capture logging.")
MULTIPLE_BASE_FORMATS = ConfigKey(
    "hoodie.table.multiple.base.file.formats.enable", bool, False, "Mixed base file formats."
)
PARTITION_METAFILE_BASE_FORMAT = ConfigKey(
    "hoodie.partition.metafile.use.base.format", bool, False, "Partition metafile in base format."
)
CREATE_SCHEMA = ConfigKey("hoodie.table.create.schema", str, None, "Avro schema JSON given at creation.")
CHECKSUM = ConfigKey("hoodie.table.checksum", int, None, "CRC32 of '<database>.<table>'.")
INDEX_TYPE = ConfigKey("hoodie.index.type", str, None, "Index type; BUCKET for bucketed tables.")
BUCKET_ENGINE = ConfigKey("hoodie.index.bucket.engine", str, "SIMPLE", "Bucket engine (SIMPLE only).")
BUCKET_NUM = ConfigKey("hoodie.bucket.index.num.buckets", int, 256, "Buckets per partition.")
BUCKET_HASH_FIELD = ConfigKey("hoodie.bucket.index.hash.field", tuple, (), "Hash fields (default: record key).")


def table_checksum(table_name: str, database: str | None = None) -> int:
    """``CRC32(UTF-8 "<database>.<table>")`` as unsigned, exactly like Java Hudi."""
    return binascii.crc32(f"{database or ''}.{table_name}".encode("utf-8")) & 0xFFFFFFFF  # (zlib's CRC-32)


_PARSED_FAMILIES: dict[tuple, dict[str, ColumnFamily]] = {}


class TableConfig(Record):
    """The parsed content of ``hoodie.properties`` (raw strings kept, typed accessors on top)."""

    props: dict[str, str]

    def __init__(self, props: dict[str, str] | None = None) -> None:
        self.props = {} if props is None else props

    # ------------------------------------------------------------------------ accessors
    def get(self, key: ConfigKey, default=...):
        return key.get(self.props, default)

    @property
    def name(self) -> str:
        return self.get(TABLE_NAME)

    @property
    def table_type(self) -> str:
        return self.get(TABLE_TYPE)

    @property
    def version(self) -> int:
        return self.get(TABLE_VERSION)

    @property
    def layout_version(self) -> int:
        layout = self.get(TIMELINE_LAYOUT, None)
        if layout is None:
            return 2 if self.version >= 8 else 1
        return layout

    @property
    def timeline_dir(self) -> str:
        """Where instant files live: ``.hoodie/<timeline.path>`` (layout 2) or ``.hoodie`` (layout 1)."""
        if self.layout_version >= 2:
            return f"{METAFOLDER}/{self.get(TIMELINE_PATH)}"
        return METAFOLDER

    @property
    def timezone(self) -> str:
        return self.get(TIMELINE_TIMEZONE)

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        return self.get(RECORD_KEY_FIELDS)

    @property
    def partition_fields(self) -> tuple[str, ...]:
        """Partition columns, without the custom-keygen ``:TYPE`` suffix of v8."""
        return tuple(f.split(":", 1)[0] for f in self.get(PARTITION_FIELDS))

    @property
    def ordering_fields(self) -> tuple[str, ...]:
        raw = ORDERING_FIELDS.raw(self.props) if self.version >= 9 else None
        raw = raw if raw is not None else PRECOMBINE_FIELD.raw(self.props)
        return tuple(p.strip() for p in (raw or "").split(",") if p.strip())

    @property
    def ordering_field(self) -> str | None:
        fields_ = self.ordering_fields
        return fields_[0] if fields_ else None

    @property
    def merge_mode(self) -> str:
        """The merge mode, inferred as Hudi does when not stored (strategy id, then ordering field)."""
        mode = self.get(MERGE_MODE)
        if mode:
            return mode
        strategy = self.get(MERGE_STRATEGY_ID)
        for name, (strategy_id, payload) in MERGE_MODES.items():
            if strategy == strategy_id or self.get(PAYLOAD_CLASS) == payload:
                return name
        return "EVENT_TIME_ORDERING" if self.ordering_fields else "COMMIT_TIME_ORDERING"

    @property
    def populate_meta_fields(self) -> bool:
        return self.get(POPULATE_META_FIELDS)

    @property
    def hive_style_partitioning(self) -> bool:
        return self.get(HIVE_STYLE_PARTITIONING)

    @property
    def is_bucketed(self) -> bool:
        return (self.get(INDEX_TYPE) or "").upper() == "BUCKET"

    @property
    def num_buckets(self) -> int | None:
        return self.get(BUCKET_NUM) if self.is_bucketed else None

    @property
    def bucket_hash_fields(self) -> tuple[str, ...]:
        return self.get(BUCKET_HASH_FIELD) or self.record_key_fields

    @property
    def column_families(self) -> dict[str, ColumnFamily]:
        # (asked several times per read: parsed once per distinct set of family entries)
        entries = tuple((k, v) for k, v in self.props.items() if is_family_key(k))
        found = _PARSED_FAMILIES.get(entries)
        if found is None:
            found = families_from_properties(self.props)
            if len(_PARSED_FAMILIES) >= 256:
                _PARSED_FAMILIES.clear()
            _PARSED_FAMILIES[entries] = found
        return dict(found)

    # ------------------------------------------------------------------------ checks
    def validate_for_read(self) -> None:
        for key in (TABLE_NAME, TABLE_TYPE, TABLE_VERSION):
            if key.raw(self.props) is None:
                raise ConfigError(f"hoodie.properties is missing the required key {key.key}")
        if self.version not in SUPPORTED_READ_VERSIONS:
            supported = ", ".join(str(v) for v in SUPPORTED_READ_VERSIONS)
            raise ConfigError(f"unsupported hoodie.table.version={self.version}; pyhudi reads versions {supported}")
        self.get(TABLE_TYPE)  # parses against its choices

    def verify_checksum(self) -> None:
        stored = self.get(CHECKSUM)
        if stored is None:
            return
        expected = table_checksum(self.name, self.get(DATABASE_NAME))
        if stored != expected:
            raise ConfigError(
                f"hoodie.table.checksum={stored} does not match CRC32 of "
                f"'{self.get(DATABASE_NAME) or ''}.{self.name}' ({expected}): hoodie.properties is corrupt"
            )

    # ------------------------------------------------------------------------ (de)serialise
    def to_text(self, comment: str = "Properties saved by pyhudi") -> str:
        """Checksum last, as Hudi writes it."""
        ordered = {k: v for k, v in self.props.items() if k != CHECKSUM.key}
        ordered[CHECKSUM.key] = str(table_checksum(self.name, self.get(DATABASE_NAME)))
        return properties.dumps(ordered, comment)

    @classmethod
    def from_text(cls, text: str) -> "TableConfig":
        return cls(properties.loads(text))


def new_table_properties(
    name: str,
    table_type: str,
    record_key_fields: Iterable[str],
    partition_fields: Iterable[str] = (),
    ordering_field: str | None = None,
    merge_mode: str | None = None,
    hive_style: bool = False,
    num_buckets: int | None = None,
    bucket_hash_fields: Iterable[str] = (),
    families: Mapping[str, ColumnFamily] | None = None,
    database: str | None = None,
    create_schema: str | None = None,
    extra: Mapping[str, str] | None = None,
    keygen: str | None = None,
) -> TableConfig:
    """The complete property set of a new version-8 table, in the order Hudi writes it."""
    record_key_fields = tuple(record_key_fields)
    partition_fields = tuple(partition_fields)
    mode = merge_mode or ("EVENT_TIME_ORDERING" if ordering_field else "COMMIT_TIME_ORDERING")
    if mode not in MERGE_MODES:
        raise ConfigError(f"unsupported merge mode {mode!r}: expected one of {', '.join(MERGE_MODES)}")
    if mode == "EVENT_TIME_ORDERING" and not ordering_field:
        raise ConfigError("merge mode EVENT_TIME_ORDERING needs an ordering field (hoodie.table.precombine.field)")
    strategy_id, payload = MERGE_MODES[mode]
    if keygen:
        pass  # (chosen by the caller: TIMESTAMP, with its hoodie.keygen.timebased.* settings in ``extra``)
    elif partition_fields:
        keygen = "SIMPLE" if len(record_key_fields) == 1 and len(partition_fields) == 1 else "COMPLEX"
    else:
        keygen = "NON_PARTITION"
    props: dict[str, str] = {
        TABLE_NAME.key: name,
        TABLE_TYPE.key: table_type,
        TABLE_VERSION.key: str(WRITE_VERSION),
        INITIAL_VERSION.key: str(WRITE_VERSION),
        TIMELINE_LAYOUT.key: "2",
        TIMELINE_PATH.key: "timeline",
        TIMELINE_HISTORY_PATH.key: "history",
        RECORD_KEY_FIELDS.key: ",".join(record_key_fields),
        PARTITION_FIELDS.key: ",".join(partition_fields),
    }
    if ordering_field:
        props[PRECOMBINE_FIELD.key] = ordering_field
    props.update(
        {
            MERGE_MODE.key: mode,
            MERGE_STRATEGY_ID.key: strategy_id,
            PAYLOAD_CLASS.key: payload,
            KEYGEN_TYPE.key: keygen,
            POPULATE_META_FIELDS.key: "true",
            BASE_FILE_FORMAT.key: "PARQUET",
            LOG_FILE_FORMAT.key: "HOODIE_LOG",
            HIVE_STYLE_PARTITIONING.key: "true" if hive_style else "false",
            URL_ENCODE_PARTITIONING.key: "false",
            DROP_PARTITION_COLUMNS.key: "false",  # (may be set by ``extra``, below)
            TIMELINE_TIMEZONE.key: "UTC",
            METADATA_PARTITIONS.key: "",
            METADATA_PARTITIONS_INFLIGHT.key: "",
            CDC_ENABLED.key: "false",
            MULTIPLE_BASE_FORMATS.key: "false",
            PARTITION_METAFILE_BASE_FORMAT.key: "false",
        }
    )
    if database:
        props[DATABASE_NAME.key] = database
    if create_schema:
        props[CREATE_SCHEMA.key] = create_schema
    if num_buckets is not None:
        props[INDEX_TYPE.key] = "BUCKET"
        props[BUCKET_ENGINE.key] = "SIMPLE"
        props[BUCKET_NUM.key] = str(num_buckets)
        props[BUCKET_HASH_FIELD.key] = ",".join(tuple(bucket_hash_fields) or record_key_fields)
    props.update(family_properties(families or {}))
    if extra and POPULATE_META_FIELDS.key in extra and not POPULATE_META_FIELDS.parse(extra[POPULATE_META_FIELDS.key]):
        raise ConfigError(f"{POPULATE_META_FIELDS.key}=false (virtual keys) is not supported when pyhudi creates a "
                          "table: pyhudi writes the _hoodie_* meta columns (incremental queries, compaction and "
                          "clustering keep each record's commit time in them); leave the option out")
    if extra and TIMELINE_TIMEZONE.key in extra and str(extra[TIMELINE_TIMEZONE.key]).strip().upper() != "UTC":
        raise ConfigError(f"{TIMELINE_TIMEZONE.key}={str(extra[TIMELINE_TIMEZONE.key])!r} is not supported when pyhudi "
                          "creates a table: pyhudi writes instant times in UTC (tables of other writers in any zone "
                          "are read); set UTC or leave the option out")
    if extra and DROP_PARTITION_COLUMNS.key in extra:  # a writer option the table keeps (readers need it)
        props[DROP_PARTITION_COLUMNS.key] = str(DROP_PARTITION_COLUMNS.parse(extra[DROP_PARTITION_COLUMNS.key])).lower()
    if extra and TIMELINE_HISTORY_PATH.key in extra:  # the archive folder, chosen at creation
        props[TIMELINE_HISTORY_PATH.key] = str(extra[TIMELINE_HISTORY_PATH.key])
    for key, value in (extra or {}).items():
        if key not in props and not is_family_key(key):
            props[key] = str(value)
    config = TableConfig(props)
    config.props[CHECKSUM.key] = str(table_checksum(name, database))
    return config


# ---------------------------------------------------------------------------------------- storage
def properties_exist(storage: Storage) -> bool:
    return storage.exists(PROPERTIES_FILE) or storage.exists(BACKUP_FILE)


CHECKSUM_SINCE_VERSION = 3
"""Hudi 0.10 (table version 3) started writing ``hoodie.table.checksum``; every later writer keeps it."""


def _read_valid(storage: Storage, relpath: str) -> TableConfig:
    """The properties in ``relpath`` if the file validates; raises ConfigError saying why not.

    Raises:
        StorageError: the file does not exist.
        ConfigError: it is not UTF-8 text, does not parse, lacks a required key, or its checksum
            is missing (table version 3 and later) or does not match.
    """
    data = storage.read(relpath)
    try:
        config = TableConfig.from_text(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"byte {exc.start} is not UTF-8 text") from None
    for key in (TABLE_NAME, TABLE_VERSION):
        if key.raw(config.props) is None:
            raise ConfigError(f"the required key {key.key} is missing (the file is truncated?)")
    if CHECKSUM.raw(config.props) is None:
        if config.version >= CHECKSUM_SINCE_VERSION:
            raise ConfigError(f"{CHECKSUM.key} is missing (the file is truncated?)")
        return config
    config.verify_checksum()
    return config


def load_table_config(storage: Storage) -> TableConfig:
    """Read ``hoodie.properties``, or its backup when the original does not validate.

    A properties file validates when it is UTF-8 Java properties text with the table name and
    version, and a ``hoodie.table.checksum`` equal to CRC32 of ``<database>.<table>``. Hudi checks
    the checksum only when the key is present, so a file cut short before its last line (Hudi
    writes the checksum last) would pass and open as a table without its bucket, family and key
    settings; pyhudi requires the checksum from table version 3 on (the version that introduced
    it) and accepts older files without one. The backup is the copy an interrupted update left
    beside the original, or the good copy when the original is damaged: the first file that
    validates is used. If neither validates, the table's configuration is lost: ConfigError names
    the files and what is wrong with each (restore one from a copy); if neither exists,
    TableNotFoundError.
    """
    problems = []
    for relpath in (PROPERTIES_FILE, BACKUP_FILE):
        try:
            config = _read_valid(storage, relpath)
        except StorageError:
            continue
        except ConfigError as exc:
            problems.append(f"{storage.base_uri}/{relpath}: {exc}")
            continue
        config.validate_for_read()
        return config
    if problems:
        raise ConfigError(f"hoodie.properties of the table at {storage.base_uri} is corrupt and no valid "
                          f"backup exists: {'; '.join(problems)}")
    raise TableNotFoundError(f"no Hudi table at {storage.base_uri}: {PROPERTIES_FILE} not found")


def create_table_config(storage: Storage, config: TableConfig) -> None:
    """Write the properties of a new table (write-once: fails if another creator got there first)."""
    storage.create_if_absent(PROPERTIES_FILE, config.to_text("Properties saved by pyhudi").encode("utf-8"))


def update_table_config(
    storage: Storage, set_props: Mapping[str, str] | None = None, unset: Iterable[str] = ()
) -> TableConfig:
    """Change properties crash-safely: backup → rewrite → verify → drop backup.

    If the process dies after the backup is written, readers use the backup and the next update
    starts again from it; the original is never the only copy while it is being replaced.
    """
    current = load_table_config(storage)
    storage.write(BACKUP_FILE, current.to_text("Backup saved by pyhudi").encode("utf-8"))
    props = dict(current.props)
    for key in unset:
        props.pop(key, None)
    for key, value in (set_props or {}).items():
        props[key] = str(value)
    updated = TableConfig(props)
    text = updated.to_text("Updated by pyhudi")
    storage.write(PROPERTIES_FILE, text.encode("utf-8"))
    reread = TableConfig.from_text(storage.read(PROPERTIES_FILE).decode("utf-8"))
    if reread.props != TableConfig.from_text(text).props:
        raise StorageError(f"hoodie.properties did not read back as written at {storage.base_uri}; backup kept")
    reread.verify_checksum()
    storage.delete(BACKUP_FILE)
    return reread
