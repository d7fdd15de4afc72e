"""pyhudi's JVM side: the merge reader's jar, built from the Java sources shipped with pyhudi.

The merge reader (:mod:`pyhudi.spark.merge_scan`, ``pyhudi/spark/java``) is a Spark data source
written in Java against Spark's own classes (its vectorized Parquet reader, its column vectors).
It is compiled on this machine, against the jars of the installed PySpark — so it always matches
the Spark it runs in — the first time a read needs it, and kept in a per-user cache directory
keyed by the sources' and Spark's versions (``$PYHUDI_JVM_CACHE``, else
``$XDG_CACHE_HOME/pyhudi/jvm``, else ``~/.cache/pyhudi/jvm``). It needs ``javac`` (a JDK 17 or
newer: ``$JAVA_HOME/bin/javac``, else the one on ``PATH``); without one, reads that would use it
go through the Python source, as before, and :func:`merge_jar` says why.

A build that ``javac`` refuses (e.g. a Spark whose internal reader API changed) is recorded beside
the jar (``build-failed.txt``, with the compiler's path and its errors): later processes go to the
Python source at once, instead of each running ``javac`` again before falling back. A different
``javac`` (another file, however it is reached) tries again; so does removing that file. A build
that timed out or whose ``javac`` was killed is not recorded (a busy machine), nor is a missing
``javac``; a cache that cannot be written gives a reason, and the read falls back.

A session gets the jar by ``ADD JAR`` at its first read that needs it (Spark ships it to the
executors, as for any added jar); a session started with it on ``spark.jars``
(:func:`session_jars`) already has it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

MERGE_SOURCE = "io.pyhudi.spark.MergeSource"
"""The merge reader's data source class (its short name: ``pyhudi_merge``)."""
SOURCES = Path(__file__).with_name("java")
_REGISTER = "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
_JAVAC_TIMEOUT = 300
_JAR_NAME = "pyhudi-spark.jar"
_FAILED = "build-failed.txt"
_lock = threading.Lock()
_built: dict[str, Path | str] = {}


def _spark_jars() -> Path:
    import pyspark

    home = os.environ.get("SPARK_HOME")
    jars = Path(home) / "jars" if home else Path(pyspark.__file__).with_name("jars")
    return jars if jars.is_dir() else Path(pyspark.__file__).with_name("jars")


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _cache_dir() -> Path:
    root = os.environ.get("PYHUDI_JVM_CACHE")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pyhudi" / "jvm"


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def _digest(jars: Path) -> str:
    """Of the Java sources and of the Spark they compile against (its jar names carry versions)."""
    h = hashlib.sha256()
    for path in _sources():
        h.update(path.relative_to(SOURCES).as_posix().encode())
        h.update(path.read_bytes())
    h.update("\n".join(sorted(p.name for p in jars.glob("*.jar"))).encode())
    return h.hexdigest()[:20]


def merge_jar() -> Path | str:
    """The merge reader's jar (built now if the cache has none), or why there is none (a str)."""
    jars = _spark_jars()
    key = _digest(jars)
    with _lock:
        known = _built.get(key)
        if known is None or (isinstance(known, Path) and not known.exists()):  # (a cache emptied meanwhile)
            _built[key] = _build(jars, _cache_dir() / key / _JAR_NAME)
        return _built[key]


def _build(jars: Path, target: Path) -> Path | str:
    if target.exists():
        return target
    javac = _javac()
    if javac is None:
        return "no Java compiler (javac) on PATH or in JAVA_HOME: the merge reader cannot be built"
    failed = _recorded_failure(target.parent / _FAILED, javac)
    if failed is not None:
        return failed
    try:
        return _compile(javac, jars, target)
    except OSError as exc:  # (the read falls back to the Python source: it does not fail)
        return f"the merge reader could not be built (cache {target.parent}): {exc}"


def _compile(javac: str, jars: Path, target: Path) -> Path | str:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        classes = Path(work) / "classes"
        command = [javac, "-nowarn", "-encoding", "UTF-8", "--release", "17", "-d", str(classes),
                   "-cp", str(jars / "*"), *map(str, _sources())]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=_JAVAC_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"javac did not finish building the merge reader within {_JAVAC_TIMEOUT} s"
        if done.returncode < 0:  # (killed, e.g. by the out-of-memory killer: not the sources' fault)
            return f"javac was killed by signal {-done.returncode} while building the merge reader"
        if done.returncode != 0:
            reason = f"javac failed to build the merge reader:\n{done.stderr.strip()[-2000:]}"
            _record_failure(target.parent / _FAILED, javac, reason)
            return reason
        staged = Path(work) / target.name
        with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: pyhudi\n\n")
            jar.writestr(_REGISTER, MERGE_SOURCE + "\n")
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        os.replace(staged, target)  # (atomic: a concurrent build of the same sources writes the same bytes)
    return target


def _compiler_identity(javac: str) -> str:
    """What a recorded failure names the compiler by: the file ``javac`` resolves to, and its
    size and modification time — a JDK switched behind the same path (``update-alternatives``,
    a ``JAVA_HOME`` symlink, an upgrade in place) is another compiler, and tries again."""
    real = os.path.realpath(javac)
    try:
        stat = os.stat(real)
    except OSError:
        return real
    return f"{real} ({stat.st_size} bytes, mtime {stat.st_mtime_ns} ns)"


def _record_failure(path: Path, javac: str, reason: str) -> None:
    """Keep ``javac``'s refusal for later processes (best effort: an unwritable cache only costs
    them the build again)."""
    try:
        staged = path.with_suffix(f".{os.getpid()}.tmp")
        staged.write_text(f"{_compiler_identity(javac)}\n{reason}\n", encoding="utf-8")
        os.replace(staged, path)
    except OSError:
        pass


def _recorded_failure(path: Path, javac: str) -> str | None:
    """The reason an earlier build with this ``javac`` failed, or None (never built, or built
    with another compiler: try again)."""
    try:
        recorded, _, reason = path.read_text(encoding="utf-8").partition("\n")
    except OSError:
        return None
    if recorded != _compiler_identity(javac):
        return None
    return f"{reason.strip()}\n(recorded by an earlier build in {path}; remove that file to build again)"


def session_jars(existing: str | None = None) -> str | None:
    """``spark.jars`` for a new session: ``existing`` plus the merge reader's jar when it builds."""
    jar = merge_jar()
    if not isinstance(jar, Path):
        return existing
    return ",".join(p for p in (existing, str(jar)) if p)


_loaded: dict[tuple[str, str], bool | str] = {}


def merge_source_ready(spark: Any) -> bool | str:
    """True when ``spark`` can run the merge reader (its jar is built and loaded, by ``ADD JAR`` if
    the session did not start with it); else why not (a str)."""
    if getattr(spark, "_jsparkSession", None) is None:  # (Spark Connect: ``sparkContext`` raises)
        return "a Spark Connect session has no JVM in this process to load the merge reader into"
    context = spark.sparkContext
    key = (context.applicationId, str(context.startTime))  # (one SparkContext: a stopped one's successor loads again)
    known = _loaded.get(key)
    if known is not None:
        if known is True:
            _bind_thread(spark)
        return known
    ready: bool | str
    if _shipped(spark) and _loadable(spark):  # (started with it on spark.jars)
        ready = True
    else:
        jar = merge_jar()
        if not isinstance(jar, Path):
            ready = jar
        else:
            # (what ADD JAR runs, without quoting a path in SQL: the executors fetch the jar too)
            spark._jsparkSession.sessionState().resourceLoader().addJar(jar.as_uri())
            ready = True if _loadable(spark) else f"Spark cannot load {MERGE_SOURCE} from {jar}"
    _loaded[key] = ready
    return ready


def _bind_thread(spark: Any) -> None:
    """Point this thread's JVM context class loader at the session's jar loader. ``ADD JAR``
    does that only for the JVM thread that ran it; Spark looks data sources up through the
    calling thread's loader, and each Python thread calls through its own JVM thread."""
    thread = spark.sparkContext._jvm.java.lang.Thread.currentThread()
    thread.setContextClassLoader(spark._jsparkSession.sharedState().jarClassLoader())


def _shipped(spark: Any) -> bool:
    """Whether the session's SparkContext ships the merge reader's jar to its executors. Being
    loadable on this thread is not enough: after ``spark.stop()`` the thread's context class
    loader is still the stopped session's jar loader (which has the jar) and a new session's
    loaders delegate to it, so the driver loads the classes while executors in other JVMs get no
    jar and fail to deserialize the tasks."""
    jars = spark.sparkContext._jsc.sc().listJars()
    return any(jars.apply(i).endswith("/" + _JAR_NAME) for i in range(jars.size()))


def _loadable(spark: Any) -> bool:
    jvm = spark.sparkContext._jvm
    loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    try:
        jvm.java.lang.Class.forName(MERGE_SOURCE, False, loader)
    except Exception:  # (py4j wraps ClassNotFoundException)
        return False
    return True


def main() -> int:
    """Build the merge reader's jar now (``scripts/env.sh`` calls it at set-up); print its path or why not.

    (``python -m pyhudi.spark.jvm`` works too, with a harmless runpy warning, since the package
    ``pyhudi.spark`` imports this module first.)
    """
    jar = merge_jar()
    print(jar if isinstance(jar, Path) else f"not built: {jar}")
    return 0 if isinstance(jar, Path) else 1


if __name__ == "__main__":
    raise SystemExit(main())
