"""Keep the cyclic garbage collector off the objects ``import pyhudi`` creates (issue 15).

After ``import pyhudi`` a process holds ~27,000 objects the cyclic garbage collector tracks:
NumPy's, pyarrow's and pyhudi's modules, functions, classes and their dicts. They live as long
as the process, yet every full collection walks all of them again: some while pyhudi's own
modules load (each module adds objects, and every so many new objects trigger a collection),
one or two during the first read while its modules load, and three while the interpreter shuts
down. On the development machine that walking is ~18 ms of a ~130 ms cold 2-column read, more
than reading the files.

So ``import pyhudi`` runs with collections paused, and — when the program is still importing
its modules — ends with ``gc.freeze()``, which moves every tracked object into the collector's
permanent generation that collections skip (CPython ≥ 3.7; the step servers take before
forking workers). The objects stay alive and are freed by reference counting as usual if their
references drop; what they give up is only cycle detection, which module-level objects never
need.

The freeze would also keep alive, for good, any object the caller made before the import that
later becomes unreachable in a reference cycle. So it happens only at a program's own imports:
when every frame below the import is a module body (``import pyhudi`` at the top of a script or
of modules the script imports, ``python -c``, ``python -m``), not when a function imports pyhudi late (a
server, a notebook cell run by IPython, a Spark worker, pytest), when the caller's state may be
large. The ``pyhudi`` command freezes once more when it starts (rich's modules). The cycles
pyhudi's own import leaves (~400 objects, ~0.3 MB) are frozen with the rest.
``gc.unfreeze()`` undoes a freeze at any time; ``PYHUDI_GC_FREEZE=0`` in the environment
leaves the collector alone altogether.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

ENV = "PYHUDI_GC_FREEZE"
"""Environment variable: ``0`` leaves the collector alone at ``import pyhudi``."""

_MODULE_BODY = "<module>"
_STARTUP = ("<frozen importlib", "<frozen runpy")
"""Frames of the import machinery and of ``python -m`` starting the program's main module."""


def enabled() -> bool:
    """Whether ``import pyhudi`` pauses and then freezes the collector (``PYHUDI_GC_FREEZE``)."""
    return os.environ.get(ENV, "1").strip() != "0"


def at_program_import(frame: FrameType | None) -> bool:
    """Whether ``frame`` and every frame below it are module bodies, the import machinery or
    ``python -m``'s start of the main module: the program is still importing its modules, no
    function of it is running yet."""
    while frame is not None:
        code = frame.f_code
        if code.co_name != _MODULE_BODY and not code.co_filename.startswith(_STARTUP):
            return False
        frame = frame.f_back
    return True


def freeze() -> None:
    """Freeze every tracked object now, unless ``PYHUDI_GC_FREEZE=0`` (a process that is
    pyhudi's own: the ``pyhudi`` command, once rich's modules are loaded)."""
    if enabled():
        gc.freeze()


@contextmanager
def frozen_after(freeze: bool = True) -> Iterator[None]:
    """Run the body (pyhudi's imports) with collections paused; then, with ``freeze`` and when
    the caller's import is part of the program's own imports (:func:`at_program_import`),
    freeze every tracked object. (The ``pyhudi`` command's module, which a library user may
    import at any time, passes ``freeze=False``: the command freezes when it starts.) The
    collector's previous on/off state is restored either way."""
    if not enabled():
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze and at_program_import(sys._getframe(2)):  # (below this generator and contextlib)
            gc.freeze()
    finally:
        if was_enabled:
            gc.enable()
