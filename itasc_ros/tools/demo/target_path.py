"""The target the demo publishes: a pose for every phase as a function of time. ROS-free."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.paths import path_point
from itasc_ros.tools.demo.phases import STEP_OFFSETS, Phase, step_hold

Array = NDArray[np.float64]

RADIUS = 0.1  # [m] circle radius (as itasc-bench tracking)
SPEED = 0.25  # [m/s] path speed
PLANE = "yz"
UNREACHABLE_DISTANCE = 2.0  # [m] from the home tip


class TargetPath:
    """The target of every phase as a function of the time since the phase started (no ROS).

    Args:
        center: (3,) home tip position [m] (centre of the paths, origin of the steps).
        quat: (4,) home tip orientation (x, y, z, w), held in every phase.
        radius: radius of the circle and size of the figure eight [m].
    """

    def __init__(self, center: Array, quat: Array, radius: float = RADIUS) -> None:
        self.center = np.asarray(center, dtype=float)
        self.quat = np.asarray(quat, dtype=float)
        self.radius = float(radius)
        horizontal = np.array([self.center[0], self.center[1], 0.0])
        norm = float(np.linalg.norm(horizontal))
        direction = horizontal / norm if norm > 1e-6 else np.array([1.0, 0.0, 0.0])
        self.far = self.center + UNREACHABLE_DISTANCE * direction  # (3,)

    def step_index(self, phase: Phase, tau: float) -> int:
        """Index of the step target in force at ``tau`` [s] into a 'steps' phase."""
        return min(int(tau / step_hold(phase)), len(STEP_OFFSETS) - 1)

    def step_target(self, index: int) -> Array:
        """(3,) position [m] of step target ``index``."""
        return self.center + np.array(STEP_OFFSETS[index])

    def sample(self, phase: Phase, tau: float) -> tuple[Array, Array]:
        """Target position (3,) [m] and twist (6,) [m/s, rad/s] at ``tau`` [s] into ``phase``."""
        twist = np.zeros(6)
        if phase.tracking:
            p, v = path_point(tau, self.center, self.radius, SPEED, phase.kind, PLANE)
            twist[:3] = v
            return p, twist
        if phase.kind == "steps":
            return self.step_target(self.step_index(phase, tau)), twist
        if phase.kind == "hold":
            return self.center.copy(), twist
        return self.far.copy(), twist


__all__ = ["PLANE", "RADIUS", "SPEED", "UNREACHABLE_DISTANCE", "TargetPath"]
