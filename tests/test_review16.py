"""Review of the session's later kernel changes (session 17, helper review16).

``Table.delete`` learned to take plain key values (``t.delete(["a", "b"])``) on unpartitioned
one-key tables; the check that tells key values from rows took any list for key values, so a
list of record batches — rows, as every write accepts them — was refused (partitioned tables)
or converted as keys (unpartitioned). And keys in NumPy arrays or a pandas Series, the usual
forms of a column of keys, were refused with an unrelated message (or an AttributeError).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import SchemaError

SCHEMA = pa.schema([("id", pa.string()), ("day", pa.string()), ("v", pa.float64())])


def _ids(t) -> list[str]:
    return sorted(r["id"] for r in pyhudi.open_table(t.path).read(columns=["id"]).to_pylist())


def _table(tmp_path, name, partitioned):
    t = pyhudi.create_table(str(tmp_path / name), SCHEMA, "id", partition_fields="day" if partitioned else None)
    t.insert(pa.table({"id": ["a", "b", "c", "d"], "day": ["x", "y", "x", "y"], "v": [1.0, 2.0, 3.0, 4.0]},
                      schema=SCHEMA))
    return t


@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("container", [list, tuple])
def test_delete_takes_a_list_of_record_batches_as_rows(tmp_path, partitioned, container):
    t = _table(tmp_path, "t", partitioned)
    columns = {"id": ["a"], "day": ["x"]} if partitioned else {"id": ["a"]}
    more = {"id": ["d"], "day": ["y"]} if partitioned else {"id": ["d"]}
    t.delete(container([pa.record_batch(columns), pa.record_batch(more)]))
    assert _ids(t) == ["b", "c"]


def test_delete_takes_keys_as_a_numpy_array_or_a_pandas_series(tmp_path):
    pd = pytest.importorskip("pandas")
    t = _table(tmp_path, "t", partitioned=False)
    t.delete(np.array(["a", "zz"]))  # (a key not in the table: nothing to delete)
    assert _ids(t) == ["b", "c", "d"]
    frame = pd.DataFrame({"id": ["b", "c", "q"], "v": [0.0, 1.0, 2.0]})
    t.delete(frame["id"][frame["v"] < 1.5])
    assert _ids(t) == ["d"]


def test_keys_as_an_array_on_a_partitioned_table_are_refused_naming_the_columns(tmp_path):
    t = _table(tmp_path, "t", partitioned=True)
    with pytest.raises(SchemaError, match="delete of plain key values needs an unpartitioned table with one record "
                                          "key field; table 't' needs rows with columns id, day"):
        t.delete(np.array(["a"]))
    assert _ids(t) == ["a", "b", "c", "d"]
