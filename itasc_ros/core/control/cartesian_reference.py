"""Cartesian reference: a target approached along a straight line, or jogged, within limits.

A target step (a pose that is not part of a smooth stream) or a jog twist does not go to the
constraint at once: a *reference* pose moves from where the effector is toward the target along
the straight line between their origins, its rotation about the fixed axis between their
orientations (the shortest rotation), each with a trapezoidal speed profile bounded by
``max_cartesian_speed`` / ``max_cartesian_acceleration`` (and the angular pair). The constraint
follows the reference, with the reference's twist fed forward. Without it the effector would
swing along whatever path the joint limits leave. ROS-free.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..kinematics import spatial

Array = NDArray[np.float64]

DRIFT_MAX = 0.01
"""[m] at a step, the effector's own motion across the new line goes on at most this far."""

ARRIVED = 1e-6
"""[m] and [rad]: closer than this the reference is at its target."""


def _speed_toward(
    speed: float, dist: float, vmax: float, amax: float, dt: float, goal_speed: float = 0.0
) -> float:
    """The next speed [m/s or rad/s] along a path with ``dist`` left.

    Up to ``vmax``, down in time to arrive at the target's own speed ``goal_speed``, changing by
    at most ``amax dt``.
    """
    # the fastest speed that still stops in time: v dt + v^2 / (2 a) <= dist
    stop = amax * (-dt + math.sqrt(dt * dt + 2.0 * dist / amax)) if dist > 0.0 else 0.0
    want = min(vmax, goal_speed + stop)
    if want > speed:
        return min(want, speed + amax * dt)
    return max(want, speed - amax * dt)


class CartesianReference:
    """The reference pose of one target constraint (root frame) and its twist.

    Attributes:
        active: the constraint follows this reference (a step being approached, or jogging);
            set by its methods only (kept in ``flag`` as well).
        pose: (4, 4) the reference pose.
        speed: [m/s] along the line; angular_speed: [rad/s] about the axis (negative while a
            motion away from the target is braked).
        twist: (6,) the reference's twist (root frame), fed forward.
        accel: (6,) the twist's rate of change over the next step [m/s^2, rad/s^2] (set by
            each :meth:`toward` and :meth:`jog`): the twist it will have when a command acts.
        jogging: the reference is driven by a jog twist rather than toward a pose.

    Args:
        flag: (1,) where :attr:`active` is kept as well, 1.0 or 0.0 (a cell of its owner's
            packed state, for a compiled call that reads it); None: an array of its own.
        pose_store: (16,) where :attr:`pose` is kept, row-major (a view of it: a part of its
            owner's arrays, which a compiled call reads); None: an array of its own.
    """

    def __init__(self, flag: Array | None = None, pose_store: Array | None = None) -> None:
        self._flag = np.zeros(1) if flag is None else flag
        self.active = False
        self._flag[0] = 0.0
        self.jogging = False
        self.pose = (np.zeros(16) if pose_store is None else pose_store).reshape(4, 4)
        self.pose[:] = np.eye(4)
        self.speed = 0.0
        self.angular_speed = 0.0
        self.twist = np.zeros(6)
        self.accel = np.zeros(6)

    def start(self, pose: Array, jogging: bool = False, twist: Array | None = None) -> None:
        """Start from ``pose`` (4, 4) and ``twist`` (6,), the effector's, unless already moving.

        Without ``twist``: at rest. A step that comes while the effector moves starts from that
        motion: the part along the new line is kept (braked first if it leads away from the
        target), the part across it is braked within the acceleration limit, so the reference
        asks the arm for no change its limits cannot give.
        """
        if not self.active:
            self.pose[:] = pose
            self.speed = self.angular_speed = 0.0
            self.twist[:] = 0.0
            self.accel[:] = 0.0
            if twist is not None and np.all(np.isfinite(twist)):
                self.twist[:3] = twist[:3]
        self.active, self.jogging = True, jogging
        self._flag[0] = 1.0

    def toward(
        self, goal: Array, goal_twist: Array, dt: float, limits: tuple[float, float, float, float]
    ) -> bool:
        """Move toward ``goal`` (4, 4) for ``dt`` [s]; True once there (then inactive).

        Args:
            goal: the target pose.
            goal_twist: (6,) the target's own twist (a moving target is caught up with).
            dt: the time step [s].
            limits: (speed [m/s], acceleration [m/s^2], angular speed [rad/s], angular
                acceleration [rad/s^2]).
        """
        vmax, amax, wmax, alpha = limits
        dp = goal[:3, 3] - self.pose[:3, 3]
        dist = float(np.linalg.norm(dp))
        rot = spatial.so3_log(goal[:3, :3] @ self.pose[:3, :3].T)
        angle = float(np.linalg.norm(rot))
        u = dp / dist if dist > ARRIVED else np.zeros(3)
        axis = rot / angle if angle > ARRIVED else np.zeros(3)
        # Toward a fixed goal the motion across the line (the effector's own at the start of a
        # step) is braked at amax, not dropped: no jump of the reference's twist. Chasing a
        # moving goal, the line turns every tick: only the speed along it is kept.
        along = float(self.twist[:3] @ u) if dist > ARRIVED else 0.0
        drift = self.twist[:3] - along * u
        size = float(np.linalg.norm(drift))
        if goal_twist[:3].any() or size <= 0.0:
            drift[:] = 0.0
        else:  # braked at amax, or harder: it stops within DRIFT_MAX of where it started
            brake = max(amax, size * size / (2.0 * DRIFT_MAX))
            drift *= max(0.0, size - brake * dt) / size
        # A motion away from the goal (the effector's own at the start of a step) is braked at
        # amax too: a reference that dropped it would ask the arm for a jump it cannot make,
        # fall ahead of the arm, and the feedback that catches up overshoots the goal.
        self.speed = along
        self.angular_speed = float(self.twist[3:] @ axis) if angle > ARRIVED else 0.0
        chase = max(0.0, float(goal_twist[:3] @ u))  # the target moving away along the line
        spin = max(0.0, float(goal_twist[3:] @ axis))
        self.speed = _speed_toward(self.speed, dist, vmax, amax, dt, chase)
        self.angular_speed = _speed_toward(self.angular_speed, angle, wmax, alpha, dt, spin)
        step, turn = min(self.speed * dt, dist), min(self.angular_speed * dt, angle)
        self.pose[:3, 3] += u * step + drift * dt
        self.pose[:3, :3] = spatial.so3_exp(axis * turn) @ self.pose[:3, :3]
        self.twist[:3], self.twist[3:] = u * self.speed + drift, axis * self.angular_speed
        if dt > 0.0:  # the profile's next step: braking ahead shows before it starts
            ahead = _speed_toward(self.speed, dist - step, vmax, amax, dt, chase)
            turning = _speed_toward(self.angular_speed, angle - turn, wmax, alpha, dt, spin)
            self.accel[:3] = u * ((ahead - self.speed) / dt)
            self.accel[3:] = axis * ((turning - self.angular_speed) / dt)
        if dist - step <= ARRIVED and angle - turn <= ARRIVED and not drift.any():
            self.pose[:] = goal
            self.stop()
            return True
        return False

    def jog(self, twist: Array, dt: float, limits: tuple[float, float, float, float]) -> bool:
        """Move with ``twist`` (6,) (root frame; zero: stop) for ``dt`` [s].

        The twist's change is kept within the acceleration limits and its size within the speed
        limits. Returns True once at rest with a zero twist (then inactive).
        """
        vmax, amax, wmax, alpha = limits
        if dt <= 0.0:
            return False
        want = twist.astype(float)
        for sl, top in ((slice(0, 3), vmax), (slice(3, 6), wmax)):
            n = float(np.linalg.norm(want[sl]))
            if n > top:
                want[sl] *= top / n
        for sl, acc in ((slice(0, 3), amax), (slice(3, 6), alpha)):
            change = want[sl] - self.twist[sl]
            n = float(np.linalg.norm(change))
            if n > acc * dt:
                change *= acc * dt / n
            self.twist[sl] += change
            self.accel[sl] = change / dt
        self.pose[:3, 3] += self.twist[:3] * dt
        self.pose[:3, :3] = spatial.so3_exp(self.twist[3:] * dt) @ self.pose[:3, :3]
        self.speed = float(np.linalg.norm(self.twist[:3]))
        self.angular_speed = float(np.linalg.norm(self.twist[3:]))
        if not want.any() and not self.twist.any():
            self.stop()
            return True
        return False

    def end_jog(self) -> None:
        """A pose target ends a jog: the reference approaches it from where it is."""
        self.jogging = False

    def restore(self, active: bool, jogging: bool, pose: Array, twist: Array) -> None:
        """Set the reference as a SNAPSHOT holds it: its flags, pose (4, 4) and twist (6,)."""
        self.active, self.jogging = active, jogging
        self._flag[0] = 1.0 if active else 0.0
        self.pose[:], self.twist[:] = pose, twist
        self.speed = float(np.linalg.norm(self.twist[:3]))
        self.angular_speed = float(np.linalg.norm(self.twist[3:]))

    def stop(self) -> None:
        """Stop following the reference (the constraint takes the target itself)."""
        self.active = self.jogging = False
        self._flag[0] = 0.0
        self.speed = self.angular_speed = 0.0
        self.twist[:] = 0.0
        self.accel[:] = 0.0


__all__ = ["ARRIVED", "CartesianReference"]
