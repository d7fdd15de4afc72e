"""Cold start (issue 15): ``import pyhudi`` and a first read load neither pandas nor pyspark.

pyarrow imports pandas at its first NumPy interop when pandas is installed (~0.15 s), so the
read path stays free of it only through :mod:`pyhudi.pandas_gate`; these tests run each scenario
in a fresh interpreter (the test process has long imported both) and check what it loaded, the
rows it read, and that pandas interop still works afterwards.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import pyhudi

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyspark", "rich", "hypothesis", "pyarrow.dataset", "pyarrow.acero", "pyarrow.compute",
         "pyhudi.timeline.metadata", "pyhudi.timeline.archived", "pyhudi.logformat.writer",
         # a local read needs neither pyarrow's file systems nor pyarrow.parquet (which imports
         # them, with pathlib and ssl)
         "pyarrow.fs", "pyarrow.parquet", "pathlib", "ssl", "urllib.parse",
         # commits pyhudi wrote carry a JSON copy of their record (no Avro decoder); reads start
         # their helper threads without concurrent.futures
         "fastavro", "concurrent.futures", "logging")

_PROBE = """
import json, sys
HEAVY = {heavy!r}
loaded = lambda: sorted(m for m in HEAVY if m in sys.modules)
out = {{}}
import pyhudi
out["import"] = loaded()
table = pyhudi.open_table(sys.argv[1])
out["open"] = loaded()
rows = table.read(columns=["c0", "c5"])
out["read"] = loaded()
out["rows"] = rows.num_rows
out["sums"] = [round(sum(rows.column(n).to_pylist()), 6) for n in ("c0", "c5")]
{after}
print(json.dumps(out))
"""


def _run(table_path: pathlib.Path, after: str = "", env: dict[str, str] | None = None) -> dict:
    code = _PROBE.format(heavy=HEAVY, after=after)
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    done = subprocess.run([sys.executable, "-c", code, str(table_path)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def family_table(tmp_path) -> tuple[pathlib.Path, list[float]]:
    """1,000 rows x (id + 10 float64) in 5 families of 2, 2 buckets, then an update of family f0
    for every other row (so the read merges log files); returns the path and the expected sums of
    ``c0`` and ``c5``."""
    return _family_table(tmp_path)


def _family_table(tmp_path, update_options: dict | None = None) -> tuple[pathlib.Path, list[float]]:
    path = tmp_path / "w"
    n = 1_000
    ids = np.arange(n, dtype=np.int64)
    data = pa.table({"id": ids, **{f"c{c}": (ids * (c + 1)).astype(np.float64) / 4 for c in range(10)}})
    spec = {f"f{f}": f"c{2 * f},c{2 * f + 1}" for f in range(5)}
    table = pyhudi.create_table(str(path), data.schema, "id", num_buckets=2, column_families=spec)
    table.insert(data)
    update = data.select(["id", "c0", "c1"]).take(pa.array(ids[::2]))
    table.upsert(update.set_column(1, "c0", pa.array(np.full(n // 2, 1.5))), options=update_options)
    c0 = sum(1.5 if i % 2 == 0 else i / 4 for i in range(n))
    c5 = sum(i * 6 / 4 for i in range(n))
    return path, [round(c0, 6), round(c5, 6)]


def test_import_open_and_read_load_neither_pandas_nor_pyspark(family_table):
    path, sums = family_table
    out = _run(path)
    assert out["import"] == []
    assert out["open"] == []
    # the files are read without pyarrow.compute, pyarrow.parquet or pyarrow.fs, the commit
    # metadata decoded without the timeline's models (issue 15)
    assert out["read"] == []
    assert out["rows"] == 1_000
    assert out["sums"] == sums


def test_pandas_interop_works_after_a_gated_read(family_table):
    """After the gate kept pandas out of a read, the caller's pandas works as usual: the
    caller's ``to_pandas``, ``pa.table(DataFrame)`` and a write of a DataFrame."""
    path, sums = family_table
    after = """
frame = table.read(columns=["id", "c5"]).sort_by("id").slice(0, 3).to_pandas()
out["frame"] = [type(frame).__name__, frame.columns.tolist(), frame["c5"].tolist()]
import pandas as pd
import pyarrow as pa
out["from_frame"] = pa.table(pd.DataFrame({"a": [1, 2]})).column("a").to_pylist()
update = pd.DataFrame({"id": [1], "c0": [9.0], "c1": [8.0]})
table.upsert(update)
out["after_write"] = table.read(columns=["c0"], filters=[("id", "=", 1)]).column("c0").to_pylist()
"""
    out = _run(path, after)
    assert out["read"] == []
    assert out["frame"] == ["DataFrame", ["id", "c5"], [0.0, 1.5, 3.0]]
    assert out["from_frame"] == [1, 2]
    assert out["after_write"] == [9.0]


def test_explicit_pandas_import_before_pyhudi_is_untouched(family_table):
    """With pandas already loaded the gate stays out of ``sys.meta_path``."""
    path, sums = family_table
    code = ("import sys, pandas, pyhudi\n"
            "from pyhudi.pandas_gate import PandasGate\n"
            "print(any(isinstance(f, PandasGate) for f in sys.meta_path), "
            "pyhudi.open_table(sys.argv[1]).read(columns=['c5']).num_rows)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=True)
    assert done.stdout.split() == ["False", "1000"]


def test_opt_out_lets_pyarrow_import_pandas(tmp_path):
    """Written without record positions, the update's positions are learnt from the keys: there
    pyarrow would import pandas on pyhudi's behalf (the read of the default table needs no key)."""
    path, sums = _family_table(tmp_path, {"hoodie.write.record.positions": "false"})
    out = _run(path, env={"PYHUDI_ALLOW_PANDAS_IMPORT": "1"})
    assert out["import"] == []
    assert "pandas" in out["read"]
    assert out["sums"] == sums


def test_pyhudi_code_importing_pandas_by_name_gets_it(family_table):
    """The gate refuses only pyarrow's implicit imports made on pyhudi's behalf: an ``import
    pandas`` statement in a pyhudi module (here a function compiled as one) passes."""
    path, _ = family_table
    after = """
scope = {"__name__": "pyhudi.probe"}
exec("def load():\\n    import pandas\\n    return pandas.__name__\\n", scope)
out["by_name"] = scope["load"]()
"""
    out = _run(path, after)
    assert out["read"] == []
    assert out["by_name"] == "pandas"


def test_lazily_loaded_modules_load_when_a_read_needs_them(family_table):
    """A filtered read needs pyarrow.compute, and a write the timeline's models and log writer:
    each loads on first use, in the same process as a cold read, with the right results."""
    path, _ = family_table
    after = """
import sys
filtered = table.read(columns=["id", "c5"], filters=[("c5", ">=", 1497.0)])
out["filtered"] = sorted(filtered.column("id").to_pylist())
out["after_filter"] = sorted(m for m in HEAVY if m in sys.modules)
import pyarrow as pa
table.upsert(pa.table({"id": pa.array([3], pa.int64()), "c0": [7.5], "c1": [0.5]}))
out["written"] = table.read(columns=["c0"], filters=[("id", "=", 3)]).column("c0").to_pylist()
out["after_write"] = sorted(m for m in HEAVY if m in sys.modules)
"""
    out = _run(path, after)
    assert out["read"] == []
    assert out["filtered"] == [998, 999]
    # a filter runs compute kernels on a mask, not an expression through Acero (~20 ms of imports)
    assert "pyarrow.compute" in out["after_filter"]
    assert not {"pyarrow.acero", "pyarrow.dataset"} & set(out["after_filter"])
    assert out["written"] == [7.5]
    assert {"pyhudi.timeline.metadata", "pyhudi.logformat.writer", "pyarrow.parquet"} <= set(out["after_write"])


_CLI_LIGHT = ("pandas", "pyspark", "pyarrow.fs", "pyarrow.parquet", "ssl", "pyhudi.timeline.metadata")
"""What ``pyhudi read`` leaves out (its ``--sort`` loads ``pyarrow.compute``, which loads ``urllib.parse``)."""


def test_cli_read_builds_only_its_command(family_table):
    """``pyhudi read`` imports the read command's module, not every command's (services,
    drawing, demo, inspection), nor pyarrow's file systems, and
    prints the rows."""
    path, _ = family_table
    code = ("import sys, json\nfrom pyhudi.cli import main\n"
            "status = main(['read', sys.argv[1], '--columns', 'id,c5', '--sort', 'id', '--limit', '2', '--json'])\n"
            "mods = sorted(m for m in sys.modules if m.startswith('pyhudi.cli.'))\n"
            f"heavy = sorted(m for m in {_CLI_LIGHT!r} if m in sys.modules)\n"
            "print(json.dumps({'status': status, 'mods': mods, 'heavy': heavy}))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=True)
    *printed, last = done.stdout.strip().splitlines()
    assert json.loads("\n".join(printed)) == [{"id": 0, "c5": 0.0}, {"id": 1, "c5": 1.5}]
    assert json.loads(last) == {"status": 0, "mods": ["pyhudi.cli.io", "pyhudi.cli.output", "pyhudi.cli.tables"],
                                "heavy": []}


def test_bench_cold_reports_what_pyhudi_adds_over_the_floor(tmp_path):
    """``python -m bench cold`` prints the cold start and, as its own comparison, pyhudi's
    addition over ``import pyarrow`` as timed inside the same children."""
    done = subprocess.run([sys.executable, "-m", "bench", "cold", "--tiny", "--out", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(next(tmp_path.glob("cold-*.json")).read_text())
    cold, against, added = report["scenarios"]["cold"]["comparisons"]
    assert cold["name"] == "cold start: fresh process, read 2 columns"
    assert against["name"] == "cold start: pyhudi against pyarrow's own cold reads"
    assert list(cold["variants"])[0] == "pyhudi as a script: import pyhudi; open; read 2 columns"
    assert list(against["variants"]) == ["pyhudi as a script: import pyhudi; open; read 2 columns",
                                         "pyhudi: import + open + read 2 columns",
                                         "pyhudi, per-family base files (bulk insert, full.row=false; + update)",
                                         "pyarrow: pq.ParquetFile(compacted copy).read(2 columns)",
                                         "pyarrow: pq.read_table(2 columns) of a compacted copy"]
    for name, variant in against["variants"].items():  # (the same runs as the first comparison's)
        assert variant["wall"] == cold["variants"][name]["wall"]
    split = cold["variants"]["pyhudi: import + open + read 2 columns"]["metrics"]
    assert split["rows"] == 2_000 and split["loaded"] == "-"
    assert added["name"] == "cold start: pyhudi's own cost, inside the child"
    own = added["variants"]["pyhudi over the floor: import + open + read"]
    assert [round(x, 4) for x in own["wall"]] == [split["added_s"]]  # (the split is shown rounded)
    assert [round(x, 4) for x in own["cpu"]] == [split["added_cpu_s"]]
    assert abs(split["added_s"] - (split["import_s"] + split["open_s"] + split["read_s"])) < 2e-4  # (rounding)
    assert list(added["variants"])[-1] == "floor inside the child: import pyarrow"
    assert list(cold["variants"])[-1] == "floor: import pyarrow" and "import pyarrow._parquet" in cold["variants"]
    assert "pyhudi over the floor: import + open + read" in done.stdout


def test_a_cold_read_compiles_no_dataclass(family_table):
    """``@dataclass`` compiles each class's methods with ``exec`` at import (~0.3 ms a class):
    the value classes a cold read imports are :mod:`pyhudi.value` classes instead. A new
    dataclass on the read path fails here — write it as a ``Value`` or ``Record``."""
    path, _ = family_table
    code = ("import dataclasses, json, sys\nbuilt = []\nprocess = dataclasses._process_class\n"
            "def record(cls, *args):\n    built.append(cls.__module__ + '.' + cls.__qualname__)\n"
            "    return process(cls, *args)\n"
            "dataclasses._process_class = record\nimport pyhudi\n"
            "rows = pyhudi.open_table(sys.argv[1]).read(columns=['c0', 'c5']).num_rows\n"
            "print(json.dumps({'rows': rows, 'built': built}))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["rows"] == 1_000
    assert out["built"] == []


_GC_PROBE = """
import gc, json, sys
{before}
import pyhudi
print(json.dumps({{"frozen": gc.get_freeze_count(), "enabled": gc.isenabled(), "rows": pyhudi.open_table(sys.argv[1]).read(columns=["c0"]).num_rows}}))
"""


def _gc_state(table_path: pathlib.Path, before: str = "", env: dict[str, str] | None = None) -> dict:
    done = subprocess.run([sys.executable, "-c", _GC_PROBE.format(before=before), str(table_path)],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), **(env or {})))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_freezes_the_objects_it_leaves_and_keeps_the_collector_on(family_table):
    """By default ``import pyhudi`` ends with ``gc.freeze()`` (its modules' objects are never
    walked again by a collection) and leaves the collector as it found it."""
    path, _ = family_table
    state = _gc_state(path)
    assert state["frozen"] > 10_000 and state["enabled"] is True and state["rows"] == 1_000


def test_import_leaves_a_disabled_collector_disabled(family_table):
    path, _ = family_table
    state = _gc_state(path, before="gc.disable()")
    assert state["frozen"] > 10_000 and state["enabled"] is False and state["rows"] == 1_000


def test_gc_freeze_opt_out_leaves_the_collector_alone(family_table):
    path, _ = family_table
    state = _gc_state(path, env={"PYHUDI_GC_FREEZE": "0"})
    assert state == {"frozen": 0, "enabled": True, "rows": 1_000}


def test_a_late_import_from_a_function_freezes_nothing(family_table):
    """A server or notebook importing pyhudi inside a function may hold state whose cycles must
    stay collectable: only a program's own imports (module bodies all the way down) freeze."""
    path, _ = family_table
    state = _gc_state(path, before="def load():\n    import pyhudi\nload()")
    assert state == {"frozen": 0, "enabled": True, "rows": 1_000}


def test_a_script_run_with_python_m_freezes_at_its_imports(family_table, tmp_path):
    path, _ = family_table
    package = tmp_path / "jobs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "read.py").write_text("import gc, sys\nimport pyhudi\n"
                                     "print(gc.get_freeze_count() > 10_000, "
                                     "pyhudi.open_table(sys.argv[1]).read(columns=['c0']).num_rows)\n")
    done = subprocess.run([sys.executable, "-m", "jobs.read", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)])))
    assert (done.returncode, done.stdout) == (0, "True 1000\n"), done.stderr
