"""Timeline lock settings (Hudi's ``hoodie.write.lock.*`` keys and the lock provider), declared once."""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey

LOCK_WAIT_TIME_MS = ConfigKey(
    "hoodie.write.lock.wait_time_ms", int, 60_000,
    "How long (ms) one acquire waits for the timeline lock before failing with LockError.",
)

LOCK_NUM_RETRIES = ConfigKey(
    "hoodie.write.lock.num_retries", int, None,
    "Maximum number of retries of one acquire; unset = retry until hoodie.write.lock.wait_time_ms.",
)

LOCK_RETRY_WAIT_MS = ConfigKey(
    "hoodie.write.lock.wait_time_ms_between_retry", int, 2,
    "First backoff (ms) between acquire attempts; doubles up to the max. pyhudi holds the lock for "
    "milliseconds, so its default is far below Hudi's 1000.",
)

LOCK_MAX_RETRY_WAIT_MS = ConfigKey(
    "hoodie.write.lock.max_wait_time_ms_between_retry", int, 50,
    "Upper bound (ms) of the backoff between acquire attempts.",
)

LOCK_EXPIRE_MINUTES = ConfigKey(
    "hoodie.write.lock.filesystem.expire", float, 1.0,
    "Minutes after which a file lock counts as stale and may be broken (Hudi's unit; fractions allowed). "
    "0 = never expire (dead holders on this host are still detected by pid).",
)

LOCK_PROVIDER = ConfigKey(
    "hoodie.write.lock.provider", str, None,
    "Lock guarding the timeline: FileSystemBasedLockProvider (needs atomic create), InProcessLockProvider, "
    "or a name registered with pyhudi.timeline.lock_provider.register_lock_provider. Unset: the file-system "
    "lock where create is atomic, else the in-process lock.",
)
