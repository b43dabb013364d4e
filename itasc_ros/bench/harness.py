"""What the benchmarks share: interleaved timing, example-robot-data's URDFs, loop arguments."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cli import positive_float
from ..tools.resources import bundled_robots, share_dir


def erd_urdf(rel: str) -> Path | None:
    """A URDF of example-robot-data (bench extra), or None when it is not installed."""
    for base in Path(sys.prefix).glob("lib/python3*/site-packages/cmeel.prefix/share"):
        p = base / "example-robot-data" / "robots" / rel
        if p.is_file():
            return p
    return None


def time_interleaved(
    funcs: dict[str, Callable[[], Any]], number: int, repeats: int
) -> dict[str, float]:
    """Median seconds per call of each function, blocks interleaved."""
    samples: dict[str, list[float]] = {k: [] for k in funcs}
    for f in funcs.values():  # warm-up (JIT, caches)
        for _ in range(min(number, 50)):
            f()
    for _ in range(repeats):
        for name, f in funcs.items():
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            samples[name].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in samples.items()}


def control_rate(text: str) -> float:
    """``--rate``: a number within the node's ``control_rate`` range [Hz]."""
    from ..core.control.config import CONTROLLER_RANGES

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
