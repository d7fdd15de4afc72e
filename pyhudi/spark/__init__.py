"""pyhudi on Spark (PySpark >= 4.1): the ``pyhudi`` data source, ``read`` and ``write``.

``register(spark)`` makes ``spark.read.format("pyhudi")`` / ``df.write.format("pyhudi")``
available; :func:`read` and :func:`write` register it themselves. The kernel never imports this
package (only it and :mod:`pyhudi.engine.spark` import pyspark).
"""

from pyhudi.spark.datasource import FORMAT, HudiDataSource, register
from pyhudi.spark.reader import read
from pyhudi.spark.writer import write

__all__ = ["FORMAT", "HudiDataSource", "read", "register", "write"]
