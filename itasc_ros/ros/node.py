"""``itasc_node``: the iTaSC velocity controller as a ROS 2 node (thin adapter of the core).

Subscription callbacks push joint states and targets into a
:class:`~itasc_ros.core.controller.Controller`; a wall-rate timer calls ``step`` and publishes
the command (or, with ``control_trigger: joint_states``, each joint state does, and the timer is
a watchdog for stale input). Everything else (URDF source, parameters, diagnostics, status,
markers, enable service, a zero command on shutdown) is plumbing around those ten lines.

Run: ``ros2 run itasc_ros itasc_node --ros-args --params-file config/panda.yaml -p
robot_description:="$(cat urdf/panda.urdf)"`` (or ``python -m itasc_ros.ros.node``).
"""

from __future__ import annotations

import hashlib
import json
import math
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
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

from ..core import (
    ConfigError,
    Controller,
    ControllerConfig,
    InputError,
    ItascError,
    KinematicTree,
    StepOutput,
    spatial,
)
from ..core.controller import apply_updates
from ..core.urdf import MAX_URDF_BYTES
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
from .markers import TargetMarkers, replace_target_markers
from .realtime import apply_realtime, current_policy, demote_current_thread
from .slack_gc import SlackCollector

NODE_NAME = "itasc_node"
DIAGNOSTICS_PERIOD = 0.5  # [s] /diagnostics at 2 Hz
STATUS_PERIOD = 0.1  # [s] ~/status and ~/markers at 10 Hz
WATCHDOG_PERIOD = 0.01  # [s] control_trigger joint_states: the stale-input check (100 Hz)
REJECTION_MEMORY = 2.0  # [s] a rejected input keeps the diagnostic at WARN this long
MAX_REASON_CHARS = 1000  # longest reason shown in /diagnostics and ~/status [characters]

_COLOURS = {  # state -> RGBA of the markers
    "tracking": (0.1, 0.8, 0.1, 1.0),  # green
    "limited": (0.95, 0.8, 0.1, 1.0),  # yellow: velocity scaled or a joint at its limit
    "singular": (1.0, 0.45, 0.0, 1.0),  # orange: damping on (sigma_min < damping_epsilon)
    "stale": (0.5, 0.5, 0.5, 1.0),  # grey: waiting, stale inputs or disabled: no motion
    "fault": (0.9, 0.1, 0.1, 1.0),  # red: the solve failed
}


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


def _clip(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters for a log line or a diagnostic."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _digest(xml: str | bytes) -> str:
    """A fingerprint of a URDF document (to skip reloading the same one)."""
    data = xml.encode("utf-8", errors="surrogatepass") if isinstance(xml, str) else xml
    return hashlib.sha256(data).hexdigest()


_SAME = "the URDF of the installed model"  # a worker result: nothing to parse or install


def _parse(xml: str | bytes) -> tuple[KinematicTree | None, str]:
    """``(tree, '')`` or ``(None, why)``: never raises (a URDF is untrusted input)."""
    try:
        return KinematicTree.from_urdf(xml), ""
    except ItascError as exc:
        return None, str(exc)
    except Exception as exc:  # e.g. MemoryError: a hostile URDF must not kill the node
        return None, f"internal error while parsing: {type(exc).__name__}: {exc}"


class _UrdfWorker:
    """Parses URDFs from the topic in a thread, so that the control loop keeps ticking.

    A URDF near the size limits takes up to about a second to parse; meanwhile the executor
    keeps running the timer (ros2_control would otherwise hold the last command that long).
    Only the latest request is kept (the topic has depth 1). Results ``(source, digest, tree,
    why)`` are picked up by :meth:`ItascNode._on_tick` on the executor thread; a document whose
    digest is ``current()`` (the installed model's) is not parsed again: ``why`` is
    :data:`_SAME`.

    Args:
        current: the digest of the installed model's URDF ('' for none).
    """

    def __init__(self, current: Callable[[], str]) -> None:
        self._current = current
        self._cv = threading.Condition()
        self._request: tuple[str, str] | None = None  # (xml, source)
        self._closed = False
        self.results: deque[tuple[str, str, KinematicTree | None, str]] = deque()
        self._thread = threading.Thread(target=self._run, name="itasc_urdf_parser", daemon=True)
        self._thread.start()

    def submit(self, xml: str, source: str) -> None:
        """Parse ``xml`` (replacing a request not yet started)."""
        with self._cv:
            self._request = (xml, source)
            self._cv.notify()

    def close(self) -> None:
        """Stop the thread (a parse in progress finishes first, up to 1 s is waited)."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._thread.join(1.0)

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._request is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                request, self._request = self._request, None
            if request is None:
                continue
            xml, source = request
            del request
            demote_current_thread()  # a long parse must not hold a real-time core
            digest = _digest(xml)
            if digest == self._current():
                self.results.append((source, digest, None, _SAME))
            else:
                tree, why = _parse(xml)
                self.results.append((source, digest, tree, why))
            del xml


class ItascNode(Node):
    """The iTaSC node: parameters -> Controller; topics in, velocity commands out.

    Args:
        **kwargs: passed to :class:`rclpy.node.Node` (e.g. ``parameter_overrides``).

    Raises:
        ConfigError: an invalid structural parameter (``command_out_type``...).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._constraint_names = P.declare_parameters(self)
        self._kind = str(P.value(self, "command_out_type"))
        if self._kind not in COMMAND_TYPES:
            raise ConfigError(
                f"command_out_type {self._kind!r} is not one of: " + ", ".join(COMMAND_TYPES)
            )
        # The configuration from the parameters (links left empty stay empty: each model
        # resolves them anew, e.g. the effector of a new robot's URDF).
        self._trigger = str(P.value(self, "control_trigger"))
        if self._trigger not in P.TRIGGERS:
            raise ConfigError(
                f"control_trigger {self._trigger!r} is not one of: " + ", ".join(P.TRIGGERS)
            )
        self._config = P.read_config(self)  # validates the constraints' settings
        self._controller: Controller | None = None
        self._command: CommandMessage | None = None
        self._urdf_source = ""
        self._urdf_digest = ""  # of the installed model's URDF
        self._urdf_error = ""  # why the latest URDF was not installed ('' when it was)
        self._urdf_rejections = 0
        self._tick_error = ""  # an unexpected exception in the control tick
        self._worker: _UrdfWorker | None = None
        self._last_out: StepOutput | None = None
        # (names, positions, header stamp or None, reception time [s]) of the last joint state
        self._last_js: tuple[Sequence[str], Any, float | None, float] | None = None
        self._pending_targets: dict[str, PoseStamped] = {}
        self._target_markers: TargetMarkers | None = None
        self._enabled = True
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
        self.create_subscription(
            JointState,
            str(P.value(self, "joint_topic")),
            self._on_joint_state,
            qos_profile_sensor_data,
        )
        first = True
        for c in self._config.constraints:
            if not c.takes_target:
                continue
            pose_topic = c.target_topic or (
                "~/target_pose" if first else f"~/{c.name}/target_pose"
            )
            twist_topic = c.twist_topic or (
                "~/target_twist" if first else f"~/{c.name}/target_twist"
            )
            self.create_subscription(PoseStamped, pose_topic, self._target_cb(c.name), 10)
            self.create_subscription(TwistStamped, twist_topic, self._twist_cb(c.name), 10)
            first = False
        self.create_service(SetBool, "~/enable", self._on_enable)
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
        self._next_tick = -math.inf  # [s] joint_states trigger: when the next tick is due
        self._period = self._watchdog_gap = 0.0  # [s] set by _set_rate
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
        try:
            out = ctrl.step(now)
        except Exception as exc:  # a bug must not kill the node with the last command held
            self._on_tick_error(ctrl, exc)
            return
        self._tick_error = ""
        if out.publish:
            self._cmd_pub.publish(cmd.fill(out.q, out.qdot, ctrl.period, now))
        if self._last_out is None or out.status != self._last_out.status:
            self._log_transition(out)
        self._last_out = out
        self._stats.add(time.perf_counter() - t0, out.result is not None)

    def _log_transition(self, out: StepOutput) -> None:
        """One log line per change of the control status (active, stale, fault, ...)."""
        text = f"control {out.status}" + (f": {out.reason}" if out.reason else "")
        if out.status in ("stale", "fault"):
            self.get_logger().warning(text + (" (zero command sent)" if out.publish else ""))
        else:
            self.get_logger().info(text)

    def _on_tick_error(self, ctrl: Controller, exc: Exception) -> None:
        """An unexpected exception in ``step``: zero command once, log, report, keep running."""
        if not self._tick_error:
            self._publish_zero(ctrl, wait=0.0)
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
        digest = _digest(xml)
        ctrl = self._controller
        if ctrl is None or not ctrl.commanding:
            tree, why = _parse(xml)
        else:  # the control loop waits for the parse: stop the robot if that takes a while
            parsed: list[tuple[KinematicTree | None, str]] = []
            thread = threading.Thread(target=lambda: parsed.append(_parse(xml)), daemon=True)
            thread.start()
            thread.join(2.0 * ctrl.period)
            if thread.is_alive():
                self._publish_zero(ctrl, wait=0.0)
                thread.join()
            tree, why = parsed[0]
        return self._take_parsed(source, digest, tree, why, refuse, config)

    def _load_file(
        self, path: str, refuse: bool = False, config: ControllerConfig | None = None
    ) -> str:
        """Load ``path`` as the URDF (the lowest-precedence source). Returns '' or why not."""
        try:
            with open(path, "rb") as fh:  # bytes: the XML declaration names the encoding
                data = fh.read(MAX_URDF_BYTES + 1)
        except OSError as exc:
            return self._reject_urdf("file", f"cannot read urdf_file {path!r}: {exc}", refuse)
        if len(data) > MAX_URDF_BYTES:
            why = f"urdf_file {path!r} is larger than the {MAX_URDF_BYTES} bytes accepted"
            return self._reject_urdf("file", why, refuse)
        return self._load_urdf(data, "file", refuse, config)

    def _on_robot_description(self, msg: String) -> None:
        if self._urdf_source == "parameter":
            self.get_logger().info(
                "robot_description topic ignored: the robot_description parameter is set",
                once=True,
            )
            return
        if self._worker is None:
            self._worker = _UrdfWorker(
                lambda: self._urdf_digest if self._controller is not None else ""
            )
        self._worker.submit(msg.data, "topic")  # installed by the next tick once parsed

    def _same_urdf(self, source: str) -> str:
        """The URDF of the installed model came again: nothing to rebuild."""
        if self._urdf_error:
            self.get_logger().info(f"URDF from the {source} is the current model's again")
        self._urdf_error = ""
        return ""

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

        A URDF that does not parse keeps the current model (a transient bad publish). A URDF
        that parses but does not fit the configuration (``joints`` or a constraint's link not
        in it) means the robot changed: the current model is dropped too (zero command once,
        then none) until a fitting URDF arrives. With ``refuse`` neither happens.
        """
        if source == "topic" and self._urdf_source == "parameter":
            return ""  # the parameter was set while the topic's URDF was parsed: it wins
        if why == _SAME:
            return self._same_urdf(source) if digest == self._urdf_digest else ""
        if tree is None:
            return self._reject_urdf(source, why, refuse)
        try:
            ctrl = Controller(tree, self._config if config is None else config)
        except ItascError as exc:
            why = f"robot {tree.name!r} does not fit the configuration: {exc}"
            return self._reject_urdf(source, why, refuse, drop=True)
        except Exception as exc:  # defensive: no URDF may kill the node
            why = f"robot {tree.name!r}: internal error: {type(exc).__name__}: {exc}"
            return self._reject_urdf(source, why, refuse, drop=True)
        self._urdf_digest = digest
        self._urdf_error = ""
        self._install(ctrl, source)
        return ""

    def _reject_urdf(self, source: str, why: str, refuse: bool = False, drop: bool = False) -> str:
        """Log and report a rejected URDF; with ``drop``, also go idle. Returns the reason.

        With ``refuse`` (a refused parameter change) only the log and the returned reason.
        """
        self._urdf_rejections += 1
        old = self._controller
        if refuse:
            reason = _clip(f"URDF from the {source} refused, nothing changed: {why}")
            self.get_logger().error(reason)
            return reason
        if old is not None and drop:
            if old.commanding:
                self._publish_zero(old, wait=0.0)
            self._controller = None
            self._command = None
            self._last_out = None
            self._urdf_digest = ""
            self._urdf_source = ""
            if self._target_markers is not None:
                self._target_markers.shutdown()
                self._target_markers = None
            state = f"model {old.tree.name!r} dropped, no command until a fitting URDF arrives"
        elif old is not None:
            state = f"keeping model {old.tree.name!r}"
        else:
            state = "no model, no command until a good URDF arrives"
        reason = _clip(f"URDF from the {source} rejected ({state}): {why}")
        self._urdf_error = reason
        self.get_logger().error(reason)
        return reason

    def _install(self, ctrl: Controller, source: str) -> None:
        old = self._controller
        if old is not None and old.commanding and self._command is not None:
            self._publish_zero(old, wait=0.0)
        ctrl.set_enabled(self._enabled)
        if self._last_js is not None:
            # With its own reception time: a state from before a long parse is stale, and the
            # next fresh state re-anchors the stamp order (replayed as received now, it was
            # the anchor, and the fresh states "leapt ahead" of it for input_timeout).
            names, pos, src, received = self._last_js
            try:
                ctrl.set_joint_state(names, pos, received, src)
            except InputError:
                pass
        if old is not None and old.tree.root_link == ctrl.tree.root_link:
            # Targets are poses in the root frame: carried over to a model of the same robot
            # (not to another robot, for which they mean nothing).
            for name in old.pose_constraints:
                _, target = old.poses(name)
                if target is None or name not in ctrl.pose_constraints:
                    continue
                try:
                    ctrl.set_target(
                        name,
                        "",
                        target[:3, 3],
                        spatial.matrix_to_quat(target),
                        old.target_stamp(name),
                    )
                except InputError as exc:  # e.g. beyond the new model's reach: not carried
                    self.get_logger().warning(f"target of {name!r} not carried over: {exc}")
        self._command = CommandMessage(self._kind, ctrl.joint_names)
        self._controller = ctrl
        self._last_out = None
        pending, self._pending_targets = self._pending_targets, {}
        for name, msg in pending.items():
            self._on_marker_pose(name, msg)
        self._urdf_source = source
        self._target_markers = replace_target_markers(  # RViz drag-able targets
            self,
            ctrl,
            self._target_markers,
            bool(P.value(self, "interactive_marker")),
        )
        self.get_logger().info(
            f"model '{ctrl.tree.name}' from the {source}: joints {ctrl.joint_names}, "
            f"constraints {[c.name for c in ctrl.config.constraints]}"
        )

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
        self._last_js = (names, pos, src, now)  # kept for a controller rebuilt on a new URDF
        if self._trigger == P.TRIGGER_JOINT_STATES:
            # Tick unless the state comes more than half a period before the next tick is due:
            # at most control_rate on average, every state when they come slower.
            t, half = time.monotonic(), 0.5 * self._period
            if t >= self._next_tick - half:
                self._next_tick = max(self._next_tick + self._period, t + half)
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
            self._pending_targets[name] = pose_stamped  # applied once a model is loaded
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

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> Any:
        self._enabled = bool(request.data)
        if self._controller is not None:
            self._controller.set_enabled(self._enabled)
        response.success = True
        response.message = "enabled" if self._enabled else "disabled: zero command sent once"
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------------- parameters
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        """Apply a set-parameters request whole, or refuse it with the reason; never raises.

        rclpy has already refused wrong types, values outside the declared ranges and
        read-only parameters. Everything else goes through the same validation as at start-up
        (:meth:`ControllerConfig.validate`, then building the controller), before anything
        changes.
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
        if description:  # a new model, built with the new configuration
            reason = self._load_urdf(description, "parameter", refuse=True, config=config)
        elif urdf_file and self._urdf_source in ("", "file"):
            reason = self._load_file(urdf_file, refuse=True, config=config)
        elif updates and self._controller is not None:
            try:  # all or nothing: the controller changes only when the new scene is built
                self._controller.update_parameters(**updates)
                reason = ""
            except ItascError as exc:
                reason = str(exc)
        else:
            reason = ""
        if reason:
            return reason
        self._config = config
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
        self._period = 1.0 / rate  # [s]
        self._watchdog_gap = 2.0 / rate  # [s] joint_states trigger: watchdog's shortest gap
        period_ns = int(1e9 * self._timer_period(rate))
        if self._timer.timer_period_ns != period_ns:
            self._timer.timer_period_ns = period_ns

    # ------------------------------------------------------------------------- outputs
    def _publish_zero(self, ctrl: Controller, wait: float = 0.5) -> bool:
        """Publish a zero command (JointTrajectory needs a joint state); wait for delivery."""
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        zeros = np.zeros(ctrl.n_joints)
        self._cmd_pub.publish(cmd.fill(ctrl.q, zeros, ctrl.period, self._now()))
        if wait > 0.0:
            try:
                self._cmd_pub.wait_for_all_acked(Duration(seconds=wait))
            except Exception:  # older rmw: give DDS a moment instead
                time.sleep(min(wait, 0.2))
        return True

    def destroy_node(self) -> None:
        """Stop the URDF parser thread, then destroy the node."""
        if self._worker is not None:
            self._worker.close()
        super().destroy_node()

    def shutdown_zero(self, wait: float = 1.0) -> bool:
        """Publish a zero command before exit (ros2_control holds the last command)."""
        if self._controller is None:
            return False
        sent = self._publish_zero(self._controller, wait)
        if sent:
            self.get_logger().info("shutdown: zero command sent")
        return sent

    def _status_colour(self, out: StepOutput | None) -> str:
        """The markers' state: tracking, limited, singular, stale or fault (see _COLOURS)."""
        if out is None or out.status in ("waiting", "stale", "disabled"):
            return "stale"
        if out.status == "fault":
            return "fault"
        r = out.result
        if r is not None and r.damping > 0.0:
            return "singular"
        if r is not None and (r.velocity_scale < 1.0 or bool(r.locked.any())):
            return "limited"
        return "tracking"

    def _on_status(self) -> None:
        # Only for listeners: building and converting these messages takes ~0.5 ms, a late
        # control tick at 1 kHz when nobody looks (no RViz, no ``ros2 topic echo``).
        want_status = self._status_pub.get_subscription_count() > 0
        want_markers = self._publish_markers and self._marker_pub.get_subscription_count() > 0
        if want_status:
            self._publish_status()
        ctrl = self._controller
        if want_markers and ctrl is not None and ctrl.has_joint_state:
            self._marker_pub.publish(self._markers(ctrl, self._last_out, self._now()))

    def _publish_status(self) -> None:
        ctrl, out = self._controller, self._last_out
        info: dict[str, Any] = {
            "status": "no_model" if ctrl is None else (out.status if out else "waiting"),
            "reason": (self._urdf_error or "no URDF yet")
            if ctrl is None
            else (out.reason if out else ""),
            "enabled": self._enabled,
            "loop_rate": round(self._diag["rate"], 1),
            "rejections": self._rejections,
            "last_rejection": self._last_rejection,
            "urdf_error": self._urdf_error,
            "urdf_rejections": self._urdf_rejections,
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
        colour.r, colour.g, colour.b, colour.a = _COLOURS[self._status_colour(out)]
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
        ctrl, out = self._controller, self._last_out
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
            ("urdf_source", self._urdf_source or "none"),
            ("enabled", self._enabled),
            ("rejections", self._rejections),
            ("last_rejection", self._last_rejection),
            ("urdf_rejections", self._urdf_rejections),
            ("urdf_error", self._urdf_error),
        ]
        level, message = DiagnosticStatus.OK, "tracking"
        if ctrl is None:
            if self._urdf_error:  # idle because of a bad URDF: an error to fix
                level, message = DiagnosticStatus.ERROR, self._urdf_error
            else:
                level, message = (
                    DiagnosticStatus.WARN,
                    "no URDF yet: waiting for robot_description",
                )
        else:
            values.append(("joint_state_age_s", _age(now, ctrl.joint_state_stamp)))
            for name in ctrl.pose_constraints:
                values += [
                    (f"target_age_s.{name}", _age(now, ctrl.target_stamp(name))),
                    (f"target_jumps.{name}", ctrl.target_jumps(name)),
                    (f"target_twists_capped.{name}", ctrl.target_twists_capped(name)),
                ]
            if out is not None:
                values.append(("status", out.status))
                message = out.status if not out.reason else f"{out.status}: {out.reason}"
                if out.status == "stale":
                    level = DiagnosticStatus.WARN
                elif out.status == "fault":
                    level = DiagnosticStatus.ERROR
                r = out.result
                if r is not None:
                    values += [
                        ("sigma_min", f"{r.sigma_min:.5f}"),
                        ("damping", f"{r.damping:.5f}"),
                        ("locked_joints", ", ".join(r.locked_joints)),
                        ("velocity_scale", f"{r.velocity_scale:.4f}"),
                    ]
            if (
                self._trigger == P.TRIGGER_TIMER
                and self._diag["rate"] < 0.9 * self._config.control_rate
            ):
                level = max(level, DiagnosticStatus.WARN)
                message += f"; loop at {self._diag['rate']:.0f} Hz"
            if self._urdf_error:  # running on the last good model
                level = max(level, DiagnosticStatus.WARN)
                message = f"{self._urdf_error}; {message}"
        if t - self._last_rejection_time < REJECTION_MEMORY:
            level = max(level, DiagnosticStatus.WARN)
            message = f"input rejected: {self._last_rejection}; {message}"
        if self._tick_error:
            level = DiagnosticStatus.ERROR
            message = f"{self._tick_error}; {message}"
        status.level = level
        status.message = message
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(array)


def _age(now: float, stamp: float) -> str:
    return "never" if not math.isfinite(stamp) else f"{now - stamp:.3f}"


def main(args: list[str] | None = None) -> int:
    """Run the node until SIGINT/SIGTERM; publish a zero command before exiting."""
    try:
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):  # pragma: no cover - rclpy without the option
        rclpy.init(args=args)
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
    try:
        node = ItascNode()
        node.apply_scheduling()
        executor = make_executor()
        executor.add_node(node)
        node.gc.start()  # start-up objects frozen; collections after commands, not in ticks
        spin_until(executor, stop)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ItascError, ParameterException) as exc:  # e.g. control_rate:=5000.0 at start-up
        rclpy.logging.get_logger(NODE_NAME).fatal(f"cannot start: {exc}")
        code = 1
    finally:
        if node is not None:
            if rclpy.ok():
                node.shutdown_zero()
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
