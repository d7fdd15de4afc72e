"""The archived ("LSM") timeline of layout 2: ``.hoodie/timeline/history/``.

Format (Hudi 1.x ``LSMTimeline``, ``LSMTimelineWriter``, ``HoodieLSMTimelineManifest``,
``HoodieLSMTimelineInstant.avsc``; the storage-format spec's "LSM Timeline" section)::

    history/_version_                       UTF-8 decimal: the manifest version readers use
    history/manifest_<N>                    JSON {"files": [{"fileName": ..., "fileLen": ...}]}
    history/<minInstant>_<maxInstant>_<level>.parquet

A Parquet file holds one row per archived action: ``instantTime`` (requested time),
``completionTime``, ``action`` (the completed action: a compaction is a ``commit``),
``metadata`` (the completed instant file's bytes, Avro in layout 2), ``plan`` (the requested
file's bytes for compaction / log compaction / clean / clustering / replacecommit) and
``version`` (1). ``minInstant``/``maxInstant`` are the requested times of its first and last row.

Readers follow ``_version_`` → ``manifest_<N>`` → the files it lists; a missing or unreadable
version file falls back to the greatest manifest version listed (as Hudi does). Files not in the
manifest are invisible, which is what makes archival crash-safe: new files are written first and
published by the version file last.

Loading is lazy and cached per process by (table, manifest version): asking the archive costs
one read of ``_version_`` once it is loaded. Only the time columns are read up front; an
instant's metadata bytes are read from its file when asked for.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import threading
from dataclasses import dataclass
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.errors import MetadataError, StorageError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.archive_times import ArchivedCompletions  # noqa: F401 (re-exported)
from pyhudi.timeline.metadata_base import decode_commit_summary

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
LSM_INSTANT_VERSION = 1
_MANIFEST_RE = re.compile(r"^manifest_(\d+)$")
_FILE_RE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")

#: HoodieLSMTimelineInstant.avsc, stored in the Parquet footer (``parquet.avro.schema``) so
#: that Hudi's Avro Parquet reader sees the record it wrote itself.
AVRO_SCHEMA = {
    "type": "record",
    "name": "HoodieLSMTimelineInstant",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "instantTime", "type": ["null", "string"], "default": None},
        {"name": "completionTime", "type": ["null", "string"], "default": None},
        {"name": "action", "type": ["null", "string"], "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ],
}
ARROW_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ],
    metadata={"parquet.avro.schema": json.dumps(AVRO_SCHEMA), "writer.model.name": "avro"},
)
_TIME_COLUMNS = ["instantTime", "completionTime", "action"]


# ------------------------------------------------------------------------------ names
@dataclass(frozen=True, order=True)
class LsmFileName:
    """``<minInstant>_<maxInstant>_<level>.parquet`` (the model owns its name)."""

    min_instant: str
    max_instant: str
    level: int

    @property
    def name(self) -> str:
        return f"{self.min_instant}_{self.max_instant}_{self.level}.parquet"

    @classmethod
    def parse(cls, name: str) -> LsmFileName:
        match = _FILE_RE.match(name)
        if match is None:
            raise TimelineError(f"not an archived timeline file name: {name!r} "
                                "(expected <minInstant>_<maxInstant>_<level>.parquet)")
        return cls(match.group(1), match.group(2), int(match.group(3)))

    def overlaps(self, start: str | None, end: str | None) -> bool:
        """Whether the file may hold instants requested in ``[start, end]`` (None = open)."""
        return (start is None or self.max_instant >= start) and (end is None or self.min_instant <= end)


def manifest_name(version: int) -> str:
    return f"{MANIFEST_PREFIX}{version}"


# ------------------------------------------------------------------------------ manifest
@dataclass(frozen=True)
class Manifest:
    """One snapshot of the archive: the LSM files that make it up (name → length)."""

    version: int
    files: tuple[tuple[str, int], ...] = ()

    @property
    def file_names(self) -> list[str]:
        return [name for name, _ in self.files]

    def to_json(self) -> bytes:
        """Jackson's field layout (``files`` of ``fileName``/``fileLen``), pretty-printed as Hudi does."""
        body = {"files": [{"fileName": n, "fileLen": size} for n, size in self.files]}
        return json.dumps(body, indent=2).encode()

    @classmethod
    def from_json(cls, version: int, data: bytes, where: str) -> Manifest:
        if not data.strip():
            return cls(version)
        try:
            raw = json.loads(data)
            files = tuple((str(e["fileName"]), int(e.get("fileLen", 0))) for e in raw.get("files") or ())
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise MetadataError(f"archived timeline manifest {where} is not valid: {exc}") from None
        for name, _ in files:
            LsmFileName.parse(name)
        return cls(version, files)

    def with_files(self, version: int, add: Iterable[tuple[str, int]], remove: Iterable[str] = ()) -> Manifest:
        gone = set(remove)
        kept = [f for f in self.files if f[0] not in gone]
        return Manifest(version, tuple(sorted([*kept, *add])))


def history_dir_of(timeline_dir: str, history_path: str = "history") -> str:
    return posixpath.join(timeline_dir, history_path)


def latest_version(storage: Storage, history_dir: str) -> int:
    """The version ``_version_`` names; else the greatest manifest listed; 0 = empty archive."""
    try:
        text = storage.read(f"{history_dir}/{VERSION_FILE}").decode().strip()
        if text:
            return int(text)
    except (StorageError, ValueError, UnicodeDecodeError):
        pass  # absent, torn or being replaced: list the manifests (Hudi's fallback)
    return max(all_versions(storage, history_dir), default=0)


def all_versions(storage: Storage, history_dir: str) -> list[int]:
    try:
        infos = storage.list_files(history_dir)
    except (StorageError, FileNotFoundError):
        return []
    out = []
    for info in infos:
        match = _MANIFEST_RE.match(posixpath.basename(info.path))
        if match:
            out.append(int(match.group(1)))
    return out


def read_manifest(storage: Storage, history_dir: str, version: int) -> Manifest:
    if version <= 0:
        return Manifest(0)
    path = f"{history_dir}/{manifest_name(version)}"
    return Manifest.from_json(version, storage.read(path), path)


# ------------------------------------------------------------------------------ rows
def instants_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (keys as in :data:`ARROW_SCHEMA`) as the Arrow table an LSM file holds."""
    columns = {f.name: [r.get(f.name) for r in rows] for f in ARROW_SCHEMA}
    return pa.Table.from_pydict(columns, schema=ARROW_SCHEMA)


def write_lsm_file(storage: Storage, path: str, table: pa.Table) -> int:
    """Write one LSM Parquet file (durably, in place: unpublished until a manifest lists it);
    returns its length."""
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    data = sink.getvalue()
    storage.delete(path)  # a torn file of a crashed attempt
    storage.create_if_absent(path, data, durable=True)
    return len(data)


def publish(storage: Storage, history_dir: str, manifest: Manifest) -> None:
    """Write ``manifest_<N>`` then point ``_version_`` at it (the commit point of an archival).

    The version file is replaced by writing a temporary file and renaming it over the old one,
    so a reader sees the old version or the new one, never a torn file.
    """
    path = f"{history_dir}/{manifest_name(manifest.version)}"
    storage.delete(path)  # left by a crash before the version file moved: never published
    storage.create_if_absent(path, manifest.to_json(), durable=True)
    tmp = f"{history_dir}/.{VERSION_FILE}.tmp"
    storage.write(tmp, str(manifest.version).encode())
    storage.rename(tmp, f"{history_dir}/{VERSION_FILE}")


# ------------------------------------------------------------------------------ reader
@dataclass(frozen=True)
class ArchivedInstant:
    """One archived action: its completed instant and the LSM file holding its bytes."""

    instant: Instant
    file_name: str


class ArchivedTimeline:
    """The instants of one archive snapshot (sorted by requested time). Immutable once loaded."""

    def __init__(self, storage: Storage, history_dir: str, manifest: Manifest,
                 entries: list[ArchivedInstant]) -> None:
        self.storage = storage
        self.history_dir = history_dir
        self.manifest = manifest
        self._entries = entries
        self._by_time = {e.instant.requested_time: e for e in entries}
        self._completions: dict[str, str] | None = None
        self._bytes: dict[str, dict[str, tuple[bytes | None, bytes | None]]] = {}
        self._lock = threading.Lock()

    @property
    def version(self) -> int:
        return self.manifest.version

    @property
    def instants(self) -> list[Instant]:
        return [e.instant for e in self._entries]

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, requested_time: str) -> Instant | None:
        entry = self._by_time.get(requested_time)
        return entry.instant if entry else None

    def completion_times(self) -> dict[str, str]:
        """Requested → completion time of every archived instant (built once; do not mutate)."""
        if self._completions is None:
            self._completions = {e.instant.requested_time: e.instant.sort_time for e in self._entries}
        return self._completions

    @property
    def first_time(self) -> str | None:
        return self._entries[0].instant.requested_time if self._entries else None

    def _file_bytes(self, file_name: str) -> dict[str, tuple[bytes | None, bytes | None]]:
        with self._lock:
            found = self._bytes.get(file_name)
            if found is None:
                table = _read_file(self.storage, f"{self.history_dir}/{file_name}",
                                   ["instantTime", "metadata", "plan"])
                found = {t: (m, p) for t, m, p in zip(table.column("instantTime").to_pylist(),
                                                       table.column("metadata").to_pylist(),
                                                       table.column("plan").to_pylist())}
                self._bytes[file_name] = found
            return found

    def metadata_bytes(self, instant: Instant) -> bytes:
        """The completed instant file's bytes as archived (empty if Hudi archived none)."""
        return self._content(instant)[0] or b""

    def plan_bytes(self, instant: Instant) -> bytes:
        """The plan (requested file) bytes as archived (empty if none)."""
        return self._content(instant)[1] or b""

    def moved_content(self, listed: Instant) -> bytes | None:
        """What the file of ``listed`` (an instant of an older active listing) held, if archival
        moved it here meanwhile: a completed instant's metadata (same completion), or the plan of
        a compaction or clustering listed as requested that then completed and was archived (a
        plan never changes; the archive keeps it). None when this archive does not hold it."""
        moved = self.get(listed.requested_time)
        if moved is None:
            return None
        if listed.is_completed:
            return self.metadata_bytes(moved) if listed.completion_time in (None, moved.completion_time) else None
        if listed.state is State.REQUESTED and moved.action is listed.completed_action:
            return self.plan_bytes(moved) or None
        return None

    def _content(self, instant: Instant) -> tuple[bytes | None, bytes | None]:
        entry = self._by_time.get(instant.requested_time)
        if entry is None:
            raise TimelineError(f"instant {instant.requested_time} is not in the archived timeline "
                                f"({self.history_dir}, version {self.version})")
        return self._file_bytes(entry.file_name).get(instant.requested_time, (None, None))

    def read_metadata(self, instant: Instant) -> Any:
        """The decoded completed metadata of an archived instant."""
        from pyhudi.timeline.metadata import decode_instant_metadata

        return decode_instant_metadata(instant.action.value, State.COMPLETED.value, self.metadata_bytes(instant))

    def read_plan(self, instant: Instant) -> Any:
        """The decoded plan of an archived instant (None when it had none)."""
        from pyhudi.timeline.metadata import decode_instant_metadata

        return decode_instant_metadata(instant.origin_action.value, State.REQUESTED.value, self.plan_bytes(instant))

    def read_commit_summary(self, instant: Instant) -> tuple[str | None, dict[str, str]]:
        return decode_commit_summary(instant.action.value, self.metadata_bytes(instant))


def _read_file(storage: Storage, path: str, columns: list[str]) -> pa.Table:
    try:
        with storage.open_input(path) as handle:
            return pq.read_table(handle, columns=columns)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TimelineError(f"cannot read archived timeline file {storage.full_path(path)}: {exc}") from None


def _pending_action(action: str, plan: bytes | None) -> Action | None:
    """The service a completed action finished, as far as the archive tells (Hudi keeps the
    completed action only; a commit with a plan was a compaction)."""
    if not plan:
        return None
    if action == "commit":
        return Action.COMPACTION
    if action == "deltacommit":
        return Action.LOGCOMPACTION
    if action == "replacecommit":
        from pyhudi.timeline.metadata import decode_instant_metadata

        try:
            requested = decode_instant_metadata("clustering", State.REQUESTED.value, plan)
        except MetadataError:
            return None
        return Action.CLUSTERING if getattr(requested, "is_clustering", False) else None
    return None


def _load_entries(storage: Storage, history_dir: str, manifest: Manifest) -> list[ArchivedInstant]:
    by_time: dict[str, ArchivedInstant] = {}
    # Later levels first, then L0: an instant in a compacted file and (after a crash) in a
    # not-yet-cleaned L0 file is the same action; either copy serves.
    for name, size in sorted(manifest.files, key=lambda f: LsmFileName.parse(f[0]).level, reverse=True):
        for entry in _file_entries(storage, history_dir, name, size):
            by_time[entry.instant.requested_time] = entry
    return [by_time[t] for t in sorted(by_time)]


_FILE_ENTRIES: dict[tuple[str, str, str, int], list[ArchivedInstant]] = {}
"""(table, history dir, LSM file, length) → its instants. A published LSM file never changes
(archival writes new files and publishes them by a new manifest), so a new archive version reads
only the files it added: loading the archive after each archival costs the new file, not the
whole history."""
_FILE_ENTRIES_MAX = 4096


def _file_entries(storage: Storage, history_dir: str, name: str, size: int) -> list[ArchivedInstant]:
    key = (storage.base_uri, history_dir, name, size)
    with _CACHE_LOCK:
        found = _FILE_ENTRIES.get(key)
    if found is not None:
        return found
    table = _read_file(storage, f"{history_dir}/{name}", [*_TIME_COLUMNS, "plan"])
    found = []
    for requested, completion, action, plan in zip(table.column("instantTime").to_pylist(),
                                                   table.column("completionTime").to_pylist(),
                                                   table.column("action").to_pylist(),
                                                   table.column("plan").to_pylist()):
        if not requested or not action:
            continue
        try:
            instant = Instant(requested, action, State.COMPLETED, completion or None,
                              pending_action=_pending_action(action, plan))
        except TimelineError:
            continue  # an action pyhudi does not know (e.g. a newer Hudi's): not ours to read
        found.append(ArchivedInstant(instant, name))
    with _CACHE_LOCK:
        if len(_FILE_ENTRIES) >= _FILE_ENTRIES_MAX:
            _FILE_ENTRIES.clear()
        _FILE_ENTRIES[key] = found
    return found


_CACHE: dict[tuple[str, str, int, tuple[str, ...]], ArchivedTimeline] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 64


def load_archived(storage: Storage, history_dir: str) -> ArchivedTimeline:
    """The latest snapshot of the archive (empty when there is none)."""
    version = latest_version(storage, history_dir)
    manifest = read_manifest(storage, history_dir, version)
    key = (storage.base_uri, history_dir, version, tuple(manifest.file_names))
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is not None:
        return found
    timeline = ArchivedTimeline(storage, history_dir, manifest, _load_entries(storage, history_dir, manifest))
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = timeline
    return timeline


__all__ = [
    "ARROW_SCHEMA", "AVRO_SCHEMA", "ArchivedCompletions", "ArchivedInstant", "ArchivedTimeline", "LsmFileName", "Manifest",
    "VERSION_FILE", "all_versions", "history_dir_of", "instants_table", "latest_version", "load_archived",
    "manifest_name", "publish", "read_manifest", "write_lsm_file",
]
