"""Target frames shared by the constraints: a fixed/streamed pose, or a link of the tree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, TargetNotSet
from ..kinematics import spatial
from ..kinematics._kernels import is_rigid_transform
from ..kinematics.tree import KinematicTree
from .base import Constraint
from .schema import Field

LINK = Field("link", "string", "", "Effector link; empty: the URDF's tip link.")
TARGET_LINK = Field(
    "target_link", "string", "", "Follow this robot link instead of a target topic."
)
TARGET_OFFSET = Field(
    "target_offset",
    "double_array",
    [],
    "With target_link: the target's pose in that link's frame, [x, y, z, qx, qy, qz, qw] "
    "(m; a held object's grasp, a loop closure between two links); empty: the link's origin.",
    -1e6,
    1e6,
)
FEEDFORWARD = Field("feedforward", "bool", True, "Feed the target twist forward.", live=True)
TARGET_TOPIC = Field(
    "target_topic",
    "string",
    "",
    "Target pose topic; empty: ~/target_pose for the first pose constraint, "
    "~/<name>/target_pose for the others.",
)
TWIST_TOPIC = Field(
    "twist_topic",
    "string",
    "",
    "Target twist topic; empty: ~/target_twist for the first pose constraint, "
    "~/<name>/target_twist for the others.",
)

Array = NDArray[np.float64]


class TargetFrame:
    """A target pose in the root frame: set from outside, or a robot link (times an offset).

    When the target is a link of the tree, its motion due to ``q'`` enters ``A`` (both ends
    of the virtual armature are driven by joints) and the external twist is not used.
    """

    def __init__(
        self, owner: str, link: str | None = None, offset: ArrayLike | None = None
    ) -> None:
        self.owner = owner
        self.link = link or None
        self.offset = np.eye(4) if offset is None else _pose(owner, offset)
        self.pose = np.eye(4)  # (4, 4) root frame
        self.has_pose = self.link is not None
        self.link_idx = -1
        self.jac = np.zeros((6, 0))
        self._point = np.zeros(3)

    def bind(self, tree: KinematicTree) -> None:
        if self.link is not None:
            self.link_idx = tree.link_index(self.link)
        self.jac = np.zeros((6, tree.n_joints))

    def keep_pose(self, pose: Array) -> None:
        """Hold the pose in ``pose`` (4, 4) from now on (its owner's record), carried over."""
        if pose is self.pose:
            return
        pose[:] = self.pose
        self.pose = pose

    def set_pose(self, pose: ArrayLike, check: bool = True) -> None:
        """Set a target pose (4, 4) in the root frame (ignored when the target is a link).

        Args:
            pose: (4, 4) homogeneous transform.
            check: validate it (finite, orthonormal rotation); ``False`` for a pose built
                from a normalised quaternion by the caller (a target stream: no numpy checks).

        Raises:
            ConfigurationError: with ``check``, a pose that is not a finite rigid transform.
        """
        self.pose[:] = _pose(self.owner, pose) if check else pose
        self.has_pose = True

    def update(self, tree: KinematicTree) -> None:
        """Refresh the pose (and Jacobian) of a link target after ``tree.compute``."""
        if self.link_idx < 0:
            return
        np.matmul(tree.pose_ref(self.link_idx), self.offset, out=self.pose)
        self._point[:] = self.pose[:3, 3]
        tree.jacobian_into(self.link_idx, self.jac, self._point)


def offset_pose(values: Sequence[float]) -> Array | None:
    """The (4, 4) pose of ``target_offset``'s [x, y, z, qx, qy, qz, qw]; None when empty.

    Raises:
        ConfigurationError: not 0 or 7 values, or a quaternion of zero norm.
    """
    if len(values) == 0:
        return None
    v = np.asarray(values, dtype=float)
    if v.shape != (7,) or not np.linalg.norm(v[3:]) > 1e-9:
        raise ConfigurationError(
            f"target_offset must be [x, y, z, qx, qy, qz, qw] with a non-zero quaternion, got "
            f"{list(values)}"
        )
    return spatial.pose_from_xyz_quat(v[:3], v[3:] / np.linalg.norm(v[3:]))


def _pose(owner: str, pose: ArrayLike) -> Array:
    p = np.asarray(pose, dtype=float)
    if p.shape == (4, 4) and is_rigid_transform(p, 1e-6):  # compiled: the usual case
        return p
    if p.shape != (4, 4) or not np.all(np.isfinite(p)):
        raise ConfigurationError(
            f"{owner}: a pose must be a finite (4, 4) matrix, got shape {p.shape}"
        )
    r = p[:3, :3]
    if np.abs(r.T @ r - np.eye(3)).max() > 1e-6 or np.linalg.det(r) < 0:
        raise ConfigurationError(f"{owner}: the pose's rotation is not orthonormal")
    return p


class EffectorTargetConstraint(Constraint):
    """A constraint between an effector link and a :class:`TargetFrame` (CopyPose, Distance).

    Holds what both share: the effector's index and Jacobian, the target, ``set_target`` and
    ``bind``, and the contract of a type with a target (settings ``link``, ``target_link``,
    ``feedforward``, the topics); subclasses write their rows in ``update`` after
    :meth:`_update_frames`. :data:`HEAD_FIELDS` and :data:`TAIL_FIELDS` are the shared settings
    a subclass puts around its own in its ``FIELDS``.
    """

    HEAD_FIELDS = (LINK, TARGET_LINK, TARGET_OFFSET)
    TAIL_FIELDS = (*Constraint.FIELDS, FEEDFORWARD, TARGET_TOPIC, TWIST_TOPIC)

    @staticmethod
    def shared_arguments(settings: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor's keyword arguments of the shared settings (``from_settings``)."""
        return {
            "target_link": settings["target_link"] or None,
            "target_offset": offset_pose(settings.get("target_offset") or []),
            "weight": settings["weight"],
            "gain": settings["gain"],
            "feedforward": settings["feedforward"],
        }

    @classmethod
    def takes_target(cls, settings: Mapping[str, Any]) -> bool:
        """True unless the target is a link of the robot (``target_link``)."""
        return not settings.get("target_link")

    @classmethod
    def resolve_settings(cls, settings: Mapping[str, Any], tree: KinematicTree) -> dict[str, Any]:
        """An empty ``link`` is the tree's tip link (:meth:`KinematicTree.tip_link`)."""
        out = dict(settings)
        if not out.get("link"):
            out["link"] = tree.tip_link()
        return out

    @property
    def effector_link(self) -> str:
        """The effector link."""
        return self.effector

    def target_pose(self, tree: KinematicTree, q: Array) -> Array:
        """(4, 4) the target pose in the root frame at ``q`` (a copy; see :class:`Constraint`)."""
        if self.target.link is not None:
            return tree.forward_kinematics(q, self.target.link) @ self.target.offset
        if not self.target.has_pose:
            raise TargetNotSet(f"{self.name}: no target pose received yet")
        return self.target.pose.copy()

    def carry_over(self, old: Constraint) -> None:
        """Keep the streamed target pose of ``old`` (see :class:`Constraint`)."""
        if (
            isinstance(old, EffectorTargetConstraint)
            and old.target.link is None
            and old.target.has_pose
            and self.target.link is None
        ):
            self.target.set_pose(old.target.pose, check=False)

    def __init__(
        self,
        name: str,
        effector: str,
        target_link: str | None,
        target_offset: ArrayLike | None,
        weight: float,
        gain: float,
        feedforward: bool,
    ) -> None:
        super().__init__(name, weight, gain, feedforward)
        self.effector = effector
        self.target = TargetFrame(name, target_link, target_offset)
        self._eff_idx = -1
        self.jac = np.zeros((6, 0))  # (6, n) effector Jacobian, root frame
        self._eff_pose = np.eye(4)  # (4, 4) the effector's pose: a view of the bound tree's
        self._eff_origin = np.zeros(3)  # (3,) its origin [m], a view of the same
        self._eff_tree: KinematicTree | None = None  # the tree those views are of
        self._eff_kernel_args: tuple[Any, ...] = ()  # the effector's link, its Jacobian's arrays

    def set_target(
        self, pose: ArrayLike, twist: ArrayLike | None = None, *, check: bool = True
    ) -> None:
        """Target pose (4, 4) in the root frame and optional twist (6,) for feed-forward.

        ``check=False`` skips the pose's validation (see :meth:`TargetFrame.set_pose`).
        """
        self.target.set_pose(pose, check)
        if twist is not None:
            self.set_target_twist(twist)

    @property
    def has_target(self) -> bool:
        """True once a target pose was set (always for a link target)."""
        return self.target.has_pose

    def bind(self, tree: KinematicTree) -> None:
        """Resolve names against the tree; allocate work arrays (see :class:`Constraint`)."""
        self._eff_idx = tree.link_index(self.effector)
        # views of the tree's link poses (allocated once per tree): no indexing per tick
        self._eff_pose = tree.pose_ref(self._eff_idx)
        self._eff_origin = self._eff_pose[:3, 3]
        self._eff_tree = tree
        # the effector and its Jacobian's kernel arrays, for a tick in one compiled call
        self._eff_kernel_args = (self._eff_idx, *tree.kernel_arrays())
        self.target.bind(tree)
        self.jac = np.zeros((6, tree.n_joints))
        self._structure_changed()

    def _hold_jacobian(self, jac: Array) -> None:
        """Keep the effector's Jacobian in ``jac`` (6, n) from now on (a subclass's record)."""
        self.jac = jac

    def _effector_kernel_args(self, tree: KinematicTree) -> tuple[Any, ...] | None:
        """The effector's link and its Jacobian's kernel arrays, when one call can do the tick.

        When the target is a set pose (not a link) and ``tree`` is the bound tree: ``(link,
        ints, floats, poses, full, sel)`` for a kernel that takes the effector's Jacobian itself
        (the tree's :meth:`~itasc_ros.core.kinematics.tree.KinematicTree.kernel_arrays`); else
        None (:meth:`_update_frames` does it).
        """
        if self.target.link_idx < 0 and tree is self._eff_tree:
            return self._eff_kernel_args
        return None

    def _update_frames(self, tree: KinematicTree) -> Array:
        """Refresh the target and the effector Jacobian; return the effector pose (4, 4).

        ``tree``: computed; the views kept by :meth:`bind` serve when it is the bound tree
        (a constraint shared by scenes of one model is bound to the last one's).
        """
        self.target.update(tree)
        if tree is not self._eff_tree:
            tree.jacobian_into(self._eff_idx, self.jac)
            return tree.pose_ref(self._eff_idx)
        tree.jacobian_into(self._eff_idx, self.jac, self._eff_origin)
        return self._eff_pose


__all__ = ["EffectorTargetConstraint", "TargetFrame"]
