"""The table handle: ``pyhudi.create_table`` / ``pyhudi.open_table`` and :class:`Table`.

This module is the face over the kernel: it validates what a user asks for against the rules
of the format (record key, partitions, buckets, column families, merge mode), persists it in
``hoodie.properties``, and exposes the table's timeline, schema and families. The write and read
paths attach here as they land (DESIGN §5 lists the full surface).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from pyhudi.config import keygen as kg
from pyhudi.config import table as tc
from pyhudi.config.concurrency import (
    FAILED_WRITES_POLICY,
    WRITE_CONCURRENCY_MODE,
    default_concurrency_properties,
    resolve_concurrency,
)
from pyhudi.config.families import (
    ColumnFamily,
    families_from_mapping,
    families_from_properties,
    is_family_key,
    validate_families,
)
from pyhudi.config.keys import format_value, lookup, warn_misspelled
from pyhudi.errors import AlreadyExistsError, ConfigError, SchemaError, TableExistsError
from pyhudi.evolution import SchemaHistory, alter_table
from pyhudi.keygen import partition_layout, timestamp_table_properties
from pyhudi.metadata_table import first_write_guard
from pyhudi.schema import META_FIELDS, avro_schema_json, check_soft_delete_field, has_order
from pyhudi.storage.fs import Storage
from pyhudi.table_services import PostCommitListing, TableServices, _string_options
from pyhudi.storage.s3 import STORAGE_OPTION_KEYS, split_storage_options
from pyhudi.timeline.instant import Instant
from pyhudi.timeline.lock_provider import create_lock
from pyhudi.timeline.timeline import Timeline, checked_history_path

TABLE_TYPES = ("MERGE_ON_READ", "COPY_ON_WRITE")
_ORDERING_OPTION_KEYS = ("hoodie.table.precombine.field", "hoodie.datasource.write.precombine.field")


def _as_fields(value: str | Sequence[str] | None, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        fields = tuple(f.strip() for f in value.split(",") if f.strip())
    else:
        fields = tuple(value)
    for field in fields:
        if not isinstance(field, str) or not field:
            raise ConfigError(f"{what} must be column names, got {value!r}")
    if len(set(fields)) != len(fields):
        raise ConfigError(f"{what} lists a column twice: {', '.join(fields)}")
    return fields


def _require_columns(schema: pa.Schema, columns: Iterable[str], what: str) -> None:
    names = set(schema.names)
    for column in columns:
        if column not in names:
            raise SchemaError(f"{what} {column!r} is not a column of the schema ({', '.join(schema.names)})")


def _check_schema(schema: pa.Schema) -> pa.Schema:
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if len(schema) == 0:
        raise SchemaError("schema has no columns")
    if len(set(schema.names)) != len(schema.names):
        dupes = sorted({n for n in schema.names if schema.names.count(n) > 1})
        raise SchemaError(f"schema has duplicate column names: {', '.join(dupes)}")
    meta = [n for n in schema.names if n in META_FIELDS]
    if meta:
        raise SchemaError(f"column {meta[0]!r} is a Hudi meta column and cannot be part of the table schema")
    for field in schema:
        check_soft_delete_field(field)
    return schema


def _check_key_types(schema: pa.Schema, fields: Sequence[str], bucketed: bool) -> None:
    for name in fields:
        t = schema.field(name).type
        ok = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
        if not bucketed:
            ok = ok or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_decimal(t)
        if not ok:
            kinds = "string or integer" if bucketed else "string, integer, date, timestamp or decimal"
            raise SchemaError(f"record key column {name!r} has type {t}; record keys must be {kinds}")


def _check_partition_types(schema: pa.Schema, fields: Sequence[str]) -> None:
    """A partition value becomes a folder name: lists, structs and maps have no such spelling."""
    for name in fields:
        t = schema.field(name).type
        if pa.types.is_nested(t):
            raise SchemaError(f"partition column {name!r} has type {t}; a list, struct or map value cannot "
                              "name a partition folder")


def _split_options(options: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, str]]:
    """Family definitions and the remaining ``hoodie.*`` options, as strings."""
    families: dict[str, str] = {}
    rest: dict[str, str] = {}
    for key, value in (options or {}).items():
        if not isinstance(key, str) or not key.startswith("hoodie."):
            raise ConfigError(f"option {key!r} is not a hoodie.* key")
        text = value if isinstance(value, str) else format_value(value)
        (families if is_family_key(key) else rest)[key] = text
    return families, rest


def create_table(
    path: str,
    schema: pa.Schema,
    record_key: str | Sequence[str] = "id",
    *,
    name: str | None = None,
    partition_fields: str | Sequence[str] = (),
    table_type: str = "MERGE_ON_READ",
    num_buckets: int | None = None,
    ordering_field: str | None = None,
    column_families: Mapping[str, str] | Mapping[str, ColumnFamily] | None = None,
    options: Mapping[str, Any] | None = None,
) -> "Table":
    """Create an empty Hudi table (version 8, timeline layout 2) and return its handle.

    ``column_families`` maps family names to ``"c1,c2;orderingCol"`` (or pass them as
    ``hoodie.colFamily.<name>`` entries in ``options``). Families need a merge-on-read bucketed
    table (RFC-80). Any other ``hoodie.*`` option is persisted in ``hoodie.properties``.
    Raises :class:`TableExistsError` if ``path`` already holds a table; nothing is written when
    validation fails.
    """
    schema = _check_schema(schema)
    warn_misspelled(options)  # (a typo would be persisted, to no effect)
    storage_options, options = split_storage_options(options)  # access settings, never persisted
    storage = Storage(path, options=storage_options)
    family_options, extra = _split_options(options)
    table_type = (extra.pop("hoodie.table.type", None) or table_type).upper()
    if table_type not in TABLE_TYPES:
        raise ConfigError(f"table_type must be MERGE_ON_READ or COPY_ON_WRITE, got {table_type!r}")
    name = name or extra.pop(tc.TABLE_NAME.key, None) or _default_name(storage)
    database = extra.pop(tc.DATABASE_NAME.key, None)
    record_key_fields = _as_fields(record_key, "record_key")
    if not record_key_fields:
        raise ConfigError("record_key must name at least one column")
    partition_fields = _as_fields(partition_fields, "partition_fields")
    ordering_field = ordering_field or next((extra.pop(k) for k in _ORDERING_OPTION_KEYS if k in extra), None)
    for key in _ORDERING_OPTION_KEYS:
        extra.pop(key, None)
    num_buckets = _bucket_count(num_buckets, extra)
    hash_fields = _as_fields(extra.pop(tc.BUCKET_HASH_FIELD.key, None), tc.BUCKET_HASH_FIELD.key)
    merge_mode = extra.pop(tc.MERGE_MODE.key, None)
    hive_style = tc.HIVE_STYLE_PARTITIONING.parse(extra.pop(tc.HIVE_STYLE_PARTITIONING.key, "false"))
    keygen = _keygen_options(extra, schema, record_key_fields, partition_fields, hive_style)

    _require_columns(schema, record_key_fields, "record key column")
    _require_columns(schema, partition_fields, "partition column")
    overlap = set(record_key_fields) & set(partition_fields)
    if overlap:
        raise ConfigError(f"column {sorted(overlap)[0]!r} cannot be both a record key and a partition column")
    if ordering_field is not None:
        _require_columns(schema, [ordering_field], "ordering field")
        if not has_order(schema.field(ordering_field).type):
            raise SchemaError(f"ordering field {ordering_field!r} has type {schema.field(ordering_field).type}, "
                              "whose values have no order (lists, structs and maps cannot order records)")
    _check_partition_types(schema, partition_fields)
    _check_key_types(schema, record_key_fields, num_buckets is not None)
    if hash_fields and not set(hash_fields) <= set(record_key_fields):
        raise ConfigError(
            f"{tc.BUCKET_HASH_FIELD.key}={','.join(hash_fields)} must be a subset of the record key fields "
            f"({','.join(record_key_fields)})"
        )
    if num_buckets is not None and table_type != "MERGE_ON_READ":
        raise ConfigError("bucketed tables must be MERGE_ON_READ (non-blocking concurrency needs merge-on-read)")

    spec = dict(families_from_mapping(column_families or {}))
    for fam_name, fam in families_from_properties(family_options).items():
        if fam_name in spec and spec[fam_name] != fam:
            raise ConfigError(f"column family {fam_name!r} is given twice with different definitions")
        spec[fam_name] = fam
    families = validate_families(spec, schema.names, record_key_fields, partition_fields, schema)
    if families and (table_type != "MERGE_ON_READ" or num_buckets is None):
        raise ConfigError(
            "column families need a MERGE_ON_READ table with a bucket index (pass num_buckets=...); RFC-80"
        )

    if not any(lookup(key).raw(extra) is not None for key in (WRITE_CONCURRENCY_MODE.key, FAILED_WRITES_POLICY.key)):
        extra.update(default_concurrency_properties(table_type, num_buckets is not None))
    resolve_concurrency(extra, table_type, num_buckets is not None)  # refuses contradictory settings

    config = tc.new_table_properties(
        name=name,
        table_type=table_type,
        record_key_fields=record_key_fields,
        partition_fields=partition_fields,
        ordering_field=ordering_field,
        merge_mode=merge_mode,
        hive_style=hive_style,
        num_buckets=num_buckets,
        bucket_hash_fields=hash_fields,
        families=families,
        database=database,
        create_schema=avro_schema_json(schema, name),
        extra=extra,
        keygen=keygen,
    )
    checked_history_path(config.get(tc.TIMELINE_HISTORY_PATH))  # (before anything is written)
    if tc.properties_exist(storage):
        raise TableExistsError(f"a Hudi table already exists at {storage.base_uri}")
    try:
        tc.create_table_config(storage, config)
    except AlreadyExistsError as exc:
        raise TableExistsError(f"a Hudi table already exists at {storage.base_uri}") from exc
    storage.makedirs(f"{config.timeline_dir}/{config.get(tc.TIMELINE_HISTORY_PATH)}")
    return Table(storage, config)


def _keygen_options(extra: dict[str, str], schema: pa.Schema, record_key_fields: Sequence[str],
                    partition_fields: Sequence[str], hive_style: bool) -> str | None:
    """The key generator type a new table stores when the options choose one pyhudi writes
    differently from its default (TIMESTAMP; its checked settings are left in ``extra``), else None.

    Accepts Hudi's table and writer spellings (``hoodie.table.keygenerator.type``,
    ``hoodie.datasource.write.keygenerator.type``, or the ``...class`` of either).
    """
    type_raw = extra.pop(tc.KEYGEN_TYPE.key, None) or extra.pop(kg.WRITE_KEYGEN_TYPE.key, None)
    class_raw = extra.pop(tc.KEYGEN_CLASS.key, None) or extra.pop(kg.WRITE_KEYGEN_CLASS.key, None)
    extra.pop(kg.WRITE_KEYGEN_TYPE.key, None)
    extra.pop(kg.WRITE_KEYGEN_CLASS.key, None)
    kind = kg.keygen_type(type_raw, class_raw)
    if kind is None or kind not in ("", *kg.KEYGEN_TYPES):
        given = f"type {type_raw!r}" if type_raw else f"class {class_raw!r}"
        raise ConfigError(f"unknown key generator {given}: pyhudi writes {', '.join(kg.KEYGEN_TYPES[:4])} "
                          f"(or {kg.TIMESTAMP_CLASS})")
    if kind == "CUSTOM":
        raise ConfigError("the CUSTOM key generator is not supported for writing: pyhudi reads such tables; "
                          "use TIMESTAMP (one field) or the default (one folder per partition field)")
    if class_raw:
        extra[tc.KEYGEN_CLASS.key] = class_raw
    if kind != "TIMESTAMP":
        stray = sorted(k for k in extra if k.startswith(("hoodie.keygen.timebased.", "hoodie.deltastreamer.keygen")))
        if stray:
            raise ConfigError(f"{stray[0]} applies to the TIMESTAMP key generator only, but the table's key generator "
                              f"is {kind or 'the default'} (set hoodie.table.keygenerator.type=TIMESTAMP)")
        return None
    extra.update(timestamp_table_properties(extra, partition_fields, record_key_fields, schema, hive_style))
    return "TIMESTAMP"


def _default_name(storage: Storage) -> str:
    base = storage.root.rstrip("/").rsplit("/", 1)[-1]
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base)
    return cleaned or "hudi_table"


def _bucket_count(num_buckets: int | None, extra: dict[str, str]) -> int | None:
    index_type = extra.pop(tc.INDEX_TYPE.key, None)
    from_options = extra.pop(tc.BUCKET_NUM.key, None)
    extra.pop(tc.BUCKET_ENGINE.key, None)
    if num_buckets is None and from_options is not None:
        num_buckets = tc.BUCKET_NUM.parse(from_options)
    if num_buckets is None and index_type and index_type.upper() == "BUCKET":
        num_buckets = tc.BUCKET_NUM.default
    if index_type and index_type.upper() != "BUCKET":
        raise ConfigError(f"hoodie.index.type={index_type} is not supported; pyhudi tables use BUCKET or none")
    if num_buckets is not None and (isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets <= 0):
        raise ConfigError(f"num_buckets must be a positive integer, got {num_buckets!r}")
    return num_buckets


def open_table(path: str, options: Mapping[str, Any] | None = None) -> "Table":
    """Open an existing Hudi table (versions 6, 8, 9; written by pyhudi or Apache Hudi).

    ``options``: storage options (``hoodie.pyhudi.s3.*``: endpoint, region, credentials) for an
    ``s3://`` path; by default they come from the AWS environment variables."""
    storage_options, rest = split_storage_options(options)
    if rest:
        raise ConfigError(f"open_table takes only storage options ({', '.join(STORAGE_OPTION_KEYS)}); "
                          f"got {', '.join(sorted(rest))}")
    storage = Storage(path, options=storage_options)
    return Table(storage, tc.load_table_config(storage))


class Table(TableServices):
    """A Hudi table: its configuration, timeline, schema and column families."""

    def __init__(self, storage: Storage, config: tc.TableConfig) -> None:
        self.storage = storage
        self.config = config
        self.last_write = None  # the WriteResult of this handle's latest write (stats, files)
        self._history = SchemaHistory()  # decoded schema/families of completed commits (immutable)

    def __repr__(self) -> str:
        return f"Table({self.storage.base_uri!r}, name={self.name!r}, type={self.config.table_type})"

    @property
    def history(self) -> SchemaHistory:
        """The schema and families recorded on the timeline (decoded commits cached per handle)."""
        return self._history

    # ----------------------------------------------------------------- identity
    @property
    def path(self) -> str:
        return self.storage.base_uri

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def properties(self) -> dict[str, str]:
        """The raw ``hoodie.properties`` entries."""
        return dict(self.config.props)

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        return self.config.record_key_fields

    @property
    def partition_fields(self) -> tuple[str, ...]:
        return self.config.partition_fields

    @property
    def num_buckets(self) -> int | None:
        return self.config.num_buckets

    # ----------------------------------------------------------------- timeline
    def active_timeline(self, options: Mapping[str, str] | None = None) -> Timeline:
        """A freshly listed :class:`Timeline` (reflects other writers' completed instants).

        ``options``: write options whose ``hoodie.write.lock.*`` keys (over the table's) shape
        the timeline lock a write takes."""
        settings = {**self.config.props, **(options or {})}
        timeline = Timeline(
            self.storage, timeline_dir=self.config.timeline_dir, layout_version=self.config.layout_version,
            timezone=self.config.timezone, lock=create_lock(self.storage, settings),
            history_path=self.config.get(tc.TIMELINE_HISTORY_PATH),
            before_first_write=first_write_guard(self.storage, self.config, settings),
        )
        return timeline.load()

    def snapshot_timeline(self) -> Timeline:
        """A fresh listing kept as a reader's snapshot (:meth:`Timeline.follow_archival`): a
        commit of it that another process archives before it is looked up (an ALTER, a
        replacecommit, a clean) is read from the archive, so a read-only accessor answers for
        the listing it took instead of raising :class:`StaleTimelineError`. Writes and services
        use :meth:`active_timeline`: their decisions need a current listing."""
        return self.active_timeline().follow_archival()

    @property
    def timeline(self) -> list[Instant]:
        """Every instant of the active timeline, in its latest state, by requested time."""
        return list(self.active_timeline().instants)

    # ----------------------------------------------------------------- schema & families
    @property
    def schema(self) -> pa.Schema:
        """The table schema now (no meta columns): see :meth:`schema_at`."""
        return self.schema_at(None)

    def schema_at(self, as_of: str | None = None) -> pa.Schema:
        """The schema ``read(as_of=...)`` returns (None = latest): the one recorded by the latest
        commit completed at or before ``as_of`` (ALTERs record theirs), else the create schema. As
        in :meth:`read`, the requested time a write or ALTER returned stands for its completion."""
        timeline = self.snapshot_timeline()
        return self._history.schema_at(timeline, self.config, self._completion(timeline, as_of))

    def families_at(self, as_of: str | None = None, schema: pa.Schema | None = None) -> dict[str, ColumnFamily]:
        """The families data is read in at ``as_of`` (None = latest; as in :meth:`schema_at`): the
        declared ones, or a plain table's default family (built from ``schema``, else looked up)."""
        timeline = self.snapshot_timeline()
        return self._history.families_at(timeline, self.config, self._completion(timeline, as_of), schema)

    @staticmethod
    def _completion(timeline: Timeline, as_of: str | None) -> str | None:
        from pyhudi.read.plan import resolve_instant_time  # (the read path sits above the table handle)

        return resolve_instant_time(timeline, as_of) if as_of is not None else None

    @property
    def column_families(self) -> dict[str, ColumnFamily]:
        """Declared column families now; empty for a table without families (a plain Hudi table)."""
        return self._history.declared_families_at(self.snapshot_timeline(), self.config)

    def effective_families(self, schema: pa.Schema | None = None) -> dict[str, ColumnFamily]:
        """The families data is written in now (same as ``families_at(None, schema)``)."""
        return self.families_at(None, schema)

    def alter(
        self,
        set_properties: Mapping[str, Any] | None = None,
        unset_properties: Iterable[str] | str | None = None,
        *,
        new_columns: Mapping[str, Any] | pa.Schema | None = None,
    ) -> str | None:
        """``ALTER TABLE ... SET/UNSET TBLPROPERTIES``: add or drop column families, set ``hoodie.*`` options.

        ``set_properties={"hoodie.colFamily.k": "a,b;ts"}`` adds family ``k``; its columns are new
        table columns whose types ``new_columns`` gives (``{"a": pa.float64(), ...}`` or a
        ``pa.Schema``); rows written earlier read null for them. ``unset_properties=
        ["hoodie.colFamily.k"]`` drops family ``k``: its columns leave the schema and its files are
        no longer read. Rules: :mod:`pyhudi.config.alter`. Other ``hoodie.*`` keys may be set or
        unset, except those fixed at creation.

        Returns the ALTER instant (a completed ``deltacommit``, operation ``ALTER_SCHEMA``) when
        the schema changed, else None. Every ALTER first brings ``hoodie.properties`` up to the
        timeline if an earlier ALTER crashed in between (``t.alter()`` alone does only that). A refused ALTER raises :class:`ColumnFamilyError`,
        :class:`ConfigError` or :class:`SchemaError` and leaves the table unchanged.
        """
        warn_misspelled(set_properties)
        instant, self.config = alter_table(self, set_properties, unset_properties, new_columns)
        return instant

    # ----------------------------------------------------------------- writes
    def _write(self, data: Any, operation: str, engine: Any = None, options: Mapping[str, Any] | None = None,
               on_commit: Callable[[Any], None] | None = None) -> str:
        from pyhudi.write.client import WriteClient  # the write path sits above the table handle

        client = WriteClient(self, engine=engine, options=options, on_commit=on_commit)
        self._check_cluster_inline(client.options)  # (refused before the write, not after)
        self.last_write = client.write(data, operation)
        listing = PostCommitListing(self, client.options, client.committed_timeline)
        self._compact_inline(client.options, engine, listing)
        self._cluster_inline(client.options, engine, listing)
        self._clean_after_commit(client.options, listing)
        self._archive_inline(client.options, listing)
        return self.last_write.instant

    def upsert(self, data: Any, *, engine: Any = None, options: Mapping[str, Any] | None = None,
               on_commit: Callable[[Any], None] | None = None) -> str:
        """Insert or update rows (any subset of columns with the record key); returns the instant.

        ``on_commit`` is called with the :class:`~pyhudi.write.client.WriteResult` once the
        instant is completed (write stats: rows per family, files, bytes, elapsed time).
        """
        return self._write(data, "upsert", engine, options, on_commit)

    def insert(self, data: Any, *, engine: Any = None, options: Mapping[str, Any] | None = None,
               on_commit: Callable[[Any], None] | None = None) -> str:
        """Insert rows. Without a bucket index the keys are not looked up (as in Hudi): new file
        groups are written, and a key that already exists is stored twice."""
        return self._write(data, "insert", engine, options, on_commit)

    def bulk_insert(self, data: Any, *, engine: Any = None, options: Mapping[str, Any] | None = None,
                    on_commit: Callable[[Any], None] | None = None) -> str:
        """Like insert; file groups with no data yet get base files instead of log files."""
        return self._write(data, "bulk_insert", engine, options, on_commit)

    def delete(self, keys: Any, *, engine: Any = None, options: Mapping[str, Any] | None = None,
               on_commit: Callable[[Any], None] | None = None) -> str:
        """Delete rows by key: rows holding the record key and partition columns (a table, rows as
        dicts, ...), or — for an unpartitioned table with one record key field — the key values
        themselves (``t.delete(["a", "b"])``)."""
        from pyhudi.write.prepare import key_rows

        keys = key_rows(keys, self.record_key_fields, self.partition_fields, self.name)
        return self._write(keys, "delete", engine, options, on_commit)

    def insert_overwrite(self, data: Any = None, *, partitions: Iterable[str | Mapping[str, Any]] | None = None,
                         engine: Any = None, options: Mapping[str, Any] | None = None,
                         on_commit: Callable[[Any], None] | None = None) -> str:
        """Replace the rows of the partitions present in ``data`` with ``data`` (Hudi's ``insert_overwrite``).

        One ``replacecommit``: ``data`` goes to new file groups and every file group of those
        partitions (all families) is replaced; other partitions keep their rows. ``partitions``
        (partition paths, or ``{field: value}`` mappings) are replaced too even if ``data`` has no
        row for them — an empty ``data`` with ``partitions`` empties them. Columns (families)
        missing from ``data`` read null in the new rows. See :mod:`pyhudi.write.overwrite`.
        """
        from pyhudi.write.overwrite import OVERWRITE_PARTITIONS, partitions_option

        merged = dict(options or {})
        if isinstance(partitions, (str, bytes, Mapping)):  # iterating it would name other partitions
            raise ConfigError(f"partitions must be a list of partition paths or mappings, got {partitions!r} "
                              "(wrap one partition in a list)")
        if partitions is not None:
            merged[OVERWRITE_PARTITIONS.key] = partitions_option(self._partition_path(p) for p in partitions)
        return self._write(self._or_empty(data), "insert_overwrite", engine, merged, on_commit)

    def insert_overwrite_table(self, data: Any = None, *, engine: Any = None, options: Mapping[str, Any] | None = None,
                               on_commit: Callable[[Any], None] | None = None) -> str:
        """Replace every row of the table with ``data`` (Hudi's ``insert_overwrite_table``); empty
        (or None) ``data`` empties the table. One ``replacecommit`` replacing every file group."""
        return self._write(self._or_empty(data), "insert_overwrite_table", engine, options, on_commit)

    def _or_empty(self, data: Any) -> Any:
        return self.schema.empty_table() if data is None else data

    def _partition_path(self, partition: str | Mapping[str, Any]) -> str:
        """A partition path as given, or the path of ``{field: value}`` (every partition field)."""
        from pyhudi.write.overwrite import check_partition_paths
        from pyhudi.write.prepare import partition_paths

        if not self.partition_fields:
            raise ConfigError(f"table {self.name!r} is not partitioned: there are no partitions to overwrite "
                              "(insert_overwrite_table replaces the whole table)")
        if isinstance(partition, str):
            check_partition_paths([partition], self.config)  # "x" of a hive-style table: refused, not a no-op
            return partition
        if not isinstance(partition, Mapping) or set(partition) != set(self.partition_fields):
            raise ConfigError(f"a partition to overwrite is a partition path or a mapping of every partition field "
                              f"({', '.join(self.partition_fields) or 'none: the table is not partitioned'}), "
                              f"got {partition!r}")
        # spelled exactly as the rows' paths are (Arrow's text of the column type: ``true``, not ``True``)
        columns = {}
        for name in self.partition_fields:
            data_type = self.schema.field(name).type
            try:
                columns[name] = pa.array([partition[name]], type=data_type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
                raise ConfigError(f"partition value {partition[name]!r} of field {name!r} is not a {data_type}: "
                                  f"{exc}") from exc
        return partition_paths(pa.table(columns), self.partition_fields, self.config.hive_style_partitioning,
                               partition_layout(self.config))[0].as_py()

    # ----------------------------------------------------------------- reads
    def plan_scan(self, columns: Sequence[str] | None = None, filters: Sequence[tuple] | None = None,
                  as_of: Any = None, query_type: str = "snapshot", begin: Any = None, end: Any = None,
                  with_meta: bool = False, **options: Any):
        """The read tasks of a scan (contract C1, :func:`pyhudi.read.plan.plan_scan`)."""
        from pyhudi.read.plan import plan_scan  # the read path sits above the table handle

        return plan_scan(self, columns, filters, as_of, query_type, begin, end, with_meta, **options)

    def read(self, columns: Sequence[str] | None = None, filters: Sequence[tuple] | None = None,
             as_of: Any = None, with_meta: bool = False, query_type: str = "snapshot", **options: Any) -> pa.Table:
        """Snapshot read into one Arrow table.

        ``as_of``: time travel (instants completed at or before it). The value a write returned
        (its requested time) stands for that write's completion time, so ``read(as_of=t.upsert(...))``
        includes that write and whatever had completed when it completed; ``query_type``:
        ``"snapshot"`` or ``"read_optimized"`` (base files only); ``with_meta``: prepend the five
        ``_hoodie_*`` columns; ``filters``: ``[(column, op, value)]`` ANDed, applied exactly.
        """
        from pyhudi.read.task import READ_BATCH_SIZE

        options.setdefault("batch_size", READ_BATCH_SIZE)
        from pyhudi.read.reader import collected

        return collected(self, self.read, columns, filters, as_of, query_type, with_meta=with_meta, **options)

    def scan(self, columns: Sequence[str] | None = None, filters: Sequence[tuple] | None = None,
             as_of: Any = None, with_meta: bool = False, query_type: str = "snapshot",
             **options: Any) -> pa.RecordBatchReader:
        """Like :meth:`read`, streamed: memory stays bounded by the batch size (``batch_size=``,
        default 16384 rows), not by the table or file-group size."""
        from pyhudi.read.reader import planned

        return planned(self, self.scan, columns, filters, as_of, query_type, with_meta=with_meta, **options).to_reader()

    def read_incremental(self, start: Any, end: Any = None, columns: Sequence[str] | None = None,
                         filters: Sequence[tuple] | None = None, with_meta: bool = False, **options: Any) -> pa.Table:
        """Rows written by instants that completed in ``(start, end]``, in their state as of ``end``
        (default: latest). Rows deleted by ``end`` are not returned. As for ``as_of``, the value a
        write returned stands for its completion time (``start`` = a write's instant: rows changed
        after that write). ``start`` after ``end`` is a ReadError."""
        from pyhudi.read.task import READ_BATCH_SIZE

        options.setdefault("batch_size", READ_BATCH_SIZE)
        from pyhudi.read.reader import collected

        return collected(self, self.read_incremental, columns, filters, None, "incremental", start, end, with_meta,
                         **options)

    def file_groups(self, as_of: Any = None) -> list:
        """Visible file groups (file-system view of the completed timeline, as of ``as_of``)."""
        from pyhudi.fsview.view import FileSystemView
        from pyhudi.read.plan import normalize_time

        as_of = normalize_time(as_of, "as_of", self.config.timezone)
        timeline = self.snapshot_timeline()  # (a reader's, as reads take)
        since = self.history.families_added(timeline) if self.config.column_families else None  # (as reads do)
        return FileSystemView(self.storage, timeline, partition_layout(self.config).depth, as_of,
                              family_since=since).file_groups()

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (used by the CLI)."""
        return {
            "path": self.path,
            "name": self.name,
            "type": self.config.table_type,
            "version": self.config.version,
            "record_key": list(self.record_key_fields),
            "partition_fields": list(self.partition_fields),
            "ordering_field": self.config.ordering_field,
            "merge_mode": self.config.merge_mode,
            "num_buckets": self.num_buckets,
            "column_families": {n: f.property_value for n, f in self.column_families.items()},
        }

    def __str__(self) -> str:
        return json.dumps(self.describe(), indent=2)

