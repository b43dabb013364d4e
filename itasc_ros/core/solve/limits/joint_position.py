"""JointPositionLimit: no joint passes its position limit within the next step."""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from .base import Array, Limit


@njit(cache=True, nogil=True)
def next_step_box(q, lower, upper, dt, lo, hi):  # pragma: no cover - compiled
    """``max(0, (upper - q) / dt)`` above, ``min(0, (lower - q) / dt)`` below (n,)."""
    for j in range(q.shape[0]):
        hi[j] = max(0.0, (upper[j] - q[j]) / dt) if not math.isinf(upper[j]) else math.inf
        lo[j] = min(0.0, (lower[j] - q[j]) / dt) if not math.isinf(lower[j]) else -math.inf


@njit(cache=True, nogil=True)
def intersect_next_step(q, lower, upper, dt, lo, hi):  # pragma: no cover - compiled
    """:func:`next_step_box` intersected into ``[lo, hi]`` (n,) in place (the later wins)."""
    for j in range(q.shape[0]):
        b = max(0.0, (upper[j] - q[j]) / dt) if not math.isinf(upper[j]) else math.inf
        a = min(0.0, (lower[j] - q[j]) / dt) if not math.isinf(lower[j]) else -math.inf
        na = max(lo[j], a)
        nb = min(hi[j], b)
        if na > nb:
            na, nb = a, b
        lo[j] = na
        hi[j] = nb


@njit(cache=True, nogil=True)
def joint_box(q, vmax, lower, upper, dt, lo, hi):  # pragma: no cover - compiled
    """The velocity limits and the next step's position limits, written into ``lo``, ``hi``.

    What :class:`~itasc_ros.core.solve.limits.JointVelocityLimit` and
    :class:`JointPositionLimit` intersect, in one call (both contain zero: they never conflict).
    """
    for j in range(q.shape[0]):
        b = max(0.0, (upper[j] - q[j]) / dt) if not math.isinf(upper[j]) else math.inf
        a = min(0.0, (lower[j] - q[j]) / dt) if not math.isinf(lower[j]) else -math.inf
        lo[j] = max(-vmax[j], a)
        hi[j] = min(vmax[j], b)


@njit(cache=True, nogil=True)
def position_sides(q, lower, upper, dt, lo, hi, side):  # pragma: no cover - compiled
    """Which side of each joint's final box ``[lo, hi]`` the next step's position limit sets.

    ``side`` (n,) output: +1 where ``hi`` is ``max(0, (upper - q) / dt)`` (the box's upper side
    takes the joint to its upper limit within the step), -1 where ``lo`` is the lower limit's,
    0 neither. Limits that set position sides of their own add theirs
    (:meth:`~itasc_ros.core.solve.limits.base.Limit.mark_sides`).
    """
    for j in range(q.shape[0]):
        side[j] = 0.0
        if not math.isinf(upper[j]) and hi[j] >= max(0.0, (upper[j] - q[j]) / dt):
            side[j] = 1.0
        elif not math.isinf(lower[j]) and lo[j] <= min(0.0, (lower[j] - q[j]) / dt):
            side[j] = -1.0


@njit(cache=True, nogil=True)
def position_sides_unmarked(q, lower, upper, dt, lo, hi, side):  # pragma: no cover - compiled
    """:func:`position_sides` on the joints whose ``side`` (n,) is 0, the others left as marked.

    The scene clears ``side``, lets its added limits mark theirs
    (:meth:`~itasc_ros.core.solve.limits.base.Limit.mark_sides`, which only set +1 or -1),
    then marks the position limits' on the rest: the sides :func:`position_sides` and then the
    limits' marks give.
    """
    for j in range(q.shape[0]):
        if side[j] != 0.0:
            continue
        if not math.isinf(upper[j]) and hi[j] >= max(0.0, (upper[j] - q[j]) / dt):
            side[j] = 1.0
        elif not math.isinf(lower[j]) and lo[j] <= min(0.0, (lower[j] - q[j]) / dt):
            side[j] = -1.0


class JointPositionLimit(Limit):
    """``q + q' dt`` within ``[lower, upper]``; a joint beyond a limit may only move back.

    Args:
        lower: (n,) lower position limits [rad or m] (-inf: none).
        upper: (n,) upper position limits (inf: none).
    """

    name = "joint position"

    def __init__(self, lower: ArrayLike, upper: ArrayLike) -> None:
        self.lower = np.asarray(lower, dtype=float).reshape(-1).copy()
        self.upper = np.asarray(upper, dtype=float).reshape(-1).copy()
        super().__init__(self.lower.shape[0])

    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """The next step's bounds (see :class:`Limit`)."""
        next_step_box(q, self.lower, self.upper, float(dt), lo, hi)

    def apply(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """Intersect the next step's bounds in one compiled call (the tick's hot path)."""
        intersect_next_step(q, self.lower, self.upper, float(dt), lo, hi)


__all__ = [
    "JointPositionLimit",
    "intersect_next_step",
    "joint_box",
    "next_step_box",
    "position_sides",
    "position_sides_unmarked",
]
