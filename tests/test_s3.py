"""Tables on an S3-compatible store: moto's S3 server on 127.0.0.1, started by these tests.

Real S3 evaluates ``If-None-Match: *`` atomically; moto checks the key and then stores the object
in two steps, so two racing puts could both pass its check. The fixture serialises moto's
PutObject handler (one lock around it) so the local server keeps S3's guarantee.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import pyhudi
from pyhudi.errors import AlreadyExistsError, ConfigError, LockError, StorageError
from pyhudi.storage import s3
from pyhudi.storage.fs import Storage
from pyhudi.timeline.lock import FileLock
from pyhudi.timeline.lock_provider import (
    IN_PROCESS_LOCK_PROVIDER,
    InProcessLock,
    create_lock,
    register_lock_provider,
    unregister_lock_provider,
)

BUCKET = "pyhudi-test"
SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("a", pa.float64()), ("b", pa.string()), ("c", pa.int64()),
                    ("ts", pa.int64())])
FAMILIES = {"fa": "a,b", "fc": "c,ts;ts"}
FID = "00000000-0000-0000-0000-000000000000-0"


@pytest.fixture(scope="module")
def endpoint():
    from moto.s3.responses import S3Response
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    original = S3Response.put_object
    guard = threading.Lock()

    @functools.wraps(original)
    def atomic_put(self, *args, **kwargs):  # check-and-store as one step, as S3 does
        with guard:
            return original(self, *args, **kwargs)

    S3Response.put_object = atomic_put
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        fs = pafs.S3FileSystem(endpoint_override=url, access_key="testing", secret_key="testing",
                               region="us-east-1", allow_bucket_creation=True)
        fs.create_dir(BUCKET)
        yield url
    finally:
        server.stop()
        S3Response.put_object = original


@pytest.fixture
def opts(endpoint):
    return {"hoodie.pyhudi.s3.endpoint": endpoint, "hoodie.pyhudi.s3.access.key": "testing",
            "hoodie.pyhudi.s3.secret.key": "testing", "hoodie.pyhudi.s3.region": "us-east-1"}


@pytest.fixture
def uri():
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/t"


def keys_under(endpoint: str, uri: str, prefix: str) -> list[str]:
    """Object keys under ``prefix`` of the table, relative to the table (listed with boto3)."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    root = uri.split("/", 3)[3]
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=f"{root}/{prefix}")
    return sorted(o["Key"][len(root) + 1:] for page in pages for o in page.get("Contents", []))


def rows(t, **kw):
    return t.read(**kw).sort_by("id").to_pylist()


def seeded(uri, opts):
    t = pyhudi.create_table(uri, SCHEMA, "id", num_buckets=1, column_families=FAMILIES, options=opts)
    i1 = t.upsert(pa.table({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"], "c": [10, 20, 30],
                            "ts": [1, 1, 1]}))
    i2 = t.upsert(pa.table({"id": [1, 4], "c": [11, 40], "ts": [2, 2]}))  # family fc only
    i3 = t.upsert(pa.table({"id": [2], "a": [2.5]}))  # a partial fa write (b missing)
    i4 = t.delete(pa.table({"id": [3]}))
    return t, [i1, i2, i3, i4]


EXPECTED = [
    {"id": 1, "a": 1.0, "b": "x", "c": 11, "ts": 2},
    {"id": 2, "a": 2.5, "b": "y", "c": 20, "ts": 1},
    {"id": 4, "a": None, "b": None, "c": 40, "ts": 2},
]


# ------------------------------------------------------------------------------ writes, reads, services
def test_family_writes_reads_time_travel_and_compaction_on_s3(endpoint, uri, opts):
    t, (i1, i2, i3, i4) = seeded(uri, opts)
    assert t.storage.atomic_create  # moto honours If-None-Match: conditional puts are used
    assert rows(t) == EXPECTED
    assert rows(t, columns=["id", "c"]) == [{"id": 1, "c": 11}, {"id": 2, "c": 20}, {"id": 4, "c": 40}]
    assert rows(t, filters=[("c", ">", 15)]) == EXPECTED[1:]
    assert rows(t, as_of=i1) == [
        {"id": 1, "a": 1.0, "b": "x", "c": 10, "ts": 1},
        {"id": 2, "a": 2.0, "b": "y", "c": 20, "ts": 1},
        {"id": 3, "a": 3.0, "b": "z", "c": 30, "ts": 1},
    ]
    timeline = keys_under(endpoint, uri, ".hoodie/timeline/")
    completed = [k for k in timeline if k.endswith(".deltacommit")]
    assert [k.split("/")[-1].split("_")[0] for k in completed] == [i1, i2, i3, i4]
    assert ".hoodie/.lock" not in keys_under(endpoint, uri, ".hoodie/")  # every lock was released

    compaction = t.compact()
    assert compaction is not None
    reopened = pyhudi.open_table(uri, opts)
    assert rows(reopened) == EXPECTED
    assert rows(reopened, as_of=i2) == [
        {"id": 1, "a": 1.0, "b": "x", "c": 11, "ts": 2},
        {"id": 2, "a": 2.0, "b": "y", "c": 20, "ts": 1},
        {"id": 3, "a": 3.0, "b": "z", "c": 30, "ts": 1},
        {"id": 4, "a": None, "b": None, "c": 40, "ts": 2},
    ]
    base_files = [k for k in keys_under(endpoint, uri, "") if k.endswith(".parquet")]
    assert base_files == [f"{FID}_0-0-0_{compaction}_fa.parquet", f"{FID}_0-0-0_{compaction}_fc.parquet"]


def test_insert_overwrite_and_alter_on_s3(uri, opts):
    t = pyhudi.create_table(uri, SCHEMA, "id", partition_fields="b", options=opts)
    t.upsert(pa.table({"id": [1, 2, 3], "a": [1.0, 2.0, 3.0], "b": ["x", "x", "y"], "c": [1, 2, 3],
                       "ts": [1, 1, 1]}))
    t.insert_overwrite(pa.table({"id": [9], "a": [9.0], "b": ["x"], "c": [9], "ts": [2]}))
    assert rows(t) == [{"id": 3, "a": 3.0, "b": "y", "c": 3, "ts": 1}, {"id": 9, "a": 9.0, "b": "x", "c": 9, "ts": 2}]

    f = pyhudi.create_table(uri + "_fam", SCHEMA, "id", num_buckets=1, column_families=FAMILIES, options=opts)
    f.upsert(pa.table({"id": [1], "a": [1.0], "b": ["x"], "c": [1], "ts": [1]}))
    f.alter(set_properties={"hoodie.colFamily.fd": "d"}, new_columns={"d": pa.string()})
    f.upsert(pa.table({"id": [1, 2], "d": ["p", "q"]}))
    assert rows(pyhudi.open_table(uri + "_fam", opts)) == [
        {"id": 1, "a": 1.0, "b": "x", "c": 1, "ts": 1, "d": "p"},
        {"id": 2, "a": None, "b": None, "c": None, "ts": None, "d": "q"},
    ]


def test_storage_options_are_used_but_never_persisted(endpoint, uri, opts):
    t = pyhudi.create_table(uri, SCHEMA, "id", options=opts)
    props = t.storage.read(".hoodie/hoodie.properties").decode()
    assert "hoodie.pyhudi.s3" not in props and "testing" not in props
    with pytest.raises(ConfigError, match="open_table takes only storage options"):
        pyhudi.open_table(uri, {"hoodie.table.name": "x"})
    with pytest.raises(ConfigError, match="must be given together"):
        pyhudi.open_table(uri + "_other", {"hoodie.pyhudi.s3.access.key": "testing"})
    with pytest.raises(ConfigError, match="must be a URL with a scheme"):
        pyhudi.open_table(uri + "_other", {"hoodie.pyhudi.s3.endpoint": "127.0.0.1:9"})
    assert "secret" not in repr(t.storage._s3) and "testing', 'secret" not in repr(t.storage._s3)


def test_endpoint_and_credentials_from_the_environment(endpoint, uri, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")  # AWS_ENDPOINT_URL_S3 wins over it
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    t = pyhudi.create_table(uri, SCHEMA, "id")
    t.upsert(pa.table({"id": [1], "a": [1.0], "b": ["x"], "c": [1], "ts": [1]}))
    assert rows(pyhudi.open_table(uri)) == [{"id": 1, "a": 1.0, "b": "x", "c": 1, "ts": 1}]
    assert s3.S3Settings.resolve({}).endpoint == endpoint


# ------------------------------------------------------------------------------ concurrency and atomicity
def _run_threads(targets):
    errors: list[BaseException] = []

    def guarded(fn):
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in targets]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert errors == []


def _two_family_writers(uri, opts, rounds=5):
    pyhudi.create_table(uri, SCHEMA, "id", num_buckets=1, column_families=FAMILIES, options=opts)
    ids = [1, 2, 3]

    def writer_a():
        t = pyhudi.open_table(uri, opts)
        for r in range(rounds):
            t.upsert(pa.table({"id": ids, "a": [float(r)] * 3, "b": [f"a{r}"] * 3}))

    def writer_c():
        t = pyhudi.open_table(uri, opts)
        for r in range(rounds):
            t.upsert(pa.table({"id": ids, "c": [100 + r] * 3, "ts": [r] * 3}))

    _run_threads([writer_a, writer_c])
    t = pyhudi.open_table(uri, opts)
    last = rounds - 1
    assert rows(t) == [{"id": i, "a": float(last), "b": f"a{last}", "c": 100 + last, "ts": last} for i in ids]
    timeline = t.timeline
    assert len(timeline) == 2 * rounds and all(i.is_completed for i in timeline)
    assert len({i.completion_time for i in timeline}) == 2 * rounds
    return t


def test_two_concurrent_writer_threads_with_default_options_all_commit(uri, opts):
    t = _two_family_writers(uri, opts)
    assert isinstance(t.active_timeline().lock, FileLock)  # lock file created with conditional puts


def test_without_conditional_put_the_in_process_lock_keeps_writers_atomic(uri, opts):
    no_put = {**opts, "hoodie.pyhudi.s3.conditional.put": "false"}
    t = _two_family_writers(uri, no_put)
    assert not t.storage.atomic_create
    assert isinstance(t.active_timeline().lock, InProcessLock)
    before = [str(i) for i in t.timeline]
    with pytest.raises(ConfigError, match="FileSystemBasedLockProvider needs a store with atomic create"):
        t.upsert(pa.table({"id": [7], "a": [7.0]}), options={
            "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"})
    assert [str(i) for i in t.timeline] == before and rows(t)[0]["id"] == 1


def test_a_registered_lock_provider_is_used_and_unknown_names_are_refused(uri, opts):
    calls = []

    class CountingLock(InProcessLock):
        def acquire(self, timeout_s=None):
            calls.append("acquire")
            super().acquire(timeout_s)

        def release(self):
            calls.append("release")
            super().release()

    register_lock_provider("com.example.CountingLockProvider",
                           lambda storage, props: CountingLock(f"counting:{storage.base_uri}"))
    try:
        t = pyhudi.create_table(uri, SCHEMA, "id", options={
            **opts, "hoodie.write.lock.provider": "com.example.CountingLockProvider"})
        t.upsert(pa.table({"id": [1], "a": [1.0], "b": ["x"], "c": [1], "ts": [1]}))
        assert calls and calls.count("acquire") == calls.count("release")
        assert isinstance(t.active_timeline().lock, CountingLock)
    finally:
        unregister_lock_provider("com.example.CountingLockProvider")
    before = [str(i) for i in t.timeline]  # the provider named in hoodie.properties is gone: reads still work
    assert rows(t) == [{"id": 1, "a": 1.0, "b": "x", "c": 1, "ts": 1}]
    with pytest.raises(ConfigError, match="unknown hoodie.write.lock.provider='com.example.CountingLockProvider'"):
        t.upsert(pa.table({"id": [2], "a": [2.0]}))
    dynamo = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"
    with pytest.raises(ConfigError, match="register an implementation with"):
        t.upsert(pa.table({"id": [2], "a": [2.0]}), options={"hoodie.write.lock.provider": dynamo})
    assert [str(i) for i in t.timeline] == before


def test_the_in_process_lock_is_one_lock_per_table_and_names_its_holder(tmp_path):
    storage = Storage(str(tmp_path / "t"))
    props = {"hoodie.write.lock.provider": IN_PROCESS_LOCK_PROVIDER, "hoodie.write.lock.wait_time_ms": "50"}
    first, second = create_lock(storage, props), create_lock(Storage(str(tmp_path / "t")), props)
    assert isinstance(first, InProcessLock) and isinstance(second, InProcessLock)
    first.acquire()
    with pytest.raises(LockError, match="already held by this thread"):
        second.acquire()
    assert second.held_by_current_thread() and second.holder().pid is not None
    failure = []
    th = threading.Thread(target=lambda: failure.append(_try_acquire(second)))
    th.start()
    th.join()
    assert failure[0].startswith(f"could not acquire in-process lock of {storage.root} within 0.050s: held by owner=")
    first.release()
    with pytest.raises(LockError, match="is not held by this thread"):
        first.release()
    other = create_lock(Storage(str(tmp_path / "u")), props)
    with other, second:  # another table's lock is independent
        assert other.held_by_current_thread()


def _try_acquire(lock):
    try:
        lock.acquire()
    except LockError as exc:
        return str(exc)
    lock.release()
    return "acquired"


def test_racing_creators_of_one_completed_instant_exactly_one_wins(uri, opts):
    relpath = ".hoodie/timeline/20260101000000000_20260101000000001.deltacommit"
    results: dict[int, str] = {}
    barrier = threading.Barrier(6)

    def creator(n):
        storage = Storage(uri, options=opts)
        barrier.wait()
        try:
            storage.create_if_absent(relpath, f"writer {n}".encode())
            results[n] = "won"
        except AlreadyExistsError:
            results[n] = "lost"

    threads = [threading.Thread(target=creator, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    winners = [n for n, r in results.items() if r == "won"]
    assert len(results) == 6 and len(winners) == 1
    assert Storage(uri).read(relpath) == f"writer {winners[0]}".encode()


def test_a_store_that_ignores_if_none_match_is_not_trusted_with_atomic_create():
    class IgnoresHeader:
        objects: dict[str, bytes] = {}

        def put_object(self, Bucket, Key, Body, IfNoneMatch=None):
            self.objects[Key] = Body

        def delete_object(self, Bucket, Key):
            self.objects.pop(Key, None)

    assert s3.ConditionalPut(IgnoresHeader(), "b").supported() is False
    assert IgnoresHeader.objects == {}  # the probe cleaned up after itself


def test_an_unreachable_store_fails_the_probe_instead_of_downgrading_atomicity():
    settings = s3.S3Settings.resolve({"hoodie.pyhudi.s3.endpoint": "http://127.0.0.1:1",
                                      "hoodie.pyhudi.s3.access.key": "k", "hoodie.pyhudi.s3.secret.key": "s"})
    with pytest.raises(StorageError, match="cannot probe conditional put on bucket nowhere"):
        settings.conditional_creator("nowhere")


@pytest.mark.spark
def test_spark_writes_a_family_and_reads_the_table_on_s3(spark, uri, opts):
    """The Spark face on an object store: Spark tasks write their file groups to S3 and the
    Python data source reads them back (the store's options travel with the write and read)."""
    import pyhudi.spark

    t, _ = seeded(uri, opts)
    df = spark.createDataFrame([(1, 12, 3), (5, 50, 3)], "id long, c long, ts long")
    instant = pyhudi.spark.write(df, uri, operation="upsert", **opts)
    assert instant is not None
    expected = {r["id"]: r for r in EXPECTED}
    expected[1] = {**expected[1], "c": 12, "ts": 3}
    expected[5] = {"id": 5, "a": None, "b": None, "c": 50, "ts": 3}
    assert rows(pyhudi.open_table(uri, opts)) == [expected[k] for k in sorted(expected)]
    read = pyhudi.spark.read(spark, uri, **opts).orderBy("id").collect()
    assert [r.asDict() for r in read] == [expected[k] for k in sorted(expected)]
    pruned = pyhudi.spark.read(spark, uri, columns=["id", "c"], filters=[("c", ">", 15)], **opts)
    assert sorted((r.id, r.c) for r in pruned.collect()) == sorted(
        (k, v["c"]) for k, v in expected.items() if v["c"] is not None and v["c"] > 15)
