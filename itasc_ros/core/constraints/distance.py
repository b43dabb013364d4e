"""Distance: keep the effector at a programmable distance from a target (or within a band)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from ._target import EffectorTargetConstraint
from .base import check_positive
from .schema import Field

Array = NDArray[np.float64]


class Distance(EffectorTargetConstraint):
    """iTaSC Distance: 5 rotational feature joints and 1 prismatic one, y = its length.

    The prismatic feature coordinate is the distance d = |p_t - p_e| [m]; its rate is
    ``u . (v_t - v_e)`` with u the unit vector from the effector to the target; the five
    rotations take up the rest of the relative motion and are not constrained.

    Args:
        name: constraint name.
        effector: link whose origin is kept at the distance.
        distance: desired distance yd [m] (>= 0).
        min_distance, max_distance: optional band [m]: the row is active only outside it
            (then yd is the nearest bound); ``distance`` is ignored when a band is given.
        target_link, target_offset: the target as a link of the tree (e.g. the other hand).
        weight, gain, feedforward: see :class:`Constraint`.
    """

    type_name = "distance"
    FIELDS = (
        *EffectorTargetConstraint.HEAD_FIELDS,
        Field("distance", "double", 0.0, "Desired distance [m].", 0.0, 100.0, live=True),
        Field(
            "min_distance", "double", -1.0, "Band lower bound [m]; -1 = unset.", -1.0, 100.0, True
        ),
        Field(
            "max_distance", "double", -1.0, "Band upper bound [m]; -1 = unset.", -1.0, 100.0, True
        ),
        *EffectorTargetConstraint.TAIL_FIELDS,
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """A distance, a band, and a link target (see :class:`Constraint`)."""
        return [
            {"distance": 0.1},
            {"min_distance": 0.05, "max_distance": 0.08},
            {"target_link": tree.link_names[1], "distance": 0.3},
        ]

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> Distance:
        """Build from checked settings (see :class:`Constraint`); -1 leaves a bound unset."""
        lo, hi = settings["min_distance"], settings["max_distance"]
        return cls(
            name,
            settings["link"],
            distance=settings["distance"],
            min_distance=lo if lo >= 0.0 else None,
            max_distance=hi if hi >= 0.0 else None,
            **cls.shared_arguments(settings),
        )

    @classmethod
    def target_distance(cls, settings: Mapping[str, Any]) -> float:
        """The largest distance it keeps from its target [m] (see :class:`Constraint`)."""
        return float(max(settings["distance"], settings["max_distance"]))

    def __init__(
        self,
        name: str,
        effector: str,
        distance: float = 0.0,
        min_distance: float | None = None,
        max_distance: float | None = None,
        target_link: str | None = None,
        target_offset: ArrayLike | None = None,
        weight: float = 1.0,
        gain: float = 20.0,
        feedforward: bool = True,
    ) -> None:
        super().__init__(name, effector, target_link, target_offset, weight, gain, feedforward)
        self.set_distance(distance, 0.0)
        self.set_band(min_distance, max_distance)
        self._u = np.array([1.0, 0.0, 0.0])
        self._d = 0.0
        self._active = True

    def set_distance(self, distance: float, rate: float = 0.0) -> None:
        """Desired distance yd [m] and its rate yd' [m/s]."""
        self.distance = check_positive(f"{self.name}: distance", distance)
        r = float(rate)
        if not math.isfinite(r):
            raise ConstraintError(f"{self.name}: distance rate must be finite, got {rate!r}")
        self.distance_rate = r

    def set_band(self, min_distance: float | None, max_distance: float | None) -> None:
        """Optional band [m]; the constraint acts only when the distance leaves it."""
        lo = None if min_distance is None else check_positive(f"{self.name}: min", min_distance)
        hi = None if max_distance is None else check_positive(f"{self.name}: max", max_distance)
        if lo is not None and hi is not None and lo > hi:
            raise ConstraintError(f"{self.name}: min_distance {lo} > max_distance {hi}")
        self.min_distance, self.max_distance = lo, hi

    @property
    def n_rows(self) -> int:
        """Number of output rows m (see :class:`Constraint`)."""
        return 1

    @property
    def active(self) -> bool:
        """False while the distance is inside the band at the last update."""
        return self._active

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`)."""
        te = self._update_frames(tree)
        pt = self.target.pose
        d0, d1, d2 = pt[0, 3] - te[0, 3], pt[1, 3] - te[1, 3], pt[2, 3] - te[2, 3]
        d = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if d > 1e-9:  # else keep the last direction: the prismatic axis is undefined at 0
            self._u[0], self._u[1], self._u[2] = d0 / d, d1 / d, d2 / d
        self._d = d
        u = self._u
        yd, rate = self.distance, self.distance_rate
        self._active = True
        if self.min_distance is not None or self.max_distance is not None:
            rate = 0.0
            if self.min_distance is not None and d < self.min_distance:
                yd = self.min_distance
            elif self.max_distance is not None and d > self.max_distance:
                yd = self.max_distance
            else:
                yd, self._active = d, False
        # y' = u . (v_t - v_e): A = -u^T Jv_e (+ u^T Jv_t for a link target); B = -[u^T, 0]
        a[0, :] = 0.0
        for k in range(3):
            a[0, :] -= u[k] * self.jac[k, :]
        if self.target.link_idx >= 0:
            for k in range(3):
                a[0, :] += u[k] * self.target.jac[k, :]
        b[0, :3] = -u
        b[0, 3:] = 0.0
        y[0] = d
        ydot[0] = rate + self.gain * (yd - d)
        wy[0] = self.weight if self._active else 0.0

    def error(self, y: Array) -> float:
        """Scalar error from this constraint's rows of y (see :class:`Constraint`)."""
        if not self._active:
            return 0.0
        lo = self.min_distance if self.min_distance is not None else -math.inf
        hi = self.max_distance if self.max_distance is not None else math.inf
        if self.min_distance is None and self.max_distance is None:
            return abs(float(y[0]) - self.distance)
        return float(max(lo - y[0], y[0] - hi, 0.0))


__all__ = ["Distance"]
