"""CenterOfMass: keep the robot's centre of mass over a support region, or drive it to a point."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConstraintError
from ..kinematics.tree import KinematicTree
from . import _features as F
from .base import HOLDER_EPOCH, TICK_COM, CompiledTick, Constraint, check_positive
from .schema import Field

Array = NDArray[np.float64]

AXES = "xyz"


class CenterOfMass(Constraint):
    """The centre of mass (CoM) of the whole robot: a band (support region) or a target point.

    y = the CoM's coordinates along ``axes`` in the root frame, from the URDF's ``<inertial>``
    masses (links of held joints count too; only the active joints move it);
    A = those rows of the CoM Jacobian ``sum_i m_i J_i(c_i) / M`` (3, n); B = 0.

    * Band (``support_min`` / ``support_max``, one value per axis, root frame [m]): a row is
      off while its coordinate is more than ``margin`` inside the band; within ``margin`` of
      an edge, and outside, its desired value is that inner edge (``support_max - margin`` or
      ``support_min + margin``), reached with the gain K, and its weight rises smoothly
      (``smoothstep``) from 0 at the inner edge to ``weight`` at the band's edge: the CoM is
      pulled back before it leaves the support region, without a jump in q'.
    * Target (``target``, one value per axis): every row drives its coordinate to the target;
      the band is then not used. Settable live (``set_com_target``).

    Args:
        name: constraint name.
        axes: the root-frame axes of the rows, e.g. "xy" (the ground plane of a humanoid).
        support_min: lower corner of the band, one value per axis [m].
        support_max: upper corner of the band, one value per axis [m].
        target: desired CoM, one value per axis [m]; empty: the band.
        margin: width of the smooth ramp inside each edge of the band [m].
        weight, gain: see :class:`Constraint`.
    """

    type_name = "com"
    FIELDS = (
        Field(
            "axes",
            "string",
            "xy",
            "Axes of the root frame whose CoM coordinates are constrained (e.g. xy: over the "
            "ground).",
            choices="letters of: x, y, z (each once)",
        ),
        Field(
            "support_min",
            "double_array",
            [],
            "Lower corner of the support region (band), one value per axis, root frame [m].",
            -1e3,
            1e3,
            live=True,
        ),
        Field(
            "support_max",
            "double_array",
            [],
            "Upper corner of the support region (band), one value per axis, root frame [m].",
            -1e3,
            1e3,
            live=True,
        ),
        Field(
            "target",
            "double_array",
            [],
            "Desired CoM, one value per axis [m]; empty: keep it in the band.",
            -1e3,
            1e3,
            live=True,
        ),
        Field(
            "margin",
            "double",
            0.02,
            "Width of the ramp inside each edge of the band [m]: the pull back starts there "
            "(weight 0) and is full at the edge.",
            0.0,
            10.0,
            live=True,
        ),
        *Constraint.FIELDS,
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """A band around the CoM at the neutral pose, a target, and one axis (z)."""
        com = tree.center_of_mass(tree.neutral())[0] if tree.mass > 0.0 else np.zeros(3)
        return [
            {
                "axes": "xy",
                "support_min": [float(com[0]) - 0.01, float(com[1]) - 0.2],
                "support_max": [float(com[0]) + 0.01, float(com[1]) + 0.2],
            },
            {"axes": "xyz", "target": [float(v) + 0.05 for v in com], "gain": 5.0},
            {"axes": "z", "support_min": [-1.0], "support_max": [float(com[2]) - 0.05]},
        ]

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> CenterOfMass:
        """Build from checked settings (see :class:`Constraint`)."""
        return cls(
            name,
            settings["axes"],
            settings["support_min"],
            settings["support_max"],
            settings["target"],
            settings["margin"],
            settings["weight"],
            settings["gain"],
        )

    def __init__(
        self,
        name: str,
        axes: str = "xy",
        support_min: Sequence[float] = (),
        support_max: Sequence[float] = (),
        target: Sequence[float] = (),
        margin: float = 0.02,
        weight: float = 1.0,
        gain: float = 20.0,
    ) -> None:
        super().__init__(name, weight, gain, feedforward=False)
        if (
            not isinstance(axes, str)
            or not axes
            or any(a not in AXES for a in axes)
            or len(set(axes)) != len(axes)
        ):
            raise ConstraintError(
                f"{name}: axes must be letters of {AXES!r}, each once (e.g. 'xy'), got {axes!r}"
            )
        self.axes = axes
        self._ax = np.array([AXES.index(a) for a in axes], dtype=np.int64)
        k = len(axes)
        self.margin = check_positive(f"{name}: margin", margin)
        # the tick's arrays, views of one record (a scene's compiled tick keeps it: keep_record)
        self._record = np.zeros(F.com_record_size(k, 0, 0, 0))
        self._use_record(self._record, 0, 0, 0)
        self._axes[0] = self._ax
        self._tree_arrays: tuple[Array, ...] = ()  # the model, poses, columns of the tree
        self._record_tree: KinematicTree | None = None  # the tree the record was made for
        self.tracking = False
        if len(target):
            self.set_com_target(target)
        else:
            lo, hi = (
                self._vector("support_min", support_min),
                self._vector("support_max", support_max),
            )
            if np.any(lo > hi):
                raise ConstraintError(
                    f"{name}: support_min {lo.tolist()} must be <= support_max {hi.tolist()}"
                )
            self._lo[:], self._hi[:] = lo, hi
            mid = 0.5 * (lo + hi)
            self._edge_lo[:] = np.minimum(lo + self.margin, mid)
            self._edge_hi[:] = np.maximum(hi - self.margin, mid)
        self._mass = 0.0

    def _use_record(self, record: Array, n: int, n_links: int, n_full: int) -> None:
        """Take the tick's arrays as views of ``record`` (:func:`._features.com_record`)."""
        HOLDER_EPOCH[0] += 1  # the record moved
        self._record = record
        self._dims = (n, n_links, n_full)
        k = self._ax.shape[0]
        self._head, self._com, self._axes, self._jac, _, _ = F.com_record(
            record, k, n, n_links, n_full
        )
        _, self._target, self._lo, self._hi, self._edge_lo, self._edge_hi = self._axes

    @property
    def tracking(self) -> bool:
        """True when the CoM is driven to a target, False in band mode."""
        return bool(self._head[0])

    @tracking.setter
    def tracking(self, on: bool) -> None:
        self._head[0] = 1.0 if on else 0.0

    def _vector(self, what: str, values: ArrayLike) -> Array:
        v = np.asarray(values, dtype=float).reshape(-1)
        if v.shape != (len(self.axes),) or not np.all(np.isfinite(v)):
            raise ConstraintError(
                f"{self.name}: {what} must be {len(self.axes)} finite values, one per axis of "
                f"{self.axes!r} (or give a target), got {np.asarray(values).tolist()}"
            )
        return v

    def set_com_target(self, target: ArrayLike) -> None:
        """Drive the CoM to ``target`` (one value per axis) [m, root frame] instead of the band.

        Raises:
            ConstraintError: not one finite value per axis.
        """
        self._target[:] = self._vector("target", target)
        self.tracking = True

    @property
    def com_target(self) -> Array | None:
        """(k,) the target along the axes, or None in band mode."""
        return self._target.copy() if self.tracking else None

    @property
    def support(self) -> tuple[Array, Array]:
        """(support_min (k,), support_max (k,)) of the band [m]."""
        return self._lo.copy(), self._hi.copy()

    @property
    def n_rows(self) -> int:
        """Number of output rows m: one per axis (see :class:`Constraint`)."""
        return len(self.axes)

    def bind(self, tree: KinematicTree) -> None:
        """Check the URDF's masses and allocate work arrays (see :class:`Constraint`).

        Raises:
            ConstraintError: the URDF has no mass, or unreadable ``<inertial>`` elements.
        """
        bad = tree.bad_inertials
        if bad:
            raise ConstraintError(
                f"{self.name}: the URDF has unreadable <inertial> elements: "
                + "; ".join(f"{k}: {v}" for k, v in sorted(bad.items()))
            )
        if not tree.mass > 0.0:
            raise ConstraintError(
                f"{self.name}: the URDF has no <inertial> masses; a com constraint needs them "
                f"(robot {tree.name!r})"
            )
        record = np.zeros(
            F.com_record_size(
                self._ax.shape[0], tree.n_joints, len(tree.link_names), len(tree.all_joint_names)
            )
        )
        head = F.COM_RECORD_HEAD + 6 * self._ax.shape[0]  # the values kept: tracking, axes
        record[:head] = self._record[:head]
        self._use_record(record, tree.n_joints, len(tree.link_names), len(tree.all_joint_names))
        ints, floats, poses, _, sel = tree.kernel_arrays()
        self._tree_arrays = (ints, floats, poses, sel)
        self._record_tree = tree
        self._mass = tree.mass
        self._structure_changed()

    def compiled_tick(self, tree: KinematicTree) -> CompiledTick | None:
        """A centre of mass on the tree it was bound to last (see :class:`Constraint`)."""
        if tree is not self._record_tree or tree is not self.bound_tree:
            return None
        return CompiledTick(TICK_COM, self._record.shape[0], -1, ())

    def keep_record(self, record: Array) -> None:
        """Hold the tick's arrays in ``record`` (see :class:`Constraint`)."""
        if self._record is record:
            return
        record[:] = self._record
        self._use_record(record, *self._dims)

    def center_of_mass(self) -> Array:
        """(3,) the CoM of the last update [m, root frame] (a copy)."""
        return self._com.copy()

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`), in one compiled call.

        ``tree``: the tree it was bound to last (its record's work arrays are that tree's).
        """
        if tree is not self._record_tree:
            raise ConstraintError(f"{self.name}: bound to another tree; bind it to this one")
        ints, floats, poses, sel = self._tree_arrays
        F.com_rows(
            ints, floats, poses, sel, self._record, self.gain, self.weight, a, b, y, ydot, wy
        )

    def outside(self, y: Array) -> Array:
        """(k,) how far the CoM is outside the band along each axis [m] (0 inside)."""
        return np.maximum(0.0, np.maximum(self._lo - y, y - self._hi))

    def error(self, y: Array) -> float:
        """Distance to the target, or outside the band (see :class:`Constraint`)."""
        e = self._target - y if self.tracking else self.outside(y)
        return float(np.sqrt(np.dot(e, e)))


__all__ = ["AXES", "CenterOfMass"]
