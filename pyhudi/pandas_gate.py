"""Keep pyarrow from importing pandas on pyhudi's behalf (cold start, issue 15).

pyarrow imports pandas lazily, but at the first NumPy interop of any kind: ``pa.array`` of an
ndarray or a list, ``pa.scalar``, ``Array.to_numpy`` (and so ``np.asarray`` of an Arrow array),
a compute call with a Python scalar. When pandas is installed that costs ~0.15 s, more than
everything else a cold 2-column read does, and pyhudi never uses the result: it reads and writes
Arrow, and converts a pandas DataFrame only when the caller passes one (pandas is then loaded).

The gate is a ``sys.meta_path`` finder that refuses ``import pandas`` while pandas is not loaded
and the import was not asked for by name: the innermost Python frame below the import machinery
(pyarrow's own Python modules skipped) is pyhudi code that is not at an ``import`` statement.
pyarrow then proceeds as when pandas is absent. An ``import pandas`` by anyone else — the
caller, pyspark, pyarrow called from the caller's code (``to_pandas``) — passes; and because
pyarrow's pandas shim remembers a refused import, the gate then re-arms it (``_pandas_api.pd``
retries the import) once pandas has loaded, so pandas interop works as if the gate never ran.
Set ``PYHUDI_ALLOW_PANDAS_IMPORT=1`` to leave the import machinery alone.
"""

from __future__ import annotations

import dis
import os
import sys
from importlib.machinery import ModuleSpec
from types import FrameType, ModuleType

_IMPORT_NAME = dis.opmap["IMPORT_NAME"]
_SKIPPED = ("importlib", "pyarrow")  # frames that act for the code below them


def _asked_by_pyhudi(frame: FrameType | None) -> bool:
    """Whether the innermost frame that is not the import machinery nor pyarrow is pyhudi code
    that is not executing an ``import`` statement (an explicit import always passes)."""
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if frame.f_code.co_filename.startswith("<frozen") or name.split(".")[0] in _SKIPPED:
            frame = frame.f_back
            continue
        if not (name == "pyhudi" or name.startswith("pyhudi.")):
            return False
        return frame.f_code.co_code[frame.f_lasti] != _IMPORT_NAME
    return False


class _RearmingLoader:
    """pandas' own loader, which tells pyarrow's shim to look again once pandas has loaded."""

    def __init__(self, loader: object) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        import pyarrow.lib

        shim = pyarrow.lib._pandas_api
        if not shim._lock.locked():  # (held: the shim's first import is this one and completes itself)
            shim.pd  # noqa: B018 — retries the import a refusal made the shim give up on


class PandasGate:
    """The ``sys.meta_path`` entry (module docstring); a finder by duck typing, as ``importlib.abc``
    alone costs 10 ms to import."""

    def __init__(self) -> None:
        self.refused = 0

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname != "pandas":
            return None
        if _asked_by_pyhudi(sys._getframe(1)):
            self.refused += 1
            raise ModuleNotFoundError("pandas is not imported on pyhudi's behalf (pyhudi.pandas_gate)", name=fullname)
        if not self.refused:
            return None
        for finder in sys.meta_path:  # the spec the finders after this one give, re-arming
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _RearmingLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Put the gate first on ``sys.meta_path`` (once), unless pandas is already loaded or the
    environment opts out."""
    if "pandas" in sys.modules or os.environ.get("PYHUDI_ALLOW_PANDAS_IMPORT") == "1":
        return
    if not any(isinstance(finder, PandasGate) for finder in sys.meta_path):
        sys.meta_path.insert(0, PandasGate())
