"""pyhudi's benchmarks: ``python -m bench <scenario> [--rows N] [--repeat K]`` (see ``__main__``).

The standalone scripts (``bench_*.py``) import their siblings by bare name (``scenario_w``), so
this directory goes on ``sys.path`` when the package is imported.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.append(_HERE)
