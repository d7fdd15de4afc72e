"""The SQL front end (``pyhudi.spark.sql``) on a Spark-free backend: parsing, routing, planning, rows.

The same statements run on a real Spark session in ``tests/test_sql_spark.py``; here a fake backend
runs the generated Spark SQL with sqlglot's executor, so every statement is checked against exact
rows and commits in milliseconds.
"""

from __future__ import annotations

import hashlib
import pathlib

import pyarrow as pa
import pytest
from sql_fake import FakeBackend

import pyhudi
from pyhudi.errors import ColumnFamilyError, ConfigError, SchemaError
from pyhudi.spark.procedures import PROCEDURES, register_procedure
from pyhudi.spark.sql import SqlError, SqlSession, split_statements
from pyhudi.spark.sql_backend import table_source_name
from pyhudi.spark.sql_ddl import typed_family_value

CREATE = """
CREATE TABLE t (id STRING NOT NULL, a DOUBLE, b STRING, ts BIGINT, c BIGINT) USING pyhudi
LOCATION '{path}'
TBLPROPERTIES ('primaryKey' = 'id', 'type' = 'mor', 'preCombineField' = 'ts',
               'hoodie.index.type' = 'BUCKET', 'hoodie.bucket.index.num.buckets' = '2',
               'hoodie.colFamily.f1' = 'a,b;ts', 'hoodie.colFamily.f2' = 'c')
"""
ROWS = "INSERT INTO t VALUES ('k1', 1.0, 'x', 1, 10), ('k2', 2.0, 'y', 1, 20)"


@pytest.fixture
def backend(tmp_path):
    return FakeBackend(str(tmp_path / "warehouse"))


@pytest.fixture
def session(backend):
    return SqlSession(backend)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "t")


@pytest.fixture
def loaded(session, path):
    session.execute(CREATE.format(path=path) + ";" + ROWS)
    return pyhudi.open_table(path)


def select(session, text):
    return session.execute(text).to_pylist()


def families_written(table, instant):
    """The family suffixes of the files one commit wrote."""
    timeline = table.active_timeline()
    metadata = timeline.read_metadata(timeline.get(instant))
    return sorted({p.rsplit("/", 1)[-1].split("_")[2].split(".")[0] for p in metadata.written_paths()})


# ----------------------------------------------------------------------------------- parsing
def test_statements_split_at_semicolon_tokens_only():
    assert split_statements("SELECT ';' AS x; SELECT 2 ;\n; ") == ["SELECT ';' AS x", "SELECT 2"]


def test_typed_family_values():
    assert typed_family_value("hoodie.colFamily.k", "x DOUBLE, y DECIMAL(10,2); ts BIGINT") == (
        "x,y;ts", {"x": pa.field("x", pa.float64()), "y": pa.field("y", pa.decimal128(10, 2)),
                   "ts": pa.field("ts", pa.int64())})
    assert typed_family_value("hoodie.colFamily.k", "id, x ARRAY<STRING>") == (
        "id,x", {"x": pa.field("x", pa.list_(pa.field("element", pa.string())))})
    assert typed_family_value("hoodie.colFamily.k", "a,b") == ("a,b", {})
    with pytest.raises(SchemaError, match="column family 'k': new column 'x' must be nullable"):
        typed_family_value("hoodie.colFamily.k", "x DOUBLE NOT NULL")
    with pytest.raises(ColumnFamilyError, match="more than one ';'"):
        typed_family_value("hoodie.colFamily.k", "a;b;c")


# ----------------------------------------------------------------------------------- CREATE
def test_create_table_makes_the_hudi_table_the_catalog_entry_and_the_registry(session, backend, path):
    result = session.execute(CREATE.format(path=path))
    assert result.to_pylist() == [{"instant": None}]
    table = pyhudi.open_table(path)
    props = table.properties
    assert (props["hoodie.table.name"], props["hoodie.table.type"], props["hoodie.table.recordkey.fields"],
            props["hoodie.table.precombine.field"], props["hoodie.bucket.index.num.buckets"]) == (
        "t", "MERGE_ON_READ", "id", "ts", "2")
    assert {n: f.property_value for n, f in table.column_families.items()} == {"f1": "a,b,ts;ts", "f2": "c"}
    assert table.schema == pa.schema([pa.field("id", pa.string(), False), ("a", pa.float64()), ("b", pa.string()),
                                      ("ts", pa.int64()), ("c", pa.int64())])
    assert backend.catalog_statements == [
        "CREATE TABLE `default`.`t` (`id` STRING NOT NULL, `a` DOUBLE, `b` STRING, `ts` BIGINT, `c` BIGINT) "
        f"USING {table_source_name('spark_catalog.default.t', path)} LOCATION '{path}'"]
    assert table_source_name("spark_catalog.default.t", path) == (
        f"pyhudi_spark_catalog_default_t_{hashlib.sha1(path.encode()).hexdigest()[:12]}")
    assert backend.conf == {"spark.pyhudi.table.spark_catalog.default.t": path}
    assert session.execute(CREATE.format(path=path).replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS")).to_pylist() \
        == [{"instant": None}]
    with pytest.raises(SqlError, match="table spark_catalog.default.t already exists"):
        session.execute(CREATE.format(path=path))


def test_create_refuses_families_differing_only_in_case(session, backend, path):
    with pytest.raises(ConfigError, match="column families 'fA' and 'FA' differ only in case"):
        session.execute(f"CREATE TABLE c (id STRING, a DOUBLE, b DOUBLE) USING pyhudi LOCATION '{path}' "
                        "TBLPROPERTIES (primaryKey = 'id', 'hoodie.index.type' = 'BUCKET', "
                        "'hoodie.colFamily.fA' = 'a', 'hoodie.colFamily.FA' = 'b')")
    assert not pathlib.Path(path).exists() and backend.catalog_statements == []


def test_create_partitioned_table_in_the_warehouse_and_register_an_existing_one(session, backend, tmp_path):
    session.execute("CREATE TABLE db1.p (id BIGINT, v STRING) USING pyhudi PARTITIONED BY (day STRING) "
                    "OPTIONS (primaryKey = 'id') TBLPROPERTIES ('type' = 'cow')")
    where = f"{tmp_path}/warehouse/db1.db/p"
    table = pyhudi.open_table(where)
    assert (table.partition_fields, table.config.table_type, table.schema.names) == (("day",), "COPY_ON_WRITE",
                                                                                      ["id", "v", "day"])
    assert backend.conf["spark.pyhudi.table.spark_catalog.db1.p"] == where
    provider = table_source_name("spark_catalog.db1.p", where)
    assert backend.catalog_statements[-1].endswith(f"USING {provider} PARTITIONED BY (`day`) LOCATION '{where}'")
    session.execute(f"CREATE TABLE q USING pyhudi LOCATION '{where}'")  # no columns: the table already there
    assert backend.conf["spark.pyhudi.table.spark_catalog.default.q"] == where
    assert backend.catalog_statements[-1] == (
        f"CREATE TABLE `default`.`q` (`id` BIGINT, `v` STRING, `day` STRING) "
        f"USING {table_source_name('spark_catalog.default.q', where)} PARTITIONED BY (`day`) "
        f"LOCATION '{where}'")


@pytest.mark.parametrize("statement, error, message", [
    ("CREATE TABLE t (id STRING, a DOUBLE) USING pyhudi LOCATION '{path}'", SqlError,
     "CREATE TABLE spark_catalog.default.t: set the record key with TBLPROPERTIES (primaryKey = '<column>')"),
    ("CREATE TABLE t (id STRING) USING pyhudi LOCATION '{path}' TBLPROPERTIES ('primaryKey'='id', 'owner'='x')",
     SqlError, "unknown table property 'owner'"),
    ("CREATE TABLE t (id STRING) USING pyhudi LOCATION '{path}' TBLPROPERTIES ('primaryKey'='id', 'type'='x')",
     SqlError, "table property type='x': expected 'mor' or 'cow'"),
    ("CREATE TABLE t USING pyhudi LOCATION '{path}'", SqlError,
     "CREATE TABLE spark_catalog.default.t USING pyhudi needs a column list (no Hudi table at"),
    ("CREATE TABLE t (id STRING, a INTERVAL DAY) USING pyhudi LOCATION '{path}'", SchemaError,
     "column 'a': Spark SQL type"),
    ("CREATE TABLE t (id STRING, a DOUBLE) USING pyhudi LOCATION '{path}' TBLPROPERTIES ('primaryKey'='id', "
     "'hoodie.index.type'='BUCKET', 'hoodie.colFamily.f1'='zz')", ColumnFamilyError,
     "column family 'f1': column 'zz' is not in the table schema"),
    ("CREATE TABLE t USING pyhudi TBLPROPERTIES ('primaryKey'='id') AS SELECT 1 AS id", SqlError,
     "CREATE TABLE ... USING pyhudi AS SELECT is not supported"),
])
def test_bad_create_table_writes_nothing(session, backend, path, statement, error, message):
    with pytest.raises(error) as info:
        session.execute(statement.format(path=path))
    assert message in str(info.value)
    assert not pathlib.Path(path).exists() and backend.conf == {} and backend.catalog_statements == []


# ----------------------------------------------------------------------------------- INSERT / SELECT
def test_insert_values_and_select(session, backend, loaded):
    assert select(session, "SELECT id, a, c FROM t WHERE c > 5 ORDER BY id") == [
        {"id": "k1", "a": 1.0, "c": 10}, {"id": "k2", "a": 2.0, "c": 20}]
    assert backend.writes[-1][1:] == ("insert", 2)
    assert backend.views == {} and len(backend.dropped_views) >= 2  # every temporary view is dropped


def test_insert_select_with_column_list_fills_the_rest_with_null(session, backend, loaded):
    backend.views["src"] = pa.table({"key": ["k3", "k4"], "amount": [30, 40]})
    backend.conf["hoodie.spark.sql.insert.into.operation"] = "upsert"
    session.execute("INSERT INTO t (c, id) SELECT amount, key FROM src")
    assert backend.writes[-1][1:] == ("upsert", 2)
    assert select(session, "SELECT * FROM t ORDER BY id")[2:] == [
        {"id": "k3", "a": None, "b": None, "ts": None, "c": 30},
        {"id": "k4", "a": None, "b": None, "ts": None, "c": 40}]
    with pytest.raises(SqlError, match=r"the query gives 2 columns but 1 are expected \(c\)"):
        session.execute("INSERT INTO t (c) SELECT amount, key FROM src")
    with pytest.raises(SchemaError, match="INSERT: column 'zz' is not in table spark_catalog.default.t"):
        session.execute("INSERT INTO t (zz) SELECT amount FROM src")
    backend.conf["hoodie.spark.sql.insert.into.operation"] = "delete"
    with pytest.raises(ConfigError, match="hoodie.spark.sql.insert.into.operation='delete' is not supported"):
        session.execute("INSERT INTO t SELECT key, 1.0, 'x', 1, amount FROM src")


def test_time_travel_select(session, loaded):
    first = loaded.timeline[-1].completion_time
    session.execute("UPDATE t SET c = 0")
    assert select(session, "SELECT id, c FROM t ORDER BY id") == [{"id": "k1", "c": 0}, {"id": "k2", "c": 0}]
    assert select(session, f"SELECT id, c FROM t VERSION AS OF '{first}' ORDER BY id") == [
        {"id": "k1", "c": 10}, {"id": "k2", "c": 20}]
    as_timestamp = f"{first[:4]}-{first[4:6]}-{first[6:8]} {first[8:10]}:{first[10:12]}:{first[12:14]}.{first[14:]}"
    assert select(session, f"SELECT x.c FROM t TIMESTAMP AS OF '{as_timestamp}' AS x WHERE x.id = 'k2'") == [{"c": 20}]


def test_queries_without_pyhudi_tables_pass_through_unchanged(session, backend):
    backend.views["plain"] = pa.table({"x": [1, 2]})
    text = "SELECT   x FROM plain WHERE x > 1"
    assert select(session, text) == [{"x": 2}]
    assert backend.queries == [text]


def test_ctes_shadow_tables(session, backend, loaded):
    assert select(session, "WITH t AS (SELECT 'cte' AS id) SELECT id FROM t") == [{"id": "cte"}]
    assert select(session, "WITH x AS (SELECT id FROM t) SELECT COUNT(*) AS n FROM x") == [{"n": 2}]


# ----------------------------------------------------------------------------------- UPDATE / DELETE
def test_update_is_a_partial_write_of_the_assigned_families(session, loaded):
    result = session.execute("UPDATE t SET c = c + 1 WHERE id = 'k2'")
    instant = result.to_pylist()[0]["instant"]
    assert families_written(loaded, instant) == ["f2"]
    result = session.execute("UPDATE t AS u SET b = concat(u.b, '!') WHERE u.a < 2")
    assert families_written(loaded, result.to_pylist()[0]["instant"]) == ["f1"]
    assert select(session, "SELECT * FROM t ORDER BY id") == [
        {"id": "k1", "a": 1.0, "b": "x!", "ts": 1, "c": 10}, {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "c": 21}]
    with pytest.raises(SqlError, match="UPDATE: column 'id' is a record key or partition column"):
        session.execute("UPDATE t SET id = 'k9'")
    with pytest.raises(SqlError, match="UPDATE: column 'c' is assigned twice"):
        session.execute("UPDATE t SET c = 1, c = 2")


def test_delete_where_and_everything(session, backend, loaded):
    session.execute("INSERT INTO t VALUES ('k3', 3.0, 'z', 1, 30)")
    session.execute("DELETE FROM t WHERE a > 2.5")
    assert backend.writes[-1][1:] == ("delete", 1)
    session.execute("DELETE FROM t AS d WHERE d.b = 'x' AND d.c = 10")
    assert select(session, "SELECT id FROM t") == [{"id": "k2"}]
    session.execute("DELETE FROM t")
    assert select(session, "SELECT id FROM t") == []


# ----------------------------------------------------------------------------------- MERGE
def test_merge_updates_some_columns_inserts_and_deletes_in_one_commit(session, backend, loaded):
    session.execute("INSERT INTO t VALUES ('k3', 3.0, 'z', 1, 30)")
    backend.views["src"] = pa.table({"id": ["k1", "k2", "k4"], "a": [10.0, 20.0, 40.0], "op": ["u", "d", "i"]})
    before = len(loaded.timeline)
    result = session.execute("""
        MERGE INTO t USING src ON t.id = src.id
        WHEN MATCHED AND src.op = 'd' THEN DELETE
        WHEN MATCHED THEN UPDATE SET a = src.a
        WHEN NOT MATCHED THEN INSERT (id, a) VALUES (src.id, src.a)""")
    instant = result.to_pylist()[0]["instant"]
    assert len(loaded.timeline) == before + 1 and loaded.timeline[-1].requested_time == instant
    assert families_written(loaded, instant) == ["f1", "f2"]  # a's family, plus the delete blocks of k2
    assert select(session, "SELECT * FROM t ORDER BY id") == [
        {"id": "k1", "a": 10.0, "b": "x", "ts": 1, "c": 10},  # b and ts kept: a partial block of f1
        {"id": "k3", "a": 3.0, "b": "z", "ts": 1, "c": 30},
        {"id": "k4", "a": 40.0, "b": None, "ts": None, "c": None},
    ]


def test_merge_without_deletes_writes_only_the_assigned_families(session, backend, loaded):
    backend.views["src"] = pa.table({"key": ["k1", "k5"], "amount": [11, 55]})
    result = session.execute("""
        MERGE INTO t AS tgt USING (SELECT key AS id, amount FROM src) AS s ON tgt.id = s.id
        WHEN MATCHED AND s.amount > 100 THEN UPDATE SET c = 0
        WHEN MATCHED THEN UPDATE SET c = s.amount + tgt.c
        WHEN NOT MATCHED THEN INSERT (id, c) VALUES (s.id, s.amount)""")
    assert families_written(loaded, result.to_pylist()[0]["instant"]) == ["f2"]
    assert select(session, "SELECT id, a, c FROM t ORDER BY id") == [
        {"id": "k1", "a": 1.0, "c": 21}, {"id": "k2", "a": 2.0, "c": 20}, {"id": "k5", "a": None, "c": 55}]


def test_merge_star_actions(session, backend, loaded):
    backend.views["src"] = pa.table({"id": ["k2", "k6"], "a": [2.5, 6.0], "b": ["Y", "f"], "ts": [2, 1],
                                     "c": [22, 66]})
    session.execute("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET * "
                    "WHEN NOT MATCHED THEN INSERT *")
    assert select(session, "SELECT * FROM t ORDER BY id") == [
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "c": 10}, {"id": "k2", "a": 2.5, "b": "Y", "ts": 2, "c": 22},
        {"id": "k6", "a": 6.0, "b": "f", "ts": 1, "c": 66}]


def test_merge_refuses_ambiguous_and_unsupported_forms(session, backend, loaded, path):
    backend.views["src"] = pa.table({"id": ["k1", "k1"], "a": [1.0, 2.0]})
    before = sorted(p.name for p in pathlib.Path(path).rglob("*"))
    with pytest.raises(SqlError, match=r"MERGE: 2 source rows match the target row \(id='k1'\) of "
                                       r"spark_catalog.default.t"):
        session.execute("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET a = src.a")
    assert sorted(p.name for p in pathlib.Path(path).rglob("*")) == before
    with pytest.raises(SqlError, match="MERGE INSERT: record key and partition columns must be inserted; missing id"):
        session.execute("MERGE INTO t USING src ON t.id = src.id WHEN NOT MATCHED THEN INSERT (a) VALUES (src.a)")
    with pytest.raises(SqlError, match="MERGE: WHEN NOT MATCHED BY SOURCE is not supported"):
        session.execute("MERGE INTO t USING src ON t.id = src.id WHEN NOT MATCHED BY SOURCE THEN DELETE")
    with pytest.raises(SqlError, match="MERGE UPDATE: column 'id' is a record key"):
        session.execute("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET id = src.id")


# ----------------------------------------------------------------------------------- INSERT OVERWRITE
def replace_metadata(table):
    """(operation type, partitionToReplaceFileIds) of the table's latest instant, a replacecommit."""
    inst = table.timeline[-1]
    assert (str(inst.action), inst.state.value) == ("replacecommit", "COMPLETED")
    md = table.active_timeline().read_metadata(inst)
    return md.operation_type, md.partition_to_replace_file_ids


def test_insert_overwrite_replaces_every_row_in_one_commit(session, backend, loaded):
    before = {g.file_id for g in loaded.file_groups()}
    session.execute("INSERT OVERWRITE t SELECT 'k2', 0.5, 'n', 5, 2 UNION ALL SELECT 'k9', 9.0, 'z', 9, 90")
    assert [str(i.action) for i in loaded.timeline] == ["deltacommit", "replacecommit"]
    assert replace_metadata(loaded) == ("INSERT_OVERWRITE_TABLE", {"": sorted(before)})
    assert backend.writes[-1][1:] == ("insert_overwrite_table", 2)
    assert select(session, "SELECT * FROM t ORDER BY id") == [
        {"id": "k2", "a": 0.5, "b": "n", "ts": 5, "c": 2}, {"id": "k9", "a": 9.0, "b": "z", "ts": 9, "c": 90}]
    # a lower ordering value than the stored row still replaces it: an overwrite is not an upsert
    session.execute("INSERT OVERWRITE t SELECT 'k2', 0.1, 'm', 1, 3")
    assert select(session, "SELECT * FROM t ORDER BY id") == [{"id": "k2", "a": 0.1, "b": "m", "ts": 1, "c": 3}]


def test_insert_overwrite_of_partitions(session, backend, tmp_path):
    session.execute(f"CREATE TABLE p (id BIGINT, v STRING, day STRING) USING pyhudi PARTITIONED BY (day) "
                    f"LOCATION '{tmp_path}/p' TBLPROPERTIES (primaryKey = 'id', 'hoodie.index.type' = 'BUCKET', "
                    f"'hoodie.bucket.index.num.buckets' = '1')")
    session.execute("INSERT INTO p VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2'), (5, 'e', 'd3')")
    table = pyhudi.open_table(f"{tmp_path}/p")
    groups = {g.partition_path: g.file_id for g in table.file_groups()}
    # static mode (default) with a PARTITION spec: that partition only
    session.execute("INSERT OVERWRITE p PARTITION (day = 'd1') SELECT 2, 'B'")
    assert replace_metadata(table) == ("INSERT_OVERWRITE", {"d1": [groups["d1"]]})
    assert select(session, "SELECT * FROM p ORDER BY id") == [
        {"id": 2, "v": "B", "day": "d1"}, {"id": 3, "v": "c", "day": "d2"}, {"id": 5, "v": "e", "day": "d3"}]
    # a static partition is replaced even when the query returns no row
    session.execute("INSERT OVERWRITE p PARTITION (day = 'd3') SELECT id, v FROM p WHERE id < 0")
    assert replace_metadata(table) == ("INSERT_OVERWRITE", {"d3": [groups["d3"]]})
    assert [r["id"] for r in select(session, "SELECT id FROM p ORDER BY id")] == [2, 3]
    # dynamic mode (Spark's conf): the partitions the rows go to
    backend.conf["spark.sql.sources.partitionOverwriteMode"] = "dynamic"
    session.execute("INSERT OVERWRITE p SELECT 4, 'x', 'd2'")
    assert replace_metadata(table) == ("INSERT_OVERWRITE", {"d2": [groups["d2"]]})
    assert select(session, "SELECT * FROM p ORDER BY id") == [{"id": 2, "v": "B", "day": "d1"},
                                                              {"id": 4, "v": "x", "day": "d2"}]
    # hoodie.datasource.overwrite.mode wins over Spark's conf: static without a spec = the whole table
    backend.conf["hoodie.datasource.overwrite.mode"] = "STATIC"
    session.execute("INSERT OVERWRITE p SELECT 6, 'y', 'd4'")
    operation, replaced = replace_metadata(table)
    assert operation == "INSERT_OVERWRITE_TABLE" and sorted(replaced) == ["d1", "d2"]
    assert select(session, "SELECT * FROM p") == [{"id": 6, "v": "y", "day": "d4"}]
    backend.conf["hoodie.datasource.overwrite.mode"] = "sometimes"
    with pytest.raises(SqlError, match="hoodie.datasource.overwrite.mode='sometimes': expected static or dynamic"):
        session.execute("INSERT OVERWRITE p SELECT 7, 'z', 'd4'")
    del backend.conf["hoodie.datasource.overwrite.mode"]
    with pytest.raises(SqlError, match="PARTITION \\(v = ...\\): 'v' is not a partition column"):
        session.execute("INSERT OVERWRITE p PARTITION (v = 'x') SELECT 1, 'd1'")
    assert select(session, "SELECT * FROM p") == [{"id": 6, "v": "y", "day": "d4"}]


def test_insert_overwrite_with_a_partial_static_spec(session, tmp_path):
    session.execute(f"CREATE TABLE q (id BIGINT, v STRING, day STRING, hr INT) USING pyhudi PARTITIONED BY (day, hr) "
                    f"LOCATION '{tmp_path}/q' TBLPROPERTIES (primaryKey = 'id')")
    session.execute("INSERT INTO q VALUES (1, 'a', 'd1', 1), (2, 'b', 'd1', 2), (3, 'c', 'd2', 1)")
    table = pyhudi.open_table(f"{tmp_path}/q")
    groups = {g.partition_path: g.file_id for g in table.file_groups()}
    session.execute("INSERT OVERWRITE q PARTITION (day = 'd1', hr) SELECT 9, 'z', 3")
    assert replace_metadata(table) == ("INSERT_OVERWRITE", {"d1/1": [groups["d1/1"]], "d1/2": [groups["d1/2"]]})
    assert select(session, "SELECT * FROM q ORDER BY id") == [
        {"id": 3, "v": "c", "day": "d2", "hr": 1}, {"id": 9, "v": "z", "day": "d1", "hr": 3}]


# ----------------------------------------------------------------------------------- ALTER / DROP
def test_alter_adds_and_drops_families_and_keeps_the_catalog_in_step(session, backend, loaded):
    result = session.execute("ALTER TABLE t SET TBLPROPERTIES ('hoodie.colFamily.f3' = 'd STRING, e BIGINT; e', "
                             "'hoodie.cleaner.commits.retained' = '4')")
    instant = result.to_pylist()[0]["instant"]
    assert loaded.timeline[-1].requested_time == instant
    table = pyhudi.open_table(loaded.path)
    assert table.properties["hoodie.colFamily.f3"] == "d,e;e"
    assert table.properties["hoodie.cleaner.commits.retained"] == "4"
    assert backend.catalog_statements[-1] == "ALTER TABLE `default`.`t` ADD COLUMNS (`d` STRING, `e` BIGINT)"
    session.execute("INSERT INTO t (id, d, e) VALUES ('k1', 'dd', 7)")  # id, d, e; the rest NULL
    assert select(session, "SELECT id, c, d, e FROM t ORDER BY id") == [
        {"id": "k1", "c": None, "d": "dd", "e": 7}, {"id": "k2", "c": 20, "d": None, "e": None}]
    session.execute("ALTER TABLE t UNSET TBLPROPERTIES ('hoodie.colFamily.f2', 'hoodie.cleaner.commits.retained')")
    assert backend.catalog_statements[-1] == "ALTER TABLE `default`.`t` DROP COLUMNS (`c`)"
    assert select(session, "SELECT * FROM t ORDER BY id") == [  # f1 orders by ts: the NULL-ts insert lost there
        {"id": "k1", "a": 1.0, "b": "x", "ts": 1, "d": "dd", "e": 7},
        {"id": "k2", "a": 2.0, "b": "y", "ts": 1, "d": None, "e": None}]
    assert "hoodie.cleaner.commits.retained" not in pyhudi.open_table(loaded.path).properties
    assert session.execute("ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('hoodie.colFamily.f2')").to_pylist() == [
        {"instant": None}]


@pytest.mark.parametrize("statement, error, message", [
    ("ALTER TABLE t SET TBLPROPERTIES ('hoodie.colFamily.f1' = 'a')", ColumnFamilyError,
     "column family 'f1' already exists as 'a,b,ts;ts'; existing column families cannot be changed"),
    ("ALTER TABLE t SET TBLPROPERTIES ('hoodie.colFamily.f9' = 'c, z INT')", ColumnFamilyError,
     "column 'c' belongs to column family 'f2'; columns of other families cannot move"),
    ("ALTER TABLE t SET TBLPROPERTIES ('hoodie.colFamily.f9' = 'z')", SchemaError,
     "column family 'f9': new column 'z' has no type"),
    ("ALTER TABLE t SET TBLPROPERTIES ('hoodie.table.recordkey.fields' = 'a')", ConfigError,
     "property 'hoodie.table.recordkey.fields' is fixed when the table is created"),
    ("ALTER TABLE t UNSET TBLPROPERTIES ('hoodie.colFamily.nope')", SqlError,
     "table spark_catalog.default.t has no property 'hoodie.colFamily.nope'"),
    ("ALTER TABLE t ADD COLUMNS (z DOUBLE)", SqlError,
     "pyhudi tables support SET/UNSET TBLPROPERTIES only; add or drop columns through a column family"),
    ("ALTER TABLE t RENAME TO u", SqlError, "pyhudi tables support SET/UNSET TBLPROPERTIES only"),
])
def test_bad_alter_changes_nothing(session, backend, loaded, statement, error, message):
    root = pathlib.Path(loaded.path)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    statements = list(backend.catalog_statements)
    with pytest.raises(error) as info:
        session.execute(statement)
    assert message in str(info.value)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert backend.catalog_statements == statements


def test_drop_table_keeps_data_unless_purged(session, backend, loaded, path):
    session.execute("DROP TABLE t")
    assert backend.catalog_statements[-1] == "DROP TABLE IF EXISTS `default`.`t`"
    assert backend.conf == {} and pyhudi.open_table(path).read().num_rows == 2
    session.execute(f"CREATE TABLE t2 USING pyhudi LOCATION '{path}'")
    session.execute("DROP TABLE t2 PURGE")
    assert not pathlib.Path(path).exists()


# ----------------------------------------------------------------------------------- CALL
def test_call_procedures(session, loaded):
    rows = select(session, "CALL show_timeline(table => 't', limit => 1)")
    last = loaded.timeline[-1]
    assert rows == [{"instant_time": last.requested_time, "action": "deltacommit", "state": "COMPLETED",
                     "completion_time": last.completion_time}]
    assert len(select(session, f"CALL pyhudi.show_timeline('{loaded.path}')")) == 1
    calls = []
    register_procedure("echo_args", lambda s, *args, **kwargs: calls.append((args, kwargs)))
    try:
        assert select(session, "CALL echo_args(1, -2.5, 'x', flag => true, none => NULL)") == []
        assert calls == [((1, -2.5, "x"), {"flag": True, "none": None})]
    finally:
        PROCEDURES.pop("echo_args")
    with pytest.raises(SqlError, match=r"unknown procedure 'run_nothing' \(registered procedures: run_clean, run_clustering, run_compaction, show_timeline\)"):
        session.execute("CALL run_nothing()")
    with pytest.raises(SqlError, match="'nope' is not a pyhudi table"):
        session.execute("CALL show_timeline(table => 'nope')")
    with pytest.raises(SqlError, match="CALL show_timeline: positional arguments must come before named ones"):
        session.execute("CALL show_timeline(table => 't', 1)")


def test_reads_are_rewritten_to_views_and_targets_are_not(session, backend, loaded):
    from pyhudi.spark.sql import parse_statement

    cases = {
        "INSERT INTO other SELECT id FROM t": "INSERT INTO other SELECT id FROM {v} AS t",
        "CREATE TABLE x USING parquet AS SELECT a FROM default.t AS y": "CREATE TABLE x USING PARQUET AS SELECT a FROM {v} AS y",
        "SELECT * FROM plain p JOIN (SELECT id FROM t) q ON p.id = q.id":
            "SELECT * FROM plain AS p JOIN (SELECT id FROM {v} AS t) AS q ON p.id = q.id",
        "DESCRIBE t": "DESCRIBE t",
        "DROP TABLE t": "DROP TABLE t",
    }
    for statement, expected in cases.items():
        with session.views() as views:
            rewritten = views.rewrite_reads(parse_statement(statement)).sql(dialect="spark")
            assert rewritten == expected.format(v=views.created[0] if views.created else ""), statement
    assert backend.views == {}
