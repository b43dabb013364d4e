"""Target frames shared by the constraints: a fixed/streamed pose, or a link of the tree."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError
from ..tree import KinematicTree
from .base import Constraint

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


def _pose(owner: str, pose: ArrayLike) -> Array:
    p = np.asarray(pose, dtype=float)
    if p.shape != (4, 4) or not np.all(np.isfinite(p)):
        raise ConfigurationError(
            f"{owner}: a pose must be a finite (4, 4) matrix, got shape {p.shape}"
        )
    r = p[:3, :3]
    if np.abs(r.T @ r - np.eye(3)).max() > 1e-6 or np.linalg.det(r) < 0:
        raise ConfigurationError(f"{owner}: the pose's rotation is not orthonormal")
    return p


__all__ = ["TargetFrame"]


class EffectorTargetConstraint(Constraint):
    """A constraint between an effector link and a :class:`TargetFrame` (CopyPose, Distance).

    Holds what both share: the effector's index and Jacobian, the target, ``set_target`` and
    ``bind``; subclasses write their rows in ``update`` after :meth:`_update_frames`.
    """

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
        self._jac = np.zeros((6, 0))  # (6, n) effector Jacobian, root frame

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
        self.target.bind(tree)
        self._jac = np.zeros((6, tree.n_joints))
        self._structure_changed()

    def _update_frames(self, tree: KinematicTree) -> Array:
        """Refresh the target and the effector Jacobian; return the effector pose (4, 4)."""
        self.target.update(tree)
        tree.jacobian_into(self._eff_idx, self._jac)
        return tree.pose_ref(self._eff_idx)
