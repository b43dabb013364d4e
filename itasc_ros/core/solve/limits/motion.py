"""MotionBox: acceleration, deceleration, jerk and braking limits from the last command."""

from __future__ import annotations

import numpy as np
from numba import njit

from ..motion_limits import MotionLimiter, braking_sides, motion_box
from .base import Array, Limit, intersect


@njit(cache=True)
def motion_box_within(  # pragma: no cover - compiled
    v: Array,
    a: Array,
    q: Array,
    lower: Array,
    upper: Array,
    vmax: Array,
    amax: Array,
    dmax: Array,
    jmax: Array,
    dt: float,
    hold: float,
    lo: Array,
    hi: Array,
    box_lo: Array,
    box_hi: Array,
) -> None:
    """:func:`~itasc_ros.core.solve.motion_limits.motion_box` intersected into ``lo``, ``hi``.

    The motion box at the nominal period ``dt`` [s] (held twice that, ``hold`` [s] before a
    stop) into ``box_lo``, ``box_hi`` (n,), then ``[lo, hi]`` (n,) intersected with it (it
    wins where they do not meet: a command never jumps), in one compiled call.
    """
    motion_box(v, a, q, lower, upper, vmax, amax, dmax, jmax, dt, 2.0 * dt, hold, box_lo, box_hi)
    intersect(lo, hi, box_lo, box_hi)


class MotionBox(Limit):
    """This tick's command within the motion limits of the last published one.

    The box of :meth:`MotionLimiter.box <itasc_ros.core.solve.motion_limits.MotionLimiter.box>`:
    from the limiter's last command and its acceleration, the acceleration, deceleration and
    jerk windows over the nominal period, the jerk's ramp before the velocity limit and the
    braking curves before the position limits. It is the scene's last limit: where it conflicts
    with the others (a limit changed live) it wins, so a command never jumps.

    Args:
        limiter: the controller's motion limiter (its last command is read at each solve).
        period: the nominal control period [s] (late ticks get no larger change).
        hold: how long a command may go on before a stop ramps it down [s] (input_timeout).
    """

    name = "motion (acceleration, jerk, braking)"

    def __init__(self, limiter: MotionLimiter, period: float, hold: float) -> None:
        super().__init__(limiter.v.shape[0])
        self.limiter = limiter
        self.period = max(float(period), 1e-6)
        self.hold = float(hold)
        lo, hi = np.full_like(self.tick_lo, -np.inf), np.full_like(self.tick_hi, np.inf)
        self.apply(
            limiter.v.copy(), self.period, lo, hi
        )  # compiled (or loaded) now, not in a tick
        self.mark_sides(limiter.v.copy(), lo, hi, np.zeros_like(lo))

    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """The motion box at the nominal period, whatever ``dt`` (see :class:`Limit`)."""
        p = self.period
        self.limiter.box(q, p, 2.0 * p, self.hold + p, lo, hi)

    def apply(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """:meth:`Limit.apply` in one compiled call (:func:`motion_box_within`)."""
        lim, p = self.limiter, self.period
        motion_box_within(
            lim.v, lim.a, q, lim.lower, lim.upper, lim.vmax, lim.amax, lim.dmax, lim.jmax, p,
            self.hold + p, lo, hi, self.tick_lo, self.tick_hi,
        )  # fmt: skip

    def mark_sides(self, q: Array, lo: Array, hi: Array, side: Array) -> None:
        """The braking curves' sides (:func:`~itasc_ros.core.solve.motion_limits.braking_sides`).

        See :meth:`Limit.mark_sides`.
        """
        lim, p = self.limiter, self.period
        braking_sides(
            q, lim.lower, lim.upper, lim.amax, lim.dmax, lim.jmax, 2.0 * p, self.hold + p, lo,
            hi, side,
        )  # fmt: skip


__all__ = ["MotionBox", "motion_box_within"]
