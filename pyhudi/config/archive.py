"""Timeline archival settings (Hudi's ``HoodieArchivalConfig`` keys, names and defaults).

Declared once here for the archival service, the write path's automatic trigger and docs.
"""

from __future__ import annotations

from typing import Mapping

from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError

MIN_COMMITS_TO_KEEP = ConfigKey(
    "hoodie.keep.min.commits", int, 20,
    "Archival keeps at least this many completed commits on the active timeline.",
)
MAX_COMMITS_TO_KEEP = ConfigKey(
    "hoodie.keep.max.commits", int, 30,
    "Archival runs once the active timeline holds more completed commits than this, and archives the "
    "oldest down to hoodie.keep.min.commits.",
)
AUTO_ARCHIVE = ConfigKey(
    "hoodie.archive.automatic", bool, True,
    "Archive the timeline after each commit when it holds more than hoodie.keep.max.commits commits.",
)
TIMELINE_COMPACTION_BATCH_SIZE = ConfigKey(
    "hoodie.timeline.compaction.batch.size", int, 10,
    "LSM timeline: once a level holds this many files, its oldest ones are merged into one file of "
    "the next level.",
)


def keep_bounds(options: Mapping[str, str]) -> tuple[int, int]:
    """``(min, max)`` commits to keep, validated as Hudi does (max > min > 0)."""
    low, high = MIN_COMMITS_TO_KEEP.get(options), MAX_COMMITS_TO_KEEP.get(options)
    if low < 1:
        raise ConfigError(f"{MIN_COMMITS_TO_KEEP.key} must be at least 1, got {low}")
    if high <= low:
        raise ConfigError(f"{MAX_COMMITS_TO_KEEP.key} ({high}) must be greater than "
                          f"{MIN_COMMITS_TO_KEEP.key} ({low})")
    return low, high


def compaction_batch(options: Mapping[str, str]) -> int:
    size = TIMELINE_COMPACTION_BATCH_SIZE.get(options)
    if size < 2:
        raise ConfigError(f"{TIMELINE_COMPACTION_BATCH_SIZE.key} must be at least 2, got {size}")
    return size
