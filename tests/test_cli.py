"""The pyhudi command line: demo, create, describe, timeline."""

from __future__ import annotations

import json

from pyhudi.cli import main


def test_demo_writes_updates_deletes_and_reads(tmp_path, capsys):
    assert main(["demo", "--path", str(tmp_path), "--no-spark"]) == 0
    out = capsys.readouterr().out
    assert "snapshot read: families joined on the record key" in out
    assert "dave" in out.split("snapshot read")[0]  # routed in the bucket table ...
    assert "dave" not in out.split("snapshot read")[1].split("file groups")[0]  # ... and deleted
    assert main(["timeline", str(tmp_path / "profiles"), "--json"]) == 0
    instants = json.loads(capsys.readouterr().out)
    assert [(i["action"], i["state"]) for i in instants] == [("deltacommit", "COMPLETED")] * 3


def test_demo_spark_part_reads_filters_and_writes_one_family(tmp_path, capsys, spark):
    from rich.console import Console

    import pyhudi
    from pyhudi.spark.demo import demo_spark

    assert main(["demo", "--path", str(tmp_path), "--no-spark"]) == 0
    capsys.readouterr()
    path = str(tmp_path / "profiles")
    demo_spark(Console(width=200), path, spark)
    out = capsys.readouterr().out
    busy = out.split("clicks > 4")[1].split("5.")[0]
    assert [name for name in ("alice", "bob", "carol", "dave", "erin", "frank") if name in busy] == [
        "alice", "bob", "erin", "frank"]  # carol has 4 clicks, dave is deleted
    rows = {r["user_id"]: r for r in pyhudi.open_table(path).read().to_pylist()}
    assert sorted(rows) == ["alice", "bob", "carol", "erin", "frank", "grace"]
    assert (rows["carol"]["orders"], rows["carol"]["spend"], rows["carol"]["clicks"]) == (7, 99.5, 4)
    assert (rows["grace"]["orders"], rows["grace"]["clicks"], rows["grace"]["country"]) == (1, None, None)
    t = pyhudi.open_table(path)
    assert [i.action for i in t.timeline].count("deltacommit") == 4
    last = t.file_groups()
    spark_files = [lf.name.name for g in last for lf in g.log_files if lf.name.name.split("_")[1] == t.timeline[-1].requested_time]
    assert spark_files and all("_orders.log." in f for f in spark_files)


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
    assert "bad column spec 'id:str'" in capsys.readouterr().out
    assert main(["describe", str(tmp_path / "none")]) == 2
    assert "no Hudi table" in capsys.readouterr().out
