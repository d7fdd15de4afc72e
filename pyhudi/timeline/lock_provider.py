"""Lock providers: which lock guards a table's timeline (``hoodie.write.lock.provider``).

The timeline lock makes instant-time generation and completion atomic (see
:mod:`pyhudi.timeline.lock`). How it is implemented depends on the store:

* ``org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider`` — :class:`FileLock`,
  a lock file created with create-if-absent. Correct only where that create is atomic: local
  file systems and S3 stores with conditional put (:attr:`Storage.atomic_create`); asking for it
  elsewhere is a :class:`ConfigError`.
* ``org.apache.hudi.client.transaction.lock.InProcessLockProvider`` — :class:`InProcessLock`,
  one lock per table in this process: any number of threads, one process.
* Unset (the default): the file-system lock where create is atomic, else the in-process lock.
  On a store without atomic create, writers in *several processes* need an external lock.

An external lock (a DynamoDB table, ZooKeeper, a database row) plugs in through
:func:`register_lock_provider`: register a factory ``(storage, props) -> LockProvider`` under the
class name users put in ``hoodie.write.lock.provider`` (e.g.
``org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider``). The factory reads its own
keys from ``props`` (table properties overlaid with write options) — for DynamoDB, Hudi's
``hoodie.write.lock.dynamodb.table``/``.partition_key``/``.region`` — and returns an object
with the :class:`LockProvider` methods; for DynamoDB, ``acquire`` would be a conditional
``PutItem`` (``attribute_not_exists``) on the partition key with a lease time, ``release`` a
conditional ``DeleteItem`` on the owner id. Names in config are looked up in the registry only:
pyhudi never imports a class named by configuration.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Callable, Mapping, Protocol

from pyhudi.errors import ConfigError, LockError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.lock import LOCK_WAIT_TIME_MS, FileLock, LockHolder
from pyhudi.config.lock import LOCK_PROVIDER  # noqa: F401 (declared there)

FILE_SYSTEM_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
IN_PROCESS_LOCK_PROVIDER = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"


class LockProvider(Protocol):
    """What the timeline needs from a lock (a superset of ``TimelineLock``)."""

    def acquire(self, timeout_s: float | None = None) -> None:
        """Take the lock or raise :class:`LockError` (naming the holder) after the timeout.
        Not re-entrant: acquiring a lock the current thread holds raises :class:`LockError`."""

    def release(self) -> None:
        """Release the lock; :class:`LockError` if the current thread does not hold it."""

    def held_by_current_thread(self) -> bool: ...

    def holder(self) -> LockHolder | None:
        """Who holds the lock, if known (for error messages and operators)."""


LockProviderFactory = Callable[[Storage, Mapping[str, str]], LockProvider]

_FACTORIES: dict[str, LockProviderFactory] = {}
_FACTORIES_GUARD = threading.Lock()


def register_lock_provider(name: str, factory: LockProviderFactory) -> None:
    """Make ``hoodie.write.lock.provider=<name>`` build its lock with ``factory(storage, props)``.

    Registering a name again replaces the factory (a test or an application may swap it)."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"a lock provider name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise ConfigError(f"the factory of lock provider {name!r} is not callable: {factory!r}")
    with _FACTORIES_GUARD:
        _FACTORIES[name.strip()] = factory


def unregister_lock_provider(name: str) -> None:
    with _FACTORIES_GUARD:
        _FACTORIES.pop(name, None)


def lock_provider_names() -> list[str]:
    with _FACTORIES_GUARD:
        return sorted(_FACTORIES)


def create_lock(storage: Storage, props: Mapping[str, str]) -> LockProvider:
    """The timeline lock for the table at ``storage``, as ``props`` (table properties overlaid
    with write options) choose it.

    A provider that cannot be built (an unknown name, a file-system lock on a store without
    atomic create) yields a lock whose ``acquire`` raises the :class:`ConfigError`: readers never
    take the lock and keep working, and a write fails before it changes anything (its first step,
    generating the instant time, takes the lock)."""
    name = LOCK_PROVIDER.get(props)
    if name is None or not name.strip():
        if storage.atomic_create:
            return FileLock.from_config(storage, props)
        return InProcessLock.from_config(storage, props)
    with _FACTORIES_GUARD:
        factory = _FACTORIES.get(name.strip())
    if factory is None:
        known = ", ".join(lock_provider_names())
        return UnavailableLock(ConfigError(
            f"unknown {LOCK_PROVIDER.key}={name!r}: pyhudi has no such lock provider (known: {known}); "
            "register an implementation with pyhudi.timeline.lock_provider.register_lock_provider"
        ))
    try:
        return factory(storage, props)
    except ConfigError as exc:
        return UnavailableLock(exc)


class UnavailableLock:
    """Stands in for a lock provider that could not be built; taking it raises why."""

    def __init__(self, error: ConfigError) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"UnavailableLock({self.error})"

    def acquire(self, timeout_s: float | None = None) -> None:
        raise ConfigError(str(self.error))

    def release(self) -> None:
        raise LockError(f"the lock was never acquired: {self.error}")

    def held_by_current_thread(self) -> bool:
        return False

    def holder(self) -> LockHolder | None:
        return None


def _file_system_lock(storage: Storage, props: Mapping[str, str]) -> FileLock:
    if not storage.atomic_create:
        raise ConfigError(
            f"{LOCK_PROVIDER.key}={FILE_SYSTEM_LOCK_PROVIDER} needs a store with atomic create, and "
            f"{storage.base_uri} has none (no conditional put): use {IN_PROCESS_LOCK_PROVIDER} for writers "
            "in one process, or register an external lock provider"
        )
    return FileLock.from_config(storage, props)


class _TableLockState:
    """The one lock (and its holder) shared by every :class:`InProcessLock` of a table."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner_thread: int | None = None
        self.holder: LockHolder | None = None


_IN_PROCESS: dict[str, _TableLockState] = {}
_IN_PROCESS_GUARD = threading.Lock()


def _table_key(storage: Storage) -> str:
    """Identity of a table in this process: its local root, or its URI (``s3a`` spelled ``s3``)."""
    if storage.is_local:
        return storage.root
    uri = storage.base_uri.rstrip("/")
    return "s3://" + uri.split("://", 1)[1] if uri.lower().startswith("s3a://") else uri


class InProcessLock:
    """A process-wide lock per table path, like Hudi's ``InProcessLockProvider``.

    Every object for the same table shares one ``threading.Lock``, so timelines opened by
    different handles in different threads exclude each other. It does not exclude other
    processes. ``held_by_current_thread`` is true for every object of the table while this
    thread holds it, so nested lock scopes of one thread do not deadlock.
    """

    def __init__(self, key: str, wait_timeout_s: float = LOCK_WAIT_TIME_MS.default / 1000.0) -> None:  # type: ignore[operator]
        self.key = key
        self.wait_timeout_s = float(wait_timeout_s)
        with _IN_PROCESS_GUARD:
            self._state = _IN_PROCESS.setdefault(key, _TableLockState())

    @classmethod
    def from_config(cls, storage: Storage, props: Mapping[str, str]) -> InProcessLock:
        return cls(_table_key(storage), wait_timeout_s=LOCK_WAIT_TIME_MS.get(props) / 1000.0)

    def __repr__(self) -> str:
        return f"InProcessLock({self.key!r}, held={self._state.owner_thread is not None})"

    def held_by_current_thread(self) -> bool:
        return self._state.owner_thread == threading.get_ident()

    def holder(self) -> LockHolder | None:
        return self._state.holder

    def acquire(self, timeout_s: float | None = None) -> None:
        state = self._state
        if self.held_by_current_thread():
            raise LockError(f"in-process lock of {self.key} is already held by this thread (not re-entrant)")
        timeout = self.wait_timeout_s if timeout_s is None else float(timeout_s)
        if not state.lock.acquire(timeout=max(0.0, timeout)):
            who = state.holder.describe() if state.holder is not None else "another thread"
            raise LockError(f"could not acquire in-process lock of {self.key} within {timeout:.3f}s: held by {who}")
        state.owner_thread = threading.get_ident()
        state.holder = LockHolder(owner=f"{threading.current_thread().name}-{uuid.uuid4().hex[:8]}",
                                  pid=os.getpid(), host=socket.gethostname(), acquired_at_ms=time.time_ns() // 1_000_000)

    def release(self) -> None:
        state = self._state
        if not self.held_by_current_thread():
            raise LockError(f"in-process lock of {self.key} is not held by this thread")
        state.owner_thread = None
        state.holder = None
        state.lock.release()

    def __enter__(self) -> InProcessLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


register_lock_provider(FILE_SYSTEM_LOCK_PROVIDER, _file_system_lock)
register_lock_provider(IN_PROCESS_LOCK_PROVIDER, InProcessLock.from_config)

__all__ = [
    "LockProvider",
    "LockProviderFactory",
    "InProcessLock",
    "UnavailableLock",
    "LOCK_PROVIDER",
    "FILE_SYSTEM_LOCK_PROVIDER",
    "IN_PROCESS_LOCK_PROVIDER",
    "register_lock_provider",
    "unregister_lock_provider",
    "lock_provider_names",
    "create_lock",
]
