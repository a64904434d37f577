"""pytest under `mpirun -np N` / `hvdrun -np N`: every rank runs the same
tests in the same order.

Two rules keep a failure on one rank from hanging the others:
  * after each test the ranks agree on its outcome (a Max-allreduce of a
    failure flag), so a test that failed anywhere fails everywhere and `-x`
    stops every rank at the same test;
  * a failed session leaves with os._exit, skipping hvd.shutdown(), so the
    launcher sees the exit code at once and stops the job.
Tests do their collectives first and assert afterwards, so a wrong value
cannot make one rank skip a collective the others are waiting in.
"""
import os
import sys

import numpy as np
import pytest

import hvd


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.hvd_failed = report.failed


@pytest.fixture(scope="session")
def world():
    """hvd, initialised once for the session (tests that need hvd
    uninitialised run before the first test asking for this fixture)."""
    hvd.init()
    return hvd


@pytest.fixture(autouse=True)
def _agree_on_outcome(request):
    yield
    if not hvd.is_initialized():
        return
    mine = 1 if getattr(request.node, "hvd_failed", False) else 0
    anyone = hvd.allreduce(np.array([mine], dtype=np.int32), name="conftest.outcome", op=hvd.Max)
    if anyone[0] and not mine:
        pytest.fail("failed on another rank")


_exit_status = [0]


def pytest_sessionfinish(session, exitstatus):
    _exit_status[0] = int(exitstatus)


def pytest_unconfigure(config):
    # Last hook, after the report has been printed.
    if _exit_status[0] != 0:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[0])
    if hvd.is_initialized():
        hvd.shutdown()
