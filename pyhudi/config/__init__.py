"""Configuration: every ``hoodie.*`` key pyhudi reads or writes, declared once per area.

Importing this package loads every area's declarations into the registry
(:data:`pyhudi.config.keys.REGISTRY`), so a docs generator (or ``lookup``) sees every key without
importing the rest of pyhudi:

- ``table`` — ``hoodie.properties`` (table shape, merge mode, buckets, timeline layout);
- ``families`` — RFC-80 column families; ``keygen`` — key generators;
- ``write`` — file sizes, small files, insert overwrite, durability;
- ``read`` — damaged blocks, split tasks, reader pins;
- ``concurrency`` — concurrency mode, failed-writes policy, heartbeats; ``lock`` — the timeline lock;
- ``datasource`` — options of the Spark data source and SQL front;
- ``compaction``, ``clustering``, ``clean``, ``archive`` — the table services; ``storage`` — object stores.
"""

from pyhudi.config import (  # noqa: F401 (loaded for their declarations)
    archive,
    clean,
    clustering,
    compaction,
    concurrency,
    datasource,
    keygen,
    lock,
    read,
    storage,
    table,
    write,
)
from pyhudi.config.keys import REGISTRY, ConfigKey, lookup

__all__ = ["REGISTRY", "ConfigKey", "lookup"]
