"""AlignAxis: point a vector fixed in a link along a target direction (e.g. the tool down)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from ._target import EffectorTargetConstraint
from .schema import Field

Array = NDArray[np.float64]

ALIGN_TO = ("direction", "target", "link")
"""Where the target direction comes from: a fixed root-frame ``direction``, an axis of the
streamed ``target`` pose, or an axis of another ``link`` of the robot."""


def _unit(owner: str, what: str, v: ArrayLike) -> Array:
    a = np.asarray(v, dtype=float).reshape(-1)
    n = float(np.linalg.norm(a)) if a.shape == (3,) else 0.0
    if not (math.isfinite(n) and n > 1e-9):
        raise ConstraintError(f"{owner}: {what} must be 3 finite values, not all zero, got {v!r}")
    return a / n


def _cross(a: Array, b: Array, out: Array) -> None:
    """``out = a x b`` for (3,) arrays, without allocating."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


def _perpendicular_basis(d: Array) -> tuple[Array, Array]:
    """Two unit vectors (3,) orthogonal to the unit vector ``d`` and to each other."""
    ref = np.eye(3)[int(np.argmin(np.abs(d)))]  # the axis least aligned with d
    u1 = np.cross(d, ref)
    u1 /= np.linalg.norm(u1)
    return u1, np.cross(d, u1)


class AlignAxis(EffectorTargetConstraint):
    """Align the vector ``axis`` of the effector link with a target direction d (2 rows).

    The "alignment" / "relative alignment" task variables. With a = R_e axis the effector's
    vector in the root frame, d the target direction and u1, u2 an orthonormal pair
    orthogonal to d, fixed to the direction's frame, the two outputs are the rotation vector
    that takes a onto d, on u1 and u2: ``y = theta n`` (theta the angle between a and d, n the
    unit of a x d), with ``y'_d = -K y``: a turns toward d on the great circle, from any
    angle (exactly opposite vectors turn round u1's way). Rows: ``A = R (Jw_e - Jw_l)``
    (Jw_l for a link target) and, for a streamed target pose, ``B = [0, R]``: the target's
    angular velocity is fed forward.

    Args:
        name: constraint name.
        effector: link whose vector is aligned.
        axis: (3,) the vector in the effector's frame (normalised).
        align_to: one of :data:`ALIGN_TO`.
        direction: (3,) root-frame direction for ``align_to='direction'``.
        target_axis: (3,) the axis of the target pose or of ``target_link`` to align with.
        target_link: the other link, for ``align_to='link'``.
        weight, gain, feedforward: see :class:`Constraint`.
    """

    type_name = "align_axis"
    FIELDS = (
        *EffectorTargetConstraint.HEAD_FIELDS,
        Field(
            "axis",
            "double_array",
            [0.0, 0.0, 1.0],
            "Vector in the effector link's frame to align (normalised).",
            -1e3,
            1e3,
            live=True,
        ),
        Field(
            "align_to",
            "string",
            "direction",
            "Where the target direction comes from: a fixed root-frame 'direction', an axis "
            "of the 'target' pose (topic), or an axis of 'target_link'.",
            choices="one of: " + ", ".join(ALIGN_TO),
        ),
        Field(
            "direction",
            "double_array",
            [0.0, 0.0, -1.0],
            "align_to 'direction': the root-frame direction.",
            -1e3,
            1e3,
            live=True,
        ),
        Field(
            "target_axis",
            "double_array",
            [0.0, 0.0, 1.0],
            "align_to 'target' or 'link': the axis of the target's frame to align with.",
            -1e3,
            1e3,
            live=True,
        ),
        *EffectorTargetConstraint.TAIL_FIELDS,
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """Each source of the direction (see :class:`Constraint`)."""
        return [
            {},
            {"axis": [1.0, 0.0, 0.0], "direction": [0.0, 1.0, 1.0]},
            {"align_to": "target", "target_axis": [0.0, 1.0, 0.0]},
            {"align_to": "link", "target_link": tree.link_names[1], "axis": [0.0, 1.0, 0.0]},
        ]

    @classmethod
    def takes_target(cls, settings: Mapping[str, Any]) -> bool:
        """Only ``align_to='target'`` takes a target pose from outside."""
        return settings.get("align_to", "direction") == "target"

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> AlignAxis:
        """Build from checked settings (see :class:`Constraint`)."""
        return cls(
            name,
            settings["link"],
            axis=settings["axis"],
            align_to=settings["align_to"],
            direction=settings["direction"],
            target_axis=settings["target_axis"],
            **cls.shared_arguments(settings),
        )

    def __init__(
        self,
        name: str,
        effector: str,
        axis: ArrayLike = (0.0, 0.0, 1.0),
        align_to: str = "direction",
        direction: ArrayLike = (0.0, 0.0, -1.0),
        target_axis: ArrayLike = (0.0, 0.0, 1.0),
        target_link: str | None = None,
        target_offset: ArrayLike | None = None,
        weight: float = 1.0,
        gain: float = 20.0,
        feedforward: bool = True,
    ) -> None:
        if align_to not in ALIGN_TO:
            raise ConstraintError(
                f"{name}: unknown align_to {align_to!r}; choices are: " + ", ".join(ALIGN_TO)
            )
        if (align_to == "link") != bool(target_link):
            raise ConstraintError(
                f"{name}: target_link is needed for align_to 'link' and only there, got "
                f"align_to {align_to!r}, target_link {target_link!r}"
            )
        link = target_link if align_to == "link" else None
        offset = target_offset if align_to == "link" else None
        super().__init__(name, effector, link, offset, weight, gain, feedforward)
        self.align_to = align_to
        self.axis = _unit(name, "axis", axis)  # (3,) effector frame
        self.direction = _unit(name, "direction", direction)  # (3,) root frame
        self.target_axis = _unit(name, "target_axis", target_axis)  # (3,) target frame
        # u1, u2: in the root frame for a fixed direction, else in the target's frame.
        d = self.direction if align_to == "direction" else self.target_axis
        self._basis = np.stack(_perpendicular_basis(d))  # (2, 3)
        self._d = np.zeros(3)  # (3,) the target direction, root frame
        self._u = np.zeros((2, 3))  # (2, 3) u1, u2 in the root frame
        self._a = np.zeros(3)  # (3,) the effector's vector, root frame
        self._v = np.zeros((2, 3))  # (2, 3) d x u_i
        self._big = np.zeros((2, 3))  # (2, 3) a x (d x u_i)
        self._rows = np.zeros((2, 3))  # (2, 3) dy / dw
        self._h = np.zeros(3)  # (3,) a x d
        self._t = np.zeros(3)  # (3,) d theta / dw
        self._row = np.zeros(0)  # (n,) work row
        self._theta = 0.0

    @property
    def has_target(self) -> bool:
        """A fixed direction or a link is always there; a target pose once received."""
        return self.align_to != "target" or self.target.has_pose

    def bind(self, tree: KinematicTree) -> None:
        """Resolve names, allocate work arrays (see :class:`Constraint`)."""
        super().bind(tree)
        self._row = np.zeros(tree.n_joints)

    @property
    def n_rows(self) -> int:
        """Number of output rows m (see :class:`Constraint`)."""
        return 2

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`)."""
        te = self._update_frames(tree)
        np.dot(te[:3, :3], self.axis, out=self._a)
        if self.align_to == "direction":
            self._d[:] = self.direction
            self._u[:] = self._basis
        else:
            rt = self.target.pose[:3, :3]
            np.dot(rt, self.target_axis, out=self._d)
            np.dot(self._basis, rt.T, out=self._u)
        rows = self._rotation_rows(y)  # (2, 3): dy/d(w_effector - w_target)
        np.dot(rows, self.jac[3:, :], out=a)
        if self.target.link_idx >= 0:
            for i in range(2):
                np.dot(rows[i], self.target.jac[3:, :], out=self._row)
                a[i] -= self._row
        b[:, :3] = 0.0
        if self.align_to == "target":
            b[:, 3:] = rows
        else:
            b[:, 3:] = 0.0
        ydot[0], ydot[1] = -self.gain * y[0], -self.gain * y[1]
        wy[:] = self.weight

    def _rotation_rows(self, y: Array) -> Array:
        """Write y (the rotation vector from a to d on u1, u2); return its rows (2, 3).

        ``y = f(theta) g`` with ``g_i = a . (d x u_i)`` (so ``|g| = sin theta``) and
        ``f = theta / sin theta``: y is the log of the rotation taking a onto d, smooth
        from 0 up to (not at) pi. Its rate is ``R (w_e - w_t)`` for the angular velocities of
        the effector and of the target direction.
        """
        av, d, u = self._a, self._d, self._u
        v = self._v  # (2, 3): d x u1 = u2, d x u2 = -u1
        v[0], v[1] = u[1], -u[0]
        g0, g1 = float(av @ v[0]), float(av @ v[1])
        sin, cos = math.hypot(g0, g1), float(av @ d)
        theta = math.atan2(sin, cos)
        self._theta = theta
        big, rows = self._big, self._rows
        for i in range(2):  # G_i = a x v_i
            _cross(av, v[i], big[i])
        if sin < 1e-9 and cos < 0.0:  # exactly opposite: any way round; take u1's
            y[0], y[1] = math.pi, 0.0
            np.multiply(big, math.pi / 1e-9, out=rows)
            return rows
        if theta < 1e-4:  # f = theta / sin theta and f' by their series
            f, df = 1.0 + theta * theta / 6.0, theta / 3.0
        else:
            f, df = theta / sin, (sin - theta * cos) / (sin * sin)
        y[0], y[1] = f * g0, f * g1
        h = self._h
        _cross(av, d, h)  # d(a . d) / dw = a x d
        np.multiply(big, f, out=rows)
        if sin > 1e-12:  # d theta / dw = cos (g . G) / sin - sin h
            t = self._t
            np.multiply(big[0], g0 * cos / sin, out=t)
            t += (g1 * cos / sin) * big[1]
            t -= sin * h
            rows[0] += (df * g0) * t
            rows[1] += (df * g1) * t
        return rows

    def error(self, y: Array) -> float:
        """The angle [rad] between the effector's vector and the target direction."""
        return self._theta

    def orientation_rows(self) -> tuple[bool, ...]:
        """Both rows are rotations [rad] (see :class:`Constraint`)."""
        return (True,) * self.n_rows


__all__ = ["ALIGN_TO", "AlignAxis"]
