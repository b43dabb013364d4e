"""The ``loop`` and ``soak`` benchmarks: the node in closed loop with the simulated robot.

Three processes on this machine, over shared-memory DDS in a private domain:

1. the node, ``python -m itasc_ros.ros.node`` with ``urdf/<robot>.urdf``,
   ``config/<robot>.yaml`` and ``control_rate`` = ``rate``;
2. the simulated robot, ``python -m itasc_ros.tools.sim_robot`` (Float64MultiArray commands,
   integrating and publishing ``joint_states`` at ``sim_rate``, default ``rate``);
3. this process: it publishes the target (a circle of 0.1 m radius at 0.25 m/s in the root
   frame's y-z plane around the home-pose effector position, ``PoseStamped`` at 100 Hz on
   ``/itasc_node/target_pose``) and subscribes to the commands and to ``joint_states``.

Measurements, over ``duration`` seconds after the first command and a warm-up:

Times: a command's *arrival* is its DDS reception timestamp in this process and its *publish*
time the DDS source timestamp (rclpy ``MessageInfo``, Iron and newer), so this process's own
executor delays do not count; on Humble both fall back to the callback time (``timestamps`` in
the result says which). All processes share the machine's wall clock.

* **Command rate**: commands that arrived in the window / duration [Hz].
* **Period error**: ``|interval - 1/rate|`` of successive command arrivals (so it includes DDS
  delivery jitter) [ms]: p50, p99, max. ``publish_period_error_*``: the same from the node's
  publish times (the node's own timer jitter).
* **Missed ticks**: an interval longer than ``1.5 / rate`` counts ``round(interval * rate) - 1``
  missed ticks; the fraction is missed / (duration * rate). A late tick followed by a quick
  catch-up counts as missed although its command came; ``missed_tick_fraction_by_count``
  (1 - commands / expected ticks) does not.
* **End-to-end latency**: the commands do not carry the stamp of the joint state they were
  computed from, so for every ``joint_states`` message the latency is the arrival time (wall
  clock, this process) of the *next* command minus the message's ``header.stamp`` (the sim
  robot's wall clock; all processes share the machine's clock). It is measured from the moment
  the state was published to the moment a command is available to the robot, and it includes the
  node's phase (up to one control period). It is a lower bound of the true state-to-command
  latency, because the next command may have been computed from an older state. p50, p99 [ms].
  ``delivery_*``: node publish -> arrival here [ms].
* **CPU** of the node process: (user + system time) / wall time over the run, from
  ``/proc/<pid>/stat`` [%] (100 % = one core); the sim robot's is reported too.
* **Memory**: resident set size (``VmRSS`` of ``/proc/<pid>/status``) of the node at the start
  and end of the run [kB]; the soak variant also fits a growth rate [kB/min].
* **Commands out of limits**: commands with a non-finite value, the wrong length, or a value
  above the URDF velocity limit, over the whole run including start-up (must be 0).
* **Tracking error**: effector position of every 10th joint state against the target at the
  state's stamp [mm] (RMS, max); it includes the DDS and control delays.

Usage::

    python -m itasc_ros.tools.bench_loop --robot panda --rate 1000 --duration 20
    itasc-bench loop --rate 1000 --duration 60
"""

from __future__ import annotations

import argparse
import array
import json
import math
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from itasc_ros.core import KinematicTree
from itasc_ros.core.scenarios import path_point
from itasc_ros.core.spatial import matrix_to_quat
from itasc_ros.tools.dds_env import apply_local_dds_env, local_dds_env, private_domain_id
from itasc_ros.tools.home_poses import home_pose
from itasc_ros.tools.resources import robot_urdf, share_file

#: Keys of the dict returned by :func:`run_loop_bench` (and more: see its docstring).
RESULT_KEYS: tuple[str, ...] = (
    "achieved_rate_hz",
    "missed_tick_fraction",
    "period_error_p50_ms",
    "period_error_p99_ms",
    "period_error_max_ms",
    "latency_p50_ms",
    "latency_p99_ms",
    "node_cpu_percent",
    "commands_out_of_limits",
    "rss_start_kb",
    "rss_end_kb",
    "duration_s",
    "rate_hz",
)
#: Target path: radius [m], speed [m/s], plane of the root frame, publish rate [Hz].
TARGET_RADIUS = 0.1
TARGET_SPEED = 0.25
TARGET_PLANE = "yz"
TARGET_RATE = 100.0
#: The node's target topic (first pose constraint, node name itasc_node).
TARGET_TOPIC = "/itasc_node/target_pose"
#: Time allowed for the node's first command (start-up, URDF, first inputs) [s].
START_TIMEOUT = 60.0
#: Time between the first command and the start of the measurement [s].
WARMUP = 2.0
#: Every this many joint states, the positions are kept for the tracking error [-].
TRACK_EVERY = 10
#: Relative tolerance on the URDF velocity limits for the out-of-limits count [-].
LIMIT_TOLERANCE = 1e-9


def _has_message_info() -> bool:
    """Whether rclpy passes ``MessageInfo`` (DDS timestamps) to two-argument callbacks."""
    try:
        from rclpy.subscription import Subscription
    except ImportError:  # pragma: no cover - rclpy missing: the benchmark cannot run anyway
        return False
    return hasattr(Subscription, "CallbackType")


_HAS_MESSAGE_INFO = _has_message_info()


class BenchError(RuntimeError):
    """The benchmark could not run (a process died, no command arrived)."""


# --------------------------------------------------------------------------- statistics
def period_stats(arrivals: Sequence[float] | np.ndarray, rate: float) -> dict[str, float]:
    """Period error and missed ticks of command arrival times.

    Args:
        arrivals: (k,) arrival times [s] (monotonic clock), increasing.
        rate: nominal command rate [Hz].

    Returns:
        ``period_error_p50_ms``, ``period_error_p99_ms``, ``period_error_max_ms`` (of
        ``|interval - 1/rate|``) and ``missed_ticks`` (intervals > 1.5/rate count
        ``round(interval * rate) - 1``).
    """
    t = np.asarray(arrivals, dtype=float)
    if t.size < 2:
        nan = math.nan
        return {
            "period_error_p50_ms": nan,
            "period_error_p99_ms": nan,
            "period_error_max_ms": nan,
            "missed_ticks": 0.0,
        }
    dt = np.diff(t)  # (k - 1,)
    err = np.abs(dt - 1.0 / rate) * 1e3  # [ms]
    long = dt[dt > 1.5 / rate]
    missed = float(np.sum(np.round(long * rate) - 1.0))
    return {
        "period_error_p50_ms": float(np.percentile(err, 50)),
        "period_error_p99_ms": float(np.percentile(err, 99)),
        "period_error_max_ms": float(np.max(err)),
        "missed_ticks": missed,
    }


def latency_stats(
    state_stamps: Sequence[float] | np.ndarray, command_arrivals: Sequence[float] | np.ndarray
) -> dict[str, float]:
    """Time from each joint state's stamp to the next command's arrival (see the module doc).

    Args:
        state_stamps: (m,) ``joint_states`` header stamps [s] (wall clock).
        command_arrivals: (k,) command arrival times [s] (wall clock).

    Returns:
        ``latency_p50_ms``, ``latency_p99_ms``, ``latency_max_ms`` and ``latency_samples``;
        states after the last command are not counted.
    """
    s = np.sort(np.asarray(state_stamps, dtype=float))
    a = np.sort(np.asarray(command_arrivals, dtype=float))
    idx = np.searchsorted(a, s, side="right")  # first command strictly after each stamp
    ok = idx < a.size
    lat = (a[idx[ok]] - s[ok]) * 1e3  # [ms]
    if lat.size == 0:
        nan = math.nan
        return {
            "latency_p50_ms": nan,
            "latency_p99_ms": nan,
            "latency_max_ms": nan,
            "latency_samples": 0.0,
        }
    return {
        "latency_p50_ms": float(np.percentile(lat, 50)),
        "latency_p99_ms": float(np.percentile(lat, 99)),
        "latency_max_ms": float(np.max(lat)),
        "latency_samples": float(lat.size),
    }


def out_of_limits(qdot: np.ndarray, n: int, velocity_limits: np.ndarray) -> bool:
    """Whether a command (its ``data``) is wrong: length != n, non-finite, above the limits."""
    if qdot.shape != (n,) or not np.all(np.isfinite(qdot)):
        return True
    return bool(np.any(np.abs(qdot) > velocity_limits * (1.0 + LIMIT_TOLERANCE)))


# --------------------------------------------------------------------------- processes
def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process [s], from ``/proc/<pid>/stat``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "; fields[0] = state
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def proc_rss_kb(pid: int) -> int:
    """Resident set size of a process [kB] (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS in /proc/{pid}/status")


def _stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> dict[str, int | None]:
    """SIGINT to every process, then SIGKILL to those still running after 5 s; exit codes."""
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 5.0
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {name: proc.returncode for name, proc in procs.items()}


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def _local_dds(domain: int) -> Iterator[None]:
    """This process on the local DDS environment of ``domain``; restores the old values."""
    keys = (
        "FASTDDS_BUILTIN_TRANSPORTS",
        "ROS_AUTOMATIC_DISCOVERY_RANGE",
        "RMW_IMPLEMENTATION",
        "ROS_DOMAIN_ID",
        "ITASC_PRIVATE_DOMAIN_ID",
    )
    saved = {k: os.environ.get(k) for k in keys}
    apply_local_dds_env(domain)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --------------------------------------------------------------------------- the benchmark
def _effector(config: dict[str, Any]) -> str:
    """The link of the first pose constraint of a node params file."""
    params = next(iter(config.values()))["ros__parameters"]
    for name in params.get("constraint_names", []):
        c = params["constraints"][name]
        if c.get("type") in ("copy_pose", "distance") and not c.get("target_link"):
            return str(c["link"])
    raise BenchError("the node configuration has no pose constraint to give a target to")


class _Recorder:
    """Callbacks of this process: command and joint-state times (append only, whole run).

    Times are wall clock [s]. With rclpy's ``MessageInfo`` (Iron and newer) a command's arrival
    is the DDS reception timestamp, so this process's executor delays do not count, and its
    publish time is the DDS source timestamp; on Humble both are the callback time.
    """

    def __init__(self, n: int, velocity_limits: np.ndarray) -> None:
        self.n = n
        self.velocity_limits = velocity_limits
        self.cmd_received = array.array("d")  # [s] arrival (DDS reception) times
        self.cmd_sent = array.array("d")  # [s] publish (DDS source) times
        self.bad_commands = 0
        self.max_abs_ratio = 0.0  # largest |qdot| / limit seen [-]
        self.js_stamps = array.array("d")  # [s] header stamps
        self.track: list[tuple[float, np.ndarray]] = []  # every TRACK_EVERY-th (stamp, q)

    def _command(self, msg: Any, sent: float, received: float) -> None:
        self.cmd_received.append(received)
        self.cmd_sent.append(sent)
        qdot = np.asarray(msg.data, dtype=float)
        if out_of_limits(qdot, self.n, self.velocity_limits):
            self.bad_commands += 1
        elif self.n:
            self.max_abs_ratio = max(
                self.max_abs_ratio, float(np.max(np.abs(qdot) / self.velocity_limits))
            )

    def on_command_info(self, msg: Any, info: Any) -> None:
        self._command(msg, 1e-9 * info["source_timestamp"], 1e-9 * info["received_timestamp"])

    def on_command(self, msg: Any) -> None:
        now = time.time()
        self._command(msg, now, now)

    def on_joint_state_raw(self, raw: bytes) -> None:
        """A serialized JointState: only the stamp is read, the message every TRACK_EVERY-th."""
        order = "<" if raw[1] == 1 else ">"  # CDR encapsulation: 0x0001 little endian
        sec, nanosec = struct.unpack_from(order + "iI", raw, 4)  # header.stamp comes first
        stamp = sec + 1e-9 * nanosec
        self.js_stamps.append(stamp)
        if len(self.js_stamps) % TRACK_EVERY == 0:
            from rclpy.serialization import deserialize_message
            from sensor_msgs.msg import JointState

            msg = deserialize_message(raw, JointState)
            self.track.append((stamp, np.asarray(msg.position, dtype=float)))


def run_loop_bench(
    robot: str = "panda",
    rate: float = 1000.0,
    duration: float = 60.0,
    soak: bool = False,
    *,
    sim_rate: float | None = None,
    domain: int | None = None,
    log_dir: str | Path | None = None,
    node_module: str = "itasc_ros.ros.node",
    warmup: float = WARMUP,
) -> dict[str, Any]:
    """Run the node, the simulated robot and a target in closed loop and measure the loop.

    Args:
        robot: bundled robot name ('panda', 'ur5'): ``urdf/<robot>.urdf`` and
            ``config/<robot>.yaml``.
        rate: the node's ``control_rate`` [Hz].
        duration: measured time [s], after the first command and ``warmup``.
        soak: the long-run variant: also samples the node's memory every second and reports its
            growth rate (``rss_growth_kb_per_min``).
        sim_rate: the sim robot's integration and ``joint_states`` rate [Hz]; default ``rate``.
        domain: ROS domain id; default a private one derived from this process id.
        log_dir: where the node's and the sim robot's output go; default a temporary directory
            (kept, its path is in the result as ``log_dir``).
        node_module: the node's module, run with ``python -m`` (another build of the node).
        warmup: time between the first command and the measurement [s].

    Returns:
        The keys of :data:`RESULT_KEYS` (see the module docstring for the methods) plus
        ``missed_ticks``, ``missed_tick_fraction_by_count``, ``latency_max_ms``,
        ``publish_period_error_{p50,p99,max}_ms``, ``publish_missed_tick_fraction``,
        ``delivery_{p50,p99}_ms``, ``timestamps`` ('dds' or 'callback'), ``sim_cpu_percent``,
        ``bench_cpu_percent``, ``commands_received``, ``joint_states_received``,
        ``sim_rate_hz``, ``startup_s`` (start to first command), ``max_velocity_ratio`` (largest
        ``|q'| / limit``),
        ``tracking_error_rms_mm``, ``tracking_error_max_mm``, ``load_average`` (1-min load
        before the run), ``robot``, ``log_dir``, ``exit_codes`` and, for a soak,
        ``rss_growth_kb_per_min`` and ``rss_max_kb``.

    Raises:
        BenchError: the node module is missing, a process died or no command arrived.
        FileNotFoundError: no bundled URDF or config for ``robot``.
    """
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    if duration <= 0.0 or rate <= 0.0:
        raise BenchError(f"duration and rate must be > 0, got {duration} s and {rate} Hz")
    import importlib.util

    if importlib.util.find_spec(node_module) is None:
        raise BenchError(f"the node module {node_module} does not exist")
    urdf = robot_urdf(robot)
    config_path = share_file("config", f"{robot}.yaml")
    config = yaml.safe_load(config_path.read_text())
    params = next(iter(config.values()))["ros__parameters"]
    command_topic = str(params.get("command_out_topic", "/forward_velocity_controller/commands"))
    tree = KinematicTree.from_urdf_file(urdf)
    joints = list(params.get("joints") or tree.joint_names)
    effector = _effector(config)
    q_home = home_pose(tree)  # (n_tree,) the sim robot's initial pose
    tip = tree.forward_kinematics(q_home, effector)  # (4, 4)
    center = tip[:3, 3].copy()  # (3,)
    quat = matrix_to_quat(tip[:3, :3])  # (x, y, z, w)
    vmax = tree.velocity_limits[[tree.joint_index(j) for j in joints]]  # (n,)
    sim_rate = rate if sim_rate is None else sim_rate

    domain = private_domain_id(os.getpid() + 53) if domain is None else domain
    env = local_dds_env(domain)
    logs = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="itasc_loop_"))
    logs.mkdir(parents=True, exist_ok=True)
    node_cmd = [
        sys.executable, "-m", node_module, "--ros-args",
        "--params-file", str(config_path),
        "-p", f"urdf_file:={urdf}",
        "-p", f"control_rate:={float(rate)}",
    ]  # fmt: skip
    sim_cmd = [
        sys.executable, "-m", "itasc_ros.tools.sim_robot", "--ros-args",
        "-p", f"urdf_file:={urdf}",
        "-p", f"rate:={float(sim_rate)}",
        "-p", f"command_topic:={command_topic}",
    ]  # fmt: skip
    load_before = os.getloadavg()[0]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    rec = _Recorder(len(joints), vmax)
    result: dict[str, Any] = {}
    with _local_dds(domain):
        context = rclpy.Context()
        rclpy.init(
            context=context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO
        )
        executor = SingleThreadedExecutor(context=context)
        node = rclpy.create_node("itasc_bench_loop", context=context)
        spin = threading.Thread(target=executor.spin, name="bench_loop_spin", daemon=True)
        try:
            t_start = time.monotonic()
            for name, cmd in (("sim_robot", sim_cmd), ("node", node_cmd)):
                with open(logs / f"{name}.log", "wb") as fh:
                    procs[name] = subprocess.Popen(
                        cmd, env=env, stdout=fh, stderr=subprocess.STDOUT
                    )
            reliable = QoSProfile(
                history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE
            )
            on_command: Any = rec.on_command_info if _HAS_MESSAGE_INFO else rec.on_command
            node.create_subscription(Float64MultiArray, command_topic, on_command, reliable)
            node.create_subscription(
                JointState, "/joint_states", rec.on_joint_state_raw, reliable, raw=True
            )
            target_pub = node.create_publisher(PoseStamped, TARGET_TOPIC, 10)
            t_path0 = time.time()

            def publish_target() -> None:
                now = time.time()
                p, _ = path_point(
                    now - t_path0, center, TARGET_RADIUS, TARGET_SPEED, "circle", TARGET_PLANE
                )
                msg = PoseStamped()
                msg.header.stamp = node.get_clock().now().to_msg()
                msg.header.frame_id = tree.root_link
                msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
                o = msg.pose.orientation
                o.x, o.y, o.z, o.w = map(float, quat)
                target_pub.publish(msg)

            node.create_timer(1.0 / TARGET_RATE, publish_target)
            executor.add_node(node)
            spin.start()

            def check_alive(stage: str) -> None:
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        raise BenchError(
                            f"{name} exited with {proc.returncode} {stage}; its log "
                            f"({logs / (name + '.log')}):\n{_tail(logs / (name + '.log'))}"
                        )

            deadline = time.monotonic() + START_TIMEOUT
            while not rec.cmd_received:
                check_alive("before the first command")
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"no command on {command_topic} within {START_TIMEOUT:g} s; node log:\n"
                        + _tail(logs / "node.log")
                    )
                time.sleep(0.05)
            startup = time.monotonic() - t_start
            time.sleep(warmup)
            check_alive("during the warm-up")

            node_pid, sim_pid = procs["node"].pid, procs["sim_robot"].pid
            rss_samples: list[tuple[float, int]] = []
            cpu0 = (proc_cpu_seconds(node_pid), proc_cpu_seconds(sim_pid), time.process_time())
            rss_start = proc_rss_kb(node_pid)
            t0 = time.monotonic()
            w0 = time.time()  # the measured window, wall clock [s]
            end = t0 + duration
            next_sample = t0
            while (now := time.monotonic()) < end:
                if now >= next_sample:
                    check_alive("during the run")
                    if soak:
                        rss_samples.append((now - t0, proc_rss_kb(node_pid)))
                    next_sample += 1.0
                time.sleep(min(0.1, max(0.0, end - now)))
            wall = time.monotonic() - t0
            w1 = time.time()
            cpu1 = (proc_cpu_seconds(node_pid), proc_cpu_seconds(sim_pid), time.process_time())
            rss_end = proc_rss_kb(node_pid)
            check_alive("at the end of the run")
        finally:
            t_stop = time.monotonic()
            codes = _stop_all(procs)
            stop_s = time.monotonic() - t_stop
            executor.shutdown(timeout_sec=2.0)
            node.destroy_node()
            rclpy.try_shutdown(context=context)
            if spin.ident is not None:
                spin.join(timeout=2.0)

    received = np.frombuffer(rec.cmd_received, dtype=float)  # (k_all,) whole run
    sent = np.frombuffer(rec.cmd_sent, dtype=float)  # (k_all,)
    window = (received >= w0) & (received <= w1)
    n_cmd = int(np.count_nonzero(window))
    periods = period_stats(received[window], rate)
    published = period_stats(np.sort(sent[window]), rate)
    stamps = np.frombuffer(rec.js_stamps, dtype=float)  # (m_all,)
    js_window = (stamps >= w0) & (stamps <= w1)
    latency = latency_stats(stamps[js_window], received)
    delivery = (received[window] - sent[window]) * 1e3  # [ms] node publish -> arrival here
    result.update(
        achieved_rate_hz=n_cmd / wall,
        missed_tick_fraction=periods["missed_ticks"] / (wall * rate),
        period_error_p50_ms=periods["period_error_p50_ms"],
        period_error_p99_ms=periods["period_error_p99_ms"],
        period_error_max_ms=periods["period_error_max_ms"],
        latency_p50_ms=latency["latency_p50_ms"],
        latency_p99_ms=latency["latency_p99_ms"],
        node_cpu_percent=100.0 * (cpu1[0] - cpu0[0]) / wall,
        commands_out_of_limits=rec.bad_commands,
        rss_start_kb=rss_start,
        rss_end_kb=rss_end,
        duration_s=wall,
        rate_hz=float(rate),
        missed_ticks=int(periods["missed_ticks"]),
        missed_tick_fraction_by_count=max(0.0, 1.0 - n_cmd / (wall * rate)),
        latency_max_ms=latency["latency_max_ms"],
        sim_cpu_percent=100.0 * (cpu1[1] - cpu0[1]) / wall,
        bench_cpu_percent=100.0 * (cpu1[2] - cpu0[2]) / wall,
        publish_period_error_p50_ms=published["period_error_p50_ms"],
        publish_period_error_p99_ms=published["period_error_p99_ms"],
        publish_period_error_max_ms=published["period_error_max_ms"],
        publish_missed_tick_fraction=published["missed_ticks"] / (wall * rate),
        delivery_p50_ms=float(np.percentile(delivery, 50)) if n_cmd else math.nan,
        delivery_p99_ms=float(np.percentile(delivery, 99)) if n_cmd else math.nan,
        timestamps="dds" if _HAS_MESSAGE_INFO else "callback",
        commands_received=n_cmd,
        joint_states_received=int(np.count_nonzero(js_window)),
        sim_rate_hz=float(sim_rate),
        startup_s=startup,
        stop_s=stop_s,
        max_velocity_ratio=rec.max_abs_ratio,
        load_average=load_before,
        robot=robot,
        log_dir=str(logs),
        exit_codes=",".join(f"{k}={v}" for k, v in codes.items()),
    )
    track = [(t, q) for t, q in rec.track if w0 <= t <= w1]
    result.update(_tracking_error(tree, joints, effector, center, track, t_path0))
    if soak:
        t = np.array([s[0] for s in rss_samples])
        kb = np.array([s[1] for s in rss_samples], dtype=float)
        growth = float(np.polyfit(t / 60.0, kb, 1)[0]) if t.size >= 2 else math.nan
        result["rss_growth_kb_per_min"] = growth
        result["rss_max_kb"] = int(kb.max()) if kb.size else rss_end
    return result


def _tracking_error(
    tree: KinematicTree,
    joints: list[str],
    effector: str,
    center: np.ndarray,
    track: list[tuple[float, np.ndarray]],
    t_path0: float,
) -> dict[str, float]:
    """RMS and max distance [mm] of the effector from the target at the joint states' stamps."""
    if not track:
        return {"tracking_error_rms_mm": math.nan, "tracking_error_max_mm": math.nan}
    idx = [tree.joint_index(j) for j in joints]
    q = home_pose(tree)  # joints outside ``joints`` stay at home
    errors = []
    for stamp, positions in track:
        if positions.shape != (len(joints),):
            continue
        q[idx] = positions
        p = tree.forward_kinematics(q, effector)[:3, 3]
        target, _ = path_point(
            stamp - t_path0, center, TARGET_RADIUS, TARGET_SPEED, "circle", TARGET_PLANE
        )
        errors.append(float(np.linalg.norm(p - target)))
    e = np.array(errors) * 1e3
    return {
        "tracking_error_rms_mm": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
        "tracking_error_max_mm": float(np.max(e)) if e.size else math.nan,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``python -m itasc_ros.tools.bench_loop``); returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="itasc_bench_loop", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    ap.add_argument("--robot", default="panda", help="bundled robot (panda, ur5)")
    ap.add_argument("--rate", type=float, default=1000.0, help="node control rate [Hz]")
    ap.add_argument("--sim-rate", type=float, default=None, help="sim robot rate [Hz]")
    ap.add_argument("--duration", type=float, default=60.0, help="measured time [s]")
    ap.add_argument("--soak", action="store_true", help="long-run variant (memory growth)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON only")
    ap.add_argument("--node-module", default="itasc_ros.ros.node", help="node to run (-m)")
    args = ap.parse_args(argv)
    try:
        r = run_loop_bench(
            robot=args.robot,
            rate=args.rate,
            duration=args.duration,
            soak=args.soak,
            sim_rate=args.sim_rate,
            node_module=args.node_module,
        )
    except (BenchError, FileNotFoundError) as exc:
        print(f"itasc_bench_loop: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(r))
    else:
        print(f"loop: node at {args.rate:g} Hz, {args.robot}, {r['duration_s']:.1f} s")
        for k, v in r.items():
            print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    return 0 if r["commands_out_of_limits"] == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
