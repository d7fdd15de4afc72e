"""Storage: a thin layer over ``pyarrow.fs`` rooted at a table's base path.

A local table's reads (listing, stat, whole-file reads, random-access files) go through ``os``
and ``pyarrow.OSFile`` instead: importing ``pyarrow.fs`` costs ~10 ms (it loads ``pathlib``,
``ssl`` and the cloud file systems' modules), a tenth of a cold read's budget (issue 15). Its
``LocalFileSystem`` is built on first use, by the writes (:attr:`Storage.fs`).

Every path handed to :class:`Storage` is *relative* to the table's base path and is checked by
:func:`safe_relpath` before use, so a family name, a partition value or a file name that contains
``..``, an absolute path or a NUL byte can never make pyhudi write outside the table.

The one operation the timeline needs beyond plain I/O is **create-if-absent** (write-once files
for instant transitions, markers, the lock file). On a local file system it is atomic: the bytes
are written to a private temporary file which is then hard-linked to the target name, and
``link(2)`` fails if the name exists — so the target either does not exist or exists complete.
On S3-compatible stores it is a ``PutObject`` with ``If-None-Match: *`` where the store honours
it (:mod:`pyhudi.storage.s3`); :attr:`Storage.atomic_create` says whether create-if-absent is
atomic. Elsewhere it is a check-then-write, safe only under a lock that does not itself rely on
atomic create (the lock provider picks one: :mod:`pyhudi.timeline.lock_provider`).
"""

from __future__ import annotations

import os
import posixpath
import stat as statmode
import uuid
from typing import TYPE_CHECKING, Callable, Iterator, Mapping

import pyarrow as pa

from pyhudi.errors import AlreadyExistsError, PathEscapeError, StorageError
from pyhudi.storage import s3
from pyhudi.value import Value

if TYPE_CHECKING:
    import pyarrow.fs as pafs


def open_local(path: str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of a local file, creating its parent folders when they are missing (the first
    file of a folder: a lock, heartbeat, marker or state file). OSErrors pass through, for the
    caller to name what it was doing."""
    try:
        return os.open(path, flags, mode)
    except FileNotFoundError:
        make_parent(path)
        return os.open(path, flags, mode)


def make_parent(path: str) -> None:
    """Create the missing parent folder of a local ``path``: one ``mkdir`` when only the last
    level is missing (a partition's marker folder), ``os.makedirs`` otherwise — which first
    stats every level (each metadata call costs ~0.5 ms on some file systems, per file written)."""
    parent = os.path.dirname(path)
    try:
        os.mkdir(parent)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(parent, exist_ok=True)


class FileInfo(Value):
    """One entry of a directory listing; ``path`` is relative to the base path."""

    path: str
    size: int
    mtime_ns: int | None
    is_dir: bool

    def __init__(self, path: str, size: int, mtime_ns: int | None, is_dir: bool) -> None:
        self._set(path=path, size=size, mtime_ns=mtime_ns, is_dir=is_dir)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


def safe_relpath(relpath: str) -> str:
    """Normalise a relative path and refuse anything that could escape the base path.

    Accepts ``""`` (the base path itself) and ``/``-separated segments. Refuses absolute paths,
    ``.``/``..`` segments, backslashes, NUL bytes and empty segments (``a//b``), naming the
    offending path in the error.
    """
    if not isinstance(relpath, str):
        raise PathEscapeError(f"path must be a string, got {type(relpath).__name__}: {relpath!r}")
    if relpath == "":
        return ""
    if "\x00" in relpath:
        raise PathEscapeError(f"path contains a NUL byte: {relpath!r}")
    if "\\" in relpath:
        raise PathEscapeError(f"path contains a backslash: {relpath!r}")
    if relpath.startswith("/"):
        raise PathEscapeError(f"path must be relative to the table base path: {relpath!r}")
    stripped = relpath[:-1] if relpath.endswith("/") else relpath
    for segment in stripped.split("/"):
        if segment in ("", ".", ".."):
            raise PathEscapeError(
                f"path segment {segment!r} is not allowed (it could escape the base path): {relpath!r}"
            )
    return stripped


def check_name(name: str, what: str = "name") -> str:
    """Validate a single path component (a file or family name): no separators, no dots-only."""
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise PathEscapeError(f"{what} {name!r} is not a valid single path component")
    return name


def _is_local_fs(filesystem: pafs.FileSystem) -> bool:
    import pyarrow.fs as pafs  # (imported already: a file system object exists)

    return isinstance(filesystem, pafs.LocalFileSystem)


def _file_type() -> type[pafs.FileType]:
    """``pyarrow.fs.FileType`` (imported already wherever a ``pyarrow.fs`` file system is used)."""
    import pyarrow.fs as pafs

    return pafs.FileType


def _missing_directories(path: str) -> list[str]:
    """``path`` and its ancestors that do not exist yet, deepest first (a durable create that
    makes them syncs each one's parent too: :meth:`Storage.create_if_absent`)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return missing


def _sync_directory(path: str) -> None:
    """fsync a directory: its entries (a file just created or linked in it) reach the disk.

    Best effort: it runs after the file is in place, fsynced and visible, so a failure here must
    not turn a completed create into an error (a completed instant reported as failed would be
    rolled back by its writer). A file system that cannot sync a directory (``EINVAL``: some
    network and FUSE ones) keeps whatever guarantee it gives."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Storage:
    """File operations relative to one base path (local path, ``file://`` or ``s3://`` URI).

    ``options``: storage options (``hoodie.pyhudi.s3.*``, see :mod:`pyhudi.storage.s3`) for an
    S3 URI; they are remembered for the URI in this process, so a later ``Storage(base_uri)``
    (the write path re-opens storage by URI) reaches the same store the same way.
    """

    def __init__(self, base_uri: str, filesystem: pafs.FileSystem | None = None,
                 options: Mapping[str, str] | None = None) -> None:
        base_uri = os.fspath(base_uri)
        self._s3: s3.S3Settings | None = None
        self._bucket: str | None = None
        if filesystem is None and s3.is_s3_uri(base_uri):
            given = bool(options)
            options = options if given else s3.remembered_options(base_uri)
            self._s3 = s3.S3Settings.resolve(options)  # raises ConfigError on bad options
            if given:
                s3.remember_options(base_uri, options)
            self._bucket, root = s3.split_s3_uri(base_uri)
            filesystem = self._s3.filesystem()
        elif filesystem is None:
            if "://" in base_uri:
                import pyarrow.fs as pafs

                filesystem, root = pafs.FileSystem.from_uri(base_uri)
            else:
                root = os.path.abspath(base_uri)  # (a LocalFileSystem on first use: see fs)
        else:
            root = base_uri
        self._fs: pafs.FileSystem | None = filesystem
        self.base_uri = base_uri
        self.root = root.rstrip("/") or "/"
        self.is_local = filesystem is None or _is_local_fs(filesystem)
        self._plain = filesystem is None  # (a local path: reads go through os, see the module doc)
        self._options = dict(options or {})

    @property
    def fs(self) -> pafs.FileSystem:
        """The ``pyarrow.fs`` file system (a local table's is built on first use)."""
        if self._fs is None:
            import pyarrow.fs as pafs

            self._fs = pafs.LocalFileSystem()
        return self._fs

    def __repr__(self) -> str:
        return f"Storage({self.base_uri!r})"

    def __reduce__(self):  # picklable for engines: rebuild from the URI (and options) on the worker
        return (Storage, (self.base_uri, None, self._options or None))

    @property
    def atomic_create(self) -> bool:
        """Whether :meth:`create_if_absent` is atomic here (exactly one of racing creators wins):
        local file systems, and S3 stores that honour conditional puts."""
        if self.is_local:
            return True
        return self._conditional_put() is not None

    def _conditional_put(self) -> s3.ConditionalPut | None:
        if self._s3 is None or self._bucket is None:
            return None
        return self._s3.conditional_creator(self._bucket)

    # ----------------------------------------------------------------- paths
    def full_path(self, relpath: str) -> str:
        """The filesystem path of ``relpath`` (validated)."""
        rel = safe_relpath(relpath)
        return f"{self.root}/{rel}" if rel else self.root

    def uri(self, relpath: str) -> str:
        """A URI for ``relpath`` that other libraries (hudi-rs, Spark) accept."""
        rel = safe_relpath(relpath)
        base = self.base_uri.rstrip("/")
        return f"{base}/{rel}" if rel else base

    # ----------------------------------------------------------------- queries
    def exists(self, relpath: str) -> bool:
        if self._plain:
            return self._stat(relpath) is not None
        return self._info(relpath).type != _file_type().NotFound

    def is_dir(self, relpath: str) -> bool:
        if self._plain:
            found = self._stat(relpath)
            return found is not None and statmode.S_ISDIR(found.st_mode)
        return self._info(relpath).type == _file_type().Directory

    def size(self, relpath: str) -> int:
        if self._plain:
            found = self._stat(relpath)
            if found is None:
                raise StorageError(f"file not found: {self.full_path(relpath)}")
            return found.st_size
        info = self._info(relpath)
        if info.type == _file_type().NotFound:
            raise StorageError(f"file not found: {self.full_path(relpath)}")
        return int(info.size)

    def list(self, relpath: str = "", recursive: bool = False,
             stat: Callable[[str], bool] | None = None) -> list[FileInfo]:
        """Entries under a directory (files and sub-directories); empty if it does not exist.

        ``stat(name)`` False: a local file of that name is listed without its size and
        modification time (``size=-1``, ``mtime_ns=None``: no ``stat`` call); stores whose
        listing carries them anyway give them."""
        if self._plain:
            out = self._local_list(self.full_path(relpath), recursive, stat)
            out.sort(key=lambda f: f.path)
            return out
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.full_path(relpath), allow_not_found=True, recursive=recursive)
        try:
            infos = self.fs.get_file_info(selector)
        except OSError as exc:
            raise StorageError(f"cannot list {self.full_path(relpath)}: {exc}") from exc
        prefix = self.root + "/"
        out = []
        for info in infos:
            path = info.path
            rel = path[len(prefix):] if path.startswith(prefix) else path
            out.append(
                FileInfo(
                    path=rel,
                    size=int(info.size or 0),
                    mtime_ns=info.mtime_ns,
                    is_dir=info.type == pafs.FileType.Directory,
                )
            )
        out.sort(key=lambda f: f.path)
        return out

    def _local_list(self, path: str, recursive: bool, stat: Callable[[str], bool] | None = None) -> list[FileInfo]:
        """:meth:`list` of a local directory through ``os.scandir`` (entries that vanish while
        listed are left out)."""
        prefix = self.root + "/"
        out = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                        if stat is not None and not is_dir and not stat(entry.name):
                            rel = entry.path[len(prefix):] if entry.path.startswith(prefix) else entry.path
                            out.append(FileInfo(path=rel, size=-1, mtime_ns=None, is_dir=False))
                            continue
                        info = entry.stat()
                    except FileNotFoundError:
                        continue
                    rel = entry.path[len(prefix):] if entry.path.startswith(prefix) else entry.path
                    out.append(FileInfo(path=rel, size=0 if is_dir else info.st_size, mtime_ns=info.st_mtime_ns,
                                        is_dir=is_dir))
                    if is_dir and recursive:
                        out.extend(self._local_list(entry.path, True, stat))
        except FileNotFoundError:
            return out
        except OSError as exc:
            raise StorageError(f"cannot list {path}: {exc}") from exc
        return out

    def list_files(self, relpath: str = "", stat: Callable[[str], bool] | None = None) -> list[FileInfo]:
        return [f for f in self.list(relpath, stat=stat) if not f.is_dir]

    # ----------------------------------------------------------------- reads
    def read(self, relpath: str) -> bytes:
        try:
            if self._plain:
                with open(self.full_path(relpath), "rb") as fh:
                    return fh.read()
            with self.fs.open_input_stream(self.full_path(relpath)) as stream:
                return stream.read()
        except FileNotFoundError as exc:
            raise StorageError(f"file not found: {self.full_path(relpath)}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {self.full_path(relpath)}: {exc}") from exc

    def open_input(self, relpath: str) -> pa.NativeFile:
        """A random-access file (for Parquet footers and log block seeks)."""
        try:
            if self._plain:
                return pa.OSFile(self.full_path(relpath), "r")
            return self.fs.open_input_file(self.full_path(relpath))
        except OSError as exc:
            raise StorageError(f"cannot open {self.full_path(relpath)}: {exc}") from exc

    # ----------------------------------------------------------------- writes
    def makedirs(self, relpath: str) -> None:
        self.fs.create_dir(self.full_path(relpath), recursive=True)

    def write(self, relpath: str, data: bytes) -> None:
        """Write (or overwrite) a whole file, creating parent directories."""
        path = self.full_path(relpath)
        self._ensure_parent(path)
        try:
            with self.fs.open_output_stream(path) as out:
                out.write(data)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def open_output(self, relpath: str) -> pa.NativeFile:
        """A fresh output stream (truncates); parents are created."""
        path = self.full_path(relpath)
        self._ensure_parent(path)
        return self.fs.open_output_stream(path)

    def create_if_absent(self, relpath: str, data: bytes = b"", durable: bool = True) -> None:
        """Create a write-once file; raise :class:`AlreadyExistsError` if it exists.

        Local file systems: atomic and all-or-nothing (temp file + ``link``), fsynced unless
        ``durable=False`` (files nothing depends on after a crash: lock files, empty pending
        instants) — the file and then its directory (and the parents of the directories this
        create made), so that after a power loss the new name is there too, not only its bytes
        (a completed instant whose name was lost would read as pending and be rolled back). S3 stores with conditional put: atomic (``If-None-Match: *``; an object is
        never visible half-written). Other stores: a check-then-write, safe only under a lock
        that does not rely on atomic create (see :attr:`atomic_create`).
        """
        path = self.full_path(relpath)
        conditional = None if self.is_local else self._conditional_put()
        if conditional is not None:
            conditional.create(path.split("/", 1)[1], bytes(data))  # S3 has no directories to create
            return
        if self.is_local:
            created = _missing_directories(os.path.dirname(path)) if durable else []
            self._ensure_parent(path)
            self._local_create_if_absent(path, data, durable)
            for directory in created:  # (a new directory's entry is in its parent: deepest first)
                _sync_directory(os.path.dirname(directory))
            return
        self._ensure_parent(path)
        if self.exists(relpath):
            raise AlreadyExistsError(f"file already exists: {path}")
        self.write(relpath, data)

    def _local_create_if_absent(self, path: str, data: bytes, durable: bool = True) -> None:
        if not data:  # an empty file is complete the moment it exists: one exclusive create
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError as exc:
                raise AlreadyExistsError(f"file already exists: {path}") from exc
            except OSError as exc:
                raise StorageError(f"cannot create {path}: {exc}") from exc
            try:
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if durable:
                _sync_directory(os.path.dirname(path))
            return
        tmp = f"{os.path.dirname(path)}/.{os.path.basename(path)}.{uuid.uuid4().hex}.tmp"
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError as exc:
                raise AlreadyExistsError(f"file already exists: {path}") from exc
            except OSError as exc:
                raise StorageError(f"cannot create {path}: {exc}") from exc
        finally:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        if durable:
            _sync_directory(os.path.dirname(path))

    def rename(self, src: str, dst: str) -> None:
        dst_path = self.full_path(dst)
        self._ensure_parent(dst_path)
        self.fs.move(self.full_path(src), dst_path)

    def delete(self, relpath: str, missing_ok: bool = True) -> bool:
        """Delete a file; returns whether it existed. Idempotent unless ``missing_ok=False``."""
        path = self.full_path(relpath)
        try:
            if self._plain:
                os.unlink(path)  # (a commit deletes a few files: no trip through pyarrow)
            else:
                self.fs.delete_file(path)
            return True
        except FileNotFoundError:
            if missing_ok:
                return False
            raise StorageError(f"file not found: {path}") from None
        except OSError as exc:
            if not self.exists(relpath):
                if missing_ok:
                    return False
                raise StorageError(f"file not found: {path}") from exc
            raise StorageError(f"cannot delete {path}: {exc}") from exc

    def delete_dir(self, relpath: str) -> None:
        if self.exists(relpath):
            self.fs.delete_dir(self.full_path(relpath))

    def walk_files(self, relpath: str = "") -> Iterator[FileInfo]:
        for info in self.list(relpath, recursive=True):
            if not info.is_dir:
                yield info

    # ----------------------------------------------------------------- helpers
    def _info(self, relpath: str) -> pafs.FileInfo:
        return self.fs.get_file_info(self.full_path(relpath))

    def _stat(self, relpath: str) -> os.stat_result | None:
        """A local path's ``stat`` (None when it does not exist)."""
        try:
            return os.stat(self.full_path(relpath))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _ensure_parent(self, path: str) -> None:
        parent = posixpath.dirname(path)
        if parent and parent != path:
            self.fs.create_dir(parent, recursive=True)
