"""The position IK's tuning (:class:`IkOptions`) and its ``prefer`` choices."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import SolverError
from . import _ik_kernels as K

Array = NDArray[np.float64]

PREFER = ("speed", "distance")
"""``prefer`` choices: the first solution found, or the nearest to the seed in the budget."""


@dataclass
class IkOptions:
    """Tuning of the Newton loop (the defaults are the measured choice, see doc/benchmarks.md).

    Attributes:
        lambda_min: damping added at every step (keeps singular steps bounded).
        lambda_scale: damping per unit of half the squared error norm.
        max_step: largest change of one joint in one step [rad or m].
        stall_ratio: the error norm must fall below this fraction of its value
            ``stall_window`` iterations earlier, else the attempt restarts.
        stall_window: iterations of the stall test.
        restart_iterations: iterations of one attempt at most.
        resolve_at_limits: when a step pushes joints past a limit, stop them there and solve
            the rest of the error again with the other joints in the same iteration.
    """

    lambda_min: float = 1e-6
    lambda_scale: float = 0.01
    max_step: float = 1.0
    stall_ratio: float = 0.5
    stall_window: int = 5
    restart_iterations: int = 60
    resolve_at_limits: bool = True

    def to_array(self) -> Array:
        """(P_SIZE,) the kernel's parameter array."""
        p = np.zeros(K.P_SIZE)
        p[K.P_LAMBDA_MIN] = self.lambda_min
        p[K.P_LAMBDA_SCALE] = self.lambda_scale
        p[K.P_MAX_STEP] = self.max_step
        p[K.P_STALL_RATIO] = self.stall_ratio
        p[K.P_STALL_WINDOW] = self.stall_window
        p[K.P_RESTART_ITERS] = self.restart_iterations
        p[K.P_ACTIVE_SET] = 1.0 if self.resolve_at_limits else 0.0
        return p

    def check(self) -> None:
        """Raise SolverError naming a value out of range."""
        for name in ("lambda_min", "lambda_scale", "max_step", "stall_ratio"):
            v = getattr(self, name)
            if not (isinstance(v, float | int) and math.isfinite(v) and v >= 0.0):
                raise SolverError(f"IK option {name} must be a finite number >= 0, got {v!r}")
        if self.max_step <= 0.0:
            raise SolverError(f"IK option max_step must be > 0, got {self.max_step!r}")
        for name in ("stall_window", "restart_iterations"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise SolverError(f"IK option {name} must be an integer >= 1, got {v!r}")


__all__ = ["PREFER", "IkOptions"]
