"""JointValue: drive joints toward programmable values (posture, elbow up, mid-range)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from . import _features as F
from .base import HOLDER_EPOCH, TICK_JOINTS, CompiledTick, Constraint
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
        # the tick's arrays, views of one record (a scene's compiled tick keeps it: keep_record)
        self._record = np.zeros(F.joint_record_size(len(self.joints)))
        self._use_record(self._record)
        if self.joints and not self._mid_range:
            self.set_values(values)
        elif not self.joints and not self._mid_range:
            self._given = given  # checked against the active joints at bind
        self._idx = np.zeros(len(self.joints), dtype=np.int64)
        self._vmax[:] = np.inf

    def _use_record(self, record: Array) -> None:
        """Take the tick's arrays as views of ``record`` (:func:`._features.joint_record`)."""
        HOLDER_EPOCH[0] += 1  # the record moved
        self._record = record
        self._values, self._rates, self._vmax, self._columns = F.joint_record(record)

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
            self._use_record(np.zeros(F.joint_record_size(len(names))))
            if not self.joints and not self._mid_range:
                self.set_values(self._given)
        self._idx = idx
        self._columns[:] = idx
        self._vmax[:] = tree.velocity_limits[idx]
        if self._mid_range:
            self._values[:] = tree.neutral()[idx]
        self._structure_changed()

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`), in one compiled call."""
        F.joint_value_rows(
            q, self._columns, self._values, self._rates, self._vmax, self.gain, self.weight,
            self.resolves_redundancy, a, b, y, ydot, wy,
        )  # fmt: skip

    def compiled_tick(self, tree: KinematicTree) -> CompiledTick | None:
        """Joint values on the bound tree's joints (see :class:`Constraint`)."""
        if tree is not self.bound_tree:
            return None
        return CompiledTick(TICK_JOINTS, self._record.shape[0], -1, ())

    def keep_record(self, record: Array) -> None:
        """Hold the tick's arrays in ``record`` (see :class:`Constraint`)."""
        if self._record is record:
            return
        record[:] = self._record
        self._use_record(record)

    def error(self, y: Array) -> float:
        """Scalar error from this constraint's rows of y (see :class:`Constraint`)."""
        e = self._values - y
        return float(np.sqrt(np.dot(e, e)))


__all__ = ["JointValue"]
