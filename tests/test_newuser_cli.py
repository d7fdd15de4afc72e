"""The command line as a first-time user meets it: misspelled commands and options, write and
read summaries, a family added without its column types, and what ``--help`` says."""

from __future__ import annotations

import re

import pyarrow as pa

import pyhudi
from cli_helpers import run


def _family_table(tmp_path, capsys) -> str:
    path = str(tmp_path / "t")
    run(capsys, "create", path, "--schema", "id:string,clicks:long,country:string", "--buckets", "2",
        "--family", "activity=clicks", "--family", "profile=country")
    (tmp_path / "rows.csv").write_text("id,clicks,country\na,1,FR\nb,2,US\n")
    (tmp_path / "clicks.csv").write_text("id,clicks\na,5\n")
    return path


def test_a_misspelled_command_or_choice_names_the_closest_one(capsys):
    err = run(capsys, "reed", "/nowhere", code=2).err
    assert err.startswith("error: pyhudi: argument COMMAND: invalid choice: 'reed' (choose from 'create', ")
    assert err.endswith("; did you mean 'read'? (see pyhudi --help)\n")
    err = run(capsys, "stats", "/nowhere", "sizes", code=2).err
    assert err == ("error: pyhudi stats: argument kind: invalid choice: 'sizes' (choose from 'all', 'filesizes', "
                   "'wa', 'logs'); did you mean 'filesizes'? (see pyhudi stats --help)\n")
    err = run(capsys, "frobnicate", code=2).err  # nothing close: no guess
    assert "did you mean" not in err and err.endswith("'docs') (see pyhudi --help)\n")


def test_an_unknown_option_is_reported_by_its_command_with_the_closest_option(tmp_path, capsys):
    path = _family_table(tmp_path, capsys)
    assert run(capsys, "read", path, "--colums", "id", code=2).err == (
        "error: pyhudi read: unrecognized arguments: --colums id; did you mean --columns? (see pyhudi read --help)\n")
    assert run(capsys, "compact", path, "--familes=activity", code=2).err == (
        "error: pyhudi compact: unrecognized arguments: --familes=activity; did you mean --families? "
        "(see pyhudi compact --help)\n")
    assert run(capsys, "timeline", path, "--zzz", code=2).err == (
        "error: pyhudi timeline: unrecognized arguments: --zzz (see pyhudi timeline --help)\n")


def test_create_takes_the_table_type_in_any_case(tmp_path, capsys):
    path = str(tmp_path / "cow")
    run(capsys, "create", path, "--schema", "id:string,v:long", "--type", "copy_on_write")
    assert pyhudi.open_table(path).config.table_type == "COPY_ON_WRITE"


def test_write_summary_counts_rows_and_files_and_names_full_rows(tmp_path, capsys):
    path = _family_table(tmp_path, capsys)
    out = run(capsys, "write", path, str(tmp_path / "rows.csv")).out.splitlines()
    assert re.fullmatch(r"upsert of 2 rows committed at instant \d{17} \(2 files, [\d,]+ bytes, \d+ ms\)", out[0])
    assert out[1:] == ["  full rows (every family): 2 rows"]  # (not "family : 2 rows")
    out = run(capsys, "write", path, str(tmp_path / "clicks.csv")).out.splitlines()
    assert re.fullmatch(r"upsert of 1 row committed at instant \d{17} \(1 file, [\d,]+ bytes, \d+ ms\)", out[0])
    assert out[1:] == ["  family activity: 1 row"]
    plain = str(tmp_path / "plain")
    run(capsys, "create", plain, "--schema", "id:string,clicks:long,country:string", "--buckets", "1")
    out = run(capsys, "write", plain, str(tmp_path / "clicks.csv")).out.splitlines()
    assert len(out) == 1 and out[0].startswith("upsert of 1 row committed")  # a plain table: no family line


def test_an_empty_read_still_shows_the_columns_and_a_long_one_says_how_to_see_more(tmp_path, capsys):
    path = _family_table(tmp_path, capsys)
    out = run(capsys, "read", path).out.splitlines()
    assert out[0].strip() == "t: 0 rows" and [c.strip() for c in out[2].strip("┃").split("┃")] == [
        "id", "clicks", "country"]
    run(capsys, "write", path, str(tmp_path / "rows.csv"))
    out = run(capsys, "read", path, "--sort", "id", "--limit", "1").out.splitlines()
    assert out[0].strip() == "t: 2 rows" and out[-1] == "(the first 1 row shown; --limit N shows more)"
    assert not run(capsys, "read", path, "--limit", "2").out.rstrip().endswith("shows more)")


def test_alter_adding_a_family_without_column_types_names_the_flags_to_add(tmp_path, capsys):
    path = _family_table(tmp_path, capsys)
    before = [str(i) for i in pyhudi.open_table(path).timeline]
    captured = run(capsys, "alter", path, "--set", "hoodie.colFamily.geo=lat,lon;ts", "--column", "lat:double",
                   code=2)
    assert captured.out == "" and captured.err == (
        "error: --set hoodie.colFamily.geo=lat,lon;ts: new columns 'lon', 'ts' need a type: add --column lon:TYPE "
        "--column ts:TYPE (TYPE one of string, int, long, float, double, boolean, date, timestamp, binary)\n")
    assert [str(i) for i in pyhudi.open_table(path).timeline] == before
    assert "hoodie.colFamily.geo" not in pyhudi.open_table(path).properties
    run(capsys, "alter", path, "--set", "hoodie.colFamily.geo=lat,lon", "--column", "lat:double", "--column",
        "lon:double")
    assert pyhudi.open_table(path).column_families["geo"].columns == ("lat", "lon")


def test_help_describes_every_command_and_its_arguments(capsys):
    out = run(capsys, "read", "--help").out
    assert "Read rows (snapshot, --as-of, --incremental, --read-optimized)." in out
    assert "the table's base path (the folder that holds .hoodie/" in " ".join(out.split())
    assert "print one JSON document to stdout instead of tables" in " ".join(out.split())
    out = " ".join(run(capsys, "create", "--help").out.split())
    for text in ("--record-key RECORD_KEY the record key column(s)", "--buckets N hash the record key",
                 "--ordering COLUMN the ordering column", "--family NAME=COLUMNS a column family"):
        assert text in out, text
    out = run(capsys, "rollback", "--help").out
    assert "--schedule" not in out and "--run" not in out and "instant" in out


def test_create_says_which_flag_a_missing_key_or_bucket_count_needs(tmp_path, capsys):
    path = str(tmp_path / "t")
    assert run(capsys, "create", path, "--schema", "user:string,x:long", code=2).err == (
        "error: --schema has no column 'id', the default record key: name the key column with --record-key COLUMN "
        "(columns: user, x)\n")
    assert run(capsys, "create", path, "--schema", "id:string,x:long", "--family", "f=x", code=2).err == (
        "error: --family needs --buckets N: column families need a MERGE_ON_READ table with a bucket index (RFC-80)\n")
    assert not (tmp_path / "t").exists()
    run(capsys, "create", path, "--schema", "user:string,x:long", "--record-key", "user")
    assert pyhudi.open_table(path).record_key_fields == ("user",)


def test_read_output_a_file_cannot_take_is_a_one_line_error(tmp_path, capsys):
    path = str(tmp_path / "t")
    run(capsys, "create", path, "--schema", "id:string,v:long", "--buckets", "1")
    t = pyhudi.open_table(path)
    t.upsert({"id": ["a"], "v": [1]})
    err = run(capsys, "read", path, "--output", str(tmp_path / "rows.txt"), code=2).err
    assert err == f"error: --output '{tmp_path / 'rows.txt'}': name the file *.parquet, *.csv or *.json (the suffix says the format)\n"
    err = run(capsys, "read", path, "--output", str(tmp_path / "no" / "rows.json"), code=2).err
    assert err == f"error: cannot write '{tmp_path / 'no' / 'rows.json'}': No such file or directory\n"
    err = run(capsys, "read", path, "--output", str(tmp_path / "no" / "rows.parquet"), code=2).err
    assert err.startswith(f"error: cannot write '{tmp_path / 'no' / 'rows.parquet'}': ") and err.count("\n") == 1
    nested = str(tmp_path / "n")
    pyhudi.create_table(nested, pa.schema([pa.field("id", pa.string(), False), ("tags", pa.list_(pa.string()))]),
                        "id").upsert({"id": ["a"], "tags": [["x", "y"]]})
    err = run(capsys, "read", nested, "--output", str(tmp_path / "n.csv"), code=2).err
    assert err == (f"error: --output '{tmp_path / 'n.csv'}': column 'tags' has type list<element: string>, which CSV "
                   "cannot hold; write a .parquet or .json file (or leave it out with --columns)\n")
    run(capsys, "read", nested, "--output", str(tmp_path / "n.csv"), "--columns", "id")
    assert (tmp_path / "n.csv").read_text() == '"id"\n"a"\n'


def test_a_delete_counts_deletes_per_family(tmp_path, capsys):
    path = _family_table(tmp_path, capsys)
    run(capsys, "write", path, str(tmp_path / "rows.csv"))
    out = run(capsys, "write", path, str(tmp_path / "clicks.csv"), "--operation", "delete").out.splitlines()
    assert out[0].startswith("delete of 1 row committed at instant ")
    assert out[1:] == ["  family activity: 1 delete", "  family profile: 1 delete"]
    assert pyhudi.open_table(path).read(columns=["id"]).to_pylist() == [{"id": "b"}]


def test_a_spark_engine_write_keeps_sparks_own_log_off_the_terminal(tmp_path):
    """``--engine spark`` without a running session starts a local one whose JVM output (log4j's
    banner, hostname and native-library warnings) goes to a log file, as the demo's does."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    path = str(tmp_path / "t")
    pyhudi.create_table(path, pa.schema([pa.field("id", pa.string(), False), ("v", pa.int64())]), "id", num_buckets=2)
    (tmp_path / "in.csv").write_text("id,v\na,1\nb,2\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pyhudi", "write", path, str(tmp_path / "in.csv"), "--engine", "spark"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0 and done.stderr == ""
    assert re.fullmatch(r"upsert of 2 rows committed at instant \d{17} \(2 files, [\d,]+ bytes, \d+ ms\)\n", done.stdout)
    assert pyhudi.open_table(path).read().sort_by("id").to_pylist() == [{"id": "a", "v": 1}, {"id": "b", "v": 2}]
