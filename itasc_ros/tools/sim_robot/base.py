"""The simulated robot's base: where it is in the world frame, published as odometry.

``base_motion: holonomic`` or ``diff_drive`` is a base the node commands: it takes
``geometry_msgs/Twist`` commands on ``base_cmd_topic`` (``cmd_vel``: ``linear.x``, ``linear.y``
and ``angular.z`` in the base's axes; a differential drive ignores ``linear.y``), delays them by
``latency`` as the joints' and integrates them exactly at each tick (:class:`CommandedBase`).
``base_motion: circle`` drives the base (its root link) around a circle in ``odom_frame``, the
base not controlled by anyone (a mobile base following its own plan): its centre moves at
``base_speed`` on a circle of radius ``base_radius`` starting at the origin, heading turning at
``base_yaw_rate``. Each tick the node publishes the base's pose and twist as
``nav_msgs/Odometry`` (the twist in the base's axes, as the message defines it), stamped with
the same instant as the joint states.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.kinematics import spatial

Array = NDArray[np.float64]

#: The valid ``base_motion`` values.
BASE_MOTIONS = ("none", "circle", "holonomic", "diff_drive")


class CircleBase:
    """A base on a circle (see the module).

    Args:
        radius: the circle's radius [m] (> 0).
        speed: the centre's speed along it [m/s].
        yaw_rate: the heading's rate [rad/s] (0: the heading held).
    """

    def __init__(self, radius: float, speed: float, yaw_rate: float) -> None:
        self.radius = radius
        self.speed = speed
        self.yaw_rate = yaw_rate

    def at(self, t: float) -> tuple[Array, Array]:
        """The base's pose (4, 4) in the world and its twist (6,) in its own axes at ``t`` [s].

        The twist: the linear velocity of the base's origin [m/s] and the angular velocity
        [rad/s], both in the base's axes (``nav_msgs/Odometry``'s convention).
        """
        w = self.speed / self.radius
        pose = np.eye(4)
        pose[:3, 3] = [self.radius * math.sin(w * t), self.radius * (1.0 - math.cos(w * t)), 0.0]
        pose[:3, :3] = spatial.so3_exp(np.array([0.0, 0.0, self.yaw_rate * t]))
        v_world = np.array([self.speed * math.cos(w * t), self.speed * math.sin(w * t), 0.0])
        body = np.concatenate([pose[:3, :3].T @ v_world, [0.0, 0.0, self.yaw_rate]])
        return pose, body


class CommandedBase:
    """A base moved by velocity commands, integrated exactly (see the module).

    Args:
        holonomic: it can move sideways (else ``linear.y`` is ignored).
    """

    def __init__(self, holonomic: bool) -> None:
        self.holonomic = holonomic
        self.pose = np.eye(4)
        self.body = np.zeros(6)  # the twist in force, in the base's axes

    def apply(self, vx: float, vy: float, wz: float) -> None:
        """A new command (non-finite values: a stop)."""
        if not all(math.isfinite(v) for v in (vx, vy, wz)):
            vx = vy = wz = 0.0
        self.body[:] = 0.0
        self.body[0], self.body[5] = vx, wz
        if self.holonomic:
            self.body[1] = vy

    def step(self, dt: float) -> None:
        """Move for ``dt`` [s] at the twist in force (constant in the base's axes)."""
        step = np.eye(4)
        w = self.body[5] * dt
        if abs(w) > 1e-12:  # an arc: the exact motion of a constant body twist in the plane
            vx, vy = self.body[0] / self.body[5], self.body[1] / self.body[5]
            s, c = math.sin(w), math.cos(w)
            step[:2, 3] = [vx * s - vy * (1.0 - c), vx * (1.0 - c) + vy * s]
            step[:2, :2] = [[c, -s], [s, c]]
        else:
            step[:2, 3] = self.body[:2] * dt
        self.pose = self.pose @ step

    def at(self, t: float) -> tuple[Array, Array]:
        """The base's pose (4, 4) and body twist (6,) now (``t``: unused, as the circle's)."""
        return self.pose.copy(), self.body.copy()


__all__ = ["BASE_MOTIONS", "CircleBase", "CommandedBase"]
