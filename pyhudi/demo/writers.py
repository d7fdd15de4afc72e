"""The demo's writer processes: three streams ingesting their own families into one table at once.

Each writer is a separate Python process (``python -m pyhudi.demo.writers '<json>'``), as three
streaming jobs would be: it opens the table, says it is ready, waits for the start signal (so the
three really overlap), then commits its inbox's micro-batches one by one — upserts of its
families, and for the profile stream deletes (account erasures) — with the table's default
options: a bucketed merge-on-read table uses non-blocking concurrency control, so no commit waits
for or fails because of another writer. It prints one JSON line per commit (batch file, instant,
completion time, rows, milliseconds), which the pipeline reads to build the model and the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyhudi.errors import HudiError

READY_TIMEOUT_S = 120.0
RUN_TIMEOUT_S = 600.0


class DemoWriterError(HudiError):
    """A demo writer process failed (its stderr is in the message)."""


@dataclass
class WriterRun:
    """What one writer process did: its commits (one dict per batch) and its wall time."""

    stream: str
    commits: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [c for c in self.commits if "error" in c]


def _serve(args: dict[str, Any]) -> int:
    """The writer process's body: wait for the signal, then ingest every batch of the inbox."""
    import pyarrow.parquet as pq

    import pyhudi
    from pyhudi.demo.data import inbox_batches

    table = pyhudi.open_table(args["path"])
    table.active_timeline()  # imports and the first listing happen before the start signal
    Path(f"{args['go_file']}.ready.{os.getpid()}").touch()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not os.path.exists(args["go_file"]):
        if time.monotonic() > deadline:
            raise SystemExit("the start signal never came")
        time.sleep(0.005)
    began = time.perf_counter()
    for path in inbox_batches(Path(args["inbox"])):
        data = pq.read_table(path)
        started = time.perf_counter()
        line: dict[str, Any] = {"batch": str(path), "rows": data.num_rows}
        try:
            if path.name.endswith(".zdelete.parquet"):
                table.delete(data)
                line["kind"] = "delete"
            else:
                table.upsert(data)
                line["kind"] = "upsert"
            result = table.last_write
            line.update(instant=result.instant, completion_time=result.completion_time)
        except HudiError as exc:
            line.update(error=str(exc), type=type(exc).__name__)
        line["ms"] = round((time.perf_counter() - started) * 1000, 1)
        print(json.dumps(line), flush=True)
    print(json.dumps({"finished_s": round(time.perf_counter() - began, 3)}), flush=True)
    return 0


def run_writers(table_path: str, inbox: Path, streams: list[str], workdir: Path) -> list[WriterRun]:
    """Start one process per stream, release them together, and collect what each committed."""
    go = workdir / "go"
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # this checkout first: the writers run the same code
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    procs = []
    for stream in streams:
        args = {"path": table_path, "inbox": str(inbox / stream), "go_file": str(go)}
        procs.append(subprocess.Popen([sys.executable, "-m", "pyhudi.demo.writers", json.dumps(args)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env))
    try:
        _wait_ready(workdir, procs)
        started = time.perf_counter()
        go.write_text("go")
        runs = []
        for stream, proc in zip(streams, procs):
            out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
            if proc.returncode != 0:
                raise DemoWriterError(
                    f"writer {stream!r} exited with {proc.returncode}: {err.decode().strip()[-2000:]}")
            lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
            seconds = next((x["finished_s"] for x in lines if "finished_s" in x), time.perf_counter() - started)
            runs.append(WriterRun(stream, [x for x in lines if "batch" in x], seconds))
        return runs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _wait_ready(workdir: Path, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while len(list(workdir.glob("go.ready.*"))) < len(procs):
        for proc in procs:
            if proc.poll() is not None:
                raise DemoWriterError(f"a writer exited before starting: {proc.stderr.read().decode().strip()[-2000:]}")
        if time.monotonic() > deadline:
            raise DemoWriterError(f"the writers were not ready after {READY_TIMEOUT_S:.0f} s")
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(_serve(json.loads(sys.argv[1])))
