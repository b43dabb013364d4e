"""JointLimitAvoidance: keep joints out of a margin at their position limits, smoothly."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from .base import Constraint, check_positive
from .schema import Field

Array = NDArray[np.float64]


def smoothstep(h: float) -> float:
    """``3 h^2 - 2 h^3`` of ``h`` clipped to [0, 1]: 0 -> 0, 1 -> 1, zero slope at both ends."""
    h = min(1.0, max(0.0, h))
    return h * h * (3.0 - 2.0 * h)


class JointLimitAvoidance(Constraint):
    """One-sided rows that keep joints ``margin`` away from their position limits, smoothly.

    One row per joint: ``y = d``, the joint's distance to its nearer limit [rad or m]
    (``A = +1`` on the joint near the lower limit, ``-1`` near the upper one), and the
    inequality ``d' >= K (margin - d)``: a velocity damper. Far from a limit the joint may
    approach it at up to ``K (d - margin)``, a speed that falls linearly to 0 at the margin,
    so a fast joint decelerates smoothly as it comes (``K`` [1/s] sets how early), and a joint
    inside the margin is pushed back out at ``K (margin - d)``. The rows are one-sided
    (:attr:`one_sided`): the scene switches a row on only while the motion would break it,
    so a joint that stays clear costs nothing and a row enters the solve exactly at its
    bound: no jump in q'. Beside other tasks of its priority level the weight trades the
    damper against them (the default 1e3 holds it against a pose task of weight 1); at a
    higher priority it holds strictly. Joints without limits (continuous) get no row weight.
    This is a task, not the hard limit: the scene still locks a joint at its limit
    (``joint_limit_margin``). B = 0.

    Args:
        name: constraint name.
        joints: joints to keep away from their limits (empty: every active joint at bind).
        margin: distance kept from each limit [rad or m] (the middle of a narrower range).
        weight, gain: see :class:`Constraint` (``gain``: the damper's K [1/s]).
    """

    type_name = "joint_limit_avoidance"
    one_sided = True
    FIELDS = (
        Field("joints", "string_array", [], "Joints to keep off their limits; empty: all."),
        Field(
            "margin",
            "double",
            0.2,
            "Distance kept from each position limit [rad or m]: a joint approaches it at most "
            "gain * (distance - margin) fast, and is pushed back out of it.",
            1e-4,
            10.0,
            live=True,
        ),
        Field(
            "weight",
            "double",
            1e3,
            "Weight of a row while it holds a joint (a pose task's is 1).",
            0.0,
            1e6,
            live=True,
        ),
        Field(
            "gain",
            "double",
            10.0,
            "Damper gain K [1/s]: a joint approaches its margin at most K * distance fast.",
            0.0,
            1000.0,
            live=True,
        ),
        *(f for f in Constraint.FIELDS if f.name not in ("weight", "gain")),
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """All joints, and two joints with a wide margin (see :class:`Constraint`)."""
        return [{}, {"joints": tree.joint_names[:2], "margin": 1.0, "gain": 5.0}]

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> JointLimitAvoidance:
        """Build from checked settings (see :class:`Constraint`)."""
        return cls(
            name, settings["joints"], settings["margin"], settings["weight"], settings["gain"]
        )

    def __init__(
        self,
        name: str,
        joints: Sequence[str] = (),
        margin: float = 0.2,
        weight: float = 1e3,
        gain: float = 10.0,
    ) -> None:
        super().__init__(name, weight, gain, feedforward=False)
        if isinstance(joints, str):
            joints = [joints]
        self.joints = list(joints)
        self.margin = check_positive(f"{name}: margin", margin, allow_zero=False)
        self._bound_joints: list[str] = list(self.joints)
        self._idx = np.zeros(len(self.joints), dtype=np.int64)
        self._lower = np.zeros(len(self.joints))
        self._upper = np.zeros(len(self.joints))
        self._keep = np.zeros(len(self.joints))

    @property
    def n_rows(self) -> int:
        """Number of output rows m: one per joint (see :class:`Constraint`)."""
        return len(self._bound_joints)

    @property
    def bound_joints(self) -> list[str]:
        """The joints of the rows (all active joints when ``joints`` is empty)."""
        return list(self._bound_joints)

    def bind(self, tree: KinematicTree) -> None:
        """Resolve the joints and read their limits (see :class:`Constraint`).

        Raises:
            UnknownJointError: naming the active joints.
            ConstraintError: a joint named twice.
        """
        names = self.joints or tree.joint_names
        if len(set(names)) != len(names):
            raise ConstraintError(f"{self.name}: joints repeat in {names}")
        idx = np.array([tree.joint_index(j) for j in names], dtype=np.int64)
        self._bound_joints = list(names)
        self._idx = idx
        self._lower = tree.lower[idx]
        self._upper = tree.upper[idx]
        # The distance kept: the margin, or half the range when that is narrower.
        span = self._upper - self._lower
        self._keep = np.where(np.isfinite(span), np.minimum(self.margin, 0.5 * span), self.margin)
        self._structure_changed()

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`)."""
        a[:, :] = 0.0
        b[:, :] = 0.0
        for r in range(self._idx.shape[0]):
            i = self._idx[r]
            qi = q[i]
            d_lo, d_hi = qi - self._lower[r], self._upper[r] - qi
            if d_lo <= d_hi:  # the lower limit is nearer (or the only one)
                a[r, i], y[r] = 1.0, d_lo
            else:
                a[r, i], y[r] = -1.0, d_hi
            if math.isfinite(y[r]):
                ydot[r] = self.gain * (self._keep[r] - y[r])
                wy[r] = self.weight
            else:  # no limit on either side
                y[r] = ydot[r] = wy[r] = 0.0

    def penetration(self, y: Array) -> Array:
        """(m,) how far each joint is inside its margin [rad or m] (0 outside it)."""
        return np.maximum(0.0, self._keep - y)

    def error(self, y: Array) -> float:
        """Norm of the joints' penetration into their margins (see :class:`Constraint`)."""
        p = self.penetration(y)
        return float(np.sqrt(np.dot(p, p)))


__all__ = ["JointLimitAvoidance", "smoothstep"]
