"""HeldJoints: joints held on given velocities this tick, whatever the other limits allow."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .base import Array, Limit


class HeldJoints(Limit):
    """Some joints held at given velocities: ``lo = hi = v`` for each, the others free.

    The controller holds a stopped robot's joints on their stop ramp with it while the other
    robots are solved (:mod:`~itasc_ros.core.control.robot_groups`). It is the scene's last
    limit: the held velocities win over every box before them (the ramp is already within the
    motion limits: it is what a whole stop sends).

    Args:
        n: the number of joints.
    """

    name = "held joints (a stopped robot's ramp)"

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.holding = False

    def hold(self, held: NDArray[np.bool_], v: Array) -> None:
        """Hold the joints marked in ``held`` (n,) at ``v`` (n,) [rad/s or m/s] from now on."""
        self.tick_lo[:] = -np.inf
        self.tick_hi[:] = np.inf
        self.tick_lo[held] = v[held]
        self.tick_hi[held] = v[held]
        self.holding = bool(held.any())

    def release(self) -> None:
        """Hold nothing."""
        self.holding = False

    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """The held velocities (see :class:`Limit`); free joints unbounded."""
        if self.holding:
            lo[:] = self.tick_lo
            hi[:] = self.tick_hi
        else:
            lo[:] = -np.inf
            hi[:] = np.inf

    def apply(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """Nothing to do while nothing is held; else the held velocities win."""
        if self.holding:
            super().apply(q, dt, lo, hi)


__all__ = ["HeldJoints"]
