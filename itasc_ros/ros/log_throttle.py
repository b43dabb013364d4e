"""Throttled log lines that cost nothing while they are throttled.

rclpy's ``logger.warning(text, throttle_duration_sec=...)`` finds its caller (``inspect`` frame
info, ``os.path.realpath``) on *every* call, before it decides to drop the line: under a flood
of bad requests most of a thread's time, taken from the control thread through the
interpreter lock. A
:func:`log_throttled` call that is due logs through the logger; one that is not returns after a
dictionary look-up, and the next line that is due says how many were left out.
"""

from __future__ import annotations

import threading
import time
from typing import Any

#: (logger name, level, key) -> [time.monotonic() at which the next line is due [s],
#: lines left out since the last one].
_due: dict[tuple[str, str, str], list[float]] = {}
_lock = threading.Lock()
LEVELS = ("debug", "info", "warning", "error", "fatal")


def log_throttled(logger: Any, level: str, key: str, text: str, period: float) -> bool:
    """Log ``text`` at ``level`` unless a line of ``key`` was logged less than ``period`` ago.

    Args:
        logger: an rclpy logger (``node.get_logger()``; anything with ``name`` and the level
            methods).
        level: one of :data:`LEVELS`.
        key: the kind of line (e.g. ``'input rejected'``): each key of a logger has its own
            period.
        text: the line.
        period: the shortest time between two lines of ``key`` [s].

    Returns:
        True when the line was logged.
    """
    if level not in LEVELS:
        raise ValueError(f"log level {level!r}: valid: {', '.join(LEVELS)}")
    slot = (str(getattr(logger, "name", "")), level, key)
    now = time.monotonic()
    with _lock:
        due = _due.setdefault(slot, [-float("inf"), 0.0])
        if now < due[0]:
            due[1] += 1
            return False
        left_out = int(due[1])
        due[0], due[1] = now + period, 0.0
    if left_out:
        text = f"{text} ({left_out} more like it since the last one, not logged)"
    _emit(logger, level, text)
    return True


def _emit(logger: Any, level: str, text: str) -> None:
    """One line at ``level``: a call site per level, as rclpy holds each site to one severity."""
    if level == "debug":
        logger.debug(text)
    elif level == "info":
        logger.info(text)
    elif level == "warning":
        logger.warning(text)
    elif level == "error":
        logger.error(text)
    else:
        logger.fatal(text)


def forget_throttles() -> None:
    """Let every key's next line through (tests)."""
    with _lock:
        _due.clear()


__all__ = ["LEVELS", "forget_throttles", "log_throttled"]
