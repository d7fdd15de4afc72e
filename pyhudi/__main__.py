"""``python -m pyhudi ...``: the ``pyhudi`` command (:mod:`pyhudi.cli`)."""

from pyhudi.cli import entry

entry()
