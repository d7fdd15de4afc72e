"""Key generators: which one a table uses, and the settings of Hudi's timestamp-based one.

The key generator decides how a row's partition columns become its partition path. Hudi's
built-in generators fall in two groups, and readers must tell them apart:

- *identity* generators (SIMPLE, COMPLEX, NON_PARTITION) write one folder level per partition
  field, holding the value itself (``col=value`` hive-style): readers may decode values from
  paths and prune partitions by comparing them with filters;
- *transforming* generators — TIMESTAMP (one field, formatted with a date pattern such as
  ``yyyy/MM/dd/HH``: several levels for one field), CUSTOM (a mix), or any other class — write
  paths from which the values cannot be read back. Readers then find partitions by their
  ``.hoodie_partition_metadata`` marker (as Hudi does), read the partition columns from the
  data files, and prune only through the TIMESTAMP format itself (:mod:`pyhudi.keygen`).

Hudi persists the generator as ``hoodie.table.keygenerator.type`` (``...class`` before 1.0) and
the ``hoodie.keygen.timebased.*`` settings in ``hoodie.properties``; pyhudi does the same.
"""

from __future__ import annotations

from typing import Mapping

from pyhudi.config.keys import ConfigKey

_PREFIX = "hoodie.keygen.timebased."
_OLD_PREFIX = "hoodie.deltastreamer.keygen.timebased."
TIMESTAMP_TYPES = ("UNIX_TIMESTAMP", "DATE_STRING", "MIXED", "EPOCHMILLISECONDS", "EPOCHMICROSECONDS", "SCALAR")
TIME_UNITS = ("NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS")


def _timebased(suffix: str, default: str | None, doc: str, choices: tuple[str, ...] | None = None) -> ConfigKey:
    return ConfigKey(_PREFIX + suffix, str, default, doc, aliases=(_OLD_PREFIX + suffix,), choices=choices)


TIMESTAMP_TYPE = _timebased(
    "timestamp.type", None, "How the partition field holds time: epoch numbers in some unit, or date strings.",
    choices=TIMESTAMP_TYPES,
)
SCALAR_TIME_UNIT = _timebased("timestamp.scalar.time.unit", "SECONDS", "Unit of SCALAR values.", choices=TIME_UNITS)
INPUT_DATE_FORMAT = _timebased("input.dateformat", "", "Joda pattern(s) of DATE_STRING / MIXED values.")
INPUT_DATE_FORMAT_DELIMITER = _timebased(
    "input.dateformat.list.delimiter.regex", ",", "Regex separating several input patterns."
)
INPUT_TIMEZONE = _timebased("input.timezone", "", "Zone of date strings without an offset (unset: UTC).")
OUTPUT_DATE_FORMAT = _timebased("output.dateformat", "", "Joda pattern of the partition path, e.g. yyyy/MM/dd.")
OUTPUT_TIMEZONE = _timebased("output.timezone", "", "Zone the partition path is written in (unset: UTC).")
TIMEZONE = _timebased("timezone", "", "Input and output zone at once (deprecated by Hudi; wins when set).")
TIMESTAMP_KEYS = (TIMESTAMP_TYPE, SCALAR_TIME_UNIT, INPUT_DATE_FORMAT, INPUT_DATE_FORMAT_DELIMITER, INPUT_TIMEZONE,
                  OUTPUT_DATE_FORMAT, OUTPUT_TIMEZONE, TIMEZONE)

WRITE_KEYGEN_TYPE = ConfigKey("hoodie.datasource.write.keygenerator.type", str, None,
                              "Writer option naming the key generator type (stored as hoodie.table.keygenerator.type).")
WRITE_KEYGEN_CLASS = ConfigKey("hoodie.datasource.write.keygenerator.class", str, None,
                               "Writer option naming the key generator class "
                               "(stored as hoodie.table.keygenerator.class).")

IDENTITY_TYPES = frozenset({"SIMPLE", "COMPLEX", "NON_PARTITION", "NONPARTITIONED"})
KEYGEN_TYPES = ("SIMPLE", "COMPLEX", "NON_PARTITION", "TIMESTAMP", "CUSTOM")
_CLASS_TYPES = {
    "SimpleKeyGenerator": "SIMPLE", "SimpleAvroKeyGenerator": "SIMPLE",
    "ComplexKeyGenerator": "COMPLEX", "ComplexAvroKeyGenerator": "COMPLEX",
    "NonpartitionedKeyGenerator": "NON_PARTITION", "NonpartitionedAvroKeyGenerator": "NON_PARTITION",
    "GlobalDeleteKeyGenerator": "COMPLEX",
    "TimestampBasedKeyGenerator": "TIMESTAMP", "TimestampBasedAvroKeyGenerator": "TIMESTAMP",
    "CustomKeyGenerator": "CUSTOM", "CustomAvroKeyGenerator": "CUSTOM",
}
TIMESTAMP_CLASS = "org.apache.hudi.keygen.TimestampBasedKeyGenerator"


def keygen_type(type_name: str | None, class_name: str | None) -> str | None:
    """The generator's type (``SIMPLE`` ... ``CUSTOM``), from the stored type or class name.

    ``""`` when neither is stored (pre-1.0 defaults: one level per field); None for a class
    pyhudi does not know (its paths cannot be interpreted).
    """
    if type_name:
        upper = type_name.strip().upper()
        return "NON_PARTITION" if upper == "NONPARTITIONED" else upper
    if class_name:
        return _CLASS_TYPES.get(class_name.strip().rsplit(".", 1)[-1])
    return ""


def is_identity(kind: str | None) -> bool:
    """Whether paths hold the partition values themselves, one level per field."""
    return kind == "" or kind in IDENTITY_TYPES


def timestamp_settings(props: Mapping[str, str]) -> dict[str, str]:
    """The ``hoodie.keygen.timebased.*`` entries of ``props`` under their canonical names."""
    return {key.key: raw for key in TIMESTAMP_KEYS if (raw := key.raw(props)) is not None}
