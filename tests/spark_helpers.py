"""Helpers shared by the Spark tests: table contents normalised for comparisons across writers.

Instants differ between two tables written at different times, and Spark's write tokens
(``<partition>-<stage>-<attempt>``) differ from the local engine's (``<index>-1-0``); so do the
sizes of files whose ``_hoodie_commit_seqno`` embeds the task index. With ``tokens=False`` those
are masked, everything else (file groups, families, kinds of file, record counts) must match.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

import pyhudi

# The table the Spark write and engine tests write: a key, two families' columns, a partition.
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), False),
    ("a", pa.float64()), ("b", pa.string()), ("ts", pa.int64()),
    ("c", pa.int64()),
    ("p", pa.string()),
])

_TOKEN = re.compile(r"(?<=_)\d+-\d+-\d+(?=_<I|$|')")
_SIZE_FIELDS = ("totalWriteBytes", "fileSizeInBytes", "total_write_bytes", "file_size_in_bytes")


def _mask(text: str, instants: list[str], tokens: bool) -> str:
    for i, instant in enumerate(instants):
        text = text.replace(instant, f"<I{i}>")
    return text if tokens else _TOKEN.sub("<T>", text)


def data_files(root: Path, instants: list[str], tokens: bool = True) -> list[str]:
    """Every data file, its writing instant replaced by its position in ``instants``."""
    out = []
    for p in Path(root).rglob("*"):
        rel = p.relative_to(root)
        if p.is_file() and rel.parts[0] != ".hoodie" and p.name != ".hoodie_partition_metadata":
            out.append(_mask(str(rel), instants, tokens))
    return sorted(out)


def commit_stats(table: pyhudi.Table, instants: list[str], tokens: bool = True, sizes: bool | None = None) -> list[dict]:
    """The write stats of every completed commit, without timings and with instants normalised;
    ``sizes=False`` leaves out byte sizes (by default, only when ``tokens`` is False too): the
    instant is written into every record's sequence number, and how well those compress depends
    on its digits, so two tables written at different instants may differ by a byte."""
    sizes = tokens if sizes is None else sizes
    timeline = table.active_timeline()
    out = []
    for instant in timeline.commits_timeline():
        metadata = timeline.read_metadata(instant)
        stats = []
        for partition, items in sorted(metadata.partition_to_write_stats.items()):
            for stat in items:
                d = stat.to_dict()
                d.pop("runtimeStats", None)
                d.pop("runtime_stats", None)
                if not sizes:
                    for name in _SIZE_FIELDS:
                        d.pop(name, None)
                stats.append((partition, _mask(repr(sorted(d.items())), instants, tokens)))
        out.append({"operation": metadata.operation_type, "stats": sorted(stats),
                    "schema": metadata.extra_metadata["schema"]})
    return out


def timeline_states(table: pyhudi.Table) -> list[tuple[str, str]]:
    """(action, state) of every instant on the active timeline, in order."""
    return [(str(i.action), i.state.value) for i in table.timeline]


def leftovers(root: Path) -> list[str]:
    """Markers, heartbeats and temporary files left in ``.hoodie`` (a clean table has none)."""
    hoodie = Path(root) / ".hoodie"
    out = []
    for sub in (".temp", ".heartbeat"):
        folder = hoodie / sub
        if folder.exists():
            out += [str(p.relative_to(hoodie)) for p in folder.rglob("*") if p.is_file()]
    return sorted(out)
