"""Layout optimization: the order clustering writes rows in (``hoodie.layout.optimize.strategy``).

``linear`` sorts lexicographically by the sort columns; ``z-order`` and ``hilbert`` order rows along
a space-filling curve over the sort columns, so every sort column stays selective for min/max data
skipping (reference: hudi-internals-services.md §2).
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.errors import ConfigError

STRATEGIES = ("linear", "z-order", "hilbert")


def curve_order(table: pa.Table, columns: Sequence[str], strategy: str = "linear", *,
                method: str = "direct", sample_size: int = 200_000) -> pa.Array:
    """Row indices of ``table`` in the layout's order (an int64 array for ``table.take``).

    ``method`` (``direct`` / ``sample``) and ``sample_size`` shape how the curves map values;
    ``linear`` ignores them. Nulls sort last in every strategy."""
    strategy = strategy.strip().lower()
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ConfigError(f"unknown sort column(s) {', '.join(missing)}: the table has {', '.join(table.column_names)}")
    if strategy == "linear":
        return pc.sort_indices(table, [(c, "ascending") for c in columns], null_placement="at_end")
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown layout strategy {strategy!r} for hoodie.layout.optimize.strategy: "
                          f"expected one of {', '.join(STRATEGIES)}")
    raise ConfigError(f"layout strategy {strategy!r} is not built yet")
