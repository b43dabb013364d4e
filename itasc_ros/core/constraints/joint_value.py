"""JointValue: drive joints toward programmable values (posture, elbow up, mid-range)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from .base import Constraint
from .schema import Field

Array = NDArray[np.float64]


class JointValue(Constraint):
    """Rows of ``Cq``: y = q_i for each named joint, yd programmable; B = 0.

    At a lower priority than the tasks it serves, a posture: it takes the redundant joints'
    spare motion toward its values, and so keeps a long motion from drifting lap after lap.
    Empty ``joints`` and ``values`` make it robot-independent: every active joint toward the
    middle of its range (the values resolved at :meth:`bind`).

    Args:
        name: constraint name.
        joints: active joints to drive (empty: every active joint, at bind).
        values: desired positions yd [rad or m], one per joint (empty: the middle of each
            joint's position range, 0 for a joint without limits).
        weight, gain: see :class:`Constraint` (a low weight makes it a posture preference).
    """

    type_name = "joint_value"
    FIELDS = (
        Field("joints", "string_array", [], "Joints to drive; empty: every active joint."),
        Field(
            "values",
            "double_array",
            [],
            "Desired positions [rad or m], one per joint; empty: the middle of each joint's "
            "range (0 for a joint without limits).",
            -1e6,
            1e6,
            live=True,
        ),
        *Constraint.FIELDS,
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """Two joints toward mid-range, and one (see :class:`Constraint`)."""
        mid = tree.neutral()
        return [
            {"joints": tree.joint_names[:2], "values": [float(v) for v in mid[:2]]},
            {"joints": tree.joint_names[-1:], "values": [float(mid[-1]) + 0.1], "gain": 5.0},
        ]

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> JointValue:
        """Build from checked settings (see :class:`Constraint`)."""
        return cls(
            name, settings["joints"], settings["values"], settings["weight"], settings["gain"]
        )

    def __init__(
        self,
        name: str,
        joints: Sequence[str],
        values: ArrayLike,
        weight: float = 1.0,
        gain: float = 20.0,
    ) -> None:
        super().__init__(name, weight, gain, feedforward=False)
        if isinstance(joints, str):
            joints = [joints]
        self.joints = list(joints)
        given = np.atleast_1d(np.asarray(values, dtype=float))
        self._mid_range = given.size == 0  # the values come from the joints' ranges at bind
        self._bound_joints = list(self.joints)
        self._values = np.zeros(len(self.joints))
        self._rates = np.zeros(len(self.joints))
        if self.joints and not self._mid_range:
            self.set_values(values)
        elif not self.joints and not self._mid_range:
            self._given = given  # checked against the active joints at bind
        self._idx = np.zeros(len(self.joints), dtype=np.int64)
        self._vmax = np.full(len(self.joints), np.inf)

    def set_values(self, values: ArrayLike, rates: ArrayLike | None = None) -> None:
        """Desired positions yd (one per joint) and optional rates yd'."""
        v = np.atleast_1d(np.asarray(values, dtype=float))
        if v.shape != self._values.shape or not np.all(np.isfinite(v)):
            raise ConstraintError(
                f"{self.name}: values must be {len(self._bound_joints)} finite numbers for "
                f"joints {self._bound_joints}, got {np.asarray(values).tolist()}"
            )
        self._values[:] = v
        if rates is not None:
            r = np.atleast_1d(np.asarray(rates, dtype=float))
            if r.shape != v.shape or not all(math.isfinite(x) for x in r):
                raise ConstraintError(f"{self.name}: rates must match values")
            self._rates[:] = r

    @property
    def values(self) -> Array:
        """(k,) desired positions."""
        return self._values.copy()

    @property
    def has_target(self) -> bool:
        """Always True: the desired values are set at construction."""
        return True

    @property
    def n_rows(self) -> int:
        """Number of output rows m (see :class:`Constraint`)."""
        return len(self._bound_joints)

    @property
    def bound_joints(self) -> list[str]:
        """The joints of the rows (every active joint when ``joints`` is empty)."""
        return list(self._bound_joints)

    def bind(self, tree: KinematicTree) -> None:
        """Resolve names against the tree; allocate work arrays (see :class:`Constraint`).

        Raises:
            UnknownJointError: naming the active joints.
            ConstraintError: a joint named twice, or values that do not fit the joints.
        """
        names = self.joints or tree.joint_names
        if len(set(names)) != len(names):
            raise ConstraintError(f"{self.name}: joints repeat in {names}")
        idx = np.array([tree.joint_index(j) for j in names], dtype=np.int64)
        if names != self._bound_joints or idx.shape != self._idx.shape:
            self._bound_joints = list(names)
            self._values = np.zeros(len(names))
            self._rates = np.zeros(len(names))
            if not self.joints and not self._mid_range:
                self.set_values(self._given)
        self._idx = idx
        self._vmax = tree.velocity_limits[idx]
        if self._mid_range:
            self._values[:] = tree.neutral()[idx]
        self._structure_changed()

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`)."""
        a[:, :] = 0.0
        b[:, :] = 0.0
        for r in range(self._idx.shape[0]):
            a[r, self._idx[r]] = 1.0
            qi = q[self._idx[r]]
            y[r] = qi
            ydot[r] = self._rates[r] + self.gain * (self._values[r] - qi)
            wy[r] = self.weight
        if self.resolves_redundancy:  # a preference asks no faster than the joints go (scaled)
            scale = 1.0
            for r in range(self._idx.shape[0]):
                if abs(ydot[r]) * scale > self._vmax[r]:
                    scale = self._vmax[r] / abs(ydot[r])
            if scale < 1.0:
                ydot *= scale

    def error(self, y: Array) -> float:
        """Scalar error from this constraint's rows of y (see :class:`Constraint`)."""
        e = self._values - y
        return float(np.sqrt(np.dot(e, e)))


__all__ = ["JointValue"]
