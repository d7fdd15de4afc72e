"""Waiting for a forked child in tests: a child that hangs (a lock or a pool copied by the fork)
fails the test with ``hung`` instead of hanging the suite."""

from __future__ import annotations

import os
import time

import pytest


def wait_child(pid: int, timeout: float, hung: str) -> int:
    """The wait status of child ``pid``; kills it and fails the test with ``hung`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(hung)
        time.sleep(0.01)
