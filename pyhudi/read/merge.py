"""Merging record versions of one family into the latest state per key — vectorised.

Input: *versions* (a base file's rows, then each log block's rows in processing order), each
with a record key, a processing sequence, a delete flag, optionally an ordering value, and the
columns its block carries (a partial block carries some). Semantics, per key, in sequence order
(reference/hudi-on-disk.md "Merge rules", DESIGN §4):

- commit-time ordering: every version wins over the state before it;
- event-time ordering: a version wins if it has no ordering value (a partial block without the
  family's ordering column merges by commit time), or if its ordering value is >= the highest
  seen since the last default-ordering delete; a delete with the default ordering value
  (IntWrapper(0) / null) always wins and resets the ordering;
- a winning full record replaces the row; a winning partial record replaces its columns only;
  a winning delete removes the row (a later winning record creates it again).

All of this is computed with sorts, grouped cumulative maxima and ``reduceat`` over the whole
input — no per-record Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.read.keys import sorted_keys


@dataclass
class Versions:
    """One batch of versions that share a block: same sequence base, same kind, same columns."""

    keys: pa.Array  # record keys: strings, or the integers they spell (pyhudi.read.keys)
    data: pa.Table | None  # columns this block carries (None for deletes)
    is_delete: bool | np.ndarray  # per batch, or per row (soft deletes: _hoodie_is_deleted)
    ordering: pa.Array | None = None  # ordering values (None: block has none)
    default_delete: pa.Array | None = None  # bool per delete: default ordering value


def _cast_ordering(values: pa.Array, target: pa.DataType) -> pa.Array:
    """Ordering values of delete blocks come as Int/Long wrappers for temporal columns too."""
    if values.type == target:
        return values
    if pa.types.is_integer(values.type) and (pa.types.is_timestamp(target) or pa.types.is_date(target)):
        width = pa.int32() if pa.types.is_date32(target) else pa.int64()
        return values.cast(width).cast(target)
    return values.cast(target)


def _dense_ranks(values: pa.ChunkedArray) -> np.ndarray:
    """Rank of every value (nulls → -1), equal values equal ranks."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    uniques = pc.unique(values.drop_null() if values.null_count else values)
    uniques = uniques.take(pc.sort_indices(uniques))
    ranks = pc.index_in(values, value_set=uniques)
    return np.asarray(ranks.fill_null(-1) if ranks.null_count else ranks, dtype=np.int64)


def _grouped_exclusive_cummax(values: np.ndarray, segment_start: np.ndarray) -> np.ndarray:
    """Running max of ``values`` (>= -1) before each element, restarting at segment starts."""
    n = len(values)
    if n == 0:
        return values
    seg = np.cumsum(segment_start) - 1
    width = int(values.max()) + 2
    shifted = seg * width + (values + 1)
    inclusive = np.maximum.accumulate(shifted) - seg * width - 1
    exclusive = np.empty(n, dtype=np.int64)
    exclusive[0] = -1
    exclusive[1:] = inclusive[:-1]
    exclusive[segment_start] = -1
    return exclusive


def _group_last(mask: np.ndarray, group_starts: np.ndarray) -> np.ndarray:
    """Per group: the largest index where ``mask`` holds, or -1."""
    idx = np.where(mask, np.arange(len(mask), dtype=np.int64), -1)
    return np.maximum.reduceat(idx, group_starts) if len(idx) else idx


def merge_versions(
    batches: list[Versions], columns: list[pa.Field], event_time: bool, ordering_type: pa.DataType | None = None
) -> pa.Table:
    """The latest live row per key: a table of ``_key`` + ``columns``, sorted by key."""
    key_field = pa.field("_key", pa.string())
    out_schema = pa.schema([key_field, *columns])
    batches = [b for b in batches if len(b.keys)]
    if not batches:
        return out_schema.empty_table()
    sizes = [len(b.keys) for b in batches]
    total = sum(sizes)
    keys = pa.chunked_array([b.keys.cast(pa.string()) for b in batches], pa.string())
    block_of = np.repeat(np.arange(len(batches), dtype=np.int64), sizes)
    seq = block_of * (1 << 32) + np.concatenate([np.arange(s, dtype=np.int64) for s in sizes])
    is_delete = np.concatenate([np.broadcast_to(np.asarray(b.is_delete, dtype=bool), (len(b.keys),)) for b in batches])
    default_delete = np.concatenate(
        [np.asarray(b.default_delete.fill_null(True)) if b.default_delete is not None else np.broadcast_to(np.asarray(b.is_delete, dtype=bool), (len(b.keys),))
         for b in batches]
    ) if event_time else is_delete
    has_ord = np.repeat(np.array([b.ordering is not None for b in batches]), sizes)
    if event_time and ordering_type is not None and has_ord.any():
        ordering = pa.chunked_array(
            [(_cast_ordering(b.ordering, ordering_type) if b.ordering is not None else pa.nulls(len(b.keys), ordering_type))
             for b in batches], ordering_type)
        rank = _dense_ranks(ordering)
    else:
        rank = np.full(total, -1, dtype=np.int64)

    order = np.asarray(pc.sort_indices(pa.table({"k": keys, "s": pa.array(seq)}), sort_keys=[("k", "ascending"), ("s", "ascending")]))
    sorted_keys = keys.take(pa.array(order)).combine_chunks()
    is_delete, default_delete, has_ord, rank = is_delete[order], default_delete[order], has_ord[order], rank[order]
    new_key = np.ones(total, dtype=bool)
    if total > 1:
        new_key[1:] = np.asarray(pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, total - 1)))
    group_starts = np.flatnonzero(new_key)

    if event_time:
        segment_start = new_key | default_delete
        prev_max = _grouped_exclusive_cummax(np.where(has_ord, rank, -1), segment_start)
        wins = default_delete | ~has_ord | (prev_max < 0) | (rank >= prev_max)
    else:
        wins = np.ones(total, dtype=bool)
    group_id = np.cumsum(new_key) - 1
    last_delete = _group_last(wins & is_delete, group_starts)[group_id]
    alive = wins & ~is_delete & (np.arange(total) > last_delete)
    exists = np.logical_or.reduceat(alive, group_starts)

    arrays = [sorted_keys.take(pa.array(group_starts[exists]))]
    available = [dict(zip(b.data.column_names, b.data.columns)) if b.data is not None else {} for b in batches]
    for field in columns:
        pieces = []
        present = np.zeros(len(batches), dtype=bool)
        for i, b in enumerate(batches):
            if field.name in available[i]:
                present[i] = True
                column = available[i][field.name]
                pieces.append(column if column.type == field.type else column.cast(field.type))
            else:
                pieces.append(pa.chunked_array([pa.nulls(len(b.keys), field.type)]))
        column = pa.chunked_array([c for p in pieces for c in p.chunks], field.type).combine_chunks()
        present_rows = np.repeat(present, sizes)[order]
        chosen = _group_last(alive & present_rows, group_starts)[exists]
        taken = column.take(pa.array(order[np.maximum(chosen, 0)]))
        arrays.append(pc.if_else(pa.array(chosen >= 0), taken, pa.nulls(len(chosen), field.type)))
    return pa.Table.from_arrays(arrays, schema=out_schema)


# ------------------------------------------------------------------------------ sorted windows
def _numeric_ordering(values: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Ordering values as comparable NumPy numbers plus a validity mask.

    Integers, temporal types and booleans compare as int64, floats as float64; anything else
    (strings, decimals) as dense ranks within the window, which preserves the order.
    """
    t = values.type
    valid = np.asarray(values.is_valid()) if values.null_count else np.ones(len(values), dtype=bool)
    if pa.types.is_integer(t) or pa.types.is_temporal(t) or pa.types.is_boolean(t):
        if pa.types.is_date32(t) or pa.types.is_time32(t):
            values = values.cast(pa.int32())
        elif pa.types.is_boolean(t):
            values = values.cast(pa.int8())
        as_int = values.cast(pa.int64()) if values.type != pa.int64() else values
        return np.asarray(as_int.fill_null(0), dtype=np.int64), valid
    if pa.types.is_floating(t):
        return np.asarray(values.cast(pa.float64()).fill_null(0.0), dtype=np.float64), valid
    return _dense_ranks(values), valid


def _flags(value: bool | np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=bool), (n,))


def columns_of(data: pa.Table | None) -> dict[str, pa.ChunkedArray]:
    """Name → column, built once (``Table.column(name)`` searches the schema on every call)."""
    return dict(zip(data.column_names, data.columns)) if data is not None else {}


def _cast(column, type_: pa.DataType):
    return column if column.type == type_ else column.cast(type_)


def _project(keys: pa.Array, data: pa.Table | None, columns: list[pa.Field], out_schema: pa.Schema) -> pa.Table:
    """One piece's rows as the window result (no merge needed)."""
    arrays = [keys]
    available = columns_of(data)
    for field in columns:
        column = available.get(field.name)
        arrays.append(_cast(column, field.type) if column is not None else pa.nulls(len(keys), field.type))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def subset_positions(spine: pa.Array | pa.ChunkedArray, others: pa.ChunkedArray) -> np.ndarray | None:
    """Row of ``spine`` holding each of ``others`` (distinct keys), or None if one is missing.

    The hash table is built over the smaller side (``others``) and the spine probes it, which
    costs a third of hashing the spine; repeated ``others`` keys fail the count and return None.
    """
    if not len(others):
        return np.zeros(0, dtype=np.int64)
    reverse = pc.index_in(spine, value_set=others)
    if isinstance(reverse, pa.ChunkedArray):
        reverse = reverse.combine_chunks()
    if len(reverse) - reverse.null_count != len(others):
        return None
    rows = np.flatnonzero(np.asarray(reverse.is_valid()))
    positions = np.empty(len(others), dtype=np.int64)
    positions[np.asarray(reverse.drop_null(), dtype=np.int64)] = rows
    return positions


def _union_positions(live: list[Versions]) -> tuple[pa.Array, list[np.ndarray]]:
    """The sorted distinct keys of the window and, per piece, each row's position among them.

    Common case (updates of existing keys): every key is in the largest piece, whose keys then
    are the union — a hash lookup, no sort.
    """
    sizes = [len(p.keys) for p in live]
    spine = int(np.argmax(sizes))
    spine_keys = live[spine].keys
    others = [p.keys for i, p in enumerate(live) if i != spine]
    if others:
        found = subset_positions(spine_keys, pa.chunked_array(others, spine_keys.type))
        if found is not None:
            positions, at = [], 0
            for i, size in enumerate(sizes):
                if i == spine:
                    positions.append(np.arange(size, dtype=np.int64))
                else:
                    positions.append(found[at : at + size])
                    at += size
            return spine_keys, positions
    all_keys = pa.chunked_array([p.keys for p in live], spine_keys.type)
    union = sorted_keys(pc.unique(all_keys))
    index = np.asarray(pc.index_in(all_keys, value_set=union).combine_chunks(), dtype=np.int64)
    offsets = np.cumsum([0, *sizes])
    return union, [index[offsets[i] : offsets[i + 1]] for i in range(len(live))]


def merge_window(pieces: list[Versions | None], columns: list[pa.Field], event_time: bool,
                 ordering_type: pa.DataType | None = None) -> pa.Table:
    """Merge one key range of sorted inputs: the latest live row per key, sorted by key.

    ``pieces`` are the inputs' rows in the range, in processing order (base, then log blocks);
    each piece's keys are strictly increasing. Same semantics as :func:`merge_versions`, but the
    inputs' order is used instead of a sort: the pieces are applied one after another to a state
    per distinct key (alive, highest ordering value so far, which piece supplies each column).
    A range only one input touches is passed through without copying.
    """
    live = [p for p in pieces if p is not None and len(p.keys)]
    out_schema = pa.schema([pa.field("_key", live[0].keys.type if live else pa.string()), *columns])
    if not live:
        return out_schema.empty_table()
    if len(live) == 1 and not np.any(live[0].is_delete):
        return _project(live[0].keys, live[0].data, columns, out_schema)
    union, positions = _union_positions(live)
    n_union = len(union)
    alive = np.zeros(n_union, dtype=bool)
    use_ordering = event_time and ordering_type is not None and any(p.ordering is not None for p in live)
    if use_ordering:
        with_ordering = [p for p in live if p.ordering is not None]
        ordered = pa.chunked_array([_cast_ordering(p.ordering, ordering_type) for p in with_ordering], ordering_type)
        values, validity = _numeric_ordering(ordered)
        max_value = np.zeros(n_union, dtype=values.dtype)
        has_max = np.zeros(n_union, dtype=bool)
        ord_at = {id(p): a for p, a in zip(with_ordering, np.cumsum([0, *[len(p.keys) for p in with_ordering]]))}
    applied = []  # per piece: (positions cleared by a winning delete, positions set, their rows)
    for piece, pos in zip(live, positions):
        n = len(pos)
        is_delete = _flags(piece.is_delete, n)
        wins = np.ones(n, dtype=bool)
        if use_ordering:
            default = (np.asarray(piece.default_delete.fill_null(True), dtype=bool) if piece.default_delete is not None
                       else is_delete)
            if piece.ordering is not None:
                start = ord_at[id(piece)]
                v, valid = values[start : start + n], validity[start : start + n]
                current, current_has = max_value[pos], has_max[pos]
                wins = default | ~current_has | (valid & (v >= current))
                counted = valid & ~default
                has_max[pos] = np.where(default, valid, current_has | counted)
                max_value[pos] = np.where(default, v, np.where(counted & current_has, np.maximum(current, v),
                                                               np.where(counted, v, current)))
            elif default.any():
                has_max[pos[default]] = False
        cleared = pos[wins & is_delete]
        set_rows = np.flatnonzero(wins & ~is_delete)
        set_pos = pos[set_rows]
        alive[cleared] = False
        alive[set_pos] = True
        applied.append((cleared, set_pos, set_rows))

    keep = None if alive.all() else np.flatnonzero(alive)
    arrays = [union if keep is None else union.take(pa.array(keep))]
    n_out = n_union if keep is None else len(keep)
    gathers: dict[tuple[bool, ...], tuple] = {}
    available = [columns_of(p.data) for p in live]
    for field in columns:
        present = tuple(field.name in a for a in available)
        if not any(present):
            arrays.append(pa.nulls(n_out, field.type))
            continue
        if present not in gathers:
            gathers[present] = _gather_plan(present, applied, live, n_union, keep)
        arrays.append(_gather(field, gathers[present], available, present))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _gather_plan(present: tuple[bool, ...], applied: list, live: list[Versions], n_union: int,
                 keep: np.ndarray | None) -> tuple:
    """Which piece and row supply a column for every output key (-1: null).

    Plans: ``whole`` (one piece, in order: no copy), ``patch`` (one piece in order except some
    rows taken from other pieces — the update pattern: copy the big piece once, scatter the
    rest) or ``take`` (a general gather over all pieces).
    """
    source = np.full(n_union, -1, dtype=np.int64)
    row = np.zeros(n_union, dtype=np.int64)
    for i, (cleared, set_pos, set_rows) in enumerate(applied):
        source[cleared] = -1
        if present[i]:
            source[set_pos] = i
            row[set_pos] = set_rows
    if keep is not None:
        source, row = source[keep], row[keep]
    n = len(source)
    sizes = np.array([len(p.keys) if present[i] else 0 for i, p in enumerate(live)], dtype=np.int64)
    spine = int(np.argmax(sizes))
    if sizes[spine] == n and n:
        from_spine = source == spine
        positions = np.flatnonzero(from_spine)
        if len(positions) == n and row[-1] == n - 1 and (row == np.arange(n)).all():
            return ("whole", spine)
        if (row[positions] == positions).all():
            patched = np.flatnonzero(~from_spine)
            sources, rows = source[patched], row[patched]
            groups = [(int(j), patched[sources == j], rows[sources == j]) for j in np.unique(sources[sources >= 0])]
            return ("patch", spine, patched, sources, rows, groups)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    missing = source < 0
    if not missing.any():
        return ("take", pa.array(offsets[source] + row))
    index = np.where(missing, 0, offsets[np.maximum(source, 0)] + row)
    return ("take", pa.array(index, mask=missing))


def _scatterable(type_: pa.DataType) -> bool:
    return (pa.types.is_integer(type_) or pa.types.is_floating(type_)) and not pa.types.is_float16(type_)


def _gather(field: pa.Field, plan: tuple, available: list[dict], present: tuple[bool, ...]) -> pa.Array:
    if plan[0] == "whole":
        return _cast(available[plan[1]][field.name], field.type)
    if plan[0] == "patch":
        return _patch(field, plan, available)
    chunks = []
    for columns, has in zip(available, present):
        if has:
            chunks.extend(_cast(columns[field.name], field.type).chunks)
    values = pa.concat_arrays(chunks) if len(chunks) != 1 else chunks[0]
    return values.take(plan[1])


def _patch(field: pa.Field, plan: tuple, available: list[dict]) -> pa.Array:
    """The spine's column with the patched rows replaced (nulls where no piece supplies one)."""
    _, spine, positions, sources, rows, groups = plan
    base = _cast(available[spine][field.name], field.type)
    if not len(positions):
        return base
    parts = {j: _contiguous(_cast(available[j][field.name], field.type)) for j, _, _ in groups}
    if _scatterable(field.type) and base.null_count == 0 and len(groups) and (sources >= 0).all() and \
            all(part.null_count == 0 for part in parts.values()):
        values = np.array(_contiguous(base))
        for j, at, taken in groups:
            values[at] = np.asarray(parts[j])[taken]
        return pa.array(values, type=field.type)
    offsets = np.zeros(len(available), dtype=np.int64)
    at = 0
    for j, _, _ in groups:
        offsets[j] = at
        at += len(parts[j])
    index = offsets[np.maximum(sources, 0)] + rows
    values = pa.concat_arrays([parts[j] for j, _, _ in groups]) if groups else pa.nulls(1, field.type)
    replacement = values.take(pa.array(index, mask=sources < 0))
    mask = np.zeros(len(base), dtype=bool)
    mask[positions] = True
    return pc.replace_with_mask(base, pa.array(mask), replacement)


def _contiguous(column):
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column
