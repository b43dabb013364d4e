"""A constraint set as a position-IK problem: its rows ``A`` and errors at a configuration.

The rows are those the control loop solves (:class:`~itasc_ros.core.solve.Scene`), read with
gains 1 and no feed-forward (the caller sets those), each weighted by ``sqrt(Wy)``.

The rows of a one-sided constraint (:attr:`~itasc_ros.core.constraints.Constraint.one_sided`:
a collision pair's ``d >= margin``, a joint kept from its limit) are inequalities
``A dq >= e``: a row acts (its error and its row of ``A``) only while it is broken (``e > 0``:
for a pair, closer than its ``margin + buffer``); a row that holds is met and asks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..constraints.base import Constraint
from ..constraints.com import CenterOfMass
from ..errors import TargetNotSet
from ..kinematics.tree import KinematicTree
from ..solve.scene import Scene

Array = NDArray[np.float64]


class SetProblem:
    """The constraints' rows at a configuration, with gains 1 and no feed-forward.

    Args:
        tree: the kinematic tree the constraints are bound to.
        constraints: the constraints, each with its target set.

    Raises:
        TargetNotSet: a constraint without its target.
        UnknownLinkError, UnknownJointError: a name not in the tree.
    """

    def __init__(self, tree: KinematicTree, constraints: Sequence[Constraint]) -> None:
        for c in constraints:
            if not c.has_target:
                raise TargetNotSet(f"{c.name}: the constraint has no target; set it first")
        self.scene = Scene(tree, constraints)
        sided: list[bool] = []
        free: list[bool] = []
        for c in self.scene.constraints:
            if c.enabled:
                sided += [c.one_sided] * c.n_rows
                free += [c.one_sided or isinstance(c, CenterOfMass)] * c.n_rows
        self._one_sided = np.array(sided, dtype=bool)
        #: (m,) rows that keep no joint at a restart (see :func:`~itasc_ros.core.ik.joint_box.
        #: unmet_only`): one-sided rows and a centre of mass's.
        self.free_rows = np.array(free, dtype=bool)

    def rows(self, q: Array) -> tuple[Array, Array, Array]:
        """(A (m, n), error yd - y (m,)) weighted by sqrt(Wy), and the unweighted error, at q.

        Inactive rows (Wy = 0, e.g. inside a distance band) and inequality rows that hold
        have a zero error and a zero row of ``A``.
        """
        mats = self.scene.matrices(q)
        wy, rhs = mats["wy"], mats["rhs"]
        on = (wy > 0.0) & (~self._one_sided | (rhs > 0.0))
        w = np.where(on, np.sqrt(np.maximum(wy, 0.0)), 0.0)
        e = np.where(on, rhs, 0.0)
        return mats["A"] * w[:, None], e * w, e

    def orientation_rows(self) -> NDArray[np.bool_]:
        """(m,) bool: the rows that measure an orientation [rad].

        As the constraints declare them
        (:meth:`~itasc_ros.core.constraints.Constraint.orientation_rows`), in their order.
        """
        out: list[bool] = []
        for c in self.scene.constraints:
            if c.enabled:
                out += c.orientation_rows()
        return np.array(out, dtype=bool)


__all__ = ["SetProblem"]
