"""SolveResult: the outcome of one solve of a scene (q', scale, damping, locks, errors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from .solver import (
    INFO_DAMPING,
    INFO_FINITE,
    INFO_ITERATIONS,
    INFO_SCALE,
    INFO_SIGMA_MIN,
    INFO_SIZE,
)

Array = NDArray[np.float64]
V = TypeVar("V", float, int, bool)


class _InfoValue(Generic[V]):
    """One value of a result's info array, as a typed attribute (read and written in place)."""

    def __init__(self, index: int, kind: Callable[[float], V], doc: str) -> None:
        self.index: int = index
        self.kind: Callable[[float], V] = kind
        self.__doc__ = doc

    @overload
    def __get__(self, obj: None, owner: type) -> _InfoValue[V]: ...
    @overload
    def __get__(self, obj: SolveResult, owner: type) -> V: ...
    def __get__(self, obj: SolveResult | None, owner: type) -> V | _InfoValue[V]:
        if obj is None:
            return self
        return self.kind(obj._info[self.index])

    def __set__(self, obj: SolveResult, value: V) -> None:
        obj._info[self.index] = float(value)


class SolveResult:
    """Outcome of one :meth:`Scene.solve`. The scene reuses it: copy it to keep it.

    ``errors`` and ``active_rows`` are computed when first read after a solve (a control tick
    that does not look at them does not pay for them); they describe that solve until the next.

    Attributes:
        qdot: (n,) joint velocities [rad/s or m/s], in ``tree.joint_names`` order.
        errors: (k,) error of each constraint (``constraint_names`` order) [m, rad or mixed].
        constraint_names: names of the constraints in the scene.
        joint_names: names of the joints of ``qdot``.
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

    Args of the constructor beyond the attributes:
        info: the scene's (INFO_SIZE,) info array (:mod:`.solver`): sigma_min, damping,
            velocity_scale, iterations and ok are read from it, as the solve wrote them (the
            values given are then ignored); None: this result's own.
    """

    def __init__(
        self,
        qdot: Array,
        errors: Array,
        constraint_names: list[str],
        joint_names: list[str],
        sigma_min: float = 0.0,
        damping: float = 0.0,
        locked: NDArray[np.bool_] | None = None,
        velocity_scale: float = 1.0,
        ok: bool = True,
        iterations: int = 0,
        active_rows: int = 0,
        info: Array | None = None,
    ) -> None:
        self.qdot = qdot
        self._errors = errors
        self._fill_errors: Callable[[Array], None] | None = None
        self.constraint_names = constraint_names
        self.joint_names = joint_names
        self.locked = np.zeros(0, dtype=bool) if locked is None else locked
        # sigma_min, damping, velocity_scale, iterations, ok: the solve's info array (the
        # scene's own, read where it is) or one of this result's
        self._info = np.zeros(INFO_SIZE) if info is None else info
        if info is None:
            self.sigma_min, self.damping, self.velocity_scale = sigma_min, damping, velocity_scale
            self.iterations, self.ok = iterations, ok
        self._active_rows = active_rows
        self._weights: Array | None = None

    sigma_min = _InfoValue(
        INFO_SIGMA_MIN, float, "Smallest singular value of the weighted task matrix."
    )
    damping = _InfoValue(INFO_DAMPING, float, "Damping lambda used (0 when far from singular).")
    velocity_scale = _InfoValue(INFO_SCALE, float, "Level 1's task scale s (<= 1).")
    iterations = _InfoValue(
        INFO_ITERATIONS, int, "Saturate-and-solve rounds of the level that needed most."
    )
    ok = _InfoValue(INFO_FINITE, bool, "False when the solve produced a non-finite value.")

    def relayout(self, constraint_names: list[str]) -> None:
        """The scene's constraints changed: their names (k,), errors zero until the next solve."""
        self.constraint_names = constraint_names
        self.errors = np.zeros(len(constraint_names))

    @property
    def errors(self) -> Array:
        """(k,) error of each constraint, ``constraint_names`` order."""
        fill = self._fill_errors
        if fill is not None:
            self._fill_errors = None
            fill(self._errors)
        return self._errors

    @errors.setter
    def errors(self, value: Array) -> None:
        self._errors = value
        self._fill_errors = None

    @property
    def active_rows(self) -> int:
        """Rows with a non-zero weight (0: nothing to do, q' = 0)."""
        if self._weights is not None:
            self._active_rows = int(np.count_nonzero(self._weights))
            self._weights = None
        return self._active_rows

    @active_rows.setter
    def active_rows(self, value: int) -> None:
        self._active_rows = int(value)
        self._weights = None

    def defer(self, fill_errors: Callable[[Array], None], weights: Array) -> None:
        """The solve's errors and active rows, computed when read.

        Args:
            fill_errors: writes each constraint's error into the (k,) array it is given.
            weights: (m,) the row weights of the solve (read, not copied: valid until the
                next solve).
        """
        self._fill_errors = fill_errors
        self._weights = weights

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

    def __repr__(self) -> str:
        return (
            f"SolveResult(qdot={self.qdot!r}, errors={self.errors!r}, "
            f"constraint_names={self.constraint_names!r}, sigma_min={self.sigma_min!r}, "
            f"damping={self.damping!r}, velocity_scale={self.velocity_scale!r}, ok={self.ok!r}, "
            f"iterations={self.iterations!r}, active_rows={self.active_rows!r})"
        )


__all__ = ["SolveResult"]
