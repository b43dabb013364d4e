"""JointLimitAvoidance: keep joints out of a margin at their position limits, smoothly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConstraintError
from ..tree import KinematicTree
from .base import Constraint, check_positive
from .schema import Field

Array = NDArray[np.float64]


def smoothstep(h: float) -> float:
    """``3 h^2 - 2 h^3`` of ``h`` clipped to [0, 1]: 0 -> 0, 1 -> 1, zero slope at both ends."""
    h = min(1.0, max(0.0, h))
    return h * h * (3.0 - 2.0 * h)


class JointLimitAvoidance(Constraint):
    """Rows of ``Cq`` that push joints back out of a margin at their position limits.

    One row per joint, y = q_i; it is off (weight 0) while the joint is more than ``margin``
    from both limits. Within the margin of a limit the row's desired value is the margin's
    boundary (``lower + margin`` or ``upper - margin``), reached with the gain K, and its
    weight rises smoothly (``smoothstep``) from 0 at the boundary to ``weight`` at the limit:
    no jump in q' when a joint enters the margin. Joints without limits (continuous) never
    get a row weight. This is a task, not the hard limit: the scene still locks a joint at
    its limit (``joint_limit_margin``). Beside the other tasks (one priority level) the weights
    blend and a joint slows down smoothly as it enters the margin; at a higher priority than
    the others it wins strictly, and with a weight of 1 a joint that enters the margin fast is
    stopped within the first part of the ramp (a sharper change of q'): a small weight
    (0.01) spreads that hand-over over the margin. B = 0.

    Args:
        name: constraint name.
        joints: joints to keep away from their limits (empty: every active joint at bind).
        margin: width of the band at each limit where the row acts [rad or m].
        weight, gain: see :class:`Constraint`.
    """

    type_name = "joint_limit_avoidance"
    FIELDS = (
        Field("joints", "string_array", [], "Joints to keep off their limits; empty: all."),
        Field(
            "margin",
            "double",
            0.2,
            "Band at each position limit where the joint is pushed back [rad or m]; the row's "
            "weight ramps smoothly from 0 at the band's inner edge to full at the limit.",
            1e-4,
            10.0,
            live=True,
        ),
        *Constraint.FIELDS,
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
        weight: float = 1.0,
        gain: float = 20.0,
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
        self._inner_lo = np.zeros(len(self.joints))
        self._inner_hi = np.zeros(len(self.joints))

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
        # The band's inner edges (the middle when the range is narrower than two margins).
        self._inner_lo = np.full(len(names), -np.inf)
        self._inner_hi = np.full(len(names), np.inf)
        for r in range(len(names)):
            lo, hi = float(self._lower[r]), float(self._upper[r])
            if np.isfinite(lo) and np.isfinite(hi) and hi - lo < 2.0 * self.margin:
                self._inner_lo[r] = self._inner_hi[r] = 0.5 * (lo + hi)
                continue
            if np.isfinite(lo):
                self._inner_lo[r] = lo + self.margin
            if np.isfinite(hi):
                self._inner_hi[r] = hi - self.margin
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
            a[r, i] = 1.0
            y[r] = qi
            lo, hi = self._lower[r], self._upper[r]
            edge_lo, edge_hi = self._inner_lo[r], self._inner_hi[r]
            if qi < edge_lo:
                boundary = edge_lo
                h = (edge_lo - qi) / (edge_lo - lo) if edge_lo > lo else 1.0
            elif qi > edge_hi:
                boundary = edge_hi
                h = (qi - edge_hi) / (hi - edge_hi) if hi > edge_hi else 1.0
            else:
                ydot[r] = 0.0
                wy[r] = 0.0
                continue
            ydot[r] = self.gain * (boundary - qi)
            wy[r] = self.weight * smoothstep(h)

    def penetration(self, y: Array) -> Array:
        """(m,) how far each joint is inside its margin [rad or m] (0 outside it)."""
        return np.maximum(0.0, np.maximum(self._inner_lo - y, y - self._inner_hi))

    def error(self, y: Array) -> float:
        """Norm of the joints' penetration into their margins (see :class:`Constraint`)."""
        p = self.penetration(y)
        return float(np.sqrt(np.dot(p, p)))


__all__ = ["JointLimitAvoidance", "smoothstep"]
