"""The command interfaces: a command message -> the joint velocities it asks for.

One function per message type ``itasc_sim_robot`` accepts, as the ros2_control controller it
stands in for reads it:

* ``std_msgs/Float64MultiArray`` (``JointGroupVelocityController``): ``data`` in joints order;
* ``trajectory_msgs/JointTrajectory`` (``JointTrajectoryController``, streamed): the first
  point's ``velocities`` by joint name, else ``(positions - q) / time_from_start``;
* ``sensor_msgs/JointState``: ``velocity`` by joint name.

A message the controller would drop raises :class:`~.joints.CommandRejectedError`. The command
types, and the topic each controller listens on, are here too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from .joints import CommandRejectedError, Joints

#: Command message types, as the node's ``command_out_type`` names them.
COMMAND_TYPES: tuple[str, ...] = (
    "std_msgs/Float64MultiArray",
    "trajectory_msgs/JointTrajectory",
    "sensor_msgs/JointState",
)
#: Default command topic (the node's ``command_out_topic`` default).
DEFAULT_COMMAND_TOPIC = "/forward_velocity_controller/commands"
#: Topic used when ``command_topic`` is set to '' (per command type).
TYPE_DEFAULT_TOPICS: dict[str, str] = {
    "std_msgs/Float64MultiArray": DEFAULT_COMMAND_TOPIC,
    "trajectory_msgs/JointTrajectory": "/joint_trajectory_controller/joint_trajectory",
    "sensor_msgs/JointState": "/joint_commands",
}


def _by_name(
    sim: Joints, names: Sequence[str], values: Sequence[float] | np.ndarray, what: str
) -> np.ndarray:
    """(n,) velocities of the named joints, zero for the others."""
    if len(names) != len(values):
        raise CommandRejectedError(f"{what} has {len(values)} values for {len(names)} joint names")
    qdot = np.zeros(sim.n)
    seen: set[str] = set()
    for name, value in zip(names, values, strict=True):
        i = sim.index.get(name)
        if i is None:
            raise CommandRejectedError(
                f"{what} names joint {name!r}; the simulated joints are {sim.names}"
            )
        if name in seen:
            raise CommandRejectedError(f"{what} names joint {name!r} twice")
        seen.add(name)
        qdot[i] = value
    return sim.validate(qdot)


def velocity_from_multi_array(msg: Float64MultiArray, sim: Joints) -> np.ndarray:
    """(n,) velocities [rad/s] of a ``Float64MultiArray`` (``data`` in joints order).

    Raises:
        CommandRejectedError: wrong length or non-finite values.
    """
    return sim.validate(np.asarray(msg.data, dtype=float))


def velocity_from_joint_state(msg: JointState, sim: Joints) -> np.ndarray:
    """(n,) velocities [rad/s] of a ``JointState`` command (``velocity`` by ``name``).

    Raises:
        CommandRejectedError: no velocities, unknown or repeated names, non-finite values.
    """
    if len(msg.velocity) == 0:
        raise CommandRejectedError("JointState command has no velocity values")
    return _by_name(sim, list(msg.name), np.asarray(msg.velocity, dtype=float), "JointState")


def velocity_from_trajectory(msg: JointTrajectory, sim: Joints, q: np.ndarray) -> np.ndarray:
    """(n,) velocities [rad/s] of the first point of a streamed ``JointTrajectory``.

    The point's ``velocities`` when present, else ``(positions - q) / time_from_start``.

    Args:
        msg: the trajectory (one point per message when streaming).
        sim: the simulated joints (names, limits).
        q: (n,) current positions [rad or m] in ``sim.names`` order.

    Raises:
        CommandRejectedError: no point, unknown names, neither velocities nor positions with a
            positive time_from_start, or non-finite values.
    """
    if len(msg.points) == 0:
        raise CommandRejectedError("JointTrajectory command has no points")
    point = msg.points[0]
    names = list(msg.joint_names)
    if len(point.velocities) > 0:
        return _by_name(sim, names, np.asarray(point.velocities, dtype=float), "JointTrajectory")
    if len(point.positions) == 0:
        raise CommandRejectedError("JointTrajectory point has neither velocities nor positions")
    t = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec  # [s]
    if t <= 0.0:
        raise CommandRejectedError(
            "JointTrajectory point has positions only and time_from_start <= 0 s"
        )
    target = _by_name(sim, names, np.asarray(point.positions, dtype=float), "JointTrajectory")
    qdot = np.zeros(sim.n)
    for name in names:
        i = sim.index[name]
        qdot[i] = (target[i] - q[i]) / t
    return qdot


__all__ = [
    "COMMAND_TYPES",
    "DEFAULT_COMMAND_TOPIC",
    "TYPE_DEFAULT_TOPICS",
    "velocity_from_joint_state",
    "velocity_from_multi_array",
    "velocity_from_trajectory",
]
