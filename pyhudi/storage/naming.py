"""File names of a Hudi table: base files, log files, file ids, write tokens, markers, partitions.

Grammar (DESIGN §4; the RFC-80 templates lost their separators in the text export)::

    base    <fileId>_<writeToken>_<instant>[_<cf>].<ext>
    log     .<fileId>_<instant>[_<cf>].log.<version>_<writeToken>[.cdc]
    marker  <fileName>.marker.<CREATE|MERGE|APPEND>

``fileId`` never contains ``_``; instants are all digits; family names start with a letter — so
the optional ``_<cf>`` suffix parses unambiguously. No suffix means the default family (a plain
Hudi file) or a full-row base file written by full compaction. Each model formats and parses its
own name, and a round trip through both is the identity.
"""

from __future__ import annotations

import re
import uuid
from typing import Sequence

from pyhudi.errors import FileNameError, PathEscapeError
from pyhudi.storage.fs import safe_relpath
from pyhudi.value import Value

_FAMILY = r"[A-Za-z][A-Za-z0-9]{0,63}"
_TOKEN = r"\d+-\d+-\d+"
_BASE_RE = re.compile(
    rf"^(?P<file_id>[^_/]+)_(?P<write_token>{_TOKEN})_(?P<instant>\d+)(?:_(?P<family>{_FAMILY}))?"
    rf"\.(?P<ext>[A-Za-z0-9]+)$"
)
_LOG_RE = re.compile(
    rf"^\.(?P<file_id>[^_/]+)_(?P<instant>\d+)(?:_(?P<family>{_FAMILY}))?\.(?P<kind>log|archive)"
    rf"\.(?P<version>\d+)(?:_(?P<write_token>{_TOKEN})(?P<cdc>\.cdc)?)?$"
)
_FILE_ID_RE = re.compile(r"^[^_/\\\x00]+$")
_MARKER_RE = re.compile(r"^(?P<data_file>.+)\.marker\.(?P<io_type>CREATE|MERGE|APPEND)$")
_FAMILY_RE = re.compile(_FAMILY)

BUCKET_FILE_ID_SUFFIX = "-0000-0000-0000-000000000000"
PARTITION_METAFILE = ".hoodie_partition_metadata"
DEFAULT_PARTITION_PATH = "__HIVE_DEFAULT_PARTITION__"


class WriteToken(Value):
    """``<taskPartitionId>-<stageId>-<taskAttemptId>``: which task attempt wrote a file (ordered
    by its three numbers)."""

    task_partition: int
    stage: int
    attempt: int

    def __init__(self, task_partition: int, stage: int, attempt: int) -> None:
        self._set(task_partition=task_partition, stage=stage, attempt=attempt)

    def __lt__(self, other: object) -> bool:
        return self._value_key(self) < other._value_key(other) if other.__class__ is WriteToken else NotImplemented

    def __le__(self, other: object) -> bool:
        return self._value_key(self) <= other._value_key(other) if other.__class__ is WriteToken else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self._value_key(self) > other._value_key(other) if other.__class__ is WriteToken else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self._value_key(self) >= other._value_key(other) if other.__class__ is WriteToken else NotImplemented

    def __str__(self) -> str:
        return f"{self.task_partition}-{self.stage}-{self.attempt}"

    @classmethod
    def parse(cls, text: str) -> "WriteToken":
        parts = text.split("-")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise FileNameError(f"invalid write token {text!r}: expected <partition>-<stage>-<attempt>")
        return cls(*(int(p) for p in parts))


def validate_file_id(file_id: str) -> str:
    if not isinstance(file_id, str) or not _FILE_ID_RE.match(file_id):
        raise FileNameError(f"invalid file id {file_id!r}: must be non-empty without '_', '/' or '\\\\'")
    return file_id


def _validate_family(family: str | None) -> str | None:
    if family in (None, ""):
        return None
    if not _FAMILY_RE.fullmatch(family):
        raise FileNameError(f"invalid column family suffix {family!r}: must match {_FAMILY}")
    return family


def _validate_instant(instant: str) -> str:
    if not isinstance(instant, str) or not instant.isdigit():
        raise FileNameError(f"invalid instant time {instant!r} in a file name: expected digits only")
    return instant


class BaseFileName(Value):
    """A base file: ``<fileId>_<writeToken>_<instant>[_<cf>].<ext>``."""

    file_id: str
    write_token: str
    instant: str
    family: str | None = None
    ext: str = "parquet"

    def __init__(self, file_id: str, write_token: str, instant: str, family: str | None = None,
                 ext: str = "parquet") -> None:
        validate_file_id(file_id)
        WriteToken.parse(write_token)
        _validate_instant(instant)
        self._set(file_id=file_id, write_token=write_token, instant=instant, family=_validate_family(family), ext=ext)

    @property
    def name(self) -> str:
        suffix = f"_{self.family}" if self.family else ""
        return f"{self.file_id}_{self.write_token}_{self.instant}{suffix}.{self.ext}"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: str) -> "BaseFileName":
        match = _BASE_RE.match(name)
        if not match:
            raise FileNameError(
                f"not a Hudi base file name: {name!r} (expected <fileId>_<writeToken>_<instant>[_<family>].<ext>)"
            )
        return cls(**match.groupdict())


class LogFileName(Value):
    """A log file: ``.<fileId>_<instant>[_<cf>].log.<version>_<writeToken>``.

    In table version 8 the instant is the *writing* deltacommit's requested time, which is what
    makes a log file visible only once that instant completes.
    """

    file_id: str
    instant: str
    version: int = 1
    write_token: str | None = None
    family: str | None = None
    kind: str = "log"
    cdc: bool = False

    def __init__(self, file_id: str, instant: str, version: int = 1, write_token: str | None = None,
                 family: str | None = None, kind: str = "log", cdc: bool = False) -> None:
        validate_file_id(file_id)
        _validate_instant(instant)
        if write_token is not None:
            WriteToken.parse(write_token)
        if not isinstance(version, int) or version < 0:
            raise FileNameError(f"invalid log version {version!r}")
        self._set(file_id=file_id, instant=instant, version=version, write_token=write_token,
                  family=_validate_family(family), kind=kind, cdc=cdc)

    @property
    def name(self) -> str:
        suffix = f"_{self.family}" if self.family else ""
        tail = f"_{self.write_token}" if self.write_token else ""
        cdc = ".cdc" if self.cdc else ""
        return f".{self.file_id}_{self.instant}{suffix}.{self.kind}.{self.version}{tail}{cdc}"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: str) -> "LogFileName":
        match = _LOG_RE.match(name)
        if not match:
            raise FileNameError(
                f"not a Hudi log file name: {name!r} "
                "(expected .<fileId>_<instant>[_<family>].log.<version>_<writeToken>)"
            )
        groups = match.groupdict()
        return cls(
            file_id=groups["file_id"],
            instant=groups["instant"],
            version=int(groups["version"]),
            write_token=groups["write_token"],
            family=groups["family"],
            kind=groups["kind"],
            cdc=groups["cdc"] is not None,
        )


def is_log_file_name(name: str) -> bool:
    return _LOG_RE.match(name) is not None


def is_base_file_name(name: str) -> bool:
    return _BASE_RE.match(name) is not None


def parse_data_file_name(name: str) -> BaseFileName | LogFileName:
    """Parse either kind of data file name; the error names the file."""
    if name.startswith("."):
        return LogFileName.parse(name)
    return BaseFileName.parse(name)


# ------------------------------------------------------------------------------- file ids
def new_file_id(index: int = 0) -> str:
    """A new random file group id: ``<uuid4>-<n>``."""
    return f"{uuid.uuid4()}-{index}"


def bucket_file_id(bucket: int) -> str:
    """The fixed (non-blocking concurrency) file id of a bucket, so all writers agree on it."""
    if not isinstance(bucket, int) or bucket < 0 or bucket > 99_999_999:
        raise FileNameError(f"invalid bucket number {bucket!r}: expected 0..99999999")
    return f"{bucket:08d}{BUCKET_FILE_ID_SUFFIX}-0"


def bucket_id_from_file_id(file_id: str) -> int:
    """The bucket number encoded in the first 8 characters of a bucketed file id."""
    prefix = file_id[:8]
    if len(prefix) != 8 or not prefix.isdigit():
        raise FileNameError(f"file id {file_id!r} is not a bucket file id (first 8 characters must be digits)")
    return int(prefix)


# ------------------------------------------------------------------------------- markers
class MarkerName(Value):
    """``.hoodie/.temp/<instant>/<partition>/<dataFile>.marker.<IOType>``."""

    partition_path: str
    data_file: str
    io_type: str

    def __init__(self, partition_path: str, data_file: str, io_type: str) -> None:
        self._set(partition_path=partition_path, data_file=data_file, io_type=io_type)

    def relpath(self, instant: str) -> str:
        parts = [".hoodie", ".temp", _validate_instant(instant)]
        if self.partition_path:
            parts.append(safe_relpath(self.partition_path))
        parts.append(f"{self.data_file}.marker.{self.io_type}")
        return "/".join(parts)

    @classmethod
    def parse(cls, marker_relpath: str) -> "MarkerName":
        """Parse a path relative to the instant's marker folder."""
        directory, _, file_name = marker_relpath.rpartition("/")
        match = _MARKER_RE.match(file_name)
        if not match:
            raise FileNameError(f"not a marker file name: {marker_relpath!r}")
        return cls(directory, match["data_file"], match["io_type"])


def marker_dir(instant: str) -> str:
    return f".hoodie/.temp/{_validate_instant(instant)}"


# ------------------------------------------------------------------------------- partitions
def _check_partition_value(field: str, value: str) -> str:
    if value in (".", "..") or any(ch in value for ch in "/\\\x00"):
        raise PathEscapeError(
            f"partition value {value!r} of column {field!r} cannot be used in a path "
            "(it contains '/', '\\\\', a NUL byte, or is '.' / '..')"
        )
    return value


def partition_path(fields: Sequence[str], values: Sequence[object], hive_style: bool = False) -> str:
    """The relative partition folder for one row's partition values (``""`` when unpartitioned)."""
    if len(fields) != len(values):
        raise ValueError(f"{len(fields)} partition fields but {len(values)} values")
    parts = []
    for field, value in zip(fields, values):
        text = DEFAULT_PARTITION_PATH if value is None or value == "" else str(value)
        _check_partition_value(field, text)
        if not hive_style and text.startswith(".hoodie"):
            raise PathEscapeError(f"partition value {text!r} of column {field!r} cannot be used in a path "
                                  "(a folder starting with '.hoodie' is Hudi's metadata, never read as data)")
        parts.append(f"{field}={text}" if hive_style else text)
    return safe_relpath("/".join(parts))
