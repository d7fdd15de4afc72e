"""review13: bugs found reviewing the simple index's key cache, partition pruning's listing,
rule-3 de-duplication and the differential tests (d0e1373..92b57fb)."""

from __future__ import annotations

import pyarrow as pa

import pyhudi
from read_helpers import fresh_metadata_cache  # noqa: F401 (a fixture)

MARKED = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("ts", pa.int64()),
                    ("_hoodie_is_deleted", pa.bool_())])


def _marked_rows(ids, values, ts, deleted) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": values, "ts": pa.array(ts, pa.int64()),
                     "_hoodie_is_deleted": deleted}, schema=MARKED)


def _read(path) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in pyhudi.open_table(path).read(columns=["id", "v"]).to_pylist())


def test_a_bucketed_batchs_delete_without_an_ordering_value_wins_over_its_keys_earlier_rows(tmp_path):
    """Rule 3 in de-duplication: a row marked deleted without an ordering value wins over the
    earlier rows of its key within one write. The simple index's de-duplication applied it; the
    bucketed write's (its shared gather sorts each group's rows in the tasks) did not see the
    marker column, so the earlier row with an ordering value won and the key survived."""
    path = str(tmp_path / "t")
    t = pyhudi.create_table(path, MARKED, "id", ordering_field="ts", num_buckets=2)
    t.upsert(_marked_rows([1, 2], ["a", "a"], [1, 1], [False, False]))
    t.upsert(_marked_rows([1, 1, 2], ["b", "gone", "c"], [5, None, 2], [False, True, False]))
    assert _read(path) == [(2, "c")]
    unbucketed = str(tmp_path / "u")  # (as the simple index's write de-duplicates)
    u = pyhudi.create_table(unbucketed, MARKED, "id", ordering_field="ts")
    u.upsert(_marked_rows([1, 2], ["a", "a"], [1, 1], [False, False]))
    u.upsert(_marked_rows([1, 1, 2], ["b", "gone", "c"], [5, None, 2], [False, True, False]))
    assert _read(unbucketed) == [(2, "c")]
