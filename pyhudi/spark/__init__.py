"""pyhudi on Spark (PySpark >= 4.1): the ``pyhudi`` data source, ``read`` and ``write``, and ``sql``.

``register(spark)`` makes ``spark.read.format("pyhudi")`` / ``df.write.format("pyhudi")``
available; :func:`read` and :func:`write` register it themselves. :func:`sql` runs Spark SQL over
pyhudi tables (CREATE/ALTER/INSERT/SELECT/DELETE/UPDATE/MERGE/CALL, :mod:`pyhudi.spark.sql`).
The kernel never imports this package (only it and :mod:`pyhudi.engine.spark` import pyspark).
"""

from pyhudi.spark.datasource import FORMAT, HudiDataSource, register
from pyhudi.spark.reader import read
from pyhudi.spark.sql import sql
from pyhudi.spark.writer import write

__all__ = ["FORMAT", "HudiDataSource", "read", "register", "sql", "write"]
