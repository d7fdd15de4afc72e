"""Modules loaded on first use, for a cold start within budget (issue 15).

``pyarrow.compute`` costs more to import than everything else a cold 2-column read does beyond
``pyarrow.parquet`` (it builds a Python wrapper with a docstring for each of its ~300 kernels),
and most reads call none of them: a read of base files and record-position patches runs on
Parquet decoding, Arrow tables and NumPy. So modules on the read path refer to it through
:data:`pc`, which imports it at the first attribute looked up on it and then serves every later
lookup from its own namespace (a plain attribute read, as fast as the module's).
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """A module's stand-in that imports it when one of its attributes is first asked for."""

    def __init__(self, name: str) -> None:
        self._lazy_name = name

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._lazy_name)
        self.__dict__.update(module.__dict__)  # (later lookups never reach __getattr__)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._lazy_name!r}>"


pc: Any = LazyModule("pyarrow.compute")
"""``pyarrow.compute``, imported on first use."""
