"""pyhudi.value: the value classes a cold read imports behave as the frozen dataclasses they replaced."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from pyhudi.config.keys import REGISTRY, ConfigKey
from pyhudi.fsview.view import BaseFile, FileGroup, FileSlice, LogFile
from pyhudi.storage.naming import BaseFileName, LogFileName, WriteToken
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.value import Record, Value


class Point(Value):
    x: int
    y: str | None = None

    def __init__(self, x: int, y: str | None = None) -> None:
        self._set(x=x, y=y)


class Tagged(Point):
    tag: str = ""
    _value_uncompared = ("tag",)

    def __init__(self, x: int, y: str | None = None, tag: str = "") -> None:
        self._set(x=x, y=y, tag=tag)


@dataclasses.dataclass(frozen=True)
class DataPoint:
    x: int
    y: str | None = None


def test_a_value_compares_hashes_and_shows_as_the_frozen_dataclass():
    for a, b in [((1, "a"), (1, "a")), ((1, "a"), (2, "a")), ((1, None), (1, "b"))]:
        assert (Point(*a) == Point(*b)) == (DataPoint(*a) == DataPoint(*b))
        assert hash(Point(*a)) == hash(DataPoint(*a))
    assert repr(Point(1, "a")) == "Point(x=1, y='a')" == repr(DataPoint(1, "a")).replace("DataPoint", "Point")
    assert Point(1) != (1, None) and Point.__eq__(Point(1), DataPoint(1)) is NotImplemented
    assert Point(1) != Tagged(1)  # (another class: never equal, as dataclasses)
    assert Point._value_fields == ("x", "y") and Tagged._value_fields == ("x", "y", "tag")


def test_a_value_is_frozen_and_survives_copy_and_pickle():
    point = Point(3, "z")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        point.x = 4  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.y
    assert copy.copy(point) == point and copy.deepcopy(point) == point
    assert pickle.loads(pickle.dumps(point)) == point and pickle.loads(pickle.dumps(point)).y == "z"


def test_uncompared_fields_are_shown_but_neither_compared_nor_hashed():
    assert Tagged(1, "a", "t1") == Tagged(1, "a", "t2") and hash(Tagged(1, "a", "t1")) == hash(Tagged(1, "a", "t2"))
    assert repr(Tagged(1, "a", "t1")) == "Tagged(x=1, y='a', tag='t1')"


class Box(Record):
    items: list

    def __init__(self, items: list | None = None) -> None:
        self.items = [] if items is None else items


def test_a_record_is_mutable_compared_and_unhashable():
    box = Box()
    box.items = [1]
    assert box == Box([1]) and box != Box([2]) and repr(box) == "Box(items=[1])"
    with pytest.raises(TypeError, match="unhashable"):
        hash(box)


def test_instant_equality_ignores_the_pending_action_and_checks_its_fields():
    done = Instant("20240101000000000", "commit", "COMPLETED", "20240101000000100", pending_action="compaction")
    assert done.action is Action.COMMIT and done.state is State.COMPLETED and done.pending_action is Action.COMPACTION
    plain = Instant("20240101000000000", Action.COMMIT, State.COMPLETED, "20240101000000100")
    assert done == plain and hash(done) == hash(plain) and {done, plain} == {plain}
    assert repr(done).endswith("completion_time='20240101000000100', pending_action=<Action.COMPACTION: 'compaction'>)")
    assert pickle.loads(pickle.dumps(done)).pending_action is Action.COMPACTION
    with pytest.raises(Exception, match="instant time must be a string of digits"):
        Instant("2024-01-01", "commit", "COMPLETED")
    with pytest.raises(Exception, match="unknown instant state 'DONE'"):
        Instant("20240101000000000", "commit", "DONE")


def test_file_names_tokens_and_data_files_keep_their_value_semantics():
    name = BaseFileName.parse("f1-0_0-1-0_20240101000000000_fa.parquet")
    assert name == BaseFileName("f1-0", "0-1-0", "20240101000000000", "fa") and name.family == "fa"
    assert BaseFileName("f1-0", "0-1-0", "20240101000000000", "").family is None  # (validated in __init__)
    log = LogFileName.parse(".f1-0_20240101000000000.log.2_0-1-0")
    assert (log.version, log.write_token, log.family) == (2, "0-1-0", None)
    assert sorted([WriteToken(1, 0, 0), WriteToken(0, 2, 1), WriteToken(0, 2, 0)]) == [
        WriteToken(0, 2, 0), WriteToken(0, 2, 1), WriteToken(1, 0, 0)]
    assert WriteToken(0, 1, 2) < WriteToken(0, 2, 0) <= WriteToken(0, 2, 0) and WriteToken(1, 0, 0) > WriteToken(0, 9, 9)
    data = LogFile("p", log, 100, "20240101000000001")
    ranged = data.with_committed(((0, 100, "20240101000000000"),))
    assert type(ranged) is LogFile and ranged.committed == ((0, 100, "20240101000000000"),) and data.committed == ()
    assert ranged.relpath == "p/.f1-0_20240101000000000.log.2_0-1-0" and ranged != data
    assert BaseFile("p", name, 1, "2") != LogFile("p", name, 1, "2")  # (different classes)
    group = FileGroup("p", "f1-0")
    group.log_files.append(data)
    assert group.base_files == [] and FileGroup("p", "f1-0").log_files == []  # (a list of its own each)
    assert FileSlice("p", "f1-0", None, None).log_files == [] and FileSlice("p", "f1-0", None, None).is_empty


def test_config_key_registers_itself_unless_asked_not_to():
    key = ConfigKey("hoodie.pyhudi.test.value.key", int, 3, "a test key", aliases=("hoodie.test.value.alias",))
    hidden = ConfigKey("hoodie.pyhudi.test.value.hidden", int, 3, "a test key", register=False)
    try:
        assert REGISTRY["hoodie.pyhudi.test.value.key"] is key and REGISTRY["hoodie.test.value.alias"] is key
        assert "hoodie.pyhudi.test.value.hidden" not in REGISTRY
        assert key.get({"hoodie.test.value.alias": "7"}) == 7 and hidden.get({}) == 3
        assert "register" not in repr(hidden) and hidden == ConfigKey("hoodie.pyhudi.test.value.hidden", int, 3,
                                                                       "a test key", register=False)
        with pytest.raises(TypeError, match="unsupported config type"):
            ConfigKey("hoodie.pyhudi.test.value.bad", list, None, "bad", register=False)
    finally:
        for name in ("hoodie.pyhudi.test.value.key", "hoodie.test.value.alias"):
            REGISTRY.pop(name, None)


def test_replace_builds_a_changed_copy_through_init_as_dataclasses_replace():
    point = Tagged(1, "a", tag="t")
    moved = point.replace(y="b")
    assert (moved.x, moved.y, moved.tag) == (1, "b", "t") and type(moved) is Tagged
    assert (point.x, point.y) == (1, "a")  # the original is unchanged
    data = dataclasses.replace(DataPoint(1, "a"), y="b")
    assert (moved.x, moved.y) == (data.x, data.y)
    with pytest.raises(TypeError, match="Tagged has no field 'z'"):
        point.replace(z=1)


def test_replace_runs_init_again_for_records_with_derived_state():
    class Counted(Record):
        n: int
        doubled: int

        def __init__(self, n: int, doubled: int = 0) -> None:
            self._set(n=n, doubled=2 * n)

    assert Counted(2).replace(n=5).doubled == 10


def test_the_read_tasks_value_classes_pickle_and_replace():
    """The classes Spark executors receive in a read task keep equality through pickle, and a
    task split by ``replace`` shares its bases and runs with its own metrics."""
    from pyhudi.read.keys import KeySpec
    from pyhudi.read.sources import Prefilter, ReadSpec

    import pyarrow as pa

    keys = KeySpec(("id",), True)
    assert keys.replace(integer="id") == KeySpec(("id",), True, "id") and hash(keys) == hash(KeySpec(("id",), True))
    spec = ReadSpec([pa.field("c0", pa.float64())], None, keys, Prefilter(pa.schema([("id", pa.int64())])))
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert spec.prefilter.key_filters == [] and spec.prefilter.excluded == [] and spec.prefilter.unrestricted
    assert Prefilter(spec.prefilter.schema).key_filters is not spec.prefilter.key_filters  # (fresh lists)
