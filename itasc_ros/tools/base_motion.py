"""Simulated base motions: a base driving a circle, a trunk in a gait, a commanded base (ROS-free).

The simulated robot (``itasc_sim_robot``) publishes the base's pose and twist as odometry; the
``mobile_base`` scenario and the tests move their bases with the same classes.

``base_motion: sway`` is a humanoid's trunk in a gait (:class:`SwayBase`: forward at
``base_speed``, swaying ``sway_amplitude`` at ``sway_frequency``, bobbing and rocking).

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
BASE_MOTIONS = ("none", "circle", "sway", "holonomic", "diff_drive")


class CircleBase:
    """A base on a circle (see the module).

    Args:
        radius: the circle's radius [m] (> 0).
        speed: the centre's speed along it [m/s].
        yaw_rate: the heading's rate [rad/s] (0: the heading held).
        height: the base's height [m] in the world.
    """

    def __init__(self, radius: float, speed: float, yaw_rate: float, height: float = 0.0) -> None:
        self.radius = radius
        self.speed = speed
        self.yaw_rate = yaw_rate
        self.height = height

    def at(self, t: float) -> tuple[Array, Array]:
        """The base's pose (4, 4) in the world and its twist (6,) in its own axes at ``t`` [s].

        The twist: the linear velocity of the base's origin [m/s] and the angular velocity
        [rad/s], both in the base's axes (``nav_msgs/Odometry``'s convention).
        """
        w = self.speed / self.radius
        pose = np.eye(4)
        r = self.radius
        pose[:3, 3] = [r * math.sin(w * t), r * (1.0 - math.cos(w * t)), self.height]
        pose[:3, :3] = spatial.so3_exp(np.array([0.0, 0.0, self.yaw_rate * t]))
        v_world = np.array([self.speed * math.cos(w * t), self.speed * math.sin(w * t), 0.0])
        body = np.concatenate([pose[:3, :3].T @ v_world, [0.0, 0.0, self.yaw_rate]])
        return pose, body


class SwayBase:
    """A trunk that walks forward swaying, bobbing and rocking, as a humanoid's in a gait.

    Args:
        speed: the forward speed [m/s] along the world's x.
        amplitude: the sideways sway [m] (the bob is 0.4 of it, the rocking 1.25 rad per m).
        frequency: the gait's frequency [Hz] (the bob and the pitch at twice it).
        height: the trunk's mean height [m].
    """

    def __init__(self, speed: float, amplitude: float, frequency: float, height: float) -> None:
        self.speed, self.amplitude = speed, amplitude
        self.frequency, self.height = frequency, height

    def _pose(self, t: float) -> Array:
        w, a = 2.0 * math.pi * self.frequency, self.amplitude
        pose = np.eye(4)
        pose[:3, 3] = [
            self.speed * t,
            a * math.sin(w * t),
            self.height + 0.4 * a * math.sin(2 * w * t),
        ]
        roll, pitch, yaw = (
            1.25 * a * math.sin(w * t),
            0.75 * a * math.sin(2 * w * t),
            2.0 * a * math.sin(w * t),
        )
        pose[:3, :3] = (
            spatial.so3_exp(np.array([0.0, 0.0, yaw]))
            @ spatial.so3_exp(np.array([0.0, pitch, 0.0]))
            @ spatial.so3_exp(np.array([roll, 0.0, 0.0]))
        )
        return pose

    def at(self, t: float) -> tuple[Array, Array]:
        """The trunk's pose (4, 4) and body twist (6,) at ``t`` [s].

        The twist by central differences over 10 us (exact to ~1e-9).
        """
        h = 1e-5
        a, b, pose = self._pose(t - h), self._pose(t + h), self._pose(t)
        v = (b[:3, 3] - a[:3, 3]) / (2.0 * h)
        w = spatial.so3_log(b[:3, :3] @ a[:3, :3].T) / (2.0 * h)
        rot = pose[:3, :3]
        return pose, np.concatenate([rot.T @ v, rot.T @ w])


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


__all__ = ["BASE_MOTIONS", "CircleBase", "CommandedBase", "SwayBase"]
