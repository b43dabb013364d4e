"""The executor every itasc_ros process spins: rclpy's EventsExecutor where it exists.

The EventsExecutor (``rclpy.experimental``, Kilted and the PyPI wheels) runs a 1 kHz timer for
about a quarter of the CPU of the SingleThreadedExecutor. Humble and Jazzy do not have it (or
have it without the features we need) and get the SingleThreadedExecutor. ``ITASC_EXECUTOR=single``
in the environment forces the SingleThreadedExecutor everywhere (for comparison and debugging).
"""

from __future__ import annotations

import os

import rclpy
from rclpy.executors import Executor, SingleThreadedExecutor


def make_executor(context: rclpy.Context | None = None) -> Executor:
    """Return the fastest executor this rclpy offers.

    Args:
        context: the rclpy context the executor belongs to (default: the global one).

    Returns:
        An EventsExecutor when ``rclpy.experimental`` has one and ``ITASC_EXECUTOR`` is not
        ``single``, else a SingleThreadedExecutor.
    """
    if os.environ.get("ITASC_EXECUTOR", "") != "single":
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            pass
        else:
            return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)
