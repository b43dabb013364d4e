"""The node's process: rclpy started quietly, and a refused start-up told in one line.

A start-up mistake ends ``itasc_node`` with one line on stderr and exit status 2: rcl's own
complaints about the arguments are dropped (:func:`quiet_init`) and the error is printed
without rcl's source locations (:func:`refuse`).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings
from typing import Any

import rclpy

from ..cli import USAGE_EXIT


def refuse(program: str, exc: BaseException) -> int:
    """Print the one-line start-up error on stderr; the exit status of a usage error."""
    text = re.sub(r",? at /\S+:\d+", "", str(exc))  # rcl's source locations
    if "parameter override rule" in text:
        text += " (-p takes name:=value, e.g. -p control_rate:=500.0)"
    print(f"{program}: error: cannot start: {' '.join(text.split())}", file=sys.stderr, flush=True)
    return USAGE_EXIT


def quiet_init(args: list[str] | None) -> None:
    """``rclpy.init``; what rcl prints on stderr while it refuses the arguments is dropped.

    The caller prints the one-line error instead; on success the output is passed on.
    Signal handling stays with the caller (rclpy installs none).
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as out:
            os.dup2(out.fileno(), 2)
            try:
                _init(args)
            finally:
                os.dup2(saved, 2)
            out.seek(0)
            os.write(2, out.read())
    finally:
        os.close(saved)


def _init(args: list[str] | None) -> None:
    try:
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):  # pragma: no cover - rclpy without the option
        rclpy.init(args=args)


def route_warnings(logger: Any) -> None:
    """Python warnings (a missing mesh replaced by a capsule, ...) go to ``logger``, one line.

    Without this they would reach the terminal as Python's own two-line text, outside the ROS
    log (its format, its level filter, rosout).
    """

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        logger.warning(str(message))

    warnings.showwarning = show


__all__ = ["quiet_init", "refuse", "route_warnings"]
