"""Schema and column-family evolution: what is in effect at an instant, and applying an ALTER.

**Readers trust the timeline.** The schema in effect at a snapshot is the ``schema`` recorded by the
latest completed commit (by completion time) at or before it — what Hudi's own readers do — else
the create schema. The column families in effect are recorded the same way, under
:data:`FAMILIES_KEY` in the commit's ``extraMetadata``, by every ALTER and by pyhudi's writes, so
the latest commit answers both questions; commits without the key (older writers) are skipped, and
a table whose ``hoodie.properties`` declares no family is a plain table (one default family).

**An ALTER is a commit.** :func:`alter_table` holds the timeline lock for the whole change, so
ALTERs serialise and a concurrent writer cannot complete in between:

1. repair ``hoodie.properties`` if a previous ALTER died after its instant completed (below);
2. validate (:func:`pyhudi.config.alter.plan_alter`) — a failure changes nothing;
3. record a completed ``deltacommit`` with ``operationType=ALTER_SCHEMA``, no write stats and
   ``extraMetadata`` = the new ``schema``, the new and previous families and the property edits —
   from here on every reader and writer sees the new schema and families;
4. apply the property edits to ``hoodie.properties`` (crash-safe backup → rewrite → verify).

A crash between 3 and 4 leaves ``hoodie.properties`` one ALTER behind the timeline; the next ALTER
(or :func:`sync_properties`) replays the edits recorded in the instant. A crash before 3 leaves a
pending instant with no files, which the failed-write rollback removes. Writers that read the
schema before an ALTER completed are refused at commit (:func:`check_schema_unchanged`), so a
commit never records a stale schema.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

import pyarrow as pa

from pyhudi.config import table as tc
from pyhudi.config.concurrency import HEARTBEAT_INTERVAL_MS
from pyhudi.config.families import (
    ColumnFamily,
    default_family,
    families_from_properties,
    family_properties,
    parse_family_value,
)
from pyhudi.errors import ColumnFamilyError, CommitConflictError, FileNameError, MetadataError, SchemaError
from pyhudi.schema import META_FIELDS, arrow_schema_from_avro, avro_schema_json
from pyhudi.storage.fs import Storage
from pyhudi.storage.naming import parse_data_file_name
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.metadata_base import SCHEMA_KEY
from pyhudi.timeline.timeline import COMMIT_ACTIONS, Timeline
from pyhudi.value import Value

if TYPE_CHECKING:
    from pyhudi.config.alter import AlterPlan

ALTER_OPERATION = "ALTER_SCHEMA"
SERVICE_OPERATIONS = frozenset({"COMPACT", "LOG_COMPACT", "CLUSTER"})
"""Operation types of table-service commits: they rewrite data, never the schema or the families."""
"""``operationType`` of an ALTER commit (Hudi's WriteOperationType for schema changes)."""
FAMILIES_KEY = "pyhudi.column.families"
"""extraMetadata key: JSON ``{"<family>": "<c1,c2;ordering>"}`` of the families in effect."""
PREVIOUS_FAMILIES_KEY = "pyhudi.column.families.previous"
"""extraMetadata key of an ALTER: the families in effect before it."""
PROPERTY_EDITS_KEY = "pyhudi.alter.properties"
"""extraMetadata key of an ALTER: JSON ``{"set": {...}, "unset": [...]}`` for hoodie.properties."""


class InstantSchema(Value):
    """What one completed commit recorded about the table's shape (None = not recorded)."""

    schema: str | None
    families: str | None
    previous_families: str | None
    operation: str | None
    property_edits: str | None

    def __init__(self, schema: str | None, families: str | None, previous_families: str | None,
                 operation: str | None, property_edits: str | None) -> None:
        self._set(schema=schema, families=families, previous_families=previous_families, operation=operation,
                  property_edits=property_edits)


_PARSED_SCHEMAS: dict[str, pa.Schema] = {}
"""Recorded Avro schema JSON -> table schema, for the whole process (a ``pa.Schema`` is
immutable: handles share it). Emptied when it reaches :data:`_PARSED_SCHEMAS_MAX` entries."""
_PARSED_SCHEMAS_MAX = 64


class SchemaHistory:
    """Reads the schema and families recorded on a timeline; decoded instants are cached.

    Completed instants never change, so one cache per table handle is safe across reloads.
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str | None], InstantSchema] = {}
        self._schemas: dict[str, pa.Schema] = {}  # recorded Avro schema JSON -> table schema
        self._families: dict[str, dict[str, ColumnFamily]] = {}  # recorded families JSON -> families
        self._archived_added: tuple[tuple[int, str | None], dict[str, str]] | None = None

    def _schema(self, recorded: str) -> pa.Schema:
        """The table schema a recorded Avro schema spells (parsed once per handle: every write
        needs it twice, and a wide schema takes milliseconds to convert — once per process,
        too: a handle opened per write finds it in :data:`_PARSED_SCHEMAS`)."""
        found = self._schemas.get(recorded)
        if found is None:
            found = _PARSED_SCHEMAS.get(recorded)
            if found is None:
                if len(_PARSED_SCHEMAS) >= _PARSED_SCHEMAS_MAX:
                    _PARSED_SCHEMAS.clear()
                found = _PARSED_SCHEMAS[recorded] = _without_meta(arrow_schema_from_avro(recorded))
            self._schemas[recorded] = found
        return found

    def _parsed_families(self, recorded: str) -> dict[str, ColumnFamily]:
        found = self._families.get(recorded)
        if found is None:
            found = self._families[recorded] = families_from_json(recorded)
        return dict(found)

    def of(self, timeline: Timeline, instant: Instant) -> InstantSchema:
        key = (instant.requested_time, instant.completion_time)
        found = self._cache.get(key)
        if found is None:
            operation, extra = timeline.read_commit_summary(instant)
            found = InstantSchema(
                extra.get(SCHEMA_KEY), extra.get(FAMILIES_KEY), extra.get(PREVIOUS_FAMILIES_KEY),
                operation, extra.get(PROPERTY_EDITS_KEY),
            )
            self._cache[key] = found
        return found

    @staticmethod
    def commits(timeline: Timeline, as_of: str | None = None) -> list[Instant]:
        """Completed commits in completion order; the archived ones too when no active commit
        completed by ``as_of`` (time travel into the archived range)."""
        done = [i for i in timeline.completed() if i.action in COMMIT_ACTIONS]
        if as_of is not None and not any(i.sort_time <= as_of for i in done) and hasattr(timeline, "archived"):
            done = [i for i in timeline.completed_with_archived() if i.action in COMMIT_ACTIONS]
        return sorted(done, key=lambda i: (i.sort_time, i.requested_time))

    @staticmethod
    def _with_archived(timeline: Timeline, commits: list[Instant]) -> list[Instant]:
        """Every commit, archived ones included — searched only when the active ones recorded no
        answer (archival may have moved the last write or ALTER away, leaving only services)."""
        if not hasattr(timeline, "completed_with_archived"):
            return []
        done = [i for i in timeline.completed_with_archived() if i.action in COMMIT_ACTIONS]
        if len(done) == len(commits):
            return []
        return sorted(done, key=lambda i: (i.sort_time, i.requested_time))

    @classmethod
    def _searched(cls, timeline: Timeline, commits: list[Instant]) -> Iterator[list[Instant]]:
        """The active commits, then (only if asked for: a generator) every commit with the
        archived ones — so a write whose answer is on the active timeline never loads the archive."""
        yield commits
        yield cls._with_archived(timeline, commits)

    def schema_at(self, timeline: Timeline, config: tc.TableConfig, as_of: str | None = None) -> pa.Schema:
        """The table schema (no meta columns) in effect at ``as_of`` (None = latest).

        Table services (compaction, clustering) record the schema they read, as Hudi does, but
        never change it: an ALTER that completed while one ran stays in effect, so their commits
        are passed over while a write or ALTER recorded a schema."""
        commits = self.commits(timeline, as_of)
        for searched in self._searched(timeline, commits):
            for instant in reversed(_until(searched, as_of)):
                info = self.of(timeline, instant)
                if info.schema and info.operation not in SERVICE_OPERATIONS:
                    return self._schema(info.schema)
        create = config.get(tc.CREATE_SCHEMA)
        if create:
            return self._schema(create)
        for instant in commits:  # a table written before as_of had any commit: its first schema
            recorded = self.of(timeline, instant).schema
            if recorded:
                return self._schema(recorded)
        raise SchemaError(f"table {config.name!r} has no schema yet (no commits and no {tc.CREATE_SCHEMA.key})")

    def declared_families_at(self, timeline: Timeline, config: tc.TableConfig,
                             as_of: str | None = None) -> dict[str, ColumnFamily]:
        """The declared column families in effect at ``as_of``; empty for a plain table."""
        if not config.column_families:
            return {}  # families are never added to a plain table, so none were ever in effect
        commits = self.commits(timeline, as_of)
        for searched in self._searched(timeline, commits):
            for instant in reversed(_until(searched, as_of)):
                recorded = self.of(timeline, instant).families
                if recorded is not None:
                    return self._parsed_families(recorded)
        before = _until(commits, as_of)
        for instant in commits[len(before):]:  # as_of precedes every recording commit
            info = self.of(timeline, instant)
            if info.families is not None:
                return self._parsed_families(info.previous_families or info.families)
        return config.column_families

    def families_at(self, timeline: Timeline, config: tc.TableConfig, as_of: str | None = None,
                    schema: pa.Schema | None = None) -> dict[str, ColumnFamily]:
        """The families data is read and written in at ``as_of``: declared ones, or the default family."""
        declared = self.declared_families_at(timeline, config, as_of)
        if declared:
            return declared
        schema = schema if schema is not None else self.schema_at(timeline, config, as_of)
        family = default_family(schema.names, config.record_key_fields, config.ordering_field)
        return {family.name: family}

    def families_added(self, timeline: Timeline) -> dict[str, str]:
        """Families an ALTER added, by name: the completion time of that ALTER. A full-row base
        file written before a family existed holds none of its records (DESIGN §4: a family's
        base is its own or a newer full-row file — newer than the family, too).

        Archival moves ALTERs off the active timeline, but the full-row files older than them
        stay until a clean: so the archived ALTERs count too, searched once per archive state
        (a long history is not walked again on every read)."""
        added = self._archived_families_added(timeline)
        added.update(self._added_by(timeline, self.commits(timeline)))
        return added

    def _added_by(self, timeline: Timeline, commits: list[Instant]) -> dict[str, str]:
        added: dict[str, str] = {}
        for instant in commits:
            info = self.of(timeline, instant)
            if info.operation != ALTER_OPERATION or info.families is None:
                continue
            before = set(self._parsed_families(info.previous_families)) if info.previous_families else set()
            for name in self._parsed_families(info.families):
                if name not in before:
                    added[name] = instant.completion_time or instant.requested_time
        return added

    def _archived_families_added(self, timeline: Timeline) -> dict[str, str]:
        """:meth:`families_added` of the archived commits alone (empty without an archive)."""
        if not getattr(timeline, "has_archive", lambda: False)():
            return {}
        archived = timeline.archived().instants
        state = (len(archived), archived[-1].requested_time if archived else None)
        if self._archived_added is None or self._archived_added[0] != state:
            active = {i.requested_time for i in timeline.completed()}
            commits = sorted((i for i in archived if i.action in COMMIT_ACTIONS and i.requested_time not in active),
                             key=lambda i: (i.sort_time, i.requested_time))
            self._archived_added = (state, self._added_by(timeline, commits))
        return dict(self._archived_added[1])

    def latest_alter(self, timeline: Timeline) -> tuple[Instant, InstantSchema] | None:
        """The last completed ALTER commit recorded by pyhudi, if any."""
        for instant in reversed(self.commits(timeline)):
            info = self.of(timeline, instant)
            if info.operation == ALTER_OPERATION and info.property_edits is not None:
                return instant, info
        return None


def _until(commits: list[Instant], as_of: str | None) -> list[Instant]:
    return commits if as_of is None else [i for i in commits if i.sort_time <= as_of]


def _without_meta(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in META_FIELDS])


def families_to_json(families: Mapping[str, ColumnFamily]) -> str:
    return json.dumps({f.name: f.property_value for f in families.values() if not f.is_default},
                      separators=(",", ":"))


def families_from_json(text: str) -> dict[str, ColumnFamily]:
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise MetadataError(f"{FAMILIES_KEY} is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise MetadataError(f"{FAMILIES_KEY} must be a JSON object, got {text[:60]!r}")
    return {name: parse_family_value(name, value) for name, value in raw.items()}


def commit_extra_metadata(families: Mapping[str, ColumnFamily]) -> dict[str, str]:
    """extraMetadata a writer records beside the schema: the declared families (none for plain tables)."""
    declared = {n: f for n, f in families.items() if not f.is_default}
    return {FAMILIES_KEY: families_to_json(declared)} if declared else {}


# ---------------------------------------------------------------------------------------- writers
def check_schema_unchanged(history: SchemaHistory, timeline: Timeline, config: tc.TableConfig,
                           schema: pa.Schema, families: Mapping[str, ColumnFamily]) -> None:
    """Refuse to complete a write whose schema/families were read before an ALTER completed.

    Call with the timeline lock held on a freshly listed timeline (``Timeline.complete``'s
    precondition), so no ALTER can complete between the check and the commit.
    """
    current_schema = history.schema_at(timeline, config)
    current = history.families_at(timeline, config, None, current_schema)
    if current_schema != schema or current != dict(families):
        last = history.latest_alter(timeline)
        by = f" by ALTER instant {last[0].requested_time}" if last else ""
        raise CommitConflictError(
            f"the table schema or column families changed{by} while this write was running; the write "
            "was prepared for the old schema and is rolled back: retry it"
        )


# ---------------------------------------------------------------------------------------- ALTER
def alter_table(table: Any, set_properties: Mapping[str, Any] | None = None,
                unset_properties: Iterable[str] | str | None = None,
                new_columns: Mapping[str, Any] | pa.Schema | None = None) -> tuple[str | None, tc.TableConfig]:
    """Validate and apply an ALTER; returns (ALTER instant or None, the new table config)."""
    from pyhudi.config.alter import plan_alter  # (ALTERs only: a read imports less, issue 15)

    history: SchemaHistory = table.history
    storage: Storage = table.storage
    timeline = table.active_timeline()
    with timeline.lock:
        timeline.reload()
        config = sync_properties(storage, timeline, history)
        schema = history.schema_at(timeline, config)
        families = history.declared_families_at(timeline, config)
        plan = plan_alter(config, schema, families, set_properties, unset_properties, new_columns)
        for name in plan.added:
            _check_name_unused(storage, len(config.partition_fields), name)
        unset = tuple(k for k in plan.unset_properties if k in config.props)
        instant = None
        if plan.changes_families:
            instant = _record_alter(timeline, config, plan, families, unset)
        if plan.set_properties or unset:
            config = tc.update_table_config(storage, plan.set_properties, unset)
    return instant, config


def _record_alter(timeline: Timeline, config: tc.TableConfig, plan: AlterPlan,
                  previous: Mapping[str, ColumnFamily], unset: tuple[str, ...]) -> str:
    from pyhudi.timeline.metadata import CommitMetadata  # (an ALTER writes; reads need no model)

    edits = json.dumps({"set": plan.set_properties, "unset": list(unset)}, separators=(",", ":"))
    metadata = CommitMetadata.from_write_stats(
        [], operation_type=ALTER_OPERATION, schema=avro_schema_json(plan.schema, config.name),
        extra_metadata={
            FAMILIES_KEY: families_to_json(plan.families),
            PREVIOUS_FAMILIES_KEY: families_to_json(previous),
            PROPERTY_EDITS_KEY: edits,
        },
    )
    content = metadata.to_avro_bytes()
    # a heartbeat, as every writer keeps: no concurrent writer rolls back the pending ALTER
    instant_time = timeline.new_instant_time()
    from pyhudi.timeline.heartbeat import Heartbeat

    heartbeat = Heartbeat(timeline.storage, instant_time, HEARTBEAT_INTERVAL_MS.get(config.props)).start()
    try:
        requested = timeline.create_requested(Action.DELTACOMMIT, instant_time)
        inflight = timeline.transition_to_inflight(requested, content)
        return timeline.complete(inflight, content).requested_time
    finally:
        heartbeat.stop()


def _check_name_unused(storage: Storage, partition_depth: int, name: str) -> None:
    """A dropped family's files stay until cleaned; re-adding its name would make them visible again."""
    for info in storage.walk_files(""):
        path = info.path
        if path.startswith(".hoodie/") or path.count("/") != partition_depth:
            continue
        try:
            parsed = parse_data_file_name(path.rpartition("/")[2])
        except FileNameError:
            continue
        if parsed.family == name:
            raise ColumnFamilyError(
                f"cannot add column family {name!r}: files of a dropped family of that name are still in the "
                f"table (e.g. {path}); choose another name, or add it after those files are cleaned"
            )


def sync_properties(storage: Storage, timeline: Timeline, history: SchemaHistory) -> tc.TableConfig:
    """Bring ``hoodie.properties`` up to the latest ALTER on the timeline (after a crash); returns it.

    Call with the timeline lock held. Replays the property edits the ALTER recorded when the
    families in ``hoodie.properties`` differ from the ones that ALTER put in effect.
    """
    config = tc.load_table_config(storage)
    latest = history.latest_alter(timeline)
    if latest is None:
        return config
    _, info = latest
    expected = family_properties(families_from_json(info.families or "{}"))
    current = family_properties(families_from_properties(config.props))
    if expected == current:
        return config
    edits = json.loads(info.property_edits or "{}")
    stale = [k for k in config.props if k.startswith("hoodie.colFamily.") or k.startswith("hoodie.columnFamily.")]
    unset = sorted(set(edits.get("unset", [])) | {k for k in stale if k not in expected})
    return tc.update_table_config(storage, {**edits.get("set", {}), **expected}, [k for k in unset if k in config.props])


__all__ = [
    "ALTER_OPERATION",
    "FAMILIES_KEY",
    "PREVIOUS_FAMILIES_KEY",
    "PROPERTY_EDITS_KEY",
    "SchemaHistory",
    "alter_table",
    "check_schema_unchanged",
    "commit_extra_metadata",
    "families_from_json",
    "families_to_json",
    "sync_properties",
]
