"""Damage is never silent: files a completed commit wrote must be there, whole and decodable.

A reader that skips what it cannot read returns rows of no committed snapshot: a missing base
file makes its file group fall back to an older version, a log file cut short or with a broken
block makes its rows revert to older values. Hudi's readers tolerate one kind of damage on
purpose: a block torn by a writer that died mid-append is skipped, because no completed commit
wrote it (the ``table_corrupt_tail_block`` fixture). Everything a completed commit wrote is
known from its write stats (path, bytes written, log offset), so the two cases can be told apart:

- a file a completed, visible commit wrote (its file group not replaced) that is absent from
  the listing → :class:`~pyhudi.errors.CorruptFileError` naming the file and the commit;
- a log file shorter than what completed commits wrote to it → CorruptFileError (a base file
  cut short or grown fails to decode: its Parquet footer is at its end, see below; its size is
  not compared, so a base file rewritten whole by a tool still reads);
- a block inside the bytes a completed commit wrote whose header names another instant (a
  damaged header would make it look like an uncommitted write's, hiding its rows) → likewise;
- a corrupt block of a log file inside the bytes a completed commit wrote → CorruptFileError,
  unless ``hoodie.pyhudi.read.corrupt.blocks.skip`` is true: then a warning names the file and
  the block and the block is skipped (Hudi's behaviour for every corrupt block); a corrupt block
  beyond what any completed commit wrote (a torn tail) is skipped silently, as Hudi does;
- bytes that fail to decode (Arrow, Parquet thrift, Avro, UTF-8 errors) → CorruptFileError
  naming the file that does not decode on its own (:func:`blame`).

The write stats of a completed instant never change, so each instant's are decoded once per
process; the merged map of a snapshot is cached by the snapshot's instants.
"""

from __future__ import annotations

import struct
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from pyhudi.errors import CorruptFileError, HudiError, LogFormatError, StaleSnapshotError
from pyhudi.fsview.view import FileGroup, FileSystemView, LogFile
from pyhudi.timeline.timeline import COMMIT_ACTIONS
from pyhudi.config.read import SKIP_CORRUPT_BLOCKS  # noqa: F401 (declared there)
from pyhudi.value import Value
from pyhudi.storage.parquet import parquet_file


DECODE_ERRORS = (pa.ArrowException, OSError, ValueError, EOFError, struct.error, IndexError, KeyError, TypeError)
"""What decoding damaged bytes raises (Arrow, Parquet thrift, fastavro, UTF-8, struct)."""


class CommittedFile(Value):
    """A data file as completed commits recorded it: byte ranges written, and by which instant."""

    partition: str
    file_id: str
    is_log: bool
    ranges: tuple[tuple[int, int, str], ...]
    """``(start, end, instant)``: bytes ``[start, end)`` were written by commit ``instant``."""
    instant: str

    def __init__(self, partition: str, file_id: str, is_log: bool, ranges: tuple[tuple[int, int, str], ...],
                 instant: str) -> None:
        self._set(partition=partition, file_id=file_id, is_log=is_log, ranges=ranges, instant=instant)

    @property
    def end(self) -> int:
        return max((r[1] for r in self.ranges), default=0)


_LOCK = threading.Lock()
_BY_INSTANT: OrderedDict[tuple, tuple] = OrderedDict()
_BY_SNAPSHOT: OrderedDict[tuple, dict[str, CommittedFile]] = OrderedDict()
_MAX_INSTANTS, _MAX_SNAPSHOTS = 4096, 16


def _cached(cache: OrderedDict, key: tuple, limit: int, compute: Callable[[], Any]) -> Any:
    """``compute()``, kept under ``key`` (least recently used dropped first; None is not kept)."""
    with _LOCK:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    value = compute()
    if value is None:
        return None
    with _LOCK:
        cache[key] = value
        while len(cache) > limit:
            cache.popitem(last=False)
    return value


def _written_by(timeline: Any, instant: Any) -> tuple | None:
    """``(relpath, partition, file_id, is_log, start, end)`` per write stat of ``instant``;
    None when its metadata cannot be decoded (nothing is checked against it then). Read from the
    plain record (``Timeline.read_record``): the write stat models cost a cold read more to load
    than these few fields cost to pick (issue 15)."""
    try:
        record = timeline.read_record(instant) or {}
    except (HudiError, OSError, ValueError):
        return None
    stats = record.get("partitionToWriteStats") if isinstance(record, dict) else None
    if not isinstance(stats, dict):
        return None if stats is not None else ()
    out = []
    for partition, entries in stats.items():
        if not isinstance(entries, list) or not all(isinstance(stat, dict) for stat in entries):
            return None
        for stat in entries:
            path, file_id = stat.get("path"), stat.get("fileId")
            if not path or not file_id:
                continue
            name = path.rpartition("/")[2]
            is_log = name.startswith(".") and ".log." in name
            start = (stat.get("logOffset") or 0) if is_log else 0
            end = max(stat.get("fileSizeInBytes") or 0, start + (stat.get("totalWriteBytes") or 0) if is_log else 0)
            out.append((path, partition or "", file_id, is_log, start, end))
    return tuple(out)


def _cleaned_by(timeline: Any, instant: Any) -> tuple[str, ...]:
    """Relative paths a completed clean deleted (their commits may still be on the timeline)."""
    try:
        metadata = timeline.read_metadata(instant)
    except (HudiError, OSError, ValueError):
        return ()
    out = []
    for partition, meta in (getattr(metadata, "partition_metadata", None) or {}).items():
        for name in getattr(meta, "success_delete_files", None) or ():
            name = name.rpartition("/")[2]
            out.append(f"{partition}/{name}" if partition else name)
    return tuple(out)


def _planned_by(timeline: Any, instant: Any) -> tuple[str, ...]:
    """Relative paths a pending clean's plan deletes (some may be gone already: it is running,
    or its executor died mid-way and the next clean finishes it)."""
    try:
        plan = timeline.read_metadata(instant.as_requested())
    except (HudiError, OSError, ValueError):
        return ()
    files = plan.files_to_delete() if hasattr(plan, "files_to_delete") else {}
    return tuple(f"{partition}/{name.rpartition('/')[2]}" if partition else name.rpartition("/")[2]
                 for partition, names in files.items() for name in names)


def written_partitions(view: FileSystemView) -> set[str]:
    """The partitions completed commits visible in ``view`` wrote files to (and no clean removed
    every file of): with the listed folders, every partition a read may need to look at."""
    return {f.partition for f in committed_files(view).values()}


def committed_files(view: FileSystemView) -> dict[str, CommittedFile]:
    """Relative path → what the completed commits visible in ``view`` wrote to it (files of
    replaced file groups, files any completed clean deleted and files a pending clean's plan
    deletes are left out)."""
    timeline, base = view.timeline, view.storage.base_uri
    # (cleans count whenever they completed, and pending ones by their plans — a running clean
    # has deleted some of its files already: time travel to a snapshot that needs what one
    # deletes is refused before this check, :func:`pyhudi.read.retention.check_time_travel`)
    visible = [i for i in timeline.completed()
               if i.requested_time in view.completion or str(i.action) == "clean"]
    running = [i for i in timeline.pending() if str(i.action) == "clean"]
    snapshot = (base, tuple((i.requested_time, str(i.action), i.completion_time) for i in visible),
                tuple(i.requested_time for i in running))

    def compute() -> dict[str, CommittedFile]:
        files: dict[str, CommittedFile] = {}
        cleaned: set[str] = set()
        for instant in visible:
            key = (base, instant.requested_time, str(instant.action), instant.completion_time)
            if str(instant.action) == "clean":
                cleaned.update(_cached(_BY_INSTANT, key, _MAX_INSTANTS, lambda: _cleaned_by(timeline, instant)))
                continue
            if instant.action not in COMMIT_ACTIONS:
                continue
            written = _cached(_BY_INSTANT, key, _MAX_INSTANTS, lambda: _written_by(timeline, instant))
            for relpath, partition, file_id, is_log, start, end in written or ():
                known = files.get(relpath)
                ranges = (*(known.ranges if known else ()), (start, end, instant.requested_time))
                files[relpath] = CommittedFile(partition, file_id, is_log, ranges, instant.requested_time)
        for instant in running:
            key = (base, instant.requested_time, "clean plan")
            cleaned.update(_cached(_BY_INSTANT, key, _MAX_INSTANTS, lambda: _planned_by(timeline, instant)))
        for relpath in cleaned:
            files.pop(relpath, None)
        return {p: f for p, f in files.items() if (f.partition, f.file_id) not in view.replaced}

    return _cached(_BY_SNAPSHOT, snapshot, _MAX_SNAPSHOTS, compute)


def check_written_files(view: FileSystemView, groups: list[FileGroup],
                        partitions: set[str] | None = None) -> list[FileGroup]:
    """``groups`` (the view's listing; of ``partitions`` only, when given) checked against what
    completed commits wrote to them (in those partitions).

    Each log file carries the byte ranges completed commits wrote to it (checked as it is read,
    :func:`check_log`); a file group lacking a file a commit wrote records it in ``missing``,
    and a file group whose files are all gone is added with only its ``missing`` files. The
    plan raises for a group it reads (:func:`missing_files_error`), so damage in a partition a
    filter prunes does not fail the read.
    """
    committed = committed_files(view)
    if partitions is not None:
        committed = {relpath: f for relpath, f in committed.items() if f.partition in partitions}
    if not committed:
        return groups
    by_key = {(g.partition_path, g.file_id): g for g in groups}
    listed = {f.relpath for g in groups for f in (*g.base_files, *g.log_files)}
    missing: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for relpath, written in committed.items():
        if relpath not in listed:
            missing.setdefault((written.partition, written.file_id), []).append((relpath, written.instant))
    for key, files in missing.items():
        group = by_key.get(key)
        if group is None:
            group = by_key[key] = FileGroup(key[0], key[1], compactions=view.compactions)
            groups.append(group)
        group.missing = tuple(sorted(files))
    for group in groups:
        if any(lf.relpath in committed for lf in group.log_files):
            group.log_files = [_with_ranges(lf, committed.get(lf.relpath)) for lf in group.log_files]
    if missing:
        groups.sort(key=lambda g: (g.partition_path, g.file_id))
    return groups


def missing_files_error(storage: Any, group: FileGroup, table: Any = None,
                        listed: Any = None) -> CorruptFileError | StaleSnapshotError:
    """The error for a file group whose files are missing: damage, unless a clean that completed
    after the read's ``listed`` timeline deleted them (the table moved on under the read: a
    :class:`StaleSnapshotError` naming the clean, retried on a fresh listing by ``Table.read``)."""
    relpath, instant = group.missing[0]
    more = f" (and {len(group.missing) - 1} more of its file group)" if len(group.missing) > 1 else ""
    cleans = _cleans_since(table, listed) if table is not None and listed is not None else []
    if cleans:
        clean, done = cleans[0]
        when = "completed after this read listed the timeline" if done else \
            "began after this read listed the timeline (it is still running)"
        return StaleSnapshotError(
            f"data file {relpath} of the table at {storage.base_uri} is gone: clean {clean} {when} and deleted files "
            f"that listing still counts{more}; plan the read again on a fresh listing (retry it)")
    return CorruptFileError(f"data file {relpath} of the table at {storage.base_uri} is missing: commit {instant} "
                            f"wrote it and it was neither replaced nor cleaned as of the snapshot read{more}")


def _cleans_since(table: Any, listed: Any) -> list[tuple[str, bool]]:
    """Cleans that completed after ``listed`` was taken (a fresh listing, archived ones too:
    completion times are issued in order, so theirs are later than every listed one), and cleans
    still running that ``listed`` does not show (planned after it: they may have deleted files);
    ``(instant, completed)`` each."""
    latest = max((i.sort_time for i in listed.completed()), default="")
    known = {i.requested_time for i in listed.instants if str(i.action) == "clean"}
    fresh = table.active_timeline()
    done = fresh.completed_with_archived() if hasattr(fresh, "completed_with_archived") else fresh.completed()
    since = [(i.requested_time, True) for i in done if str(i.action) == "clean" and i.sort_time > latest]
    return since + [(i.requested_time, False) for i in fresh.pending() if str(i.action) == "clean"
                    and i.requested_time not in known]


def _with_ranges(log: LogFile, written: CommittedFile | None) -> LogFile:
    return log if written is None or not written.end else log.with_committed(written.ranges)


def skip_corrupt_blocks(options: Mapping[str, Any] | None) -> bool:
    if not options:
        return False
    return bool(SKIP_CORRUPT_BLOCKS.get({k: v for k, v in options.items() if v is not None}))


def check_log(log: LogFile, blocks: Iterable[Any], corrupt: Iterable[Any], skip: bool, base_uri: str) -> None:
    """A log file shorter than what completed commits wrote to it, a corrupt block inside those
    bytes, or a block there that names another instant than the commit that wrote it (a damaged
    header would hide its rows as an uncommitted write's): an error, or with ``skip`` a warning
    naming the file and the block."""
    where = f"log file {log.relpath} of the table at {base_uri}"
    end = max((r[1] for r in log.committed), default=0)
    if log.size < end:
        _report(skip, f"{where} is {log.size} bytes, but completed commits wrote {end}: it was cut short",
                "to read the blocks left", "reading the blocks left")
    for block in corrupt:
        if _writers(log, block):
            _report(skip, f"{where} has a corrupt block at offset {block.offset} ({block.size} bytes) inside what a "
                          "completed commit wrote", "to skip it", "skipped")
        # else: a torn block no completed commit wrote (a failed writer's tail): Hudi skips it
    for block in blocks:
        instant = getattr(block, "instant_time", None)
        writers = _writers(log, block)
        if instant is not None and len(writers) == 1 and instant not in writers:
            _report(skip, f"{where} has a block at offset {block.offset} naming instant {instant}, but commit "
                          f"{writers.pop()} wrote those bytes: its header is damaged", "to read it as it says",
                    "read as it says")


def _writers(log: LogFile, block: Any) -> set[str]:
    """The completed commits whose recorded bytes of ``log`` overlap ``block``."""
    start, stop = block.offset, block.offset + block.size
    return {instant for r_start, r_end, instant in log.committed if start < r_end and r_start < stop}


def _report(skip: bool, message: str, hint: str, skipped: str) -> None:
    """Raise ``message``, or with the skip option warn that the reader went on (``skipped``)."""
    if not skip:
        raise CorruptFileError(f"{message} (set {SKIP_CORRUPT_BLOCKS.key}=true {hint})")
    warnings.warn(f"{message}; {skipped} ({SKIP_CORRUPT_BLOCKS.key})", stacklevel=3)


def is_decode_error(exc: BaseException) -> bool:
    """Whether ``exc`` may come from damaged bytes (not a pyhudi refusal of the request)."""
    if isinstance(exc, HudiError):
        return isinstance(exc, LogFormatError) and not isinstance(exc, CorruptFileError)
    return isinstance(exc, DECODE_ERRORS)


def blame(storage: Any, relpaths: Iterable[str], exc: BaseException) -> CorruptFileError | None:
    """The error naming the first of ``relpaths`` that does not decode on its own, or None.

    Runs only after a read failed with a decode error: every block and row group of the files is
    decoded again, one file at a time, to find the damaged one.
    """
    for relpath in relpaths:
        try:
            _decode_whole(storage, relpath)
        except Exception as failed:  # noqa: BLE001 - any failure to decode names the file
            if isinstance(failed, HudiError) and not is_decode_error(failed):
                continue
            return CorruptFileError(f"data file {relpath} of the table at {storage.base_uri} is corrupt: "
                                    f"{type(failed).__name__}: {failed}")
    return None


@contextmanager
def decoding(storage: Any, relpaths: Iterable[str]) -> Iterator[None]:
    """Around code that decodes ``relpaths`` outside a read task (a writer's index lookup or
    copy-on-write merge): a decode error becomes a CorruptFileError naming the damaged file."""
    try:
        yield
    except Exception as exc:
        if is_decode_error(exc):
            error = blame(storage, list(relpaths), exc)
            if error is not None:
                raise error from exc
        raise


def _decode_whole(storage: Any, relpath: str) -> None:
    from pyhudi.logformat import DataBlock, DeleteBlock, LogReader

    name = relpath.rpartition("/")[2]
    if name.startswith(".") and ".log." in name:
        with LogReader(storage, relpath) as reader:
            for block in reader:
                if isinstance(block, DataBlock):
                    block.read()
                elif isinstance(block, DeleteBlock):
                    block.deletes()
        return
    with storage.open_input(relpath) as source:
        parquet_file(source).read()
