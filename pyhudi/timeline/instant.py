"""Instants: the (requested time, action, state, completion time) records of a Hudi timeline.

An instant is stored as up to three write-once files (requested, inflight, completed), so the
whole timeline protocol rests on one file-name grammar. It is declared here once, as a table of
actions (:data:`COMPLETED_ACTION`), and both directions (name -> instant, instant -> name) use it.

Layout 2 (table version 8+, ``.hoodie/timeline/``)::

    {t}.{action}.requested
    {t}.{action}.inflight            except plain commit: {t}.inflight
    {t}_{completion}.{ext}           ext = COMPLETED_ACTION[action]

Layout 1 (table version 6, ``.hoodie/``) is the same except that completed files carry no
completion time (``{t}.{ext}``); Hudi then takes the completion time from the file's
modification time, and so does :meth:`Instant.parse` when given one.

Pending table services complete under another action: compaction as ``commit``, log compaction
as ``deltacommit``, clustering as ``replacecommit``. A completed instant keeps the action its file
says and remembers the service it came from in :attr:`Instant.pending_action` (the
:class:`~pyhudi.timeline.timeline.Timeline` fills it in when both files exist).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from datetime import timezone as dt_timezone
from enum import Enum
from functools import total_ordering

from pyhudi.errors import FileNameError, TimelineError
from pyhudi.value import Value


class Action(str, Enum):
    """Timeline actions, spelled as in file names (``HoodieTimeline`` constants)."""

    COMMIT = "commit"
    DELTACOMMIT = "deltacommit"
    REPLACECOMMIT = "replacecommit"
    CLUSTERING = "clustering"
    COMPACTION = "compaction"
    LOGCOMPACTION = "logcompaction"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"
    SCHEMACOMMIT = "schemacommit"

    def __str__(self) -> str:
        return self.value


class State(str, Enum):
    """Instant states; an instant's state is that of its most advanced file."""

    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return _STATE_RANK[self]


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}

#: The one grammar table: the action a pending action completes as (= the completed extension).
COMPLETED_ACTION: dict[Action, Action] = {
    Action.COMMIT: Action.COMMIT,
    Action.DELTACOMMIT: Action.DELTACOMMIT,
    Action.REPLACECOMMIT: Action.REPLACECOMMIT,
    Action.CLUSTERING: Action.REPLACECOMMIT,
    Action.COMPACTION: Action.COMMIT,
    Action.LOGCOMPACTION: Action.DELTACOMMIT,
    Action.CLEAN: Action.CLEAN,
    Action.ROLLBACK: Action.ROLLBACK,
    Action.SAVEPOINT: Action.SAVEPOINT,
    Action.RESTORE: Action.RESTORE,
    Action.INDEXING: Action.INDEXING,
    Action.SCHEMACOMMIT: Action.SCHEMACOMMIT,
}
#: Actions that can appear as a completed file's extension.
COMPLETED_EXTENSIONS: frozenset[Action] = frozenset(COMPLETED_ACTION.values())
#: The inflight file of a plain commit has no action part (back-compat with 0.x).
INFLIGHT_COMMIT_SUFFIX = ".inflight"
REQUESTED_SUFFIX = ".requested"
INFLIGHT_SUFFIX = ".inflight"

_ACTIONS_BY_NAME = {a.value: a for a in Action}
_NAME_V2 = re.compile(r"^(\d+(_\d+)?)(\.\w+)(\.\D+)?$")
_NAME_V1 = re.compile(r"^(\d+)(\.\w+)(\.\D+)?$")
_TIME_FORMAT = "%Y%m%d%H%M%S"
_EPOCH = datetime(1970, 1, 1, tzinfo=dt_timezone.utc)


@total_ordering
class Instant(Value):
    """One instant of the timeline, in one state.

    Instances sort by requested time (then action and state), which is the order Hudi's
    timelines use; completion-time order is a separate question (see ``Timeline``).
    ``action`` and ``state`` accept plain strings and are stored as :class:`Action` / :class:`State`
    (both ``str`` enums, so ``instant.action == "commit"`` holds).
    """

    requested_time: str
    action: Action
    state: State
    completion_time: str | None = None
    #: For a completed ``commit``/``deltacommit``/``replacecommit`` that finished a compaction,
    #: log compaction or clustering: that pending action. Not part of equality.
    pending_action: Action | None = None
    _value_uncompared = ("pending_action",)

    def __init__(self, requested_time: str, action: Action | str, state: State | str,
                 completion_time: str | None = None, pending_action: Action | str | None = None) -> None:
        action = to_action(action)
        try:
            state = State(state)
        except ValueError:
            raise TimelineError(f"unknown instant state {state!r} for instant {requested_time}") from None
        if pending_action is not None:
            pending_action = to_action(pending_action)
        if not _is_digits(requested_time):
            raise TimelineError(f"instant time must be a string of digits, got {requested_time!r}")
        if completion_time is not None and not _is_digits(completion_time):
            raise TimelineError(
                f"completion time must be a string of digits, got {completion_time!r} "
                f"for instant {requested_time}"
            )
        self._set(requested_time=requested_time, action=action, state=state, completion_time=completion_time,
                  pending_action=pending_action)

    # ------------------------------------------------------------------ ordering
    def _sort_key(self) -> tuple[str, str, int, str]:
        return (self.requested_time, self.action.value, self.state.rank, self.completion_time or "")

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self._sort_key() < other._sort_key()

    def __str__(self) -> str:
        done = f"->{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action.value}__{self.state.value}]"

    # ------------------------------------------------------------------ properties
    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_pending(self) -> bool:
        return self.state is not State.COMPLETED

    @property
    def is_requested(self) -> bool:
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        return self.state is State.INFLIGHT

    @property
    def completed_action(self) -> Action:
        """The action this instant has (or will have) once completed."""
        return COMPLETED_ACTION[self.action]

    @property
    def origin_action(self) -> Action:
        """The action the instant was requested as (compaction for a completed compaction)."""
        return self.pending_action or self.action

    @property
    def is_compaction(self) -> bool:
        return self.origin_action is Action.COMPACTION

    @property
    def is_log_compaction(self) -> bool:
        return self.origin_action is Action.LOGCOMPACTION

    @property
    def is_clustering(self) -> bool:
        return self.origin_action is Action.CLUSTERING

    @property
    def sort_time(self) -> str:
        """The completion time, or the requested time while pending (for completion-order sorts)."""
        return self.completion_time or self.requested_time

    # ------------------------------------------------------------------ state changes
    def with_state(self, state: State | str, completion_time: str | None = None) -> Instant:
        """The same instant in another state; completing maps the action to its completed form."""
        state = State(state)
        if state is State.COMPLETED:
            action = self.completed_action
            pending = self.origin_action if self.origin_action is not action else None
            return Instant(self.requested_time, action, state, completion_time, pending_action=pending)
        return Instant(self.requested_time, self.origin_action, state, None)

    def as_requested(self) -> Instant:
        return self.with_state(State.REQUESTED)

    def as_inflight(self) -> Instant:
        return self.with_state(State.INFLIGHT)

    # ------------------------------------------------------------------ file names
    def file_name(self, layout_version: int = 2) -> str:
        """The file that records this instant in this state.

        Completed layout-2 names need the completion time; a completed pending action is named
        after its completed action (compaction -> ``.commit``).
        """
        _check_layout(layout_version)
        t = self.requested_time
        if self.state is State.REQUESTED:
            return f"{t}.{self.action.value}{REQUESTED_SUFFIX}"
        if self.state is State.INFLIGHT:
            if self.action is Action.COMMIT:
                return f"{t}{INFLIGHT_COMMIT_SUFFIX}"
            return f"{t}.{self.action.value}{INFLIGHT_SUFFIX}"
        ext = self.completed_action.value
        if layout_version == 1:
            return f"{t}.{ext}"
        if self.completion_time is None:
            raise TimelineError(f"completed instant {t} ({self.action.value}) has no completion time for its file name")
        return f"{t}_{self.completion_time}.{ext}"

    def pending_file_names(self, layout_version: int = 2) -> tuple[str, str]:
        """Names of the requested and inflight files of this instant's pending action."""
        pending = Instant(self.requested_time, self.origin_action, State.REQUESTED)
        return pending.file_name(layout_version), pending.as_inflight().file_name(layout_version)

    @classmethod
    def parse(
        cls,
        file_name: str,
        layout_version: int = 2,
        *,
        modification_time_ns: int | None = None,
        timezone: str = "UTC",
    ) -> Instant:
        """Parse an instant file name; raise :class:`FileNameError` naming it if it is not one.

        A completed name without a completion time (layout 1, or a legacy instant in a layout-2
        timeline) takes its completion time from ``modification_time_ns`` formatted in
        ``timezone``, as Hudi does; without one, ``completion_time`` is None.
        """
        _check_layout(layout_version)
        pattern = _NAME_V2 if layout_version == 2 else _NAME_V1
        match = pattern.match(file_name) if isinstance(file_name, str) else None
        if match is None:
            raise FileNameError(f"not an instant file name (timeline layout {layout_version}): {file_name!r}")
        if layout_version == 2:
            times, action_part, state_part = match.group(1), match.group(3), match.group(4)
        else:
            times, action_part, state_part = match.group(1), match.group(2), match.group(3)
        requested, _, completion = times.partition("_")
        action_name = action_part[1:]
        if state_part is None and action_part == INFLIGHT_COMMIT_SUFFIX:
            if completion:
                raise FileNameError(f"an inflight instant file cannot carry a completion time: {file_name!r}")
            return cls(requested, Action.COMMIT, State.INFLIGHT)
        action = _ACTIONS_BY_NAME.get(action_name)
        if action is None:
            raise FileNameError(f"unknown timeline action {action_name!r} in instant file name {file_name!r}")
        if state_part is None:
            if action not in COMPLETED_EXTENSIONS:
                raise FileNameError(f"action {action_name!r} never appears completed: {file_name!r}")
            if not completion and modification_time_ns is not None:
                completion = format_instant_time_ms(modification_time_ns // 1_000_000, timezone)
            return cls(requested, action, State.COMPLETED, completion or None)
        if completion:
            raise FileNameError(f"a pending instant file cannot carry a completion time: {file_name!r}")
        if state_part == REQUESTED_SUFFIX:
            return cls(requested, action, State.REQUESTED)
        if state_part == INFLIGHT_SUFFIX:
            return cls(requested, action, State.INFLIGHT)
        raise FileNameError(f"unknown instant state suffix {state_part!r} in instant file name {file_name!r}")


def to_action(action: Action | str) -> Action:
    """Coerce an action name; raise :class:`TimelineError` naming an unknown one."""
    if isinstance(action, Action):
        return action
    found = _ACTIONS_BY_NAME.get(action) if isinstance(action, str) else None
    if found is None:
        raise TimelineError(f"unknown timeline action {action!r}; expected one of {', '.join(_ACTIONS_BY_NAME)}")
    return found


def _is_digits(value: object) -> bool:
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _check_layout(layout_version: int) -> None:
    if layout_version not in (1, 2):
        raise TimelineError(f"unsupported timeline layout version {layout_version!r} (expected 1 or 2)")


# ---------------------------------------------------------------------- instant times
def is_valid_instant_time(value: object) -> bool:
    """True for a 17-digit ``yyyyMMddHHmmssSSS`` time or a legacy 14-digit ``yyyyMMddHHmmss`` one.

    Only the shape is checked: Hudi's special times (``00000000000000`` and friends) are valid.
    """
    return isinstance(value, str) and len(value) in (14, 17) and value.isascii() and value.isdigit()


def resolve_timezone(timezone: str | tzinfo | None = "UTC") -> tzinfo | None:
    """The tzinfo for a Hudi timeline timezone: ``UTC``, ``LOCAL`` (None = system local) or an IANA name."""
    if timezone is None:
        return dt_timezone.utc
    if isinstance(timezone, tzinfo):
        return timezone
    name = str(timezone).strip()
    if name.upper() in ("UTC", "Z", "GMT"):
        return dt_timezone.utc
    if name.upper() == "LOCAL":
        return None
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:  # noqa: BLE001 - any lookup failure is a bad config value
        raise TimelineError(f"unknown timeline timezone {timezone!r} (use UTC, LOCAL or an IANA zone name)") from None


def parse_instant_time(value: str, timezone: str | tzinfo = "UTC") -> datetime:
    """The aware datetime of an instant time read in ``timezone``.

    Legacy 14-digit times are padded with ``000`` ms; longer (metadata-table) times are trimmed
    to 17 digits, as Hudi does.
    """
    if not isinstance(value, str) or not value.isdigit() or len(value) < 14:
        raise TimelineError(f"not an instant time (yyyyMMddHHmmss[SSS]): {value!r}")
    digits = value + "000" if len(value) == 14 else value[:17].ljust(17, "0")
    try:
        naive = datetime.strptime(digits[:14], _TIME_FORMAT).replace(microsecond=int(digits[14:17]) * 1000)
    except ValueError:
        raise TimelineError(f"not a valid calendar instant time: {value!r}") from None
    tz = resolve_timezone(timezone)
    if tz is None:
        return naive.astimezone()  # interpreted as system local time
    return naive.replace(tzinfo=tz)


def format_instant_time(moment: datetime, timezone: str | tzinfo = "UTC") -> str:
    """Format a datetime as a 17-digit instant time in ``timezone`` (naive = already in it)."""
    tz = resolve_timezone(timezone)
    if moment.tzinfo is not None:
        moment = moment.astimezone(tz) if tz is not None else moment.astimezone()
    return moment.strftime(_TIME_FORMAT) + f"{moment.microsecond // 1000:03d}"


def format_instant_time_ms(epoch_ms: int, timezone: str | tzinfo = "UTC") -> str:
    """Format epoch milliseconds as an instant time in ``timezone``."""
    moment = _EPOCH + timedelta(milliseconds=int(epoch_ms))
    return format_instant_time(moment, timezone)


def instant_time_to_ms(value: str, timezone: str | tzinfo = "UTC") -> int:
    """Epoch milliseconds of an instant time read in ``timezone``."""
    moment = parse_instant_time(value, timezone)
    return int(moment.timestamp()) * 1000 + moment.microsecond // 1000


def next_instant_time(value: str) -> str:
    """The wall-clock instant time 1 ms after ``value`` (calendar arithmetic, no timezone).

    Used to step past the last issued time: adding to the *wall-clock digits* keeps the result
    strictly greater as a string even across DST changes in LOCAL timelines.
    """
    digits = value + "000" if len(value) == 14 else value[:17]
    try:
        naive = datetime.strptime(digits[:14], _TIME_FORMAT).replace(microsecond=int(digits[14:17]) * 1000)
    except ValueError:
        raise TimelineError(f"not a valid calendar instant time: {value!r}") from None
    return format_instant_time(naive + timedelta(milliseconds=1), dt_timezone.utc)


__all__ = [
    "Action",
    "State",
    "Instant",
    "COMPLETED_ACTION",
    "COMPLETED_EXTENSIONS",
    "to_action",
    "is_valid_instant_time",
    "resolve_timezone",
    "parse_instant_time",
    "format_instant_time",
    "format_instant_time_ms",
    "instant_time_to_ms",
    "next_instant_time",
]


def comparable_time(value: str | None) -> str | None:
    """A 17-digit comparable form of an instant time (legacy 14 digits padded, longer trimmed);
    None for a value that is not one."""
    if not value or not value.isdigit():
        return None
    if len(value) == 14:
        return value + "000"
    if len(value) < 17:
        return value.ljust(17, "0")
    return value[:17]


def latest_time_of(*values: str | None) -> str | None:
    """The latest of instant times given in any of their lengths (comparable form), None if none."""
    present = [v for v in (comparable_time(x) for x in values) if v is not None]
    return max(present) if present else None
