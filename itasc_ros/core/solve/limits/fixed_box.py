"""FixedBox: bounds on ``q'`` that a caller sets (e.g. another controller's box, a test's)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .base import Array, Limit


class FixedBox(Limit):
    """``lo <= q' <= hi`` as given; change them in place (:attr:`lo`, :attr:`hi`).

    Args:
        lo: (n,) lower bounds [rad/s or m/s] (-inf: none).
        hi: (n,) upper bounds (inf: none).
    """

    name = "fixed box"

    def __init__(self, lo: ArrayLike, hi: ArrayLike) -> None:
        low = np.asarray(lo, dtype=float).reshape(-1)
        super().__init__(low.shape[0])
        self.lo = low.copy()
        self.hi = np.asarray(hi, dtype=float).reshape(-1).copy()

    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """The bounds as set (see :class:`Limit`)."""
        lo[:] = self.lo
        hi[:] = self.hi


__all__ = ["FixedBox"]
