"""Instant file-name grammar (layouts 1 and 2) and instant-time helpers."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pyhudi.errors import FileNameError, TimelineError
from pyhudi.timeline.instant import (
    COMPLETED_ACTION,
    Action,
    Instant,
    State,
    format_instant_time,
    format_instant_time_ms,
    instant_time_to_ms,
    is_valid_instant_time,
    next_instant_time,
    parse_instant_time,
)

T = "20240101123045123"
C = "20240101123050456"

# action -> (requested, inflight, completed layout 2, completed layout 1)
NAMES = {
    "commit": (f"{T}.commit.requested", f"{T}.inflight", f"{T}_{C}.commit", f"{T}.commit"),
    "deltacommit": (
        f"{T}.deltacommit.requested", f"{T}.deltacommit.inflight", f"{T}_{C}.deltacommit", f"{T}.deltacommit",
    ),
    "replacecommit": (
        f"{T}.replacecommit.requested", f"{T}.replacecommit.inflight", f"{T}_{C}.replacecommit", f"{T}.replacecommit",
    ),
    "clustering": (
        f"{T}.clustering.requested", f"{T}.clustering.inflight", f"{T}_{C}.replacecommit", f"{T}.replacecommit",
    ),
    "compaction": (f"{T}.compaction.requested", f"{T}.compaction.inflight", f"{T}_{C}.commit", f"{T}.commit"),
    "logcompaction": (
        f"{T}.logcompaction.requested", f"{T}.logcompaction.inflight", f"{T}_{C}.deltacommit", f"{T}.deltacommit",
    ),
    "clean": (f"{T}.clean.requested", f"{T}.clean.inflight", f"{T}_{C}.clean", f"{T}.clean"),
    "rollback": (f"{T}.rollback.requested", f"{T}.rollback.inflight", f"{T}_{C}.rollback", f"{T}.rollback"),
    "savepoint": (f"{T}.savepoint.requested", f"{T}.savepoint.inflight", f"{T}_{C}.savepoint", f"{T}.savepoint"),
    "restore": (f"{T}.restore.requested", f"{T}.restore.inflight", f"{T}_{C}.restore", f"{T}.restore"),
    "indexing": (f"{T}.indexing.requested", f"{T}.indexing.inflight", f"{T}_{C}.indexing", f"{T}.indexing"),
    "schemacommit": (
        f"{T}.schemacommit.requested", f"{T}.schemacommit.inflight", f"{T}_{C}.schemacommit", f"{T}.schemacommit",
    ),
}


def test_every_action_has_a_name_row():
    assert set(NAMES) == {a.value for a in Action}
    assert set(COMPLETED_ACTION) == set(Action)


@pytest.mark.parametrize("action", sorted(NAMES))
def test_file_names_for_every_action_and_state(action):
    requested, inflight, completed_v2, completed_v1 = NAMES[action]
    inst = Instant(T, action, State.REQUESTED)
    assert inst.file_name() == requested
    assert inst.file_name(1) == requested
    assert inst.as_inflight().file_name() == inflight
    assert inst.as_inflight().file_name(1) == inflight
    done = inst.as_inflight().with_state(State.COMPLETED, C)
    assert done.file_name() == completed_v2
    assert done.file_name(1) == completed_v1
    assert done.action is COMPLETED_ACTION[Action(action)]
    assert done.origin_action is Action(action)


@pytest.mark.parametrize("action", sorted(NAMES))
def test_parse_round_trips_pending_names(action):
    requested, inflight, _, _ = NAMES[action]
    for layout in (1, 2):
        assert Instant.parse(requested, layout) == Instant(T, action, State.REQUESTED)
        assert Instant.parse(inflight, layout) == Instant(T, action, State.INFLIGHT)
        assert Instant.parse(requested, layout).file_name(layout) == requested
        assert Instant.parse(inflight, layout).file_name(layout) == inflight


@pytest.mark.parametrize("action", sorted(NAMES))
def test_parse_round_trips_completed_names(action):
    _, _, completed_v2, completed_v1 = NAMES[action]
    parsed = Instant.parse(completed_v2, 2)
    assert parsed.state is State.COMPLETED
    assert parsed.requested_time == T and parsed.completion_time == C
    assert parsed.action is COMPLETED_ACTION[Action(action)]
    assert parsed.file_name() == completed_v2
    legacy = Instant.parse(completed_v1, 1)
    assert legacy.completion_time is None and legacy.file_name(1) == completed_v1


def test_parse_commit_inflight_special_case():
    assert Instant.parse(f"{T}.inflight") == Instant(T, Action.COMMIT, State.INFLIGHT)
    assert Instant(T, "commit", "INFLIGHT").file_name() == f"{T}.inflight"


def test_legacy_completed_takes_completion_time_from_mtime():
    mtime_ns = instant_time_to_ms("20240418173552000") * 1_000_000 + 123_456
    inst = Instant.parse(f"{T}.commit", 1, modification_time_ns=mtime_ns)
    assert inst.completion_time == "20240418173552000"
    # a layout-2 timeline may hold a legacy completed name too
    inst2 = Instant.parse(f"{T}.deltacommit", 2, modification_time_ns=mtime_ns)
    assert inst2.completion_time == "20240418173552000"


@pytest.mark.parametrize(
    "name",
    [
        "hoodie.properties",
        "history",
        "20240101123045123.commit.crc",
        ".20240101123045123.commit.requested.crc",
        "20240101123045123.commit.requested.tmp",
        "20240101123045123.unknownaction",
        "20240101123045123.unknown.requested",
        "20240101123045123_20240101123045999.compaction",
        "20240101123045123_20240101123045999.commit.requested",
        "20240101123045123_20240101123045999.inflight",
        "abc.commit",
        "",
        "20240101123045123",
        ".20240101123045123.commit.tmp",
    ],
)
def test_garbage_names_are_rejected_naming_the_file(name):
    with pytest.raises(FileNameError) as err:
        Instant.parse(name, 2)
    assert repr(name) in str(err.value)


def test_layout1_rejects_completion_time_in_name():
    with pytest.raises(FileNameError, match="20240101123045123_20240101123050456.commit"):
        Instant.parse(f"{T}_{C}.commit", 1)


def test_metadata_table_style_times_parse():
    inst = Instant.parse("00000000000000001_20251220210108534.deltacommit")
    assert inst.requested_time == "00000000000000001" and inst.completion_time == "20251220210108534"


def test_instants_order_by_requested_time():
    a = Instant("20240101000000002", "deltacommit", "COMPLETED", "20240101000000009")
    b = Instant("20240101000000001", "commit", "INFLIGHT")
    c = Instant("20240101000000003", "clean", "REQUESTED")
    assert sorted([a, c, b]) == [b, a, c]
    assert a == Instant("20240101000000002", Action.DELTACOMMIT, State.COMPLETED, "20240101000000009")
    assert a.action == "deltacommit" and a.state == "COMPLETED"


def test_pending_action_is_not_part_of_equality():
    a = Instant(T, "commit", "COMPLETED", C, pending_action="compaction")
    assert a == Instant(T, "commit", "COMPLETED", C)
    assert a.is_compaction and not Instant(T, "commit", "COMPLETED", C).is_compaction
    assert a.as_requested() == Instant(T, "compaction", "REQUESTED")


def test_bad_instant_fields_raise():
    with pytest.raises(TimelineError, match="nope"):
        Instant(T, "nope", "REQUESTED")
    with pytest.raises(TimelineError, match="DONE"):
        Instant(T, "commit", "DONE")
    with pytest.raises(TimelineError, match="2024-01-01"):
        Instant("2024-01-01", "commit", "REQUESTED")
    with pytest.raises(TimelineError, match="completion time"):
        Instant(T, "commit", "COMPLETED").file_name()


def test_is_valid_instant_time():
    assert is_valid_instant_time("20240101123045123")
    assert is_valid_instant_time("20240101123045")  # legacy
    assert is_valid_instant_time("00000000000000")
    for bad in ("2024010112304512", "202401011230451234", "2024010112304a123", "", None, 20240101123045123):
        assert not is_valid_instant_time(bad)


def test_instant_time_round_trip_utc():
    dt = datetime(2024, 1, 1, 12, 30, 45, 123000, tzinfo=timezone.utc)
    assert format_instant_time(dt) == "20240101123045123"
    assert parse_instant_time("20240101123045123") == dt
    assert parse_instant_time("20240101123045") == dt.replace(microsecond=0)
    assert format_instant_time_ms(instant_time_to_ms("20240101123045123")) == "20240101123045123"


def test_instant_time_in_other_zones():
    dt = datetime(2024, 7, 1, 0, 0, 0, 5000, tzinfo=timezone.utc)
    assert format_instant_time(dt, "America/New_York") == "20240630200000005"
    assert parse_instant_time("20240630200000005", "America/New_York") == dt
    local = parse_instant_time("20240101123045123", "LOCAL")
    assert local.tzinfo is not None
    assert format_instant_time(local, "LOCAL") == "20240101123045123"
    with pytest.raises(TimelineError, match="Mars/Olympus"):
        format_instant_time(dt, "Mars/Olympus")


def test_bad_instant_times_raise():
    with pytest.raises(TimelineError, match="2024"):
        parse_instant_time("2024")
    with pytest.raises(TimelineError, match="20241301000000000"):
        parse_instant_time("20241301000000000")


def test_next_instant_time_steps_one_millisecond():
    assert next_instant_time("20240101123045123") == "20240101123045124"
    assert next_instant_time("20231231235959999") == "20240101000000000"
    assert next_instant_time("20240101123045") == "20240101123045001"
