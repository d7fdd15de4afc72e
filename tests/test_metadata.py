"""Timeline metadata models: schemas vs. Hudi-written files, Avro/JSON serde, instant dispatch."""

from __future__ import annotations

import dataclasses
import io
import json
import pathlib
import re
import zipfile

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhudi.errors import MetadataError
from pyhudi.timeline import schemas
from pyhudi.timeline.metadata import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    CommitMetadata,
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
    InstantInfo,
    ReplaceCommitMetadata,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    RuntimeStats,
    SliceInfo,
    WriteStat,
    decode_commit_summary,
    decode_instant_metadata,
    encode_instant_metadata,
)
from pyhudi.timeline.metadata_base import AvroModel, avro_model, read_container, snake_case

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi"
ALL_ZIPS = sorted(FIXTURES.glob("**/*.zip"))
_INSTANT_RE = re.compile(r"^(\d+)(?:_(\d+))?\.(\w+)(?:\.(requested|inflight))?$")
_STATE_OF = {"requested": "REQUESTED", "inflight": "INFLIGHT", None: "COMPLETED"}


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    """Every fixture zip extracted once (into a temp dir), keyed by its path relative to FIXTURES."""
    out = {}
    root = tmp_path_factory.mktemp("metadata_fixtures")
    for z in ALL_ZIPS:
        rel = z.relative_to(FIXTURES).as_posix()
        dest = root / rel.replace("/", "__")
        with zipfile.ZipFile(z) as zf:
            zf.extractall(dest, members=[m for m in zf.namelist() if not m.startswith("__MACOSX")])
        (table,) = [p.parent for p in dest.glob("*/.hoodie") if p.is_dir()]
        out[rel] = table
    return out


def instant_files(table: pathlib.Path) -> list[tuple[str, str, pathlib.Path]]:
    """(action, state, path) of every instant file of the active timeline (layout 2 or 1)."""
    timeline = table / ".hoodie" / "timeline"
    folder = timeline if timeline.is_dir() else table / ".hoodie"
    found = []
    for p in sorted(folder.iterdir()):
        if not p.is_file():
            continue
        m = _INSTANT_RE.match(p.name)
        if not m:
            continue
        action, suffix = m.group(3), m.group(4)
        if action == "inflight":  # "<t>.inflight" is a commit's inflight
            action, suffix = "commit", "inflight"
        found.append((action, _STATE_OF[suffix], p))
    return found


def decode_file(table: pathlib.Path, name_glob: str, action: str, state: str) -> object:
    folder = table / ".hoodie" / "timeline"
    (path,) = list((folder if folder.is_dir() else table / ".hoodie").glob(name_glob))
    return decode_instant_metadata(action, state, path.read_bytes())


def avro_parts(data: bytes) -> tuple[str, dict]:
    reader = fastavro.reader(io.BytesIO(data))
    return reader.metadata["avro.schema"], next(iter(reader))


def assert_round_trip(model: AvroModel) -> None:
    data = model.to_avro_bytes()
    assert data[:4] == b"Obj\x01"
    again = type(model).from_avro_bytes(data)
    assert again == model
    assert again.to_avro_bytes() == data  # deterministic bytes


# --- the Hudi-written Avro instant --------------------------------------------------------------

V8_DELTACOMMIT = FIXTURES / "commit_metadata" / "v8_deltacommit.avro"
V6_COMMIT_JSON = FIXTURES / "commit_metadata" / "v6_commit.json"


def test_commit_schema_equals_hudi_writer_schema() -> None:
    data = V8_DELTACOMMIT.read_bytes()
    raw_schema, _ = avro_parts(data)
    with open(V8_DELTACOMMIT, "rb") as f:
        fixture_parsed = fastavro.reader(f).writer_schema
    ours = CommitMetadata().to_avro_bytes()
    with io.BytesIO(ours) as f:
        ours_parsed = fastavro.reader(f).writer_schema
    assert ours_parsed == fixture_parsed
    assert schemas.to_json(schemas.COMMIT_METADATA) == raw_schema  # byte for byte, as Java prints it
    version = next(f for f in schemas.COMMIT_METADATA["fields"] if f["name"] == "version")
    assert version == {"name": "version", "type": ["int", "null"], "default": 1}


def _header(data: bytes) -> bytes:
    """An Avro container's header: up to and including the first sync marker (the file's last 16 bytes)."""
    return data[:data.index(data[-16:]) + 16]


def _block(data: bytes) -> bytes:
    """The container's one data block without its sync marker."""
    return data[len(_header(data)):-16]


def raw_schema_of(data: bytes) -> str:
    return avro_parts(data)[0]


def test_v8_deltacommit_round_trips() -> None:
    data = V8_DELTACOMMIT.read_bytes()
    _, record = avro_parts(data)
    model = CommitMetadata.from_avro_bytes(data)
    out = model.to_avro_bytes()
    _, record_again = avro_parts(out)
    assert record_again == record
    assert model.to_dict() == record
    # the same data block as Java's, except the 16-byte sync marker (random in Java, content-derived
    # here); the header holds Java's schema and pyhudi's JSON copy of the record
    assert _block(out) == _block(data)
    assert fastavro.reader(io.BytesIO(out)).metadata.keys() == {"avro.schema", "pyhudi.record.json"}
    assert fastavro.reader(io.BytesIO(out)).metadata["avro.schema"] == raw_schema_of(data)
    assert decode_instant_metadata("deltacommit", "COMPLETED", data) == model


def test_v8_deltacommit_values_and_helpers() -> None:
    model = CommitMetadata.from_avro_bytes(V8_DELTACOMMIT.read_bytes())
    assert model.operation_type == "UPSERT"
    assert model.compacted is False
    assert model.version is None  # written as null by Hudi; kept as read
    assert model.partitions() == ["city=san_francisco", "city=sao_paulo", "city=chennai"]
    stats = list(model.write_stats())
    assert [s.num_writes for s in stats] == [4, 2, 2]
    first = stats[0]
    assert first.file_id == "87a4c895-1f59-4518-972f-27f49a92c7b4-0"
    assert first.prev_commit == "null"
    assert first.runtime_stats == RuntimeStats(total_scan_time=0, total_create_time=87, total_upsert_time=0)
    assert model.file_ids() == {
        "87a4c895-1f59-4518-972f-27f49a92c7b4-0",
        "f362fd72-680f-4a16-ade8-c3e20bc2026c-0",
        "58fccab1-a55c-4b22-b74e-22b747ad4a44-0",
    }
    assert model.partition_file_ids()["city=chennai"] == {"58fccab1-a55c-4b22-b74e-22b747ad4a44-0"}
    assert model.written_paths()[0] == (
        "city=san_francisco/87a4c895-1f59-4518-972f-27f49a92c7b4-0_0-252-389_20250713011913147.parquet"
    )
    assert model.schema is not None and json.loads(model.schema)["name"] == "v8_trips_8i1u_record"


def test_v6_json_commit_parses() -> None:
    data = V6_COMMIT_JSON.read_bytes()
    model = CommitMetadata.from_json_bytes(data)
    assert decode_instant_metadata("commit", "COMPLETED", data) == model
    (stat,) = model.partition_to_write_stats[""]
    assert stat.file_id == "a079bdb3-731c-4894-b855-abfcd6921007-0"
    assert stat.num_writes == 4
    assert stat.prev_commit == "20240418173550988"
    assert stat.num_update_writes == 1 and stat.num_inserts == 1
    assert stat.runtime_stats == RuntimeStats(total_scan_time=0, total_upsert_time=105, total_create_time=0)
    assert stat.total_log_files is None  # absent from 0.x JSON → schema default
    assert model.schema.startswith('{"type":"record","name":"v6_nonpartitioned_record"')
    assert model.operation_type == "UPSERT" and model.compacted is False
    assert model.version == 1  # absent in JSON → schema default
    assert_round_trip(model)  # a layout-1 commit re-encodes as layout-2 Avro


# --- every instant of every fixture table -------------------------------------------------------


@pytest.mark.parametrize("zip_rel", [z.relative_to(FIXTURES).as_posix() for z in ALL_ZIPS])
def test_every_fixture_instant_decodes(tables: dict[str, pathlib.Path], zip_rel: str) -> None:
    files = instant_files(tables[zip_rel])
    for action, state, path in files:
        data = path.read_bytes()
        obj = decode_instant_metadata(action, state, data)
        if not data:
            assert obj is None, path.name
            continue
        assert obj is not None, path.name
        if state == "COMPLETED" and action in ("commit", "deltacommit"):
            assert type(obj) is CommitMetadata, path.name
        if state == "COMPLETED" and action == "replacecommit":
            assert type(obj) is ReplaceCommitMetadata, path.name
        if state == "COMPLETED" and action in ("commit", "deltacommit", "replacecommit"):
            # the cheap summary every write reads agrees with the full model
            assert decode_commit_summary(action, data) == (obj.operation_type, obj.extra_metadata or {}), path.name
        if isinstance(obj, AvroModel):
            assert_round_trip(obj)
            if data[:4] == b"Obj\x01":  # Hudi-written Avro: re-encoding keeps every record value
                _, record = avro_parts(data)
                _, again = avro_parts(obj.to_avro_bytes())
                # (a replacecommit inflight holds a plain commit record; ours adds one null field)
                assert {k: v for k, v in again.items() if k in record} == record, path.name


def test_fixture_writer_schemas_equal_ours(tables: dict[str, pathlib.Path]) -> None:
    """Every Hudi-written record kind we model carries exactly our schema JSON."""
    seen = set()
    for table in tables.values():
        for _, _, path in instant_files(table):
            data = path.read_bytes()
            if data[:4] != b"Obj\x01":
                continue
            raw, _ = avro_parts(data)
            name = json.loads(raw)["name"]
            if name in schemas.TOP_LEVEL:
                assert schemas.to_json(schemas.TOP_LEVEL[name]) == raw, path.name
                seen.add(name)
    assert seen == {
        "HoodieCommitMetadata",
        "HoodieReplaceCommitMetadata",
        "HoodieRequestedReplaceMetadata",
        "HoodieCompactionPlan",
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
    }


@pytest.mark.parametrize("table_type", ["cow", "mor/avro"])
def test_replacecommits_of_v9_txns(tables: dict[str, pathlib.Path], table_type: str) -> None:
    table = tables[f"sample_table/{table_type}/v9_txns_simple_nometa.zip"]
    completed = {}
    for action, state, path in instant_files(table):
        if action == "replacecommit" and state == "COMPLETED":
            meta = decode_instant_metadata(action, state, path.read_bytes())
            assert meta.partition_to_replace_file_ids, path.name
            completed[meta.operation_type] = meta
    assert set(completed) == {"INSERT_OVERWRITE", "CLUSTER"}
    overwrite = completed["INSERT_OVERWRITE"]
    assert list(overwrite.partition_to_replace_file_ids) == ["region=eu"]
    assert len(overwrite.partition_to_replace_file_ids["region=eu"]) == 2
    assert overwrite.partitions() == ["region=eu"]

    (plan_path,) = [p for a, s, p in instant_files(table) if a == "clustering" and s == "REQUESTED"]
    requested = decode_instant_metadata("clustering", "REQUESTED", plan_path.read_bytes())
    assert isinstance(requested, RequestedReplaceMetadata)
    assert requested.operation_type == "CLUSTER" and requested.is_clustering
    plan = requested.clustering_plan
    assert plan.preserve_hoodie_metadata is True
    assert plan.strategy.strategy_class_name == (
        "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
    )
    assert [len(g.slices) for g in plan.input_groups] == [2, 1, 2]
    assert all(g.num_output_file_groups == 1 for g in plan.input_groups)
    # the clustering replaces exactly the file groups its plan named
    assert set(requested.file_groups()) == completed["CLUSTER"].replaced_file_groups()

    (ow_requested,) = [p for a, s, p in instant_files(table) if a == "replacecommit" and s == "REQUESTED"]
    ow = decode_instant_metadata("replacecommit", "REQUESTED", ow_requested.read_bytes())
    assert ow == RequestedReplaceMetadata(version=None) and not ow.is_clustering


def test_compaction_plan_of_v8_trips(tables: dict[str, pathlib.Path]) -> None:
    table = tables["quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"]
    plan = decode_file(table, "20251220210129235.compaction.requested", "compaction", "REQUESTED")
    assert isinstance(plan, CompactionPlan)
    assert plan.version == 2 and plan.strategy is None and plan.preserve_hoodie_metadata is False
    assert plan.file_groups() == [
        ("city=chennai", "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"),
        ("city=san_francisco", "036ded81-9ed4-479f-bcea-7145dfa0079b-0"),
        ("city=sao_paulo", "8aa68f7e-afd6-4c94-b86c-8a886552e08d-0"),
    ]
    op = plan.operations[0]
    assert op.base_instant_time == "20251220210108078"
    assert op.data_file_path == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    assert op.delta_file_paths == [
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078",
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210128625.log.1_0-1097-3150",
    ]
    assert op.metrics["TOTAL_LOG_FILES"] == 2.0 and op.metrics["TOTAL_LOG_FILES_SIZE"] == 2117.0
    assert decode_file(table, "20251220210129235.compaction.inflight", "compaction", "INFLIGHT") is None
    done = decode_file(table, "20251220210129235_*.commit", "commit", "COMPLETED")
    assert done.file_ids() == {fid for _, fid in plan.file_groups()}
    index_plan = decode_file(table, "20251220210117766.indexing.requested", "indexing", "REQUESTED")
    assert index_plan["indexPartitionInfos"][0]["metadataPartitionPath"] == "secondary_index_rider_idx"


@pytest.mark.parametrize(
    ("zip_rel", "rollback_time", "rolled_back"),
    [
        ("sample_table/mor/avro/v9_nonpartitioned_rollback.zip", "20260403184259077", "20260403184242950"),
        ("sample_table/mor/parquet/v6_nonpartitioned_rollback.zip", "20250126040936578", "20250126040826878"),
    ],
)
def test_rollback_instants(tables: dict[str, pathlib.Path], zip_rel: str, rollback_time: str, rolled_back: str) -> None:
    table = tables[zip_rel]
    plan = decode_file(table, f"{rollback_time}.rollback.requested", "rollback", "REQUESTED")
    assert isinstance(plan, RollbackPlan)
    assert plan.instant_to_rollback == InstantInfo(commit_time=rolled_back, action="deltacommit")
    assert plan.instant_time == rolled_back
    assert plan.rollback_requests[0].files_to_be_deleted[0].endswith(f"_{rolled_back}.parquet")
    meta = decode_file(table, f"{rollback_time}*.rollback", "rollback", "COMPLETED")
    assert isinstance(meta, RollbackMetadata)
    assert meta.start_rollback_time == rollback_time
    assert meta.commits_rollback == [rolled_back]
    assert meta.rolled_back_instants() == [rolled_back]
    assert meta.total_files_deleted == 1
    assert meta.partition_metadata[""].success_delete_files[0].endswith(f"_{rolled_back}.parquet")


def test_v6_rollback_log_files(tables: dict[str, pathlib.Path]) -> None:
    table = tables["sample_table/mor/parquet/v6_nonpartitioned_rollback.zip"]
    plan = decode_file(table, "20250126040936578.rollback.requested", "rollback", "REQUESTED")
    request = plan.rollback_requests[1]
    assert request.file_id == "0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0"
    assert list(request.log_blocks_to_be_deleted.values()) == [11828]
    meta = decode_file(table, "20250126040936578.rollback", "rollback", "COMPLETED")
    assert list(meta.partition_metadata[""].rollback_log_files.values()) == [105]
    deltacommit = decode_file(table, "20250126060846931.deltacommit", "deltacommit", "COMPLETED")
    (log_stat,) = [s for s in deltacommit.write_stats() if s.log_files]
    assert log_stat.log_version == 3 and len(log_stat.log_files) == 3


# --- every model round-trips --------------------------------------------------------------------

_STAT = WriteStat(
    file_id="f1-0", path="p=1/f1-0_0-1-0_20250101000000000.parquet", prev_commit="null", num_writes=3,
    partition_path="p=1", log_files=[".f1-0_20250101000000000.log.1_0-1-0"], cdc_stats={"x": 1},
    runtime_stats=RuntimeStats(total_upsert_time=5),
)
SAMPLES: list[AvroModel] = [
    RuntimeStats(1, 2, 3),
    _STAT,
    CommitMetadata.from_write_stats([_STAT], operation_type="UPSERT", schema='{"type":"record"}'),
    ReplaceCommitMetadata(partition_to_write_stats={"p=1": [_STAT]}, operation_type="CLUSTER",
                          partition_to_replace_file_ids={"p=1": ["old-0", "old2-0"]}),
    CompactionOperation(base_instant_time="1", delta_file_paths=[".a.log.1_0-1-0"], file_id="a", metrics={"m": 1.5}),
    CompactionStrategy(compactor_class_name="X", strategy_params={"k": "v"}),
    CompactionPlan(operations=[CompactionOperation(file_id="a", partition_path="p")], extra_metadata={"e": "1"},
                   strategy=CompactionStrategy(), preserve_hoodie_metadata=True, missing_schedule_partitions=["q"]),
    SliceInfo(data_file_path="p/a.parquet", delta_file_paths=[], file_id="a", partition_path="p"),
    ClusteringGroup(slices=[SliceInfo(file_id="a")], metrics={"TOTAL_IO_MB": 0.0}, num_output_file_groups=2),
    ClusteringStrategy(strategy_class_name="S", strategy_params={"hoodie.clustering.plan.strategy.sort.columns": "c"}),
    ClusteringPlan(input_groups=[ClusteringGroup(slices=[SliceInfo(file_id="a", partition_path="p")])],
                   strategy=ClusteringStrategy(strategy_class_name="S"), preserve_hoodie_metadata=True),
    RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=ClusteringPlan(input_groups=[])),
    ActionInstant(timestamp="20250101000000000", action="commit", state="COMPLETED"),
    CleanFileInfo(file_path="/t/p/a.parquet", is_bootstrap_base_file=False),
    CleanerPlan(earliest_instant_to_retain=ActionInstant("1", "commit", "COMPLETED"), policy="KEEP_LATEST_COMMITS",
                file_paths_to_be_deleted_per_partition={"p": [CleanFileInfo("/t/p/a.parquet", False)]},
                partitions_to_be_deleted=[], extra_metadata={}),
    CleanPartitionMetadata(partition_path="p", policy="KEEP_LATEST_COMMITS", delete_path_patterns=["a"],
                           success_delete_files=["a"], failed_delete_files=[]),
    CleanMetadata(start_clean_time="2", time_taken_in_millis=10, total_files_deleted=1, earliest_commit_to_retain="1",
                  partition_metadata={"p": CleanPartitionMetadata("p", "KEEP_LATEST_COMMITS", [], ["a"], [], None)},
                  bootstrap_partition_metadata={"p": CleanPartitionMetadata("p", "KEEP_LATEST_COMMITS", [], [], [])}),
    InstantInfo(commit_time="1", action="deltacommit"),
    RollbackRequest(partition_path="p", file_id="a", files_to_be_deleted=["/t/p/a"], log_blocks_to_be_deleted={"l": 3}),
    RollbackPlan(instant_to_rollback=InstantInfo("1", "deltacommit"), rollback_requests=[RollbackRequest("p")]),
    RollbackPartitionMetadata(partition_path="p", success_delete_files=["x"], failed_delete_files=[],
                              rollback_log_files={"l": 1}),
    RollbackMetadata(start_rollback_time="2", time_taken_in_millis=5, total_files_deleted=1, commits_rollback=["1"],
                     partition_metadata={"p": RollbackPartitionMetadata("p", ["x"], [])},
                     instants_rollback=[InstantInfo("1", "deltacommit")]),
]


def _model_classes() -> set[type]:
    import pyhudi.timeline.metadata as m

    return {c for c in vars(m).values() if isinstance(c, type) and issubclass(c, AvroModel) and c is not AvroModel}


def test_samples_cover_every_model() -> None:
    assert {type(s) for s in SAMPLES} == _model_classes()


@pytest.mark.parametrize("model", SAMPLES, ids=lambda m: type(m).__name__)
def test_model_round_trips(model: AvroModel) -> None:
    assert_round_trip(model)
    default = type(model)()
    assert_round_trip(default)
    assert type(model).from_avro_bytes(b"") == default
    assert type(model).from_json_bytes(b"") == default
    assert type(model).from_json_bytes(model.to_json_bytes()) == model
    name, record = read_container(model.to_avro_bytes())
    assert name == schemas.full_name(type(model).__avro_schema__)
    assert list(record) == [f["name"] for f in type(model).__avro_schema__["fields"]]


def test_mapping_is_derived_from_schema() -> None:
    for cls in _model_classes():
        avro_names = [f["name"] for f in cls.__avro_schema__["fields"]]
        assert [f.name for f in dataclasses.fields(cls)] == [snake_case(n) for n in avro_names]
        assert list(cls().to_dict()) == avro_names
    assert snake_case("RollbackRequests") == "rollback_requests"
    assert snake_case("totalLogReadTimeMs") == "total_log_read_time_ms"
    assert CompactionPlan().preserve_hoodie_metadata is False  # schema default, not None
    assert CommitMetadata().version == 1 and ClusteringGroup().num_output_file_groups == 1
    assert RollbackRequest().files_to_be_deleted == [] and CleanerPlan().last_completed_commit_timestamp == ""


def test_binding_refuses_drift() -> None:
    with pytest.raises(TypeError, match="needs"):

        @avro_model(schemas.INSTANT_INFO)
        class Drifted(AvroModel):  # noqa: F841 - wrong field name
            commit_time: str
            actions: str

    with pytest.raises(TypeError, match="defaults come from the schema"):

        @avro_model(schemas.INSTANT_INFO)
        class WithDefault(AvroModel):  # noqa: F841
            commit_time: str
            action: str = "commit"


def test_models_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CommitMetadata().operation_type = "UPSERT"  # type: ignore[misc]


_opt_long = st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1)
_opt_text = st.none() | st.text(max_size=20)
_write_stats = st.builds(
    WriteStat,
    file_id=_opt_text, path=_opt_text, prev_commit=_opt_text, num_writes=_opt_long, num_deletes=_opt_long,
    partition_path=_opt_text, log_version=st.none() | st.integers(min_value=-(2**31), max_value=2**31 - 1),
    log_files=st.none() | st.lists(st.text(max_size=10), max_size=3),
    cdc_stats=st.none() | st.dictionaries(st.text(max_size=5), st.integers(0, 2**40), max_size=2),
    runtime_stats=st.none() | st.builds(RuntimeStats, _opt_long, _opt_long, _opt_long),
    total_log_read_time_ms=_opt_long, num_updates=_opt_long,
)


@settings(max_examples=60, deadline=None)
@given(_write_stats)
def test_write_stat_property_round_trip(stat: WriteStat) -> None:
    assert WriteStat.from_avro_bytes(stat.to_avro_bytes()) == stat
    assert WriteStat.from_json_bytes(stat.to_json_bytes()) == stat


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(st.text(max_size=8), st.lists(_write_stats, max_size=3), max_size=3),
    st.none() | st.booleans(),
    st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=30), max_size=3),
    st.none() | st.integers(min_value=-(2**31), max_value=2**31 - 1),
    _opt_text,
)
def test_commit_metadata_property_round_trip(partitions, compacted, extra, version, operation) -> None:
    meta = CommitMetadata(partitions, compacted, extra, version, operation)
    data = meta.to_avro_bytes()
    assert CommitMetadata.from_avro_bytes(data) == meta
    assert decode_instant_metadata("commit", "COMPLETED", data) == meta
    assert CommitMetadata.from_json_bytes(meta.to_json_bytes()) == meta


# --- dispatch rules and errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "state", "model"),
    [
        ("commit", "COMPLETED", SAMPLES[2]),
        ("deltacommit", "INFLIGHT", SAMPLES[2]),
        ("compaction", "COMPLETED", SAMPLES[2]),
        ("replacecommit", "COMPLETED", SAMPLES[3]),
        ("replacecommit", "REQUESTED", SAMPLES[11]),
        ("clustering", "REQUESTED", SAMPLES[11]),
        ("compaction", "REQUESTED", SAMPLES[6]),
        ("logcompaction", "REQUESTED", SAMPLES[6]),
        ("clean", "REQUESTED", SAMPLES[14]),
        ("clean", "INFLIGHT", SAMPLES[14]),
        ("clean", "COMPLETED", SAMPLES[16]),
        ("rollback", "REQUESTED", SAMPLES[19]),
        ("rollback", "COMPLETED", SAMPLES[21]),
    ],
)
def test_dispatch_returns_model(action: str, state: str, model: AvroModel) -> None:
    assert decode_instant_metadata(action, state, encode_instant_metadata(model)) == model


def test_dispatch_empty_and_unmodelled() -> None:
    for action in ("commit", "deltacommit", "compaction", "clustering", "clean", "rollback", "savepoint"):
        for state in ("REQUESTED", "INFLIGHT", "COMPLETED"):
            assert decode_instant_metadata(action, state, b"") is None
    assert encode_instant_metadata(None) == b""
    assert decode_instant_metadata("savepoint", "COMPLETED", b'{"savepointedBy": "me"}') == {"savepointedBy": "me"}
    restore = decode_instant_metadata("restore", "COMPLETED", SAMPLES[21].to_avro_bytes())
    assert isinstance(restore, dict) and restore["startRollbackTime"] == "2"


def test_dispatch_reads_commit_family_interchangeably() -> None:
    workload = CommitMetadata(partition_to_write_stats={"p": [WriteStat(file_id="")]}, operation_type="INSERT_OVERWRITE")
    got = decode_instant_metadata("replacecommit", "INFLIGHT", workload.to_avro_bytes())
    assert isinstance(got, ReplaceCommitMetadata) and got.partition_to_replace_file_ids is None
    assert got.operation_type == "INSERT_OVERWRITE" and got.file_ids() == set()
    replace = decode_instant_metadata("commit", "COMPLETED", SAMPLES[3].to_avro_bytes())
    assert type(replace) is CommitMetadata and replace.file_ids() == {"f1-0"}


@pytest.mark.parametrize("data", [b"PAR1garbage", b"\x00\x01\x02", b"Obj\x01truncated", b"{not json", b"[1, 2]"])
def test_undecodable_bytes_raise(data: bytes) -> None:
    with pytest.raises(MetadataError, match="deltacommit") as info:
        decode_instant_metadata("deltacommit", "COMPLETED", data)
    assert "COMPLETED" in str(info.value)
    with pytest.raises(MetadataError, match="indexing"):
        decode_instant_metadata("indexing", "REQUESTED", data)
    with pytest.raises(MetadataError, match=r"deltacommit instant \(COMPLETED\)"):
        decode_commit_summary("deltacommit", data)


def test_commit_summary_of_empty_and_json_commits() -> None:
    assert decode_commit_summary("commit", b"") == (None, {})
    data = V6_COMMIT_JSON.read_bytes()
    operation, extra = decode_commit_summary("commit", data)
    assert operation == "UPSERT" and extra["schema"].startswith('{"type":"record","name":"v6_nonpartitioned_record"')
    with pytest.raises(MetadataError, match="extraMetadata is a list"):
        decode_commit_summary("commit", b'{"extraMetadata": [1]}')


def test_wrong_record_kind_and_state_raise() -> None:
    buf = io.BytesIO()  # a valid container holding a record we do not model
    fastavro.writer(buf, {"type": "record", "name": "x.Other", "fields": [{"name": "a", "type": "int"}]}, [{"a": 1}])
    foreign = buf.getvalue()
    with pytest.raises(MetadataError, match=r"compaction instant \(REQUESTED\).*x\.Other"):
        decode_instant_metadata("compaction", "REQUESTED", foreign)
    assert decode_instant_metadata("indexing", "COMPLETED", foreign) == {"a": 1}
    with pytest.raises(MetadataError, match="unknown state"):
        decode_instant_metadata("commit", "DONE", b"")


def test_encoding_errors_raise_metadata_error() -> None:
    with pytest.raises(MetadataError, match="HoodieWriteStat"):
        WriteStat(num_writes="many").to_avro_bytes()  # type: ignore[arg-type]
    with pytest.raises(MetadataError, match="HoodieRollbackMetadata"):
        RollbackMetadata(start_rollback_time=None).to_avro_bytes()  # type: ignore[arg-type]


def test_helpers() -> None:
    old_plan = CleanerPlan(policy="KEEP_LATEST_COMMITS", files_to_be_deleted_per_partition={"p": ["a", "b"]})
    assert old_plan.files_to_delete() == {"p": ["a", "b"]}
    assert SAMPLES[14].files_to_delete() == {"p": ["/t/p/a.parquet"]}
    assert SAMPLES[16].deleted_files() == {"p": ["a"]}
    meta = CommitMetadata.from_write_stats(
        [WriteStat(file_id="a", partition_path="x"), WriteStat(file_id="b", partition_path="y"),
         WriteStat(file_id="c", partition_path="x")],
        operation_type="INSERT", schema="S", extra_metadata={"k": "v"},
    )
    assert meta.partitions() == ["x", "y"] and meta.schema == "S" and meta.extra_metadata == {"k": "v", "schema": "S"}
    assert meta.partition_file_ids() == {"x": {"a", "c"}, "y": {"b"}}
    assert meta.compacted is False and meta.version == 1
    assert CommitMetadata().schema is None and list(CommitMetadata().write_stats()) == []
    assert SAMPLES[3].replaced_file_groups() == {("p=1", "old-0"), ("p=1", "old2-0")}


def test_hudi_rs_reads_commits_we_encode(tables: dict[str, pathlib.Path], tmp_path: pathlib.Path) -> None:
    """Re-encode every completed commit of a Hudi table with our writer; hudi-rs reads the same rows."""
    import shutil

    import hudi  # hudi-rs 0.5.0 is a test dependency: never skip this check

    for rel in ("sample_table/cow/v9_txns_simple_nometa.zip", "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"):
        table = pathlib.Path(shutil.copytree(tables[rel], tmp_path / rel.replace("/", "_")))

        def snapshot() -> tuple[int, str]:
            t = hudi.HudiTableBuilder.from_base_uri(str(table)).build()
            batches = t.read()
            return sum(b.num_rows for b in batches), t.get_schema_in_avro_str()

        before = snapshot()
        rewritten = 0
        for action, state, path in instant_files(table):
            if state == "COMPLETED" and action in ("commit", "deltacommit", "replacecommit"):
                path.write_bytes(decode_instant_metadata(action, state, path.read_bytes()).to_avro_bytes())
                rewritten += 1
        assert rewritten > 0
        assert snapshot() == before
