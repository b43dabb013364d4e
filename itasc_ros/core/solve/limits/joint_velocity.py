"""JointVelocityLimit: every joint within its velocity limit (the URDF's x velocity_scale)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .base import Array, Limit


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


__all__ = ["JointVelocityLimit"]
