"""The rclpy side of the demo: target publishers, the recorder, parameter calls, the display.

:class:`DemoRun` lives in the demo's own process (its own rclpy context, spun by a thread):
it waits for the simulated robot and the node, publishes the target of every phase at the
control rate, switches the node's feed-forward with its SetParameters service, records every
topic into the bag and shows the progress on one line (a terminal) or every 2 s (a log).
"""

from __future__ import annotations

import json
import math
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import KinematicTree
from itasc_ros.tools.bagio import deserialize
from itasc_ros.tools.collector import no_collector_pauses
from itasc_ros.tools.demo.formatting import fmt
from itasc_ros.tools.demo.phases import Phase
from itasc_ros.tools.demo.processes import NODE, log_tail
from itasc_ros.tools.demo.tap_writer import TapWriter
from itasc_ros.tools.demo.target_path import TargetPath
from itasc_ros.tools.replay import NodeSetup

Array = NDArray[np.float64]

STARTUP_TIMEOUT = 60.0  # [s] for the processes to come up


@dataclass
class LiveState:
    """What the progress display shows (written by callbacks, read by the display)."""

    phase: str = "starting"
    tau: float = 0.0
    target: Array = field(default_factory=lambda: np.zeros(3))
    js_speed_max: float = 0.0
    loop_rate: float = 0.0
    node_status: str = ""
    status_count: int = 0


def recorded_topics(setup: NodeSetup, constraint: str) -> dict[str, str | None]:
    """Topic -> message type of every topic the demo records (``setup``: the node's topics)."""
    return {
        setup.joint_topic: "sensor_msgs/msg/JointState",
        setup.pose_topics[constraint]: "geometry_msgs/msg/PoseStamped",
        setup.twist_topics[constraint]: "geometry_msgs/msg/TwistStamped",
        setup.command_topic: setup.command_type.replace("/", "/msg/", 1),
        "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
        f"{NODE}/status": "std_msgs/msg/String",
        "/parameter_events": "rcl_interfaces/msg/ParameterEvent",
        setup.journal_topic: "std_msgs/msg/Float64MultiArray",
        setup.parameters_topic: "std_msgs/msg/String",
    }


class DemoRun:
    """The rclpy side of the demo: target publishers, recorder, parameter calls, display.

    Args:
        setup: the node's topics.
        tree: the robot.
        tip: the effector link of the pose constraint.
        writer: the bag the recorder writes.
        stream: where the progress goes.
    """

    def __init__(
        self, setup: NodeSetup, tree: KinematicTree, tip: str, writer: TapWriter, stream: TextIO
    ) -> None:
        import rclpy
        from rclpy.signals import SignalHandlerOptions

        from itasc_ros.ros.executors import make_executor

        self.setup = setup
        self.tree = tree
        self.tip = tip
        self.stream = stream
        self.tty = stream.isatty()
        self.live = LiveState()
        self._lock = threading.Lock()
        self._last_display = 0.0  # [s] monotonic time of the last progress line
        self.context = rclpy.Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("itasc_demo", context=self.context)
        self.executor = make_executor(self.context)
        self.executor.add_node(self.node)
        self.constraint = next(iter(setup.pose_topics))
        self._connect(writer)
        self._param_client: Any = None
        self._stop = threading.Event()
        self._spin = threading.Thread(target=self._spin_loop, name="demo_spin", daemon=True)
        self._spin.start()

    def _connect(self, writer: TapWriter) -> None:
        """The target publishers, the status subscription and the recorder."""
        from geometry_msgs.msg import PoseStamped, TwistStamped
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        from itasc_ros.tools.record import Recorder

        reliable = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE
        )
        setup = self.setup
        self.pose_pub = self.node.create_publisher(
            PoseStamped, setup.pose_topics[self.constraint], reliable
        )
        self.twist_pub = self.node.create_publisher(
            TwistStamped, setup.twist_topics[self.constraint], reliable
        )
        self._pose_msg = PoseStamped()
        self._twist_msg = TwistStamped()
        self.node.create_subscription(String, f"{NODE}/status", self._on_status, 10)
        self.writer = writer
        self.recorder = Recorder(self.node, writer, recorded_topics(setup, self.constraint))

    # ----------------------------------------------------------------------- callbacks
    def _spin_loop(self) -> None:
        from itasc_ros.ros.executors import spin_until

        spin_until(self.executor, self._stop, self.context)

    def last_joint_state(self) -> Any:
        """The last joint state the recorder wrote (a typestore message), or None."""
        raw = self.writer.last_raw
        if raw is None:
            return None
        return deserialize(raw, "sensor_msgs/msg/JointState")

    def _on_status(self, msg: Any) -> None:
        try:
            info = json.loads(msg.data)
        except ValueError:
            return
        with self._lock:
            self.live.loop_rate = float(info.get("loop_rate", 0.0))
            self.live.node_status = str(info.get("status", ""))
            self.live.status_count += 1

    def now_ns(self) -> int:
        """ROS time now [ns] (system clock, the clock of the simulated robot's stamps)."""
        return int(self.node.get_clock().now().nanoseconds)

    # ----------------------------------------------------------------------- start-up
    def _ready(self) -> bool:
        """Joint states recorded, the node has a model, both subscribe, the journal started."""
        with self._lock:
            node_ready = self.live.node_status not in ("", "no_model")
        return (
            self.writer.last_raw is not None
            and node_ready
            and self.pose_pub.get_subscription_count() >= 2
            and self.setup.command_topic in self.recorder.subscribed
            and self.writer.counts.get(self.setup.journal_topic, 0) > 0  # journal started
        )

    def wait_ready(
        self,
        procs: dict[str, subprocess.Popen[bytes]],
        logs: dict[str, Path],
        timeout: float = STARTUP_TIMEOUT,
    ) -> None:
        """Wait for joint states, the node's model and subscriptions, and the recorder.

        Args:
            procs: the started processes by name ('sim', 'node').
            logs: their log files, by the same names.
            timeout: how long to wait [s].

        Raises:
            RuntimeError: a process died or the timeout passed (with the logs' tails).
        """
        deadline = time.monotonic() + timeout
        while True:
            for name, p in procs.items():
                if p.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {p.returncode}:\n{log_tail(logs[name])}"
                    )
            if self._ready():
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"start-up timed out after {timeout:g} s (joint states: "
                    f"{self.writer.last_raw is not None}, node "
                    f"status: {self.live.node_status!r}, recorded topics: "
                    f"{sorted(self.recorder.subscribed)})\n--- node log:\n"
                    f"{log_tail(logs['node'])}\n--- sim log:\n{log_tail(logs['sim'])}"
                )
            time.sleep(0.05)

    def set_feedforward(self, value: bool, timeout: float = 5.0) -> None:
        """Set ``constraints.<c>.feedforward`` on the node (SetParameters service).

        Args:
            value: the new value.
            timeout: for the service to appear and to answer [s].

        Raises:
            RuntimeError: the service does not answer or refuses.
        """
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        from itasc_ros.tools.replay import call_with_resends

        if self._param_client is None:
            self._param_client = self.node.create_client(SetParameters, f"{NODE}/set_parameters")
        client = self._param_client
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"{NODE}/set_parameters is not available")
        name = f"constraints.{self.constraint}.feedforward"
        req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        res = call_with_resends(client, req, time.monotonic() + timeout)  # the same value
        if res is None or not res.results or not res.results[0].successful:
            reason = res.results[0].reason if res is not None and res.results else "timeout"
            raise RuntimeError(f"setting {name}={value} failed: {reason}")

    # ----------------------------------------------------------------------- the phases
    def run_phases(self, phases: list[Phase], path: TargetPath, rate: float) -> None:
        """Publish the targets of every phase at ``rate`` [Hz], with the live display.

        Fills each phase's ``start_ns`` and ``end_ns`` (ROS time [ns]).
        """
        feedforward: bool | None = None
        self._last_display = 0.0
        total = sum(p.duration for p in phases)
        elapsed_before = 0.0
        with no_collector_pauses():  # the targets on time, the recording beside them
            for phase in phases:
                if phase.feedforward != feedforward:
                    self.set_feedforward(phase.feedforward)
                    feedforward = phase.feedforward
                self._run_phase(phase, path, 1.0 / rate, elapsed_before, total)
                elapsed_before += phase.duration
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _run_phase(
        self, phase: Phase, path: TargetPath, period: float, elapsed_before: float, total: float
    ) -> None:
        """Publish ``phase``'s target every ``period`` [s] until its duration has passed."""
        with self._lock:
            self.live.phase = phase.name
            self.live.js_speed_max = 0.0
        phase.start_ns = self.now_ns()
        if not self.tty:
            print(
                f"[{elapsed_before:5.1f}/{total:.0f} s] phase {phase.name} "
                f"({phase.duration:.1f} s, feed-forward "
                f"{'on' if phase.feedforward else 'off'})",
                file=self.stream,
                flush=True,
            )
        deadline = time.monotonic()
        while True:
            t_ns = self.now_ns()
            tau = (t_ns - phase.start_ns) * 1e-9
            if tau >= phase.duration:
                break
            p, tw = path.sample(phase, tau)
            self._publish(t_ns, p, path.quat, tw, phase.feedforward)
            with self._lock:
                self.live.tau = tau
                self.live.target = p
            mono = time.monotonic()
            if mono - self._last_display >= (0.1 if self.tty else 2.0):
                self._last_display = mono
                self._display(elapsed_before + tau, total)
            deadline += period
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * period:
                deadline = time.monotonic()
        phase.end_ns = self.now_ns()

    def _publish(self, t_ns: int, p: Array, quat: Array, twist: Array, ff: bool) -> None:
        sec, nsec = divmod(t_ns, 1_000_000_000)
        m = self._pose_msg
        m.header.stamp.sec, m.header.stamp.nanosec = int(sec), int(nsec)
        m.header.frame_id = ""
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in p)
        o = m.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in quat)
        self.pose_pub.publish(m)
        if ff:
            tw = self._twist_msg
            tw.header.stamp.sec, tw.header.stamp.nanosec = int(sec), int(nsec)
            tw.twist.linear.x, tw.twist.linear.y, tw.twist.linear.z = (float(v) for v in twist[:3])
            tw.twist.angular.x, tw.twist.angular.y, tw.twist.angular.z = (
                float(v) for v in twist[3:]
            )
            self.twist_pub.publish(tw)

    def _tip_error(self, js: Any, target: Array) -> float:
        """|target - effector| [m] at joint state ``js`` (NaN when its joints do not fit)."""
        try:
            names = list(js.name)
            q = np.asarray(js.position, dtype=float)
            qq = np.array([q[names.index(j)] for j in self.tree.joint_names])
            ee = self.tree.forward_kinematics(qq, self.tip)
            return float(np.linalg.norm(ee[:3, 3] - target))
        except (ValueError, IndexError):
            return math.nan

    def _display(self, elapsed: float, total: float) -> None:
        js = self.last_joint_state()
        err = math.nan
        with self._lock:
            live = self.live
            if js is not None:
                v = np.asarray(js.velocity, dtype=float)
                if v.size:
                    live.js_speed_max = max(live.js_speed_max, float(np.max(np.abs(v))))
                err = self._tip_error(js, live.target.copy())
            line = (
                f"{live.phase:12s} t={elapsed:5.1f}/{total:.0f} s  error "
                f"{fmt(err, '7.2f', ' mm', 1e3):>10}  loop {live.loop_rate:6.1f} Hz  max joint "
                f"speed "
                f"{live.js_speed_max:5.2f} rad/s"
            )
        if self.tty:
            self.stream.write("\r" + line + "   ")
            self.stream.flush()
        else:
            print(line, file=self.stream, flush=True)

    def fetch_parameters(self) -> dict[str, Any]:
        """The node's parameters (flat)."""
        from itasc_ros.tools.replay import fetch_node_parameters

        return fetch_node_parameters(self.node, NODE)

    def close(self) -> None:
        """Stop recording and spinning; shut rclpy down."""
        import rclpy

        self.recorder.close()
        self._stop.set()
        self._spin.join(timeout=2.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


__all__ = ["STARTUP_TIMEOUT", "DemoRun", "LiveState", "recorded_topics"]
