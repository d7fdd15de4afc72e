"""Engines run kernel tasks: in process (threads) or on Spark; both run the same task functions."""

from pyhudi.engine.base import Engine, get_engine
from pyhudi.engine.local import LocalEngine

__all__ = ["Engine", "LocalEngine", "get_engine"]
