"""``python -m pyhudi.cli ...``: the ``pyhudi`` command."""

import sys

from pyhudi.cli import main

sys.exit(main())
