"""The planning steps an insert runs before its tasks, in their fast forms: the group order of
a bucketed write and the sampled Parquet options — equal to their plain constructions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pyhudi.logformat import parquet_options
from pyhudi.logformat.parquet_options import parquet_options_for
from pyhudi.write.handle import META_PARQUET_OPTIONS
from pyhudi.write.plan import BUCKET_COLUMN, PARTITION_COLUMN, group_plan


def _plain_group_plan(partitions: list[str], buckets: list[int]):
    """Positions sorted by (partition, bucket), arrival order kept; the runs — by plain Python."""
    order = sorted(range(len(buckets)), key=lambda i: (partitions[i], buckets[i]))
    runs, start = [], 0
    for at in range(1, len(order) + 1):
        if at == len(order) or (partitions[order[at]], buckets[order[at]]) != (partitions[order[start]],
                                                                                buckets[order[start]]):
            runs.append(((partitions[order[start]], buckets[order[start]]), start, at - start))
            start = at
    return order, runs


@pytest.mark.parametrize("seed", range(12))
def test_group_plan_orders_rows_by_partition_and_bucket_in_arrival_order(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    names = ["", "p=1", "p=10", "p=2", "a/b"][:int(rng.integers(1, 6))]
    partitions = [str(rng.choice(names)) for _ in range(n)]
    buckets = rng.integers(0, [4, 300, 70_000][seed % 3], n).astype(np.int32).tolist()
    rows = pa.table({BUCKET_COLUMN: pa.array(buckets, pa.int32()), PARTITION_COLUMN: pa.array(partitions, pa.string())})
    order, runs = group_plan(rows)
    expected_order, expected_runs = _plain_group_plan(partitions, buckets)
    assert order.tolist() == expected_order
    assert runs == expected_runs


def test_group_plan_of_no_rows_and_of_one_bucket():
    empty = pa.table({BUCKET_COLUMN: pa.array([], pa.int32()), PARTITION_COLUMN: pa.array([], pa.string())})
    order, runs = group_plan(empty)
    assert order.tolist() == [] and runs == []
    one = pa.table({BUCKET_COLUMN: pa.array([0] * 5, pa.int32()), PARTITION_COLUMN: pa.array([""] * 5)})
    order, runs = group_plan(one)
    assert order.tolist() == [0, 1, 2, 3, 4] and runs == [(("", 0), 0, 5)]


def test_sampled_options_of_numeric_columns_in_every_form(monkeypatch):
    """Numeric columns are sampled as strided views of their buffers (one chunk, no nulls) or
    taken (several chunks, nulls): the same options as Arrow's ``take`` of every sample."""
    n = 6000
    rng = np.random.default_rng(4)
    plain = {
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "random": pa.array(rng.random(n)),
        "small": pa.array(rng.integers(0, 3, n).astype(np.int8)),
        "half": pa.array(rng.random(n).astype(np.float16)),
        "u32": pa.array(rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)),
        "repeats": pa.array(np.repeat(rng.random(n // 100), 100)),
    }
    forms = {
        "plain": pa.table(plain),
        "chunked": pa.table({name: pa.chunked_array([a.slice(0, 1000), a.slice(1000)]) for name, a in plain.items()}),
        "sliced": pa.table({name: pa.concat_arrays([a.slice(0, 3), a]).slice(3) for name, a in plain.items()}),
        "nulls": pa.table({**plain, "random": pa.array(rng.random(n), mask=np.arange(n) % 7 == 0)}),
    }
    fast = {form: parquet_options_for(table, META_PARQUET_OPTIONS, ["id"]) for form, table in forms.items()}
    monkeypatch.setattr(parquet_options, "_strided_sample", lambda column, step: None)  # every sample taken
    assert fast == {form: parquet_options_for(table, META_PARQUET_OPTIONS, ["id"]) for form, table in forms.items()}
    options = fast["plain"]
    assert options["use_dictionary"] == [*[c for c, (d, _) in META_PARQUET_OPTIONS.items() if d], "small", "repeats"]
    assert options["column_encoding"] == {"id": "DELTA_BINARY_PACKED"}
    assert {c: options["compression"][c] for c in plain} == {"id": "none", "random": "none", "small": "snappy",
                                                              "half": "none", "u32": "none", "repeats": "snappy"}
    assert fast["chunked"] == fast["sliced"] == options
    assert fast["nulls"]["compression"]["random"] == "snappy"  # (a null's slot is zeros: they compress)


def test_touched_partitions_of_unpartitioned_and_partitioned_rows():
    """The distinct partition paths a write touches: an unpartitioned table's from the offsets
    alone, others by value, across chunks."""
    from pyhudi.write.plan import touched_partitions

    assert touched_partitions(pa.chunked_array([pa.array([""] * 5), pa.array([""] * 3)])) == {""}
    assert touched_partitions(pa.chunked_array([pa.array(["a", "b", "a"]), pa.array(["c"])])) == {"a", "b", "c"}
    assert touched_partitions(pa.chunked_array([pa.array(["", "x"])])) == {"", "x"}
    assert touched_partitions(pa.chunked_array([], pa.string())) == set()
    assert touched_partitions(pa.array(["p=1", "p=1"]).slice(1)) == {"p=1"}


def _wide_table(tmp_path, n: int, partitioned: bool):
    import pyhudi

    rng = np.random.default_rng(11)
    data = pa.table({
        "id": pa.array(rng.permutation(np.arange(n, dtype=np.int64) - n // 3)),
        "p": pa.array([["a", "b", "c"][i % 3] for i in range(n)]),
        **{f"x{i}": pa.array(rng.random(n)) for i in range(6)},
        "few": pa.array(rng.integers(0, 3, n).astype(np.int32)),
        "name": pa.array([f"n{i % 5}" for i in range(n)]),
    })
    table = pyhudi.create_table(str(tmp_path / "t"), data.schema, "id", num_buckets=4,
                                partition_fields=["p"] if partitioned else None)
    return table, data


@pytest.mark.parametrize("partitioned", [False, True])
def test_prepared_integer_keys_and_buckets_in_one_step_equal_the_plain_steps(tmp_path, monkeypatch, partitioned):
    """A bucketed table keyed by one integer field: its record keys and bucket ids come from one
    step on two cores when there are many rows — the prepared rows are those of record_keys then
    bucket_ids (every column, every value)."""
    from pyhudi.index import bucket
    from pyhudi.write import txn as txn_module
    from pyhudi.write.client import WriteClient

    table, data = _wide_table(tmp_path, 301, partitioned)
    txn = WriteClient(table).unbegun("insert")
    monkeypatch.setattr(txn_module, "SPLIT_ROWS", 8)  # (few rows: the one-step path)
    calls = []
    one_step = bucket.integer_keys_and_bucket_ids
    monkeypatch.setattr(txn_module, "integer_keys_and_bucket_ids", lambda *a: calls.append(1) or one_step(*a))
    fast = txn.prepare(data)
    monkeypatch.setattr(txn_module, "_keys_with_buckets", lambda config, rows: False)
    plain = txn.prepare(data)
    assert calls == [1]
    assert fast.schema == plain.schema and fast.to_pylist() == plain.to_pylist()
    assert fast.column("_hoodie_record_key").to_pylist() == [str(v) for v in data.column("id").to_pylist()]


def test_every_payload_carries_the_options_of_one_sample_of_the_written_columns(tmp_path):
    """The data files' Parquet options of a bucketed write (``data_file_options``) are those of
    the plain construction — one sample of the written columns — in every task's payload."""
    from pyhudi.write.client import WriteClient
    from pyhudi.write.plan import RECORD_KEY, data_file_options

    table, data = _wide_table(tmp_path, 3000, False)
    txn = WriteClient(table).unbegun("insert")
    prepared = txn.prepare(data)
    written = [c for c in prepared.column_names if c not in (PARTITION_COLUMN, BUCKET_COLUMN)]
    plain = parquet_options_for(prepared.select(written), fixed=META_PARQUET_OPTIONS, delta_columns=["id"])
    assert data_file_options(prepared, ["id"]) == plain
    tasks = txn.plan_tasks(prepared)
    assert len(tasks) == 4
    for task in tasks:
        (payload,) = task.payloads
        assert payload.options() == plain
    assert plain["use_dictionary"][-2:] == ["few", "name"] and RECORD_KEY in plain["compression"]
    assert {c: plain["compression"][c] for c in ["x0", "few", "name"]} == {"x0": "none", "few": "snappy",
                                                                           "name": "snappy"}


def test_a_handle_opened_per_write_finds_the_recorded_schema_parsed_once_per_process(tmp_path, monkeypatch):
    """A wide recorded schema is converted from Avro once per process: a second handle on the
    table gets the same schema without converting it again — and another schema is converted,
    not mistaken for it."""
    import pyhudi
    from pyhudi import evolution

    table, data = _wide_table(tmp_path, 10, False)
    table.insert(data)
    converted = []
    real = evolution.arrow_schema_from_avro
    monkeypatch.setattr(evolution, "arrow_schema_from_avro", lambda avro: converted.append(1) or real(avro))
    monkeypatch.setattr(evolution, "_PARSED_SCHEMAS", {})
    first = pyhudi.open_table(str(tmp_path / "t")).schema
    again = pyhudi.open_table(str(tmp_path / "t")).schema
    assert converted == [1] and again.equals(first) and first.names == data.schema.names
    pyhudi.open_table(str(tmp_path / "t")).insert(data)
    assert converted == [1]
    other = pa.schema([*data.schema, pa.field("extra", pa.int32())])
    pyhudi.create_table(str(tmp_path / "other"), other, "id", num_buckets=4)
    assert pyhudi.open_table(str(tmp_path / "other")).schema.names == other.names
    assert len(converted) == 2


def test_dictionary_candidates_by_type_are_the_plain_type_tests():
    """The memo of which types may take a dictionary answers as the type tests themselves, for
    every kind of column type (and types asked twice)."""
    from pyhudi.logformat.parquet_options import _dictionary_candidate, _is_dictionary_candidate

    types = [pa.string(), pa.large_string(), pa.binary(), pa.int8(), pa.uint64(), pa.float16(), pa.float64(),
             pa.decimal128(10, 2), pa.timestamp("us", tz="UTC"), pa.timestamp("us"), pa.date32(),
             pa.binary(16), pa.bool_(), pa.list_(pa.int32()), pa.struct([("a", pa.int32())]), pa.null()]
    for t in types * 2:
        assert _dictionary_candidate(t) == _is_dictionary_candidate(t), t
    assert [_dictionary_candidate(t) for t in types] == [True] * 12 + [False] * 4


def test_unpartitioned_rows_are_grouped_and_listed_without_codes_as_partitioned_ones_are():
    """Rows all in partition ``""`` (told from the offsets, slices too) group and list exactly
    as the plain construction does; a slice holding one non-empty path is not taken for them."""
    from pyhudi.write.plan import touched_partitions

    mixed = pa.array(["x", "", "", "", "y", ""])
    assert touched_partitions(mixed.slice(1, 3)) == {""}
    assert touched_partitions(pa.chunked_array([mixed.slice(1, 3), mixed.slice(3, 2)])) == {"", "y"}
    assert touched_partitions(mixed.slice(0, 2)) == {"x", ""}
    buckets = [3, 0, 3, 1, 0, 2, 3]
    for paths in (pa.array([""] * 7), pa.array(["a", *[""] * 7]).slice(1)):
        rows = pa.table({BUCKET_COLUMN: pa.array(buckets, pa.int32()), PARTITION_COLUMN: paths})
        order, runs = group_plan(rows)
        expected_order, expected_runs = _plain_group_plan([""] * 7, buckets)
        assert order.tolist() == expected_order and runs == expected_runs


def test_the_options_are_sampled_once_by_the_first_task_that_starts_not_by_the_planner(tmp_path, monkeypatch):
    """The planner defers the sample (``Deferred``): no task has started, nothing is sampled; the
    first task's start samples it, once for every task and family; the options are the plain
    ones. A pickled payload (shipped to another process) carries them computed."""
    import pickle

    from pyhudi.write import plan
    from pyhudi.write.client import WriteClient

    table, data = _wide_table(tmp_path, 3000, False)
    txn = WriteClient(table).unbegun("insert")
    prepared = txn.prepare(data)
    plain = plan.data_file_options(prepared, ["id"])
    calls = []
    real = plan.data_file_options
    monkeypatch.setattr(plan, "data_file_options", lambda *a: calls.append(1) or real(*a))
    tasks = txn.plan_tasks(prepared)
    assert calls == []
    tasks[2].payloads[0].start_options()
    assert calls == [1]
    for task in tasks:
        task.payloads[0].start_options()
        assert task.payloads[0].options() == plain
    assert calls == [1]
    shipped = pickle.loads(pickle.dumps(txn.plan_tasks(prepared)[0].payloads[0]))
    assert shipped.parquet_options == plain and len(calls) == 2
