"""Read tasks: the picklable unit of read work — one file group's families, merged and joined.

A :class:`ReadTask` holds only plain values (a :class:`~pyhudi.storage.fs.Storage`, file slices,
schemas, filters, the visible instants), so the local engine and Spark executors run the same
code. Running it streams record batches of exactly ``settings.output`` schema: family readers
(:mod:`pyhudi.read.family_reader`) → row join (:mod:`pyhudi.read.row_reader`) → exact filters →
projection. Before reading data, the task opens the base files' footers to skip what statistics
prove cannot match (:mod:`pyhudi.read.pruning`), and the base files of families read only for
their keys whose keys another family already proves (equal key fingerprints) — and their log
blocks too once a read found every key of those blocks in their base (a merge of that family, or
this join; :mod:`pyhudi.read.row_existence`). Footers, log block layouts and these verdicts learnt by earlier scans come from the
process's metadata cache (:mod:`pyhudi.read.metadata_cache`), so a family proven redundant before
is not even opened. A task left with one base file read as it is (no merge, no join, nothing
that needs record keys) reads it without its key column (``_keyless``). Rows of a table that
drops its partition columns from data files get them from the partition path
(``partition_values``). A task may cover one key range of its file group (``key_range``,
:mod:`pyhudi.read.split`). Integer record keys are read as key codes when every input allows it
(:mod:`pyhudi.read.keys`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pyarrow as pa

from pyhudi.fsview.view import FileSlice, Visibility
from pyhudi.lazy import pc
from pyhudi.read.damage import blame, is_decode_error
from pyhudi.read.family_reader import FamilyScan, OpenedBase, base_input, file_key, read_family, slice_inputs
from pyhudi.read.filters import Filter, filter_table
from pyhudi.read.keys import text_keys
from pyhudi.read.merge import columns_of
from pyhudi.read.metadata_cache import METADATA_CACHE, FileKey
from pyhudi.read.engine_recipe import engine_recipe
from pyhudi.read.positions import positional_stream
from pyhudi.read.pruning import KeyRange, excluded_key_ranges
from pyhudi.read.replay import MergeRecipe, Recipe, recipe_of, replay
from pyhudi.read.row_existence import key_only, read_by_another_family, redundant_families
from pyhudi.read.row_reader import KEY, PARTITION_PATH, RECORD_KEY, join_streams
from pyhudi.read.lockstep import LockstepInput, lockstep_key, removes_rows
from pyhudi.read.sources import KeySpec, ParquetInput, Prefilter, ReadSpec
from pyhudi.schema import META_FIELDS
from pyhudi.storage.fs import Storage
from pyhudi.value import Record, Value

DEFAULT_BATCH_SIZE = 16384
"""Rows per batch of a streaming scan: a scan holds about one batch per input and family, so
this bounds its memory (16k rows x 100 double columns ≈ 13 MB per batch)."""
READ_BATCH_SIZE = 65536
_WHOLE_INPUT = 1 << 62  # (a batch size no input reaches)
"""Rows per batch when the whole result is collected anyway (``Table.read``): fewer, larger
batches cost less per row."""
_RECIPES_KEPT = 4
"""Recipes a task keeps (one per settings it ran with: a read on one thread or several, ...)."""


class TaskSettings(Value):
    """What every task of one scan shares."""

    table_schema: pa.Schema
    output: pa.Schema
    keys: KeySpec
    visibility: Visibility
    filters: tuple[Filter, ...] = ()
    key_filters: tuple[Filter, ...] = ()
    read_optimized: bool = False
    incremental: tuple[str, ...] | None = None  # instants whose writes an incremental query returns
    batch_size: int = DEFAULT_BATCH_SIZE
    strategy: str = "auto"
    decode_threads: bool = True  # Parquet decoding on Arrow's thread pool (off when tasks run in parallel)
    memory_map: bool = False  # map local base files (collected reads only: see family_reader._memory_map)
    skip_corrupt_blocks: bool = False  # warn about corrupt committed log blocks instead of failing (read.damage)

    def __init__(self, table_schema: pa.Schema, output: pa.Schema, keys: KeySpec, visibility: Visibility,
                 filters: tuple[Filter, ...] = (), key_filters: tuple[Filter, ...] = (), read_optimized: bool = False,
                 incremental: tuple[str, ...] | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 strategy: str = "auto", decode_threads: bool = True, memory_map: bool = False,
                 skip_corrupt_blocks: bool = False) -> None:
        self._set(table_schema=table_schema, output=output, keys=keys, visibility=visibility, filters=filters,
                  key_filters=key_filters, read_optimized=read_optimized, incremental=incremental,
                  batch_size=batch_size, strategy=strategy, decode_threads=decode_threads, memory_map=memory_map,
                  skip_corrupt_blocks=skip_corrupt_blocks)


class FamilyPart(Record):
    """One family of the file group: what to read of it and its latest file slice."""

    scan: FamilyScan
    file_slice: FileSlice
    own_columns: tuple[str, ...] = ()

    def __init__(self, scan: FamilyScan, file_slice: FileSlice, own_columns: tuple[str, ...] = ()) -> None:
        self._set(scan=scan, file_slice=file_slice, own_columns=own_columns)

    @property
    def base_is_final(self) -> bool:
        """No log file applies on top of the base file (base values are the row's values)."""
        return not self.file_slice.log_files


class ReadTask(Record):
    """Read one file group: ``batches()`` streams its merged, filtered rows; ``run()`` collects them."""

    _value_uncompared = ("metrics", "replays")

    storage: Storage
    partition_path: str
    file_id: str
    families: list[FamilyPart]
    settings: TaskSettings
    metrics: dict
    """Counters of the last run (strategies, row groups read / skipped, skipped by statistics)."""
    key_range: tuple[str | None, str | None] | None = None
    """The split of the file group this task reads: record keys in ``[low, high)`` (None: all)."""
    partition_values: dict[str, pa.Scalar] | None = None
    """Values of partition columns the data files do not store (rebuilt from the partition path)."""
    replays: list
    """The reads of collected positional merges (:mod:`pyhudi.read.replay`), shared by the copies
    of this task a kept scan plan hands out: (what the copy ran with, recipe), the last few."""

    def __init__(self, storage: Storage, partition_path: str, file_id: str, families: list[FamilyPart],
                 settings: TaskSettings, metrics: dict | None = None,
                 key_range: tuple[str | None, str | None] | None = None,
                 partition_values: dict[str, pa.Scalar] | None = None, replays: list | None = None) -> None:
        if settings.strategy == "auto":
            families = _shared_bases(families)
        self._set(storage=storage, partition_path=partition_path, file_id=file_id, families=families,
                  settings=settings, metrics={} if metrics is None else metrics, key_range=key_range,
                  partition_values=partition_values, replays=[] if replays is None else replays)

    def __repr__(self) -> str:
        split = f", keys={list(self.key_range)}" if self.key_range is not None else ""
        return (f"ReadTask({self.partition_path!r}, {self.file_id!r}, "
                f"families={[f.scan.family for f in self.families]}{split})")

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            with ExitStack() as files:
                for table in self._tables(files):
                    yield from table.combine_chunks().to_batches(max_chunksize=self.settings.batch_size)
        except Exception as exc:
            self._raise_corrupt(exc)
            raise

    def run(self) -> pa.Table:
        output = self.settings.output
        if not len(output):  # a count: batches keep the row counts of column-less tables
            return pa.Table.from_batches(list(self.batches()), schema=output)
        self._recipe = None
        try:
            with ExitStack() as files:
                tables = self._replayed(files)
                if tables is None:
                    tables = list(self._tables(files))
                    if self._recipe is not None:  # (kept once the full read succeeded)
                        counted = tuple((k, v) for k, v in self.metrics.items() if not k.startswith("positions_"))
                        self._keep_recipe(self._recipe.with_metrics(counted))  # (not what it learnt)
        except Exception as exc:
            self._raise_corrupt(exc)
            raise
        return pa.concat_tables(tables) if tables else output.empty_table()

    def _replay_key(self) -> tuple:
        return self.settings, self.key_range, self.families, self.partition_values

    def _keep_recipe(self, recipe: Recipe) -> None:
        key = self._replay_key()
        kept = [entry for entry in self.replays if entry[0] != key][-(_RECIPES_KEPT - 1):]
        self.replays[:] = [*kept, (key, recipe)]

    def _replayed(self, files: ExitStack) -> list[pa.Table] | None:
        """The rows by the kept recipe of an earlier run of this task (None: none kept, or the
        metadata cache no longer holds what it needs)."""
        if not self.replays or not METADATA_CACHE.max_bytes:
            return None
        key = self._replay_key()  # (copies of this task may run with other settings or key ranges)
        recipe = next((r for k, r in self.replays if k == key), None)
        if recipe is None:
            return None
        table = replay(recipe, self.storage, files)
        if table is None:
            return None
        self.metrics.clear()
        self.metrics.update(recipe.metrics)
        self.metrics["replayed"] = 1
        settings = self.settings
        table = self._output(table) if table.num_rows else None
        return [table] if table is not None and table.num_rows else []

    def _raise_corrupt(self, exc: Exception) -> None:
        """A decode error from damaged bytes becomes a CorruptFileError naming the damaged file."""
        if not is_decode_error(exc):
            return
        slices = [part.file_slice for part in self.families]
        relpaths = dict.fromkeys(f.relpath for s in slices for f in ((s.base_file,) if s.base_file else ()))
        relpaths.update(dict.fromkeys(lf.relpath for s in slices for lf in s.log_files))
        error = blame(self.storage, relpaths, exc)
        if error is not None:
            raise error from exc

    # ------------------------------------------------------------------ body
    def _kept(self, files: ExitStack) -> tuple | None:
        """The task's inputs after its reductions, family by family — (kept, prefilter, redundant,
        anchor_of, opened) — or None when statistics prove that no row of the file group matches.
        Opens footers and log block headers; reads no data column."""
        settings = self.settings
        opened = self._open_bases(files)
        excluded = self._excluded_ranges(opened)
        if excluded is None:
            self.metrics["skipped_by_statistics"] = 1
            return None
        prefilter = Prefilter(settings.table_schema, list(settings.key_filters), excluded, self.key_range)
        sorted_cache: dict = {}
        # Parquet inputs are built to read key codes when the table's key allows it, and switched
        # back to string keys unless every input can supply codes (see _integer_keys)
        keys = settings.keys if settings.strategy == "auto" else settings.keys.replace(integer=None)

        def spec_of(part: FamilyPart) -> ReadSpec:
            return ReadSpec(list(part.scan.fields), part.scan.ordering_field, keys, prefilter,
                            settings.decode_threads)

        logs_opened: dict[str, list] = {}

        def inputs_of(part: FamilyPart, with_base: bool) -> list:
            return slice_inputs(self.storage, part.file_slice, spec_of(part), settings.table_schema,
                                settings.visibility, files, base_only=settings.read_optimized, opened=opened,
                                sorted_cache=sorted_cache, with_base=with_base,
                                skip_corrupt=settings.skip_corrupt_blocks, logs_opened=logs_opened,
                                # (a streaming read maps no log file: the mapped pages it touched would stay
                                # resident, the whole block by the end; see data_block._parquet_over. A
                                # collected read maps them whatever share of the columns it reads: an
                                # unmapped block is a Python file object to Arrow, a call and two copies
                                # per column chunk — unlike a base file, read natively)
                                map_logs=settings.memory_map)

        # key-only families with a base file are opened (footer, key fingerprint) but their base
        # input is built only if that base may add rows (see pyhudi.read.row_existence)
        deferred = [key_only(part) and part.file_slice.base_file is not None for part in self.families]
        family_inputs = [inputs_of(part, not later) if not later or part.file_slice.log_files else []
                         for part, later in zip(self.families, deferred)]
        redundant, anchor_of = redundant_families(self.families, self.settings.strategy, family_inputs, opened, deferred)
        redundant.update(read_by_another_family(self.families, self.settings.strategy, family_inputs, deferred,
                                                prefilter, self.metrics))
        self._count("families_skipped", sum(1 for trim in redundant.values() if trim == "all"))
        self._count("bases_skipped", sum(1 for trim in redundant.values() if trim == "base"))
        kept_parts, kept_inputs = [], []
        for i, (part, inputs, later) in enumerate(zip(self.families, family_inputs, deferred)):
            trim = redundant.get(i)
            if trim == "all":
                continue
            if later and trim is None:
                base = base_input(self.storage, part.file_slice, spec_of(part), settings.table_schema, files,
                                  opened, sorted_cache)
                inputs = [base, *inputs]
            kept_parts.append(part)
            kept_inputs.append(inputs)
        kept = list(zip([p.scan for p in kept_parts], self._integer_keys(kept_inputs)))
        for _, inputs in kept:
            for source in inputs:
                if isinstance(source, ParquetInput):
                    total = source.parquet.metadata.num_row_groups
                    self._count("row_groups", total)
                    self._count("row_groups_skipped", total - len(source.row_groups))
        kept = self._lockstep(kept)
        return kept, prefilter, redundant, anchor_of, opened

    def merge_recipe(self) -> MergeRecipe | str:
        """What this task reads when it merges by record positions (or reads its Parquet inputs as
        they are), worked out from footers and block headers without reading a data column — or
        why it does not (:func:`pyhudi.read.engine_recipe.engine_recipe`). For engines that
        execute the reads themselves (:mod:`pyhudi.spark.merge_scan`): the same decision as
        :meth:`batches`, the same checks."""
        settings = self.settings
        if settings.strategy != "auto" or settings.incremental is not None:
            return "an incremental window or a forced merge strategy"
        with ExitStack() as files:
            planned = self._kept(files)
            if planned is None:
                return "statistics prove that no row matches"
            kept, prefilter = planned[0], planned[1]
            keyless = len(kept) == 1 and self._keyless(kept, prefilter)
            return engine_recipe(kept, prefilter, keyless, settings, self.metrics)

    def _tables(self, files: ExitStack) -> Iterator[pa.Table]:
        settings = self.settings
        self.metrics.clear()
        planned = self._kept(files)
        if planned is None:
            return  # statistics prove that no row of this file group matches
        kept, prefilter, redundant, anchor_of, opened = planned
        positional = None
        if settings.strategy == "auto" and settings.incremental is None:
            positional = positional_stream(kept, prefilter, settings.batch_size, self.metrics,
                                           commit_codes=_asks_commit_codes(settings.output))
            if positional is not None:
                scan, (base, *blocks) = kept[0]
                self._recipe = recipe_of(base, blocks, list(scan.fields))
        if positional is not None:
            streams = [positional]
        elif self._keyless(kept, prefilter):
            scan, (source,) = kept[0]
            self._count("strategy.keyless", 1)
            # a collected read keeps every row anyway: one multi-threaded read of the row groups
            # (as pq.read_table) instead of a batch reader; a scan streams batch by batch
            whole = settings.memory_map
            streams = [source.plain_tables(list(scan.fields), _WHOLE_INPUT if whole else settings.batch_size)]
            self._recipe = recipe_of(source, [], list(scan.fields))  # (a base file alone replays too)
        else:
            streams = [read_family(inputs, scan, settings.batch_size, len(kept) > 1, settings.strategy, self.metrics)
                       for scan, inputs in kept]
        incremental = pa.array(settings.incremental, pa.string()) if settings.incremental is not None else None
        learning = self._blocks_to_learn(kept, redundant, anchor_of, opened, prefilter)
        coverage: dict | None = {} if learning else None
        for window in join_streams(streams, incremental, coverage, settings.visibility):
            table = self._output(window)
            if table is not None and table.num_rows:
                yield table
        for stream, anchor, blocks, base_key in learning:
            if coverage.get(stream) == {anchor}:  # every key of these blocks was found in the anchor's base
                for source in blocks:
                    METADATA_CACHE.put_block_within(source.block_key, base_key)

    def _keyless(self, kept: list[tuple[FamilyScan, list]], prefilter: Prefilter) -> bool:
        """Whether the task's rows are one base file's rows as they are: a single family with a
        single Parquet input, no soft deletes, nothing that needs record keys (no merge, join,
        key filter, split, incremental window or meta column). Its key column is not even
        decoded then."""
        if len(kept) != 1 or len(kept[0][1]) != 1 or self.settings.strategy != "auto":
            return False
        scan, (source,) = kept[0]
        if type(source) is not ParquetInput or source.soft_deletes or not prefilter.unrestricted:
            return False
        if self.settings.incremental is not None or any(f.name.startswith("_hoodie_") for f in scan.fields):
            return False
        return any(f.name in source.arrow_schema.names for f in scan.fields)

    def _blocks_to_learn(self, kept: list[tuple[FamilyScan, list]], redundant: dict[int, str],
                         anchor_of: dict[int, FileKey], opened: dict[str, OpenedBase],
                         prefilter: Prefilter) -> list[tuple[int, int, list, FileKey]]:
        """Key-only families read only for their log blocks, whose keys the join checks against
        a stream holding exactly the keys of a base file equal in keys to the family's own base:
        if every key is found there, the blocks add no row, and a later read need not open them
        (:meth:`~pyhudi.read.metadata_cache.MetadataCache.block_within`). Returns (stream,
        anchor stream, block inputs, the family's base file key) per such family."""
        if not anchor_of or not prefilter.unrestricted or self.settings.incremental is not None:
            return []
        streams = {id(scan): i for i, (scan, _) in enumerate(kept)}
        anchors = {}
        for i, (_, inputs) in enumerate(kept):
            if len(inputs) == 1 and isinstance(inputs[0], (ParquetInput, LockstepInput)):
                lead = inputs[0].lead if isinstance(inputs[0], LockstepInput) else inputs[0]
                if lead.file_key is not None and not lead.soft_deletes:
                    anchors.setdefault(lead.file_key, i)
        learning = []
        for i, anchor_key in anchor_of.items():
            part = self.families[i]
            stream = streams.get(id(part.scan))
            if redundant.get(i) != "base" or stream is None or anchor_key not in anchors:
                continue
            blocks = kept[stream][1]
            if blocks and all(b.block_key is not None and not removes_rows(b) for b in blocks):
                base_key = opened[part.file_slice.base_file.relpath].file_key
                learning.append((stream, anchors[anchor_key], blocks, base_key))
        return learning

    def _integer_keys(self, family_inputs: list[list]) -> list[list]:
        """The inputs reading integer keys instead of strings (:mod:`pyhudi.read.keys`), when the
        table's key allows it and every input of every family can supply them; else all of them
        reading string keys (families are joined by key, so they all read keys the same way).
        Parquet inputs come built for key codes (no copy when they can supply them); blocks
        decoded whole come with string keys and are converted."""
        keys = self.settings.keys
        if keys.integer is None or self.settings.strategy != "auto":
            return family_inputs
        converted = []
        for inputs in family_inputs:
            mine = [source if isinstance(source, ParquetInput) and source.supplies_codes() else source.with_keys(keys)
                    for source in inputs]
            if any(source is None for source in mine):
                strings = keys.replace(integer=None)
                return [[source.with_keys(strings) for source in inputs] for inputs in family_inputs]
            converted.append(mine)
        self._count("integer_keys", 1)
        return converted

    def _count(self, name: str, n: int) -> None:
        self.metrics[name] = self.metrics.get(name, 0) + n

    def _open_bases(self, files: ExitStack) -> dict[str, OpenedBase]:
        opened = {}
        mapped = {part.file_slice.base_file.relpath for part in self.families
                  if part.file_slice.base_file is not None and self.settings.memory_map and _reads_most(part)}
        for part in self.families:
            base = part.file_slice.base_file
            if base is not None and base.relpath not in opened:
                opened[base.relpath] = OpenedBase(self.storage, base.relpath, files, base.relpath in mapped,
                                                  file_key(self.storage, base))
        return opened

    def _lockstep(self, kept: list[tuple[FamilyScan, list]]) -> list[tuple[FamilyScan, list]]:
        """Families whose base files hold the same keys (equal key fingerprints) are read side by
        side as one wide input: keys decoded once, no join among them.

        One family of a group may also have log blocks, if none of them removes rows (no delete
        blocks, no soft deletes): its logs then merge into the wide rows, touching only its own
        columns (like a partial block) and adding rows for new keys — what the join of that
        family with the others would give, since no family loses a row. The group reads with
        that family's ordering; it leads, so its ordering column is read with the keys. When the
        blocks' record positions are known, the group merges them by position, reading no key
        (:mod:`pyhudi.read.positions`).

        So do families of a file group without a base file whose slices start with the same
        Parquet block (the default insert's full-row log file, read for each family's columns):
        the same block holds the same keys in the same order.
        """
        if self.settings.strategy != "auto" or len(kept) < 2:
            return kept
        groups: dict = {}
        out: list = []
        for scan, inputs in kept:
            key = lockstep_key(scan, inputs)
            if key is None:
                out.append((scan, inputs))
                continue
            groups.setdefault(key, []).append((scan, inputs))
        for members in groups.values():
            with_logs = [m for m in members if len(m[1]) > 1]
            out.extend(with_logs[1:])  # one family with logs per group; the others are joined
            members = [*with_logs[:1], *(m for m in members if len(m[1]) == 1)]  # it leads
            if len(members) == 1:
                out.extend(members)
                continue
            lead_scan, lead_inputs = members[0]
            combined = LockstepInput(lead_inputs[0], [inputs[0] for _, inputs in members[1:]])
            scan = FamilyScan("+".join(s.family or "" for s, _ in members), tuple(combined.spec.fields),
                              lead_scan.event_time, lead_scan.ordering_field, lead_scan.ordering_type)
            self._count("families_lockstep", len(members))
            out.append((scan, [combined, *lead_inputs[1:]]))
        return out

    def _excluded_ranges(self, opened: dict[str, OpenedBase]) -> list[KeyRange] | None:
        """Key ranges no matching row can have (None: the whole file group), from families
        whose base values are final and the null-rejecting filters on their own columns."""
        settings = self.settings
        excluded: list[KeyRange] = []
        for part in self.families:
            own = [f for f in settings.filters if f.column in part.own_columns]
            if not own:
                continue
            if part.file_slice.is_empty or (settings.read_optimized and part.file_slice.base_file is None):
                if any(f.op != "is null" for f in own):
                    return None  # the family has no rows here: its columns are all null
                continue
            base = part.file_slice.base_file
            if base is None or not (part.base_is_final or settings.read_optimized):
                continue
            parquet = opened[base.relpath].parquet
            key_column = settings.keys.stats_column(parquet.metadata.schema.names, settings.table_schema)
            ranges = excluded_key_ranges(parquet.metadata, own, settings.table_schema, key_column or "")
            if ranges is None:
                return None
            excluded.extend(ranges)
        return excluded

    def _with_partition_values(self, window: pa.Table) -> pa.Table:
        """The window with the partition columns the files do not store, from the path (the same
        value on every row of the file group)."""
        wanted = set(self.settings.output.names) | {f.column for f in self.settings.filters}
        for name, value in self.partition_values.items():
            if name not in wanted:
                continue
            column = pa.repeat(value, window.num_rows)
            if name in window.column_names:
                window = window.set_column(window.column_names.index(name), pa.field(name, value.type), column)
            else:
                window = window.append_column(pa.field(name, value.type), column)
        return window

    def _output(self, window: pa.Table) -> pa.Table | None:
        """A joined window as output rows: filtered, projected and cast to ``settings.output``."""
        output = self.settings.output
        names = window.column_names
        if RECORD_KEY in output.names and RECORD_KEY in names:  # tables without meta fields
            window = window.set_column(names.index(RECORD_KEY), RECORD_KEY,
                                       pc.coalesce(window.column(RECORD_KEY), text_keys(window.column(KEY))))
        if PARTITION_PATH in output.names and PARTITION_PATH in names:
            window = window.set_column(names.index(PARTITION_PATH), PARTITION_PATH,
                                       pc.fill_null(window.column(PARTITION_PATH), self.partition_path))
        if self.partition_values:
            window = self._with_partition_values(window)
        if self.settings.filters:
            for f in self.settings.filters:
                if f.column not in set(window.column_names):  # a family with no rows in this file group
                    field = self.settings.table_schema.field(f.column)
                    window = window.append_column(field, pa.nulls(window.num_rows, field.type))
            window = filter_table(window, self.settings.filters, self.settings.table_schema)
            if not window.num_rows:
                return None
        positions = {name: i for i, name in enumerate(window.column_names)}
        at = [positions.get(name) for name in output.names]
        if at and None not in at:
            selected = window.select(at)
            if selected.schema.equals(output, check_metadata=False):
                return selected
            if all(a.type == b.type for a, b in zip(selected.schema, output)):  # (nullability differs)
                return pa.Table.from_arrays(selected.columns, schema=output)
        present = columns_of(window)
        arrays = []
        for f in output:
            column = present.get(f.name)
            if column is not None:
                arrays.append(column.cast(f.type) if column.type != f.type else column)
            else:
                arrays.append(pa.nulls(window.num_rows, f.type))
        if not arrays:  # no columns asked for (a count): rows without columns
            return window.select([])
        return pa.Table.from_arrays(arrays, schema=output)


def _shared_bases(parts: list[FamilyPart]) -> list[FamilyPart]:
    """Families whose slices are one and the same base file with no log file (a full-row base
    file of a full compaction, DESIGN §4) read as one family: the file is read once, for the
    union of their columns — not once per family side by side. Nothing merges in such a slice,
    so the families' orderings do not matter. So are families whose slices are the same full-row
    files with full-row logs (docs/format.md) and that merge alike: the same versions win in each."""
    by_file: dict[tuple, list[int]] = {}
    for i, part in enumerate(parts):
        key = _shared_slice_key(part)
        if key is not None:
            by_file.setdefault(key, []).append(i)
    shared = [members for members in by_file.values() if len(members) > 1]
    if not shared:
        return parts
    out = list(parts)
    for members in shared:
        lead = parts[members[0]]
        fields = list(dict.fromkeys(f for i in members for f in parts[i].scan.fields))
        names: dict[str, pa.Field] = {}
        for f in fields:
            names.setdefault(f.name, f)
        scan = lead.scan.replace(family="+".join(parts[i].scan.family or "" for i in members),
                       fields=tuple(names.values()))
        own = tuple(dict.fromkeys(c for i in members for c in parts[i].own_columns))
        out[members[0]] = FamilyPart(scan, lead.file_slice, own)
        for i in members[1:]:
            out[i] = None
    return [part for part in out if part is not None]


def _shared_slice_key(part: FamilyPart) -> tuple | None:
    """What families with the same slice share (see :func:`_shared_bases`), or None."""
    file_slice, scan = part.file_slice, part.scan
    base = file_slice.base_file
    if not file_slice.log_files:
        return None if base is None else (base.relpath,)
    if (base is not None and base.name.family is not None) or any(lf.name.family is not None
                                                                  for lf in file_slice.log_files):
        return None
    return (base.relpath if base is not None else None, *(lf.relpath for lf in file_slice.log_files),
            scan.event_time, scan.ordering_field, str(scan.ordering_type))


def _reads_most(part: FamilyPart) -> bool:
    """Whether a family's read takes at least half of its own columns: only then are its base
    file and log files memory-mapped in a collected read (``TaskSettings.memory_map``). Measured on Scenario W: a full read is
    5-10% cheaper mapped (no copy of the pages read), a read of 2 of 20 columns 30% cheaper
    through buffered reads (mapping, faulting in and unmapping cost more than copying the few
    pages read)."""
    own = set(part.own_columns)
    return not own or 2 * sum(f.name in own for f in part.scan.fields) >= len(own)


def _asks_commit_codes(output: pa.Schema) -> bool:
    """Whether the output takes the commit time as dictionary codes (a compaction's chunk copy:
    :mod:`pyhudi.read.commit_codes`); any other merge's strings are cast to them on output."""
    at = output.get_field_index(META_FIELDS[0])
    return at >= 0 and pa.types.is_dictionary(output.field(at).type)
