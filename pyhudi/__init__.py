"""pyhudi: Apache Hudi tables from Python, with column families (RFC-80) and clustering (RFC-19)."""

from pyhudi.errors import *  # noqa: F401,F403
from pyhudi.errors import __all__ as _error_names

__version__ = "0.1.0"
__all__ = [*_error_names, "__version__"]
