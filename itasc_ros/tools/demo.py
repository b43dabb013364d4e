"""``itasc-demo``: the main job on a fresh machine, end to end over real DDS.

Starts the simulated robot (``python -m itasc_ros.tools.sim_robot``) and the iTaSC node
(``python -m itasc_ros.ros.node`` with config/<robot>.yaml) as separate processes on
shared-memory DDS in a private domain; in this process a target generator, the recorder
(:class:`~itasc_ros.tools.record.Recorder` into an MCAP bag) and the metrics. Phases (scaled to
``--duration``):

1. circle (0.1 m, 0.25 m/s) with feed-forward: the target twist on ``~/target_twist``;
2. the same circle without: ``constraints.ee.feedforward`` set false with the node's
   SetParameters service and no twist published (with feed-forward off the node ignores
   target twists, estimated or given, so nothing is fed forward);
3. / 4. a figure eight with and without feed-forward;
5. step changes of the target (feed-forward on, zero twist given, so the jump is not read as a
   velocity);
6. an unreachable target 2 m away: the arm stretches toward it, damped near the singularity,
   within its limits.

At the end: a summary table, the offline ``scenarios.circle_tracking`` numbers for the same
parameters beside the demo's (``itasc-bench tracking`` computes the same), and an output folder
(``--out``, default ``demo_output/<timestamp>``) with the bag, the processes' logs and PNG plots.
``--json`` prints the metrics as one JSON object on the last line.

``--scenario NAME`` runs one of the demo scenarios of :mod:`itasc_ros.tools.scenarios`
instead (in this process, on an ideal robot; ``--list-scenarios`` lists them): its plot
``<NAME>.png`` and metrics ``<NAME>.json`` go to ``--out``, and ``--json`` prints the metrics.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from itasc_ros.cli import (
    CliParser,
    UsageError,
    closest,
    positive_float,
    usage_status,
    writable_dir,
)
from itasc_ros.core import ItascError, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.scenarios import circle_tracking, path_point
from itasc_ros.core.solve.motion_limits import JointLimits, limit_ratios
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.bagio import BagWriter, deserialize, read_bag
from itasc_ros.tools.dds_env import apply_local_dds_env, local_dds_env
from itasc_ros.tools.demo_health import (
    CommandTicks,
    JointStateTimes,
    limit_flags,
    phase_flags,
    verdict_line,
)
from itasc_ros.tools.home_poses import home_pose
from itasc_ros.tools.replay import compare_commands, play_journal, setup_joints
from itasc_ros.tools.replay_setup import load_setup, write_parameters_snapshot
from itasc_ros.tools.resources import robot_urdf, share_file

Array = NDArray[np.float64]

RADIUS = 0.1  # [m] circle radius (as itasc-bench tracking)
SPEED = 0.25  # [m/s] path speed
PLANE = "yz"
UNREACHABLE_DISTANCE = 2.0  # [m] from the home tip
SIM_RATE = 500.0  # [Hz]
DEFAULT_DURATION = 40.0  # [s] sum of the phases
STEADY_FRACTION = 0.5  # the second half of a tracking phase is its steady state
SETTLE_BAND = 0.02  # step response: within 2 % of the step (at least SETTLE_FLOOR)
SETTLE_FLOOR = 0.001  # [m]
STARTUP_TIMEOUT = 60.0  # [s] for the processes to come up
WARMUP = 1.0  # [s] at the home pose before the measured phases
STEP_OFFSETS = (  # [m] step targets relative to the home tip
    (0.0, 0.1, 0.0),
    (0.0, 0.1, -0.1),
    (0.0, -0.05, -0.05),
    (0.05, 0.0, 0.05),
    (0.0, 0.0, 0.0),
)
NODE = "/itasc_node"
MAX_DOMAIN_ID = 232  # the largest ROS_DOMAIN_ID Fast DDS accepts (its port arithmetic)


@dataclass
class Phase:
    """One phase of the demo.

    Attributes:
        name: short key ('circle_ff', ...). kind: 'circle', 'figure8', 'steps' or
        'unreachable'. feedforward: the node's feed-forward parameter in this phase.
        duration: [s]. start_ns / end_ns: ROS time of the phase (filled when it runs).
    """

    name: str
    kind: str
    feedforward: bool
    duration: float
    start_ns: int = 0
    end_ns: int = 0

    @property
    def tracking(self) -> bool:
        """True for the circle and figure-eight phases."""
        return self.kind in ("circle", "figure8")

    @property
    def measured(self) -> bool:
        """False for the warm-up."""
        return self.kind != "hold"


#: The measured phases: name, kind, feed-forward, duration [s] in a run of BASE_TOTAL seconds.
BASE_PHASES = (
    ("circle_ff", "circle", True, 8.0),
    ("circle_fb", "circle", False, 8.0),
    ("figure8_ff", "figure8", True, 6.0),
    ("figure8_fb", "figure8", False, 6.0),
    ("steps", "steps", True, 6.0),
    ("unreachable", "unreachable", True, 4.0),
)
BASE_TOTAL = sum(b[3] for b in BASE_PHASES)  # [s]
STEP_HOLD_MIN = 1.0  # [s] per step target: time to settle (measured ~0.4-0.5 s)
UNREACHABLE_MIN = 2.0  # [s] to stretch out toward the far target
TRACKING_MIN = 2.5  # [s] the shortest tracking phase (its second half is the steady state)


def plan_phases(total: float) -> list[Phase]:
    """The demo's phases; their durations add up to ``total`` [s] (>= :func:`min_duration`).

    The step and unreachable phases scale with ``total`` but keep the time they need to
    settle (:data:`STEP_HOLD_MIN` per step, :data:`UNREACHABLE_MIN`); the tracking phases
    share the rest in their proportions. A warm-up of :data:`WARMUP` seconds at the home pose
    comes first (not measured): the node's first solves compile and every connection
    settles before the measurements.
    """
    scale = total / BASE_TOTAL
    fixed = {
        "steps": max(6.0 * scale, STEP_HOLD_MIN * len(STEP_OFFSETS)),
        "unreachable": max(4.0 * scale, UNREACHABLE_MIN),
    }
    tracking = sum(d for n, _, _, d in BASE_PHASES if n not in fixed)
    share = (total - sum(fixed.values())) / tracking
    return [Phase("warmup", "hold", True, WARMUP)] + [
        Phase(n, k, ff, fixed.get(n, d * share)) for n, k, ff, d in BASE_PHASES
    ]


def min_duration() -> float:
    """The shortest ``--duration`` [s] in which every phase can settle (0.1 s steps)."""
    tracking = [d for n, _, _, d in BASE_PHASES if n not in ("steps", "unreachable")]
    need = (
        STEP_HOLD_MIN * len(STEP_OFFSETS)
        + UNREACHABLE_MIN
        + TRACKING_MIN * sum(tracking) / min(tracking)
    )
    return math.ceil(need * 10.0 - 1e-9) / 10.0


class TargetPath:
    """The target of every phase as a function of the time since the phase started (no ROS).

    Args:
        center: (3,) home tip position [m] (centre of the paths, origin of the steps).
        quat: (4,) home tip orientation (x, y, z, w), held in every phase.
        radius: radius of the circle and size of the figure eight [m].
    """

    def __init__(self, center: Array, quat: Array, radius: float = RADIUS) -> None:
        self.center = np.asarray(center, dtype=float)
        self.quat = np.asarray(quat, dtype=float)
        self.radius = float(radius)
        horizontal = np.array([self.center[0], self.center[1], 0.0])
        norm = float(np.linalg.norm(horizontal))
        direction = horizontal / norm if norm > 1e-6 else np.array([1.0, 0.0, 0.0])
        self.far = self.center + UNREACHABLE_DISTANCE * direction  # (3,)

    def step_index(self, phase: Phase, tau: float) -> int:
        """Index of the step target in force at ``tau`` [s] into a 'steps' phase."""
        hold = phase.duration / len(STEP_OFFSETS)
        return min(int(tau / hold), len(STEP_OFFSETS) - 1)

    def sample(self, phase: Phase, tau: float) -> tuple[Array, Array]:
        """Target position (3,) [m] and twist (6,) [m/s, rad/s] at ``tau`` [s] into ``phase``."""
        twist = np.zeros(6)
        if phase.tracking:
            p, v = path_point(tau, self.center, self.radius, SPEED, phase.kind, PLANE)
            twist[:3] = v
            return p, twist
        if phase.kind == "steps":
            return self.center + np.array(STEP_OFFSETS[self.step_index(phase, tau)]), twist
        if phase.kind == "hold":
            return self.center.copy(), twist
        return self.far.copy(), twist


# ---------------------------------------------------------------------------------------------
# Processes


def _start(args: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    log = log_path.open("wb")
    try:
        return subprocess.Popen(
            args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    finally:
        log.close()


def stop_process(p: subprocess.Popen[bytes], timeout: float = 5.0) -> int | None:
    """SIGINT, wait up to ``timeout`` [s], then SIGKILL. Returns the exit code."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            try:
                p.wait(5.0)
            except subprocess.TimeoutExpired:
                pass
    return p.returncode


def _executor(context: Any) -> Any:
    """The EventsExecutor where rclpy has it (less CPU per message), else a single-threaded one."""
    try:
        from rclpy.experimental import EventsExecutor

        return EventsExecutor(context=context)
    except ImportError:
        from rclpy.executors import SingleThreadedExecutor

        return SingleThreadedExecutor(context=context)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# The live part (rclpy)


class TapWriter(BagWriter):
    """A :class:`BagWriter` that also keeps the last raw message of one topic (for the display).

    The progress display reads the joint states the recorder writes anyway, so the demo process
    needs no second subscription to them.
    """

    def __init__(self, path: Path, storage: Any, tap_topic: str) -> None:
        super().__init__(path, storage)
        self.tap_topic = tap_topic
        self.last_raw: bytes | None = None

    def write_raw(self, topic: str, t_ns: int, cdr: bytes | memoryview) -> None:
        """Write as :meth:`BagWriter.write_raw`; keep the bytes of the tapped topic."""
        super().write_raw(topic, t_ns, cdr)
        if topic == self.tap_topic:
            self.last_raw = bytes(cdr)


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


class DemoRun:
    """The rclpy side of the demo: target publishers, recorder, parameter calls, display."""

    def __init__(
        self, setup: Any, tree: KinematicTree, tip: str, writer: TapWriter, stream: TextIO
    ) -> None:
        import rclpy
        from geometry_msgs.msg import PoseStamped, TwistStamped
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from rclpy.signals import SignalHandlerOptions
        from std_msgs.msg import String

        from itasc_ros.tools.record import Recorder

        self.setup = setup
        self.tree = tree
        self.tip = tip
        self.stream = stream
        self.tty = stream.isatty()
        self.live = LiveState()
        self._lock = threading.Lock()
        self.context = rclpy.Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("itasc_demo", context=self.context)
        self.executor = _executor(self.context)
        self.executor.add_node(self.node)
        reliable = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE
        )
        self.constraint = next(iter(setup.pose_topics))
        self.pose_pub = self.node.create_publisher(
            PoseStamped, setup.pose_topics[self.constraint], reliable
        )
        self.twist_pub = self.node.create_publisher(
            TwistStamped, setup.twist_topics[self.constraint], reliable
        )
        self._pose_msg = PoseStamped()
        self._twist_msg = TwistStamped()
        self.node.create_subscription(String, f"{NODE}/status", self._on_status, 10)
        topics: dict[str, str | None] = {
            setup.joint_topic: "sensor_msgs/msg/JointState",
            setup.pose_topics[self.constraint]: "geometry_msgs/msg/PoseStamped",
            setup.twist_topics[self.constraint]: "geometry_msgs/msg/TwistStamped",
            setup.command_topic: setup.command_type.replace("/", "/msg/", 1),
            "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
            f"{NODE}/status": "std_msgs/msg/String",
            "/parameter_events": "rcl_interfaces/msg/ParameterEvent",
            setup.journal_topic: "std_msgs/msg/Float64MultiArray",
            setup.parameters_topic: "std_msgs/msg/String",
        }
        self.writer = writer
        self.recorder = Recorder(self.node, writer, topics)
        self._param_client: Any = None
        self._stop = threading.Event()
        self._spin = threading.Thread(target=self._spin_loop, name="demo_spin", daemon=True)
        self._spin.start()

    # ----------------------------------------------------------------------- callbacks
    def _spin_loop(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

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
    def wait_ready(
        self,
        procs: dict[str, subprocess.Popen[bytes]],
        logs: dict[str, Path],
        timeout: float = STARTUP_TIMEOUT,
    ) -> None:
        """Wait for joint states, the node's model and subscriptions, and the recorder.

        Raises:
            RuntimeError: a process died or the timeout passed (with the logs' tails).
        """
        deadline = time.monotonic() + timeout
        while True:
            for name, p in procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with {p.returncode}:\n{_tail(logs[name])}")
            have_js = self.writer.last_raw is not None
            with self._lock:
                node_ready = self.live.node_status not in ("", "no_model")
            if (
                have_js
                and node_ready
                and self.pose_pub.get_subscription_count() >= 2
                and self.setup.command_topic in self.recorder.subscribed
                and self.writer.counts.get(self.setup.journal_topic, 0) > 0  # journal started
            ):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"start-up timed out after {timeout:g} s (joint states: {have_js}, node "
                    f"status: {self.live.node_status!r}, recorded topics: "
                    f"{sorted(self.recorder.subscribed)})\n--- node log:\n"
                    f"{_tail(logs['node'])}\n--- sim log:\n{_tail(logs['sim'])}"
                )
            time.sleep(0.05)

    def set_feedforward(self, value: bool, timeout: float = 5.0) -> None:
        """Set ``constraints.<c>.feedforward`` on the node (SetParameters service).

        Raises:
            RuntimeError: the service does not answer or refuses.
        """
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        if self._param_client is None:
            self._param_client = self.node.create_client(SetParameters, f"{NODE}/set_parameters")
        client = self._param_client
        if not client.wait_for_service(timeout_sec=timeout):
            raise RuntimeError(f"{NODE}/set_parameters is not available")
        name = f"constraints.{self.constraint}.feedforward"
        req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        fut = client.call_async(req)
        deadline = time.monotonic() + timeout
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.005)
        res = fut.result() if fut.done() else None
        if res is None or not res.results or not res.results[0].successful:
            reason = res.results[0].reason if res is not None and res.results else "timeout"
            raise RuntimeError(f"setting {name}={value} failed: {reason}")

    # ----------------------------------------------------------------------- the phases
    def run_phases(self, phases: list[Phase], path: TargetPath, rate: float) -> None:
        """Publish the targets of every phase at ``rate`` [Hz], with the live display."""
        period = 1.0 / rate
        quat = path.quat
        feedforward: bool | None = None
        last_display = 0.0
        total = sum(p.duration for p in phases)
        elapsed_before = 0.0
        for phase in phases:
            if phase.feedforward != feedforward:
                self.set_feedforward(phase.feedforward)
                feedforward = phase.feedforward
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
                self._publish(t_ns, p, quat, tw, phase.feedforward)
                with self._lock:
                    self.live.tau = tau
                    self.live.target = p
                mono = time.monotonic()
                if mono - last_display >= (0.1 if self.tty else 2.0):
                    last_display = mono
                    self._display(elapsed_before + tau, total)
                deadline += period
                delay = deadline - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                elif delay < -5 * period:
                    deadline = time.monotonic()
            phase.end_ns = self.now_ns()
            elapsed_before += phase.duration
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

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

    def _display(self, elapsed: float, total: float) -> None:
        js = self.last_joint_state()
        err = math.nan
        with self._lock:
            live = self.live
            target = live.target.copy()
            if js is not None:
                names = list(js.name)
                v = np.asarray(js.velocity, dtype=float)
                if v.size:
                    live.js_speed_max = max(live.js_speed_max, float(np.max(np.abs(v))))
                try:
                    q = np.asarray(js.position, dtype=float)
                    qq = np.array([q[names.index(j)] for j in self.tree.joint_names])
                    ee = self.tree.forward_kinematics(qq, self.tip)
                    err = float(np.linalg.norm(ee[:3, 3] - target))
                except (ValueError, IndexError):
                    pass
            line = (
                f"{live.phase:12s} t={elapsed:5.1f}/{total:.0f} s  error "
                f"{_f(err, '7.2f', ' mm', 1e3):>10}  loop {live.loop_rate:6.1f} Hz  max joint "
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
        from itasc_ros.tools.replay_online import fetch_node_parameters

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


# ---------------------------------------------------------------------------------------------
# Metrics from the bag


def _interp_positions(t: Array, ts: Array, ps: Array) -> Array:
    """(k, 3) target positions at times ``t`` by linear interpolation of samples (ts, ps)."""
    return np.stack([np.interp(t, ts, ps[:, i]) for i in range(3)], axis=1)


def _rms(x: Array) -> float:
    return float(np.sqrt(np.mean(x**2))) if x.size else math.nan


@dataclass
class BagData:
    """The recorded signals the metrics need (times in ROS time [s])."""

    js_t: Array  # (k,) header stamps
    js_recv: Array  # (k,) reception (bag) times
    js_q: Array  # (k, n) tree order
    js_v: Array  # (k, n)
    ee: Array  # (k, 3) effector positions
    target_t: Array  # (m,)
    target_p: Array  # (m, 3)
    cmd_t: Array  # (c,) bag (reception) times
    cmd: Array  # (c, n) in command order
    status: list[tuple[float, dict[str, Any]]]
    diagnostics: list[tuple[float, dict[str, str]]]


def read_demo_bag(
    bag: Path, setup: Any, tree: KinematicTree, tip: str, cmd_joints: Sequence[str]
) -> BagData:
    """Read the demo's bag and compute the effector positions of the joint states."""
    js_t: list[float] = []
    js_recv: list[float] = []
    js_q: list[Array] = []
    js_v: list[Array] = []
    tt: list[float] = []
    tp: list[Array] = []
    ct: list[float] = []
    cv: list[Array] = []
    status: list[tuple[float, dict[str, Any]]] = []
    diags: list[tuple[float, dict[str, str]]] = []
    pose_topic = next(iter(setup.pose_topics.values()))
    order: list[int] | None = None
    for topic, t_ns, msg in read_bag(
        bag, [setup.joint_topic, pose_topic, setup.command_topic, f"{NODE}/status", "/diagnostics"]
    ):
        if topic == setup.joint_topic:
            if order is None:
                names = list(msg.name)
                order = [names.index(j) for j in tree.joint_names]
            js_t.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
            js_recv.append(t_ns * 1e-9)
            js_q.append(np.asarray(msg.position, dtype=float)[order])
            v = np.asarray(msg.velocity, dtype=float)
            js_v.append(v[order] if v.size else np.zeros(len(order)))
        elif topic == pose_topic:
            tt.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
            p = msg.pose.position
            tp.append(np.array([p.x, p.y, p.z]))
        elif topic == setup.command_topic:
            if hasattr(msg, "data"):
                ct.append(t_ns * 1e-9)
                cv.append(np.asarray(msg.data, dtype=float))
        elif topic == f"{NODE}/status":
            try:
                status.append((t_ns * 1e-9, json.loads(msg.data)))
            except ValueError:
                pass
        else:
            for st in msg.status:
                if st.name.startswith("itasc_node"):
                    diags.append((t_ns * 1e-9, {kv.key: kv.value for kv in st.values}))
    n = tree.n_joints
    q = np.asarray(js_q, dtype=float).reshape(-1, n)
    ee = np.array([tree.forward_kinematics(qi, tip)[:3, 3] for qi in q]).reshape(-1, 3)
    return BagData(
        js_t=np.asarray(js_t),
        js_recv=np.asarray(js_recv),
        js_q=q,
        js_v=np.asarray(js_v, dtype=float).reshape(-1, n),
        ee=ee,
        target_t=np.asarray(tt),
        target_p=np.asarray(tp, dtype=float).reshape(-1, 3),
        cmd_t=np.asarray(ct),
        cmd=np.asarray(cv, dtype=float).reshape(-1, len(cmd_joints)),
        status=status,
        diagnostics=diags,
    )


@dataclass
class SolveTrace:
    """The node's solves, one per recorded command, recomputed offline (k commands).

    Attributes:
        t: (k,) time of the tick that published the command [s] (the node's clock; NaN when
            the journal does not cover the command).
        sigma_min: (k,) smallest singular value (NaN where not reproduced).
        damping: (k,) damping used. locked: (k,) joints locked at a position limit.
        source: how the trace was obtained.
        status: (k,) the tick's recorded status, or the kind of a zero outside a tick
            ('shutdown', ...); '' where not reproduced.
    """

    t: Array
    sigma_min: Array
    damping: Array
    locked: Array
    source: str
    status: list[str] = field(default_factory=list)

    def reordered(self, order: NDArray[np.intp]) -> SolveTrace:
        """The same trace with its commands in ``order``."""
        return SolveTrace(
            self.t[order],
            self.sigma_min[order],
            self.damping[order],
            self.locked[order],
            self.source,
            [self.status[i] for i in order],
        )


def solve_trace(report: Any, playback: Any) -> SolveTrace | None:
    """The solves behind the recorded commands, from the exact replay of the node's journal."""
    if report is None or playback is None or not report.matched:
        return None
    ticks = [None if i is None else playback.ticks[i] for i in report.matched]

    def col(name: str) -> Array:
        return np.array([math.nan if t is None else getattr(t, name) for t in ticks], dtype=float)

    status = ["" if t is None else (t.status if t.kind == "tick" else t.kind) for t in ticks]
    return SolveTrace(
        col("t"),
        col("sigma_min"),
        col("damping"),
        col("locked"),
        "itasc-replay --compare (the node's journal played back exactly)",
        status,
    )


def position_errors(data: BagData, phases: list[Phase]) -> Array:
    """(k,) |target - effector| [m] at each joint state's stamp (NaN outside the phases).

    The target is interpolated between the generator's samples of the same phase only, so a
    phase change (a jump of the target) is never smeared into either phase.
    """
    err = np.full(data.js_t.shape, np.nan)
    for ph in phases:
        t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
        ts = (data.target_t >= t0) & (data.target_t < t1)
        if np.count_nonzero(ts) < 2:
            continue
        tt, tp = data.target_t[ts], data.target_p[ts]
        sel = (data.js_t >= tt[0]) & (data.js_t <= tt[-1])
        tgt = _interp_positions(data.js_t[sel], tt, tp)
        err[sel] = np.linalg.norm(data.ee[sel] - tgt, axis=1)
    return err


def _float_values(rows: list[tuple[float, dict[str, str]]], key: str) -> Array:
    out = []
    for _t, d in rows:
        try:
            out.append(float(d[key]))
        except (KeyError, ValueError):
            pass
    return np.asarray(out, dtype=float)


def compute_metrics(
    data: BagData,
    phases: list[Phase],
    path: TargetPath,
    vlim: Array,
    lower: Array,
    upper: Array,
    trace: SolveTrace | None,
    damping_epsilon: float,
    control_rate: float,
    limits: Sequence[JointLimits] = (),
) -> dict[str, Any]:
    """Every number of the summary, from the recorded bag (and its offline replay)."""
    m: dict[str, Any] = {}
    if limits and data.cmd_t.size > 2:  # over the whole run, the ticks' times
        acc, jerk = limit_ratios(data.cmd_t, data.cmd, limits)
        m["max_joint_acceleration_ratio"] = float(np.max(acc))
        m["max_joint_jerk_ratio"] = float(np.max(jerk))
        m["max_joint_acceleration_index"] = int(np.argmax(acc)) + 1  # the command reaching it
        m["max_joint_jerk_index"] = int(np.argmax(jerk)) + 2
    err_all = position_errors(data, phases)
    per_phase: dict[str, Any] = {}
    for ph in phases:
        t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
        sel = (data.js_t >= t0) & (data.js_t < t1) & np.isfinite(err_all)
        entry: dict[str, Any] = {"duration_s": ph.duration, "feedforward": ph.feedforward}
        cmd_sel = (data.cmd_t >= t0) & (data.cmd_t < t1)
        if cmd_sel.any():
            entry["max_joint_speed_ratio"] = float(np.max(np.abs(data.cmd[cmd_sel]) / vlim))
        if ph.tracking:
            ss = sel & (data.js_t >= t0 + STEADY_FRACTION * ph.duration)
            entry["rms_error_m"] = _rms(err_all[ss])
            entry["max_error_m"] = float(np.max(err_all[ss])) if ss.any() else math.nan
            entry["samples"] = int(np.count_nonzero(ss))
        elif ph.kind == "steps":
            entry["step_hold_s"] = ph.duration / len(STEP_OFFSETS)
            entry["settle_times_s"] = _settle_times(data, ph, path)
            st = [s for s in entry["settle_times_s"] if s is not None]
            entry["settle_time_mean_s"] = float(np.mean(st)) if st else math.nan
            entry["settle_time_max_s"] = float(np.max(st)) if st else math.nan
            entry["settled"] = f"{len(st)}/{len(entry['settle_times_s'])}"
        else:
            last = sel & (data.js_t >= t1 - 0.2)
            entry["final_distance_m"] = float(np.mean(err_all[last])) if last.any() else math.nan
            entry["target_distance_from_home_m"] = UNREACHABLE_DISTANCE
            if trace is not None:
                rs = (trace.t >= t0) & (trace.t < t1) & np.isfinite(trace.sigma_min)
                entry["sigma_min_min"] = (
                    float(np.min(trace.sigma_min[rs])) if rs.any() else math.nan
                )
                entry["damping_max_used"] = (
                    float(np.max(trace.damping[rs])) if rs.any() else math.nan
                )
            entry["commands_finite"] = bool(np.all(np.isfinite(data.cmd[cmd_sel])))
        per_phase[ph.name] = entry
    m["phases"] = per_phase
    m["tracking_error_feedforward_m"] = per_phase["circle_ff"]["rms_error_m"]
    m["tracking_error_feedback_only_m"] = per_phase["circle_fb"]["rms_error_m"]
    m["figure8_error_feedforward_m"] = per_phase["figure8_ff"]["rms_error_m"]
    m["figure8_error_feedback_only_m"] = per_phase["figure8_fb"]["rms_error_m"]
    # loop rate and solve time
    t_first, t_last = phases[0].start_ns * 1e-9, phases[-1].end_ns * 1e-9
    in_run = (data.cmd_t >= t_first) & (data.cmd_t < t_last)
    m["control_rate_hz"] = control_rate
    m["command_rate_hz"] = float(np.count_nonzero(in_run) / max(t_last - t_first, 1e-9))
    rates = _float_values(data.diagnostics, "loop_rate_hz")
    m["loop_rate_hz"] = float(np.median(rates)) if rates.size else math.nan
    m["loop_rate_min_hz"] = float(np.min(rates)) if rates.size else math.nan
    solve_mean = _float_values(data.diagnostics, "solve_time_mean_ms")
    solve_max = _float_values(data.diagnostics, "solve_time_max_ms")
    m["solve_time_mean_ms"] = (
        float(np.mean(solve_mean[solve_mean > 0])) if np.any(solve_mean > 0) else math.nan
    )
    m["solve_time_max_ms"] = float(np.max(solve_max)) if solve_max.size else math.nan
    # speeds and limits
    cmds = data.cmd[in_run]
    if cmds.size:
        ratio = np.abs(cmds) / vlim
        j = int(np.argmax(np.max(ratio, axis=0)))
        m["max_joint_speed_rad_s"] = float(np.max(np.abs(cmds)))
        m["max_joint_speed_ratio"] = float(np.max(ratio))
        m["max_joint_speed_joint"] = j
        m["velocity_limit_hits"] = int(np.count_nonzero(np.any(ratio >= 1.0 - 1e-9, axis=1)))
        m["commands_finite"] = bool(np.all(np.isfinite(cmds)))
    m["max_measured_joint_speed_rad_s"] = (
        float(np.max(np.abs(data.js_v))) if data.js_v.size else math.nan
    )
    at_limit = (data.js_q <= lower + 1e-9) | (data.js_q >= upper - 1e-9)
    m["position_limit_hits"] = int(np.count_nonzero(np.any(at_limit, axis=1)))
    m["joints_within_limits"] = bool(
        np.all((data.js_q >= lower - 1e-9) & (data.js_q <= upper + 1e-9))
    )
    if trace is not None:
        run = (trace.t >= t_first) & (trace.t < t_last) & np.isfinite(trace.sigma_min)
        sig = trace.sigma_min[run]
        m["sigma_min_min"] = float(np.min(sig)) if sig.size else math.nan
        m["singularity_events"] = _runs(sig < damping_epsilon)
        m["damped_ticks"] = int(np.count_nonzero(sig < damping_epsilon))
        m["locked_ticks"] = int(np.count_nonzero(trace.locked[run]))
        m["solve_trace"] = trace.source
    m["damping_epsilon"] = damping_epsilon
    m["status_messages"] = len(data.status)
    return m


def _runs(mask: NDArray[np.bool_]) -> int:
    if mask.size == 0:
        return 0
    x = mask.astype(np.int8)
    return int(x[0] + np.count_nonzero(np.diff(x) == 1))


def _settle_times(data: BagData, ph: Phase, path: TargetPath) -> list[float | None]:
    """Per step: time [s] after which the effector stays within the band of the target."""
    hold = ph.duration / len(STEP_OFFSETS)
    t0 = ph.start_ns * 1e-9
    out: list[float | None] = []
    for i in range(len(STEP_OFFSETS)):
        ts, te = t0 + i * hold, t0 + (i + 1) * hold
        sel = (data.js_t >= ts) & (data.js_t < te)
        if not sel.any():
            out.append(None)
            continue
        tgt = path.center + np.array(STEP_OFFSETS[i])
        err = np.linalg.norm(data.ee[sel] - tgt, axis=1)
        band = max(SETTLE_BAND * float(err[0]), SETTLE_FLOOR)
        outside = np.flatnonzero(err > band)
        if outside.size == 0:
            out.append(0.0)
        elif outside[-1] == err.size - 1:
            out.append(None)  # not settled within the hold time
        else:
            out.append(float(data.js_t[sel][outside[-1] + 1] - ts))
    return out


# ---------------------------------------------------------------------------------------------
# Plots


def write_plots(
    out: Path,
    data: BagData,
    phases: list[Phase],
    trace: SolveTrace | None,
    vlim: Array,
    joint_names: Sequence[str],
    damping_epsilon: float,
    limits: Sequence[JointLimits] = (),
) -> list[Path]:
    """PNG plots: tracking error per phase, joint velocities and accelerations, sigma_min."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t_ref = phases[0].start_ns * 1e-9
    err = position_errors(data, phases)
    by_name = {p.name: p for p in phases}
    paths: list[Path] = []

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, shape in zip(axes[:2], ("circle", "figure8"), strict=True):
        for suffix, colour, label in (
            ("ff", "tab:green", "feed-forward"),
            ("fb", "tab:red", "feedback only"),
        ):
            ph = by_name[f"{shape}_{suffix}"]
            t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
            sel = (data.js_t >= t0) & (data.js_t < t1)
            ax.semilogy(
                data.js_t[sel] - t0,
                1e3 * np.maximum(err[sel], 1e-6),
                color=colour,
                lw=0.8,
                label=label,
            )
            ax.axvline(STEADY_FRACTION * ph.duration, color="grey", ls=":", lw=0.8)
        ax.set(
            title=f"{shape}: position error",
            xlabel="time in phase [s]",
            ylabel="|target - effector| [mm]",
        )
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    ph = by_name["steps"]
    t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
    sel = (data.js_t >= t0) & (data.js_t < t1)
    axes[2].plot(data.js_t[sel] - t0, 1e3 * err[sel], lw=0.8)
    axes[2].set(title="step changes: position error", xlabel="time in phase [s]", ylabel="[mm]")
    axes[2].grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(out / "tracking_error.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    def shade(ax: Any) -> None:
        for i, p in enumerate(phases):
            a, b = p.start_ns * 1e-9 - t_ref, p.end_ns * 1e-9 - t_ref
            if i % 2 == 0:
                ax.axvspan(a, b, color="0.92", lw=0)
            ax.text(
                (a + b) / 2,
                1.0,
                p.name,
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=7,
            )

    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 8), sharex=True)
    shade(ax1)
    for j, name in enumerate(joint_names):
        ax1.plot(data.cmd_t - t_ref, data.cmd[:, j], lw=0.6, label=name)
    ax1.set(ylabel="command [rad/s]")
    ax1.legend(fontsize=7, ncol=4, loc="lower left")
    ax1.grid(True, alpha=0.3)
    shade(ax2)
    if data.cmd.size:
        ax2.plot(data.cmd_t - t_ref, np.max(np.abs(data.cmd) / vlim, axis=1), lw=0.6)
    ax2.axhline(1.0, color="red", ls="--", lw=0.8, label="velocity limit")
    ax2.set(ylabel="max |q'| / limit", ylim=(0, 1.1))
    ax2.legend(fontsize=8)
    ax2.grid(True, alpha=0.3)
    shade(ax3)
    if limits and data.cmd_t.size > 2:
        acc, jerk = limit_ratios(data.cmd_t, data.cmd, limits)
        ax3.plot(data.cmd_t[1:] - t_ref, acc, lw=0.6, label="max |q''| / acceleration limit")
        ax3.plot(data.cmd_t[2:] - t_ref, jerk, lw=0.6, label="max |q'''| / jerk limit")
    ax3.axhline(1.0, color="red", ls="--", lw=0.8)
    ax3.set(xlabel="time [s]", ylabel="ratio to the limit", ylim=(0, 1.2))
    ax3.legend(fontsize=8)
    ax3.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(out / "joint_velocities.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(12, 3.5))
    shade(ax)
    if trace is not None:
        ax.semilogy(trace.t - t_ref, trace.sigma_min, lw=0.7, label="sigma_min (offline)")
    st = [(t, d["sigma_min"]) for t, d in data.status if "sigma_min" in d]
    if st:
        ax.semilogy(
            [t - t_ref for t, _ in st],
            [s for _, s in st],
            ".",
            ms=2,
            label="sigma_min (node ~/status)",
        )
    ax.axhline(damping_epsilon, color="red", ls="--", lw=0.8, label="damping_epsilon")
    ax.set(xlabel="time [s]", ylabel="smallest singular value")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    paths.append(out / "sigma_min.png")
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)
    return paths


# ---------------------------------------------------------------------------------------------
# Summary


def _pct(a: float, b: float) -> str:
    return (
        "n/a"
        if not (math.isfinite(a) and math.isfinite(b) and b)
        else f"{100 * (a - b) / b:+.1f} %"
    )


def _mm(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{1e3 * x:.3f} mm"


def _f(x: Any, spec: str, unit: str = "", scale: float = 1.0) -> str:
    """``x * scale`` formatted with ``spec`` and ``unit``; 'n/a' for a missing or NaN value."""
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{scale * float(x):{spec}}{unit}"


def summary_table(
    m: dict[str, Any],
    offline: dict[str, dict[str, float]],
    joint_names: Sequence[str],
    vlim: Array,
) -> str:
    """The human-readable summary."""
    ph = m["phases"]
    rows: list[tuple[str, str]] = [
        (
            "loop rate (node, median of /diagnostics)",
            f"{_f(m['loop_rate_hz'], '.1f', ' Hz')} of {m['control_rate_hz']:.0f} Hz "
            f"(min {_f(m['loop_rate_min_hz'], '.1f')}); commands recorded at "
            f"{_f(m['command_rate_hz'], '.1f', ' Hz')}",
        ),
        (
            "solve time (node, /diagnostics)",
            f"mean {_f(m['solve_time_mean_ms'], '.3f', ' ms')}, max "
            f"{_f(m['solve_time_max_ms'], '.3f', ' ms')}",
        ),
    ]
    for shape in ("circle", "figure8"):
        for suffix, label in (("ff", "feed-forward"), ("fb", "feedback only")):
            key = f"{shape}_{suffix}"
            off = offline.get(key, {})
            rows.append(
                (
                    f"{shape} RMS error, {label}",
                    f"{_mm(ph[key]['rms_error_m'])} over DDS (max {_mm(ph[key]['max_error_m'])}); "
                    f"offline {_mm(off.get('rms_error_m', math.nan))}",
                )
            )
    j = m.get("max_joint_speed_joint", 0)
    rows += [
        (
            "max joint speed vs limit",
            f"{_f(m.get('max_joint_speed_rad_s'), '.3f', ' rad/s')}; largest ratio "
            f"{_f(m.get('max_joint_speed_ratio'), '.1f', ' %', 100)} ({joint_names[j]}, limit "
            f"{vlim[j]:.3f} rad/s)",
        ),
        (
            "max joint acceleration / jerk vs limit",
            f"{_f(m.get('max_joint_acceleration_ratio'), '.1f', ' %', 100)} / "
            f"{_f(m.get('max_joint_jerk_ratio'), '.1f', ' %', 100)} (joint_limits, over the "
            "whole run at the ticks' times)",
        ),
        (
            "limit hits",
            f"{m.get('velocity_limit_hits', 0)} commands at a velocity limit; "
            f"{m['position_limit_hits']} joint states at a position limit; "
            f"{m.get('locked_ticks', 0)} ticks with a locked joint",
        ),
        (
            "singularity events (sigma_min < damping_epsilon)",
            f"{m.get('singularity_events', 0)} ({m.get('damped_ticks', 0)} ticks); "
            f"smallest sigma_min {_f(m.get('sigma_min_min'), '.3g')} "
            f"(damping_epsilon {m['damping_epsilon']:g})",
        ),
        (
            "step response settle time (2 % band)",
            f"mean {_f(ph['steps']['settle_time_mean_s'], '.3f', ' s')}, max "
            f"{_f(ph['steps']['settle_time_max_s'], '.3f', ' s')} ({ph['steps']['settled']} "
            f"settled within their {ph['steps']['step_hold_s']:.2f} s)",
        ),
        (
            "unreachable target 2 m away",
            f"stretched to {_f(ph['unreachable']['final_distance_m'], '.3f', ' m')} from it; "
            f"sigma_min {_f(ph['unreachable'].get('sigma_min_min'), '.3g')}; speed "
            f"{_f(ph['unreachable'].get('max_joint_speed_ratio'), '.1f', ' %', 100)} of limit; "
            f"joints within limits: {m['joints_within_limits']}; finite commands: "
            f"{m.get('commands_finite', False)}",
        ),
    ]
    if "replay_compare" in m:
        rc = m["replay_compare"]
        rows.append(
            (
                "offline replay of the bag (itasc-replay --compare)",
                f"{rc['compared']}/{rc['commands']} commands recomputed from the node's "
                f"journal, largest difference {rc['max_abs_diff']:.3g} rad/s "
                f"(tolerance {rc['tolerance_rad_s']:g}), {rc['mismatches']} mismatches",
            )
        )
    width = max(len(r[0]) for r in rows)
    lines = ["", "itasc-demo summary", "=" * 18]
    lines += [f"{k:<{width}}  {v}" for k, v in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# main


def _parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="itasc-demo",
        description="Simulated robot + iTaSC node over DDS: circle and figure eight with and "
        "without feed-forward, step changes, an unreachable target; bag, plots, summary.",
    )
    p.add_argument("--robot", choices=["panda", "ur5"], default="panda")
    p.add_argument(
        "--duration",
        type=positive_float,
        default=DEFAULT_DURATION,
        help="total duration of the phases [s] (default %(default)g; at least "
        f"{min_duration():g}: each phase needs time to settle)",
    )
    p.add_argument(
        "--radius",
        type=positive_float,
        default=RADIUS,
        metavar="M",
        help="radius of the circle and size of the figure eight [m] (default %(default)g); "
        "one the arm cannot reach (e.g. 2.0) shows a failing run",
    )
    p.add_argument("--out", help="output folder (default demo_output/<timestamp>)")
    p.add_argument(
        "--json", action="store_true", help="print the metrics as one JSON object on the last line"
    )
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument(
        "--scenario",
        metavar="NAME",
        help="run a demo scenario instead (in-process, ideal robot; see --list-scenarios): "
        "its plot <NAME>.png goes to --out, --json prints its metrics",
    )
    p.add_argument(
        "--list-scenarios", action="store_true", help="list the scenarios of --scenario and exit"
    )
    p.add_argument(
        "--quick", action="store_true", help="with --scenario: a shorter run (as the tests do)"
    )
    return p


def run_scenario(name: str, out: Path, quick: bool, as_json: bool) -> int:
    """``itasc-demo --scenario NAME``: run it, write its plot, print its metrics."""
    from . import scenarios

    try:
        module = scenarios.load(name)
    except ItascError as exc:
        near = closest(name, scenarios.names())
        raise UsageError(f"{exc}" + (f"; did you mean {near!r}?" if near else "")) from None
    writable_dir(out, "--out")
    try:
        metrics = module.run(out, quick=quick)
    except (ItascError, FileNotFoundError) as exc:  # e.g. example-robot-data not installed
        print(f"itasc-demo: scenario {name}: {exc}", file=sys.stderr)
        return 1
    with (out / f"{name}.json").open("w") as fh:
        json.dump(_finite_or_none(metrics), fh, indent=2, default=_json_default)
    if as_json:
        print(json.dumps(_finite_or_none(metrics), default=_json_default))
    else:
        print(f"itasc-demo: scenario {name}: {module.DESCRIPTION}")
        for k, v in metrics.items():
            print(f"  {k}: {v}")
        print(f"Output: {out / (name + '.png')}, {out / (name + '.json')}")
    return 0


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _json_default(v: Any) -> Any:
    if isinstance(v, np.floating | np.integer):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def _finite_or_none(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite_or_none(v) for v in obj]
    return obj


@dataclass
class DemoSetup:
    """Everything a DDS demo run needs, resolved from the command line before it starts."""

    args: argparse.Namespace
    out: Path
    urdf: Path
    params_file: Path
    config: Any
    tree: KinematicTree
    tip: str
    gain: float
    home_q: Array
    path: TargetPath
    phases: list[Phase]
    setup: Any
    domain: int
    domain_source: str

    @property
    def bag(self) -> Path:
        """The bag the run records."""
        return self.out / "bag"

    @property
    def cmd_joints(self) -> list[str]:
        """The commanded joints, in command order."""
        return list(self.config.joints or self.tree.joint_names)


def dds_domain(environ: Mapping[str, str]) -> tuple[int | None, str]:
    """The user's ``ROS_DOMAIN_ID`` (validated) or None for a private one, and where from.

    Raises:
        UsageError: a ROS_DOMAIN_ID that is no domain id.
    """
    raw = environ.get("ROS_DOMAIN_ID", "").strip()
    if not raw:
        return None, "private, picked by itasc-demo; set ROS_DOMAIN_ID to choose"
    try:
        domain = int(raw)
    except ValueError:
        raise UsageError(f"ROS_DOMAIN_ID={raw!r} is not an integer; valid: 0 to 232") from None
    if not 0 <= domain <= MAX_DOMAIN_ID:
        raise UsageError(f"ROS_DOMAIN_ID={domain} is out of range; valid: 0 to {MAX_DOMAIN_ID}")
    return domain, "ROS_DOMAIN_ID"


def _timestamped_out(args: argparse.Namespace) -> Path:
    return Path(args.out or Path("demo_output") / datetime.now().strftime("%Y%m%d-%H%M%S"))


def prepare(args: argparse.Namespace) -> DemoSetup:
    """Check the arguments and resolve the robot, the phases and the DDS domain.

    Raises:
        UsageError: a duration too short, an output folder that cannot be written or already
            holds a bag, a ROS_DOMAIN_ID that is no domain id.
    """
    shortest = min_duration()
    if args.duration < shortest:
        raise UsageError(
            f"--duration {args.duration:g} is too short: the six phases need at least "
            f"{shortest:g} s to settle ({STEP_HOLD_MIN:g} s a step, {TRACKING_MIN:g} s the "
            f"shortest tracking phase); default {DEFAULT_DURATION:g}"
        )
    wanted, source = dds_domain(os.environ)
    out = writable_dir(_timestamped_out(args), "--out")
    if (out / "bag").exists():
        raise UsageError(f"{out / 'bag'} exists; choose another --out")
    urdf = robot_urdf(args.robot)
    params_file = share_file("config", f"{args.robot}.yaml")
    config = config_from_parameters(read_params_file(params_file))
    tree = KinematicTree.from_urdf(urdf.read_text(encoding="utf-8"))
    pose_cfg = next(c for c in config.constraints if c.takes_target)
    home_q = home_pose(tree)
    home = tree.forward_kinematics(home_q, pose_cfg.link)
    path = TargetPath(home[:3, 3], spatial.matrix_to_quat(home[:3, :3]), args.radius)
    domain = apply_local_dds_env(wanted)
    return DemoSetup(
        args=args,
        out=out,
        urdf=urdf,
        params_file=params_file,
        config=config,
        tree=tree,
        tip=pose_cfg.link,
        gain=pose_cfg.gain,
        home_q=home_q,
        path=path,
        phases=plan_phases(args.duration),
        setup=load_setup(None, params_file, str(urdf)),
        domain=domain,
        domain_source=source,
    )


def _process_args(d: DemoSetup) -> dict[str, list[str]]:
    """The command lines of the simulated robot and the node."""
    sim = ["itasc_ros.tools.sim_robot", "--ros-args", "-p", f"urdf_file:={d.urdf}"]
    sim += ["-p", f"rate:={SIM_RATE}", "-p", "joints:=[" + ",".join(d.cmd_joints) + "]"]
    node = ["itasc_ros.ros.node", "--ros-args", "--params-file", str(d.params_file)]
    node += ["-p", f"urdf_file:={d.urdf}"]
    return {"sim": [sys.executable, "-m", *sim], "node": [sys.executable, "-m", *node]}


def run_live(d: DemoSetup, wall0: float) -> None:
    """Start the processes, run the phases while recording, stop everything.

    Raises:
        RuntimeError: a process died or did not come up.
    """
    env = local_dds_env(d.domain)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    logs = {"sim": d.out / "sim_robot.log", "node": d.out / "itasc_node.log"}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    run: DemoRun | None = None
    writer = TapWriter(d.bag, "mcap", d.setup.joint_topic)
    try:
        writer.open()
        for name, cmd in _process_args(d).items():
            procs[name] = _start(cmd, env, logs[name])
        run = DemoRun(d.setup, d.tree, d.tip, writer, sys.stdout)
        run.wait_ready(procs, logs)
        write_parameters_snapshot(writer, run.now_ns(), run.fetch_parameters(), NODE)
        t_ready = time.monotonic() - wall0
        print(f"itasc-demo: processes up after {t_ready:.1f} s; running the phases", flush=True)
        run.run_phases(d.phases, d.path, d.config.control_rate)
        # Stop the node first (it sends its zero command), record it, then stop the rest.
        stop_process(procs["node"])
        time.sleep(0.3)
    finally:
        if run is not None:
            run.close()
        writer.close()
        for p in procs.values():
            stop_process(p)


def _replay_bag(d: DemoSetup) -> tuple[Any, Any]:
    """The node's journal played back and every command compared (None, None on failure)."""
    try:
        bag_setup = load_setup(d.bag, urdf=str(d.urdf))
        playback = play_journal(d.bag, bag_setup)
        if playback is None:
            raise RuntimeError(f"no journal on {bag_setup.journal_topic} in the bag")
        joints = setup_joints(bag_setup, playback)
        return compare_commands(d.bag, bag_setup, playback, joints), playback
    except Exception as exc:  # the analysis must not hide the demo's results
        print(f"itasc-demo: offline replay of the bag failed: {exc}", file=sys.stderr)
        return None, None


def _offline_tracking(d: DemoSetup) -> dict[str, dict[str, float]]:
    """``circle_tracking`` (what ``itasc-bench tracking`` runs) for each tracking phase."""
    offline: dict[str, dict[str, float]] = {}
    for ph in d.phases:
        if ph.tracking:
            r = circle_tracking(
                d.tree,
                d.tip,
                d.home_q,
                ph.feedforward,
                d.path.radius,
                SPEED,
                d.gain,
                1.0 / d.config.control_rate,
                ph.duration,
                ph.kind,
                plane=PLANE,
            )
            keys = ("rms_error_m", "max_error_m", "max_joint_speed_ratio", "expected_lag_m")
            offline[ph.name] = {k: r[k] for k in keys}
    return offline


def analyse(d: DemoSetup) -> tuple[dict[str, Any], BagData, SolveTrace | None, list[JointLimits]]:
    """The metrics of the recorded bag, its offline replay and the offline tracking figures."""
    replay_cmp, playback = _replay_bag(d)
    data = read_demo_bag(d.bag, d.setup, d.tree, d.tip, d.cmd_joints)
    trace = solve_trace(replay_cmp, playback)
    if trace is not None:
        trace.t = np.where(np.isfinite(trace.t), trace.t, data.cmd_t)
        order = np.argsort(trace.t, kind="stable")
        trace = trace.reordered(order)
        # the ticks' times rather than the recorder's reception times
        data.cmd_t, data.cmd = trace.t, data.cmd[order]
    by_joint = d.config.limits()
    limits = [by_joint.get(j, JointLimits()) for j in d.cmd_joints]
    measured = [p for p in d.phases if p.measured]
    t = d.tree
    metrics = compute_metrics(
        data,
        measured,
        d.path,
        t.velocity_limits,
        t.lower,
        t.upper,
        trace,
        d.config.damping_epsilon,
        d.config.control_rate,
        limits,
    )
    metrics["commands_recorded"] = int(data.cmd_t.size)
    if replay_cmp is not None:
        metrics["replay_compare"] = replay_cmp.to_dict()
    offline = _offline_tracking(d)
    metrics["offline"] = offline
    metrics["offline_tracking_error_feedforward_m"] = offline["circle_ff"]["rms_error_m"]
    metrics["offline_tracking_error_feedback_only_m"] = offline["circle_fb"]["rms_error_m"]
    return metrics, data, trace, limits


def health_flags(
    d: DemoSetup, metrics: dict[str, Any], data: BagData, trace: SolveTrace | None
) -> list[str]:
    """Every phase that did not settle and every figure over a limit, with its cause."""
    ticks = None if trace is None else CommandTicks(trace.t, trace.status)
    js = JointStateTimes(data.js_t, data.js_recv)
    measured = [p for p in d.phases if p.measured]
    timeout = d.config.input_timeout
    return phase_flags(metrics, metrics["offline"]) + limit_flags(
        metrics, ticks, measured, js, timeout
    )


def _explain_offline(d: DemoSetup, metrics: dict[str, Any]) -> str:
    offline = metrics["offline"]
    ff, fb = metrics["tracking_error_feedforward_m"], metrics["tracking_error_feedback_only_m"]
    off_ff, off_fb = offline["circle_ff"]["rms_error_m"], offline["circle_fb"]["rms_error_m"]
    rate = d.config.control_rate
    return (
        f"\nOffline = itasc_ros.core.scenarios.circle_tracking (what `itasc-bench tracking` "
        f"runs) with the same K = {d.gain:g} 1/s, radius {d.path.radius:g} m, speed {SPEED} "
        f"m/s, period 1/{rate:g} s and steady-state window (second half of the phase); it "
        f"integrates q += q' dt exactly, every tick. Feedback only, both show the lag "
        f"v / sqrt(K^2 + w^2) = {_mm(offline['circle_fb']['expected_lag_m'])}: "
        f"{_mm(fb)} over DDS vs {_mm(off_fb)} offline ({_pct(fb, off_fb)}). With "
        f"feed-forward: {_mm(ff)} over DDS vs {_mm(off_ff)} offline ({_mm(ff - off_ff)} "
        f"more): over DDS the node ticks on its own clock at "
        f"{_f(metrics['loop_rate_hz'], '.0f', ' Hz')}, "
        f"its joint state is up to 1/{SIM_RATE:g} s old, the target is held between the "
        "generator's ticks and each command acts one DDS hop later."
    )


def report(d: DemoSetup, wall0: float, t_run: float) -> int:
    """Analyse the bag, print the summary, the flags and the verdict; 0 when healthy."""
    metrics, data, trace, limits = analyse(d)
    vlim = d.tree.velocity_limits
    print(summary_table(metrics, metrics["offline"], d.cmd_joints, vlim))
    print(_explain_offline(d, metrics))
    plots: list[Path] = []
    if not d.args.no_plots:
        measured = [p for p in d.phases if p.measured]
        eps = d.config.damping_epsilon
        plots = write_plots(d.out, data, measured, trace, vlim, d.cmd_joints, eps, limits)
    flags = health_flags(d, metrics, data, trace)
    metrics["verdict"] = {"healthy": not flags, "flags": flags}
    with (d.out / "metrics.json").open("w") as fh:
        json.dump(_finite_or_none(metrics), fh, indent=2, default=_json_default)
    wall = time.monotonic() - wall0
    metrics.update(wall_time_s=wall, run_time_s=t_run, bag=str(d.bag))
    metrics["plots"] = [str(p) for p in plots]
    print(
        f"\nOutput: {d.out}/ (bag/, {', '.join(p.name for p in plots) or 'no plots'}, "
        f"metrics.json, logs); wall time {wall:.1f} s\n"
    )
    for flag in flags:
        print(f"itasc-demo: FLAG: {flag}")
    print(verdict_line("itasc-demo", flags), flush=True)
    if d.args.json:
        print(json.dumps(_finite_or_none(metrics), default=_json_default))
    return 0 if not flags else 1


def run_demo(args: argparse.Namespace) -> int:
    """The DDS demo: prepare, run live, report. Returns the exit status."""
    wall0 = time.monotonic()
    d = prepare(args)
    print(
        f"itasc-demo: DDS domain {d.domain} ({d.domain_source}; shared memory only); "
        f"{d.tree.name} ({d.tree.n_joints} joints, tip {d.tip}), {len(d.phases)} phases in "
        f"{args.duration:g} s, circle radius {d.path.radius:g} m, control "
        f"{d.config.control_rate:g} Hz, K = {d.gain:g}; output {d.out}",
        flush=True,
    )
    signal.signal(signal.SIGTERM, _raise_interrupt)  # stop the processes on SIGTERM too
    try:
        run_live(d, wall0)
    except KeyboardInterrupt:
        print("\nitasc-demo: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as exc:
        print(f"\nitasc-demo: {exc}", file=sys.stderr)
        print("itasc-demo: verdict: NOT healthy: the run did not complete", file=sys.stderr)
        return 1
    return report(d, wall0, time.monotonic() - wall0)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (0 healthy, 1 not, 2 usage)."""
    args = _parser().parse_args(argv)
    if args.list_scenarios:
        from . import scenarios

        for name, text in scenarios.descriptions().items():
            print(f"{name}: {text}")
        return 0
    if args.scenario:
        out = _timestamped_out(args)
        return usage_status(
            "itasc-demo", lambda: run_scenario(args.scenario, out, args.quick, args.json)
        )
    return usage_status("itasc-demo", lambda: run_demo(args))


if __name__ == "__main__":
    sys.exit(main())
