"""LatestWorker: requests handled in a thread, the latest only, the caller never waits."""

from __future__ import annotations

import threading
import time

from itasc_ros.core.latest_worker import LatestWorker


def test_a_request_not_yet_started_is_replaced_and_a_failure_does_not_stop_it() -> None:
    gate, done = threading.Event(), threading.Event()
    handled: list[int] = []

    def handle(n: int) -> None:
        if n == 0:
            gate.wait(5.0)  # the first request holds the thread while 1, 2, 3 arrive
        if n == 2:
            raise RuntimeError("a failing request")
        handled.append(n)
        if n == 4:
            done.set()

    worker: LatestWorker[int] = LatestWorker(handle, "test_worker")
    worker.submit(0)
    time.sleep(0.05)
    t0 = time.perf_counter()
    for n in (1, 2, 3):
        worker.submit(n)
    assert time.perf_counter() - t0 < 0.05  # submit returns at once
    gate.set()
    time.sleep(0.1)
    worker.submit(2)  # raises in the thread ...
    time.sleep(0.05)
    worker.submit(4)  # ... which still serves the next one
    assert done.wait(5.0)
    worker.close(1.0)
    assert handled == [0, 3, 4]


def test_close_stops_the_thread() -> None:
    worker: LatestWorker[int] = LatestWorker(lambda n: None, "test_worker_close")
    worker.close(1.0)
    assert not any(t.name == "test_worker_close" for t in threading.enumerate())
