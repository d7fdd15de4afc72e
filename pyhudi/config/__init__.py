"""Configuration: every ``hoodie.*`` key pyhudi reads or writes, declared once per area.

Each area declares its keys in its own module, loaded by the code that reads them; the registry
(:data:`pyhudi.config.keys.REGISTRY`) holds the keys of the areas loaded so far, and
``pyhudi.config.REGISTRY`` / ``lookup`` load every area first, so a docs generator (or
``lookup``) sees every key without importing the rest of pyhudi:

- ``table`` — ``hoodie.properties`` (table shape, merge mode, buckets, timeline layout);
- ``families`` — RFC-80 column families; ``keygen`` — key generators;
- ``write`` — file sizes, small files, insert overwrite, durability;
- ``read`` — damaged blocks, split tasks, reader pins;
- ``concurrency`` — concurrency mode, failed-writes policy, heartbeats; ``lock`` — the timeline lock;
- ``datasource`` — options of the Spark data source and SQL front;
- ``compaction``, ``clustering``, ``clean``, ``archive`` — the table services; ``storage`` — object stores.
"""

from typing import Any

from pyhudi.config.keys import ConfigKey, load_areas, lookup

__all__ = ["REGISTRY", "ConfigKey", "load_areas", "lookup"]


def __getattr__(name: str) -> Any:
    """``REGISTRY``: every area's keys (the areas are imported on first access)."""
    if name == "REGISTRY":
        from pyhudi.config import keys

        load_areas()
        return keys.REGISTRY
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
