"""``python -m bench``: the harness's interleaving and medians, and every scenario at CI size.

No timing is asserted (the machine is shared): only what was run, in which order, and the
shape of what was written, so the benchmarks cannot rot unnoticed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from bench.harness import Variant, compare, single

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))

EXPECTED = {
    "w": ["insert", "partial update: one family of 200 rows", "full read",
          "pruned read: 2 columns of the updated family", "cold start: fresh process, read 2 columns",
          "cold start: pyhudi against pyarrow's own cold reads"],
    "rfc80": ["insert: 5 families / no families", "partial update vs full-row upsert, 200 updated rows",
              "partial update vs full-row upsert, 2000 updated rows", "pruned read (2 columns) / full read",
              "sort-merge / hash-merge read", "compaction: one family / all families"],
    "scaling": ["insert: 10000 rows / 1000 rows", "full read: 10000 rows / 1000 rows",
                "streaming scan peak memory: 10000 rows / 1000 rows",
                "streaming scan peak memory: 30000 rows / 10000 rows"],
    "spark": ["Spark write: pyhudi / Spark's df.write.parquet",
              "Spark read: pyhudi / Spark's own Parquet scan (noop sink)",
              "Spark read of the same table: pyhudi.spark.read (log files merged in the JVM) / "
              "Spark's own Parquet scan (noop sink)",
              "Spark read, native path: pyhudi.spark.read / spark.read.parquet (no families, noop sink)",
              "Spark read, native path: one family of 5 (21 columns) / spark.read.parquet of them",
              *(f"Spark read, 5 families, {layout}: pyhudi.spark.read / spark.read.parquet (noop sink)" for layout in (
                  "per-family base files (hoodie.pyhudi.insert.full.row=false)",
                  "full-row base files (the default bulk insert)")),
              "Spark read, 5 families, full-row base files + one family updated (10% of rows): "
              "pyhudi.spark.read (JVM merge) / spark.read.parquet (noop sink)"],
    "peers": ["one-family table, full read: pyhudi / hudi-rs"],
    "clustering": ["clustering rewrite: pyhudi (linear) / pyarrow read + sort + write",
                   "point filters on a, b after clustering: z-order / hilbert / linear",
                   "full scan: after clustering (z-order) / before"],
    "pruned": ["pruned read, warm: 2 columns, with logs", "pruned read, warm: 2 columns, with logs, default layout",
               "pruned read, warm: 2 columns, no logs",
               "pruned read, cold: the read step of a fresh process"],
    "commit": ["commit fixed cost of a 1000-row upsert: young table / 5 ms target",
               "commit fixed cost: after 30 instants / young table"],
    "partitions": ["partitioned upsert: 20 rows over 10 partitions, pyhudi / pq.write_table per partition",
                   "filtered read: 2 of 10 partitions, pyhudi / pq.read_table of those partitions' files"],
}


def test_compare_interleaves_variants_and_takes_medians():
    calls: list[str] = []

    def variant(name: str) -> Variant:
        def setup(round_: int) -> str:
            calls.append(f"setup {name}{round_}")
            return f"{name}{round_}"

        return Variant(name, setup=setup, run=lambda arg: (calls.append(f"run {arg}"), {"seen": arg})[1],
                       cleanup=lambda arg: calls.append(f"cleanup {arg}"))

    clock = iter(range(100))
    result = compare("c", [variant("a"), variant("b")], 3, target="<= 1", cpu_clock=lambda: float(next(clock)))
    runs = [c for c in calls if c.startswith("run")]
    assert runs == ["run a0", "run b0", "run b1", "run a1", "run a2", "run b2"]
    assert calls[:3] == ["setup a0", "run a0", "cleanup a0"]
    # the fake CPU clock advances by 1 per reading: every run costs 1 CPU second
    assert result.variants["a"]["cpu"] == [1.0, 1.0, 1.0] and result.variants["b"]["median_cpu"] == 1.0
    assert result.variants["a"]["metrics"] == {"seen": "a2"} and result.variants["b"]["metrics"] == {"seen": "b2"}
    assert len(result.variants["a"]["wall"]) == 3
    doc = result.to_json()
    assert doc["baseline"] == "b" and doc["target"] == "<= 1" and set(doc["ratio"]) == {"wall", "cpu"}
    assert doc["ratio"]["cpu"] == 1.0


def test_single_takes_medians_of_values_measured_elsewhere():
    result = single("m", {"x": {"wall": [3.0, 1.0, 2.0], "cpu": [1.0, 1.0, 4.0]}, "y": {"wall": [1.0], "cpu": [2.0]}})
    assert result.variants["x"]["median_wall"] == 2.0 and result.variants["x"]["median_cpu"] == 1.0
    assert result.ratio == {"wall": 2.0, "cpu": 0.5}


def test_unknown_scenario_is_refused_with_the_choices():
    done = subprocess.run([sys.executable, "-m", "bench", "nosuch"], capture_output=True, text=True, cwd=ROOT,
                          env=ENV)
    assert done.returncode == 2
    choices = "'w', 'rfc80', 'scaling', 'spark', 'peers', 'clustering', 'pruned', 'cold', 'commit', 'partitions', 'all'"
    assert f"invalid choice: 'nosuch' (choose from {choices})" in done.stderr


@pytest.mark.slow
@pytest.mark.spark
def test_all_scenarios_run_at_ci_size(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bench", "all", "--tiny", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, env=ENV,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    files = sorted(p.name for p in tmp_path.iterdir())
    stems = {name.rsplit(".", 1)[0] for name in files}
    assert len(stems) == 1 and next(iter(stems)).startswith("all-")
    report = json.loads((tmp_path / next(n for n in files if n.endswith(".json"))).read_text())
    assert report["command"] == f"all --tiny --out {tmp_path}" and report["tiny"] is True
    assert list(report["scenarios"]) == list(EXPECTED)
    for name, scenario in report["scenarios"].items():
        assert scenario["skipped"] is None, name
        assert [c["name"] for c in scenario["comparisons"]] == EXPECTED[name]
        for comparison in scenario["comparisons"]:
            variants = comparison["variants"]
            assert len(variants) >= 2 and comparison["baseline"] == list(variants)[-1]
            assert comparison["ratio"] and all(isinstance(v, float) for v in comparison["ratio"].values())
            for variant in variants.values():
                assert variant["wall"] and all(w > 0 for w in variant["wall"])
                assert variant["median_wall"] == sorted(variant["wall"])[len(variant["wall"]) // 2]
                assert "median_cpu" in variant and isinstance(variant["cpu"], list)
    comparisons = {c["name"]: c for c in report["scenarios"]["w"]["comparisons"]}
    cold = comparisons["cold start: fresh process, read 2 columns"]["variants"]["pyhudi: import + open + read 2 columns"]
    assert cold["metrics"]["rows"] == 2000 and cold["metrics"]["loaded"] == "-"  # (no pandas, rich, pyarrow.compute...)
    update = report["scenarios"]["w"]["comparisons"][1]["variants"]
    assert all(v["metrics"]["bytes_written"] > 0 for v in update.values())
    if importlib.util.find_spec("matplotlib") is not None:
        assert any(n.endswith(".png") for n in files) and (tmp_path / files[-1]).stat().st_size > 10_000
    else:
        assert files == [f"{next(iter(stems))}.json"]
        assert "plot skipped: matplotlib is not installed (pip install '.[bench]' installs it)" in done.stdout
