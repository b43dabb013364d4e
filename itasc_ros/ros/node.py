"""``itasc_node``: the iTaSC velocity controller as a ROS 2 node (thin adapter of the core).

The control loop's own thread (:class:`~itasc_ros.ros.control_loop.ControlLoop`) ticks on a
grid of control periods (or, with ``control_trigger: joint_states``, on each joint state, with a
watchdog for stale input): it takes the inputs waiting in their DDS readers into a
:class:`~itasc_ros.core.control.Controller`, calls ``step`` and publishes the command.
Everything else (URDF source, parameters, diagnostics, status, markers, enable service, a zero
command on shutdown) runs on the executor beside it and is plumbing around those ten lines, in
layers of one concept each: :mod:`~itasc_ros.ros.node_outputs` (the shared state, commands
outside a tick, shutdown), :mod:`~itasc_ros.ros.node_models` (the URDF sources),
:mod:`~itasc_ros.ros.node_parameters` (live parameter changes),
:mod:`~itasc_ros.ros.node_inputs` (the inputs the tick takes), then this module (the tick on
its own thread, the reports of :mod:`~itasc_ros.ros.node_reports`, ``main``).

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

import math
import signal
import sys
import threading
import time
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.qos import (
    DurabilityPolicy,
    QoSProfile,
    ReliabilityPolicy,
)
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool
from visualization_msgs.msg import MarkerArray

from ..core import (
    ConfigError,
    Controller,
    ItascError,
    Status,
    StepOutput,
)
from ..core.control.health import clip_reason as _clip
from ..core.control.journal import ZeroReason
from ..core.control.model_manager import ModelManager
from ..params import target_topics
from . import parameters as P
from .control_loop import ControlLoop, shorten_switch_interval
from .conversions import (
    COMMAND_TYPES,
)
from .executors import make_executor, spin_until
from .ik_requests import IkRequests
from .journal_publisher import JournalPublisher
from .log_throttle import log_throttled
from .node_inputs import InputNode
from .node_process import quiet_init, refuse, route_warnings
from .node_reports import (
    LoopStats,
    NodeState,
    Rejections,
    diagnostic_array,
    diagnostic_status,
    marker_array,
    status_message,
)
from .node_robots import RobotSet
from .polled_reader import MatchWatch, PolledReader, replaced_count
from .rclpy_compat import RCLError, add_pre_set_parameters_callback, features
from .realtime import apply_realtime, current_policy
from .ros_args import non_ros_args
from .security import log_security
from .slack_gc import SlackCollector
from .swap_times import SwapTimes
from .wire import JointStateWire, pose_stamped_wire, twist_stamped_wire

NODE_NAME = "itasc_node"
DIAGNOSTICS_PERIOD = 0.5  # [s] /diagnostics at 2 Hz
STATUS_PERIOD = 0.1  # [s] ~/status and ~/markers at 10 Hz


class ItascNode(InputNode):
    """The iTaSC node: parameters -> Controller; topics in, velocity commands out.

    Args:
        **kwargs: passed to :class:`rclpy.node.Node` (e.g. ``parameter_overrides``).

    Raises:
        ConfigError: an invalid structural parameter (``command_out_type``...).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        # The ticks run on a thread of their own (start_loop); what another thread changes in
        # the controller, and what it reads from it (its kinematics share one workspace with
        # the tick: a pose computed beside a tick overwrites the link poses it solves with),
        # happens under this lock, between two ticks.
        self._lock = threading.RLock()
        self._swaps = SwapTimes()  # the structural changes built beside the loop
        self._loop = None
        self._worker = None
        self._ik = None
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
        self._models = ModelManager()
        self._command = None  # the installed controller's message
        self._tick_error = ""  # an unexpected exception in the control tick
        self._last_out = None
        self._target_markers = None
        self._publish_markers = bool(P.value(self, "publish_markers"))
        self._rejections = Rejections()
        self._stats = LoopStats()
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.scheduling = "normal"  # set by apply_scheduling
        self.gc = SlackCollector()  # collections in the loop's slack once main() starts it

        self._cmd_pub = self.create_publisher(
            COMMAND_TYPES[self._kind],
            str(P.value(self, "command_out_topic")),
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        self._base_pub = self.create_publisher(  # a commanded base's velocity (base_kind)
            Twist,
            str(P.value(self, "base_cmd_topic")),
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        self._base_msg = Twist()
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._status_pub = self.create_publisher(String, "~/status", 10)
        self._marker_pub = self.create_publisher(MarkerArray, "~/markers", 10)
        self._journal = JournalPublisher(self)  # ~/journal (while subscribed), ~/parameters
        self._journal.publish_parameters(self._parameter_values())
        # Joint states wait in their DDS reader (best effort takes every publisher) for the
        # control loop's thread, as the other inputs do.
        # Taken serialized, read by JointStateWire (a Python JointState message is costly).
        self._joint_reader = PolledReader(
            self, JointState, str(P.value(self, "joint_topic")), reliable=False, raw=True
        )
        self._joint_wire = JointStateWire()
        self._watches: list[MatchWatch] = []  # the joint state readers' (see below)
        # Targets, their twists and jog twists wait in their DDS readers (the latest of each)
        # until the tick takes them: a flood costs the loop nothing (see polled_reader).
        self._readers = []
        for name, (pose_topic, twist_topic) in target_topics(self._config).items():
            pose = PolledReader(self, PoseStamped, pose_topic, raw=True)
            twist = PolledReader(self, TwistStamped, twist_topic, raw=True)
            self._readers.append((name, pose, pose_stamped_wire()))
            self._readers.append((name, twist, twist_stamped_wire()))
        self._jog_reader = PolledReader(self, TwistStamped, "~/delta_twist_cmds", raw=True)
        self._jog_wire = twist_stamped_wire()
        # Several robots (robots): their joint states merged, their commands split.
        names = [str(r) for r in P.value(self, "robots")]
        self._robots = (
            RobotSet(self, names, self._kind, self._on_robots_description) if names else None
        )
        # The base's odometry in world_frame (best effort takes every publisher).
        self._odom_reader = PolledReader(
            self, Odometry, str(P.value(self, "odom_topic")), reliable=False
        )
        self._joint_in: tuple[bytes, float] | None = None  # taken, not yet applied
        self._marker_in: dict[str, tuple[PoseStamped, float, bool]] = {}  # RViz, by name
        # Position IK on request, solved in a thread of its own (never in the control tick).
        self._ik = IkRequests(self, lambda: self._controller, lock=self._lock)
        self.create_service(SetBool, "~/enable", self._on_enable)
        self._type_errors: dict[str, str] = {}  # of the request being set (see below)
        add_pre_set_parameters_callback(self, self._before_set_parameters)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        # URDF sources: the parameter, else the topic, else the file. The topic is always
        # listened to, so that a node whose parameter or file was rejected at start-up still
        # takes a good URDF from it (it stays idle until then).
        description = str(P.value(self, "robot_description"))
        path = str(P.value(self, "urdf_file"))
        if self._robots is not None:  # the robots' own URDFs, composed (no other source)
            self._load_robots(self._robots)
        elif description:
            self._load_urdf(description, "parameter")
        elif path:
            # A file that cannot be opened ends the start-up (ConfigError); one that is read
            # but rejected leaves the node idle, waiting for a good URDF on the topic.
            self._load_file(path, must_open=True)
        if self._robots is None:
            self._listen_to_robot_description()
        if self._controller is None and self._robots is None:
            self.get_logger().info(
                "no model: waiting for a URDF on the robot_description topic (no command "
                "is published until then)"
            )

        # ~/status, ~/markers and /diagnostics run right after a tick's command (see
        # _housekeeping); this timer runs them only while the loop does not tick.
        self._status_due = self._diagnostics_due = 0.0  # [s] time.monotonic()
        self.create_timer(STATUS_PERIOD, self._on_housekeeping_timer, clock=self._wall)

    def _listen_to_robot_description(self) -> None:
        """The robot_description topic (robot_state_publisher's, transient local)."""
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
    def start_loop(self) -> None:
        """Start the control loop's thread (after :meth:`apply_scheduling`: it inherits it)."""
        joint_states = None
        if self._trigger == P.TRIGGER_JOINT_STATES:  # several robots: the first one's wake
            reader = self._joint_reader if self._robots is None else self._robots.readers[0]
            joint_states = (reader, self._take_joint_state)
        self._loop = ControlLoop(
            self.context,
            self._on_tick,
            1.0 / self._config.control_rate,
            joint_states,
            self._config.input_timeout,
            self._on_loop_error,
        )
        self._loop.start()

    def _on_loop_error(self, exc: Exception) -> None:
        """A tick let an exception out (outside the step, which has its own): as a failed step.

        The command ramps to zero within the motion limits, the error is logged and reported;
        the loop goes on ticking.
        """
        ctrl = self._controller
        if ctrl is not None:
            with self._lock:
                self._on_tick_error(ctrl, exc)
        else:
            self._tick_error = _clip(f"control tick failed: {type(exc).__name__}: {exc}")
            log_throttled(self.get_logger(), "error", "tick failed", self._tick_error, 1.0)

    def stop_loop(self) -> None:
        """Stop the control loop's thread (the last tick ends first)."""
        if self._loop is not None:
            self._loop.stop()

    @property
    def _last_tick(self) -> float:
        """``time.monotonic()`` of the last tick [s] (-inf before the first)."""
        return -math.inf if self._loop is None else self._loop.last_tick

    def _on_tick(self) -> None:
        """One control tick: latest inputs -> core -> command; then the periodic jobs."""
        with self._lock:
            self._control()
            self._housekeeping(time.monotonic())

    def _housekeeping(self, t: float) -> None:
        """The jobs due after a command: garbage, topic targets' RViz markers, status, diagnostics.

        ``~/status`` and ``~/markers`` every :data:`STATUS_PERIOD`, ``/diagnostics`` every
        :data:`DIAGNOSTICS_PERIOD`.

        Run right after a command is published, not from free-running timers: a timer that
        fires just before a joint state arrives delays that tick by its work (~0.1-0.4 ms of
        message building), a late command at 1 kHz. The same for the garbage collector (see
        :mod:`itasc_ros.ros.slack_gc`, started by :func:`main`).

        Args:
            t: ``time.monotonic()`` [s].
        """
        self.gc.collect()  # a collection that is due, here rather than inside the next tick
        if self._target_markers is not None:  # the markers of topic targets, once sent
            self._target_markers.follow_marked(t)
        if t >= self._status_due:
            self._status_due = t + STATUS_PERIOD
            self._on_status()
        if t >= self._diagnostics_due:
            self._diagnostics_due = t + DIAGNOSTICS_PERIOD
            self._watch_joint_readers(t)
            self._on_diagnostics()

    def _watch_joint_readers(self, t: float) -> None:
        """Renew a joint state reader DDS never matched with the graph's publishers."""
        if not self._watches:
            readers = [self._joint_reader] if self._robots is None else self._robots.readers
            self._watches = [MatchWatch(self, r) for r in readers]
        for watch in self._watches:
            warning = watch.check(t)
            if warning:
                self.get_logger().warning(warning)

    def _on_housekeeping_timer(self) -> None:
        """Install the topic's parsed URDFs; the periodic jobs while the loop does not tick."""
        self._install_parsed()
        t = time.monotonic()
        if t - self._last_tick > STATUS_PERIOD:
            with self._lock:
                self._take_inputs(self._read_clock()[1])  # targets held, joint states kept
                self._housekeeping(t)

    def _control(self) -> None:
        t0 = time.perf_counter()
        now, sim_offset = self._read_clock()  # one reading of the clock per tick
        self._take_inputs(sim_offset)
        ctrl, cmd = self._controller, self._command
        if ctrl is None or cmd is None:
            return
        self._journal.sync(ctrl, self._models.digest)
        try:
            out = ctrl.step(now)
        except Exception as exc:  # a bug must not kill the node with the last command held
            self._on_tick_error(ctrl, exc)
            return
        self._tick_error = ""
        if out.publish:
            self._send(ctrl, cmd, out.q, out.qdot, now)
        self._journal.flush(now)
        last = self._last_out
        if last is None or out.status != last.status or out.held != last.held:
            self._log_transition(out)
        if out.shortfall:
            log_throttled(self.get_logger(), "warning", "not followed", out.shortfall, 2.0)
        self._last_out = out
        self._stats.add(time.perf_counter() - t0, out.result is not None)

    def _log_transition(self, out: StepOutput) -> None:
        """One log line per change of the control status (active, stale, fault, ...)."""
        text = f"control {out.status}" + (f": {out.reason}" if out.reason else "")
        if out.status in (Status.STALE, Status.FAULT) or out.held:
            self.get_logger().warning(text + (" (zero command sent)" if out.publish else ""))
        else:
            self.get_logger().info(text)

    def _on_tick_error(self, ctrl: Controller, exc: Exception) -> None:
        """An unexpected exception in ``step``: ramp the command down, log, report, keep running.

        Every tick that fails sends the next step of the open-loop ramp to zero (within the
        motion limits; one zero without them), until the robot is commanded to rest.
        """
        self._publish_ramp(ctrl, ZeroReason.TICK_ERROR)
        if not self._tick_error:
            self.get_logger().error(
                f"control step failed, ramping the command to zero: {type(exc).__name__}: {exc}"
            )
        self._tick_error = _clip(f"control step failed: {type(exc).__name__}: {exc}")

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> Any:
        with self._lock:
            self._models.set_enabled(bool(request.data))
        response.success = True
        ctrl = self._controller
        if request.data:
            response.message = "enabled" if ctrl is not None else "enabled (no model yet)"
        elif ctrl is not None and ctrl.motion_limited:
            response.message = (
                "disabled: the command ramps to zero within the motion limits, then silence"
            )
        else:
            response.message = "disabled: one zero command, then silence"
        self.get_logger().info(response.message)
        return response

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
            stamp = self.get_clock().now().to_msg()
            self._marker_pub.publish(marker_array(ctrl, self._last_out, stamp))

    def _state(self) -> NodeState:
        """The node's state as the reports read it."""
        return NodeState(
            ctrl=self._controller,
            out=self._last_out,
            models=self._models,
            stats=self._stats,
            rejections=self._rejections,
            control_rate=self._config.control_rate,
            trigger=self._trigger,
            timer_trigger=self._trigger == P.TRIGGER_TIMER,
            tick_error=self._tick_error,
        )

    def _publish_status(self) -> None:
        self._status_pub.publish(status_message(self._state()))

    def _on_diagnostics(self) -> None:
        self._stats.close_window(time.monotonic())
        status = diagnostic_status(
            f"{self.get_name()}: controller",
            self._state(),
            self._now(),
            self.scheduling,
            [
                ("gc_collections", "/".join(map(str, self.gc.collections))),
                ("inputs_replaced_before_taken", replaced_count(self.readers())),
                ("ik_requests_unanswered", "0" if self._ik is None else self._ik.unanswered),
                *self._swaps.values(),
            ],
            [
                ("journal_subscribers", self._journal.subscribers),
                ("parameters_revision", self._journal.revision),
            ],
        )
        self._diag_pub.publish(diagnostic_array(status, self.get_clock().now().to_msg()))


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
        quiet_init(args)
    except (ItascError, RCLError) as exc:  # a missing params file, a malformed -p
        return refuse(NODE_NAME, exc)
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
    route_warnings(rclpy.logging.get_logger(NODE_NAME))  # e.g. while the model loads
    try:
        node = ItascNode()
        route_warnings(node.get_logger())
        log_security(node.get_logger(), argv)
        node.apply_scheduling()
        executor = make_executor()
        executor.add_node(node)
        node.get_logger().info(
            f"rclpy: {type(executor).__name__}; "
            + ", ".join(
                f"{k.replace('_', ' ')}: {'yes' if v else 'no'}" for k, v in features().items()
            )
        )
        node.gc.start()  # start-up objects frozen; collections after commands, not in ticks
        shorten_switch_interval()  # the loop's thread waits for the executor's at most this
        node.start_loop()
        spin_until(executor, stop)
        if rclpy.ok():
            stopped = node.stop_smoothly(executor)
        node.stop_loop()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ItascError, ParameterException) as exc:  # e.g. control_rate:=5000.0 at start-up
        code = refuse(NODE_NAME, exc)
    finally:
        # In order: the node (its threads, then its handles), then the context. A refused
        # start-up never commanded: no zero command (nor its log line) then.
        if node is not None:
            if rclpy.ok() and code == 0:
                node.shutdown_zero(already_stopped=stopped)
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
