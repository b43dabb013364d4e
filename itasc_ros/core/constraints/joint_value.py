"""JointValue: drive joints toward programmable values (posture, elbow up)."""

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

    Args:
        name: constraint name.
        joints: active joints to drive.
        values: desired positions yd [rad or m], one per joint.
        weight, gain: see :class:`Constraint` (a low weight makes it a posture preference).
    """

    type_name = "joint_value"
    FIELDS = (
        Field("joints", "string_array", [], "Joints to drive."),
        Field(
            "values",
            "double_array",
            [],
            "Desired positions [rad or m], one per joint.",
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
        if not joints:
            raise ConstraintError(f"{name}: give at least one joint")
        self.joints = list(joints)
        self._values = np.zeros(len(self.joints))
        self._rates = np.zeros(len(self.joints))
        self.set_values(values)
        self._idx = np.zeros(len(self.joints), dtype=np.int64)

    def set_values(self, values: ArrayLike, rates: ArrayLike | None = None) -> None:
        """Desired positions yd (one per joint) and optional rates yd'."""
        v = np.atleast_1d(np.asarray(values, dtype=float))
        if v.shape != self._values.shape or not np.all(np.isfinite(v)):
            raise ConstraintError(
                f"{self.name}: values must be {len(self.joints)} finite numbers for joints "
                f"{self.joints}, got {np.asarray(values).tolist()}"
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
        return len(self.joints)

    def bind(self, tree: KinematicTree) -> None:
        """Resolve names against the tree; allocate work arrays (see :class:`Constraint`)."""
        self._idx[:] = [tree.joint_index(j) for j in self.joints]
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

    def error(self, y: Array) -> float:
        """Scalar error from this constraint's rows of y (see :class:`Constraint`)."""
        e = self._values - y
        return float(np.sqrt(np.dot(e, e)))


__all__ = ["JointValue"]
