"""Service processes SIGKILLed at random moments, and one writer too, beside writer processes on a
family table (default options).

Three writers upsert their own families; a table-service process (compactions per family, full
and default, cleans, archivals) is started, killed with SIGKILL after a random while and started
again until the writers are done; one writer is killed once. Whatever was cut short, the table
reads as the model of the committed writes (the killed writer's last write counts only if it
completed), and then the next write and one run of each service leave nothing pending and the
rows right.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pyhudi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hunt_helpers import PROCS, PY, WRITER  # noqa: E402
from test_concurrency import FAMILY_COLUMNS, SCHEMA, family_table, model, plans, read_rows  # noqa: E402
from write_helpers import make_rows  # noqa: E402

ACTIONS = ["compact_family", "compact_full", "compact", "clean", "archive"]


def _lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines() if line.startswith("{")]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_services_and_a_writer_killed_at_random_moments(tmp_path, seed):
    rng = random.Random(seed)
    t = family_table(tmp_path)
    writer_plans = plans([FAMILY_COLUMNS["fa"], FAMILY_COLUMNS["fc"], FAMILY_COLUMNS["fd"]], 30, seed=seed)
    go, stop = tmp_path / "go", tmp_path / "stop"
    go.write_text("go")
    writers = [subprocess.Popen([PY, WRITER, json.dumps({"path": t.path, "go_file": str(go), "commits": plan})],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for plan in writer_plans]
    victim, kill_after = rng.randrange(3), time.time() + rng.uniform(1.0, 3.0)
    killed, service_steps, runs, service_errs = False, [], 0, []
    deadline = time.time() + 240
    while any(w.poll() is None for w in writers):
        assert time.time() < deadline, "the writers never finished"
        service = subprocess.Popen([PY, PROCS, json.dumps({"mode": "services", "path": t.path, "go_file": str(go),
                                                           "stop_file": str(stop), "seed": seed * 100 + runs,
                                                           "actions": ACTIONS})],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        runs += 1
        time.sleep(rng.uniform(0.3, 1.2))
        service.send_signal(signal.SIGKILL)
        out, err = service.communicate(timeout=60)
        service_steps += _lines(out)
        service_errs.append(err.decode())
        if not killed and time.time() > kill_after and writers[victim].poll() is None:
            writers[victim].send_signal(signal.SIGKILL)
            killed = True
    results = []
    for i, w in enumerate(writers):
        out, err = w.communicate(timeout=60)
        if not (killed and i == victim):
            assert w.returncode == 0, err.decode()[-3000:]
        results.append(_lines(out))
    assert runs >= 2
    assert [s for s in service_steps if "error" in s] == [], "".join(service_errs)[-6000:]
    assert [r for rs in results for r in rs if "error" in r] == []

    t = pyhudi.open_table(t.path)
    known = {r["instant"] for rs in results for r in rs}
    extra = [i for i in [*t.archived_timeline(), *t.timeline]
             if str(i.action) == "deltacommit" and i.is_completed and i.requested_time not in known]
    assert len(extra) <= (1 if killed else 0)
    if extra:  # the killed writer's write completed before it could say so
        tag = writer_plans[victim][len(results[victim])]["tag"]
        results[victim].append({"tag": tag, "instant": extra[0].requested_time,
                                "completion_time": extra[0].completion_time})
    assert read_rows(t) == model(writer_plans, results)

    t.upsert(make_rows(SCHEMA, ["id", "c"], [1, 2], 9999))
    writer_plans.append([{"ids": [1, 2], "columns": ["id", "c"], "tag": 9999}])
    results.append([{"tag": 9999, "instant": t.last_write.instant, "completion_time": t.last_write.completion_time}])
    t.compact()
    t.compact(full=True)
    t.clean()
    t.archive()
    t = pyhudi.open_table(t.path)
    assert [i for i in t.timeline if i.is_pending] == []
    assert read_rows(t) == model(writer_plans, results)
