"""Shared pytest setup: test helpers on sys.path, DDS kept on this machine for every test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

TEST_DIR = Path(__file__).resolve().parent
if str(TEST_DIR) not in sys.path:
    sys.path.insert(0, str(TEST_DIR))

# Every test process (and each child it starts with local_dds_env()) uses shared-memory DDS in a
# private domain: no UDP socket, no multicast on the network interface. The session's domain is
# ITASC_TEST_DOMAIN_ID if set, else one that no other pytest session of this machine holds.
from domains import allocate_domain, borrowed_domain  # noqa: E402
from scripts import ScriptRunner, runner  # noqa: E402

from itasc_ros.tools.collector import no_collector_pauses  # noqa: E402
from itasc_ros.tools.dds_env import apply_local_dds_env  # noqa: E402

apply_local_dds_env(int(os.environ.get("ITASC_TEST_DOMAIN_ID", 0)) or allocate_domain())

# The property tests (hypothesis) draw the same examples at every run of make test: a run's
# verdict does not depend on its luck. `pytest --hypothesis-profile=explore` (with
# `--hypothesis-seed=N` for a run to repeat) draws new ones; what it finds becomes an @example.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("repeatable")


@pytest.fixture(scope="module")
def dds_domain() -> Iterator[int]:
    """This test module's own ROS domain, released when the module's tests are done.

    The module's processes must be stopped by then (fixtures that start them depend on this one,
    so they end first). A module that needs its domain at import time (``client_fixture``) calls
    ``domains.allocate_domain()`` instead and holds it for the session.
    """
    with borrowed_domain() as domain:
        yield domain


@pytest.fixture
def script_runner() -> ScriptRunner:
    """Console scripts run as processes forked from one that imported them (``scripts.py``)."""
    return runner()


@pytest.fixture(autouse=True)
def _no_collector_pauses_in_dds_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """No garbage collection of this process during a DDS test, which stands in for the operator.

    The test process stores every message it hears (tens of thousands of objects) beside
    everything the suite imported; a full collection of it took 355-392 ms on a slowed host,
    during which its spin thread and its target publisher stood still: the node saw its
    operator go silent (a held target, then a jump), which a real operator's process would not
    do. What exists before the test stays frozen out of later collections.
    """
    if request.node.get_closest_marker("dds") is None:
        yield
        return
    with no_collector_pauses(unfreeze=False):
        yield
