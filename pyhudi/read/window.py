"""Merging one key range (a *window*) of sorted inputs: the kernel of the streaming sort-merge.

A window holds, per input of a family (base file, then log blocks in processing order), the
rows whose keys fall in one key range; each piece's keys strictly increase. Who wins is
:mod:`pyhudi.record_merge`'s rule in its fold form (:func:`~pyhudi.record_merge.advance`). The semantics are
those of :func:`pyhudi.read.merge.merge_versions`, but the inputs' order replaces its sort: the
pieces are applied one after another to a state per distinct key (alive, highest ordering value
so far, which piece supplies each column).

The usual window is an *update*: one big piece (the base file's batch) holds every key and the
others (log blocks) touch a few of them. Then only the touched keys are merged — a state the
size of the log pieces, not of the base — and each column of the big piece is copied once with
the touched rows replaced, or passed on untouched when no log piece carries the column
(:func:`merge_window` picks this path when the other pieces' keys are all in the big one).
Windows that add keys take the general path over the sorted union of their keys. Applying the
pieces in turn gives the rows of Hudi's order (log versions merged with each other, then with
the base row) except under event-time ordering with a partial log piece: such windows go to
:func:`~pyhudi.read.merge.merge_versions`.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from pyhudi.lazy import pc
from pyhudi.read.keys import single_array, sorted_keys
from pyhudi.read.merge import Versions, columns_of, merge_versions
from pyhudi.record_merge import advance, cast_ordering, commit_time_deletes, comparable_ordering

_Step = tuple  # (positions, is_delete, default_delete, ordering values, ordering validity)


def merge_window(pieces: list[Versions | None], columns: list[pa.Field], event_time: bool,
                 ordering_type: pa.DataType | None = None, within_first: list[bool] | None = None,
                 base_first: bool = False) -> pa.Table:
    """Merge one key range of sorted inputs: the latest live row per key, sorted by key
    (``_key`` + ``columns``). A range only one input touches is passed through without copying.

    ``within_first`` (optional, a one-element list): set to False unless every key of the other
    pieces is a key of the first (the base file's batch). ``base_first``: the first piece is a
    base file's batch (its rows merge after the log versions have merged with each other).
    """
    live = [p for p in pieces if p is not None and len(p.keys)]
    out_schema = _window_schema(live[0].keys.type if live else pa.string(), tuple(columns))
    first = pieces[0] if pieces and pieces[0] is not None and len(pieces[0].keys) else None
    if within_first is not None and live and first is None:
        within_first[0] = False  # other pieces have keys, the first none
    if not live:
        return out_schema.empty_table()
    if len(live) == 1 and not np.any(live[0].is_delete):
        return _project(live[0].keys, live[0].data, columns, out_schema)
    spine, positions = _spine_positions(live)
    if within_first is not None and (positions is None or live[spine] is not first):
        within_first[0] = False
    if _logs_merge_first(pieces, columns, event_time, ordering_type, base_first):
        base_rows = len(first.keys) if base_first and first is not None else 0
        return merge_versions(live, columns, event_time, ordering_type, base_rows=base_rows, text_keys_out=False)
    if positions is not None:
        if spine == 0 and len(live) == 2 and _plain_update(live, event_time, ordering_type):
            return _overwrite_spine(live[0], live[1], positions[1], columns, out_schema)
        return _merge_into_spine(live, spine, positions, columns, event_time, ordering_type, out_schema)
    return _merge_union(live, columns, event_time, ordering_type, out_schema)


def _logs_merge_first(pieces: list[Versions | None], columns: list[pa.Field], event_time: bool,
                      ordering_type: pa.DataType | None, base_first: bool) -> bool:
    """Whether applying the pieces one after another could differ from Hudi's order (log
    versions merged with each other first, then with the base row): under event-time ordering,
    when a log piece is partial — it lacks a column read, or the ordering column. Such windows
    take :func:`~pyhudi.read.merge.merge_versions`; the others the pass below, which gives the
    same rows faster."""
    if not event_time or ordering_type is None:
        return False
    names = [f.name for f in columns]
    for i, piece in enumerate(pieces):
        if piece is None or piece.data is None or not len(piece.keys) or (i == 0 and base_first):
            continue
        if piece.ordering is None or any(name not in piece.data.column_names for name in names):
            return True
    return False


@functools.lru_cache(maxsize=256)
def _window_schema(key_type: pa.DataType, columns: tuple[pa.Field, ...]) -> pa.Schema:
    return pa.schema([pa.field("_key", key_type), *columns])


def _plain_update(live: list[Versions], event_time: bool, ordering_type: pa.DataType | None) -> bool:
    """Whether the second piece simply wins over the first on every key it holds: neither
    deletes a row, and no ordering value is compared (commit-time ordering, or no values)."""
    if np.any(live[0].is_delete) or np.any(live[1].is_delete):
        return False
    return not (event_time and ordering_type is not None and any(p.ordering is not None for p in live))


def _overwrite_spine(spine: Versions, update: Versions, at: np.ndarray, columns: list[pa.Field],
                     out_schema: pa.Schema) -> pa.Table:
    """The usual update window: the base batch with the rows ``at`` (where the update block's
    keys are, increasing) overwritten by the columns the block carries (a partial block keeps
    the base values of the others)."""
    n = len(spine.keys)
    base, new = columns_of(spine.data), columns_of(update.data)
    arrays = [spine.keys]
    for field in columns:
        column, values = base.get(field.name), new.get(field.name)
        patched = _cast(column, field.type) if column is not None else pa.nulls(n, field.type)
        if values is not None:
            in_place = spine.owned and column is not None and column.type == field.type
            patched = scatter(patched, at, _contiguous(_cast(values, field.type)), in_place=in_place)
        arrays.append(patched)
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _project(keys: pa.Array, data: pa.Table | None, columns: list[pa.Field], out_schema: pa.Schema) -> pa.Table:
    """One piece's rows as the window result (no merge needed)."""
    arrays = [keys]
    available = columns_of(data)
    for field in columns:
        column = available.get(field.name)
        arrays.append(_cast(column, field.type) if column is not None else pa.nulls(len(keys), field.type))
    return pa.Table.from_arrays(arrays, schema=out_schema)


# --------------------------------------------------------------------------- key positions
def subset_positions(spine: pa.Array | pa.ChunkedArray, others: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """Row of ``spine`` (distinct keys, sorted) holding each of ``others``, or None if one is
    missing. ``others`` may repeat keys (several log blocks updating one key).

    Key codes are found by binary search. String keys by hashing: the hash table is built over
    the smaller side (``others``, through its distinct values if it repeats keys) and the spine
    probes it, which costs a third of hashing the spine.
    """
    if not len(others):
        return np.zeros(0, dtype=np.int64)
    if pa.types.is_int64(spine.type):
        return _searched_positions(spine, others)
    reverse = _combined(pc.index_in(spine, value_set=others))
    found = len(reverse) - reverse.null_count
    if found == len(others):
        return _positions_of(reverse, len(others))
    distinct = pc.unique(others)
    if found != len(distinct):
        return None  # a key of ``others`` is not in the spine
    reverse = _combined(pc.index_in(spine, value_set=distinct))
    return _positions_of(reverse, len(distinct))[np.asarray(_combined(pc.index_in(others, value_set=distinct)))]


def _searched_positions(spine: pa.Array | pa.ChunkedArray, others: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """``subset_positions`` for key codes: binary search in the (sorted) spine."""
    haystack = np.asarray(_combined(spine), dtype=np.int64)
    needles = np.asarray(_combined(others), dtype=np.int64)
    positions = np.searchsorted(haystack, needles)
    if positions.size and positions.max() >= len(haystack):
        return None
    return positions if (haystack[positions] == needles).all() else None


def _positions_of(reverse: pa.Array, n: int) -> np.ndarray:
    rows = np.flatnonzero(np.asarray(reverse.is_valid()))
    positions = np.empty(n, dtype=np.int64)
    positions[np.asarray(reverse.drop_null(), dtype=np.int64)] = rows
    return positions


def _combined(array):
    return single_array(array)


def _spine_positions(live: list[Versions]) -> tuple[int, list[np.ndarray | None] | None]:
    """The largest piece and, when it holds every key of the window, each other piece's rows'
    positions in it (None for the spine itself)."""
    sizes = [len(p.keys) for p in live]
    spine = max(range(len(sizes)), key=sizes.__getitem__)  # (the first of the largest)
    spine_keys = live[spine].keys
    others = [p.keys for i, p in enumerate(live) if i != spine]
    found = subset_positions(spine_keys, others[0] if len(others) == 1 else pa.chunked_array(others, spine_keys.type))
    if found is None:
        return spine, None
    positions: list[np.ndarray | None] = []
    at = 0
    for i, size in enumerate(sizes):
        if i == spine:
            positions.append(None)
        else:
            positions.append(found[at : at + size])
            at += size
    return spine, positions


# --------------------------------------------------------------------------- merge state
def _flags(value: bool | np.ndarray, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=bool), (n,))


def _steps(views: list[tuple], event_time: bool, ordering_type: pa.DataType | None) -> tuple[bool, list[_Step]]:
    """Per piece, what the state machine needs: ``views`` are (positions, delete flags, default
    delete flags or None, ordering values or None) per piece, in processing order."""
    use_ordering = event_time and ordering_type is not None and any(v[3] is not None for v in views)
    values = validity = None
    if use_ordering:
        ordered = pa.chunked_array([cast_ordering(v[3], ordering_type) for v in views if v[3] is not None],
                                   ordering_type)
        values, validity = comparable_ordering(ordered)
    steps, at = [], 0
    for pos, is_delete, default_delete, ordering in views:
        n = len(pos)
        default = v = valid = None
        if use_ordering:
            default = commit_time_deletes(is_delete, default_delete, n)
            if ordering is not None:
                v, valid = values[at : at + n], validity[at : at + n]
                at += n
        steps.append((pos, is_delete, default, v, valid))
    return use_ordering, steps


def _apply(steps: list[_Step], n_state: int, use_ordering: bool) -> tuple[np.ndarray, list]:
    """Apply the pieces in order; returns ``alive`` per key and, per piece, (positions cleared by
    a winning delete, positions set, the rows that set them)."""
    alive = np.zeros(n_state, dtype=bool)
    if use_ordering:
        dtype = next((s[3].dtype for s in steps if s[3] is not None), np.int64)
        max_value = np.zeros(n_state, dtype=dtype)
        has_max = np.zeros(n_state, dtype=bool)
    applied = []
    for pos, is_delete, default, v, valid in steps:
        if use_ordering:  # (the merge rule's fold form)
            wins, max_value[pos], has_max[pos] = advance(max_value[pos], has_max[pos], v, valid, default)
        else:
            wins = np.ones(len(pos), dtype=bool)
        cleared = pos[wins & is_delete]
        set_rows = np.flatnonzero(wins & ~is_delete)
        set_pos = pos[set_rows]
        alive[cleared] = False
        alive[set_pos] = True
        applied.append((cleared, set_pos, set_rows))
    return alive, applied


def _sources(present: tuple[bool, ...], applied: list, n_state: int) -> tuple[np.ndarray, np.ndarray]:
    """Per key: the piece supplying a column (-1: none, null) and its row in that piece — the
    merge rule's partial records in fold form (:func:`~pyhudi.record_merge.partial_source`): a
    winning piece that carries the column supplies it, else the key keeps the earlier source
    (the loser's); a winning delete clears it."""
    source = np.full(n_state, -1, dtype=np.int64)
    row = np.zeros(n_state, dtype=np.int64)
    for i, (cleared, set_pos, set_rows) in enumerate(applied):
        source[cleared] = -1
        if present[i]:
            source[set_pos] = i
            row[set_pos] = set_rows
    return source, row


# --------------------------------------------------------------------------- update windows
def _merge_into_spine(live: list[Versions], spine: int, positions: list, columns: list[pa.Field], event_time: bool,
                      ordering_type: pa.DataType | None, out_schema: pa.Schema) -> pa.Table:
    """Every key is in the spine: merge only the keys other pieces touch, patch the spine."""
    base = live[spine]
    n = len(base.keys)
    touched = _distinct_sorted([p for p in positions if p is not None])
    views = []
    for piece, pos in zip(live, positions):
        if pos is None:  # the spine, restricted to the touched keys
            take = pa.array(touched)
            views.append((np.arange(len(touched), dtype=np.int64), _flags(piece.is_delete, n)[touched],
                          piece.default_delete.take(take) if piece.default_delete is not None else None,
                          piece.ordering.take(take) if piece.ordering is not None else None))
        else:
            at = np.arange(len(pos), dtype=np.int64) if pos is touched else np.searchsorted(touched, pos)
            views.append((at, _flags(piece.is_delete, len(pos)), piece.default_delete, piece.ordering))
    use_ordering, steps = _steps(views, event_time, ordering_type)
    alive, applied = _apply(steps, len(touched), use_ordering)
    keep = None
    if not alive.all() or np.any(base.is_delete):
        mask = ~_flags(base.is_delete, n)
        mask[touched] = alive
        keep = pa.array(mask)
    arrays = [base.keys if keep is None else base.keys.filter(keep)]
    available = [columns_of(p.data) for p in live]
    plans: dict[tuple[bool, ...], tuple | None] = {}
    for field in columns:
        present = tuple(field.name in a for a in available)
        if present not in plans:
            plans[present] = _patch_plan(present, applied, live, spine, touched, alive)
        column = _patched_column(field, plans[present], available, spine, n, base.owned)
        arrays.append(column if keep is None else column.filter(keep))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _distinct_sorted(positions: list[np.ndarray]) -> np.ndarray:
    """The distinct positions, sorted (one piece's are already: its keys strictly increase)."""
    if len(positions) == 1:
        return positions[0]
    merged = np.sort(np.concatenate([np.zeros(0, dtype=np.int64), *positions]))
    if len(merged) > 1:
        merged = merged[np.concatenate([[True], merged[1:] != merged[:-1]])]
    return merged


def _patch_plan(present: tuple[bool, ...], applied: list, live: list[Versions], spine: int, touched: np.ndarray,
                alive: np.ndarray) -> tuple | None:
    """Spine rows whose value of a column changes, and where each new value comes from (an
    index over the other pieces' columns, concatenated; null where no piece supplies one)."""
    source, row = _sources(present, applied, len(touched))
    changed = alive & (source != spine) if present[spine] else alive
    if not changed.any():
        return None
    src, rows = source[changed], row[changed]
    sizes = np.array([len(p.keys) if present[j] and j != spine else 0 for j, p in enumerate(live)], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    missing = src < 0
    index = np.where(missing, 0, offsets[np.maximum(src, 0)] + rows)
    if not missing.any() and len(index) == int(sizes.sum()) and (index == np.arange(len(index))).all():
        return touched[changed], None  # every row of the other pieces, in order: no gather
    return touched[changed], pa.array(index, mask=missing if missing.any() else None)


def _patched_column(field: pa.Field, plan: tuple | None, available: list[dict], spine: int, n: int, owned: bool):
    column = available[spine].get(field.name)
    base = _cast(column, field.type) if column is not None else pa.nulls(n, field.type)
    if plan is None:
        return base
    at, index = plan
    parts = [_contiguous(_cast(a[field.name], field.type)) for j, a in enumerate(available)
             if j != spine and field.name in a]
    if not parts:  # only the spine has the column, and its rows were deleted: nulls
        return scatter(base, at, pa.nulls(len(at), field.type))
    values = pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
    values = values.take(index) if index is not None else values
    return scatter(base, at, values, in_place=owned and column is not None and column.type == field.type)


# --------------------------------------------------------------------------- general windows
def _merge_union(live: list[Versions], columns: list[pa.Field], event_time: bool, ordering_type: pa.DataType | None,
                 out_schema: pa.Schema) -> pa.Table:
    """Merge over the sorted union of the window's keys (windows that add keys)."""
    sizes = [len(p.keys) for p in live]
    all_keys = pa.chunked_array([p.keys for p in live], live[0].keys.type)
    union = sorted_keys(pc.unique(all_keys))
    index = np.asarray(pc.index_in(all_keys, value_set=union).combine_chunks(), dtype=np.int64)
    offsets = np.cumsum([0, *sizes])
    views = [(index[offsets[i] : offsets[i + 1]], _flags(p.is_delete, sizes[i]), p.default_delete, p.ordering)
             for i, p in enumerate(live)]
    use_ordering, steps = _steps(views, event_time, ordering_type)
    alive, applied = _apply(steps, len(union), use_ordering)
    keep = None if alive.all() else np.flatnonzero(alive)
    arrays = [union if keep is None else union.take(pa.array(keep))]
    n_out = len(union) if keep is None else len(keep)
    plans: dict[tuple[bool, ...], pa.Array] = {}
    available = [columns_of(p.data) for p in live]
    for field in columns:
        present = tuple(field.name in a for a in available)
        if not any(present):
            arrays.append(pa.nulls(n_out, field.type))
            continue
        if present not in plans:
            plans[present] = _take_plan(present, applied, sizes, len(union), keep)
        parts = [_cast(a[field.name], field.type) for a, has in zip(available, present) if has]
        chunks = [c for part in parts for c in part.chunks]
        values = pa.concat_arrays(chunks) if len(chunks) != 1 else chunks[0]
        arrays.append(values.take(plans[present]))
    return pa.Table.from_arrays(arrays, schema=out_schema)


def _take_plan(present: tuple[bool, ...], applied: list, sizes: list[int], n_union: int,
               keep: np.ndarray | None) -> pa.Array:
    """For every output key, the row supplying a column in the pieces' concatenated columns."""
    source, row = _sources(present, applied, n_union)
    if keep is not None:
        source, row = source[keep], row[keep]
    kept_sizes = np.array([s if present[i] else 0 for i, s in enumerate(sizes)], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(kept_sizes)[:-1]])
    missing = source < 0
    index = np.where(missing, 0, offsets[np.maximum(source, 0)] + row)
    return pa.array(index, mask=missing if missing.any() else None)


# --------------------------------------------------------------------------- columns
def scatter(base: pa.Array | pa.ChunkedArray, at: np.ndarray, values: pa.Array, in_place: bool = False) -> pa.Array:
    """``base`` with the rows ``at`` (increasing) replaced by ``values``.

    Fixed-width columns without nulls are patched through NumPy: in place when ``in_place``
    (the caller owns ``base``'s buffer: decoded for this read, no other reader of these rows),
    else in a copy in Arrow's memory pool (which reuses freed memory, unlike fresh NumPy arrays
    that fault in new pages). Anything else is a gather from the base followed by the values
    (``replace_with_mask`` when their types differ).
    """
    base = _contiguous(base)
    n = len(base)
    width = _byte_width(base.type)
    if width and not base.null_count and not values.null_count:
        dtype = np.dtype(f"u{width}")
        source = base.buffers()[1]
        values = _contiguous(values)
        replacement = np.frombuffer(values.buffers()[1], dtype=dtype, count=len(values), offset=values.offset * width)
        if in_place and source.is_mutable:
            np.frombuffer(source, dtype=dtype, count=n, offset=base.offset * width)[at] = replacement
            return base
        buffer = pa.allocate_buffer(n * width)
        out = np.frombuffer(buffer, dtype=dtype)
        out[:] = np.frombuffer(source, dtype=dtype, count=n, offset=base.offset * width)
        out[at] = replacement
        return pa.Array.from_buffers(base.type, n, [None, buffer])
    if values.type == base.type or pa.types.is_nested(base.type) or pa.types.is_dictionary(base.type):
        # gather the rows from the base followed by the values (no replace_with_mask kernel for
        # lists, structs, maps or dictionaries; for strings a gather costs a third of it)
        indices = np.arange(n, dtype=np.int64)
        indices[at] = n + np.arange(len(values), dtype=np.int64)
        return pa.concat_arrays([base, _contiguous(values)]).take(pa.array(indices))
    mask = np.zeros(n, dtype=bool)
    mask[at] = True
    return pc.replace_with_mask(base, pa.array(mask), values)


def scatter_in_turn(base: pa.Array | pa.ChunkedArray, writes: list[tuple[np.ndarray, pa.Array | pa.ChunkedArray]],
                    in_place: bool = False) -> pa.Array | None:
    """``base`` with each write's ``values`` put at its rows ``at`` (increasing), one write after
    another (a later write wins a row several rewrite): NumPy assignments into one buffer —
    ``base``'s own when ``in_place`` and it is mutable, else one copy. None when ``base`` or a
    write is not fixed-width without nulls (the caller combines the writes for :func:`scatter`)."""
    base = _contiguous(base)
    width = _byte_width(base.type)
    if not width or base.null_count:
        return None
    parts = [_contiguous(values) for _, values in writes]
    if any(part.null_count or part.type != base.type for part in parts):
        return None
    dtype, n = np.dtype(f"u{width}"), len(base)
    source = base.buffers()[1]
    if in_place and source.is_mutable:
        out, result = np.frombuffer(source, dtype=dtype, count=n, offset=base.offset * width), base
    else:
        buffer = pa.allocate_buffer(n * width)
        out = np.frombuffer(buffer, dtype=dtype)
        out[:] = np.frombuffer(source, dtype=dtype, count=n, offset=base.offset * width)
        result = pa.Array.from_buffers(base.type, n, [None, buffer])
    for (at, _), part in zip(writes, parts):
        out[at] = np.frombuffer(part.buffers()[1], dtype=dtype, count=len(part), offset=part.offset * width)
    return result


def _byte_width(type_: pa.DataType) -> int:
    """Bytes per value of a fixed-width primitive type that NumPy can copy as unsigned ints."""
    if not pa.types.is_primitive(type_) or pa.types.is_boolean(type_):
        return 0
    width = type_.bit_width // 8
    return width if width in (1, 2, 4, 8) else 0


def _cast(column, type_: pa.DataType):
    return column if column.type == type_ else column.cast(type_)


def _contiguous(column):
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column
