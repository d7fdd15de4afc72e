"""Cleaning settings (Hudi's ``HoodieCleanConfig`` keys, names and defaults).

Apache Hudi 1.x renamed the ``hoodie.cleaner.*`` keys ``hoodie.clean.*`` (and ``hoodie.clean.async``
``hoodie.clean.async.enabled``), keeping the old names as alternatives: both spellings are read.

Declared once here so the cleaner, the write client's automatic trigger, the CLI and a docs
generator read the same keys (reference: hudi-internals-services.md §3).
"""

from __future__ import annotations

from typing import Mapping

from pyhudi.config.keys import ConfigKey
from pyhudi.errors import ConfigError

KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"
POLICIES = (KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS, KEEP_LATEST_BY_HOURS)

AUTO_CLEAN = ConfigKey(
    "hoodie.clean.automatic", bool, True,
    "Clean after every write that commits, when the trigger (hoodie.clean.max.commits) says one is due.",
)
ASYNC_CLEAN = ConfigKey(
    "hoodie.clean.async", bool, False,
    "Run the automatic clean in a background thread of the writing process: the write returns as soon "
    "as it commits (Table.wait_for_clean() waits for it). A clean cut short by the process exiting is "
    "pending and is executed from its plan by the next clean.",
    aliases=("hoodie.clean.async.enabled",),
)
CLEANER_POLICY = ConfigKey(
    "hoodie.cleaner.policy", str, KEEP_LATEST_COMMITS,
    "Which file versions the cleaner keeps: every file the snapshots of the last N commits read "
    "(KEEP_LATEST_COMMITS), of the commits of the last N hours (KEEP_LATEST_BY_HOURS), or the newest N "
    "file slices of every file group (KEEP_LATEST_FILE_VERSIONS, no time-travel guarantee).",
    aliases=("hoodie.clean.policy",),
    choices=POLICIES,
)
COMMITS_RETAINED = ConfigKey(
    "hoodie.cleaner.commits.retained", int, 10,
    "KEEP_LATEST_COMMITS: time travel to each of the last N completed commits keeps working.",
    aliases=("hoodie.clean.commits.retained",),
)
HOURS_RETAINED = ConfigKey(
    "hoodie.cleaner.hours.retained", int, 24,
    "KEEP_LATEST_BY_HOURS: time travel to each commit requested in the last N hours keeps working.",
    aliases=("hoodie.clean.hours.retained",),
)
FILE_VERSIONS_RETAINED = ConfigKey(
    "hoodie.cleaner.fileversions.retained", int, 3,
    "KEEP_LATEST_FILE_VERSIONS: file slices kept per file group and family (the latest one included).",
    aliases=("hoodie.clean.fileversions.retained",),
)
TRIGGER_STRATEGY = ConfigKey(
    "hoodie.clean.trigger.strategy", str, "NUM_COMMITS",
    "When an automatic clean is due: after hoodie.clean.max.commits commits since the last clean "
    "(NUM_COMMITS is Hudi's only cleaning trigger strategy; other values are refused).",
    choices=("NUM_COMMITS",),
)
MAX_COMMITS = ConfigKey(
    "hoodie.clean.max.commits", int, 1,
    "Completed commits since the last clean after which an automatic clean is planned.",
)
INCREMENTAL_MODE = ConfigKey(
    "hoodie.cleaner.incremental.mode", bool, True,
    "List only the partitions written since the previous clean's earliest retained commit (plus those "
    "where a reader's pin held files back); otherwise list every partition.",
    aliases=("hoodie.clean.incremental.enabled",),
)


def checked(options: Mapping[str, str]) -> tuple[str, int]:
    """The policy and its retention number, refusing values no cleaner could honour."""
    policy = CLEANER_POLICY.get(options)
    key = {KEEP_LATEST_COMMITS: COMMITS_RETAINED, KEEP_LATEST_BY_HOURS: HOURS_RETAINED,
           KEEP_LATEST_FILE_VERSIONS: FILE_VERSIONS_RETAINED}[policy]
    value = key.get(options)
    if value < 1:
        raise ConfigError(f"{key.key}={value}: the cleaner must retain at least 1 (the latest snapshot is always kept)")
    if MAX_COMMITS.get(options) < 1:
        raise ConfigError(f"{MAX_COMMITS.key}={MAX_COMMITS.get(options)} must be at least 1")
    return policy, value
