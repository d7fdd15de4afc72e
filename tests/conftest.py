"""Shared test fixtures: the Apache-Hudi-written fixture tables in ../shared/fixtures/hudi."""

from __future__ import annotations

import pathlib
import zipfile

import pytest

FIXTURES_DIR = pathlib.Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi"


def fixture_zips() -> list[pathlib.Path]:
    """Every fixture table zip, sorted (for parametrisation)."""
    return sorted(FIXTURES_DIR.glob("**/*.zip"))


def extract_table(zip_path: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """Unzip a fixture table into ``dest`` and return the table directory (the one with .hoodie)."""
    with zipfile.ZipFile(zip_path) as zf:
        members = [m for m in zf.namelist() if not m.startswith("__MACOSX")]
        zf.extractall(dest, members=members)
    tables = [p.parent for p in dest.glob("*/.hoodie") if p.is_dir()]
    if len(tables) != 1:
        raise RuntimeError(f"{zip_path}: expected one table directory, found {tables}")
    return tables[0]


@pytest.fixture(scope="session")
def fixtures_dir() -> pathlib.Path:
    if not FIXTURES_DIR.is_dir():
        pytest.fail(f"fixture directory missing: {FIXTURES_DIR} (shared/ must sit beside the repo)")
    return FIXTURES_DIR


@pytest.fixture
def unzip_fixture(tmp_path):
    """``unzip_fixture("sample_table/cow/v8_nonpartitioned.zip")`` → extracted table directory."""

    def _unzip(name: str) -> pathlib.Path:
        return extract_table(FIXTURES_DIR / name, tmp_path / pathlib.Path(name).stem)

    return _unzip


@pytest.fixture(scope="session")
def spark():
    """ONE local Spark session for the whole test run (each Spark action costs ~1 s: keep them few).

    local[2], UI off, 2 shuffle partitions, Python data source filter pushdown on, and the settings
    pyhudi recommends (``pyhudi.spark.conf.configure``).
    """
    import os
    import sys

    from pyspark.sql import SparkSession

    from pyhudi.spark.conf import configure

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers use this venv (pyarrow, pyhudi)
    # Workers must run THIS checkout (the installed pyhudi may be another one, e.g. a git
    # worktree's tests): put it first on the workers' path. How installs are found without this:
    # tests/test_spark_install.py.
    repo = str(pathlib.Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p)
    session = (
        configure(SparkSession.builder).master("local[2]")  # pyhudi's recommended settings
        .appName("pyhudi-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.pyspark.python", sys.executable)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
