"""Keep the cyclic garbage collector off the objects ``import pyhudi`` creates (issue 15).

After ``import pyhudi`` a process holds ~27,000 objects the cyclic garbage collector tracks:
NumPy's, pyarrow's and pyhudi's modules, functions, classes and their dicts. They live as long
as the process, yet every full collection walks all of them again: some while pyhudi's own
modules load (each module adds objects, and every so many new objects trigger a collection),
one or two during the first read while its modules load, and three while the interpreter shuts
down. On the development machine that walking is ~18 ms of a ~130 ms cold 2-column read, more
than reading the files.

So ``import pyhudi`` runs with collections paused, and ends with ``gc.freeze()``, which moves
every tracked object into the collector's permanent generation that collections skip (CPython
≥ 3.7; the step servers take before forking workers). The objects stay alive and are freed by
reference counting as usual if their references drop; what they give up is only cycle
detection, which module-level objects never need. An object the caller created before
``import pyhudi`` that later becomes unreachable in a reference cycle would not be reclaimed:
the freeze happens once, at pyhudi's first import (and once more when the ``pyhudi`` command
starts, for rich's modules), ``gc.unfreeze()`` undoes it at any time, and
``PYHUDI_GC_FREEZE=0`` in the environment leaves the collector alone.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "PYHUDI_GC_FREEZE"
"""Environment variable: ``0`` leaves the collector alone at ``import pyhudi``."""


def enabled() -> bool:
    """Whether ``import pyhudi`` pauses and then freezes the collector (``PYHUDI_GC_FREEZE``)."""
    return os.environ.get(ENV, "1").strip() != "0"


@contextmanager
def frozen_after(freeze: bool = True) -> Iterator[None]:
    """Run the body (pyhudi's imports) with collections paused; freeze every tracked object
    when it succeeds (unless ``freeze`` is False: the ``pyhudi`` command's module, which a
    library user may import at any time, freezes only when it runs as the command). The
    collector's previous on/off state is restored either way."""
    if not enabled():
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        if was_enabled:
            gc.enable()
