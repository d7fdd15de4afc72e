"""Write tasks: what one engine task does to one file group (all its families) at one instant.

A :class:`FileGroupWriteTask` is a plain picklable object — the unit the local and Spark
engines distribute. It writes, for each family present, ONE new log file named after the
writing instant (``.<fileId>_<instant>[_<cf>].log.1_<writeToken>``) holding one Parquet data
block (meta columns, key, partition and family columns; ``IS_PARTIAL`` when the family is only
partly present), or a delete block per family, or new base files (bulk insert into an empty
file group). A marker is created before every data file, so a failed task can be rolled back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.logformat import DeleteBlock, ParquetDataBlock, data_block_header, default_parquet_options, write_log_file
from pyhudi.schema import META_FIELDS, with_meta_fields
from pyhudi.storage.fs import Storage
from pyhudi.storage.naming import BaseFileName, LogFileName, WriteToken
from pyhudi.write.markers import IO_APPEND, IO_CREATE, create_marker

KIND_APPEND = "append"  # log data blocks (upsert / insert on merge-on-read)
KIND_DELETE = "delete"  # delete blocks to every family of the file group
KIND_CREATE = "create"  # new base files (bulk insert into an empty file group)


@dataclass
class FamilyPayload:
    """The rows for one family of one file group: sorted by record key, one row per key.

    ``data`` holds ``_hoodie_record_key`` plus the family's file columns present in the input
    (key, partition and family columns). ``is_partial`` marks a family whose columns were only
    partly given: the block's schema is then the present columns and the header says IS_PARTIAL.
    """

    family: str
    data: pa.Table
    is_partial: bool = False


@dataclass
class WriteStatus:
    """What a task wrote to one (file group, family): the raw material of a write stat."""

    partition_path: str
    file_id: str
    family: str
    file_name: str
    kind: str
    num_records: int
    num_deletes: int
    bytes_written: int
    base_file: str
    prev_commit: str
    is_new_file_group: bool
    elapsed_ms: int
    min_key: str | None = None
    max_key: str | None = None

    @property
    def relpath(self) -> str:
        return f"{self.partition_path}/{self.file_name}" if self.partition_path else self.file_name


@dataclass
class FileGroupWriteTask:
    """Write one file group's families at ``instant`` (see module docstring)."""

    base_uri: str
    instant: str
    table_name: str
    partition_path: str
    file_id: str
    kind: str
    write_token: str
    payloads: list[FamilyPayload] = field(default_factory=list)
    delete_keys: pa.Table | None = None  # record_key (+ ordering_value) for KIND_DELETE
    delete_families: tuple[str, ...] = ()
    base_file: str = ""  # the file slice's current base file, for write stats
    prev_commit: str = "null"
    is_new_file_group: bool = False
    parquet_options: dict[str, Any] = field(default_factory=dict)

    def run(self) -> list[WriteStatus]:
        storage = Storage(self.base_uri)
        if self.kind == KIND_DELETE:
            return [self._write_deletes(storage, family) for family in self.delete_families]
        return [self._write_family(storage, payload) for payload in self.payloads]

    # ------------------------------------------------------------------------ data
    def _with_meta(self, payload: FamilyPayload, file_name_value: str) -> pa.Table:
        data = payload.data
        n = data.num_rows
        task_partition = WriteToken.parse(self.write_token).task_partition
        seq = pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string())
        seqno = pc.binary_join_element_wise(f"{self.instant}_{task_partition}_", seq, "")
        keys = data.column(META_FIELDS[2])
        meta = [
            pa.repeat(pa.scalar(self.instant, pa.string()), n),
            seqno,
            keys,
            pa.repeat(pa.scalar(self.partition_path, pa.string()), n),
            pa.repeat(pa.scalar(file_name_value, pa.string()), n),
        ]
        rest = [c for c in data.column_names if c != META_FIELDS[2]]
        arrays = [*meta, *(data.column(c) for c in rest)]
        schema = with_meta_fields(data.select(rest).schema)
        return pa.Table.from_arrays(arrays, schema=schema)

    def _write_family(self, storage: Storage, payload: FamilyPayload) -> WriteStatus:
        started = time.perf_counter()
        family = payload.family or None
        if self.kind == KIND_CREATE:
            name = BaseFileName(self.file_id, self.write_token, self.instant, family).name
            table = self._with_meta(payload, name)
            create_marker(storage, self.instant, self.partition_path, name, IO_CREATE)
            relpath = f"{self.partition_path}/{name}" if self.partition_path else name
            options = default_parquet_options(table.schema)
            options.update(self.parquet_options)
            with storage.open_output(relpath) as sink:
                pq.write_table(table, sink, **options)
            size = storage.size(relpath)
        else:
            name = LogFileName(self.file_id, self.instant, 1, self.write_token, family).name
            table = self._with_meta(payload, self.file_id)
            header = data_block_header(self.instant, table.schema, table_name=self.table_name, is_partial=payload.is_partial)
            block = ParquetDataBlock(table, header, table_name=self.table_name, **self.parquet_options)
            create_marker(storage, self.instant, self.partition_path, name, IO_APPEND)
            relpath = f"{self.partition_path}/{name}" if self.partition_path else name
            size = write_log_file(storage, relpath, [block])
        keys = payload.data.column(META_FIELDS[2])
        return self._status(payload.family, name, table.num_rows, 0, size, started, keys)

    def _write_deletes(self, storage: Storage, family: str) -> WriteStatus:
        started = time.perf_counter()
        assert self.delete_keys is not None
        name = LogFileName(self.file_id, self.instant, 1, self.write_token, family or None).name
        keys = self.delete_keys.column("record_key").combine_chunks()
        ordering = None
        if "ordering_value" in self.delete_keys.column_names:
            ordering = self.delete_keys.column("ordering_value").combine_chunks()
        block = DeleteBlock.from_keys(
            keys, self.instant, partition_paths=self.partition_path, ordering_values=ordering
        )
        create_marker(storage, self.instant, self.partition_path, name, IO_APPEND)
        relpath = f"{self.partition_path}/{name}" if self.partition_path else name
        size = write_log_file(storage, relpath, [block])
        return self._status(family, name, 0, len(keys), size, started, keys)

    def _status(self, family, name, records, deletes, size, started, keys) -> WriteStatus:
        min_max = pc.min_max(keys) if len(keys) else None
        return WriteStatus(
            partition_path=self.partition_path,
            file_id=self.file_id,
            family=family,
            file_name=name,
            kind=self.kind,
            num_records=records,
            num_deletes=deletes,
            bytes_written=size,
            base_file=self.base_file,
            prev_commit=self.prev_commit,
            is_new_file_group=self.is_new_file_group,
            elapsed_ms=int((time.perf_counter() - started) * 1000),
            min_key=min_max["min"].as_py() if min_max is not None else None,
            max_key=min_max["max"].as_py() if min_max is not None else None,
        )
