"""Review of the cold-start laziness of config areas and the instant-time generator.

``pyhudi.config`` no longer imports every area at import; ``lookup`` and ``pyhudi.config.REGISTRY``
load them all first. A process that opened a table for reading has loaded only a few areas: a
write in that process must still check every option it is given against the declared keys of
every area (a bad value fails before anything is written), and code that walks the registry
must see every key. The Timeline builds its generator at the first write: threads that reach
it at once must still get distinct times.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading

import pyarrow as pa

import pyhudi
from pyhudi.config.keys import REGISTRY, load_areas
from pyhudi.storage.fs import Storage
from pyhudi.timeline.timeline import Timeline

ROOT = pathlib.Path(__file__).resolve().parents[1]
BAD_SERVICE_OPTIONS = {  # one key of each table-service area, loaded by no read
    "hoodie.compact.inline.max.delta.commits": "many",
    "hoodie.cleaner.commits.retained": "x",
    "hoodie.keep.min.commits": "1.5",
    "hoodie.clustering.plan.strategy.max.num.groups": "some",
}

_PROBE = """
import json, os, sys
import pyarrow as pa
import pyhudi
out = {}
table = pyhudi.open_table(sys.argv[1])
out["rows"] = table.read().num_rows
out["areas_after_read"] = sorted(m for m in sys.modules if m.startswith("pyhudi.config."))
timeline = os.path.join(sys.argv[1], ".hoodie", "timeline")
before = sorted(os.listdir(timeline))
out["errors"] = {}
for key, value in json.loads(sys.argv[2]).items():
    try:
        table.upsert(pa.table({"id": [1], "v": [9.0]}), options={key: value})
        out["errors"][key] = None
    except pyhudi.errors.ConfigError as exc:
        out["errors"][key] = str(exc)
out["unchanged"] = sorted(os.listdir(timeline)) == before
from pyhudi.spark.options import lowered
import pyhudi.config
out["registry"] = sorted(pyhudi.config.REGISTRY)
out["canonical"] = lowered({k.lower(): "1" for k in out["registry"] if k.startswith("hoodie.")})
print(json.dumps(out))
"""


def _probe(path: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE, path, json.dumps(BAD_SERVICE_OPTIONS)], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_reading_process_checks_every_area_s_options_at_its_first_write(tmp_path):
    """A fresh process opens and reads a table (no service area loaded), then upserts with a bad
    value of a compaction, clean, archive and clustering key: each is refused, naming the key,
    with the timeline unchanged; the registry and Spark's canonical spellings hold every key."""
    path = str(tmp_path / "t")
    table = pyhudi.create_table(path, pa.schema([("id", pa.int64()), ("v", pa.float64())]), "id", num_buckets=1)
    table.upsert(pa.table({"id": [1, 2], "v": [1.0, 2.0]}))
    out = _probe(path)
    assert out["rows"] == 2
    loaded = set(out["areas_after_read"])
    assert not loaded & {"pyhudi.config.compaction", "pyhudi.config.clean", "pyhudi.config.archive",
                         "pyhudi.config.clustering"}
    for key, value in BAD_SERVICE_OPTIONS.items():
        assert out["errors"][key] is not None and out["errors"][key].startswith(f"invalid value {value!r} for {key}")
    assert out["unchanged"]
    load_areas()
    assert out["registry"] == sorted(REGISTRY)
    assert out["canonical"] == {k: "1" for k in REGISTRY if k.startswith("hoodie.")}


def test_threads_that_build_the_lazy_generator_at_once_get_distinct_times(tmp_path):
    """Eight threads take their first instant time from one fresh Timeline at once: whichever
    generator each one builds, the times are distinct (the last issued time is per process)."""
    storage = Storage(str(tmp_path))
    storage.write(".hoodie/timeline/.keep", b"")
    timeline = Timeline(storage)
    barrier = threading.Barrier(8)
    times: list[str] = []

    def take() -> None:
        barrier.wait()
        times.append(timeline.time_generator.next_time())

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(times) == 8 and len(set(times)) == 8
    assert all(len(t) == 17 and t.isdigit() for t in times)
    assert timeline.time_generator.next_time() > max(times)
