"""The executor every itasc_ros process spins: rclpy's EventsExecutor where it exists.

The EventsExecutor (``rclpy.experimental``: Jazzy from rclpy 7.1.4, Kilted) runs a 1 kHz timer for
a fraction of the CPU of the SingleThreadedExecutor. Humble does not have it and gets the
SingleThreadedExecutor (:mod:`~itasc_ros.ros.rclpy_compat`). ``ITASC_EXECUTOR=single`` in the
environment forces the SingleThreadedExecutor everywhere (for comparison and debugging).
"""

from __future__ import annotations

import os
import threading
import time
from typing import cast

import rclpy
from rclpy.executors import Executor, SingleThreadedExecutor

from . import rclpy_compat

#: How often :func:`spin_until` checks that the context is still valid [s].
OK_CHECK_PERIOD = 0.05


def make_executor(context: rclpy.Context | None = None) -> Executor:
    """Return the fastest executor this rclpy offers.

    Args:
        context: the rclpy context the executor belongs to (default: the global one).

    Returns:
        An EventsExecutor when ``rclpy.experimental`` has one and ``ITASC_EXECUTOR`` is not
        ``single``, else a SingleThreadedExecutor.
    """
    if os.environ.get("ITASC_EXECUTOR", "") != "single":
        events = rclpy_compat.events_executor(context)
        if events is not None:
            return cast(Executor, events)
    return SingleThreadedExecutor(context=context)


def spin_until(
    executor: Executor, stop: threading.Event, context: rclpy.Context | None = None
) -> None:
    """Spin ``executor`` until ``stop`` is set or ``context`` (default: global) shuts down.

    ``Context.ok()`` takes two locks; called after every event it was ~10 % of a 1 kHz node's
    Python samples (py-spy), so it is checked at most every :data:`OK_CHECK_PERIOD`.
    """
    ctx = context if context is not None else rclpy.get_default_context()
    next_check = 0.0
    while not stop.is_set():
        executor.spin_once(timeout_sec=OK_CHECK_PERIOD)
        t = time.monotonic()
        if t >= next_check:
            if not ctx.ok():
                return
            next_check = t + OK_CHECK_PERIOD
