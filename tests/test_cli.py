"""The pyhudi command line: create, describe, write, read, alter (and their errors)."""

from __future__ import annotations

import json

from pyhudi.cli import main


def test_create_and_describe(tmp_path, capsys):
    path = str(tmp_path / "t")
    assert main(["create", path, "--schema", "id:string,a:double,b:long", "--buckets", "2",
                 "--family", "x=a", "--family", "y=b"]) == 0
    assert main(["describe", path, "--json"]) == 0
    described = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert described["table"]["column_families"] == {"x": "a", "y": "b"}
    assert described["properties"]["hoodie.bucket.index.num.buckets"] == "2"


def test_errors_are_reported_with_exit_code_2(tmp_path, capsys):
    assert main(["create", str(tmp_path / "t"), "--schema", "id:str"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: bad column spec 'id:str': expected name:type")
    assert main(["describe", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err == f"error: no Hudi table at {tmp_path / 'none'}: .hoodie/hoodie.properties not found\n"


def _make_table(tmp_path, capsys) -> str:
    path = str(tmp_path / "t")
    assert main(["create", path, "--schema", "id:string,price:double,qty:long,day:date", "--buckets", "2",
                 "--family", "p=price", "--family", "q=qty,day"]) == 0
    (tmp_path / "in.csv").write_text("id,price,qty,day\na,1.5,3,2024-01-02\nb,2.5,4,2024-01-03\nc,0.5,,2024-01-04\n")
    assert main(["write", path, str(tmp_path / "in.csv"), "--json"]) == 0
    capsys.readouterr()
    return path


def _read_json(capsys, *args) -> list:
    assert main(["read", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_write_csv_then_partial_json_upsert_and_read_back(tmp_path, capsys):
    path = _make_table(tmp_path, capsys)
    (tmp_path / "up.json").write_text('{"id": "a", "price": 9.0}\n')
    assert main(["write", path, str(tmp_path / "up.json"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_per_family"] == {"p": 1}  # only the family whose column is present
    assert summary["files"] == [f".00000000-0000-0000-0000-000000000000-0_{summary['instant']}_p.log.1_0-1-0"]
    assert _read_json(capsys, path, "--sort", "id") == [
        {"id": "a", "price": 9.0, "qty": 3, "day": "2024-01-02"},  # qty and day kept: partial write
        {"id": "b", "price": 2.5, "qty": 4, "day": "2024-01-03"},
        {"id": "c", "price": 0.5, "qty": None, "day": "2024-01-04"},
    ]


def test_read_filters_are_typed_by_the_schema(tmp_path, capsys):
    path = _make_table(tmp_path, capsys)
    assert _read_json(capsys, path, "--filter", "price>=1", "--filter", "day < 2024-01-03", "--columns", "id,price") == [
        {"id": "a", "price": 1.5}]
    assert [r["id"] for r in _read_json(capsys, path, "--filter", "id not in a,b")] == ["c"]
    assert [r["id"] for r in _read_json(capsys, path, "--filter", "qty is null")] == ["c"]
    assert [r["id"] for r in _read_json(capsys, path, "--filter", "price != 2.5", "--sort", "id")] == ["a", "c"]


def test_delete_time_travel_incremental_and_output_file(tmp_path, capsys):
    import pyarrow.parquet as pq

    import pyhudi

    path = _make_table(tmp_path, capsys)
    first = pyhudi.open_table(path).timeline[-1].completion_time
    (tmp_path / "del.csv").write_text("id\nb\n")
    assert main(["write", path, str(tmp_path / "del.csv"), "--operation", "delete"]) == 0
    assert "delete of 1 row committed" in capsys.readouterr().out
    assert [r["id"] for r in _read_json(capsys, path, "--sort", "id")] == ["a", "c"]
    assert [r["id"] for r in _read_json(capsys, path, "--as-of", first, "--sort", "id")] == ["a", "b", "c"]
    (tmp_path / "up.csv").write_text("id,qty\nc,7\n")
    assert main(["write", path, str(tmp_path / "up.csv")]) == 0
    capsys.readouterr()
    assert _read_json(capsys, path, "--incremental", first) == [
        {"id": "c", "price": 0.5, "qty": 7, "day": "2024-01-04"}]  # b's delete is not a row
    out = tmp_path / "rows.parquet"
    assert main(["read", path, "--output", str(out), "--meta"]) == 0
    assert "2 rows written to" in capsys.readouterr().out
    written = pq.read_table(out)
    assert written.column_names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                        "_hoodie_partition_path", "_hoodie_file_name"]
    assert sorted(written.column("id").to_pylist()) == ["a", "c"]


def test_files_and_alter(tmp_path, capsys):
    path = _make_table(tmp_path, capsys)
    assert main(["files", path, "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)
    assert [g["file_id"] for g in groups] == ["00000000-0000-0000-0000-000000000000-0",
                                              "00000001-0000-0000-0000-000000000000-0"]
    # the write into new file groups: one full-row log each (no family suffix), read by p and q
    assert all([f.split("_")[-2].split(".")[1] for f in g["log_files"]] == ["log"] for g in groups)
    assert main(["alter", path, "--set", "hoodie.colFamily.geo=lat,lon", "--column", "lat:double",
                 "--column", "lon:double"]) == 0
    assert "family geo: lat,lon" in capsys.readouterr().out
    assert _read_json(capsys, path, "--sort", "id", "--limit", "1") == [
        {"id": "a", "price": 1.5, "qty": 3, "day": "2024-01-02", "lat": None, "lon": None}]


def test_cli_input_errors_name_the_problem_and_change_nothing(tmp_path, capsys):
    import pyhudi

    path = _make_table(tmp_path, capsys)
    before = [i.requested_time for i in pyhudi.open_table(path).timeline]
    (tmp_path / "bad.txt").write_text("x")
    (tmp_path / "bad.csv").write_text("id,price\nz,notanumber\n")
    cases = [
        (["read", path, "--filter", "nope=1"], "filter 'nope=1': unknown column 'nope'"),
        (["read", path, "--filter", "price>=abc"], "filter 'price>=abc': 'abc' is not a valid double"),
        (["read", path, "--filter", "price"], "filter 'price': expected 'column OP value'"),
        (["read", path, "--filter", "qty is null 3"], "'is null' takes no value"),
        (["write", path, str(tmp_path / "missing.csv")], "input file"),
        (["write", path, str(tmp_path / "bad.txt")], "cannot tell the format of"),
        (["write", path, str(tmp_path / "bad.csv")], "cannot read csv input"),
        (["alter", path, "--set", "x"], "--set 'x': expected KEY=VALUE"),
        (["alter", path], "alter needs at least one"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1, argv  # one line on stderr
        assert message in captured.err, argv
    assert [i.requested_time for i in pyhudi.open_table(path).timeline] == before


def test_write_insert_overwrite_table_replaces_every_row(tmp_path, capsys):
    import pyhudi

    path = _make_table(tmp_path, capsys)
    (tmp_path / "new.csv").write_text("id,price,qty,day\nz,7.0,1,2025-05-05\n")
    assert main(["write", path, str(tmp_path / "new.csv"), "--operation", "insert_overwrite_table"]) == 0
    assert "insert_overwrite_table of 1 row committed" in capsys.readouterr().out
    assert _read_json(capsys, path) == [{"id": "z", "price": 7.0, "qty": 1, "day": "2025-05-05"}]
    last = pyhudi.open_table(path).timeline[-1]
    assert (last.action, last.state) == ("replacecommit", "COMPLETED")


def test_create_json_and_describe_text(tmp_path, capsys):
    path = str(tmp_path / "t")
    assert main(["create", path, "--schema", "id:string,a:double", "--buckets", "2", "--family", "x=a", "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert (created["name"], created["type"], created["num_buckets"], created["column_families"]) == (
        "t", "MERGE_ON_READ", 2, {"x": "a"})
    assert main(["describe", path]) == 0
    out = capsys.readouterr().out
    assert "table t" in out and "t: .hoodie/hoodie.properties" in out
    lines = [[c.strip() for c in line.strip("│ ").split("│")] for line in out.splitlines() if line.startswith("│")]
    assert ["column_families", "x=a"] in lines and ["hoodie.bucket.index.num.buckets", "2"] in lines
    assert main(["create", path, "--schema", "id:string", "--family", "broken"]) == 2
    assert capsys.readouterr().err.startswith("error: --family 'broken': expected NAME=COLUMNS")


def test_alter_json_and_read_option_errors(tmp_path, capsys):
    path = _make_table(tmp_path, capsys)
    assert main(["alter", path, "--set", "hoodie.colFamily.geo=lat", "--column", "lat:double", "--json"]) == 0
    altered = json.loads(capsys.readouterr().out)
    assert altered["column_families"] == {"p": "price", "q": "qty,day", "geo": "lat"} and altered["instant"]
    for argv, message in [(["read", path, "--sort", "nope"], "--sort 'nope': unknown column 'nope'"),
                          (["read", path, "--limit", "-1"], "--limit -1: expected a number of rows >= 0"),
                          (["read", path, "--limit", "x"], "argument --limit: invalid int value: 'x'")]:
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and message in captured.err
    assert main(["show", path, "--columns", "id", "--sort", "id", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "│ a  │\n│ b  │\n└────┘" in out and "│ c  │" not in out  # two rows, sorted


def test_write_with_the_spark_engine(tmp_path, capsys, spark):
    path = _make_table(tmp_path, capsys)
    (tmp_path / "up.csv").write_text("id,qty\nb,40\n")
    assert main(["write", path, str(tmp_path / "up.csv"), "--engine", "spark", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows_per_family"] == {"q": 1}
    assert [r["qty"] for r in _read_json(capsys, path, "--sort", "id")] == [3, 40, None]
