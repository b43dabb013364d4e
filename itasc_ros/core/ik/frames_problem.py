"""Links on full poses and centre-of-mass rows as a position-IK problem, in one compiled call.

The whole-body problem of a humanoid (feet and hands on poses, the centre of mass over the
feet) is made of :class:`~itasc_ros.core.constraints.CopyPose` constraints on full 6-D poses
and :class:`~itasc_ros.core.constraints.com.CenterOfMass` constraints. Their rows and errors at
a configuration are written by one compiled call (:func:`~itasc_ros.core.ik._frames_kernels.
frame_rows`) instead of a scene's update per constraint: ~5x faster than
:class:`~itasc_ros.core.ik.set_problem.SetProblem` for the same rows. :meth:`FramesProblem.fits`
says when a set is made only of those.

The rows differ from the scene's in two ways that do not change the solutions: a pose error's
rotation is measured in the root frame (the constraint's own rows may use the target's: a
solution is checked against those by the caller), and a centre-of-mass row outside its band's
inner edge has its full weight (the scene's rises smoothly across the margin, for control).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..constraints.base import Constraint
from ..constraints.com import AXES, CenterOfMass
from ..constraints.copy_pose import CopyPose
from ..errors import TargetNotSet
from ..kinematics.tree import KinematicTree
from ._frames_kernels import frame_rows, frames_newton
from .joint_box import unmet_only

Array = NDArray[np.float64]


def _pose_constraint(c: Constraint) -> bool:
    return (
        isinstance(c, CopyPose)
        and c.position_axes == "xyz"
        and c.rotation_axes == "xyz"
        and c.target.link is None
    )


class FramesProblem:
    """The rows of full-pose CopyPose and CenterOfMass constraints (see the module).

    Args:
        tree: the kinematic tree.
        constraints: enabled constraints of those two kinds, each with its target set (at
            most one CenterOfMass).

    Raises:
        TargetNotSet: a constraint without its target.
        UnknownLinkError: a link not in the tree.
    """

    @staticmethod
    def fits(constraints: Sequence[Constraint]) -> bool:
        """True when every constraint is a full-pose CopyPose on a pose, or one CenterOfMass."""
        coms = [c for c in constraints if isinstance(c, CenterOfMass)]
        return (
            bool(constraints)
            and len(coms) <= 1
            and all(c.enabled and (_pose_constraint(c) or c in coms) for c in constraints)
        )

    def __init__(self, tree: KinematicTree, constraints: Sequence[Constraint]) -> None:
        for c in constraints:
            if not c.has_target:
                raise TargetNotSet(f"{c.name}: the constraint has no target; set it first")
        poses = [c for c in constraints if isinstance(c, CopyPose)]
        coms = [c for c in constraints if isinstance(c, CenterOfMass)]
        self.tree = tree
        self._links = np.array([tree.link_index(c.effector) for c in poses], dtype=np.int64)
        self._targets = np.array([c.target.pose for c in poses]).reshape(-1, 4, 4)
        self._weights = np.array([c.weight for c in poses], dtype=float)
        com = coms[0] if coms else None
        self._com_axes = np.array(
            [AXES.index(a) for a in (com.axes if com else "")], dtype=np.int64
        )
        self._edge_lo, self._edge_hi = _edges(com)
        self._com_weight = np.array([com.weight if com else 0.0])
        n, nl, nf = tree.n_joints, len(tree.link_names), len(tree.all_joint_names)
        m = 6 * len(poses) + self._com_axes.shape[0]
        self._work = (
            np.zeros((6, nf)),
            np.zeros((nl, 4)),
            np.zeros(3),
            np.zeros((3, nf)),
            np.zeros((3, n)),
        )
        self._rw = np.zeros((3, 3))
        self._a, self._ew, self._e = np.zeros((m, n)), np.zeros(m), np.zeros(m)
        # the rows in the constraints' order (each constraint's rows together, as SetProblem)
        starts, r = {}, 0
        for c in poses:
            starts[c.name] = list(range(r, r + 6))
            r += 6
        if com is not None:
            starts[com.name] = list(range(r, m))
        self._order = np.array([i for c in constraints for i in starts[c.name]], dtype=np.int64)
        self._rotation = np.array(
            [flag for c in constraints for flag in c.orientation_rows()], dtype=bool
        )
        self._tols = np.zeros(m)
        self._com_rows = np.arange(m) >= 6 * len(poses)  # (m,) rows' order
        self._steps = (np.zeros((m, m)), np.zeros(m), np.zeros(n), np.zeros(n))
        ints, floats, link_poses, _, sel = tree.kernel_arrays()
        self._fk = (sel, 1e150, tree.fk_kernel_arrays()[0], ints, floats, link_poses)
        self._row_args = (
            ints, floats, link_poses, self._work[0], sel, self._links, self._targets,
            self._weights, *self._work[1:], self._com_axes, self._edge_lo, self._edge_hi,
            self._com_weight, self._rw, self._a, self._ew, self._e,
        )  # fmt: skip

    def refresh(self, constraints: Sequence[Constraint]) -> None:
        """Read the targets, weights and band of ``constraints`` again, in place.

        ``constraints`` are those the problem was built of, in the same order and structure
        (the caller checks their layout signatures); only their values may have changed.

        Raises:
            TargetNotSet: a constraint without its target.
        """
        k = 0
        for c in constraints:
            if isinstance(c, CopyPose):
                self._targets[k] = c.target.pose
                self._weights[k] = c.weight
                k += 1
            elif isinstance(c, CenterOfMass):
                lo, hi = _edges(c)
                self._edge_lo[:] = lo
                self._edge_hi[:] = hi
                self._com_weight[0] = c.weight

    def newton(
        self,
        q: Array,
        best_q: Array,
        box: tuple[Array, Array],
        tols: Array,
        params: Array,
        state: Array,
        max_iters: int,
    ) -> int:
        """Up to ``max_iters`` iterations of one attempt, compiled (``frames_newton``).

        Args:
            q: (n,) the iterate, moved in place.
            best_q: (n,) the iterate with the smallest error so far (written).
            box: (lower, upper) joint limits (n,) [rad or m].
            tols: (m,) each row's tolerance in the constraints' order [m or rad].
            params: the loop's tuning (``IkOptions.to_array``).
            state: the loop's state (``_ik_kernels.S_*``).
            max_iters: iterations at most.

        Returns:
            ``_frames_kernels.MET``, ``STALLED`` or ``RAN_OUT``.
        """
        self._tols[self._order] = tols  # in the rows' order
        out = frames_newton(
            q, best_q, box[0], box[1], self._tols, params, state, max_iters, self._fk,
            self._row_args, self._steps,
        )  # fmt: skip
        return int(out)

    def rows(self, q: Array) -> tuple[Array, Array, Array]:
        """(A (m, n), error (m,)) weighted by sqrt(weight), and the unweighted error, at q.

        ``A`` and the weighted error are the problem's work arrays (rewritten by the next
        call); the unweighted error is a new array, in the constraints' order.
        """
        self.tree.compute(q)
        frame_rows(*self._row_args)
        return self._a, self._ew, self._e[self._order]

    def unmet_only_joints(self, q: Array, tols: Array) -> NDArray[np.bool_] | None:
        """The joints that only the rows unmet at ``q`` (n,) use (see :func:`unmet_only`).

        Args:
            q: (n,) joint positions.
            tols: (m,) each row's tolerance in the constraints' order [m or rad].
        """
        self._tols[self._order] = tols  # in the rows' order
        self.rows(q)
        return unmet_only(self._a, self._e, self._tols, self._com_rows)

    def errors(self) -> Array:
        """(m,) the unweighted errors of the last rows written (a new array, constraints' order).

        After :meth:`newton` returned ``MET``, those of its solution.
        """
        return self._e[self._order]

    def orientation_rows(self) -> NDArray[np.bool_]:
        """(m,) bool: the rows that measure an orientation [rad], in the constraints' order."""
        return self._rotation


def _edges(com: CenterOfMass | None) -> tuple[Array, Array]:
    """Where the CoM's rows start to act: the band's inner edges, or the target twice."""
    if com is None:
        return np.zeros(0), np.zeros(0)
    target = com.com_target
    if target is not None:
        return target, target.copy()
    lo, hi = com.support
    mid = 0.5 * (lo + hi)
    return np.minimum(lo + com.margin, mid), np.maximum(hi - com.margin, mid)


__all__ = ["FramesProblem"]
