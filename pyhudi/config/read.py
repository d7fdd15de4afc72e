"""Read settings (damaged blocks, split tasks, reader pins), declared once."""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey

SKIP_CORRUPT_BLOCKS = ConfigKey(
    "hoodie.pyhudi.read.corrupt.blocks.skip", bool, False,
    "Skip (with a warning naming the file and block) a corrupt or missing log block inside the bytes a "
    "completed commit wrote, instead of failing the read. Torn blocks no completed commit wrote are "
    "always skipped, as Hudi does.",
)

SPLIT_ROWS = ConfigKey(
    "hoodie.pyhudi.read.split.rows", int, None,
    "Split a file group into several read tasks (key ranges) of about this many base-file rows each, "
    "on row-group boundaries (one Spark partition per split). Unset: one task per file group.",
)

PIN_EXPIRY = ConfigKey(
    "hoodie.pyhudi.read.pin.expiry.ms", int, 3_600_000,
    "A streamed scan's pinned snapshot protects its files from the cleaner while its pin file is younger "
    "than this (the reader refreshes it as it is consumed, at most once a minute).",
)
