"""The ``itasc_sim_robot`` node: the simulated joints behind ROS topics.

The joints are :class:`~.joints.SimulatedJoints` (``physics: ideal``: each command followed
exactly) or :class:`~.physics.PhysicsJoints` (``physics: mujoco``: MuJoCo, velocity servos with
``actuator_lag``, torque limits, gravity compensated, contacts refereed). The node subscribes
to the command topic (one of :data:`~.commands.COMMAND_TYPES`), delays each accepted command by
``latency``, zeroes it after ``command_timeout``, steps the joints at ``rate`` on its own
monotonic-clock thread and publishes ``joint_states`` (position, velocity, and the physics'
effort; optional seeded noise), the base's odometry when it moves (:mod:`~.base`), ``~/stats``
(JSON, 1 Hz: with physics its real-time factor and contacts; the gaps between commands
longer than ``command_gap``, as the stamps of the states integrated in each) and, with
physics, ``~/contacts`` (JSON, each time the robot touches something it did not touch at the
step before).
"""

from __future__ import annotations

import collections
import json
import math
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import ROSClock
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from itasc_ros.core import ConfigurationError, KinematicTree
from itasc_ros.ros.conversions import matrix_to_pose
from itasc_ros.ros.log_throttle import log_throttled
from itasc_ros.ros.realtime import apply_realtime
from itasc_ros.ros.slack_gc import SlackCollector
from itasc_ros.tools.resources import robot_urdf as urdf_path

from ..base_motion import BASE_MOTIONS, CircleBase, CommandedBase, SwayBase
from .commands import (
    COMMAND_TYPES,
    TYPE_DEFAULT_TOPICS,
    velocity_from_joint_state,
    velocity_from_multi_array,
    velocity_from_trajectory,
)
from .joints import CommandRejectedError, SimulatedJoints
from .parameters import PARAMETERS, PHYSICS_KINDS, load_urdf_file
from .physics import PhysicsJoints

#: A tick later than this many periods restarts the schedule instead of catching up [-].
MAX_LAG_PERIODS = 5.0
#: Warnings about rejected commands are throttled to one per this period [s].
WARN_PERIOD = 1.0

_D = Parameter.Type


class WallStamps:
    """Header stamps on the system clock for instants of ``time.monotonic()``, increasing.

    The system clock's offset from the monotonic one is taken from a reading of the system
    clock between two monotonic readings at most :attr:`TIGHT` apart; a reading that a
    scheduling delay split (a starved process: the offset off by the delay, a stamp earlier
    than the one before) is not taken, and the last offset stands. A stamp is never earlier
    than :attr:`STEP` after the one before (a system clock stepped back).
    """

    TIGHT = 1e-4
    """[s] The longest pair of monotonic readings whose system clock reading is taken."""
    STEP = 1e-6
    """[s] The least step between two stamps (a float64 of seconds since 1970 resolves 0.24 us)."""

    def __init__(self) -> None:
        self.offset = self._read(tries=100)
        self._last = -math.inf

    def _read(self, tries: int = 1) -> float:
        """The system clock minus the monotonic one [s], from the tightest of ``tries`` readings.

        NaN when ``tries`` is 1 and that reading was not tight (at start-up, the tightest of
        many is taken however long it was).
        """
        best, offset = math.inf, math.nan
        for _ in range(tries):
            m0 = time.monotonic()
            wall = time.time()
            m1 = time.monotonic()
            if m1 - m0 < best:
                best, offset = m1 - m0, wall - 0.5 * (m0 + m1)
            if best <= self.TIGHT:
                return offset
        return offset if tries > 1 else math.nan

    def at(self, instant: float) -> float:
        """The stamp [s since 1970] of ``instant`` (``time.monotonic()``)."""
        offset = self._read()
        if not math.isnan(offset):  # a tight reading: the clocks as they are now
            self.offset = offset
        self._last = max(instant + self.offset, self._last + self.STEP)
        return self._last


class CommandTimeout:
    """When the command in force runs out: ``timeout`` [s] after it took effect.

    Args:
        timeout: [s] how long a command holds without a new one; 0 = for ever.
        since: [s] ``time.monotonic()`` when the command in force took effect.
    """

    def __init__(self, timeout: float, since: float) -> None:
        self.timeout = timeout
        self.since = since
        self.expired = True  # the zero initial command counts as already run out

    def hold_for(self, timeout: float) -> None:
        """A command holds ``timeout`` [s] from now on (0 = for ever)."""
        self.timeout = timeout

    def renew(self, since: float) -> None:
        """A command took effect at ``since`` [s]."""
        self.since, self.expired = since, False

    def expiry(self, now: float) -> float | None:
        """The instant [s] the command runs out when that is before ``now`` [s], once.

        A step that a starved thread took late stops the joints from that instant, not from the
        step's end: None while the command holds, has no timeout or ran out before.
        """
        if self.expired or self.timeout <= 0.0 or now - self.since <= self.timeout:
            return None
        self.expired = True
        return self.since + self.timeout


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

        tree, xml, folder = self._load_tree()
        joints = self.get_parameter_or("joints").value or []
        q0 = self.get_parameter_or("initial_positions").value or None
        self.physics = str(self.get_parameter("physics").value)
        self.sim: SimulatedJoints | PhysicsJoints
        if self.physics == "mujoco":
            self.sim = PhysicsJoints(
                tree, xml, joints, q0, float(self.get_parameter("actuator_lag").value),
                list(self.get_parameter_or("obstacles").value or []), folder,
            )  # fmt: skip
        elif self.physics == "ideal":
            self.sim = SimulatedJoints(tree, joints, q0)
        else:
            raise ConfigurationError(
                f"unknown physics {self.physics!r}; valid: {', '.join(PHYSICS_KINDS)}"
            )
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
        self.publish_states = bool(self.get_parameter("publish_states").value)
        self._timeout = CommandTimeout(
            float(self.get_parameter("command_timeout").value), time.monotonic()
        )
        self.command_gap = float(self.get_parameter("command_gap").value)
        self._rng = np.random.default_rng(int(self.get_parameter("seed").value))
        self.add_on_set_parameters_callback(self._on_set_parameters)

        self._lock = threading.Lock()
        # (instant it becomes due, instant it arrived, joint velocities) [s, s, rad/s]
        self._pending: collections.deque[tuple[float, float, np.ndarray]] = collections.deque()
        self._base_pending: collections.deque[tuple[float, tuple[float, float, float]]] = (
            collections.deque()
        )
        self._commanded = False  # a command took effect since the start
        # [[start, end], ...] stamps [s] of the command gaps over command_gap in the window
        self._gaps: list[list[float]] = []
        self._overruns = 0  # ticks started more than MAX_LAG_PERIODS late
        self.gc = SlackCollector()  # garbage collections after a publish once main() starts it
        self._dt_max = 0.0  # [s] largest measured step
        # [s] the shortest and longest delay from a command's arrival to the instant of the
        # integration it acts from, over the stats window (inf, -inf: none took effect)
        self._delay_min, self._delay_max = math.inf, -math.inf
        self._window_steps = 0
        self._window_start = time.monotonic()
        self._wall = WallStamps()  # the states' stamps

        reliable = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE
        )
        self._js_pub = self.create_publisher(JointState, "joint_states", reliable)
        self._stats_pub = self.create_publisher(String, "~/stats", reliable)
        self._contacts_pub = (
            self.create_publisher(String, "~/contacts", reliable)
            if isinstance(self.sim, PhysicsJoints)
            else None
        )
        self._touching: set[tuple[str, str]] = set()  # the pairs in contact at the last step
        msg_type: Any = {
            "std_msgs/Float64MultiArray": Float64MultiArray,
            "trajectory_msgs/JointTrajectory": JointTrajectory,
            "sensor_msgs/JointState": JointState,
        }[self.command_type]
        self.create_subscription(msg_type, topic, self._on_command, reliable)
        self.create_timer(1.0, self._publish_stats)

        self._js = JointState()
        self._js.name = list(self.sim.names)
        self._base, self._odom_pub, self._odom = self._make_base(tree.root_link, reliable)
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim_robot_tick", daemon=True)
        physics = (
            f" on MuJoCo physics, servos with a {self.sim.lag * 1e3:g} ms lag"
            if isinstance(self.sim, PhysicsJoints)
            else ""
        )
        self.get_logger().info(
            f"simulating {tree.name} ({self.sim.n} joints) at {self.rate:g} Hz{physics}; "
            f"{self.command_type} commands on {self.resolve_topic_name(topic)}"
        )
        self._thread.start()

    # --------------------------------------------------------------------- setup
    def _make_base(
        self, root: str, qos: QoSProfile
    ) -> tuple[CircleBase | SwayBase | CommandedBase | None, Any, Odometry]:
        """The base's motion, its odometry publisher and message (None, None: a fixed base)."""
        odom = Odometry()
        motion = str(self.get_parameter("base_motion").value)
        if motion not in BASE_MOTIONS:
            raise ConfigurationError(
                f"unknown base_motion {motion!r}; valid: {', '.join(BASE_MOTIONS)}"
            )
        if motion == "none":
            return None, None, odom
        base: CircleBase | SwayBase | CommandedBase
        height = float(self.get_parameter("base_height").value)
        if motion == "circle":
            base = CircleBase(
                float(self.get_parameter("base_radius").value),
                float(self.get_parameter("base_speed").value),
                float(self.get_parameter("base_yaw_rate").value),
                height,
            )
        elif motion == "sway":
            base = SwayBase(
                float(self.get_parameter("base_speed").value),
                float(self.get_parameter("sway_amplitude").value),
                float(self.get_parameter("sway_frequency").value),
                height,
            )
        else:
            base = CommandedBase(motion == "holonomic")
            topic = str(self.get_parameter("base_cmd_topic").value)
            self.create_subscription(Twist, topic, self._on_base_command, qos)
        odom.header.frame_id = str(self.get_parameter("odom_frame").value)
        odom.child_frame_id = root
        topic = str(self.get_parameter("odom_topic").value)
        return base, self.create_publisher(Odometry, topic, qos), odom

    def apply_scheduling(self) -> None:
        """``cpu_affinity`` for every thread, ``thread_priority`` for this one and the tick's.

        Warns when not allowed.

        Raises:
            ValueError: a priority or CPU index out of range (the valid ones are named).
        """
        priority = int(self.get_parameter("thread_priority").value)
        try:
            cpus = [int(c) for c in (self.get_parameter("cpu_affinity").value or [])]
        except ParameterUninitializedException:  # declared without a value: all CPUs
            cpus = []
        if priority or cpus:
            tick = self._thread.native_id
            for why in apply_realtime(priority, cpus, () if tick is None else (tick,)):
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

    def _load_tree(self) -> tuple[KinematicTree, str, Path | None]:
        """The robot: its tree, its URDF and the URDF file's folder (None: from the parameter)."""
        xml = str(self.get_parameter("robot_description").value)
        if xml.strip():
            return KinematicTree.from_urdf(xml), xml, None
        path = urdf_path(str(self.get_parameter("urdf_file").value))
        return load_urdf_file(str(path)), path.read_text(), path.parent

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        for prm in params:
            if prm.name == "latency":
                self.latency = float(prm.value)
            elif prm.name == "noise":
                self.noise = float(prm.value)
            elif prm.name == "command_timeout":
                self._timeout.hold_for(float(prm.value))
            elif prm.name == "command_gap":
                self.command_gap = float(prm.value)
            elif prm.name == "publish_states":
                self.publish_states = bool(prm.value)
        return SetParametersResult(successful=True)

    # --------------------------------------------------------------------- commands
    def _on_command(self, msg: Any) -> None:
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
            text = f"dropped command: {exc}"
            log_throttled(self.get_logger(), "warning", "dropped command", text, WARN_PERIOD)
            return
        with self._lock:
            # Its arrival taken under the lock: after the instant of any step that ran before
            # it, so it acts from arrival + latency exactly, never from a step already taken.
            arrived = time.monotonic()
            self.sim.stats.commands_received += 1
            self._pending.append((arrived + self.latency, arrived, qdot))

    def _on_base_command(self, msg: Twist) -> None:
        """A commanded base's twist: taken after ``latency``, as a joint command."""
        with self._lock:
            self._base_pending.append(
                (time.monotonic() + self.latency, (msg.linear.x, msg.linear.y, msg.angular.z))
            )

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
                self._tick(now, last)
            except Exception as exc:  # keep simulating; a dead sim would hang its users
                text = f"tick failed: {exc!r}"
                log_throttled(self.get_logger(), "error", "tick failed", text, 1.0)
            last = now

    def _tick(self, now: float, last: float) -> None:
        """Integrate from ``last`` to ``now`` [s]: each command from when it is due, then publish.

        A command that became due within the step acts from that instant (the one before it
        until then), as a robot's controller takes a command when it comes, not from the step
        before: two simulated robots whose steps fall at different phases move alike.
        """
        dt = now - last
        with self._lock:
            sim = self.sim
            t, due = last, False
            while self._pending and self._pending[0][0] <= now:
                at, arrived, qdot = self._pending.popleft()
                if at > t:
                    sim.advance(at - t)
                    t = at
                sim.apply(qdot)
                self._delay_min = min(self._delay_min, t - arrived)
                self._delay_max = max(self._delay_max, t - arrived)
                due = True
            if due:
                self._note_gap(now)
                self._timeout.renew(now)
            else:
                expiry = self._timeout.expiry(now)
                if expiry is not None:  # the joints stop from then, however late this step
                    if expiry > t:
                        sim.advance(expiry - t)
                        t = expiry
                    sim.stop()
                    sim.stats.command_timeouts += 1
            q = sim.step(now - t)
            velocity = sim.velocity
            effort = sim.effort if isinstance(sim, PhysicsJoints) else None
            touching = self._contacts_of(sim)
            if isinstance(self._base, CommandedBase):
                while self._base_pending and self._base_pending[0][0] <= now:
                    self._base.apply(*self._base_pending.popleft()[1])
                self._base.step(dt)
            self._dt_max = max(self._dt_max, dt)
            self._window_steps += 1
        if self.noise > 0.0:
            q += self._rng.normal(0.0, self.noise, q.shape)
        js = self._js
        js.header.stamp = self._stamp_of(now)
        js.position = q.tolist()
        js.velocity = velocity.tolist()
        if effort is not None:
            js.effort = effort.tolist()
        if touching is not None:
            self._report_contacts(touching)
        if self.publish_states:
            self._js_pub.publish(js)
        if self._base is not None:
            self._publish_odometry(now - self._t0, js.header.stamp)
        self.gc.collect()  # a due garbage collection after the publish, not before the next

    def _note_gap(self, now: float) -> None:
        """Note the gap before a command that took effect at ``now`` when over ``command_gap``.

        Its start and end as the stamps of the states integrated then (the system clock's,
        :class:`WallStamps`), kept for ``~/stats`` (under the lock; at most 100 a window).
        """
        gap, last = self.command_gap, self._timeout.since
        if self._commanded and gap > 0.0 and now - last > gap and len(self._gaps) < 100:
            offset = self._wall.offset
            self._gaps.append([round(last + offset, 6), round(now + offset, 6)])
        self._commanded = True

    def _contacts_of(self, sim: SimulatedJoints | PhysicsJoints) -> set[tuple[str, str]] | None:
        """The pairs in contact at this step when they changed since the last (under the lock)."""
        if not isinstance(sim, PhysicsJoints):
            return None
        now = sim.touching()
        if now == self._touching:
            return None
        self._touching = now
        return now

    def _report_contacts(self, touching: set[tuple[str, str]]) -> None:
        """``~/contacts`` and a warning for the pairs now in contact (an empty list: none)."""
        pairs = sorted(touching)
        if self._contacts_pub is not None:
            self._contacts_pub.publish(String(data=json.dumps({"pairs": pairs})))
        if pairs:
            text = "contact: " + ", ".join(f"{a} - {b}" for a, b in pairs)
            log_throttled(self.get_logger(), "warning", "contact", text, WARN_PERIOD)

    def _stamp_of(self, instant: float) -> Any:
        """The header stamp of the state integrated to ``instant`` (``time.monotonic()``).

        The state is where the robot was at that instant, not when the message was filled in
        (a scheduling delay between the two would make its stamp lie by that much): the
        system clock's reading at ``instant``. Under ``use_sim_time``, the ROS clock's now.
        """
        clock = self.get_clock()
        if isinstance(clock, ROSClock) and clock.ros_time_is_active:
            return clock.now().to_msg()
        wall = self._wall.at(instant)
        return Time(sec=int(wall // 1), nanosec=int((wall % 1.0) * 1e9) % 1_000_000_000)

    def _publish_odometry(self, t: float, stamp: Any) -> None:
        """The base's pose and twist at ``t`` [s] of its motion, stamped ``stamp``."""
        assert self._base is not None
        pose, body = self._base.at(t)
        msg = self._odom
        msg.header.stamp = stamp
        msg.pose.pose = matrix_to_pose(pose, msg.pose.pose)
        lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
        lin.x, lin.y, lin.z = (float(v) for v in body[:3])
        ang.x, ang.y, ang.z = (float(v) for v in body[3:])
        self._odom_pub.publish(msg)

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
                command_delay_ms=(
                    [round(1e3 * self._delay_min, 3), round(1e3 * self._delay_max, 3)]
                    if self._delay_max >= self._delay_min
                    else None
                ),
                command_gaps=self._gaps,
                positions=[round(x, 6) for x in self.sim.q.tolist()],
                velocities=[round(x, 6) for x in self.sim.velocity.tolist()],
                joints=self.sim.names,
            )
            if isinstance(self.sim, PhysicsJoints):
                stats.update(self.sim.report(now))
            self._dt_max = 0.0
            self._gaps = []
            self._delay_min, self._delay_max = math.inf, -math.inf
        self._stats_pub.publish(String(data=json.dumps(stats)))

    def stop(self) -> None:
        """Stop the integration thread (the node keeps existing until destroyed)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)


__all__ = ["MAX_LAG_PERIODS", "WARN_PERIOD", "CommandTimeout", "SimRobotNode"]
