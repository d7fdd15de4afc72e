"""Compaction settings (Hudi's ``HoodieCompactionConfig`` keys, names and defaults).

Declared once here so the compaction service, the write client's inline trigger and a docs
generator read the same keys (reference: hudi-internals-services.md §1).
"""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError

_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."
LOG_FILE_SIZE_STRATEGY = _STRATEGY_PACKAGE + "LogFileSizeBasedCompactionStrategy"
LOG_FILE_NUM_STRATEGY = _STRATEGY_PACKAGE + "LogFileNumBasedCompactionStrategy"
BOUNDED_IO_STRATEGY = _STRATEGY_PACKAGE + "BoundedIOCompactionStrategy"
UNBOUNDED_STRATEGY = _STRATEGY_PACKAGE + "UnBoundedCompactionStrategy"
STRATEGIES = (LOG_FILE_SIZE_STRATEGY, LOG_FILE_NUM_STRATEGY, BOUNDED_IO_STRATEGY, UNBOUNDED_STRATEGY)

INLINE_COMPACT = ConfigKey(
    "hoodie.compact.inline", bool, False,
    "Schedule and run a compaction after a write commits, when the trigger strategy says one is due.",
)
INLINE_TRIGGER_STRATEGY = ConfigKey(
    "hoodie.compact.inline.trigger.strategy", str, "NUM_COMMITS",
    "When an inline compaction is due: after max.delta.commits delta commits (NUM_COMMITS), after "
    "max.delta.seconds (TIME_ELAPSED), both (NUM_AND_TIME) or either (NUM_OR_TIME).",
    choices=("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"),
)
INLINE_MAX_DELTA_COMMITS = ConfigKey(
    "hoodie.compact.inline.max.delta.commits", int, 5,
    "Delta commits since the last compaction after which an inline compaction is due.",
)
INLINE_MAX_DELTA_SECONDS = ConfigKey(
    "hoodie.compact.inline.max.delta.seconds", int, 3600,
    "Seconds since the last compaction (or the first delta commit) after which an inline compaction is due.",
)
COMPACTION_STRATEGY = ConfigKey(
    "hoodie.compaction.strategy", str, LOG_FILE_SIZE_STRATEGY,
    "Which file slices a plan compacts and in what order (Hudi's class names; pyhudi maps them to its own "
    "strategies and never loads a class): LogFileSizeBased (default: slices whose log files reach "
    "hoodie.compaction.logfile.size.threshold, largest first, bounded by hoodie.compaction.target.io), "
    "LogFileNumBased, BoundedIO, UnBounded.",
)
LOG_FILE_SIZE_THRESHOLD = ConfigKey(
    "hoodie.compaction.logfile.size.threshold", int, 0,
    "LogFileSizeBased strategy: a slice is compacted once its log files hold at least this many bytes.",
)
LOG_FILE_NUM_THRESHOLD = ConfigKey(
    "hoodie.compaction.logfile.num.threshold", int, 0,
    "LogFileNumBased strategy: a slice is compacted once it has at least this many log files.",
)
TARGET_IO = ConfigKey(
    "hoodie.compaction.target.io", int, 512_000,
    "Bounded strategies: MB of IO (read + write) one compaction plans at most (the slice crossing it is kept).",
)

FULL_COPY_CHUNKS = ConfigKey(
    "hoodie.compaction.full.copy.chunks", bool, True,
    "pyhudi: a full compaction copies the column chunks of the families whose slice is a base file without "
    "log files byte for byte into the full-row base file (when those base files hold the same keys in the same "
    "row groups) instead of decoding and encoding them again; false encodes every column.",
)


def strategy_name(raw: str) -> str:
    """The full Hudi class name of a strategy given by class name or short name."""
    short = raw.strip().rsplit(".", 1)[-1]
    for name in STRATEGIES:
        if name.rsplit(".", 1)[-1].lower() in (short.lower(), short.lower() + "compactionstrategy"):
            return name
    known = ", ".join(s.rsplit(".", 1)[-1] for s in STRATEGIES)
    raise ConfigError(f"unknown compaction strategy {raw!r} for {COMPACTION_STRATEGY.key}: expected one of {known}")
