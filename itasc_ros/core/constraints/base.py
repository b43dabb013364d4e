"""The constraint interface: what the scene needs from every iTaSC constraint."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, ConstraintError
from ..tree import KinematicTree

Array = NDArray[np.float64]


def check_positive(name: str, value: float, allow_zero: bool = True) -> float:
    """A finite, non-negative (or positive) float, else ConstraintError."""
    v = float(value)
    if not math.isfinite(v) or v < 0.0 or (v == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConstraintError(f"{name} must be a finite number {bound}, got {value!r}")
    return v


class Constraint(ABC):
    """One iTaSC constraint: a virtual armature from an effector to a target.

    A constraint owns its feature coordinates and writes, for the current configuration,
    its rows of the stacked system ``A q' = y' + B Xu'``:
    ``A = Cq - Cf Jf^-1 Jq`` (m, n), ``B = Cf Jf^-1 Ju`` (m, 6), the output ``y`` (m,) and
    the desired output rate ``y'_d = yd' + K (yd - y)``.

    Attributes:
        name: unique name in a scene.
        weight: task weight Wy (>= 0) of every row.
        gain: feedback gain K [1/s].
        feedforward: whether the target's twist (Xu') is fed forward.
        enabled: a disabled constraint contributes no rows.
    """

    def __init__(
        self, name: str, weight: float = 1.0, gain: float = 20.0, feedforward: bool = True
    ) -> None:
        if not name:
            raise ConstraintError("a constraint needs a non-empty name")
        self.name = name
        self.weight = check_positive(f"{name}: weight", weight)
        self.gain = check_positive(f"{name}: gain", gain)
        self.feedforward = bool(feedforward)
        self.enabled = True
        self._target_twist = np.zeros(6)  # (6,) root frame: v [m/s], w [rad/s]
        self._structure_version = 0
        self._tree: KinematicTree | None = None

    # -- configuration -----------------------------------------------------------------
    def set_weight(self, weight: float) -> None:
        """Set the task weight Wy (>= 0)."""
        self.weight = check_positive(f"{self.name}: weight", weight)

    def set_gain(self, gain: float) -> None:
        """Set the feedback gain K [1/s] (>= 0)."""
        self.gain = check_positive(f"{self.name}: gain", gain)

    def set_target_twist(self, twist: ArrayLike | None) -> None:
        """Target twist Xu' (6,) in the root frame: linear [m/s] of the target origin, angular.

        None sets it to zero.
        """
        if twist is None:
            self._target_twist[:] = 0.0
            return
        t = np.asarray(twist, dtype=float).reshape(-1)
        if t.shape != (6,) or not np.all(np.isfinite(t)):
            raise ConfigurationError(f"{self.name}: target twist must be 6 finite values, got {t}")
        self._target_twist[:] = t

    @property
    def target_twist(self) -> Array:
        """(6,) the target twist in the root frame (a copy)."""
        return self._target_twist.copy()

    @property
    def structure_version(self) -> int:
        """Changes whenever the number of rows or the bound links change."""
        return self._structure_version

    def _structure_changed(self) -> None:
        self._structure_version += 1

    # -- scene interface ---------------------------------------------------------------
    @property
    @abstractmethod
    def n_rows(self) -> int:
        """Number of output rows m."""

    @abstractmethod
    def bind(self, tree: KinematicTree) -> None:
        """Resolve names against the tree and allocate work arrays.

        Raises:
            UnknownLinkError, UnknownJointError: naming the valid choices.
        """

    @abstractmethod
    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows after ``tree.compute(q)``; no allocation.

        Args:
            tree: the bound tree, with poses computed for the current q.
            q: (n,) the current joint positions.
            a: (m, n) rows of A.
            b: (m, 6) rows of B.
            y: (m,) outputs.
            ydot: (m,) desired output rates ``yd' + K (yd - y)``.
            wy: (m,) row weights (0 switches a row off, e.g. inside a distance band).
        """

    @abstractmethod
    def error(self, y: Array) -> float:
        """A scalar error of this constraint from its rows of ``y`` (norm of yd - y)."""


__all__ = ["Constraint", "check_positive"]
