"""What the benchmarks share: interleaved timing and example-robot-data's URDFs."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from itasc_ros.tools.resources import example_robot_data_file

#: Talos (example-robot-data): the whole humanoid, for the large-tree figures.
TALOS_URDF = "talos_data/robots/talos_full_v2.urdf"


def erd_urdf(rel: str) -> Path | None:
    """A URDF of example-robot-data (bench extra), or None when it is not installed.

    Args:
        rel: The path under example-robot-data's ``robots/`` (e.g.
            ``talos_data/robots/talos_full_v2.urdf``).
    """
    try:
        return example_robot_data_file(rel)
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class TimedElsewhere:
    """A call that another process runs and times, a block at a time (a peer in a worker).

    Attributes:
        time_block: Runs the call ``number`` times there; returns their time [s].
    """

    time_block: Callable[[int], float]


def time_interleaved(
    funcs: Mapping[str, Callable[[], Any] | TimedElsewhere], number: int, repeats: int
) -> dict[str, float]:
    """Median seconds per call of each function, blocks interleaved.

    Args:
        funcs: Name -> the call to time (no arguments), or a :class:`TimedElsewhere` whose
            blocks take their turn in the same order.
        number: Calls per block.
        repeats: Blocks per function (after a warm-up of ``min(number, 50)`` calls each).

    Returns:
        Name -> the median over the blocks of the time per call [s].
    """
    samples: dict[str, list[float]] = {k: [] for k in funcs}
    for f in funcs.values():  # warm-up (JIT, caches)
        if isinstance(f, TimedElsewhere):
            f.time_block(min(number, 50))
            continue
        for _ in range(min(number, 50)):
            f()
    for _ in range(repeats):
        for name, f in funcs.items():
            if isinstance(f, TimedElsewhere):
                samples[name].append(f.time_block(number) / number)
                continue
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            samples[name].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in samples.items()}


def time_paced(
    funcs: Mapping[str, Callable[[], Any]], period: float, calls: int
) -> dict[str, float]:
    """Median seconds of one call of each function, each call made after a sleep of ``period``.

    A tick as a node makes it, once per control period: its code and data are no longer where
    back-to-back calls keep them (the caches, the branch predictors; on a shared machine other
    processes have run in between). The functions take turns, one call each per round.

    Args:
        funcs: Name -> the call to time (no arguments).
        period: The sleep before each call [s].
        calls: Calls per function (after a warm-up of ``min(calls, 50)`` back-to-back calls).

    Returns:
        Name -> the median time of one call [s].
    """
    samples: dict[str, list[float]] = {k: [] for k in funcs}
    for f in funcs.values():
        for _ in range(min(calls, 50)):
            f()
    for _ in range(calls):
        for name, f in funcs.items():
            time.sleep(period)
            t0 = time.perf_counter()
            f()
            samples[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


__all__ = ["TALOS_URDF", "TimedElsewhere", "erd_urdf", "time_interleaved", "time_paced"]
