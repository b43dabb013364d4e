"""SolveResult: the outcome of one solve of a scene (q', scale, damping, locks, errors)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass
class SolveResult:
    """Outcome of one :meth:`Scene.solve`. The scene reuses it: copy it to keep it.

    Attributes:
        qdot: (n,) joint velocities [rad/s or m/s], in ``tree.joint_names`` order.
        errors: (k,) error of each constraint (``constraint_names`` order) [m, rad or mixed].
        constraint_names: names of the constraints in the scene.
        sigma_min: smallest singular value of the weighted task matrix.
        damping: damping lambda used (0 when far from singular).
        locked: (n,) joints saturated this tick: held at a velocity or next-step position
            bound by the solve (saturation in the null space) and still at it.
        velocity_scale: level 1's task scale s (<= 1): its task velocity is s times the
            unbounded one, direction kept, so that every joint stays within its bounds.
        ok: False when the solve produced a non-finite value (q' is then zero).
        iterations: saturate-and-solve rounds of the level that needed most (1: nothing
            saturated).
        active_rows: rows with a non-zero weight (0: nothing to do, q' = 0).
    """

    qdot: Array
    errors: Array
    constraint_names: list[str]
    joint_names: list[str]
    sigma_min: float = 0.0
    damping: float = 0.0
    locked: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    velocity_scale: float = 1.0
    ok: bool = True
    iterations: int = 0
    active_rows: int = 0

    @property
    def velocity_scaled(self) -> bool:
        """True when the joint bounds scaled level 1's task down."""
        return self.velocity_scale < 1.0

    @property
    def locked_joints(self) -> list[str]:
        """Names of the saturated joints (held at a velocity or position bound)."""
        return [n for n, lk in zip(self.joint_names, self.locked, strict=True) if lk]

    def error(self, name: str) -> float:
        """Error of one constraint by name."""
        return float(self.errors[self.constraint_names.index(name)])

    def copy(self) -> SolveResult:
        """A deep copy that the next solve will not overwrite."""
        return SolveResult(
            self.qdot.copy(),
            self.errors.copy(),
            list(self.constraint_names),
            list(self.joint_names),
            self.sigma_min,
            self.damping,
            self.locked.copy(),
            self.velocity_scale,
            self.ok,
            self.iterations,
            self.active_rows,
        )


__all__ = ["SolveResult"]
