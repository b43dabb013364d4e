"""CopyPose: put an effector frame onto a target frame, on any subset of the six axes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from . import _features as F
from ._target import EffectorTargetConstraint
from .base import HOLDER_EPOCH, TICK_POSE, CompiledTick, PoseGoal
from .schema import Field

Array = NDArray[np.float64]

REFERENCE_FRAMES = {"root": F.FRAME_ROOT, "target": F.FRAME_TARGET, "effector": F.FRAME_EFFECTOR}
"""Frames whose axes the selected x/y/z components are taken on."""


def _axes(owner: str, what: str, axes: str) -> list[int]:
    axes = axes.lower()
    bad = [a for a in axes if a not in "xyz"]
    if bad or len(set(axes)) != len(axes):
        raise ConstraintError(
            f"{owner}: {what} axes {axes!r} must be distinct letters from 'x', 'y', 'z' "
            "(e.g. 'xyz', 'xy', 'z' or '')"
        )
    return ["xyz".index(a) for a in sorted(axes)]


AXES = "distinct letters of 'xyz' (either case), may be empty"


class CopyPose(EffectorTargetConstraint):
    """Effector frame onto target frame (iTaSC CopyPose).

    Feature coordinates Xf (6): the target origin relative to the effector origin on the
    axes of ``reference`` [m], then the rotation vector from the effector to the target
    orientation [rad]. ``Cf`` selects ``position_axes`` and ``rotation_axes``; yd = 0.

    Args:
        name: constraint name.
        effector: link to move.
        position_axes: subset of 'xyz' to control (position only: rotation_axes='').
        rotation_axes: subset of 'xyz' to control (orientation only: position_axes='').
        reference: 'target' (default), 'effector' or 'root': the axes of the selection.
        target_link: make the target a link of the tree (e.g. the other hand); else the
            target pose is set with :meth:`set_target`.
        target_offset: (4, 4) pose of the target in ``target_link``'s frame.
        weight, gain, feedforward: see :class:`Constraint`.
    """

    type_name = "copy_pose"
    pose_feedback = True
    FIELDS = (
        *EffectorTargetConstraint.HEAD_FIELDS,
        Field(
            "position_axes", "string", "xyz", "Controlled position axes.", live=True, choices=AXES
        ),
        Field(
            "rotation_axes", "string", "xyz", "Controlled rotation axes.", live=True, choices=AXES
        ),
        Field(
            "reference",
            "string",
            "target",
            "Frame of the selected axes.",
            live=True,
            choices="one of: " + ", ".join(REFERENCE_FRAMES),
        ),
        *EffectorTargetConstraint.TAIL_FIELDS,
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """Full pose, position only, partial axes, a link target (see :class:`Constraint`)."""
        return [
            {},
            {"rotation_axes": ""},
            {"position_axes": "xz", "rotation_axes": "y", "reference": "effector"},
            {"target_link": tree.link_names[1], "reference": "root"},
        ]

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> CopyPose:
        """Build from checked settings (see :class:`Constraint`)."""
        return cls(
            name,
            settings["link"],
            position_axes=settings["position_axes"],
            rotation_axes=settings["rotation_axes"],
            reference=settings["reference"],
            **cls.shared_arguments(settings),
        )

    def __init__(
        self,
        name: str,
        effector: str,
        position_axes: str = "xyz",
        rotation_axes: str = "xyz",
        reference: str = "target",
        target_link: str | None = None,
        target_offset: ArrayLike | None = None,
        weight: float = 1.0,
        gain: float = 20.0,
        feedforward: bool = True,
    ) -> None:
        super().__init__(name, effector, target_link, target_offset, weight, gain, feedforward)
        # the tick's arrays, views of one record (a scene's compiled tick keeps it: keep_record)
        self._record = np.zeros(F.pose_record_size(0))
        self._use_record(self._record)
        self.set_axes(position_axes, rotation_axes)
        self.set_reference(reference)

    def set_axes(self, position_axes: str, rotation_axes: str) -> None:
        """Select the controlled axes (changes the number of rows)."""
        pos = _axes(self.name, "position", position_axes)
        rot = _axes(self.name, "rotation", rotation_axes)
        if not pos and not rot:
            raise ConstraintError(f"{self.name}: select at least one position or rotation axis")
        self.position_axes = "".join("xyz"[i] for i in pos)
        self.rotation_axes = "".join("xyz"[i] for i in rot)
        self._sel = np.array(pos + [3 + i for i in rot], dtype=np.int64)
        self._structure_changed()

    def set_reference(self, reference: str) -> None:
        """Axes of the selection: 'target', 'effector' or 'root'."""
        if reference not in REFERENCE_FRAMES:
            raise ConstraintError(
                f"{self.name}: unknown reference frame {reference!r}; choices are: "
                + ", ".join(REFERENCE_FRAMES)
            )
        self.reference = reference
        self._frame = REFERENCE_FRAMES[reference]
        self._record[0] = self._frame

    def _use_record(self, record: Array) -> None:
        """Take the tick's arrays as views of ``record`` (:func:`._features.pose_record`)."""
        HOLDER_EPOCH[0] += 1  # the record moved
        n = (record.shape[0] - F.POSE_RECORD_HEAD) // 6
        self._record = record
        _, tt, self._ge, self._gt, self._xf, self._work, jac = F.pose_record(record, n)
        self._hold_jacobian(jac)
        self.target.keep_pose(tt)

    def bind(self, tree: KinematicTree) -> None:
        """Resolve names against the tree; allocate work arrays (see :class:`Constraint`)."""
        super().bind(tree)
        record = np.zeros(F.pose_record_size(tree.n_joints))
        record[: F.POSE_RECORD_HEAD] = self._record[: F.POSE_RECORD_HEAD]
        self._use_record(record)

    def compiled_tick(self, tree: KinematicTree) -> CompiledTick | None:
        """A pose task toward a set pose on its bound tree (see :class:`Constraint`)."""
        head = self._effector_kernel_args(tree)
        if head is None:
            return None
        return CompiledTick(
            TICK_POSE, self._record.shape[0], head[0], tuple(int(i) for i in self._sel)
        )

    def keep_record(self, record: Array) -> None:
        """Hold the tick's arrays in ``record`` (see :class:`Constraint`)."""
        if self._record is record:
            return
        record[:] = self._record
        self._use_record(record)

    @property
    def n_rows(self) -> int:
        """Number of output rows m (see :class:`Constraint`)."""
        return int(self._sel.shape[0])

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`)."""
        target = self.target
        head = self._effector_kernel_args(tree)
        if head is not None:  # a set pose: one compiled call
            F.copy_pose_tick(  # type: ignore[call-arg]  # numba's stub: one argument
                *head, target.pose, self._frame, self._ge, self._gt,
                self._xf, self._work, self._sel, self.jac, self.gain, self.weight, a, b, y,
                ydot, wy,
            )  # fmt: skip
            return
        te = self._update_frames(tree)
        has_t = target.link_idx >= 0
        F.copy_pose_update(
            te, target.pose, self._frame, self._ge, self._gt, self._xf, self._work, self._sel,
            self.jac, target.jac if has_t else self.jac, has_t, self.gain, self.weight,
            a, b, y, ydot, wy,
        )  # fmt: skip

    def error(self, y: Array) -> float:
        """Scalar error from this constraint's rows of y (see :class:`Constraint`)."""
        return float(np.sqrt(np.dot(y, y)))

    def pose_errors(self) -> tuple[float, float]:
        """(position error [m], rotation error [rad]) of all six axes at the last update."""
        return float(np.linalg.norm(self._xf[:3])), float(np.linalg.norm(self._xf[3:]))

    def orientation_rows(self) -> tuple[bool, ...]:
        """The position rows, then the rotation rows [rad] (see :class:`Constraint`)."""
        return (False,) * len(self.position_axes) + (True,) * len(self.rotation_axes)

    def pose_goal(self) -> PoseGoal | None:
        """The goal of a set target pose on root axes or all six (see :class:`Constraint`)."""
        if self.target.link is not None or not self.has_target:
            return None
        if self.reference != "root" and (self.position_axes + self.rotation_axes) != "xyzxyz":
            return None
        return PoseGoal(self.effector, self.target.pose, self.position_axes, self.rotation_axes)


__all__ = ["REFERENCE_FRAMES", "CopyPose"]
