"""pyhudi: Apache Hudi tables from Python, with column families (RFC-80) and clustering (RFC-19).

Start with :func:`create_table` or :func:`open_table`; DESIGN §5 lists the public surface.
"""

from pyhudi import gc_freeze

with gc_freeze.frozen_after():  # see the module's docstring
    from pyhudi import pandas_gate

    pandas_gate.install()  # before anything calls pyarrow: see the module's docstring

    from pyhudi.config.families import ColumnFamily
    from pyhudi.errors import *  # noqa: F401,F403
    from pyhudi.errors import __all__ as _error_names
    from pyhudi.table import Table, create_table, open_table
    from pyhudi.timeline.instant import Action, Instant, State

__version__ = "0.1.0"
__all__ = [
    "create_table",
    "open_table",
    "Table",
    "ColumnFamily",
    "Instant",
    "Action",
    "State",
    *_error_names,
    "__version__",
]
