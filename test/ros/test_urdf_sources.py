"""The node's URDF parser thread (:class:`~itasc_ros.ros.urdf_sources.UrdfWorker`), in process."""

from __future__ import annotations

import time

from procs import PANDA_URDF, REPO

from itasc_ros.core import Controller
from itasc_ros.params import load_config
from itasc_ros.ros.urdf_sources import UrdfWorker

TIMEOUT = 60.0  # [s]


def _wait_for_result(worker: UrdfWorker) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not worker.results:
        assert time.monotonic() < deadline, "no result from the parser thread"
        time.sleep(0.01)


def test_a_urdf_is_pending_from_its_submit_until_its_result_is_taken() -> None:
    """What a request waiting for a model (the node's IK) asks: is a model on its way?"""
    config = load_config(REPO / "config" / "panda.yaml")
    worker = UrdfWorker(lambda: "", lambda: config)
    try:
        assert not worker.pending
        for xml, good in (
            (PANDA_URDF.read_text(), True),
            ("<robot name='broken'><link", False),
            ("<robot name='x'/>", False),
        ):
            worker.submit(xml, "topic")
            assert worker.pending  # at once: before the thread took it
            _wait_for_result(worker)
            assert worker.pending  # parsed, not yet installed
            _, _, tree, why, built, _ = worker.results.popleft()
            assert not worker.pending
            assert (tree is not None and isinstance(built, Controller)) == good, why
            assert good or why
        worker.submit(PANDA_URDF.read_text(), "topic")  # two at once: the latest counts
        worker.submit("<robot name='broken'><link", "topic")
        deadline = time.monotonic() + TIMEOUT
        while worker.pending:
            assert time.monotonic() < deadline, "still pending"
            while worker.results:
                worker.results.popleft()
            time.sleep(0.01)
    finally:
        worker.close()
