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


__all__ = ["JointPositionLimit", "next_step_box"]
