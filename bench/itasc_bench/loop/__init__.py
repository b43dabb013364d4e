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

Modules: :mod:`~itasc_bench.loop.run` (one run: :func:`run_loop_bench`), its
:mod:`~itasc_bench.loop.plan`, :mod:`~itasc_bench.loop.session` (this process's side),
:mod:`~itasc_bench.loop.reader`, :mod:`~itasc_bench.loop.recorder`,
:mod:`~itasc_bench.loop.target`, :mod:`~itasc_bench.loop.processes`,
:mod:`~itasc_bench.loop.scheduling`, :mod:`~itasc_bench.loop.window`,
:mod:`~itasc_bench.loop.procfs`, :mod:`~itasc_bench.loop.stats`,
:mod:`~itasc_bench.loop.figures`; several runs: :mod:`~itasc_bench.loop.series` and
:mod:`~itasc_bench.loop.command` (``itasc-bench loop``); ``python -m itasc_bench.loop``:
:mod:`~itasc_bench.loop.script`. Nothing here imports rclpy until a run starts.

Usage::

    python -m itasc_bench.loop --robot panda --rate 1000 --duration 20
    itasc-bench loop --rate 1000 --duration 60
"""

from typing import TYPE_CHECKING

from itasc_ros.core.lazy import lazy_exports

if TYPE_CHECKING:
    from .command import loop_command
    from .errors import BenchError
    from .procfs import machine_steal_seconds, proc_cpu_seconds, proc_rss_kb
    from .recorder import TRACK_EVERY
    from .run import RESULT_KEYS, WARMUP, run_loop_bench
    from .scheduling import BENCH_PRIORITY, NODE_PRIORITY, SIM_PRIORITY, keep_cpus_warm
    from .script import main
    from .series import FLOOR_KEYS, FLOOR_MODULE, floor_comparison, median_runs, peer_comparison
    from .stats import LIMIT_TOLERANCE, latency_stats, out_of_limits, period_stats
    from .target import TARGET_PLANE, TARGET_RADIUS, TARGET_RATE, TARGET_SPEED, TARGET_TOPIC

#: Imported on first use: the processes a run starts (the flooding publisher) import this
#: package, and the runs' modules import the core.
__getattr__ = lazy_exports(
    __name__,
    {
        ".command": ["loop_command"],
        ".errors": ["BenchError"],
        ".procfs": ["machine_steal_seconds", "proc_cpu_seconds", "proc_rss_kb"],
        ".recorder": ["TRACK_EVERY"],
        ".run": ["RESULT_KEYS", "WARMUP", "run_loop_bench"],
        ".scheduling": ["BENCH_PRIORITY", "NODE_PRIORITY", "SIM_PRIORITY", "keep_cpus_warm"],
        ".script": ["main"],
        ".series": [
            "FLOOR_KEYS", "FLOOR_MODULE", "floor_comparison", "median_runs", "peer_comparison"
        ],
        ".stats": ["LIMIT_TOLERANCE", "latency_stats", "out_of_limits", "period_stats"],
        ".target": [
            "TARGET_PLANE", "TARGET_RADIUS", "TARGET_RATE", "TARGET_SPEED", "TARGET_TOPIC"
        ],
    },
)  # fmt: skip

__all__ = [
    "BENCH_PRIORITY",
    "FLOOR_KEYS",
    "FLOOR_MODULE",
    "LIMIT_TOLERANCE",
    "NODE_PRIORITY",
    "RESULT_KEYS",
    "SIM_PRIORITY",
    "TARGET_PLANE",
    "TARGET_RADIUS",
    "TARGET_RATE",
    "TARGET_SPEED",
    "TARGET_TOPIC",
    "TRACK_EVERY",
    "WARMUP",
    "BenchError",
    "floor_comparison",
    "keep_cpus_warm",
    "latency_stats",
    "loop_command",
    "machine_steal_seconds",
    "main",
    "median_runs",
    "out_of_limits",
    "peer_comparison",
    "period_stats",
    "proc_cpu_seconds",
    "proc_rss_kb",
    "run_loop_bench",
]
