"""The measuring process's reader: its subscriptions' messages taken from one ``rcl`` wait set."""

from __future__ import annotations

import threading
from typing import Any

from itasc_ros.ros.realtime import demote_current_thread


class WaitSetReader:
    """Takes this process's subscriptions' messages from one wait set, in a thread.

    The measuring process must disturb the machine as little as possible: on a 2-core machine
    an executor in this process (about two thirds of a core at 1 kHz with rclpy's
    SingleThreadedExecutor) takes CPU from the node and the sim robot it measures. This loop
    waits on one ``rcl`` wait set and takes every ready message with its ``MessageInfo``
    (DDS source and reception timestamps, the same call rclpy's executors make); no executor,
    no timers, no futures.

    Args:
        context: the rclpy context of the subscriptions.
        handlers: (subscription, handler) pairs; ``handler(msg, info)`` gets the message (bytes
            for a raw subscription) and the info dict (``source_timestamp``,
            ``received_timestamp`` [ns]).
    """

    def __init__(self, context: Any, handlers: list[tuple[Any, Any]]) -> None:
        from itasc_ros.ros import rclpy_compat

        self._context = context
        self._handlers = handlers
        self._wait_set = rclpy_compat.wait_set(len(handlers), 0, context)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench_loop_reader", daemon=True)

    def start(self) -> None:
        """Start taking messages, in a daemon thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (within 0.1 s of its wait) and wait up to 2 s for it."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        # On the normal scheduler, as this process's DDS threads: a real-time reader would
        # hold back the thread that stamps a command's reception while it handles the previous
        # message (it starts there when a real-time thread starts it; made sure of here).
        demote_current_thread()
        ws = self._wait_set
        with self._context.handle:
            while not self._stop.is_set() and self._context.ok():
                ws.clear_entities()
                for sub, _ in self._handlers:
                    ws.add_subscription(sub.handle)
                ws.wait(100_000_000)  # [ns]: wakes for the stop flag at least every 0.1 s
                for sub, handler in self._handlers:
                    with sub.handle:
                        take = sub.handle.take_message
                        while (taken := take(sub.msg_type, sub.raw)) is not None:
                            handler(*taken)


__all__ = ["WaitSetReader"]
