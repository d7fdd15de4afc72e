"""Static registration of the ``pyhudi`` Spark data source.

PySpark (>= 4.0) looks, once per Spark application, for installed top-level modules named
``pyspark_*`` that define ``DefaultSource``, and registers each under its ``name()`` for every
session: ``spark.read.format("pyhudi")`` then works without :func:`pyhudi.spark.register` —
in sessions made by ``spark.newSession()``, and on a Spark Connect server where pyhudi is
installed. :func:`pyhudi.spark.register` is still what turns on filter pushdown for a session
and registers the per-table sources of catalog tables.

PySpark lists modules with ``pkgutil.iter_modules()`` in a Python worker: the module must sit in
a directory on that worker's ``sys.path``. A wheel install puts it in site-packages; an editable
install puts the checkout on ``sys.path`` through a ``.pth`` line (``package-dir`` in
``pyproject.toml``: setuptools' import-hook flavour of editable installs is invisible to the
listing). A worker Python without pyhudi finds nothing: Spark says ``DATA_SOURCE_NOT_FOUND``
(see :mod:`pyhudi.spark.workers`).
"""

from pyhudi.spark.datasource import HudiDataSource as DefaultSource

__all__ = ["DefaultSource"]
