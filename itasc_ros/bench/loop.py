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
time the DDS source timestamp (the message info of ``rcl_take``), so this process's own delays
do not count. All processes share the machine's wall clock. This process spins no executor: one
thread waits on an ``rcl`` wait set and takes the messages, another publishes the target, so
that the measuring process takes as little CPU as it can from the processes it measures
(``bench_cpu_percent``).

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

    python -m itasc_ros.bench.loop --robot panda --rate 1000 --duration 20
    itasc-bench loop --rate 1000 --duration 60
"""

from __future__ import annotations

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

from itasc_ros.bench.harness import control_rate, loop_robots
from itasc_ros.cli import CliParser, positive_float
from itasc_ros.core import ControllerConfig, KinematicTree
from itasc_ros.core.kinematics.spatial import matrix_to_quat
from itasc_ros.core.scenarios import path_point
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.ros.realtime import demote_current_thread
from itasc_ros.tools.dds_env import (
    LOCAL_DDS_KEYS,
    apply_local_dds_env,
    local_dds_env,
    private_domain_id,
)
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
JOURNAL_TOPIC = "/itasc_node/journal"
#: Time allowed for the node's first command (start-up, URDF, first inputs) [s].
START_TIMEOUT = 60.0
#: Time between the first command and the start of the measurement [s].
WARMUP = 2.0
#: Every this many joint states, the positions are kept for the tracking error [-].
TRACK_EVERY = 10
#: Relative tolerance on the URDF velocity limits for the out-of-limits count [-].
LIMIT_TOLERANCE = 1e-9


class _WaitSetReader:
    """Takes this process's subscriptions' messages from one wait set, in a thread.

    The measuring process must disturb the machine as little as possible: on a 2-core machine
    an executor in this process (about two thirds of a core at 1 kHz with rclpy's
    SingleThreadedExecutor) takes CPU from the node and the sim robot it measures. This loop
    waits on one ``rcl`` wait set and takes every ready message with its ``MessageInfo``
    (DDS source and reception timestamps, the same call rclpy's executors make); no executor,
    no timers, no futures.

    Args:
        context: the rclpy context of the subscriptions.
        handlers: (subscription, handler) pairs; ``handler(msg, info)`` gets the message (bytes
            for a raw subscription) and the info dict (``source_timestamp``,
            ``received_timestamp`` [ns]).
    """

    def __init__(self, context: Any, handlers: list[tuple[Any, Any]]) -> None:
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

        self._context = context
        self._handlers = handlers
        self._wait_set = _rclpy.WaitSet(len(handlers), 0, 0, 0, 0, 0, context.handle)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench_loop_reader", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        # Below this process's DDS threads: with SCHED_FIFO, threads of one priority do not
        # preempt each other, so a reader at the DDS threads' priority would hold back the
        # thread that stamps a command's reception while it handles the previous message.
        demote_current_thread()
        ws = self._wait_set
        with self._context.handle:
            while not self._stop.is_set() and self._context.ok():
                ws.clear_entities()
                for sub, _ in self._handlers:
                    ws.add_subscription(sub.handle)
                ws.wait(100_000_000)  # [ns]: wakes for the stop flag at least every 0.1 s
                for sub, handler in self._handlers:
                    with sub.handle:
                        take = sub.handle.take_message
                        while (taken := take(sub.msg_type, sub.raw)) is not None:
                            handler(*taken)


#: ``realtime``: SCHED_FIFO priorities of the node, the sim robot and this process.
NODE_PRIORITY, SIM_PRIORITY, BENCH_PRIORITY = 80, 70, 75


def _split_cpus() -> tuple[list[int], list[int]]:
    """``realtime``: ([the node's CPU], [the others]); ([], []) on a single-CPU machine."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return [], []
    return cpus[-1:], cpus[:-1]


#: ``keep_warm``: the spinner run on each CPU, on SCHED_IDLE (it only gets a CPU nothing else
#: wants, and gives it up at once).
_SPINNER = (
    "import os, sys\n"
    "os.sched_setaffinity(0, {int(sys.argv[1])})\n"
    "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "while True:\n"
    "    pass\n"
)


@contextmanager
def _keep_warm(enabled: bool) -> Iterator[int]:
    """``keep_warm``: one SCHED_IDLE busy loop per CPU for the duration; yields their count.

    The process-level stand-in for a real-time host's ``idle=poll``: an idle virtual CPU halts
    and the hypervisor runs something else on it, so the next wake-up finds cold caches (here
    the node's tick takes ~245 us after 1 ms idle against ~125 us back to back). A spinner on
    SCHED_IDLE never halts the CPU and never competes: any other thread preempts it.
    """
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        if enabled:
            for cpu in sorted(os.sched_getaffinity(0)):
                spinners.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _SPINNER, str(cpu)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
        yield len(spinners)
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


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


def machine_steal_seconds() -> float:
    """CPU time the hypervisor gave to others while this (virtual) machine wanted it [s].

    The ``steal`` column of ``/proc/stat`` summed over the CPUs (0 on bare metal or where the
    kernel does not report it).
    """
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return 0.0
    steal = int(fields[8]) if len(fields) > 8 else 0
    return steal / os.sysconf("SC_CLK_TCK")


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
    saved = {k: os.environ.get(k) for k in LOCAL_DDS_KEYS}
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
def _effector(config: ControllerConfig, tree: KinematicTree) -> str:
    """The effector link of the first constraint that takes a target pose."""
    for c in config.constraints:
        if c.takes_target:
            return str(c.kind.resolve_settings(c.settings, tree)["link"])
    raise BenchError("the node configuration has no pose constraint to give a target to")


class _Recorder:
    """Callbacks of this process: command and joint-state times (append only, whole run).

    Times are wall clock [s]. A command's arrival is its DDS reception timestamp, so this
    process's own delays do not count, and its publish time is the DDS source timestamp.
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
        self.journal_messages = 0

    def on_journal_raw(self, raw: bytes, info: Any = None) -> None:
        """A serialized journal message: counted, not read (a recorder writes the bytes)."""
        self.journal_messages += 1

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

    def on_joint_state_raw(self, raw: bytes, info: Any = None) -> None:
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
    trigger: str = "timer",
    realtime: bool = False,
    keep_warm: bool = False,
    domain: int | None = None,
    log_dir: str | Path | None = None,
    node_module: str = "itasc_ros.ros.node",
    warmup: float = WARMUP,
    journal: bool = False,
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
        trigger: the node's ``control_trigger``: 'timer' or 'joint_states'.
        realtime: run the three processes as a real-time set-up would: the node on SCHED_FIFO
            priority 80 on the last CPU of its own, the sim robot on priority 70 and this
            process on priority 60 on the other CPUs (``thread_priority`` and ``cpu_affinity``
            parameters; needs CAP_SYS_NICE, see ``realtime_applied`` in the result).
        keep_warm: a SCHED_IDLE busy loop on every CPU during the run (see :func:`_keep_warm`),
            the stand-in for a host tuned with ``idle=poll``; ``keep_warm_spinners`` in the
            result.
        domain: ROS domain id; default a private one derived from this process id.
        log_dir: where the node's and the sim robot's output go; default a temporary directory
            (kept, its path is in the result as ``log_dir``).
        node_module: the node's module, run with ``python -m`` (another build of the node).
        warmup: time between the first command and the measurement [s].
        journal: subscribe to the node's ``~/journal`` (as a recorder would), so that the node
            publishes it every tick; ``journal_messages`` in the result.

    Returns:
        The keys of :data:`RESULT_KEYS` (see the module docstring for the methods) plus
        ``missed_ticks``, ``missed_tick_fraction_by_count``, ``latency_max_ms``,
        ``publish_period_error_{p50,p99,max}_ms``, ``publish_missed_tick_fraction``,
        ``delivery_{p50,p99}_ms``, ``joint_state_missed_tick_fraction`` (the sim robot's own
        gaps, from the joint states' stamps), ``steal_percent`` (CPU time the hypervisor took
        from this virtual machine during the run, % of all CPUs), ``timestamps`` ('dds'),
        ``sim_cpu_percent``, ``bench_cpu_percent``, ``commands_received``,
        ``joint_states_received``, ``sim_rate_hz``, ``startup_s`` (start to first command),
        ``max_velocity_ratio`` (largest ``|q'| / limit``), ``tracking_error_rms_mm``,
        ``tracking_error_max_mm``, ``load_average`` (1-min load before the run), ``robot``,
        ``log_dir``, ``exit_codes`` and, for a soak,
        ``rss_growth_kb_per_min`` and ``rss_max_kb``.

    Raises:
        BenchError: the node module is missing, a process died or no command arrived.
        FileNotFoundError: no bundled URDF or config for ``robot``.
    """
    import rclpy
    from geometry_msgs.msg import PoseStamped
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
    params = read_params_file(config_path)
    config = config_from_parameters(params)
    command_topic = str(params.get("command_out_topic", "/forward_velocity_controller/commands"))
    tree = KinematicTree.from_urdf_file(urdf)
    joints = list(config.joints or tree.joint_names)
    effector = _effector(config, tree)
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
        "-p", f"control_trigger:={trigger}",
    ]  # fmt: skip
    sim_cmd = [
        sys.executable, "-m", "itasc_ros.tools.sim_robot", "--ros-args",
        "-p", f"urdf_file:={urdf}",
        "-p", f"rate:={float(sim_rate)}",
        "-p", f"command_topic:={command_topic}",
    ]  # fmt: skip
    node_cpus, other_cpus = _split_cpus()
    if realtime:
        node_cmd += ["-p", f"thread_priority:={NODE_PRIORITY}"]
        sim_cmd += ["-p", f"thread_priority:={SIM_PRIORITY}"]
        if node_cpus:
            node_cmd += ["-p", f"cpu_affinity:={json.dumps(node_cpus)}"]
            sim_cmd += ["-p", f"cpu_affinity:={json.dumps(other_cpus)}"]
    realtime_applied = ""
    saved_policy = (os.sched_getscheduler(0), os.sched_getparam(0), os.sched_getaffinity(0))
    load_before = os.getloadavg()[0]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    rec = _Recorder(len(joints), vmax)
    result: dict[str, Any] = {}
    with _local_dds(domain), _keep_warm(keep_warm) as spinners:
        context = rclpy.Context()
        rclpy.init(
            context=context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO
        )
        node = rclpy.create_node("itasc_bench_loop", context=context)
        reader: _WaitSetReader | None = None
        stop_target = threading.Event()
        target_thread: threading.Thread | None = None
        try:
            t_start = time.monotonic()
            for name, cmd in (("sim_robot", sim_cmd), ("node", node_cmd)):
                with open(logs / f"{name}.log", "wb") as fh:
                    procs[name] = subprocess.Popen(
                        cmd, env=env, stdout=fh, stderr=subprocess.STDOUT
                    )
            if realtime:  # this process's threads, the DDS ones included (not its children)
                from itasc_ros.ros.realtime import apply_realtime, current_policy

                problems = apply_realtime(BENCH_PRIORITY, other_cpus)
                realtime_applied = "; ".join(problems) or "{} {} on CPUs {}".format(
                    *current_policy()
                )
            reliable = QoSProfile(
                history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE
            )
            cmd_sub = node.create_subscription(
                Float64MultiArray, command_topic, rec.on_command_info, reliable
            )
            js_sub = node.create_subscription(
                JointState, "/joint_states", rec.on_joint_state_raw, reliable, raw=True
            )
            target_pub = node.create_publisher(PoseStamped, TARGET_TOPIC, 10)
            t_path0 = time.time()

            def publish_targets() -> None:  # a plain thread: no executor in this process
                demote_current_thread()  # as the reader: below the DDS threads
                msg = PoseStamped()
                msg.header.frame_id = tree.root_link
                o = msg.pose.orientation
                o.x, o.y, o.z, o.w = map(float, quat)
                next_t = time.monotonic()
                while not stop_target.is_set():
                    now = time.time()
                    p, _ = path_point(
                        now - t_path0, center, TARGET_RADIUS, TARGET_SPEED, "circle", TARGET_PLANE
                    )
                    sec, frac = divmod(now, 1.0)
                    msg.header.stamp.sec = int(sec)
                    msg.header.stamp.nanosec = int(frac * 1e9)
                    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
                    target_pub.publish(msg)
                    next_t += 1.0 / TARGET_RATE
                    stop_target.wait(max(0.0, next_t - time.monotonic()))

            handlers = [(cmd_sub, rec.on_command_info), (js_sub, rec.on_joint_state_raw)]
            if journal:
                journal_sub = node.create_subscription(
                    Float64MultiArray, JOURNAL_TOPIC, rec.on_journal_raw, reliable, raw=True
                )
                handlers.append((journal_sub, rec.on_journal_raw))
            reader = _WaitSetReader(context, handlers)
            reader.start()
            target_thread = threading.Thread(target=publish_targets, daemon=True)
            target_thread.start()

            def check_alive(stage: str) -> None:
                for name, proc in procs.items():
                    if proc.poll() is not None:
                        raise BenchError(
                            f"{name} exited with {proc.returncode} {stage}; its log "
                            f"({logs / (name + '.log')}):\n{_tail(logs / (name + '.log'))}"
                        )

            deadline = time.monotonic() + START_TIMEOUT
            while not rec.cmd_received or not rec.js_stamps:  # both streams reach us
                check_alive("before the first command")
                if time.monotonic() > deadline:
                    raise BenchError(
                        f"no command on {command_topic} or no joint state within "
                        f"{START_TIMEOUT:g} s; node log:\n" + _tail(logs / "node.log")
                    )
                time.sleep(0.05)
            startup = time.monotonic() - t_start
            time.sleep(warmup)
            check_alive("during the warm-up")

            node_pid, sim_pid = procs["node"].pid, procs["sim_robot"].pid
            rss_samples: list[tuple[float, int]] = []
            cpu0 = (proc_cpu_seconds(node_pid), proc_cpu_seconds(sim_pid), time.process_time())
            steal0 = machine_steal_seconds()
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
            steal1 = machine_steal_seconds()
            rss_end = proc_rss_kb(node_pid)
            check_alive("at the end of the run")
        finally:
            t_stop = time.monotonic()
            codes = _stop_all(procs)
            stop_s = time.monotonic() - t_stop
            stop_target.set()
            if target_thread is not None:
                target_thread.join(timeout=2.0)
            if reader is not None:
                reader.stop()
            node.destroy_node()
            rclpy.try_shutdown(context=context)
            if realtime:
                for tid in map(int, os.listdir("/proc/self/task")):
                    try:
                        os.sched_setscheduler(tid, saved_policy[0], saved_policy[1])
                        os.sched_setaffinity(tid, saved_policy[2])
                    except OSError:  # a thread that ended meanwhile
                        pass

    received = np.frombuffer(rec.cmd_received, dtype=float)  # (k_all,) whole run
    sent = np.frombuffer(rec.cmd_sent, dtype=float)  # (k_all,)
    window = (received >= w0) & (received <= w1)
    n_cmd = int(np.count_nonzero(window))
    periods = period_stats(received[window], rate)
    published = period_stats(np.sort(sent[window]), rate)
    stamps = np.frombuffer(rec.js_stamps, dtype=float)  # (m_all,)
    js_window = (stamps >= w0) & (stamps <= w1)
    latency = latency_stats(stamps[js_window], received)
    js_periods = period_stats(np.sort(stamps[js_window]), sim_rate)
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
        steal_percent=100.0 * (steal1 - steal0) / (wall * (os.cpu_count() or 1)),
        publish_period_error_p50_ms=published["period_error_p50_ms"],
        publish_period_error_p99_ms=published["period_error_p99_ms"],
        publish_period_error_max_ms=published["period_error_max_ms"],
        publish_missed_tick_fraction=published["missed_ticks"] / (wall * rate),
        joint_state_missed_tick_fraction=js_periods["missed_ticks"] / (wall * sim_rate),
        delivery_p50_ms=float(np.percentile(delivery, 50)) if n_cmd else math.nan,
        delivery_p99_ms=float(np.percentile(delivery, 99)) if n_cmd else math.nan,
        timestamps="dds",
        commands_received=n_cmd,
        joint_states_received=int(np.count_nonzero(js_window)),
        sim_rate_hz=float(sim_rate),
        control_trigger=trigger,
        realtime=realtime,
        realtime_applied=realtime_applied,
        keep_warm_spinners=spinners,
        node_module=node_module,
        startup_s=startup,
        stop_s=stop_s,
        max_velocity_ratio=rec.max_abs_ratio,
        load_average=load_before,
        robot=robot,
        log_dir=str(logs),
        exit_codes=",".join(f"{k}={v}" for k, v in codes.items()),
        journal_messages=rec.journal_messages,
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
    """Console entry point (``python -m itasc_ros.bench.loop``); returns the exit status."""
    ap = CliParser(
        prog="itasc_bench_loop", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    ap.add_argument("--robot", default="panda", choices=loop_robots(), help="bundled robot")
    ap.add_argument("--rate", type=control_rate, default=1000.0, help="node control rate [Hz]")
    ap.add_argument("--sim-rate", type=positive_float, default=None, help="sim robot rate [Hz]")
    ap.add_argument(
        "--trigger", default="timer", choices=["timer", "joint_states"], help="control_trigger"
    )
    ap.add_argument(
        "--realtime", action="store_true", help="SCHED_FIFO priorities and a CPU for the node"
    )
    ap.add_argument(
        "--keep-warm", action="store_true", help="a SCHED_IDLE busy loop on every CPU (idle=poll)"
    )
    ap.add_argument("--duration", type=positive_float, default=60.0, help="measured time [s]")
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
            trigger=args.trigger,
            realtime=args.realtime,
            keep_warm=args.keep_warm,
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
