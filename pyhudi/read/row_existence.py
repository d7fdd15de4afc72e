"""Families read only for row existence (DESIGN §4): when they need not be read at all.

A read of some columns must still return every row, so the families it does not need are read
for their keys (a row exists while any family holds a live record of it). Most of the time those
keys are already known: a family whose base file holds the same keys as the base of a family the
task reads whole (:func:`redundant_families`), or whose first log block is the full-row block
another family reads (:func:`read_by_another_family`), adds no row, and is not read. Both rules
hold only while no input of the families compared removes a row (delete blocks, soft deletes).
Used by :class:`~pyhudi.read.task.ReadTask`, which plans each file group's inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pyhudi.read.lockstep import removes_rows
from pyhudi.read.metadata_cache import METADATA_CACHE, FileKey
from pyhudi.read.positions import blocks_within
from pyhudi.read.sources import MemoryInput, ParquetInput, Prefilter

if TYPE_CHECKING:
    from pyhudi.read.family_reader import OpenedBase
    from pyhudi.read.task import FamilyPart


def key_only(part: FamilyPart) -> bool:
    """Whether a family is read only for its keys (row existence, DESIGN §4)."""
    return not any(f.name in part.own_columns or f.name.startswith("_hoodie_") for f in part.scan.fields)

def redundant_families(families: list[FamilyPart], strategy: str, family_inputs: list[list],
                       opened: dict[str, OpenedBase], deferred: list[bool]) -> tuple[dict[int, str], dict[int, FileKey]]:
    """Key-only families (read for row existence, DESIGN §4) whose base file adds no row.

    A family read only for its keys needs no base file when that base is byte-identical in
    its key column (equal fingerprint) to the base of another family read in this task whose
    inputs never remove a row (no delete blocks, no soft deletes): every one of those keys is
    alive there. Its log blocks are still merged (they may add keys). Returns family index →
    ``"all"`` (nothing left to read) or ``"base"`` (read only its log blocks). A ``deferred``
    family is a key-only one whose base input is not built (``family_inputs`` holds its log
    blocks only); it is not even opened when an earlier scan proved its key column equal to a
    known one (:data:`~pyhudi.read.metadata_cache.METADATA_CACHE`).
    """
    if len(families) < 2 or strategy != "auto":
        return {}, {}
    anchors: list = []
    candidates = []
    for i, (part, inputs, later) in enumerate(zip(families, family_inputs, deferred)):
        if later:
            candidates.append((i, opened[part.file_slice.base_file.relpath], not inputs))
            continue
        base = inputs[0] if inputs and isinstance(inputs[0], ParquetInput) and inputs[0].fingerprint else None
        if base is not None and not key_only(part) and not any(removes_rows(s) for s in inputs):
            anchors.append(base)  # (only base inputs carry a fingerprint)
    if not candidates:
        return {}, {}
    known = {}  # fingerprint → the file key of a base holding those keys
    for anchor in anchors:
        fingerprint = anchor.fingerprint()
        if fingerprint is not None:
            known.setdefault(fingerprint, fingerprint.file_key)
    redundant: dict[int, str] = {}
    anchor_of: dict[int, FileKey] = {}  # a family read for its log blocks → the base its base equals
    for i, base, alone in candidates:
        key = base.file_key
        anchor = None
        if key is not None:
            anchor = next((other for other in known.values() if METADATA_CACHE.same_keys(key, other)), None)
        if anchor is None:  # (else proven by an earlier comparison)
            fingerprint = base.key_fingerprint()
            if fingerprint is not None and fingerprint in known:
                anchor = known[fingerprint]
            elif fingerprint is not None and alone and not base.soft_deletes:
                known.setdefault(fingerprint, fingerprint.file_key)  # kept whole: it may anchor the next
                continue
        if anchor is None:
            continue
        if alone or all(_adds_no_keys(source, key) for source in family_inputs[i]):
            redundant[i] = "all"
        else:
            redundant[i], anchor_of[i] = "base", anchor
    return redundant, anchor_of

def read_by_another_family(families: list[FamilyPart], strategy: str, family_inputs: list[list], deferred: list[bool],
                           prefilter: Prefilter, metrics: dict) -> dict[int, str]:
    """Key-only families without a base file whose first log block another family of the
    task reads too (a file group first written by an insert: one full-row log file that
    every family's slice holds, docs/format.md). When no input of either family removes a
    row, each key of that block is alive in the other family's rows already; so is each key
    of the family's later blocks (its own updates) when their positions in that first block
    are known or learnt now (:func:`~pyhudi.read.positions.blocks_within`, kept in the
    metadata cache). Such a family adds no row and is not read (``"all"``) — the rule for
    equal base files (:func:`redundant_families`). A read of one family's columns after an
    update of another then reads one block as it is, or merges by position."""
    if len(families) < 2 or strategy != "auto":
        return {}
    read_by: set = set()
    for part, inputs in zip(families, family_inputs):
        if not key_only(part) and not any(removes_rows(source) for source in inputs):
            read_by.update(source.block_key for source in inputs if source.block_key is not None)
    skipped = {}
    for i, (part, inputs, later) in enumerate(zip(families, family_inputs, deferred)):
        if later or part.file_slice.base_file is not None or not inputs or not key_only(part):
            continue
        if inputs[0].block_key not in read_by or any(removes_rows(source) for source in inputs):
            continue
        rest = [source for source in inputs[1:] if source.block_key not in read_by]
        if not rest or blocks_within(inputs[0], rest, prefilter, metrics):
            skipped[i] = "all"
    return skipped


def _adds_no_keys(source: ParquetInput | MemoryInput, base_key: FileKey | None) -> bool:
    """Whether a log block of a key-only family adds no key to its base file's: it only deletes,
    or an earlier read found each of its keys in that base."""
    if isinstance(source, MemoryInput) and source.versions.data is None and np.all(source.versions.is_delete):
        return True
    return METADATA_CACHE.block_within(source.block_key, base_key)
