"""Apache Hudi's metadata table (``.hoodie/metadata``) on the tables pyhudi writes.

Apache Hudi keeps an index of a table's files — and, as configured, column statistics, a
record-level index, secondary indexes — in a metadata table: an internal Hudi table under
``.hoodie/metadata``. ``hoodie.table.metadata.partitions`` in ``hoodie.properties`` lists what it
holds; a reader whose list includes ``files`` (Apache Hudi's readers by default, hudi-rs) takes
the table's files from it instead of listing storage. So every commit must update it in the same
transaction: a commit it misses is invisible to those readers, and they still list the files a
clean removed.

pyhudi lists storage itself and maintains no metadata table. Before it writes the first instant
of any kind (a write, a table service, a rollback, an ALTER) on a table whose properties list one,
it turns the metadata table off, as Apache Hudi's own writer does when run with
``hoodie.metadata.enable=false``: it empties the two partition lists in ``hoodie.properties``
(crash-safely, :func:`pyhudi.config.table.update_table_config`; from then on every reader lists
storage), then deletes ``.hoodie/metadata``. Apache Hudi builds a new one at its next write with
the metadata table enabled. A warning names what was removed. With ``hoodie.metadata.enable=true``
set for the write, pyhudi refuses instead and leaves the table unchanged.

Reads never change anything: pyhudi reads a table with a metadata table by listing storage.
"""

from __future__ import annotations

import warnings
from typing import Callable, Mapping

from pyhudi.config import table as tc
from pyhudi.errors import ConfigError
from pyhudi.storage.fs import Storage

METADATA_DIR = f"{tc.METAFOLDER}/metadata"


def listed_partitions(config: tc.TableConfig) -> tuple[str, ...]:
    """The metadata table's partitions ``hoodie.properties`` lists (built or being built)."""
    return (*config.get(tc.METADATA_PARTITIONS), *config.get(tc.METADATA_PARTITIONS_INFLIGHT))


def first_write_guard(storage: Storage, config: tc.TableConfig,
                      options: Mapping[str, str]) -> Callable[[], None] | None:
    """What a timeline runs before the first instant it writes (under its lock): None when the
    table's properties (``config``, as opened) list no metadata table — nothing to do, nothing
    read — else turning it off (:func:`turn_off`), or refusing when ``options`` set
    ``hoodie.metadata.enable=true``."""
    if not listed_partitions(config):
        return None
    from pyhudi.config.write import METADATA_ENABLE  # (a read loads no writer configuration: issue 15)

    if METADATA_ENABLE.get(options):
        def refuse() -> None:
            raise ConfigError(
                f"the table at {storage.base_uri} has Apache Hudi's metadata table "
                f"({', '.join(listed_partitions(config))}), which pyhudi does not maintain, and "
                f"{METADATA_ENABLE.key}=true asks to keep it: the write is refused, the table is unchanged "
                f"(without the option pyhudi turns the metadata table off first, as Apache Hudi does with "
                f"{METADATA_ENABLE.key}=false)")
        return refuse
    return lambda: turn_off(storage)


def turn_off(storage: Storage) -> tuple[str, ...]:
    """Turn the table's metadata table off (module docstring); the partitions it listed.

    The properties are read again (another writer may have turned it off already) and emptied
    before the folder goes: a crash between the two leaves a folder that no reader uses (readers
    go by the list), never a list naming a folder that is gone."""
    partitions = listed_partitions(tc.load_table_config(storage))
    if partitions:
        tc.update_table_config(storage, {tc.METADATA_PARTITIONS.key: "", tc.METADATA_PARTITIONS_INFLIGHT.key: ""})
    if storage.exists(METADATA_DIR):
        storage.delete_dir(METADATA_DIR)
    if partitions:
        warnings.warn(
            f"pyhudi turned off Apache Hudi's metadata table of {storage.base_uri} ({', '.join(partitions)}) "
            f"before writing: it does not maintain one, and readers that use it would miss pyhudi's commits. "
            f"Apache Hudi rebuilds it at its next write (hoodie.metadata.enable).", stacklevel=2)
    return partitions
