"""The node's solves behind the recorded commands, from the exact replay of its journal."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass
class SolveTrace:
    """The node's solves, one per recorded command, recomputed offline (k commands).

    Attributes:
        t: (k,) time of the tick that published the command [s] (the node's clock; NaN when
            the journal does not cover the command).
        sigma_min: (k,) smallest singular value (NaN where not reproduced).
        damping: (k,) damping used. locked: (k,) joints locked at a position limit.
        source: how the trace was obtained.
        status: (k,) the tick's recorded status, or the kind of a zero outside a tick
            ('shutdown', ...); '' where not reproduced.
        followed: (k,) the smallest fraction of a task's asked velocity the command gave
            (NaN: no task judged, or not reproduced).
        state_stamp: (k,) the header stamp [s] of the joint state the tick used (NaN: none,
            or not reproduced).
    """

    t: Array
    sigma_min: Array
    damping: Array
    locked: Array
    source: str
    status: list[str] = field(default_factory=list)
    followed: Array = field(default_factory=lambda: np.zeros(0))
    state_stamp: Array = field(default_factory=lambda: np.zeros(0))

    def reordered(self, order: NDArray[np.intp]) -> SolveTrace:
        """The same trace with its commands in ``order`` ((k,) indices)."""
        return SolveTrace(
            self.t[order],
            self.sigma_min[order],
            self.damping[order],
            self.locked[order],
            self.source,
            [self.status[i] for i in order],
            self.followed[order],
            self.state_stamp[order] if self.state_stamp.size else self.state_stamp,
        )


def solve_trace(report: Any, playback: Any) -> SolveTrace | None:
    """The solves behind the recorded commands, from the exact replay of the node's journal.

    Args:
        report: ``itasc-replay --compare``'s comparison of the bag's commands (or None).
        playback: the journal played back (or None).

    Returns:
        One entry per recorded command, or None when the replay matched nothing.
    """
    if report is None or playback is None or not report.matched:
        return None
    ticks = [None if i is None else playback.ticks[i] for i in report.matched]

    def col(name: str) -> Array:
        return np.array([math.nan if t is None else getattr(t, name) for t in ticks], dtype=float)

    status = ["" if t is None else (t.status if t.kind == "tick" else t.kind) for t in ticks]
    return SolveTrace(
        col("t"),
        col("sigma_min"),
        col("damping"),
        col("locked"),
        "itasc-replay --compare (the node's journal played back exactly)",
        status,
        col("followed"),
        col("state_stamp"),
    )


__all__ = ["SolveTrace", "solve_trace"]
