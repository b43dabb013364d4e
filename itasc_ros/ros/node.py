"""``itasc_node``: the iTaSC velocity controller as a ROS 2 node (thin adapter of the core).

Subscription callbacks push joint states and targets into a
:class:`~itasc_ros.core.control.Controller`; a wall-rate timer calls ``step`` and publishes
the command (or, with ``control_trigger: joint_states``, each joint state does, and the timer is
a watchdog for stale input). Everything else (URDF source, parameters, diagnostics, status,
markers, enable service, a zero command on shutdown) is plumbing around those ten lines.

Usage::

    ros2 run itasc_ros itasc_node [-h] [--ros-args --params-file my_itasc.yaml -p ...]
    ros2 run itasc_ros itasc_node --ros-args --params-file config/panda.yaml -p urdf_file:=my.urdf
    python -m itasc_ros.ros.node --ros-args ...

The URDF comes from the ``robot_description`` parameter, else the ``robot_description`` topic
(robot_state_publisher), else the ``urdf_file`` parameter. ``-h``/``--help`` prints this and
exits without starting ROS. With your robot: ``ros2 launch itasc_ros itasc.launch.py``.

A start-up mistake (a missing ``--params-file``, an unknown parameter name, a value of the wrong
type, out of range or not one of the choices, a constraint link the static URDF lacks) ends the
node with one line on stderr naming what is valid and exit status 2. An integer is accepted
wherever a double is declared, at start-up and live.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PoseStamped, TwistStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType, ROSClock
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (
    DurabilityPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, String
from std_srvs.srv import SetBool
from visualization_msgs.msg import Marker, MarkerArray

from ..cli import USAGE_EXIT, closest
from ..core import (
    ConfigError,
    Controller,
    ControllerConfig,
    InputError,
    ItascError,
    KinematicTree,
    Status,
    StepOutput,
)
from ..core.control.config import apply_updates
from ..core.control.health import Health, diagnose, step_colour
from ..core.control.health import clip_reason as _clip
from ..core.control.journal import ZeroReason
from ..core.control.model_manager import (
    SAME_URDF,
    ModelChange,
    ModelManager,
    ModelOutcome,
    parse_urdf,
    read_urdf_file,
    urdf_digest,
)
from ..core.errors import UnknownLinkError
from ..core.latest_worker import LatestWorker
from ..params import settings_naming, target_topics
from . import parameters as P
from .conversions import (
    COMMAND_TYPES,
    JOINT_TRAJECTORY,
    CommandMessage,
    matrix_to_pose,
    pose_stamped_arrays,
    stamp_or_none,
    twist_stamped_array,
)
from .executors import make_executor, spin_until
from .ik_requests import IkRequests
from .journal_publisher import JournalPublisher
from .markers import TargetMarkers, replace_target_markers
from .realtime import apply_realtime, current_policy, demote_current_thread
from .ros_args import non_ros_args
from .slack_gc import SlackCollector
from .tick_spacing import TickSpacing

RCLError = _rclpy.RCLError  # rcl's errors (e.g. rclpy.init refusing the ROS arguments)
NODE_NAME = "itasc_node"
DIAGNOSTICS_PERIOD = 0.5  # [s] /diagnostics at 2 Hz
STATUS_PERIOD = 0.1  # [s] ~/status and ~/markers at 10 Hz
STOP_TIMEOUT = 2.0  # [s] longest controlled stop at shutdown before the zero command
WATCHDOG_PERIOD = 0.01  # [s] control_trigger joint_states: the stale-input check (100 Hz)
# diagnostic_msgs levels of the core's health levels (index: Level)
_LEVELS = (
    DiagnosticStatus.OK,
    DiagnosticStatus.WARN,
    DiagnosticStatus.ERROR,
    DiagnosticStatus.STALE,
)


class _LoopStats:
    """Tick count and solve-time statistics over one diagnostics window (no allocation)."""

    def __init__(self) -> None:
        self.reset(time.monotonic())

    def reset(self, t: float) -> None:
        self.t0 = t
        self.ticks = 0
        self.solves = 0
        self.solve_sum = 0.0
        self.solve_max = 0.0

    def add(self, seconds: float, solved: bool) -> None:
        self.ticks += 1
        if solved:
            self.solves += 1
            self.solve_sum += seconds
            if seconds > self.solve_max:
                self.solve_max = seconds


class _UrdfWorker:
    """Parses URDFs from the topic in a thread, so that the control loop keeps ticking.

    A URDF near the size limits takes up to about a second to parse; meanwhile the executor
    keeps running the timer (ros2_control would otherwise hold the last command that long).
    Only the latest request is kept (the topic has depth 1). Results ``(source, digest, tree,
    why)`` are picked up by :meth:`ItascNode._on_tick` on the executor thread; a document whose
    digest is ``current()`` (the installed model's) is not parsed again: ``why`` is
    :data:`~itasc_ros.core.control.model_manager.SAME_URDF`.

    Args:
        current: the digest of the installed model's URDF ('' for none).
    """

    def __init__(self, current: Callable[[], str]) -> None:
        self._current = current
        self.results: deque[tuple[str, str, KinematicTree | None, str]] = deque()
        self._worker: LatestWorker[tuple[str, str]] = LatestWorker(
            self._parse, "itasc_urdf_parser"
        )

    def submit(self, xml: str, source: str) -> None:
        """Parse ``xml`` (replacing a request not yet started)."""
        self._worker.submit((xml, source))

    def close(self) -> None:
        """Stop the thread (a parse in progress finishes first, up to 1 s is waited)."""
        self._worker.close(1.0)

    def _parse(self, request: tuple[str, str]) -> None:
        xml, source = request
        demote_current_thread()  # a long parse must not hold a real-time core
        digest = urdf_digest(xml)
        if digest == self._current():
            self.results.append((source, digest, None, SAME_URDF))
        else:
            tree, why = parse_urdf(xml)
            self.results.append((source, digest, tree, why))


class ItascNode(Node):
    """The iTaSC node: parameters -> Controller; topics in, velocity commands out.

    Args:
        **kwargs: passed to :class:`rclpy.node.Node` (e.g. ``parameter_overrides``).

    Raises:
        ConfigError: an invalid structural parameter (``command_out_type``...).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._worker: _UrdfWorker | None = None
        self._ik: IkRequests | None = None
        self._starting = True  # a static URDF lacking a configured link is fatal now only
        try:
            self._build()
        except BaseException:
            self.destroy_node()  # a refused start-up: its handles go before rclpy shuts down
            raise
        self._starting = False

    def _build(self) -> None:
        """Parameters, publishers, subscriptions, the URDF and the timers (see the class)."""
        self._constraint_names = P.declare_parameters(self)
        self._kind = str(P.value(self, "command_out_type"))  # choices checked when declared
        self._trigger = str(P.value(self, "control_trigger"))
        # The configuration from the parameters (links left empty stay empty: each model
        # resolves them anew, e.g. the effector of a new robot's URDF).
        self._config = P.read_config(self)  # validates the constraints' settings
        # The installed controller, its URDF, ~/enable, the inputs kept for the next model
        self._models: ModelManager[PoseStamped] = ModelManager()
        self._command: CommandMessage | None = None  # the installed controller's message
        self._tick_error = ""  # an unexpected exception in the control tick
        self._last_out: StepOutput | None = None
        self._target_markers: TargetMarkers | None = None
        self._publish_markers = bool(P.value(self, "publish_markers"))
        self._last_rejection = ""
        self._last_rejection_time = -math.inf
        self._rejections = 0
        self._stats = _LoopStats()
        self._diag = {"rate": 0.0, "solve_mean": 0.0, "solve_max": 0.0}
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.scheduling = "normal"  # set by apply_scheduling
        self.gc = SlackCollector()  # collections in the loop's slack once main() starts it

        self._cmd_pub = self.create_publisher(
            COMMAND_TYPES[self._kind],
            str(P.value(self, "command_out_topic")),
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._status_pub = self.create_publisher(String, "~/status", 10)
        self._marker_pub = self.create_publisher(MarkerArray, "~/markers", 10)
        self._journal = JournalPublisher(self)  # ~/journal (while subscribed), ~/parameters
        self._journal.publish_parameters(self._parameter_values())
        self.create_subscription(
            JointState,
            str(P.value(self, "joint_topic")),
            self._on_joint_state,
            qos_profile_sensor_data,
        )
        for name, (pose_topic, twist_topic) in target_topics(self._config).items():
            self.create_subscription(PoseStamped, pose_topic, self._target_cb(name), 10)
            self.create_subscription(TwistStamped, twist_topic, self._twist_cb(name), 10)
        self.create_subscription(TwistStamped, "~/delta_twist_cmds", self._on_jog, 10)
        # Position IK on request, solved in a thread of its own (never in the control tick).
        self._ik = IkRequests(self)
        self.create_subscription(PoseStamped, "~/ik_request", self._on_ik_request, 10)
        self.create_service(SetBool, "~/enable", self._on_enable)
        self._type_errors: dict[str, str] = {}  # of the request being set (see below)
        self.add_pre_set_parameters_callback(self._before_set_parameters)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        # URDF sources: the parameter, else the topic, else the file. The topic is always
        # listened to, so that a node whose parameter or file was rejected at start-up still
        # takes a good URDF from it (it stays idle until then).
        description = str(P.value(self, "robot_description"))
        path = str(P.value(self, "urdf_file"))
        if description:
            self._load_urdf(description, "parameter")
        elif path:
            self._load_file(path)
        self.create_subscription(
            String,
            "robot_description",
            self._on_robot_description,
            QoSProfile(
                depth=1,
                durability=DurabilityPolicy.TRANSIENT_LOCAL,
                reliability=ReliabilityPolicy.RELIABLE,
            ),
        )
        if self._controller is None:
            self.get_logger().info(
                "no model: waiting for a URDF on the robot_description topic (no command "
                "is published until then)"
            )

        self._last_tick = -math.inf  # [s] time.monotonic() of the last tick
        self._spacing = TickSpacing()  # joint_states trigger: which states tick
        self._watchdog_gap = 0.0  # [s] set by _set_rate
        if self._trigger == P.TRIGGER_JOINT_STATES:
            # Ticks come from the joint states; this timer only ticks when they stop (the
            # controller then sends its one zero command for stale input).
            self._timer = self.create_timer(
                self._timer_period(self._config.control_rate), self._on_watchdog, clock=self._wall
            )
        else:
            self._timer = self.create_timer(
                self._timer_period(self._config.control_rate), self._on_tick, clock=self._wall
            )
        self._set_rate(self._config.control_rate)
        # ~/status, ~/markers and /diagnostics run right after a tick's command (see
        # _housekeeping); this timer runs them only while the loop does not tick.
        self._status_due = self._diagnostics_due = 0.0  # [s] time.monotonic()
        self.create_timer(STATUS_PERIOD, self._on_housekeeping_timer, clock=self._wall)

    def apply_scheduling(self) -> None:
        """Apply ``thread_priority`` and ``cpu_affinity`` to every thread of this process.

        Called once the node (and so its DDS threads) exists and before the executor starts.
        Failures for want of permission are logged as a warning: the node runs on at the
        normal priority.

        Raises:
            ConfigError: a CPU this machine does not have (the valid ones are named).
        """
        priority = int(P.value(self, "thread_priority"))
        cpus = [int(c) for c in P.value(self, "cpu_affinity")]
        if not priority and not cpus:
            return
        try:
            problems = apply_realtime(priority, cpus)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        for why in problems:
            self.get_logger().warning(f"real-time scheduling not applied: {why}")
        policy, prio, allowed = current_policy()
        self.scheduling = f"{policy} {prio} on CPUs {allowed}"
        self.get_logger().info(f"scheduling: {self.scheduling}")

    @property
    def _controller(self) -> Controller | None:
        """The installed controller (None: no model, no command)."""
        return self._models.controller

    @property
    def _urdf_source(self) -> str:
        """Where the installed model's URDF came from ('' for none)."""
        return self._models.source

    # ------------------------------------------------------------------------- the loop
    def _now(self) -> float:
        """The node's ROS time [s]: the system clock unless ``use_sim_time`` is active."""
        clock = self.get_clock()
        if isinstance(clock, ROSClock) and clock.ros_time_is_active:  # /clock drives it
            return clock.now().nanoseconds * 1e-9
        return time.time()  # what the ROS clock reads then, without two Time objects (~10 us)

    def _on_watchdog(self) -> None:
        """joint_states trigger: tick when no joint state has ticked for ``input_timeout``.

        The states have stopped (or come slower than ``input_timeout``: stale anyway); this
        tick lets the controller send its one zero command for stale input.
        """
        gap = max(self._watchdog_gap, self._config.input_timeout)
        if time.monotonic() - self._last_tick >= gap:
            self._on_tick()

    def _on_tick(self) -> None:
        """One control tick: latest inputs -> core -> command; then the periodic jobs."""
        self._last_tick = time.monotonic()
        self._control()
        self._housekeeping(time.monotonic())

    def _housekeeping(self, t: float) -> None:
        """Garbage collection, ``~/status``, ``~/markers`` and ``/diagnostics`` when due.

        Run right after a command is published, not from free-running timers: a timer that
        fires just before a joint state arrives delays that tick by its work (~0.1-0.4 ms of
        message building), a late command at 1 kHz. The same for the garbage collector (see
        :mod:`itasc_ros.ros.slack_gc`, started by :func:`main`).

        Args:
            t: ``time.monotonic()`` [s].
        """
        self.gc.collect()  # a collection that is due, here rather than inside the next tick
        if t >= self._status_due:
            self._status_due = t + STATUS_PERIOD
            self._on_status()
        if t >= self._diagnostics_due:
            self._diagnostics_due = t + DIAGNOSTICS_PERIOD
            self._on_diagnostics()

    def _on_housekeeping_timer(self) -> None:
        """The periodic jobs while the loop does not tick (no model, no joint states)."""
        t = time.monotonic()
        if t - self._last_tick > STATUS_PERIOD:
            self._housekeeping(t)

    def _control(self) -> None:
        if self._worker is not None and self._worker.results:
            self._take_parsed(*self._worker.results.popleft())
        ctrl, cmd = self._controller, self._command
        if ctrl is None or cmd is None:
            return
        t0 = time.perf_counter()
        now = self._now()
        self._journal.sync(ctrl, self._models.digest)
        try:
            out = ctrl.step(now)
        except Exception as exc:  # a bug must not kill the node with the last command held
            self._on_tick_error(ctrl, exc)
            return
        self._tick_error = ""
        if out.publish:
            self._cmd_pub.publish(cmd.fill(out.q, out.qdot, ctrl.period, now))
        self._journal.flush(now)
        if self._last_out is None or out.status != self._last_out.status:
            self._log_transition(out)
        self._last_out = out
        self._stats.add(time.perf_counter() - t0, out.result is not None)

    def _log_transition(self, out: StepOutput) -> None:
        """One log line per change of the control status (active, stale, fault, ...)."""
        text = f"control {out.status}" + (f": {out.reason}" if out.reason else "")
        if out.status in (Status.STALE, Status.FAULT):
            self.get_logger().warning(text + (" (zero command sent)" if out.publish else ""))
        else:
            self.get_logger().info(text)

    def _on_tick_error(self, ctrl: Controller, exc: Exception) -> None:
        """An unexpected exception in ``step``: zero command once, log, report, keep running."""
        if not self._tick_error:
            self._publish_zero(ctrl, wait=0.0, reason=ZeroReason.TICK_ERROR)
            self.get_logger().error(
                f"control step failed, zero command sent: {type(exc).__name__}: {exc}"
            )
        self._tick_error = _clip(f"control step failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------------- URDF
    def _load_urdf(
        self,
        xml: str | bytes,
        source: str,
        refuse: bool = False,
        config: ControllerConfig | None = None,
    ) -> str:
        """Parse and install a URDF now (start-up, parameters). Returns '' or why not.

        A parameter change always rebuilds the model, even with the same URDF (an explicit
        reload); the topic's republished URDF does not (see :class:`_UrdfWorker`). With
        ``refuse`` (a parameter change, which can be refused) a rejected URDF changes nothing:
        the reason goes back to the caller and to the log. ``config``: the configuration of the
        new controller (default: the current one).
        """
        digest = urdf_digest(xml)
        ctrl = self._controller
        if ctrl is None or not ctrl.commanding:
            tree, why = parse_urdf(xml)
        else:  # the control loop waits for the parse: stop the robot if that takes a while
            parsed: list[tuple[KinematicTree | None, str]] = []
            thread = threading.Thread(target=lambda: parsed.append(parse_urdf(xml)), daemon=True)
            thread.start()
            thread.join(2.0 * ctrl.period)
            if thread.is_alive():
                self._publish_zero(ctrl, wait=0.0, reason=ZeroReason.SLOW_PARSE)
                thread.join()
            tree, why = parsed[0]
        return self._take_parsed(source, digest, tree, why, refuse, config)

    def _load_file(
        self, path: str, refuse: bool = False, config: ControllerConfig | None = None
    ) -> str:
        """Load ``path`` as the URDF (the lowest-precedence source). Returns '' or why not."""
        data, why = read_urdf_file(path)
        if data is None:
            return self._carry_out(self._models.reject("file", why, refuse))
        return self._load_urdf(data, "file", refuse, config)

    def _on_robot_description(self, msg: String) -> None:
        if self._urdf_source == "parameter":
            self.get_logger().info(
                "robot_description topic ignored: the robot_description parameter is set",
                once=True,
            )
            return
        if self._worker is None:
            models = self._models
            self._worker = _UrdfWorker(lambda: models.current_digest)
        self._worker.submit(msg.data, "topic")  # installed by the next tick once parsed

    def _take_parsed(
        self,
        source: str,
        digest: str,
        tree: KinematicTree | None,
        why: str,
        refuse: bool = False,
        config: ControllerConfig | None = None,
    ) -> str:
        """Install the model of a parsed URDF, or report why not. Returns '' or why not.

        The decisions are :meth:`ModelManager.take`'s (a URDF that does not parse keeps the
        model, one that does not fit drops it, ``refuse`` changes nothing); this carries
        them out.
        """
        cfg = self._config if config is None else config
        outcome = self._models.take(source, digest, tree, why, cfg, refuse)
        missing = _unknown_link(outcome.cause)
        if missing is not None and tree is not None:
            outcome = self._name_the_link(outcome, missing, tree, source, cfg)
        return self._carry_out(outcome)

    def _name_the_link(
        self,
        outcome: ModelOutcome[PoseStamped],
        missing: UnknownLinkError,
        tree: KinematicTree,
        source: str,
        cfg: ControllerConfig,
    ) -> ModelOutcome[PoseStamped]:
        """A configured link the URDF lacks: the parameter, the closest link, the links.

        At start-up from the ``robot_description`` parameter or ``urdf_file`` (static) that is
        fatal (:class:`ConfigError`, one line). From the topic, whose next URDF may have the
        link, it is the error (``~/status``, /diagnostics), logged throttled.

        Raises:
            ConfigError: at start-up, the URDF from the parameter or the file.
        """
        text = _link_error(missing, tree, source, cfg)
        if self._starting and source in ("parameter", "file"):
            raise ConfigError(text)
        if outcome.change == ModelChange.REFUSED:
            return dataclasses.replace(
                outcome, reason=f"refused, nothing changed: {text}", logs=()
            )
        state = "no command" if outcome.change == ModelChange.IDLE else "model dropped, no command"
        text = _clip(f"{text} ({state} until the URDF has that link or the link is changed)")
        self._models.error = text
        self.get_logger().error(text, throttle_duration_sec=5.0)
        return dataclasses.replace(outcome, reason=text, logs=())

    def _carry_out(self, outcome: ModelOutcome[PoseStamped]) -> str:
        """Do what a URDF's outcome asks: zero, command message, targets, markers, logs.

        Returns:
            The outcome's reason ('' unless the URDF was rejected).
        """
        if outcome.zero_on is not None:  # the old model was commanding: stop it
            self._publish_zero(outcome.zero_on, wait=0.0, reason=ZeroReason.MODEL_CHANGE)
        if outcome.model_changed:
            ctrl = self._controller
            self._last_out = None
            self._command = None if ctrl is None else CommandMessage(self._kind, ctrl.joint_names)
            for name, msg in outcome.pending.items():
                self._on_marker_pose(name, msg)
            if ctrl is not None:
                self._target_markers = replace_target_markers(  # RViz drag-able targets
                    self,
                    ctrl,
                    self._target_markers,
                    bool(P.value(self, "interactive_marker")),
                )
            elif self._target_markers is not None:
                self._target_markers.shutdown()
                self._target_markers = None
        logger = self.get_logger()
        for level, text in outcome.logs:
            if level >= logging.ERROR:
                logger.error(text)
            elif level >= logging.WARNING:
                logger.warning(text)
            else:
                logger.info(text)
        return outcome.reason

    # ------------------------------------------------------------------------- inputs
    def _reject(self, exc: Exception) -> None:
        if not isinstance(exc, ItascError):  # a bug, not bad input: still never a crash
            exc = InputError(f"{type(exc).__name__} while handling the input: {exc}")
        self._rejections += 1
        self._last_rejection = _clip(str(exc))
        self._last_rejection_time = time.monotonic()
        self.get_logger().warning(f"input rejected: {exc}", throttle_duration_sec=1.0)

    def _on_joint_state(self, msg: JointState) -> None:
        ctrl = self._controller
        names, pos, src = msg.name, msg.position, stamp_or_none(msg.header.stamp)
        now = self._now()
        if ctrl is not None:
            try:
                ctrl.set_joint_state(names, pos, now, src)
            except Exception as exc:  # InputError; anything else is counted, never a crash
                self._reject(exc)
                return
        self._models.remember_joint_state(names, pos, src, now)  # for the next model
        if self._trigger == P.TRIGGER_JOINT_STATES:
            # at most control_rate on average, every state when they come slower
            if self._spacing.due(time.monotonic()):
                self._on_tick()

    def _target_cb(self, name: str) -> Callable[[PoseStamped], None]:
        def cb(msg: PoseStamped) -> None:
            self._on_marker_pose(name, msg)
            if self._target_markers is not None:  # the RViz marker follows topic targets
                self._target_markers.follow(name)

        return cb

    def _on_marker_pose(self, name: str, pose_stamped: PoseStamped, jump: bool = False) -> None:
        """Feed a target pose to constraint ``name`` (target topics and the RViz marker)."""
        ctrl = self._controller
        if ctrl is None:
            self._models.hold_target(name, pose_stamped)  # applied once a model is loaded
            return
        try:
            frame, p, q, src = pose_stamped_arrays(pose_stamped)
            ctrl.set_target(name, frame, p, q, self._now(), src, jump=jump)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _on_marker_snap(self, name: str, pose_stamped: PoseStamped) -> None:
        """The marker snapped back to the effector: a jump, no target velocity estimate."""
        self._on_marker_pose(name, pose_stamped, jump=True)

    def _twist_cb(self, name: str) -> Callable[[TwistStamped], None]:
        def cb(msg: TwistStamped) -> None:
            ctrl = self._controller
            if ctrl is None:
                return
            try:
                frame, tw, src = twist_stamped_array(msg)
                ctrl.set_target_twist(name, frame, tw, self._now(), src)
            except Exception as exc:  # InputError; anything else is counted, never a crash
                self._reject(exc)

        return cb

    def _on_jog(self, msg: TwistStamped) -> None:
        """``~/delta_twist_cmds``: jog the effector of the first target constraint (as Servo)."""
        ctrl = self._controller
        if ctrl is None or not ctrl.pose_constraints:
            return
        try:
            frame, tw, src = twist_stamped_array(msg)
            ctrl.set_jog_twist(ctrl.pose_constraints[0], frame, tw, self._now(), src)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _on_ik_request(self, msg: PoseStamped) -> None:
        """Queue a position IK request (answered on ``~/ik_solution`` and ``~/ik_result``)."""
        if self._ik is not None:
            self._ik.request(msg, self._controller)

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> Any:
        self._models.set_enabled(bool(request.data))
        response.success = True
        response.message = "enabled" if request.data else "disabled: zero command sent once"
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------------- parameters
    def _before_set_parameters(self, params: list[Parameter]) -> list[Parameter]:
        """Rclpy's pre-set callback: integers for doubles; values of a wrong type noted.

        A value of a wrong type is swapped for the current one and refused with its one-line
        reason by :meth:`_on_set_parameters` (rclpy's names neither parameter nor value).
        """
        try:
            params, self._type_errors = P.coerce_request(self, params)
        except Exception as exc:  # a bug must not kill the node: rclpy judges the request
            self._type_errors = {}
            self.get_logger().error(f"parameter request not converted: {exc!r}")
        return params

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Apply a set-parameters request whole, or refuse it with the reason; never raises.

        An integer for a double was converted (:meth:`_before_set_parameters`); rclpy has
        refused values outside the declared ranges and read-only parameters; a value of another
        wrong type is refused here. Everything else goes through the same validation as at
        start-up (:meth:`ControllerConfig.validate`, then building the controller), before
        anything changes.
        """
        try:
            reason = self._apply_parameters(params)
        except Exception as exc:  # a bug must not kill the node: refuse, nothing changed
            reason = (
                f"internal error, nothing changed: {type(exc).__name__}: {exc}"
                if str(exc)
                else f"internal error, nothing changed: {type(exc).__name__}"
            )
            self.get_logger().error(f"parameter change refused: {reason}")
        if reason:
            return SetParametersResult(successful=False, reason=_clip(reason))
        return SetParametersResult(successful=True)

    def _apply_parameters(self, params: list[Parameter]) -> str:
        """The work of :meth:`_on_set_parameters`: '' (applied) or why not (nothing changed)."""
        if self._type_errors:  # undeclared names, values of a wrong type (this request's)
            return "; ".join(self._type_errors.values())
        names = [p.name for p in params]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # each value must be validated, and only one of them could be applied
            return f"parameters named more than once in one request: {', '.join(twice)}"
        updates: dict[str, Any] = {}
        description = urdf_file = ""
        for p in params:
            if p.name == "robot_description":
                description = str(p.value or "")
            elif p.name == "urdf_file":
                urdf_file = str(p.value or "")
            else:
                updates.update(P.live_update(p.name, p.value) or {})
        try:  # validate everything before changing anything
            config = apply_updates(self._config, **updates) if updates else self._config
        except ConfigError as exc:
            return str(exc)
        updated = False  # the controller's live settings were updated
        if description:  # a new model, built with the new configuration
            reason = self._load_urdf(description, "parameter", refuse=True, config=config)
        elif urdf_file and self._urdf_source in ("", "file"):
            reason = self._load_file(urdf_file, refuse=True, config=config)
        elif updates and self._controller is not None:
            try:  # all or nothing: the controller changes only when the new scene is built
                self._controller.update_parameters(**updates)
                reason, updated = "", True
            except ItascError as exc:
                reason = str(exc)
        else:
            reason = ""
        if reason:
            return reason
        self._config = config
        values = self._parameter_values()
        values.update({p.name: p.value for p in params})
        self._journal.parameters_changed(values, updated)
        for p in params:
            if p.name == "publish_markers":
                self._publish_markers = bool(p.value)
            elif p.name == "control_rate":
                self._set_rate(config.control_rate)
        return ""

    def _timer_period(self, rate: float) -> float:
        """The timer's period [s]: the control period, or the watchdog's (joint_states)."""
        if self._trigger == P.TRIGGER_JOINT_STATES:
            return max(1.0 / rate, WATCHDOG_PERIOD)
        return 1.0 / rate

    def _set_rate(self, rate: float) -> None:
        """Apply ``control_rate`` [Hz] to the timer (or the joint_states trigger's spacing)."""
        self._spacing.period = 1.0 / rate  # [s]
        self._watchdog_gap = 2.0 / rate  # [s] joint_states trigger: watchdog's shortest gap
        period_ns = int(1e9 * self._timer_period(rate))
        if self._timer.timer_period_ns != period_ns:
            self._timer.timer_period_ns = period_ns

    # ------------------------------------------------------------------------- outputs
    def _publish_zero(
        self, ctrl: Controller, wait: float = 0.5, reason: ZeroReason = ZeroReason.SHUTDOWN
    ) -> bool:
        """Publish a zero command (JointTrajectory needs a joint state); wait for delivery.

        The zero is journaled (outside a tick) with ``reason``.
        """
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        zeros = np.zeros(ctrl.n_joints)
        now = self._now()
        self._cmd_pub.publish(cmd.fill(ctrl.q, zeros, ctrl.period, now))
        self._journal.zero(now, reason)  # the journal is still the one of ``ctrl``
        self._wait_delivered(self._cmd_pub, wait)
        return True

    @staticmethod
    def _wait_delivered(pub: Any, wait: float) -> None:
        """Wait at most ``wait`` [s] until the subscribers of ``pub`` acknowledged its messages."""
        if wait <= 0.0:
            return
        try:
            pub.wait_for_all_acked(Duration(seconds=wait))
        except Exception:  # older rmw: give DDS a moment instead
            time.sleep(min(wait, 0.2))

    def destroy_node(self) -> None:
        """Stop the URDF parser and IK threads, then destroy the node."""
        if self._worker is not None:
            self._worker.close()
        if self._ik is not None:
            self._ik.close()
        super().destroy_node()

    def stop_smoothly(self, executor: Any, timeout: float = STOP_TIMEOUT) -> bool:
        """Shutdown while commanding: decelerate within the joint limits (stop category 1).

        The node is disabled and keeps ticking (with fresh joint states the controller
        decelerates, then sends its zero; with stale ones the zero comes at once) for at most
        ``timeout`` seconds. Returns True when the robot was brought to rest this way.
        """
        ctrl = self._controller
        if ctrl is None or not ctrl.commanding:
            return False
        self._models.set_enabled(False)
        self.get_logger().info("shutdown: decelerating within the joint limits")
        deadline = time.monotonic() + timeout
        while ctrl.commanding and time.monotonic() < deadline and rclpy.ok():
            executor.spin_once(timeout_sec=0.01)
        return not ctrl.commanding

    def shutdown_zero(self, wait: float = 1.0, already_stopped: bool = False) -> bool:
        """Publish a zero command before exit (ros2_control holds the last command).

        ``already_stopped``: the controlled stop ended with its zero command a moment ago; a
        second zero right after it would only be a jerk at the ticks' times.
        """
        if self._controller is None:
            return False
        if already_stopped:
            self._journal.flush(self._now(), force=True)
            self._wait_delivered(self._cmd_pub, wait)  # the stop's last zero reaches the robot
            self._journal.wait_delivered(wait)
            self.get_logger().info("shutdown: zero command sent (the controlled stop's last)")
            return True
        self._journal.flush(self._now(), force=True)
        sent = self._publish_zero(self._controller, wait)
        self._journal.flush(self._now(), force=True)  # the zero's record
        self._journal.wait_delivered(wait)
        if sent:
            self.get_logger().info("shutdown: zero command sent")
        return sent

    def _on_status(self) -> None:
        # Only for listeners: building and converting these messages takes ~0.5 ms, a late
        # control tick at 1 kHz when nobody looks (no RViz, no ``ros2 topic echo``).
        self._journal.check_subscribers()
        want_status = self._status_pub.get_subscription_count() > 0
        want_markers = self._publish_markers and self._marker_pub.get_subscription_count() > 0
        if want_status:
            self._publish_status()
        self._journal.flush(self._now(), force=True)  # the ticks since, if the loop stopped
        ctrl = self._controller
        if want_markers and ctrl is not None and ctrl.has_joint_state:
            self._marker_pub.publish(self._markers(ctrl, self._last_out, self._now()))

    def _parameter_values(self) -> dict[str, Any]:
        """Every parameter's current value (the ``~/parameters`` snapshot)."""
        return {name: p.value for name, p in self._parameters.items()}

    def _publish_status(self) -> None:
        ctrl, out, models = self._controller, self._last_out, self._models
        info: dict[str, Any] = {
            "status": "no_model"
            if ctrl is None
            else (str(out.status) if out else str(Status.WAITING)),
            "reason": (models.error or "no URDF yet")
            if ctrl is None
            else (out.reason if out else ""),
            "enabled": models.enabled,
            "loop_rate": round(self._diag["rate"], 1),
            "rejections": self._rejections,
            "last_rejection": self._last_rejection,
            "urdf_error": models.error,
            "urdf_rejections": models.rejections,
        }
        r = out.result if out is not None else None
        if r is not None:
            info.update(
                errors={n: float(e) for n, e in zip(r.constraint_names, r.errors, strict=True)},
                sigma_min=r.sigma_min,
                damping=r.damping,
                locked=r.locked_joints,
                velocity_scale=r.velocity_scale,
            )
        self._status_pub.publish(String(data=json.dumps(info)))

    def _markers(self, ctrl: Controller, out: StepOutput | None, now: float) -> MarkerArray:
        colour = ColorRGBA()
        colour.r, colour.g, colour.b, colour.a = step_colour(out)[1]
        array = MarkerArray()
        stamp = self.get_clock().now().to_msg()
        for name in ctrl.pose_constraints:
            eff, target = ctrl.poses(name)
            for i, (pose, scale) in enumerate(((eff, 0.08), (target, 0.12))):
                m = Marker(ns=name, id=i, type=Marker.ARROW, action=Marker.ADD)
                m.header.frame_id, m.header.stamp = ctrl.tree.root_link, stamp
                if pose is None:
                    m.action = Marker.DELETE
                else:
                    matrix_to_pose(pose, m.pose)
                m.scale.x, m.scale.y, m.scale.z = scale, 0.01, 0.01
                m.color = colour if i == 1 else ColorRGBA(r=0.2, g=0.4, b=1.0, a=1.0)
                array.markers.append(m)
            line = Marker(ns=name, id=2, type=Marker.LINE_LIST, action=Marker.ADD)
            line.header.frame_id, line.header.stamp = ctrl.tree.root_link, stamp
            line.pose.orientation.w = 1.0
            line.scale.x = 0.004
            line.color = colour
            if target is None:
                line.action = Marker.DELETE
            else:
                line.points = [
                    Point(x=float(a[0]), y=float(a[1]), z=float(a[2]))
                    for a in (eff[:3, 3], target[:3, 3])
                ]
            array.markers.append(line)
        return array

    def _on_diagnostics(self) -> None:
        t = time.monotonic()
        st = self._stats
        span = t - st.t0
        self._diag = {
            "rate": st.ticks / span if span > 0 else 0.0,
            "solve_mean": st.solve_sum / st.solves if st.solves else 0.0,
            "solve_max": st.solve_max,
        }
        st.reset(t)
        ctrl, out, models = self._controller, self._last_out, self._models
        now = self._now()
        status = DiagnosticStatus(
            name=f"{self.get_name()}: controller", hardware_id=ctrl.tree.name if ctrl else ""
        )
        values: list[tuple[str, Any]] = [
            ("loop_rate_hz", f"{self._diag['rate']:.1f}"),
            ("control_rate_hz", f"{self._config.control_rate:.1f}"),
            ("control_trigger", self._trigger),
            ("scheduling", self.scheduling),
            ("gc_collections", "/".join(map(str, self.gc.collections))),
            ("solve_time_mean_ms", f"{1e3 * self._diag['solve_mean']:.3f}"),
            ("solve_time_max_ms", f"{1e3 * self._diag['solve_max']:.3f}"),
            ("urdf_source", models.source or "none"),
            ("enabled", models.enabled),
            ("rejections", self._rejections),
            ("last_rejection", self._last_rejection),
            ("urdf_rejections", models.rejections),
            ("urdf_error", models.error),
            ("journal_subscribers", self._journal.subscribers),
            ("parameters_revision", self._journal.revision),
        ]
        if ctrl is not None:
            values.append(("joint_state_age_s", _age(now, ctrl.joint_state_stamp)))
            for name in ctrl.pose_constraints:
                values += [
                    (f"target_age_s.{name}", _age(now, ctrl.target_stamp(name))),
                    (f"target_jumps.{name}", ctrl.target_jumps(name)),
                    (f"target_twists_capped.{name}", ctrl.target_twists_capped(name)),
                    (f"jog_late_twists.{name}", ctrl.jog_late_twists(name)),
                ]
            if out is not None:
                values.append(("status", out.status))
                r = out.result
                if r is not None:
                    values += [
                        ("sigma_min", f"{r.sigma_min:.5f}"),
                        ("damping", f"{r.damping:.5f}"),
                        ("locked_joints", ", ".join(r.locked_joints)),
                        ("velocity_scale", f"{r.velocity_scale:.4f}"),
                    ]
        level, status.message = diagnose(
            Health(
                has_model=ctrl is not None,
                status=None if out is None else str(out.status),
                reason="" if out is None else out.reason,
                loop_rate=self._diag["rate"],
                control_rate=self._config.control_rate,
                timer_trigger=self._trigger == P.TRIGGER_TIMER,
                urdf_error=models.error,
                since_rejection=t - self._last_rejection_time,
                last_rejection=self._last_rejection,
                tick_error=self._tick_error,
            )
        )
        status.level = _LEVELS[level]
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(array)


def _unknown_link(exc: BaseException | None) -> UnknownLinkError | None:
    """The :class:`UnknownLinkError` behind ``exc`` (its cause chain), or None."""
    for _ in range(8):
        if exc is None or isinstance(exc, UnknownLinkError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _link_error(missing: UnknownLinkError, tree: KinematicTree, source: str, cfg: Any) -> str:
    """One line: which parameter names a link robot ``tree`` lacks, the closest, the links."""
    links = list(tree.link_names)
    where = " and ".join(settings_naming(cfg, missing.name)) or "a constraint"
    holding = sorted((n for n in links if missing.name.lower() in n.lower()), key=len)
    hint = closest(missing.name, links) or (holding[0] if holding else None)  # hand: panda_hand
    did = f"; did you mean {hint!r}?" if hint is not None else ";"
    return (
        f"{where}: link {missing.name!r} is not a link of robot {tree.name!r} (URDF from the "
        f"{source}){did} links: {', '.join(links)}"
    )


def _age(now: float, stamp: float) -> str:
    return "never" if not math.isfinite(stamp) else f"{now - stamp:.3f}"


def main(args: list[str] | None = None) -> int:
    """Run the node until SIGINT/SIGTERM; publish a zero command before exiting.

    Args:
        args: the command line with the program name (default ``sys.argv``); ``-h`` or
            ``--help`` before any ``--ros-args`` prints the usage and returns 0 without
            initialising rclpy (no DDS).
    """
    import faulthandler

    faulthandler.enable()  # a crash in native code (DDS, numba) leaves its stacks in the log
    argv = list(sys.argv if args is None else args)
    ros_args = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    if {"-h", "--help"} & set(argv[1:ros_args]):
        print(f"usage: itasc_node [-h] [--ros-args ...]\n\n{__doc__}")
        return 0
    try:
        non_ros_args(argv)  # a missing params file, a malformed --ros-args: one line
        _quiet_init(args)
    except (ItascError, RCLError) as exc:  # a missing params file, a malformed -p
        return _refuse(exc)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    # The handlers stay installed after main returns: a second SIGINT while the node exits
    # (Ctrl-C twice, a supervisor signalling again) must not turn a clean exit with its zero
    # command into a KeyboardInterrupt.
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, on_signal)
    node: ItascNode | None = None
    code = 0
    stopped = False
    try:
        node = ItascNode()
        node.apply_scheduling()
        executor = make_executor()
        executor.add_node(node)
        node.gc.start()  # start-up objects frozen; collections after commands, not in ticks
        spin_until(executor, stop)
        if rclpy.ok():
            stopped = node.stop_smoothly(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ItascError, ParameterException) as exc:  # e.g. control_rate:=5000.0 at start-up
        code = _refuse(exc)
    finally:
        # In order: the node (its threads, then its handles), then the context. A refused
        # start-up never commanded: no zero command (nor its log line) then.
        if node is not None:
            if rclpy.ok() and code == 0:
                node.shutdown_zero(already_stopped=stopped)
            node.destroy_node()
        rclpy.try_shutdown()
    return code


def _refuse(exc: BaseException) -> int:
    """Print the one-line start-up error on stderr; the exit status of a usage error."""
    text = re.sub(r",? at /\S+:\d+", "", str(exc))  # rcl's source locations
    if "parameter override rule" in text:
        text += " (-p takes name:=value, e.g. -p control_rate:=500.0)"
    print(
        f"{NODE_NAME}: error: cannot start: {' '.join(text.split())}", file=sys.stderr, flush=True
    )
    return USAGE_EXIT


def _quiet_init(args: list[str] | None) -> None:
    """``rclpy.init``; what rcl prints on stderr while it refuses the arguments is dropped.

    The caller prints the one-line error instead; on success the output is passed on.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as out:
            os.dup2(out.fileno(), 2)
            try:
                _init(args)
            finally:
                os.dup2(saved, 2)
            out.seek(0)
            os.write(2, out.read())
    finally:
        os.close(saved)


def _init(args: list[str] | None) -> None:
    try:
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):  # pragma: no cover - rclpy without the option
        rclpy.init(args=args)


if __name__ == "__main__":
    raise SystemExit(main())
