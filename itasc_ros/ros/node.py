"""``itasc_node``: the iTaSC velocity controller as a ROS 2 node (thin adapter of the core).

The control loop's own thread (:class:`~itasc_ros.ros.control_loop.ControlLoop`) ticks on a
grid of control periods (or, with ``control_trigger: joint_states``, on each joint state, with a
watchdog for stale input): it takes the inputs waiting in their DDS readers into a
:class:`~itasc_ros.core.control.Controller`, calls ``step`` and publishes the command.
Everything else (URDF source, parameters, diagnostics, status, markers, enable service, a zero
command on shutdown) runs on the executor beside it and is plumbing around those ten lines, in
parts of one concept each, which :class:`ItascNode` (the only rclpy ``Node``) builds and wires
in :meth:`ItascNode._build`: :class:`~itasc_ros.ros.node_inputs.NodeInputs` (the inputs the
tick takes, the RViz target markers), :class:`~itasc_ros.ros.node_outputs.NodeOutputs` (the
commands, outside a tick too, and shutdown), :class:`~itasc_ros.ros.node_models.ModelSource`
(the URDF sources and model changes), :class:`~itasc_ros.ros.node_parameters.NodeParameters`
(live parameter changes) and :class:`~itasc_ros.ros.node_reports.NodeReports` (status,
diagnostics, markers). This module has the tick on its own thread and ``main``.

Usage::

    ros2 run itasc_ros itasc_node [-h] [--ros-args --params-file my_itasc.yaml -p ...]
    ros2 run itasc_ros itasc_node --ros-args --params-file config/panda.yaml -p urdf_file:=my.urdf
    python -m itasc_ros.ros.itasc_node --ros-args ...

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

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped
from numpy.typing import NDArray
from rclpy.clock import Clock, ClockType
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import SetBool

from ..core import (
    ConfigError,
    Controller,
    ControllerConfig,
    ItascError,
    Status,
    StepOutput,
)
from ..core.control.health import clip_reason as _clip
from ..core.control.journal import ZeroReason
from ..core.control.model_manager import ModelManager
from . import parameters as P
from .control_loop import ControlLoop, shorten_switch_interval
from .executors import make_executor, spin_until
from .exit_deadline import ExitDeadline
from .ik_requests import IkRequests
from .journal_publisher import JournalPublisher
from .log_throttle import log_throttled
from .node_inputs import NodeInputs
from .node_models import ModelSource
from .node_outputs import STOP_TIMEOUT, NodeOutputs, read_clock
from .node_parameters import NodeParameters, parameter_values
from .node_process import quiet_init, refuse, route_warnings
from .node_reports import STATUS_PERIOD, LoopStats, NodeReports, NodeState
from .node_robots import RobotSet
from .polled_reader import PolledReader, replaced_count
from .rclpy_compat import RCLError, add_pre_set_parameters_callback, features
from .realtime import apply_realtime, current_policy
from .ros_args import non_ros_args
from .security import log_security
from .slack_gc import SlackCollector
from .swap_times import SwapTimes

NODE_NAME = "itasc_node"
#: Longest teardown after a stop is asked [s]: longer than all its bounded waits together (the
#: controlled stop, the zero command's delivery, the threads' joins); past it the process dumps
#: every thread's stack to its log and exits with status 1.
EXIT_WATCHDOG = 20.0
#: Longest teardown of the node's DDS resources once its last command is sent [s] (the executor,
#: the node's handles, the context): past it the process writes why on stderr and ends with the
#: status it would have had (:class:`~.exit_deadline.ExitDeadline`, which runs while a native
#: call keeps the GIL: a DDS deadlock when many participants leave at once).
TEARDOWN_DEADLINE = 5.0

Array = NDArray[np.float64]


class ItascNode(Node):
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
        # happens under this lock, between two ticks. Every part below is given it.
        self._lock = threading.RLock()
        self._swaps = SwapTimes()  # the structural changes built beside the loop
        self._loop: ControlLoop | None = None
        try:
            self._build()
        except BaseException:
            self.destroy_node()  # a refused start-up: its handles go before rclpy shuts down
            raise

    def _build(self) -> None:
        """Parameters, the node's parts and how they are wired, the URDF, the timer."""
        P.declare_parameters(self)
        kind = str(P.value(self, "command_out_type"))  # choices checked when declared
        self._trigger = str(P.value(self, "control_trigger"))
        # The configuration from the parameters (links left empty stay empty: each model
        # resolves them anew, e.g. the effector of a new robot's URDF).
        config = P.read_config(self)  # validates the constraints' settings
        # The installed controller, its URDF, ~/enable, the inputs kept for the next model:
        # every part reads the installed controller from here.
        self._models: ModelManager[PoseStamped] = ModelManager()
        self._tick_error = ""  # an unexpected exception in the control tick
        self._last_out: StepOutput | None = None  # the last tick's output
        self._stats = LoopStats()
        self.scheduling = "normal"  # set by apply_scheduling
        self.gc = SlackCollector()  # collections in the loop's slack once main() starts it
        self._journal = JournalPublisher(self)  # ~/journal (while subscribed), ~/parameters
        self._journal.publish_parameters(parameter_values(self))
        # Several robots (robots): their joint states merged, their commands split; a robot's
        # description topic goes to the model source (built below, before any callback runs).
        names = [str(r) for r in P.value(self, "robots")]
        self._robots = (
            RobotSet(self, names, kind, lambda robot: self._source.on_robots_description(robot))
            if names
            else None
        )
        self._outputs = NodeOutputs(  # the command topics
            self,
            kind,
            str(P.value(self, "command_out_topic")),
            str(P.value(self, "base_cmd_topic")),
            self._models,
            self._journal,
            self._robots,
            self._lock,
        )
        self._inputs = NodeInputs(  # what the tick takes: joint states, targets, jog, odometry
            self,
            config,
            str(P.value(self, "joint_topic")),
            str(P.value(self, "odom_topic")),
            self._models,
            self._robots,
            self._lock,
        )
        self._source = ModelSource(  # the URDF sources: models built, swapped between ticks
            self,
            self._models,
            lambda: self._params.config,  # the parameters' (built next, before any URDF)
            self._robots,
            self._outputs,
            self._inputs,
            self._swaps,
            self._lock,
            self._forget_last_step,
        )
        self._params = NodeParameters(  # live parameter changes: the configuration's owner
            self,
            config,
            self._source,
            self._models,
            self._journal,
            self._swaps,
            self._lock,
            self._on_parameters_applied,
        )
        self._reports = NodeReports(  # ~/status, ~/markers, /diagnostics
            self,
            self._journal,
            self._state,
            lambda: self.scheduling,
            self._diagnostic_values,
            self._inputs.joint_readers,
            bool(P.value(self, "publish_markers")),
        )
        # Position IK on request, solved in a thread of its own (never in the control tick).
        source = self._source
        self._ik = IkRequests(
            self,
            lambda: self._models.controller,
            lock=self._lock,
            model_coming=lambda: source.model_coming,
        )
        self.create_service(SetBool, "~/enable", self._on_enable)
        add_pre_set_parameters_callback(self, self._params.before_set_parameters)
        self.add_on_set_parameters_callback(self._params.on_set_parameters)

        # URDF sources: the parameter, else the topic, else the file (see ModelSource.start).
        self._source.start(
            str(P.value(self, "robot_description")), str(P.value(self, "urdf_file"))
        )

        # ~/status, ~/markers and /diagnostics run right after a tick's command (see
        # _housekeeping); this timer runs them only while the loop does not tick.
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)  # steady clock of the timer
        self.create_timer(STATUS_PERIOD, self._on_housekeeping_timer, clock=self._wall)

    @property
    def _controller(self) -> Controller | None:
        """The installed controller (None: no model, no command)."""
        return self._models.controller

    def readers(self) -> list[PolledReader[Any]]:
        """The inputs the tick takes from their DDS readers (targets, twists, jog, odometry)."""
        inputs: NodeInputs | None = getattr(self, "_inputs", None)
        return [] if inputs is None else inputs.readers()

    def _forget_last_step(self) -> None:
        """A new model (between two ticks): its first step is logged as a transition."""
        self._last_out = None

    def _on_parameters_applied(self, params: list[Parameter], config: ControllerConfig) -> None:
        """A set-parameters request is in force: ``publish_markers``, the control rate.

        Args:
            params: the request's parameters.
            config: the configuration now in force.
        """
        for p in params:
            if p.name == "publish_markers":
                self._reports.set_publish_markers(bool(p.value))
            elif p.name in ("control_rate", "input_timeout"):
                self._set_rate(config)

    def _set_rate(self, config: ControllerConfig) -> None:
        """Apply ``control_rate`` [Hz] and ``input_timeout`` [s] to the control loop."""
        loop = self._loop
        if loop is not None:
            loop.set_period(1.0 / config.control_rate, config.input_timeout)

    def apply_scheduling(self) -> None:
        """Apply ``cpu_affinity`` to every thread of this process, ``thread_priority`` to this one.

        The control loop's thread takes ``thread_priority`` when it starts; the others (DDS's,
        the workers') stay on the normal scheduler (:mod:`~itasc_ros.ros.realtime`).

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
        """Start the control loop's thread, on ``thread_priority`` and the CPUs it inherits."""
        joint_states = None
        if self._trigger == P.TRIGGER_JOINT_STATES:  # several robots: the first one's wake
            joint_states = (self._inputs.joint_readers[0], self._inputs.take_joint_state)
        config = self._params.config
        self._loop = ControlLoop(
            self.context,
            self._on_tick,
            1.0 / config.control_rate,
            joint_states,
            config.input_timeout,
            self._on_loop_error,
            int(P.value(self, "thread_priority")),
        )
        self._loop.start()

    def _on_loop_error(self, exc: Exception) -> None:
        """A tick let an exception out (outside the step, which has its own): as a failed step.

        The command ramps to zero within the motion limits, the error is logged and reported;
        the loop goes on ticking.
        """
        ctrl = self._models.controller
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
        :data:`~itasc_ros.ros.node_reports.DIAGNOSTICS_PERIOD` (:meth:`NodeReports.publish_due`).

        Run right after a command is published, not from free-running timers: a timer that
        fires just before a joint state arrives delays that tick by its work (~0.1-0.4 ms of
        message building), a late command at 1 kHz. The same for the garbage collector (see
        :mod:`itasc_ros.ros.slack_gc`, started by :func:`main`).

        Args:
            t: ``time.monotonic()`` [s].
        """
        self.gc.collect()  # a collection that is due, here rather than inside the next tick
        self._inputs.follow_markers(t)  # the markers of topic targets, once sent
        self._reports.publish_due(t)

    def _on_housekeeping_timer(self) -> None:
        """Install the topic's parsed URDFs; the periodic jobs while the loop does not tick."""
        self._source.install_parsed()
        t = time.monotonic()
        if t - self._last_tick > STATUS_PERIOD:
            with self._lock:
                self._inputs.take(read_clock(self)[1])  # targets held, joint states kept
                self._housekeeping(t)

    def _control(self) -> None:
        t0 = time.perf_counter()
        now, sim_offset = read_clock(self)  # one reading of the clock per tick
        self._inputs.take(sim_offset)
        ctrl, cmd = self._models.controller, self._outputs.command
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
            self._outputs.send(ctrl, cmd, out.q, out.qdot, now)
        self._journal.flush(now)
        last = self._last_out
        if last is None or out.status != last.status or out.held != last.held:
            self._log_transition(out)
        if out.shortfall:
            log_throttled(self.get_logger(), "warning", "not followed", out.shortfall, 2.0)
        if ctrl.config.world_frame:
            self._reports.warn_odometry_behind(ctrl)
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
        self._outputs.publish_ramp(ctrl, ZeroReason.TICK_ERROR)
        if not self._tick_error:
            self.get_logger().error(
                f"control step failed, ramping the command to zero: {type(exc).__name__}: {exc}"
            )
        self._tick_error = _clip(f"control step failed: {type(exc).__name__}: {exc}")

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> Any:
        """``~/enable``: the installed controller and every later one enabled or disabled."""
        with self._lock:
            self._models.set_enabled(bool(request.data))
        response.success = True
        ctrl = self._models.controller
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

    def _state(self) -> NodeState:
        """The node's state as the reports read it."""
        return NodeState(
            ctrl=self._models.controller,
            out=self._last_out,
            urdf_source=self._models.source,
            urdf_error=self._source.error,
            urdf_rejections=self._source.rejections,
            enabled=self._models.enabled,
            stats=self._stats,
            rejections=self._inputs.rejections,
            control_rate=self._params.config.control_rate,
            trigger=self._trigger,
            timer_trigger=self._trigger == P.TRIGGER_TIMER,
            tick_error=self._tick_error,
        )

    def _diagnostic_values(self) -> list[tuple[str, Any]]:
        """The node's own /diagnostics key-values (after ``scheduling``)."""
        return [
            ("gc_collections", "/".join(map(str, self.gc.collections))),
            ("inputs_replaced_before_taken", replaced_count(self.readers())),
            ("ik_requests_unanswered", self._ik.unanswered),
            *self._swaps.values(),
        ]

    # ------------------------------------------------------------------------- shutdown
    def stop_smoothly(self, executor: Any, timeout: float = STOP_TIMEOUT) -> bool:
        """Shutdown while commanding: decelerate within the joint limits (stop category 1).

        See :meth:`NodeOutputs.stop_smoothly`.

        Args:
            executor: the node's executor (spun meanwhile).
            timeout: longest stop [s].

        Returns:
            True when the robot was brought to rest this way.
        """
        return self._outputs.stop_smoothly(executor, timeout)

    def shutdown_zero(self, wait: float = 1.0, already_stopped: bool = False) -> bool:
        """Publish a zero command before exit (see :meth:`NodeOutputs.shutdown_zero`).

        Args:
            wait: longest wait [s] for each delivery.
            already_stopped: the controlled stop ended with its zero command a moment ago.

        Returns:
            True when a zero command was sent.
        """
        return self._outputs.shutdown_zero(wait, already_stopped)

    def destroy_node(self) -> None:
        """Stop the URDF parser and IK threads, release the polled readers, destroy the node.

        Also after a start-up refused half-way: the parts built so far.
        """
        source: ModelSource | None = getattr(self, "_source", None)
        if source is not None:
            source.close()
        ik: IkRequests | None = getattr(self, "_ik", None)
        if ik is not None:
            ik.close()
        loop = self._loop
        if loop is not None and loop.running:
            loop.stop()
        inputs: NodeInputs | None = getattr(self, "_inputs", None)
        if inputs is not None:
            inputs.destroy()
        robots: RobotSet | None = getattr(self, "_robots", None)
        if robots is not None:
            robots.destroy()
        super().destroy_node()


def main(args: list[str] | None = None, stop: threading.Event | None = None) -> int:
    """Run the node until SIGINT/SIGTERM; publish a zero command before exiting.

    Args:
        args: the command line with the program name (default ``sys.argv``); ``-h`` or
            ``--help`` before any ``--ros-args`` prints the usage and returns 0 without
            initialising rclpy (no DDS).
        stop: set by the signals (:mod:`itasc_ros.ros.itasc_node` installs them before this
            module loads); already set, the node does not start and 0 is returned.
    """
    import faulthandler

    faulthandler.enable()  # a crash in native code (DDS, numba) leaves its stacks in the log
    # `kill -USR1 <pid>`: every thread's stack in the log, the node goes on (a hang explained).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    argv = list(sys.argv if args is None else args)
    ros_args = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    if {"-h", "--help"} & set(argv[1:ros_args]):
        print(f"usage: itasc_node [-h] [--ros-args ...]\n\n{__doc__}")
        return 0
    stop = threading.Event() if stop is None else stop
    if stop.is_set():  # a stop asked while the node's modules loaded: nothing started
        return 0
    try:
        non_ros_args(argv)  # a missing params file, a malformed --ros-args: one line
        quiet_init(args)
    except (ItascError, RCLError) as exc:  # a missing params file, a malformed -p
        return refuse(NODE_NAME, exc)

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    # The handlers stay installed after main returns: a second SIGINT while the node exits
    # (Ctrl-C twice, a supervisor signalling again) must not turn a clean exit with its zero
    # command into a KeyboardInterrupt.
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, on_signal)
    node: ItascNode | None = None
    executor: Any = None
    deadline = ExitDeadline()  # armed once the last command is sent
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
        # A teardown that hangs (a native call that never returns) ends the process after
        # EXIT_WATCHDOG seconds, every thread's stack in the log, instead of waiting for a kill.
        faulthandler.dump_traceback_later(EXIT_WATCHDOG, exit=True)
        if rclpy.ok():
            stopped = node.stop_smoothly(executor)
        node.stop_loop()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (ItascError, ParameterException) as exc:  # e.g. control_rate:=5000.0 at start-up
        code = refuse(NODE_NAME, exc)
    finally:
        # In order: the zero command, the executor (it lets go of the node's entities), the
        # node (its threads, then its handles), then the context. A refused start-up never
        # commanded: no zero command (nor its log line) then.
        if node is not None:
            if rclpy.ok() and code == 0:
                node.shutdown_zero(already_stopped=stopped)
            try:
                deadline.arm(
                    TEARDOWN_DEADLINE, code,
                    f"{NODE_NAME}: the DDS teardown did not end within {TEARDOWN_DEADLINE:g} s "
                    f"of the last command; exiting without it (status {code})",
                )  # fmt: skip
            except RuntimeError as exc:  # no thread for it: the teardown goes on unbounded
                node.get_logger().warning(f"no exit deadline: {exc}")
            if executor is not None:
                executor.shutdown(timeout_sec=1.0)  # no spin is left to wait for
            node.destroy_node()
        rclpy.try_shutdown()
        del executor  # its destructor now, with nothing left to tear down
    faulthandler.cancel_dump_traceback_later()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
