"""The limit contract: what the scene needs from every hard limit of the solve."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numba import njit
from numpy.typing import NDArray

Array = NDArray[np.float64]


@njit(cache=True, nogil=True)
def intersect(lo: Array, hi: Array, llo: Array, lhi: Array) -> None:  # pragma: no cover
    """``[lo, hi]`` (n,) intersected with ``[llo, lhi]`` in place; the later wins a conflict.

    Where the two do not meet, ``[llo, lhi]`` alone.
    """
    for j in range(lo.shape[0]):
        a = max(lo[j], llo[j])
        b = min(hi[j], lhi[j])
        if a > b:
            a, b = llo[j], lhi[j]
        lo[j] = a
        hi[j] = b


class Limit(ABC):
    """A hard limit: this tick's box ``lo <= q' <= hi`` per joint [rad/s or m/s].

    A limit type is one module: a subclass that fills its box (:meth:`box`) from the joint
    positions and the period, in preallocated arrays (no allocation per tick). The scene
    intersects the boxes of its limits in order (:meth:`apply`); a later limit wins where its
    box does not meet the ones before (the motion limits are last: a command never jumps).

    Attributes:
        name: what the limit is, for reports and errors.
        tick_lo: (n,) this tick's lower bound of the limit's own box [rad/s or m/s] (its
            subclasses' work array).
        tick_hi: (n,) its upper bound.
        tick: (2, n) the two as one record (``tick_lo``, ``tick_hi`` are its rows).
    """

    name: str = ""

    def __init__(self, n: int) -> None:
        self.tick = np.empty((2, n))  # the limit's own box, lower then upper, in one record
        self.tick_lo, self.tick_hi = self.tick[0], self.tick[1]
        self.tick_lo[:] = -np.inf
        self.tick_hi[:] = np.inf

    @abstractmethod
    def box(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """Write this tick's bounds on ``q'`` into ``lo``, ``hi`` (n,) [rad/s or m/s].

        Args:
            q: (n,) joint positions [rad or m].
            dt: the control period [s].
            lo: (n,) output: the lower bounds (-inf: none).
            hi: (n,) output: the upper bounds (inf: none).
        """

    def apply(self, q: Array, dt: float, lo: Array, hi: Array) -> None:
        """Intersect this limit's box into ``lo``, ``hi`` (n,) (it wins where they conflict)."""
        self.box(q, dt, self.tick_lo, self.tick_hi)
        intersect(lo, hi, self.tick_lo, self.tick_hi)

    def mark_sides(self, q: Array, lo: Array, hi: Array, side: Array) -> None:  # noqa: B027
        """Mark the sides of the final box ``[lo, hi]`` (n,) that a position limit of it sets.

        ``side`` (n,): set to +1 where ``hi`` is a bound that keeps the joint from its upper
        position limit (it stays there while the joint is near it), -1 for ``lo`` and the lower
        limit; left as it is elsewhere. A joint held at such a side does not scale its level
        down: the level goes on with the others. A limit that bounds velocities only (the
        default) marks nothing.

        Args:
            q: (n,) joint positions [rad or m].
            lo: (n,) the box's lower side, every limit applied [rad/s or m/s].
            hi: (n,) its upper side.
            side: (n,) in/out: the position sides.
        """


__all__ = ["Array", "Limit", "intersect"]
