"""Fixtures shared by the integration tier, and how its process ends."""

import os
import sys

import pytest

from helpers.ray_local import local_ray


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster for the module's tests (helpers.ray_local), shut down after them."""
    with local_ray() as ray:
        yield ray


# The integration tier's process ends without the interpreter's teardown, with pytest's own exit status. CI's run of
# 56937d0 printed every result (1 failed, 424 passed) and then died in the teardown with a segmentation fault (exit
# 139, not reproduced here): this process has held Ray drivers, vLLM's and torch's native libraries, and their
# destructors run in an unspecified order at exit. What is exited past is only that teardown: every result, the
# JUnit file and the cache are written at session finish, before this hook. The tools and trainers the tests start
# run in their own processes, whose exit statuses the tests check.
_EXIT_STATUS: dict[str, int] = {}


def pytest_sessionfinish(session, exitstatus):
    _EXIT_STATUS["status"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "status" not in _EXIT_STATUS or hasattr(config, "workerinput"):  # an xdist worker reports to its controller
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT_STATUS["status"])
