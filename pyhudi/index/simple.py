"""The simple index (Hudi's ``SIMPLE`` index): find the file group holding each record key.

Tables without a bucket index have no function from key to file group, so an upsert or delete
reads the record keys of every file group in the partitions it touches (the
``_hoodie_record_key`` column only) and looks its keys up there, partition by partition,
with ``pyarrow.compute.index_in`` — vectorised, no per-record Python.

The keys of a file group are those of its latest file slice: the latest base file and the data
blocks of the log files after it, less the keys the slice deletes. Log files matter on
merge-on-read tables: inserts padded into a small file group (:mod:`pyhudi.write.small_files`) and
file groups written by other engines (Apache Hudi with a bucket index, Flink) may hold keys only
in log files — or have no base file at all — and an upsert of such a key must update that group,
not insert a duplicate elsewhere. A key deleted in a group is no longer held there: once it has
been written again elsewhere (an insert never looks keys up), an upsert must reach only that copy
— in the deleted group it would bring a row back. The rule, the reader's (:mod:`pyhudi.record_merge`):

- a delete that always wins — every delete under commit-time ordering; under event-time ordering
  one without an ordering value (a plain ``delete``, a row marked ``_hoodie_is_deleted`` with a
  null ordering value: rule 3) — removes its key from the base file and the blocks before it;
  a later data block holds the key again;
- under event-time ordering a delete *with* an ordering value (a marked row with a value, a
  delete-block entry with one, as Apache Hudi writes them) is contested: the slice no longer holds
  its key exactly when a read of the slice shows no row of it — the delete's value was >= the
  stored version's and no later version of the group won over it. The versions of those keys
  alone are merged by the reader's merge (:func:`_merge_contested`); a losing delete leaves its
  key held, and the stored row is updated where it lives. Only slices whose logs hold such
  deletes read ordering values, and the answer is kept by the identities of all their files.

Keys are unique per partition (not globally), as with Hudi's non-global simple index.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyhudi.errors import ConfigError
from pyhudi.fsview.view import BaseFile, FileGroup, FileSlice, LogFile
from pyhudi.logformat.block import DeleteBlock
from pyhudi.logformat.data_block import DataBlock
from pyhudi.logformat.reader import LogReader
from pyhudi.read.damage import decoding
from pyhudi.read.family_reader import file_identity
from pyhudi.read.keys import KeySpec
from pyhudi.read.merge import Versions, merge_versions
from pyhudi.read.metadata_cache import METADATA_CACHE, FileKey
from pyhudi.read.sources import Prefilter, ReadSpec, block_input, filter_versions
from pyhudi.record_merge import commit_time_deletes
from pyhudi.schema import META_FIELDS
from pyhudi.schema import SOFT_DELETE_FIELD as SOFT_DELETE
from pyhudi.storage.fs import Storage

RECORD_KEY = META_FIELDS[2]

DATA, DELETE, CONTESTED = 0, 1, 2
"""What a log file's keys are to the file group (:func:`_log_keys`): keys of a data block, keys
its delete always removes, keys of deletes with an ordering value (they may win or lose)."""


def _base_keys(storage: Storage, relpath: str) -> pa.Array:
    with storage.open_input(relpath) as source:
        parquet = pq.ParquetFile(source)
        if RECORD_KEY not in parquet.schema_arrow.names:
            raise ConfigError(
                f"base file {relpath} has no {RECORD_KEY} column: writing without a bucket index needs "
                "tables that populate meta fields (hoodie.populate.meta.fields=true)"
            )
        return parquet.read(columns=[RECORD_KEY]).column(RECORD_KEY).combine_chunks()


def _log_keys(storage: Storage, relpath: str, event_time: bool = True,
              ordering_field: str | None = None) -> list[tuple[int, pa.Array]]:
    """``(role, record keys)`` of the data and delete blocks of one log file, in order (command
    blocks hold none): :data:`DATA`, :data:`DELETE` or :data:`CONTESTED`.

    A delete whose delete always wins (the merge rule's commit-time-ordering deletes,
    :func:`~pyhudi.record_merge.commit_time_deletes`) is a :data:`DELETE`: every delete under
    commit-time ordering (``event_time=False``), a delete with the default ordering value (what
    pyhudi writes) under event-time ordering. A delete carrying an ordering value (Apache Hudi
    writes them) may win or lose to the stored record under event-time ordering: it is
    :data:`CONTESTED`, decided against the whole file slice (:func:`_merge_contested`) — a fact
    of this file alone is only that the key's delete carries a value.
    """
    keys = []
    with LogReader(storage, relpath) as reader:
        for block in reader:
            if isinstance(block, DeleteBlock):
                deletes = block.deletes()
                default = deletes.column("is_default_ordering").combine_chunks()
                deleted = deletes.column("record_key").combine_chunks().cast(pa.string())
                if event_time and (default.null_count or not pc.all(default).as_py()):
                    always = pa.array(commit_time_deletes(True, default, len(deleted)))
                    keys.append((DELETE, deleted.filter(always)))
                    keys.append((CONTESTED, deleted.filter(pc.invert(always))))
                else:
                    keys.append((DELETE, deleted))
                continue
            if not isinstance(block, DataBlock):
                continue
            if RECORD_KEY not in block.arrow_schema().names:
                raise ConfigError(
                    f"log file {relpath} has a data block without {RECORD_KEY}: writing without a bucket index "
                    "needs tables that populate meta fields (hoodie.populate.meta.fields=true)"
                )
            keys.extend(_data_block_keys(block, event_time, ordering_field))
    return keys


def _data_block_keys(block: DataBlock, event_time: bool,
                     ordering_field: str | None = None) -> list[tuple[int, pa.Array]]:
    """``(role, keys)`` of one data block: its keys (:data:`DATA`), then those of its rows
    marked deleted (a true ``_hoodie_is_deleted``: Hudi's soft delete). A marked row whose delete
    always wins is a :data:`DELETE`, which a reader removes as a delete block's: every one under
    commit-time ordering; under event-time ordering (by ``ordering_field``) those without an
    ordering value — commit-time-ordering deletes, rule 3 (the block lacks the column, or the
    row's value is null). A marked row with an ordering value may lose to the stored record: it
    is :data:`CONTESTED` (as a delete block's entry with a value, :func:`_log_keys`), and so is
    every marked row when the ordering field is not known."""
    names = block.arrow_schema().names
    marked = SOFT_DELETE in names
    ordered = marked and event_time and ordering_field is not None and ordering_field in names
    rows = block.read([RECORD_KEY, SOFT_DELETE, *([ordering_field] if ordered else [])] if marked else [RECORD_KEY])
    record_keys = rows.column(RECORD_KEY).combine_chunks().cast(pa.string())
    out = [(DATA, record_keys)]
    if not marked:
        return out
    flags = rows.column(SOFT_DELETE).combine_chunks().fill_null(False)
    if not pc.any(flags).as_py():
        return out
    if event_time and ordering_field is None:
        return [*out, (CONTESTED, record_keys.filter(flags))]
    if not ordered:
        return [*out, (DELETE, record_keys.filter(flags))]
    valued = rows.column(ordering_field).combine_chunks().is_valid()
    always, contested = pc.and_not(flags, valued), pc.and_(flags, valued)
    return [*out, *((role, record_keys.filter(mask)) for role, mask in ((DELETE, always), (CONTESTED, contested))
                    if pc.any(mask).as_py())]


_KEPT_KEYS = "index:keys"
"""The metadata cache's kind for a data file's record keys as the simple index reads them."""
_ANY_RULE = "any"
"""The keys of a file whose rows mark no delete: the same under every merge rule."""


def _identity(storage: Storage, data_file: BaseFile | LogFile) -> FileKey | None:
    """The file's identity in the metadata cache (None: unknown). A log file the listing gave
    without its size is identified by a ``stat`` of it (local files; remote ones are not)."""
    size, mtime = data_file.size, data_file.mtime_ns
    if (size is None or size < 0) and storage.is_local:
        try:
            stat = os.stat(storage.full_path(data_file.relpath))
        except OSError:
            return None  # (gone: the read names it)
        size, mtime = stat.st_size, stat.st_mtime_ns
    if size is None or size < 0:
        return None
    return file_identity(storage, data_file.relpath, size, mtime)


def _kept(storage: Storage, data_file: BaseFile | LogFile, read: Callable[[], Any], rule: tuple) -> Any:
    """``read()`` — the record keys of ``data_file`` — kept in the process's metadata cache by the
    file's identity (:func:`_identity`; files without one are read each time): a writer that
    upserts again and again reads only the files written since (a table without a bucket index
    looks up every stored key of the partitions it touches)."""
    identity = _identity(storage, data_file)
    if identity is None:
        return read()
    kind = (_KEPT_KEYS, *rule)  # (delete rules change what a log's keys are; a writer's own files: any rule)
    found = METADATA_CACHE.get((_KEPT_KEYS, _ANY_RULE), identity)
    if found is None:
        found = METADATA_CACHE.get(kind, identity)
    if found is None:
        found = read()
        arrays = [found] if isinstance(found, pa.Array) else [keys for _, keys in found]
        _keep(kind, identity, found, 64 + sum(a.get_total_buffer_size() for a in arrays))
    return found


def _keep(kind: tuple, identity: object, value: Any, cost: int) -> None:
    """Keep ``value`` unless one file's keys would take more than an eighth of the cache: the keys
    of a few large files would push out the footers and layouts reads rely on, to no use."""
    if cost <= METADATA_CACHE.max_bytes // 8:
        METADATA_CACHE.put(kind, identity, value, cost)


def remember_file_keys(storage: Storage, relpath: str, size: int, keys: pa.Array | pa.ChunkedArray,
                       log: bool) -> None:
    """Keep the record keys of a data file this writer has just written (``size`` bytes; ``log``:
    a log file of one data block whose rows carry no soft-delete marker, see
    :func:`_data_block_keys`) as :func:`_group_keys` would read them back, so the process's next
    upsert does not read its own files again. Local files only (their identity holds their
    modification time, which a ``stat`` after the write gives as later listings will)."""
    if not storage.is_local or not METADATA_CACHE.max_bytes:
        return
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if keys.type != pa.string():
        keys = keys.cast(pa.string())
    if keys.nbytes > METADATA_CACHE.max_bytes // 8:
        return
    if keys.get_total_buffer_size() > 2 * keys.nbytes + 4096:  # (a slice of the whole write's keys: a copy)
        keys = pa.concat_arrays([keys, pa.array([], pa.string())])
    try:
        stat = os.stat(storage.full_path(relpath))
    except OSError:
        return
    identity = file_identity(storage, relpath, stat.st_size if size < 0 else size, stat.st_mtime_ns)
    value = [(DATA, keys)] if log else keys
    _keep((_KEPT_KEYS, _ANY_RULE), identity, value, 64 + keys.get_total_buffer_size())


def _group_keys(storage: Storage, group: FileGroup, layout_version: int, event_time: bool = True,
                ordering_field: str | None = None) -> pa.Array:
    """Every record key of the latest file slice of ``group``: base file plus log data blocks,
    without the keys a later delete block removed (one vectorised filter per delete block) and
    the keys whose contested deletes won (:func:`_released_keys`)."""
    current = group.latest_slice(None, False, layout_version)
    files = [f.relpath for f in ((current.base_file,) if current.base_file else ())] + [
        lf.relpath for lf in current.log_files]
    with decoding(storage, files):  # damaged bytes: an error naming the file
        base = current.base_file
        rule = (event_time, ordering_field)
        pieces = [_kept(storage, base, lambda: _base_keys(storage, base.relpath).cast(pa.string()), rule)
                  ] if base else []
        contested = []
        for log in current.log_files:
            for role, keys in _kept(storage, log, lambda: _log_keys(storage, log.relpath, event_time,
                                                                     ordering_field), rule):
                if role == DATA:
                    pieces.append(keys)
                elif not len(keys):
                    continue
                elif role == DELETE:
                    pieces = [p.filter(pc.invert(pc.is_in(p, value_set=keys))) for p in pieces]
                else:
                    contested.append(keys)
        if contested:  # (the common case has none: no ordering value is read)
            released = _released_keys(storage, current, pa.concat_arrays(contested), ordering_field)
            if len(released):
                pieces = [p.filter(pc.invert(pc.is_in(p, value_set=released))) for p in pieces]
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return pa.array([], pa.string())
    return pa.concat_arrays(pieces) if len(pieces) > 1 else pieces[0]


_RELEASED_KEYS = "index:released"
"""The metadata cache's kind for the contested keys a file slice no longer holds."""


def _released_keys(storage: Storage, current: FileSlice, contested: pa.Array, ordering_field: str | None) -> pa.Array:
    """The keys among ``contested`` (keys of deletes with an ordering value in the log files of
    file slice ``current``) that the slice holds no live row of: :func:`_merge_contested`.

    The answer depends on every file of the slice — the delete wins or loses against the
    versions before it, and a later version may come after it — so it is kept by the
    identities of all of them: by the slice's last file under a kind naming the others. Upserts
    that leave the slice as it was merge it once."""
    files = [*((current.base_file,) if current.base_file else ()), *current.log_files]
    identities = [_identity(storage, f) for f in files]
    last = identities[-1] if None not in identities else None  # (a file without identity: merged each time)
    kind = (_RELEASED_KEYS, ordering_field, tuple(identities[:-1]))
    found = METADATA_CACHE.get(kind, last)
    if found is None:
        found = _merge_contested(storage, current, pc.unique(contested), ordering_field)
        if last is not None:
            _keep(kind, last, found, 64 + found.get_total_buffer_size())
    return found


def _merge_contested(storage: Storage, current: FileSlice, contested: pa.Array, ordering_field: str | None) -> pa.Array:
    """The keys of ``contested`` without a live row in file slice ``current`` under event-time
    ordering: the versions of those keys alone (base file, then every block in log order, with
    their ordering values and delete flags, built as the reader builds them:
    :class:`~pyhudi.read.sources.ReadSpec`) merged by the reader's merge
    (:func:`~pyhudi.read.merge.merge_versions`, rule 3 of :mod:`pyhudi.record_merge` for the
    deletes). So a delete releases its key exactly when a read of the slice shows no row of it:
    it won over the base file and earlier blocks, and no later version won over it. The ordering
    values are compared as the newest file holding the ordering column types them."""
    spec = ReadSpec([], ordering_field, KeySpec((), True), Prefilter(pa.schema([])))
    batches: list[Versions] = []
    ordering_type = None

    def add(versions: Versions) -> None:
        mask = pc.is_in(versions.keys, value_set=contested)
        if pc.any(mask).as_py():
            batches.append(filter_versions(versions, mask))

    def add_rows(table: pa.Table) -> None:
        nonlocal ordering_type
        if ordering_field is not None and ordering_field in table.column_names:
            ordering_type = table.schema.field(ordering_field).type
        add(spec.versions(table, prefilter=False))

    def wanted(names: Sequence[str]) -> list[str]:
        return [c for c in (RECORD_KEY, ordering_field, SOFT_DELETE) if c is not None and c in names]

    base_rows = 0
    if current.base_file:
        with storage.open_input(current.base_file.relpath) as source:
            parquet = pq.ParquetFile(source)
            add_rows(parquet.read(columns=wanted(parquet.schema_arrow.names)))
        base_rows = len(batches[0].keys) if batches else 0
    for log in current.log_files:
        with LogReader(storage, log.relpath) as reader:
            for block in reader:
                if isinstance(block, DeleteBlock):
                    add(block_input(block, spec, pa.schema([]), log.relpath).versions)
                elif isinstance(block, DataBlock):
                    add_rows(block.read(wanted(block.arrow_schema().names)))
    live = merge_versions(batches, [], True, ordering_type, base_rows=base_rows)
    return contested.filter(pc.invert(pc.is_in(contested, value_set=live.column("_key").combine_chunks())))


def partition_key_locations(storage: Storage, groups: Sequence[FileGroup], layout_version: int = 2,
                            event_time: bool = True, ordering_field: str | None = None) -> tuple[pa.Array, pa.Array]:
    """``(keys, file ids)`` of every record in the latest file slices of ``groups``
    (``event_time``: the table merges by event time, by ``ordering_field``; see :func:`_log_keys`)."""
    groups = [g for g in groups if g.base_files or g.log_files]
    return _locations(groups, _groups_keys(storage, groups, layout_version, event_time, ordering_field))


def _groups_keys(storage: Storage, groups: Sequence[FileGroup], layout_version: int,
                 event_time: bool, ordering_field: str | None) -> list[pa.Array]:
    """The keys of each of ``groups`` (:func:`_group_keys`), read on a few threads at once: one
    pool for all of a write's groups, however many partitions they span."""
    if len(groups) <= 1:
        return [_group_keys(storage, g, layout_version, event_time, ordering_field) for g in groups]
    with ThreadPoolExecutor(max_workers=min(4, len(groups))) as pool:
        return list(pool.map(lambda g: _group_keys(storage, g, layout_version, event_time, ordering_field), groups))


def _locations(groups: Sequence[FileGroup], keys: Sequence[pa.Array]) -> tuple[pa.Array, pa.Array]:
    """``(keys, file ids)`` of ``groups``, given each group's ``keys``."""
    if not groups:
        return pa.array([], pa.string()), pa.array([], pa.string())
    file_ids = [pa.repeat(pa.scalar(g.file_id, pa.string()), len(k)) for g, k in zip(groups, keys)]
    return pa.concat_arrays(list(keys)), pa.concat_arrays(file_ids)


def groups_by_partition(existing: Mapping[tuple[str, str], FileGroup]) -> dict[str, list[FileGroup]]:
    """``{(partition, file id): group}`` regrouped as ``{partition: [groups]}``."""
    out: dict[str, list[FileGroup]] = {}
    for (partition, _), group in existing.items():
        out.setdefault(partition, []).append(group)
    return out


def groups_sharing_keys(stored_keys: pa.Array, stored_ids: pa.Array) -> pa.Array:
    """The file ids of the groups that hold a key another group also holds (an ``insert`` keeps
    duplicates): a write must give all of them to one task, since an update of the shared key
    rewrites each."""
    if len(stored_keys) < 2:
        return pa.array([], pa.string())
    pairs = pa.table({"k": stored_keys, "f": stored_ids}).group_by(["k", "f"]).aggregate([])
    holders = pairs.group_by("k").aggregate([("f", "count")])
    shared = holders.filter(pc.greater(holders.column("f_count"), 1)).column("k")
    if len(shared) == 0:
        return pa.array([], pa.string())
    return pc.unique(pairs.filter(pc.is_in(pairs.column("k"), value_set=shared)).column("f").combine_chunks())


def tag_locations(
    storage: Storage,
    existing: Mapping[tuple[str, str], FileGroup],
    partition_runs: Sequence[tuple[str, int, int]],
    keys: pa.ChunkedArray | pa.Array,
    layout_version: int = 2,
    event_time: bool = True,
    ordering_field: str | None = None,
) -> tuple[pa.Array, tuple[np.ndarray, pa.Array]]:
    """The file id holding each key (null: not in the table), and the other holders.

    ``keys`` are sorted by partition; ``partition_runs`` gives ``(partition, start, length)`` of
    each partition's slice of them. A key may be stored in several file groups of its partition
    (inserts keep duplicates, ``hoodie.merge.allow.duplicate.on.inserts``); as in Hudi's simple
    index, an update or delete must reach every one, so the second result lists the extra
    holders as ``(positions in keys, file ids)``.
    """
    by_partition = groups_by_partition(existing)
    keys = pa.chunked_array([keys]) if isinstance(keys, pa.Array) else keys
    touched = {partition: [g for g in by_partition.get(partition, []) if g.base_files or g.log_files]
               for partition, _, _ in partition_runs}
    every_group = [g for groups in touched.values() for g in groups]
    group_keys = dict(zip(map(id, every_group), _groups_keys(storage, every_group, layout_version, event_time,
                                                             ordering_field)))
    pieces = []
    extra_positions: list[np.ndarray] = []
    extra_ids: list[pa.Array] = []
    for partition, start, length in partition_runs:
        wanted = keys.slice(start, length)
        groups = touched[partition]
        stored_keys, stored_ids = _locations(groups, [group_keys[id(g)] for g in groups])
        if len(stored_keys) == 0:
            pieces.append(pa.nulls(length, pa.string()))
            continue
        first, copies = _stored_copies(wanted, stored_keys)
        pieces.append(stored_ids.take(pa.array(first, mask=first < 0)))
        if len(groups) < 2:
            continue  # (one file group: no other holder, even of a key it holds twice)
        rows, ids = _other_holders(first, copies, stored_ids)
        if len(rows):
            extra_positions.append(rows + start)
            extra_ids.append(ids)
    if not pieces:
        return pa.array([], pa.string()), (np.zeros(0, dtype=np.int64), pa.array([], pa.string()))
    extra = (np.concatenate(extra_positions) if extra_positions else np.zeros(0, dtype=np.int64),
             pa.concat_arrays(extra_ids) if extra_ids else pa.array([], pa.string()))
    return pa.concat_arrays(pieces), extra


def _stored_copies(wanted: pa.ChunkedArray, stored_keys: pa.Array) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Where ``wanted`` keys are stored: per wanted row, the position in ``stored_keys`` of the
    key's first stored copy (-1: not stored); and every stored copy of a wanted key, as
    ``(stored positions, wanted rows)`` (the first row of each distinct wanted key).

    The stored keys are probed against a hash table of the wanted ones — the write's few keys,
    not the partition's many: ``index_in(wanted, value_set=stored)`` would hash every stored
    key on every upsert (800k keys: ~155 ms, against ~12 ms this way), and counting the stored
    keys to find the repeated ones (``value_counts``, for :func:`_other_holders`) as much again."""
    wanted = wanted.combine_chunks() if isinstance(wanted, pa.ChunkedArray) else wanted
    owner = np.asarray(pc.index_in(stored_keys, value_set=wanted).fill_null(-1), dtype=np.int64)
    stored_at = np.flatnonzero(owner >= 0)
    rows = owner[stored_at]  # (the first wanted row of each key: index_in finds the first)
    first = np.full(len(wanted), -1, dtype=np.int64)
    distinct, earliest = np.unique(rows, return_index=True)  # (stored_at ascends: the first copy)
    first[distinct] = stored_at[earliest]
    if len(distinct) and len(wanted) > 1:  # a key wanted twice: its later rows find what its first finds
        canonical = np.asarray(pc.index_in(wanted, value_set=wanted), dtype=np.int64)
        first = first[canonical]
    return first, (stored_at, rows)


def _other_holders(first: np.ndarray, copies: tuple[np.ndarray, np.ndarray],
                   stored_ids: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """``(positions in wanted, file ids)`` of stored copies other than the first found one
    (``first``, ``copies``: :func:`_stored_copies`)."""
    stored_at, rows = copies
    if len(stored_at) == len(np.unique(rows)):  # (each wanted key stored once: the usual case)
        return np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    ids = stored_ids.take(pa.array(stored_at))
    first_ids = stored_ids.take(pa.array(first[rows]))
    # other file groups only (a group holding two copies is one holder: its merge meets both),
    # each (row, file group) once
    other = np.asarray(pc.not_equal(ids, first_ids))
    pairs = pa.table({"row": rows[other], "id": ids.filter(pa.array(other))})
    pairs = pairs.group_by(["row", "id"], use_threads=False).aggregate([])
    return np.asarray(pairs.column("row"), dtype=np.int64), pairs.column("id").combine_chunks()
