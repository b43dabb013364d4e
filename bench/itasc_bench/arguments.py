"""The argument types of ``itasc-bench`` and ``python -m itasc_bench.loop``.

Each one turns a wrong value into argparse's one-line error naming what is valid. Light: the
console script checks its arguments before it imports a benchmark (and the core it runs).
"""

from __future__ import annotations

import argparse

from itasc_ros.cli import positive_float, unknown_choice
from itasc_ros.core.control.settings import CONTROLLER_RANGES
from itasc_ros.tools.resources import bundled_robots, share_dir

from .ik_rows import IK_ROWS
from .loop.flood import FLOODS


def control_rate(text: str) -> float:
    """``--rate``: a number within the node's ``control_rate`` range [Hz]."""
    lo, hi = CONTROLLER_RANGES["control_rate"]
    value = positive_float(text)
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(
            f"{text!r} Hz is outside the node's control_rate range [{lo:g}, {hi:g}] Hz"
        )
    return value


def loop_robots() -> list[str]:
    """The robots ``loop`` and ``soak`` can run: a bundled URDF and a config/<robot>.yaml."""
    return [r for r in bundled_robots() if (share_dir() / "config" / f"{r}.yaml").is_file()]


def ik_robot_list(text: str) -> list[str]:
    """``--robots``: comma-separated names of :data:`~itasc_bench.ik_rows.IK_ROWS`."""
    robots = [r.strip() for r in text.split(",") if r.strip()]
    for r in robots:
        if r not in IK_ROWS:
            raise argparse.ArgumentTypeError(unknown_choice("robot", r, IK_ROWS))
    if not robots:
        raise argparse.ArgumentTypeError(f"no robot in {text!r}; valid: {', '.join(IK_ROWS)}")
    return robots


def flood_kinds(text: str) -> list[str]:
    """``--floods``: comma-separated kinds of :data:`~.loop.flood.FLOODS` other than 'unread'."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    valid = [k for k in FLOODS if k != "unread"]
    bad = [k for k in kinds if k not in valid]
    if bad or not kinds:
        raise argparse.ArgumentTypeError(f"floods {text!r}: valid: {', '.join(valid)}")
    return kinds


__all__ = ["control_rate", "flood_kinds", "ik_robot_list", "loop_robots"]
