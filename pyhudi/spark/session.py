"""A local-mode Spark session for pyhudi's own commands (``pyhudi write --engine spark``, the demo).

``local_session()`` builds a ``local[2]`` session with pyhudi's recommended settings
(:func:`pyhudi.spark.conf.configure`), the UI and the console progress bar off, and Spark's
Python workers running this Python with this checkout first on their path. Spark logs errors
only (``setLogLevel("ERROR")``). With ``log_dir``, Spark's own output stays out of the console
altogether: the JVM's stderr — what it prints before the log level applies, and what the Python
workers it starts print — goes to ``log_dir/spark.log`` (file descriptor 2 points there while the
JVM starts, and the JVM keeps it); a log4j2 configuration at error level is passed as the JVM's
``spark.driver.extraJavaOptions`` too.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` while the JVM starts: it inherits that descriptor and
    keeps it; this process gets its own stderr back afterwards."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def local_session(app_name: str = "pyhudi", log_dir: Path | None = None) -> Any:
    """A new (or the running) local[2] session; see the module docstring. ``log_dir`` is created
    when missing (the tour's ``python examples/tour_spark.py DIR`` names a folder not made yet)."""
    from pyspark.sql import SparkSession

    from pyhudi.spark.conf import configure

    root = str(Path(__file__).resolve().parents[2])  # Spark's Python workers import this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (configure(SparkSession.builder).master("local[2]").appName(app_name)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1"))
    if log_dir is None:
        spark = builder.getOrCreate()
    else:
        Path(log_dir).mkdir(parents=True, exist_ok=True)  # (a folder the caller names but has not made yet)
        config = Path(log_dir) / "log4j2.properties"
        config.write_text(LOG4J2)
        java_options = f"-Dlog4j2.configurationFile={config.as_uri()}"
        builder = builder.config("spark.driver.extraJavaOptions", java_options) \
            .config("spark.executor.extraJavaOptions", java_options) \
            .config("spark.sql.warehouse.dir", str(Path(log_dir) / "spark-warehouse"))  # not in the cwd
        with _stderr_to(Path(log_dir) / "spark.log"):
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def active_or_local_session(app_name: str = "pyhudi", log_dir: Path | None = None) -> tuple[Any, bool]:
    """The running Spark session, else a new local one (its log in ``log_dir``, as
    :func:`local_session`); and whether the caller owns (stops) it."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    return local_session(app_name, log_dir=log_dir), True
