"""``python -m pyhudi.cli ...``: the ``pyhudi`` command."""

from pyhudi.cli import entry

entry()
