"""The ROS parameters of ``itasc_sim_robot``: their defaults, meanings, ranges and the URDF.

:data:`PARAMETERS` declares every parameter in order (the node declares them, the command-line
check reads their types and ranges); :func:`load_urdf_file` reads the robot that ``urdf_file``
names (a path or a bundled robot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.parameter import Parameter

from itasc_ros.core import ConfigurationError, KinematicTree
from itasc_ros.tools.resources import bundled_robots, robot_urdf

from .commands import COMMAND_TYPES, DEFAULT_COMMAND_TOPIC


def _descriptor(
    description: str,
    lo: float | None = None,
    hi: float | None = None,
    read_only: bool = True,
    integer: bool = False,
) -> ParameterDescriptor:
    d = ParameterDescriptor(description=description, read_only=read_only)
    if lo is not None and hi is not None:
        if integer:
            d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=0)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=lo, to_value=hi, step=0.0)]
    return d


@dataclass(frozen=True)
class SimParam:
    """One ROS parameter of ``itasc_sim_robot``: its default, meaning and range."""

    name: str
    default: Any  # a value, or a Parameter.Type for an array that defaults to []
    description: str
    lo: float | None = None
    hi: float | None = None
    live: bool = False  # settable while the node runs

    @property
    def kind(self) -> Parameter.Type:
        """The parameter's ROS type."""
        if isinstance(self.default, Parameter.Type):
            return self.default
        return Parameter.Type.from_parameter_value(self.default)

    def descriptor(self) -> ParameterDescriptor:
        """Its ROS descriptor (read-only unless ``live``; with its range)."""
        integer = self.kind == Parameter.Type.INTEGER
        return _descriptor(self.description, self.lo, self.hi, not self.live, integer)


_D = Parameter.Type
#: Every parameter of ``itasc_sim_robot``, in declaration order.
PARAMETERS: tuple[SimParam, ...] = (
    SimParam("robot_description", "", "URDF XML; empty = read urdf_file"),
    SimParam(
        "urdf_file",
        "",
        "URDF used when robot_description is empty: a path (ends in .urdf or has a '/') or a "
        "bundled robot name (panda, ur5)",
    ),
    SimParam("joints", _D.STRING_ARRAY, "simulated joints in command order; [] = every joint"),
    SimParam(
        "initial_positions",
        _D.DOUBLE_ARRAY,
        "initial positions [rad or m] in joints order; [] = home/neutral pose",
    ),
    SimParam("rate", 500.0, "integration and joint_states rate [Hz]", 1.0, 5000.0),
    SimParam(
        "command_type", COMMAND_TYPES[0], "command message type: " + " | ".join(COMMAND_TYPES)
    ),
    SimParam(
        "command_topic",
        DEFAULT_COMMAND_TOPIC,
        "command topic; '' = the usual topic of command_type's controller",
    ),
    SimParam("thread_priority", 0, "SCHED_FIFO priority (1-99); 0 = normal", 0, 99),
    SimParam("cpu_affinity", _D.INTEGER_ARRAY, "CPUs the threads may run on; [] = all"),
    SimParam("latency", 0.0, "delay before a command takes effect [s]", 0.0, 10.0, live=True),
    SimParam("noise", 0.0, "std of noise on published positions [rad]", 0.0, 1.0, live=True),
    SimParam("seed", 0, "seed of the position noise", 0, 2**31 - 1),
    SimParam(
        "publish_states",
        True,
        "publish joint_states; false = the robot moves on with its commands while its state "
        "publisher is silent (a stalled driver)",
        live=True,
    ),
    SimParam(
        "command_timeout",
        0.0,
        "zero the command after this long without one [s]; 0 = hold forever",
        0.0,
        3600.0,
        live=True,
    ),
    SimParam(
        "command_gap",
        0.05,
        "report each gap between commands taking effect longer than this in ~/stats "
        "(command_gaps: the states' stamps [s] at its start and end) [s]; 0 = none",
        0.0,
        3600.0,
        live=True,
    ),
    SimParam(
        "base_motion",
        "none",
        "the base's motion in odom_frame: none | circle | sway (its own) | holonomic | "
        "diff_drive (commanded on base_cmd_topic)",
    ),
    SimParam("base_cmd_topic", "/cmd_vel", "the commanded base's twist (geometry_msgs/Twist)"),
    SimParam("base_radius", 0.25, "circle: its radius [m]", 0.01, 100.0),
    SimParam("base_speed", 0.3, "circle: the base's speed along it [m/s]", 0.0, 10.0),
    SimParam("base_yaw_rate", 0.0, "circle: the base's heading rate [rad/s]", -10.0, 10.0),
    SimParam("sway_amplitude", 0.04, "sway: the trunk's sideways sway [m]", 0.0, 1.0),
    SimParam("sway_frequency", 0.5, "sway: the gait's frequency [Hz]", 0.0, 10.0),
    SimParam(
        "base_height", 0.0, "circle, sway: the base's height in odom_frame [m]", -100.0, 100.0
    ),
    SimParam("odom_frame", "odom", "the world frame of the odometry (header.frame_id)"),
    SimParam("odom_topic", "odom", "the base's odometry topic (nav_msgs/Odometry)"),
    SimParam(
        "physics",
        "ideal",
        "ideal: the joints follow each command exactly | mujoco: a MuJoCo model of the URDF, "
        "velocity servos with actuator_lag, torque limits, gravity compensated, contacts "
        "reported on ~/contacts",
    ),
    SimParam(
        "actuator_lag",
        0.02,
        "mujoco: the velocity servos' time constant [s] (a step of the command is followed "
        "to 63 % in this time)",
        0.001,
        1.0,
    ),
    SimParam(
        "obstacles",
        _D.STRING_ARRAY,
        "mujoco: static obstacles in the root frame, as the collision constraint takes them "
        "('box x y z sx sy sz', 'sphere x y z r', ...): bodies the robot can touch",
    ),
)
#: The values of ``physics``.
PHYSICS_KINDS = ("ideal", "mujoco")
#: Parameters every rclpy node has (accepted on the command line, not checked here).
NODE_BUILTIN_PARAMETERS = ("use_sim_time", "start_type_description_service")


def load_urdf_file(urdf_file: str) -> KinematicTree:
    """The tree of ``urdf_file``: a path (ends in .urdf or has a '/') or a bundled robot.

    Raises:
        ItascError: no URDF given, no such file or robot (naming the bundled robots), or an
            invalid URDF.
    """
    if not urdf_file:
        raise ConfigurationError(
            "no URDF: set the parameter robot_description (XML) or urdf_file (a path or a "
            f"bundled robot: {', '.join(bundled_robots())}), e.g. -p urdf_file:=panda"
        )
    return KinematicTree.from_urdf_file(robot_urdf(urdf_file))


__all__ = ["NODE_BUILTIN_PARAMETERS", "PARAMETERS", "PHYSICS_KINDS", "SimParam", "load_urdf_file"]
