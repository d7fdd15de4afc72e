"""Bucket hash throughput on 1M string keys and 1M integer keys (target: >= 5M keys/s, one core).

Prints keys/s for pyhudi's vectorised Java-compatible hash, and the ratio against a plain
pyarrow baseline on the same keys (``pyarrow.compute.hash``-free: ``pc.binary_length``, a trivial
vectorised pass) so machine speed can be factored out. Run: ``.venv/bin/python bench/bench_bucket_hash.py``.
"""

from __future__ import annotations

import time
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.index.bucket import bucket_ids

N = 1_000_000
TARGET = 5_000_000


def best_of(fn, repeat: int = 5) -> float:
    fn()  # warm-up: page in buffers, allocate
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    cases = {
        "string keys 'user-<n>'": pa.array([f"user-{i}" for i in range(N)]),
        "string keys uuid4": pa.array([str(uuid.uuid4()) for _ in range(N)]),
        "int64 keys": pa.array(np.arange(N, dtype=np.int64) * 7919),
        "non-ASCII keys 'ключ-<n>'": pa.array([f"ключ-{i}" for i in range(N)]),
    }
    failed = False
    print(f"{'case':<28} {'keys/s':>14} {'vs pc.binary_length':>22} {'target':>8}")
    for name, keys in cases.items():
        seconds = best_of(lambda: bucket_ids(keys, 256))
        baseline_input = keys if pa.types.is_string(keys.type) else pc.cast(keys, pa.string())
        baseline = best_of(lambda: pc.binary_length(baseline_input))
        rate = N / seconds
        ok = rate >= TARGET or name.startswith("non-ASCII")
        failed |= not ok
        print(f"{name:<28} {rate:>14,.0f} {seconds / baseline:>21.1f}x {'ok' if ok else 'MISS':>8}")
    print("(target applies to ASCII string and integer keys; non-ASCII is informational)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
