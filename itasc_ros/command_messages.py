"""The joint velocities a command message asks for, from rclpy messages and bag messages alike.

The node's three command types (``std_msgs/msg/Float64MultiArray``,
``trajectory_msgs/msg/JointTrajectory``, ``sensor_msgs/msg/JointState``) are told apart by
their type name, so that one reading serves the node's messages (rclpy classes) and a bag's
(the ``rosbags`` typestore's, which carry ``__msgtype__``). ROS-free: nothing here imports
rclpy or a message package, so the offline replay stays free of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

FLOAT64_MULTI_ARRAY_TYPE = "std_msgs/msg/Float64MultiArray"
JOINT_TRAJECTORY_TYPE = "trajectory_msgs/msg/JointTrajectory"
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"


def message_type(msg: Any) -> str:
    """A message's full type name (``std_msgs/msg/String``), of an rclpy or a bag message."""
    kind = getattr(msg, "__msgtype__", None)
    if isinstance(kind, str):
        return kind
    cls = type(msg)
    package = cls.__module__.split(".", 1)[0]
    return f"{package}/msg/{cls.__name__}"


def command_velocities(msg: Any, joints: Sequence[str]) -> Array:
    """Joint velocities (n,) [rad/s or m/s] in ``joints`` order from a command message.

    Float64MultiArray is taken in order (it has no names). JointTrajectory uses the first
    point's velocities; JointState its velocities, both mapped by name.

    Raises:
        ValueError: not a command message, a wrong length, missing joints or an empty
            trajectory.
    """
    kind = message_type(msg)
    n = len(joints)
    if kind == FLOAT64_MULTI_ARRAY_TYPE:
        v = np.asarray(msg.data, dtype=float)
        if v.shape != (n,):
            raise ValueError(f"command has {v.size} values for {n} joints")
        return v
    if kind == JOINT_TRAJECTORY_TYPE:
        if len(msg.points) == 0:
            raise ValueError("trajectory has no points")
        names, vel = list(msg.joint_names), np.asarray(msg.points[0].velocities, dtype=float)
    elif kind == JOINT_STATE_TYPE:
        names, vel = list(msg.name), np.asarray(msg.velocity, dtype=float)
    else:
        raise ValueError(f"not a command message: {kind}")
    if vel.shape[0] != len(names):
        raise ValueError(f"command has {len(names)} names and {vel.shape[0]} velocities")
    missing = [j for j in joints if j not in names]
    if missing:
        raise ValueError(f"command lacks joints {missing}")
    return vel[[names.index(j) for j in joints]]


__all__ = [
    "FLOAT64_MULTI_ARRAY_TYPE",
    "JOINT_STATE_TYPE",
    "JOINT_TRAJECTORY_TYPE",
    "command_velocities",
    "message_type",
]
