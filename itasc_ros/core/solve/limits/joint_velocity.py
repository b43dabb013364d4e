"""JointVelocityLimit: every joint within its velocity limit (the URDF's x velocity_scale)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from .base import Array, Limit


@njit(cache=True, nogil=True)
def intersect_symmetric(lo, hi, vmax):  # pragma: no cover - compiled
    """``[lo, hi]`` (n,) intersected with ``[-vmax, vmax]`` in place (the later wins)."""
    for j in range(lo.shape[0]):
        a = max(lo[j], -vmax[j])
        b = min(hi[j], vmax[j])
        if a > b:
            a, b = -vmax[j], vmax[j]
        lo[j] = a
        hi[j] = b


class JointVelocityLimit(Limit):
    """``-vmax <= q' <= vmax``.

    Args:
        vmax: (n,) velocity limits [rad/s or m/s] (> 0).
    """

    name = "joint velocity"

    def __init__(self, vmax: ArrayLike) -> None:
        self.vmax = np.asarray(vmax, dtype=float).reshape(-1).copy()
        super().__init__(self.vmax.shape[0])

    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """The velocity limits (see :class:`Limit`)."""
        np.negative(self.vmax, out=lo)
        hi[:] = self.vmax

    def apply(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """Intersect the velocity limits in one compiled call (the tick's hot path)."""
        intersect_symmetric(lo, hi, self.vmax)


__all__ = ["JointVelocityLimit", "intersect_symmetric"]
