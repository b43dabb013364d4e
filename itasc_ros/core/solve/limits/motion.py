"""MotionBox: acceleration, deceleration, jerk and braking limits from the last command."""

from __future__ import annotations

from ..motion_limits import MotionLimiter
from .base import Array, Limit, intersect


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
        self.period = float(period)
        self.hold = float(hold)

    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """The motion box at the nominal period, whatever ``dt`` (see :class:`Limit`)."""
        p = self.period
        self.limiter.box(q, p, 2.0 * p, self.hold + p, lo, hi)

    def apply(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """:meth:`Limit.apply` with the box written straight by the limiter (one call less)."""
        p = self.period
        self.limiter.box(q, p, 2.0 * p, self.hold + p, self._lo, self._hi)
        intersect(lo, hi, self._lo, self._hi)


__all__ = ["MotionBox"]
