"""``itasc_node``'s entry point: SIGINT and SIGTERM are taken before the node's modules load.

Loading the node (rclpy, the messages, numba's compiled kernels) takes seconds. A SIGINT in
that time used to raise ``KeyboardInterrupt`` wherever the import was, and inside a native
callback (llvmlite's) Python dropped it: the node started anyway. Here the handlers are
installed first, with the standard library alone imported; the stop they ask for goes to
:func:`itasc_ros.ros.node.main`, which ends at once with exit status 0 when the stop came
before rclpy started, and as on any stop (a zero command, if it commanded) after.

Usage::

    python -m itasc_ros.ros.itasc_node [-h] [--ros-args ...]
"""

from __future__ import annotations

import signal
import sys
import threading


def main(args: list[str] | None = None) -> int:
    """Run ``itasc_node`` (:func:`itasc_ros.ros.node.main`) with its stop signals taken first.

    Args:
        args: the command line with the program name (default ``sys.argv``).
    """
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, on_signal)
    from .node import main as node_main  # seconds: a stop meanwhile is kept in ``stop``

    return node_main(sys.argv if args is None else args, stop)


if __name__ == "__main__":
    raise SystemExit(main())
