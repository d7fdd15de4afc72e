"""``python -m pyhudi ...``: the ``pyhudi`` command (:mod:`pyhudi.cli`)."""

import sys

from pyhudi.cli import main

sys.exit(main())
