"""pyhudi reads every Apache-Hudi-written fixture table exactly like Spark's gold snapshot."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import extract_table, fixture_zips

import pyhudi


def _normalise(column: pa.ChunkedArray) -> list:
    """Gold timestamps are ns without zone; compare values as UTC microseconds."""
    if pa.types.is_timestamp(column.type):
        return pc.cast(column, pa.timestamp("us")).cast(pa.int64()).to_pylist()
    return column.to_pylist()


@pytest.mark.parametrize("strategy", ["auto", "hash"])
@pytest.mark.parametrize("zip_path", fixture_zips(), ids=lambda p: p.stem)
def test_snapshot_equals_gold(zip_path, strategy, tmp_path):
    """``auto`` sort-merges where inputs are sorted (else hash-merges); ``hash`` forces the hash merge."""
    table_dir = extract_table(zip_path, tmp_path)
    gold_files = sorted((table_dir.parent / "gold_data").glob("*.parquet"))
    assert gold_files, f"{zip_path.name} has no gold_data"
    gold = pa.concat_tables([pq.read_table(f) for f in gold_files])
    table = pyhudi.open_table(str(table_dir))
    got = table.read(strategy=strategy)
    columns = [c for c in gold.column_names if not c.startswith("_hoodie")]
    assert sorted(c for c in got.column_names if not c.startswith("_hoodie")) == sorted(columns)
    key = table.record_key_fields[0]
    gold = gold.select(columns).sort_by(key)
    got = got.select(columns).sort_by(key)
    assert got.num_rows == gold.num_rows
    for name in columns:
        expected = _normalise(gold.column(name))
        actual = _normalise(got.column(name).cast(gold.column(name).type) if not pa.types.is_timestamp(gold.column(name).type) else got.column(name))
        assert actual == expected, f"column {name} differs"
