"""The node's parameters, declared once: name, kind, default, range or choices, live, unit, text.

Every parameter of ``itasc_node`` that is not a constraint setting is one :class:`Setting`
in :data:`SETTINGS` (a constraint type declares its own settings as
:attr:`~itasc_ros.core.constraints.Constraint.FIELDS`). Everything else is derived from here:

- :class:`~itasc_ros.core.control.config.ControllerConfig`'s defaults, ranges and checks (the
  settings of scope :data:`CONTROLLER`) and which of them change live (:data:`LIVE_KEYS`);
- the node's ROS declarations, descriptors (ranges, read-only, choices) and the checks of the
  values it is given at start-up and live (``itasc_ros.ros.parameters``);
- the params-file reader of the replay, the demo and the benchmarks (``itasc_ros.params``);
- the parameter reference, doc/parameters.md (``itasc_ros.ros.parameter_docs``, checked by a test).

To add a parameter: add a :class:`Setting` here; a controller setting also gets its
attribute on ``ControllerConfig`` (a test checks that the two agree) and its use in the code.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..constraints.schema import Field
from ..errors import ConfigError
from ..solve.solvers import SOLVERS

CONTROLLER = "controller"
"""Scope of a setting of :class:`~itasc_ros.core.control.config.ControllerConfig`."""
NODE = "node"
"""Scope of a setting of the node only (topics, message types, threads, RViz)."""

TRIGGER_TIMER = "timer"
"""``control_trigger``: a wall-clock timer at ``control_rate``."""
TRIGGER_JOINT_STATES = "joint_states"
"""``control_trigger``: every accepted joint state (at most ``control_rate``)."""
TRIGGERS = (TRIGGER_TIMER, TRIGGER_JOINT_STATES)
"""The valid ``control_trigger`` values."""

COMMAND_OUT_TYPES = (
    "std_msgs/Float64MultiArray",
    "trajectory_msgs/JointTrajectory",
    "sensor_msgs/JointState",
)
"""The valid ``command_out_type`` values (the node has a message class for each)."""


@dataclass(frozen=True)
class Setting(Field):
    """One parameter of the node: a :class:`Field` with its valid choices, unit and scope.

    Attributes:
        options: the only valid values of a string setting (empty: any string).
        unit: the unit of a number, e.g. ``Hz``, ``m/s``, ``s`` (empty: none).
        scope: :data:`CONTROLLER` or :data:`NODE`.
    """

    options: tuple[str, ...] = ()
    unit: str = ""
    scope: str = CONTROLLER

    @property
    def valid(self) -> str:
        """The valid values in words: the choices, or the range (empty when any value is)."""
        if self.options:
            return "one of: " + ", ".join(self.options)
        return self.choices

    def check(self, owner: str, value: Any) -> Any:
        """``value`` checked against the kind, the range and the options, normalised.

        Raises:
            ConfigError: naming the setting, what it must be (the closest choice for a typo)
                and what it got.
        """
        if self.kind == "integer_array":
            if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
                raise ConfigError(f"{owner}{self.name} must be a list of integers, got {value!r}")
            return [self._integer(f"{owner}{self.name}", v) for v in value]
        out = super().check(owner, value)
        if self.options and out not in self.options:
            what = self.name.replace("_", " ")
            near = difflib.get_close_matches(str(out), self.options, n=1)
            hint = f" did you mean {near[0]!r}?" if near else ""
            raise ConfigError(
                f"unknown {what} {out!r};{hint} {what}s are: " + ", ".join(self.options)
            )
        return out


def _s(name: str, kind: str, default: Any, text: str, **kw: Any) -> Setting:
    return Setting(name, kind, default, text, **kw)


SETTINGS: tuple[Setting, ...] = (
    _s(
        "robot_description",
        "string",
        "",
        "URDF XML; empty: the robot_description topic (transient_local), else urdf_file. "
        "A new value rebuilds the model.",
        live=True,
        scope=NODE,
    ),
    _s(
        "urdf_file",
        "string",
        "",
        "Path of a URDF file, used when neither the robot_description parameter nor the topic "
        "gives one. A file that cannot be opened at start-up ends the node (exit status 2).",
        live=True,
        scope=NODE,
    ),
    _s(
        "joints",
        "string_array",
        [],
        "Commanded joints, the order of every command; empty: all movable joints of the URDF. "
        "Joints of the URDF left out are held at their measured positions.",
    ),
    _s(
        "control_rate",
        "double",
        250.0,
        "Control loop rate: the wall-clock timer's rate, or with control_trigger joint_states "
        "the highest rate of the ticks. The solve uses the period 1 / control_rate.",
        lo=1.0,
        hi=2000.0,
        live=True,
        unit="Hz",
    ),
    _s(
        "control_trigger",
        "string",
        TRIGGER_TIMER,
        "What starts a control tick: 'timer' (a grid of periods at control_rate) or "
        "'joint_states' (each joint state, at most control_rate; lowest latency, the robot's "
        "state rate sets the loop; a watchdog still stops the robot on stale input).",
        options=TRIGGERS,
        scope=NODE,
    ),
    _s(
        "command_out_type",
        "string",
        COMMAND_OUT_TYPES[0],
        "Command message type.",
        options=COMMAND_OUT_TYPES,
        scope=NODE,
    ),
    _s(
        "command_out_topic",
        "string",
        "/forward_velocity_controller/commands",
        "Topic of the commands (reliable).",
        scope=NODE,
    ),
    _s(
        "joint_topic", "string", "joint_states", "Joint state topic (sensor-data QoS).", scope=NODE
    ),
    _s(
        "robots",
        "string_array",
        [],
        "Several robots in one solve: their names. Each robot's URDF "
        "(robots.<name>.description_topic, else robots.<name>.urdf_file), "
        "joint states (robots.<name>.joint_topic), command topic "
        "(robots.<name>.command_out_topic) and base pose in the world "
        "(robots.<name>.base_pose); its links and joints are <name>_<link> in joints and the "
        "constraints. Empty: one robot (robot_description, urdf_file, joint_topic, "
        "command_out_topic). A robot whose joint states go stale stops, with every robot a "
        "constraint links to it; the others go on.",
    ),
    _s(
        "input_timeout",
        "double",
        0.1,
        "Joint states older than this stop the robot (zeros once).",
        lo=0.001,
        hi=60.0,
        live=True,
        unit="s",
    ),
    _s(
        "solver",
        "string",
        "dls",
        "Pseudo-inverse: damped least squares or selectively damped.",
        options=SOLVERS,
        live=True,
    ),
    _s(
        "damping_max",
        "double",
        0.1,
        "Largest damping lambda, at a singularity.",
        lo=0.0,
        hi=10.0,
        live=True,
    ),
    _s(
        "damping_epsilon",
        "double",
        0.06,
        "Smallest singular value below which damping starts (> 0 when damping_max > 0).",
        lo=0.0,
        hi=10.0,
        live=True,
    ),
    _s(
        "velocity_scale",
        "double",
        1.0,
        "Fraction of the URDF velocity limits.",
        lo=0.001,
        hi=1.0,
        live=True,
    ),
    _s(
        "joint_limit_margin",
        "double",
        0.0,
        "Distance kept from position limits.",
        lo=0.0,
        hi=1.0,
        live=True,
        unit="rad or m",
    ),
    _s(
        "max_velocity",
        "double",
        10.0,
        "Velocity cap of joints without a URDF limit.",
        lo=0.001,
        hi=100.0,
        live=True,
        unit="rad/s or m/s",
    ),
    _s(
        "twist_filter_time_constant",
        "double",
        0.05,
        "Filter of the target twist estimated from successive poses (0: unfiltered).",
        lo=0.0,
        hi=10.0,
        live=True,
        unit="s",
    ),
    _s(
        "world_frame",
        "string",
        "",
        "The frame the base moves in (e.g. odom): its pose and twist come from odometry, "
        "targets may be given in it and are then held fixed in it while the base moves. "
        "Empty: a fixed base (no odometry).",
    ),
    _s(
        "feed_base_twist",
        "bool",
        True,
        "Feed the base's twist (odometry) forward into world-frame targets, as a target's "
        "own twist; false: the feedback alone follows the base's motion.",
        live=True,
    ),
    _s(
        "base_kind",
        "string",
        "none",
        "A mobile base the node commands with the arm (cmd_vel): holonomic (x, y, yaw) or "
        "diff_drive (x, yaw), as virtual joints base_x, base_y, base_yaw of the same solve; "
        "none: the base is not commanded. Needs world_frame and odometry.",
        options=("none", "holonomic", "diff_drive"),
    ),
    _s(
        "base_max_speed",
        "double",
        0.5,
        "The commanded base's linear velocity limit (each of base_x and base_y).",
        lo=0.0,
        hi=10.0,
        unit="m/s",
    ),
    _s(
        "base_max_angular_speed",
        "double",
        1.0,
        "The commanded base's angular velocity limit.",
        lo=0.0,
        hi=20.0,
        unit="rad/s",
    ),
    _s(
        "base_max_acceleration",
        "double",
        1.0,
        "The commanded base's linear acceleration limit (each of base_x and base_y; 0: none; "
        "joint_limits.base_x and base_y override it).",
        lo=0.0,
        hi=100.0,
        unit="m/s^2",
    ),
    _s(
        "base_max_angular_acceleration",
        "double",
        2.0,
        "The commanded base's angular acceleration limit (0: none; joint_limits.base_yaw "
        "overrides it).",
        lo=0.0,
        hi=200.0,
        unit="rad/s^2",
    ),
    _s(
        "base_weight",
        "double",
        0.1,
        "How much the solve moves the base rather than the arm (joint weight of the base "
        "joints; the arm's are 1): small, the arm reaches first and the base extends its "
        "reach.",
        lo=0.0,
        hi=100.0,
    ),
    _s(
        "base_cmd_topic",
        "string",
        "/cmd_vel",
        "Topic of the commanded base's velocity (geometry_msgs/Twist, the base's axes).",
        scope=NODE,
    ),
    _s(
        "odom_topic",
        "string",
        "~/odom",
        "Odometry of the base in world_frame (nav_msgs/Odometry; used when world_frame is set).",
        scope=NODE,
    ),
    _s(
        "aim_ahead",
        "bool",
        True,
        "Compare the effector and each moving target at the same instant: the target "
        "extrapolated by its twist from its header stamp to the joint state's, an explicit "
        "twist fed forward as it will be when the command acts (its filtered change rate, "
        "command_latency); a step's straight-line reference compared with the effector at the "
        "joint state's stamp and fed forward over the command's period (no overshoot).",
        live=True,
    ),
    _s(
        "command_latency",
        "double",
        -1.0,
        "Time from a tick to when the robot applies its command, for aim_ahead's feed-forward "
        "(-1: the joint states' most punctual delivery, measured from their header stamps).",
        lo=-1.0,
        hi=0.1,
        live=True,
        unit="s",
    ),
    _s(
        "actuator_lag",
        "double",
        0.0,
        "Time constant of the robot's velocity servos: the time a joint takes to reach 63 % of "
        "a step of its command (a first-order lag; e.g. 0.01-0.03 on Franka and UR velocity "
        "interfaces). The tick then solves at where the joints are heading (their position "
        "plus this lag times their velocity, modelled from the commands sent) and aims each "
        "target that much ahead along its twist: the lag is inverted, a moving target is "
        "tracked as on an ideal robot and a step is reached without overshoot. 0: the robot "
        "follows each command at once.",
        lo=0.0,
        hi=0.1,
        live=True,
        unit="s",
    ),
    _s(
        "max_target_speed",
        "double",
        2.0,
        "Fastest linear speed of a target. Successive target poses further apart are a jump "
        "(no feed-forward from them, counted in /diagnostics); target twists are capped.",
        lo=0.001,
        hi=100.0,
        live=True,
        unit="m/s",
    ),
    _s(
        "max_target_angular_speed",
        "double",
        6.0,
        "Fastest angular speed of a target, as max_target_speed.",
        lo=0.001,
        hi=1000.0,
        live=True,
        unit="rad/s",
    ),
    _s(
        "max_cartesian_speed",
        "double",
        0.5,
        "A target step (a pose that is not part of a smooth stream) or a jog on "
        "~/delta_twist_cmds is followed along a straight line at most this fast, and a pose "
        "task's feedback toward a far target is clamped to it or to the target's own speed, "
        "whichever is larger (direction kept); 0: steps go to the constraint at once, no "
        "clamp, jogs are capped by max_target_speed.",
        lo=0.0,
        hi=100.0,
        live=True,
        unit="m/s",
    ),
    _s(
        "max_cartesian_acceleration",
        "double",
        2.5,
        "Acceleration of that straight-line motion; with joint acceleration limits, also "
        "how fast a pose task's feedback may change (it approaches a far target along a "
        "braking curve, without overshoot).",
        lo=0.001,
        hi=1000.0,
        live=True,
        unit="m/s^2",
    ),
    _s(
        "max_cartesian_angular_speed",
        "double",
        1.5,
        "Angular speed of a target step's or a jog's rotation, and the clamp of a pose "
        "task's rotation feedback (as max_cartesian_speed).",
        lo=0.001,
        hi=1000.0,
        live=True,
        unit="rad/s",
    ),
    _s(
        "max_cartesian_angular_acceleration",
        "double",
        8.0,
        "Angular acceleration of that rotation, and of a pose task's rotation feedback "
        "(as max_cartesian_acceleration).",
        lo=0.001,
        hi=10000.0,
        live=True,
        unit="rad/s^2",
    ),
    _s(
        "target_reach_margin",
        "double",
        2.0,
        "Target poses farther from the root link than the effector's reach (from the URDF) "
        "plus this margin are refused as input errors.",
        lo=0.0,
        hi=1000.0,
        live=True,
        unit="m",
    ),
    _s(
        "constraint_names",
        "string_array",
        ["ee"],
        "Constraints, in order; each has constraints.<name>.<field> parameters.",
    ),
    _s(
        "publish_markers",
        "bool",
        True,
        "Publish RViz markers on ~/markers.",
        live=True,
        scope=NODE,
    ),
    _s(
        "thread_priority",
        "integer",
        0,
        "SCHED_FIFO real-time priority of the node's control loop and executor threads (1-99); "
        "0: normal scheduling. DDS's threads stay on the normal scheduler. Needs CAP_SYS_NICE; "
        "without it the node warns and runs at the normal priority.",
        lo=0,
        hi=99,
        scope=NODE,
    ),
    _s(
        "cpu_affinity",
        "integer_array",
        [],
        "CPUs the node's threads, DDS's included, may run on (e.g. [3]); empty: all.",
        scope=NODE,
    ),
    _s(
        "interactive_marker",
        "bool",
        True,
        "Serve a 6-DOF RViz interactive marker per pose constraint on ~/target_marker; "
        "dragging it sets the target.",
        scope=NODE,
    ),
)
"""Every parameter of the node besides the constraints' and the joint limits', in the order
the node declares them."""

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
""":data:`SETTINGS` by name."""

CONTROLLER_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.scope == CONTROLLER)
"""The settings of :class:`~itasc_ros.core.control.config.ControllerConfig` (and
``constraint_names``, which orders its constraints)."""

LIVE_KEYS = frozenset(s.name for s in CONTROLLER_SETTINGS if s.live)
"""Controller settings that :meth:`Controller.update_parameters` changes live."""

CONTROLLER_RANGES: dict[str, tuple[float, float]] = {
    s.name: (float(s.lo), float(s.hi))
    for s in CONTROLLER_SETTINGS
    if s.kind == "double" and s.lo is not None and s.hi is not None
}
"""Closed ranges ``(lo, hi)`` of the numeric controller settings."""

RCLPY_PARAMETERS = ("use_sim_time", "start_type_description_service")
"""Parameters rclpy declares on every node: not the node's settings."""
RCLPY_PREFIXES = ("qos_overrides.",)
"""Prefixes of the parameters rclpy may declare on any node."""

NODE_ONLY_KEYS = frozenset({s.name for s in SETTINGS if s.scope == NODE} | set(RCLPY_PARAMETERS))
"""Parameters of the node that are not part of the controller's configuration."""


def default(name: str) -> Any:
    """The declared default of setting ``name`` (a fresh copy of a list)."""
    d = BY_NAME[name].default
    return list(d) if isinstance(d, list) else d


__all__ = [
    "BY_NAME",
    "COMMAND_OUT_TYPES",
    "CONTROLLER",
    "CONTROLLER_RANGES",
    "CONTROLLER_SETTINGS",
    "LIVE_KEYS",
    "NODE",
    "NODE_ONLY_KEYS",
    "RCLPY_PARAMETERS",
    "RCLPY_PREFIXES",
    "SETTINGS",
    "TRIGGERS",
    "TRIGGER_JOINT_STATES",
    "TRIGGER_TIMER",
    "Setting",
    "default",
]
