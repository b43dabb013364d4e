"""What a position IK solve gives back (:class:`IkResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass
class IkResult:
    """Outcome of :func:`~itasc_ros.core.ik.solve_ik`.

    Attributes:
        q: (n,) joint positions [rad or m] in ``joint_names`` order, within the limits: the
            solution, or the configuration with the smallest error found.
        success: every constrained error component is within its tolerance.
        errors: (m,) the constrained error components at ``q``: for one pose target, the
            selected rows of (position [m], rotation vector [rad]) in the root frame; for a
            constraint set, each row ``yd - y`` in the constraints' order.
        position_error: norm of the selected position rows [m] (one pose target); for a
            constraint set, norm of the rows checked against ``tolerance`` (positions,
            distances, joint values). Always finite.
        rotation_error: norm of the selected rotation rows [rad]; for a constraint set, of
            the rows checked against ``rotation_tolerance`` (0.0 when there are none).
        iterations: Newton iterations run, over all attempts.
        restarts: random restarts made.
        time: wall time of the solve [s], from after the problem was prepared (compiled
            code loaded): the time the budget counts.
        joint_names: the columns of ``q``.
        message: why it stopped.
    """

    q: Array
    success: bool
    errors: Array
    position_error: float
    rotation_error: float
    iterations: int
    restarts: int
    time: float
    joint_names: list[str] = field(default_factory=list)
    message: str = ""

    @property
    def error_norm(self) -> float:
        """Norm of :attr:`errors`."""
        return float(np.linalg.norm(self.errors))


__all__ = ["IkResult"]
