"""The pyhudi command line: demo, create, describe, timeline."""

from __future__ import annotations

import json

from pyhudi.cli import main


def test_demo_writes_updates_deletes_and_reads(tmp_path, capsys):
    assert main(["demo", "--path", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "snapshot read: families joined on the record key" in out
    assert "dave" in out.split("snapshot read")[0]  # routed in the bucket table ...
    assert "dave" not in out.split("snapshot read")[1].split("file groups")[0]  # ... and deleted
    assert main(["timeline", str(tmp_path / "profiles"), "--json"]) == 0
    instants = json.loads(capsys.readouterr().out)
    assert [(i["action"], i["state"]) for i in instants] == [("deltacommit", "COMPLETED")] * 3


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
