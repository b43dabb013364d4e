"""LatestWorker: a daemon thread that serves only the latest of its requests.

Used where a request may take long (parsing a large URDF, solving IK) and the caller, the
control loop's thread, must never wait: :meth:`LatestWorker.submit` returns at once, a request
not yet started is replaced by a newer one, and the handler runs in the worker thread. ROS-free.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

R = TypeVar("R")


class LatestWorker(Generic[R]):
    """Runs ``handle(request)`` in a daemon thread for the latest request submitted.

    Args:
        handle: called in the worker thread with each request it takes; an exception it
            raises is dropped (the worker keeps serving).
        name: the thread's name.
    """

    def __init__(self, handle: Callable[[R], None], name: str) -> None:
        self._handle = handle
        self._cv = threading.Condition()
        self._request: R | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, request: R) -> None:
        """Queue ``request``, replacing one not yet started; returns at once."""
        with self._cv:
            self._request = request
            self._cv.notify()

    def close(self, timeout: float) -> None:
        """Stop the thread; a request in progress may finish, ``timeout`` [s] is waited."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._request is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                request, self._request = self._request, None
            if request is None:
                continue
            try:
                self._handle(request)
            except Exception:  # e.g. publishing while the node shuts down: keep serving
                continue
            finally:
                del request


__all__ = ["LatestWorker"]
