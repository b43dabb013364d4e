"""``itasc_sim_robot``: a simulated velocity-controlled robot for demos, tests and benchmarks.

It stands in for a robot whose ros2_control runs a ``JointGroupVelocityController`` (or a
``JointTrajectoryController``): it takes joint velocity commands, integrates them at ``rate`` with
the *measured* time step, keeps every joint within its URDF position and velocity limits, and
publishes ``joint_states``. It is how the project tests itself, so it behaves like the real
controller where that matters:

* ``std_msgs/Float64MultiArray`` commands are read in ``joints`` order; a message with the wrong
  length or a non-finite value is dropped with a throttled warning (as ros2_control's forward
  command controller does) and the previous command stays in force.
* The last command is held forever (``command_timeout`` 0, like ros2_control), or replaced by
  zeros when no command arrived for ``command_timeout`` seconds.
* ``trajectory_msgs/JointTrajectory``: the first point's ``velocities`` by joint name; without
  velocities, ``(positions - q) / time_from_start`` computed when the message arrives.
* ``sensor_msgs/JointState``: ``velocity`` by joint name.
  For both named types, joints the message does not name are commanded zero velocity and a name
  the robot does not have rejects the message.
* ``latency`` [s] delays every accepted command before it takes effect; ``noise`` [rad or m] adds
  seeded Gaussian noise to the *published* positions (the integrated state stays exact).

Topics: subscribes ``command_topic`` (reliable, depth 10, as ros2_control's SystemDefaults);
publishes ``joint_states`` (``sensor_msgs/JointState``: stamp, name, position, velocity; reliable,
depth 10, so sensor-data subscribers match too) every tick, and ``~/stats`` (``std_msgs/String``,
JSON, 1 Hz): commands received / rejected / applied, limit clamps, timeouts, achieved rate.

:class:`SimulatedJoints` is the integrator without ROS, for offline use by the demo and tests.

Usage::

    itasc_sim_robot --ros-args -p urdf_file:=urdf/panda.urdf -p rate:=500.0
    python -m itasc_ros.tools.sim_robot --ros-args -p urdf_file:=urdf/ur5.urdf
        -p command_type:=trajectory_msgs/JointTrajectory -p latency:=0.01  (one line)
    itasc_sim_robot --ros-args -p urdf_file:=panda -p rate:=250   # a bundled robot

``urdf_file`` is a path (it ends in ``.urdf`` or has a ``/``) or a bundled robot's name; an
integer is accepted for a double parameter. The ``-p`` values are checked before DDS starts: a
wrong name, type, range, robot or joint is one line on stderr and exit status 2.

Like the other console scripts it does not change the DDS environment; tests and the demo pass
the local shared-memory environment (:mod:`itasc_ros.tools.dds_env`) to it.
"""

from __future__ import annotations

import collections
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import rclpy
from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.exceptions import (
    InvalidTopicNameException,
    NameValidationException,
    ParameterException,
    ParameterUninitializedException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.validate_topic_name import validate_topic_name
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from itasc_ros.cli import UsageError, run_cli, unknown_choice
from itasc_ros.core import ConfigurationError, ItascError, KinematicTree
from itasc_ros.ros.executors import make_executor, spin_until
from itasc_ros.ros.realtime import apply_realtime
from itasc_ros.ros.ros_args import non_ros_args, param_overrides
from itasc_ros.ros.slack_gc import SlackCollector
from itasc_ros.tools.home_poses import home_pose
from itasc_ros.tools.resources import bundled_robots, robot_urdf

PROG = "itasc_sim_robot"

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
#: A tick later than this many periods restarts the schedule instead of catching up [-].
MAX_LAG_PERIODS = 5.0
#: Warnings about rejected commands are throttled to one per this period [s].
WARN_PERIOD = 1.0


class CommandRejectedError(ItascError, ValueError):
    """A velocity command that the simulated controller drops (wrong length, NaN/Inf, names)."""


@dataclass
class SimStats:
    """Counters of a :class:`SimulatedJoints` and its node (all since start)."""

    commands_received: int = 0  # command messages that arrived (accepted or not)
    commands_rejected: int = 0  # dropped: wrong length, non-finite, unknown joint names
    commands_applied: int = 0  # accepted commands that took effect
    velocity_clamps: int = 0  # joint components of applied commands clipped to the limit
    position_clamps: int = 0  # joint-steps stopped at a position limit
    command_timeouts: int = 0  # times the command was zeroed after command_timeout
    steps: int = 0  # integration steps


class SimulatedJoints:
    """Velocity-controlled joints integrated within URDF position and velocity limits.

    Not thread-safe; the node serialises access with a lock.

    Args:
        tree: the robot; limits come from its URDF.
        joints: simulated joints in command order; ``None`` or empty = ``tree.joint_names``.
        q0: (n,) initial positions [rad or m] in ``joints`` order; ``None`` = the robot's home
            pose (:data:`itasc_ros.tools.home_poses.HOME_POSES`) or the tree's neutral pose.

    Raises:
        UnknownJointError: a name in ``joints`` is not an active joint of the tree.
        ConfigurationError: repeated joints, or ``q0`` of the wrong length, non-finite or
            outside the position limits.
    """

    def __init__(
        self,
        tree: KinematicTree,
        joints: Sequence[str] | None = None,
        q0: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        names = list(joints) if joints else list(tree.joint_names)
        if len(set(names)) != len(names):
            raise ConfigurationError(f"joint names repeat in {names}")
        idx = np.array([tree.joint_index(n) for n in names], dtype=np.int64)  # raises Unknown...
        self.names: list[str] = names
        self.index: dict[str, int] = {n: i for i, n in enumerate(names)}
        self.lower = tree.lower[idx]  # (n,)
        self.upper = tree.upper[idx]  # (n,)
        self.velocity_limits = tree.velocity_limits[idx]  # (n,)
        n = len(names)
        if q0 is None:
            q = home_pose(tree)[idx]
        else:
            q = np.array(q0, dtype=float).reshape(-1)
            if q.shape != (n,):
                raise ConfigurationError(
                    f"initial positions have {q.size} values; expected {n} for joints {names}"
                )
            if not np.all(np.isfinite(q)):
                raise ConfigurationError(f"initial positions must be finite, got {q.tolist()}")
            outside = [
                f"{names[i]}={q[i]:g} not in [{self.lower[i]:g}, {self.upper[i]:g}]"
                for i in range(n)
                if not self.lower[i] <= q[i] <= self.upper[i]
            ]
            if outside:
                raise ConfigurationError(
                    "initial positions outside the URDF limits: " + ", ".join(outside)
                )
        self._q = q.copy()  # (n,) [rad or m]
        self._command = np.zeros(n)  # (n,) [rad/s or m/s] within velocity limits
        self._velocity = np.zeros(n)  # (n,) effective velocity of the last step
        self._clipped = np.zeros(n, dtype=bool)
        self.stats = SimStats()

    @property
    def n(self) -> int:
        """Number of simulated joints."""
        return len(self.names)

    @property
    def q(self) -> np.ndarray:
        """(n,) a copy of the current positions [rad or m]."""
        return self._q.copy()

    @property
    def velocity(self) -> np.ndarray:
        """(n,) velocity of the last step [rad/s]: the command, zero where a limit stopped it."""
        return self._velocity.copy()

    @property
    def command(self) -> np.ndarray:
        """(n,) the velocity command in force [rad/s], already within the velocity limits."""
        return self._command.copy()

    def validate(self, qdot: Sequence[float] | np.ndarray) -> np.ndarray:
        """(n,) ``qdot`` as a float array, or raise like ros2_control would drop it.

        Raises:
            CommandRejectedError: wrong length or a non-finite value.
        """
        v = np.asarray(qdot, dtype=float).reshape(-1)
        if v.shape != (self.n,):
            raise CommandRejectedError(
                f"command has {v.size} values; expected {self.n} for joints {self.names}"
            )
        if not np.all(np.isfinite(v)):
            raise CommandRejectedError(f"command has non-finite values: {v.tolist()}")
        return v

    def apply(self, qdot: Sequence[float] | np.ndarray) -> None:
        """Make ``qdot`` (n,) [rad/s] the command in force, clipped to the velocity limits.

        Raises:
            CommandRejectedError: wrong length or non-finite; the previous command stays.
        """
        v = self.validate(qdot)
        clipped = np.clip(v, -self.velocity_limits, self.velocity_limits)
        self.stats.velocity_clamps += int(np.count_nonzero(clipped != v))
        self.stats.commands_applied += 1
        self._command[:] = clipped

    def stop(self) -> None:
        """Command zero velocity (as after a command timeout)."""
        self._command[:] = 0.0

    def step(self, dt: float) -> np.ndarray:
        """Integrate the command over ``dt`` [s] (explicit Euler), clamp into position limits.

        Returns:
            (n,) a copy of the new positions [rad or m].

        Raises:
            ConfigurationError: ``dt`` negative or non-finite.
        """
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ConfigurationError(f"time step must be finite and >= 0 s, got {dt}")
        q_new = self._q + self._command * dt
        np.clip(q_new, self.lower, self.upper, out=self._q)
        np.not_equal(q_new, self._q, out=self._clipped)
        self.stats.position_clamps += int(np.count_nonzero(self._clipped))
        self.stats.steps += 1
        np.copyto(self._velocity, self._command)
        self._velocity[self._clipped] = 0.0
        return self._q.copy()


# ------------------------------------------------------------------------- message -> qdot
def _by_name(
    sim: SimulatedJoints, names: Sequence[str], values: Sequence[float] | np.ndarray, what: str
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


def velocity_from_multi_array(msg: Float64MultiArray, sim: SimulatedJoints) -> np.ndarray:
    """(n,) velocities [rad/s] of a ``Float64MultiArray`` (``data`` in joints order).

    Raises:
        CommandRejectedError: wrong length or non-finite values.
    """
    return sim.validate(np.asarray(msg.data, dtype=float))


def velocity_from_joint_state(msg: JointState, sim: SimulatedJoints) -> np.ndarray:
    """(n,) velocities [rad/s] of a ``JointState`` command (``velocity`` by ``name``).

    Raises:
        CommandRejectedError: no velocities, unknown or repeated names, non-finite values.
    """
    if len(msg.velocity) == 0:
        raise CommandRejectedError("JointState command has no velocity values")
    return _by_name(sim, list(msg.name), np.asarray(msg.velocity, dtype=float), "JointState")


def velocity_from_trajectory(
    msg: JointTrajectory, sim: SimulatedJoints, q: np.ndarray
) -> np.ndarray:
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


# ------------------------------------------------------------------------- the node
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
        "command_timeout",
        0.0,
        "zero the command after this long without one [s]; 0 = hold forever",
        0.0,
        3600.0,
        live=True,
    ),
)
#: Parameters every rclpy node has (accepted on the command line, not checked here).
NODE_BUILTIN_PARAMETERS = ("use_sim_time", "start_type_description_service")


class SimRobotNode(Node):
    """The ``itasc_sim_robot`` node: a :class:`SimulatedJoints` behind ROS topics.

    Integration and ``joint_states`` publishing run in their own thread on a monotonic-clock
    schedule (more regular than an executor timer at 1 kHz); command callbacks and the stats
    timer run in the executor that spins this node.

    Raises:
        ItascError: no URDF, an invalid URDF, unknown joints or bad initial positions.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("itasc_sim_robot", **kwargs)
        self._coerce_numbers()
        for spec in PARAMETERS:
            self.declare_parameter(spec.name, spec.default, spec.descriptor())

        tree = self._load_tree()
        joints = self.get_parameter_or("joints").value or []
        q0 = self.get_parameter_or("initial_positions").value or None
        self.sim = SimulatedJoints(tree, joints, q0)
        self.command_type = str(self.get_parameter("command_type").value)
        if self.command_type not in COMMAND_TYPES:
            raise ConfigurationError(
                f"unknown command_type {self.command_type!r}; valid: {', '.join(COMMAND_TYPES)}"
            )
        topic = (
            str(self.get_parameter("command_topic").value)
            or TYPE_DEFAULT_TOPICS[self.command_type]
        )
        self.rate = float(self.get_parameter("rate").value)
        self.latency = float(self.get_parameter("latency").value)
        self.noise = float(self.get_parameter("noise").value)
        self.command_timeout = float(self.get_parameter("command_timeout").value)
        self._rng = np.random.default_rng(int(self.get_parameter("seed").value))
        self.add_on_set_parameters_callback(self._on_set_parameters)

        self._lock = threading.Lock()
        self._pending: collections.deque[tuple[float, np.ndarray]] = collections.deque()
        self._last_command_time = time.monotonic()  # when the command in force took effect
        self._timed_out = True  # the zero initial command counts as already timed out
        self._overruns = 0  # ticks started more than MAX_LAG_PERIODS late
        self.gc = SlackCollector()  # garbage collections after a publish once main() starts it
        self._dt_max = 0.0  # [s] largest measured step
        self._window_steps = 0
        self._window_start = time.monotonic()

        reliable = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE
        )
        self._js_pub = self.create_publisher(JointState, "joint_states", reliable)
        self._stats_pub = self.create_publisher(String, "~/stats", reliable)
        msg_type: Any = {
            "std_msgs/Float64MultiArray": Float64MultiArray,
            "trajectory_msgs/JointTrajectory": JointTrajectory,
            "sensor_msgs/JointState": JointState,
        }[self.command_type]
        self.create_subscription(msg_type, topic, self._on_command, reliable)
        self.create_timer(1.0, self._publish_stats)

        self._js = JointState()
        self._js.name = list(self.sim.names)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim_robot_tick", daemon=True)
        self.get_logger().info(
            f"simulating {tree.name} ({self.sim.n} joints) at {self.rate:g} Hz; "
            f"{self.command_type} commands on {self.resolve_topic_name(topic)}"
        )
        self._thread.start()

    # --------------------------------------------------------------------- setup
    def apply_scheduling(self) -> None:
        """``thread_priority`` and ``cpu_affinity`` for every thread (warns when not allowed).

        Raises:
            ValueError: a priority or CPU index out of range (the valid ones are named).
        """
        priority = int(self.get_parameter("thread_priority").value)
        try:
            cpus = [int(c) for c in (self.get_parameter("cpu_affinity").value or [])]
        except ParameterUninitializedException:  # declared without a value: all CPUs
            cpus = []
        if priority or cpus:
            for why in apply_realtime(priority, cpus):
                self.get_logger().warning(f"real-time scheduling not applied: {why}")

    def _coerce_numbers(self) -> None:
        """Integers given for double parameters become doubles (``rate:=250`` is 250.0 Hz)."""
        overrides = getattr(self, "_parameter_overrides", None)
        if not isinstance(overrides, dict):
            return
        for spec in PARAMETERS:
            given = overrides.get(spec.name)
            if not isinstance(given, Parameter):
                continue
            if spec.kind == _D.DOUBLE and given.type_ == _D.INTEGER:
                overrides[spec.name] = Parameter(spec.name, _D.DOUBLE, float(given.value))
            elif spec.kind == _D.DOUBLE_ARRAY and given.type_ == _D.INTEGER_ARRAY:
                values = [float(v) for v in given.value]
                overrides[spec.name] = Parameter(spec.name, _D.DOUBLE_ARRAY, values)

    def _load_tree(self) -> KinematicTree:
        xml = str(self.get_parameter("robot_description").value)
        if xml.strip():
            return KinematicTree.from_urdf(xml)
        return load_urdf_file(str(self.get_parameter("urdf_file").value))

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        for prm in params:
            if prm.name == "latency":
                self.latency = float(prm.value)
            elif prm.name == "noise":
                self.noise = float(prm.value)
            elif prm.name == "command_timeout":
                self.command_timeout = float(prm.value)
        return SetParametersResult(successful=True)

    # --------------------------------------------------------------------- commands
    def _on_command(self, msg: Any) -> None:
        now = time.monotonic()
        try:
            if self.command_type == "std_msgs/Float64MultiArray":
                qdot = velocity_from_multi_array(msg, self.sim)
            elif self.command_type == "sensor_msgs/JointState":
                qdot = velocity_from_joint_state(msg, self.sim)
            else:
                with self._lock:
                    q = self.sim.q
                qdot = velocity_from_trajectory(msg, self.sim, q)
        except CommandRejectedError as exc:
            with self._lock:
                self.sim.stats.commands_received += 1
                self.sim.stats.commands_rejected += 1
            self.get_logger().warning(f"dropped command: {exc}", throttle_duration_sec=WARN_PERIOD)
            return
        with self._lock:
            self.sim.stats.commands_received += 1
            self._pending.append((now + self.latency, qdot))

    # --------------------------------------------------------------------- the tick
    def _run(self) -> None:
        period = 1.0 / self.rate
        last = time.monotonic()
        with self._lock:
            self._window_start = last
        deadline = last + period
        while not self._stop.is_set():
            delay = deadline - time.monotonic()
            if delay > 0.0:
                time.sleep(delay)
            now = time.monotonic()
            if now - deadline > MAX_LAG_PERIODS * period:
                self._overruns += 1
                deadline = now  # restart the schedule rather than bursting to catch up
            deadline += period
            try:
                self._tick(now, now - last)
            except Exception as exc:  # keep simulating; a dead sim would hang its users
                self.get_logger().error(f"tick failed: {exc!r}", throttle_duration_sec=1.0)
            last = now

    def _tick(self, now: float, dt: float) -> None:
        with self._lock:
            sim = self.sim
            due = None
            while self._pending and self._pending[0][0] <= now:
                due = self._pending.popleft()[1]
            if due is not None:
                sim.apply(due)
                self._last_command_time = now
                self._timed_out = False
            elif (
                self.command_timeout > 0.0
                and not self._timed_out
                and now - self._last_command_time > self.command_timeout
            ):
                sim.stop()
                sim.stats.command_timeouts += 1
                self._timed_out = True
            q = sim.step(dt)
            velocity = sim.velocity
            self._dt_max = max(self._dt_max, dt)
            self._window_steps += 1
        if self.noise > 0.0:
            q += self._rng.normal(0.0, self.noise, q.shape)
        js = self._js
        js.header.stamp = self.get_clock().now().to_msg()
        js.position = q.tolist()
        js.velocity = velocity.tolist()
        self._js_pub.publish(js)
        self.gc.collect()  # a due garbage collection after the publish, not before the next

    def _publish_stats(self) -> None:
        now = time.monotonic()
        with self._lock:
            stats = asdict(self.sim.stats)
            elapsed = now - self._window_start
            rate = self._window_steps / elapsed if elapsed > 0.0 else 0.0
            self._window_steps = 0
            self._window_start = now
            stats.update(
                rate_hz=round(rate, 3),
                rate_target_hz=self.rate,
                dt_max_ms=round(1e3 * self._dt_max, 3),
                overruns=self._overruns,
                pending_commands=len(self._pending),
                positions=[round(x, 6) for x in self.sim.q.tolist()],
                joints=self.sim.names,
            )
            self._dt_max = 0.0
        self._stats_pub.publish(String(data=json.dumps(stats)))

    def stop(self) -> None:
        """Stop the integration thread (the node keeps existing until destroyed)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)


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


def check_overrides(overrides: Mapping[str, object], params_file: bool = False) -> None:
    """Check the command line's ``-p`` values before DDS starts (rclpy checks them again).

    Args:
        overrides: parameter name -> value, as ``ros_args.param_overrides`` reads them.
        params_file: a ``--params-file`` may give the URDF (not read here).

    Raises:
        UsageError: an unknown parameter (naming the closest), a value of the wrong type or
            out of its range, an unknown command type or a bad topic name.
        ItascError: a missing URDF file or robot, an unknown joint, bad initial positions.
    """
    specs = {spec.name: spec for spec in PARAMETERS}
    for name, value in overrides.items():
        spec = specs.get(name)
        if spec is not None:
            _check_value(spec, value)
        elif name not in NODE_BUILTIN_PARAMETERS and not name.startswith("qos_overrides."):
            raise UsageError(unknown_choice("parameter", name, specs))
    _check_cpus(_as_list(overrides.get("cpu_affinity")))
    if overrides.get("robot_description") or (params_file and "urdf_file" not in overrides):
        return  # the URDF comes from elsewhere: the node checks it
    tree = load_urdf_file(str(overrides.get("urdf_file", "")))
    joints = _as_list(overrides.get("joints"))
    q0 = _as_list(overrides.get("initial_positions"))
    SimulatedJoints(tree, joints, q0 or None)  # an unknown joint, bad initial positions


def _check_cpus(cpus: list[int]) -> None:
    count = os.cpu_count() or 1
    bad = [c for c in cpus if not 0 <= c < count]
    if bad:
        raise UsageError(f"cpu_affinity: no CPU {bad}; this machine has CPUs 0-{count - 1}")


def _as_list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_integer(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_ok(kind: Parameter.Type, value: object) -> bool:
    items = value if isinstance(value, list) else None
    return {
        _D.DOUBLE: _is_number(value),
        _D.INTEGER: _is_integer(value),
        _D.STRING: isinstance(value, str),
        _D.STRING_ARRAY: items is not None and all(isinstance(v, str) for v in items),
        _D.DOUBLE_ARRAY: items is not None and all(_is_number(v) for v in items),
        _D.INTEGER_ARRAY: items is not None and all(_is_integer(v) for v in items),
    }.get(kind, True)


def _check_value(spec: SimParam, value: object) -> None:
    kind = spec.kind
    ok = _type_ok(kind, value)
    if ok and spec.lo is not None and spec.hi is not None and isinstance(value, int | float):
        ok = spec.lo <= value <= spec.hi
    if not ok:
        want = _WANTED[kind] + (f" in [{spec.lo:g}, {spec.hi:g}]" if spec.lo is not None else "")
        raise UsageError(
            f"parameter {spec.name!r} must be {want} ({spec.description}), got {value!r}"
        )
    if spec.name == "command_type" and value not in COMMAND_TYPES:
        raise UsageError(unknown_choice("command_type", str(value), COMMAND_TYPES))
    if spec.name == "command_topic" and value:
        try:
            validate_topic_name(str(value))
        except InvalidTopicNameException:
            raise UsageError(
                f"parameter 'command_topic' {value!r} is not a valid topic name "
                "(letters, digits, '_' and '/', e.g. /forward_velocity_controller/commands)"
            ) from None


_WANTED = {
    _D.DOUBLE: "a number",
    _D.INTEGER: "a whole number",
    _D.STRING: "a string",
    _D.STRING_ARRAY: "a list of names [a,b]",
    _D.DOUBLE_ARRAY: "a list of numbers [x,y]",
    _D.INTEGER_ARRAY: "a list of whole numbers [i,j]",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (2: a mistake, named on one line)."""
    args = list(sys.argv if argv is None else [PROG, *argv])
    ros_args = args.index("--ros-args") if "--ros-args" in args else len(args)
    if {"-h", "--help"} & set(args[1:ros_args]):  # before rclpy: no DDS
        print(f"usage: {PROG} [-h] [--ros-args -p name:=value ...]\n\n{__doc__}")
        return 0
    return run_cli(PROG, lambda: _main(args))


def _main(args: list[str]) -> int:
    extra = non_ros_args(args)[1:]
    if extra:
        raise UsageError(
            f"unexpected argument {extra[0]!r}; {PROG} takes ROS parameters only: "
            "--ros-args -p urdf_file:=panda -p rate:=500.0 (see --help)"
        )
    check_overrides(param_overrides(args, "itasc_sim_robot"), "--params-file" in args)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    context = rclpy.Context()
    rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        _spin(context, stop)
    finally:
        rclpy.try_shutdown(context=context)
    return 0


def _spin(context: rclpy.Context, stop: threading.Event) -> None:
    """Run the node until ``stop``; a bad configuration is a :class:`UsageError`."""
    node: SimRobotNode | None = None
    executor = make_executor(context)
    try:
        try:
            node = SimRobotNode(context=context)
            node.apply_scheduling()
        except (ParameterException, NameValidationException) as exc:
            raise UsageError(str(exc)) from None
        except ItascError:
            raise
        except ValueError as exc:  # a priority or CPU out of range, naming the valid ones
            raise UsageError(str(exc)) from None
        executor.add_node(node)
        node.gc.start()  # start-up objects frozen; collections right after a publish
        spin_until(executor, stop, context)
    finally:
        if node is not None:
            node.stop()
        executor.shutdown()
        if node is not None:
            node.destroy_node()


if __name__ == "__main__":
    sys.exit(main())
