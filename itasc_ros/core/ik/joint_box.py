"""The box of joint positions the IK searches: the limits, the restarts' range, whole turns.

Continuous joints get finite stand-in limits (:data:`UNLIMITED`) and restart in [-pi, pi];
a revolute joint with more than a turn of range can be moved by whole turns toward the seed
without changing the forward kinematics.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigurationError
from ..kinematics.tree import KinematicTree
from . import _ik_kernels as K

Array = NDArray[np.float64]

#: Joint limits used in place of +-inf for continuous joints [rad].
UNLIMITED = 1e9
#: A restart near the seed (:meth:`JointBox.near`): each joint within this fraction of its
#: restarts' range (at most a turn) either way of the seed's value.
NEAR_SPREAD = 0.4


class JointBox:
    """The joint limits of a tree as the IK uses them.

    Attributes:
        lo, hi: (n,) lower and upper limits [rad or m], +-:data:`UNLIMITED` where infinite.
        samp_lo, samp_hi: (n,) the range random restarts are drawn from: the limits, or
            [-pi, pi] for a joint with an infinite limit.
        turn_cols: (t,) int64, the joints (columns) that can turn by a whole turn within
            their limits.
    """

    def __init__(self, tree: KinematicTree) -> None:
        lo, hi = tree.lower, tree.upper
        self.lo = np.where(np.isfinite(lo), lo, -UNLIMITED)
        self.hi = np.where(np.isfinite(hi), hi, UNLIMITED)
        finite = np.isfinite(lo) & np.isfinite(hi)
        self.samp_lo = np.where(finite, lo, -math.pi)
        self.samp_hi = np.where(finite, hi, math.pi)
        revolute = np.array([t != "prismatic" for t in tree.joint_types], dtype=bool)
        self.turn_cols = np.flatnonzero(revolute & (self.hi - self.lo > 2 * math.pi)).astype(
            np.int64
        )

    def clip_seed(self, seed: Array, out: Array) -> Array:
        """``seed`` (n,) clipped into the box, written into ``out`` (n,) and returned.

        Raises:
            ConfigurationError: the seed has NaN or Inf values.
        """
        if not K.clip_seed(seed, self.lo, self.hi, out):
            raise ConfigurationError(f"the seed has NaN or Inf values: {seed.tolist()}")
        return out

    def random(self, rng: np.random.Generator) -> Array:
        """(n,) a restart drawn uniformly from the restarts' range, within the box."""
        return np.clip(rng.uniform(self.samp_lo, self.samp_hi), self.lo, self.hi)

    def redraw(self, seed: Array, joints: NDArray[np.bool_], rng: np.random.Generator) -> Array:
        """(n,) ``seed`` (n,) with ``joints`` (n,) drawn uniformly from their restarts' range."""
        q = seed.copy()
        q[joints] = np.clip(
            rng.uniform(self.samp_lo[joints], self.samp_hi[joints]),
            self.lo[joints],
            self.hi[joints],
        )
        return q

    def near(self, seed: Array, rng: np.random.Generator) -> Array:
        """(n,) a restart drawn uniformly around ``seed`` (n,), within the box.

        Each joint within :data:`NEAR_SPREAD` of its restarts' range (at most ``2 pi``) of
        the seed's value: the restarts of a whole body keep its stance's character (a
        uniform draw of a floating base and both legs starts far from the feet's poses).
        """
        width = np.minimum(self.samp_hi - self.samp_lo, 2.0 * math.pi)
        return np.clip(seed + rng.uniform(-NEAR_SPREAD, NEAR_SPREAD, seed.shape) * width,
                       self.lo, self.hi)  # fmt: skip

    def nearest_turns(self, q: Array, seed: Array) -> None:
        """Move joints of ``q`` (n,) by whole turns toward ``seed`` (n,), within the limits.

        The forward kinematics are the same; ``q`` is changed in place.
        """
        K.nearest_turns(q, seed, self.turn_cols, self.lo, self.hi)


def unmet_only(
    a: Array, e: Array, tols: Array, free_rows: NDArray[np.bool_]
) -> NDArray[np.bool_] | None:
    """The joints that act on some unmet row and on no met one: what a restart may redraw.

    Args:
        a: (m, n) the rows (a zero row: inactive, as a band's inside).
        e: (m,) their errors.
        tols: (m,) their tolerances.
        free_rows: (m,) bool: rows that keep no joint even when met (one-sided rows, a
            collision's or a band's, and a centre of mass, which every joint moves): the
            loop meets them again after a restart.

    Returns:
        (n,) bool, or None when no met row uses a joint (nothing to keep: every joint may
        move, as a whole restart does).
    """
    used = a != 0.0
    unmet = np.abs(e) > tols
    kept = used[~unmet & ~free_rows].any(axis=0)
    if not kept.any():
        return None
    return used[unmet].any(axis=0) & ~kept


__all__ = ["NEAR_SPREAD", "UNLIMITED", "JointBox", "unmet_only"]
