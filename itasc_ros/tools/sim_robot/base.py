"""The simulated robot's base: where it is in the world frame, published as odometry.

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
BASE_MOTIONS = ("none", "circle")


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


__all__ = ["BASE_MOTIONS", "CircleBase"]
