"""File-system view: timeline + listing → file groups → the latest file slice of every family.

Rules (table version 8, RFC-66 completion-time slicing; DESIGN §4 for families):

- a data file is visible only if its instant is a completed instant (base: the commit time in
  its name; log: the writing deltacommit's requested time in its name), and, for time travel,
  only if that instant completed at or before ``as_of``;
- file groups replaced by a completed replacecommit (clustering, insert overwrite) are hidden;
  files written by a compaction or clustering that has not completed are invisible (its
  instant is pending), so until it completes readers use the previous base file plus every
  log completed after it, which is what the pending compaction will merge;
- per file group and family, the base candidates are the family's own base files plus full-row
  base files (no suffix), and its logs are its own plus full-row log files (no suffix: inserts
  into new file groups), full-row files only if newer than the ALTER that added the family; a
  log file belongs to the slice of the greatest base instant lower than the log's completion
  time; log files in a slice are ordered by completion time, then version, then write token;
- table version 6 (layout 1) names logs after the base instant of their slice and checks
  instants per block, so there a log joins the slice whose base instant equals the log's
  instant, and slices are ordered by base instant, then version, then write token. Logs written
  while a compaction is pending are named after the compaction's instant: they open the new
  slice, which has no base file until the compaction completes. As Hudi 0.x does
  (``filterCompletedAndCompactionInstants``, ``mergeCompactionPendingFileSlices``), such a log is
  visible (its blocks are checked one by one) and its slice merges into the previous one: the
  reader applies the previous base, its logs, then the logs named after the compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from pyhudi.errors import FileNameError, HudiError
from pyhudi.storage.fs import FileInfo, Storage
from pyhudi.storage.naming import PARTITION_METAFILE, BaseFileName, LogFileName, parse_data_file_name
from pyhudi.timeline.archive_times import ArchivedCompletions
from pyhudi.timeline.timeline import Timeline
from pyhudi.value import Record, Value

FULL_ROW = None
"""Family key of full-row base files (no suffix) in a family table."""


@lru_cache(maxsize=1 << 16)
def _parsed_name(name: str) -> BaseFileName | LogFileName:
    """A data file name parsed once per process (names are immutable values; every scan lists them)."""
    return parse_data_file_name(name)


class _DataFile(Value):
    """A visible data file: where it is, its parsed name, size, and its instant's completion
    (``mtime_ns``: the listing's modification time, part of the file's identity for caches)."""

    partition_path: str
    name: BaseFileName | LogFileName
    size: int
    completion_time: str
    mtime_ns: int | None = None
    committed: tuple[tuple[int, int, str], ...] = ()
    """``(start, end, instant)``: bytes completed commits wrote to the file (their write stats;
    :mod:`pyhudi.read.damage`)."""

    def __init__(self, partition_path: str, name: BaseFileName | LogFileName, size: int, completion_time: str,
                 mtime_ns: int | None = None, committed: tuple[tuple[int, int, str], ...] = ()) -> None:
        self._set(partition_path=partition_path, name=name, size=size, completion_time=completion_time,
                  mtime_ns=mtime_ns, committed=committed)

    def with_committed(self, committed: tuple[tuple[int, int, str], ...]) -> "_DataFile":
        """The same file with the byte ranges completed commits wrote to it."""
        return self.__class__(self.partition_path, self.name, self.size, self.completion_time, self.mtime_ns,
                              committed)

    @property
    def relpath(self) -> str:
        # computed once per file, kept in the instance (not functools.cached_property: in Python
        # 3.11 it takes one lock for every instance, which a read's threads queue on)
        relpath = self.__dict__.get("_relpath")
        if relpath is None:
            relpath = self.__dict__["_relpath"] = (f"{self.partition_path}/{self.name.name}" if self.partition_path
                                                   else self.name.name)
        return relpath

    @property
    def instant(self) -> str:
        return self.name.instant


class BaseFile(_DataFile):
    """A base (Parquet) file of a file group."""


class LogFile(_DataFile):
    """A log file of a file group (named after the writing instant in table version 8, after
    its slice's base instant in version 6)."""

    def sort_key(self) -> tuple:
        return (self.completion_time, self.name.version, self.name.write_token or "")

    def base_instant_sort_key(self) -> tuple:
        """Table version 6 order (Hudi 0.x ``LogFileComparator``): base instant, version, write token."""
        return (self.name.instant, self.name.version, self.name.write_token or "")


class FileSlice(Record):
    """One family's view of a file group: a base file (own or full-row) and the logs after it."""

    partition_path: str
    file_id: str
    family: str | None
    base_file: BaseFile | None
    log_files: list[LogFile]

    def __init__(self, partition_path: str, file_id: str, family: str | None, base_file: BaseFile | None,
                 log_files: list[LogFile] | None = None) -> None:
        self.partition_path = partition_path
        self.file_id = file_id
        self.family = family
        self.base_file = base_file
        self.log_files = [] if log_files is None else log_files

    @property
    def base_instant(self) -> str | None:
        return self.base_file.instant if self.base_file else None

    @property
    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files


class FileGroup(Record):
    partition_path: str
    file_id: str
    base_files: list[BaseFile]
    log_files: list[LogFile]
    compactions: frozenset[str]
    """Instants of compactions not completed as of the view (table version 6: slices to merge)."""
    family_since: Mapping[str, str]
    """When an ALTER added a family: full-row base files from before then are not its base."""
    missing: tuple[tuple[str, str], ...]
    """``(path, instant)`` of files completed commits wrote to the group that storage lacks
    (:mod:`pyhudi.read.damage`: reading the group is an error)."""

    def __init__(self, partition_path: str, file_id: str, base_files: list[BaseFile] | None = None,
                 log_files: list[LogFile] | None = None, compactions: frozenset[str] = frozenset(),
                 family_since: Mapping[str, str] | None = None, missing: tuple[tuple[str, str], ...] = ()) -> None:
        self.partition_path = partition_path
        self.file_id = file_id
        self.base_files = [] if base_files is None else base_files
        self.log_files = [] if log_files is None else log_files
        self.compactions = compactions
        self.family_since = {} if family_since is None else family_since
        self.missing = missing

    def families(self) -> set[str | None]:
        return {b.name.family for b in self.base_files} | {lf.name.family for lf in self.log_files}

    def latest_slice(self, family: str | None, family_table: bool, layout_version: int = 2) -> FileSlice:
        """The latest slice of ``family`` (None = default family / full-row files)."""
        bases = self.family_bases(family, family_table)
        base = bases[-1] if bases else None
        logs = self.family_logs(family, family_table)
        if base is None:
            chosen = logs
        elif layout_version == 1:  # the base's own logs, then those of a pending compaction's slice
            chosen = [lf for lf in logs if lf.instant == base.instant
                      or (lf.instant > base.instant and lf.instant in self.compactions)]
        else:
            chosen = [lf for lf in logs if lf.completion_time > base.instant]
        chosen.sort(key=LogFile.base_instant_sort_key if layout_version == 1 else LogFile.sort_key)
        return FileSlice(self.partition_path, self.file_id, family, base, chosen)


    def _full_row_serves(self, data_file: BaseFile | LogFile, family: str | None) -> bool:
        """A full-row base or log file serves ``family`` unless it predates the family (written
        before the ALTER that added it: it holds none of its records)."""
        since = self.family_since.get(family) if family is not None else None
        return since is None or data_file.instant > since

    def family_bases(self, family: str | None, family_table: bool) -> list[BaseFile]:
        """``family``'s base files, oldest first: its own and, in a family table, the full-row
        base files that serve it (at one instant, the full-row file before the family's own)."""
        return sorted((b for b in self.base_files if b.name.family == family
                       or (family_table and b.name.family is None and self._full_row_serves(b, family))),
                      key=lambda b: (b.name.instant, b.name.family is not None))

    def family_logs(self, family: str | None, family_table: bool) -> list[LogFile]:
        """``family``'s log files: its own and, in a family table, the full-row logs (no suffix,
        written by inserts into new file groups) that serve it, as full-row base files do."""
        if not family_table or family is None:
            return [lf for lf in self.log_files if lf.name.family == family]
        return [lf for lf in self.log_files if lf.name.family == family
                or (lf.name.family is None and self._full_row_serves(lf, family))]

    def all_slices(self, family: str | None, family_table: bool) -> list[FileSlice]:
        """Every slice of ``family``, oldest first (timeline layout 2): one per base file, each
        with the logs that completed after its base instant and before the next one's (the
        first slice holds the logs before any base). Services (cleaning, compaction) need the
        older slices too; reads use :meth:`latest_slice`."""
        bases = self.family_bases(family, family_table)
        logs = sorted(self.family_logs(family, family_table), key=LogFile.sort_key)
        bounds = [b.instant for b in bases]
        out = []
        if not bases or (logs and logs[0].completion_time <= bounds[0]):
            out.append(FileSlice(self.partition_path, self.file_id, family, None,
                                 [lf for lf in logs if not bounds or lf.completion_time <= bounds[0]]))
        for i, base in enumerate(bases):
            upper = bounds[i + 1] if i + 1 < len(bounds) else None
            chosen = [lf for lf in logs if lf.completion_time > base.instant
                      and (upper is None or lf.completion_time <= upper)]
            out.append(FileSlice(self.partition_path, self.file_id, family, base, chosen))
        return [s for s in out if not s.is_empty]


class Visibility(Value):
    """Which instants a reader sees: completed ones (completion ≤ ``as_of`` when time travelling).

    A plain, picklable value so that read tasks can decide block visibility on executors
    without the timeline. Instants older than the whole active timeline were archived, which
    only happens to completed instants; their requested time stands in for the completion time.
    """

    completions: dict[str, str]
    archived_before: str | None = None
    as_of: str | None = None
    #: Completion times from the LSM history (asked only about instants before the active
    #: timeline; None: the requested time stands in for them).
    archive: Any = None
    #: Instants a pending rollback is undoing: missing from the listing (claimed) while their
    #: files are still being deleted — never taken for archived ones.
    rolled_back: frozenset = frozenset()

    def __init__(self, completions: dict[str, str], archived_before: str | None = None, as_of: str | None = None,
                 archive: Any = None, rolled_back: frozenset = frozenset()) -> None:
        self._set(completions=completions, archived_before=archived_before, as_of=as_of, archive=archive,
                  rolled_back=frozenset(rolled_back))

    def completion_of(self, instant: str | None) -> str | None:
        """When ``instant`` completed, or None if it is not visible."""
        if instant is None:
            return None
        done = self.completions.get(instant)
        if done is not None or self.archived_before is None or instant >= self.archived_before:
            return done
        if instant in self.rolled_back:
            return None
        exact = self.archive.get(instant) if self.archive is not None else None
        if exact is None and self.archive is not None and self.archive.covers(instant):
            return None  # in the archive's range but not in it: never completed
        done = exact or instant  # older than the archive: completed (only completed instants are archived)
        return done if self.as_of is None or done <= self.as_of else None

    def is_visible(self, instant: str | None) -> bool:
        return self.completion_of(instant) is not None

    @property
    def latest_completion(self) -> str | None:
        """The newest completion time visible (the snapshot a plan pins)."""
        return max(self.completions.values(), default=None)


def _not_a_log(name: str) -> bool:
    """Whether a listed file is anything but a log file (what a listing without log sizes stats)."""
    try:
        return not isinstance(_parsed_name(name), LogFileName)
    except FileNameError:
        return True


def _marked_partition_files(listing: Iterable[FileInfo]) -> list[FileInfo]:
    """The files of folders that hold a partition metafile (``.hoodie_partition_metadata``, or
    its base-format variants ``.hoodie_partition_metadata.parquet``/``.orc``)."""
    by_folder: dict[str, list[FileInfo]] = {}
    marked: set[str] = set()
    for info in listing:
        if info.path.startswith(".hoodie/"):
            continue
        folder, _, name = info.path.rpartition("/")
        if name.startswith(PARTITION_METAFILE):
            marked.add(folder)
        by_folder.setdefault(folder, []).append(info)
    return [info for folder in sorted(marked) for info in by_folder.get(folder, ())]


class FileSystemView:
    """File groups of a table as of its completed timeline (optionally as of a completion time).

    ``partition_depth``: folder levels of a partition path (:class:`pyhudi.keygen.PartitionLayout`);
    None when the key generator's paths have no known depth (found by their metafiles).
    """

    def __init__(
        self,
        storage: Storage,
        timeline: Timeline,
        partition_depth: int | None,
        as_of: str | None = None,
        family_since: Mapping[str, str] | None = None,
    ) -> None:
        self.storage = storage
        self.timeline = timeline
        self.partition_depth = partition_depth
        self.family_since = dict(family_since or {})  # (see FileGroup.family_since)
        self.as_of = self._resolved(as_of)
        self.completion = self._visible_completions()
        instants = self.timeline.instants
        archived_before = getattr(timeline, "first_active_time", instants[0].requested_time if instants else None)
        history = getattr(timeline, "history_dir", None) if getattr(timeline, "layout_version", 2) == 2 else None
        if not self.timeline.completed():
            # Archival always leaves completed commits active, so a listing without any had
            # nothing archived: an instant missing from it is pending — e.g. a concurrent writer's
            # on a young table, begun with an older time than this listing's first instant and
            # listed too late — and its files are not committed.
            archived_before = None
        archive = ArchivedCompletions(storage, history) if history is not None else None
        self.visibility = Visibility(self.completion, archived_before, self.as_of, archive, self._rolling_back())
        self.replaced = self._replaced_file_groups()
        self.layout_version = getattr(timeline, "layout_version", 2)
        self.compactions = frozenset(
            i.requested_time for i in instants if i.is_compaction and self.completion_of(i.requested_time) is None
        )

    def _rolling_back(self) -> frozenset:
        """The instants pending rollbacks undo (read from their plans; none pending: nothing
        read). A rollback claims its target — removes it from the timeline — before it deletes
        the target's files, so a listing between the two lacks the target: on a table that never
        archived anything, an instant older than the listing would otherwise count as archived."""
        targets = set()
        for instant in self.timeline.pending():
            if str(instant.action) != "rollback":
                continue
            try:
                plan = self.timeline.read_metadata(instant.as_requested())
            except (HudiError, OSError, ValueError):
                continue  # (completed and archived meanwhile: its target's files are gone)
            target = getattr(plan, "instant_to_rollback", None)
            if target is not None and target.commit_time:
                targets.add(target.commit_time)
        return frozenset(targets)

    def _resolved(self, as_of: str | None) -> str | None:
        """``as_of`` as a completion time: the requested time of a completed instant (what a write
        returns) stands for its completion, so the view includes that write."""
        lookup = getattr(self.timeline, "lookup", self.timeline.get)
        instant = lookup(as_of) if as_of is not None else None
        if instant is None or not instant.is_completed:
            return as_of
        return instant.completion_time or as_of

    def completion_of(self, instant: str) -> str | None:
        """When ``instant`` completed, or None if it is not visible (see :class:`Visibility`)."""
        return self.visibility.completion_of(instant)

    def _visible_completions(self) -> dict[str, str]:
        out = {}
        for instant in self.timeline.completed():
            done = instant.completion_time or instant.requested_time
            if self.as_of is None or done <= self.as_of:
                out[instant.requested_time] = done
        return out

    def _replaced_file_groups(self) -> set[tuple[str, str]]:
        """File groups completed replacecommits replaced; also keeps, in
        :attr:`replace_written`, the groups they wrote (the bucket index needs them: a group an
        overwrite wrote stays its bucket's group even once a clean has removed its files)."""
        replaced: set[tuple[str, str]] = set()
        self.replace_written: set[tuple[str, str]] = set()
        for instant in self.timeline.completed():
            if str(instant.action) != "replacecommit" or instant.requested_time not in self.completion:
                continue
            metadata = self.timeline.read_metadata(instant)
            for partition, file_ids in (getattr(metadata, "partition_to_replace_file_ids", None) or {}).items():
                replaced.update((partition, fid) for fid in file_ids)
            written = getattr(metadata, "partition_file_ids", None)
            for partition, file_ids in (written() if written is not None else {}).items():
                self.replace_written.update((partition, fid) for fid in file_ids)
        return replaced

    def _data_files(self, partitions: set[str] | None = None,
                    stat: Callable[[str], bool] | None = None) -> Iterable[FileInfo]:
        """Files at partition depth; only the given partitions' folders are listed when known
        (and an unpartitioned table lists its base folder alone, never ``.hoodie``). When the
        depth is unknown (key generators that transform values), a partition is a folder holding
        Hudi's ``.hoodie_partition_metadata`` marker, as Hudi lists partitions."""
        if partitions is not None or self.partition_depth == 0:
            for partition in sorted(partitions) if partitions is not None else [""]:
                depth = partition.count("/") + 1 if partition else 0
                if self.partition_depth is None or depth == self.partition_depth:
                    yield from self.storage.list_files(partition, stat=stat)
            return
        if self.partition_depth is None:
            yield from _marked_partition_files(self.storage.walk_files(""))
            return
        for info in self.storage.walk_files(""):
            path = info.path
            if path.startswith(".hoodie/") or path.count("/") != self.partition_depth:
                continue
            yield info

    def partition_paths(self) -> list[str] | None:
        """The partitions as listed — the folders at partition depth, listed level by level
        without listing their files — or None when the depth is unknown (key generators that
        transform values: partitions are then found by their marker files, with the files)."""
        if self.partition_depth is None:
            return None
        level = [""]
        for _ in range(self.partition_depth):
            level = [info.path for parent in level for info in self.storage.list(parent)
                     if info.is_dir and info.path != ".hoodie"]
        return level

    def data_files(self) -> list[FileInfo]:
        """The listing :meth:`file_groups` builds every partition's groups from (files with their
        sizes and modification times): a view of an unchanged timeline whose listing is equal
        has equal file groups."""
        return list(self._data_files())

    def file_groups(self, partitions: Iterable[str] | None = None, *, log_sizes: bool = True) -> list[FileGroup]:
        """Visible, non-replaced file groups, sorted by (partition, file id).

        ``log_sizes=False``: the log files of the listed ``partitions`` come without their size
        and modification time (``-1``, None) — a write that appends new log files needs only
        the names (and the base files' sizes): the listing then stats the base files alone."""
        wanted = set(partitions) if partitions is not None else None
        groups: dict[tuple[str, str], FileGroup] = {}
        for info in self._data_files(wanted, None if log_sizes else _not_a_log):
            partition, _, name = info.path.rpartition("/")
            if wanted is not None and partition not in wanted:
                continue
            try:
                parsed = _parsed_name(name)
            except FileNameError:
                continue  # not a Hudi data file (e.g. .hoodie_partition_metadata, _SUCCESS)
            completion = self.completion_of(parsed.instant)
            if completion is None:
                if not self._opens_pending_slice(parsed):
                    continue  # written by an instant that is pending, failed or after as_of
                completion = parsed.instant  # (version 6 checks the log's blocks one by one)
            key = (partition, parsed.file_id)
            if key in self.replaced:
                continue
            group = groups.get(key)
            if group is None:
                group = groups[key] = FileGroup(partition, parsed.file_id, compactions=self.compactions,
                                                family_since=self.family_since)
            if isinstance(parsed, BaseFileName):
                group.base_files.append(BaseFile(partition, parsed, info.size, completion, info.mtime_ns))
            else:
                group.log_files.append(LogFile(partition, parsed, info.size, completion, info.mtime_ns))
        return [groups[k] for k in sorted(groups)]

    def _opens_pending_slice(self, name: BaseFileName | LogFileName) -> bool:
        """A version 6 log named after a compaction that is not completed (as of the view)."""
        return self.layout_version == 1 and isinstance(name, LogFileName) and name.instant in self.compactions

    def pending_compaction_file_groups(self) -> dict[tuple[str, str], str]:
        """(partition, file id) → instant of each compaction not completed (either timeline
        layout): services leave these groups alone until it completes."""
        out: dict[tuple[str, str], str] = {}
        for instant in self.timeline.pending():
            if instant.is_compaction:
                plan = self.timeline.read_metadata(instant.as_requested())
                out.update((group, instant.requested_time) for group in plan.file_groups())
        return out

    def pending_clustering_file_groups(self) -> dict[tuple[str, str], str]:
        """(partition, file id) → instant of each clustering not completed (its input groups
        are replaced when it completes; a requested replacecommit without a plan is an insert
        overwrite, not a clustering)."""
        out: dict[tuple[str, str], str] = {}
        for instant in self.timeline.pending():
            if str(instant.completed_action) != "replacecommit":
                continue
            requested = self.timeline.read_metadata(instant.as_requested())
            if requested is not None and getattr(requested, "is_clustering", False):
                out.update((group, instant.requested_time) for group in requested.file_groups())
        return out

    def partitions(self) -> list[str]:
        return sorted({g.partition_path for g in self.file_groups()})
