"""Listing the timeline folder and folding its files into instants, once per listing.

A write lists the active timeline several times (planning, completion under the lock, each
service's check after it), and every listing must be taken — it is what makes a timeline
current. What is built from a listing need not be: equal listings are equal timelines (every
state change adds or removes a file, and a file name never changes meaning), so

- :func:`list_instant_files` lists a local folder by name alone (no ``stat`` per file; only names
  whose completion time is the file's modification time — layout 1, legacy names — are
  stat'ed) and parses a listing equal to the folder's last one only once (:data:`_LISTED`);
- :func:`folded` folds the files of one instant (requested, inflight, completed) into that
  instant in its most advanced state, and keeps the result per table (:data:`_BUILT`) for every
  timeline object that lists the same files; :func:`refolded` folds again only the instant a
  transition added a file to.

Shared results are never mutated: a timeline replaces its lists, it does not change them.
"""

from __future__ import annotations

import bisect
import os
import posixpath
from typing import Any

from pyhudi.errors import FileNameError, StorageError, TimelineError
from pyhudi.storage.fs import Storage
from pyhudi.timeline.instant import Action, Instant, State

GroupKey = tuple[str, Action]  # (requested time, completed action): the files of one instant
Names = dict[tuple[str, Action, State], str]  # (requested time, completed action, state) -> file name


def list_instant_files(storage: Storage, timeline_dir: str, layout_version: int, timezone: str) -> dict[str, Instant]:
    """File name -> instant of every instant file in the timeline folder, by name."""
    entries: dict[str, Instant] = {}
    if not storage.is_local:
        for info in storage.list_files(timeline_dir):
            name = posixpath.basename(info.path)
            instant = parse_instant_file(name, layout_version, info.mtime_ns, timezone)
            if instant is not None:
                entries[name] = instant
        return entries
    folder = storage.full_path(timeline_dir)
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return entries
    except OSError as exc:
        raise StorageError(f"cannot list {folder}: {exc}") from exc
    key = (folder, layout_version, timezone)
    listed = _LISTED.get(key)
    if listed is not None and listed[0] == names:  # (the listing of the last load: same files)
        return dict(listed[1])
    timed = False  # (names whose completion time is a modification time are parsed every time)
    for name in names:
        instant = parse_instant_file(name, layout_version, None, timezone)
        if instant is not None and instant.is_completed and instant.completion_time is None:
            timed = True
            try:
                mtime_ns = os.stat(f"{folder}/{name}").st_mtime_ns
            except FileNotFoundError:
                continue  # (gone since the listing: as if listed a moment later)
            instant = parse_instant_file(name, layout_version, mtime_ns, timezone)
        if instant is not None:
            entries[name] = instant
    if not timed:
        _remember(_LISTED, key, (names, dict(entries)))
    return entries


def listed_with(storage: Storage, timeline_dir: str, layout_version: int, timezone: str, name: str) -> None:
    """Add ``name`` — an instant file this process just created — to the folder's last listing
    (:data:`_LISTED`), so the next listing that finds it (the completion's, under the lock; the
    next write's) is parsed no more than one that finds nothing new. The memo stays what it
    is: the parse of a list of names, whatever the folder holds now."""
    if not storage.is_local:
        return
    key = (storage.full_path(timeline_dir), layout_version, timezone)
    listed = _LISTED.get(key)
    instant = parse_instant_file(name, layout_version, None, timezone)
    if listed is None or instant is None or (instant.is_completed and instant.completion_time is None):
        return
    names = list(listed[0])
    at = bisect.bisect_left(names, name)
    if at < len(names) and names[at] == name:
        return
    names.insert(at, name)
    entries = dict(listed[1])
    entries[name] = instant
    _LISTED[key] = (names, entries)


def folded(table_key: tuple[str, str, int], entries: dict[str, Instant]) -> tuple[list[Instant], Names]:
    """The instants (by requested time) and state file names the listed ``entries`` make."""
    built = _BUILT.get(table_key)
    if built is not None and built[0] == entries:
        return built[1], built[2]
    groups: dict[GroupKey, dict[State, list[tuple[Instant, str]]]] = {}
    for name, inst in entries.items():
        groups.setdefault((inst.requested_time, inst.completed_action), {}).setdefault(
            inst.state, []).append((inst, name))
    names: Names = {}
    instants = sorted(fold_group(key, by_state, names) for key, by_state in groups.items())
    _remember(_BUILT, table_key, (dict(entries), instants, names))
    return instants, names


def refolded(table_key: tuple[str, str, int], entries: dict[str, Instant], instants: list[Instant],
             names: Names, key: GroupKey) -> tuple[list[Instant], Names]:
    """:func:`folded` after a file of the instant ``key`` was added to ``entries``, from the
    fold before it (``instants``, ``names``): only that instant is folded again."""
    requested, action = key
    by_state: dict[State, list[tuple[Instant, str]]] = {}
    for name, inst in entries.items():  # (an instant's file names begin with its requested time)
        if name.startswith(requested) and inst.requested_time == requested and inst.completed_action is action:
            by_state.setdefault(inst.state, []).append((inst, name))
    names = dict(names)
    for state in State:
        names.pop((requested, action, state), None)
    instants = list(instants)
    for index in range(len(instants) - 1, -1, -1):  # (a transition's instant is mostly the latest)
        if instants[index].requested_time == requested and instants[index].completed_action is action:
            del instants[index]
            break
    if by_state:
        bisect.insort(instants, fold_group(key, by_state, names))
    _remember(_BUILT, table_key, (dict(entries), instants, names))
    return instants, names


def fold_group(key: GroupKey, by_state: dict[State, list[tuple[Instant, str]]], names: Names) -> Instant:
    """The one instant the files of ``key`` make, in its most advanced state; records each
    state's file name in ``names``."""
    requested, completed_action = key
    for state, entries in by_state.items():
        entries.sort(key=lambda e: (e[0].completion_time or "", e[1]))
        names[(requested, completed_action, state)] = entries[0][1]
    if State.COMPLETED in by_state:
        done = by_state[State.COMPLETED][0][0]
        pending = [e[0].action for s in (State.REQUESTED, State.INFLIGHT) for e in by_state.get(s, ())]
        origin = next((a for a in pending if a is not done.action), None)
        return Instant(requested, done.action, State.COMPLETED, done.completion_time, pending_action=origin)
    if State.INFLIGHT in by_state:
        return by_state[State.INFLIGHT][0][0]
    return by_state[State.REQUESTED][0][0]


def parse_instant_file(name: str, layout_version: int, mtime_ns: int | None, timezone: str) -> Instant | None:
    """``Instant.parse`` through :data:`_PARSED`; names whose completion time comes from the file's
    modification time (completed layout-1 and legacy names) are parsed with it every time."""
    key = (name, layout_version)
    if key in _PARSED:
        instant = _PARSED[key]
    else:
        try:
            instant = Instant.parse(name, layout_version)
        except (FileNameError, TimelineError):
            instant = None
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[key] = instant
    if instant is not None and instant.is_completed and instant.completion_time is None and mtime_ns is not None:
        return Instant.parse(name, layout_version, modification_time_ns=mtime_ns, timezone=timezone)
    return instant


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= _MEMO_MAX:
        memo.clear()
    memo[key] = value


_MEMO_MAX = 64
_BUILT: dict[tuple[str, str, int], tuple[dict[str, Instant], list[Instant], Names]] = {}
"""(table, timeline dir, layout) -> the last listing folded: its entries, instants and names."""
_LISTED: dict[tuple[str, int, str], tuple[list[str], dict[str, Instant]]] = {}
"""(local timeline folder, layout, timezone) -> its last listing (sorted names) and the instant
files among them."""
_PARSED: dict[tuple[str, int], Instant | None] = {}
"""Instant file name -> what it says (None: not an instant file). Names never change meaning, so
one cache serves every load of every timeline."""
_PARSED_MAX = 200_000
