"""One run of the ``loop`` (or ``soak``) benchmark: :func:`run_loop_bench` and its result keys."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import BenchError
from .figures import RunFacts, loop_figures
from .flood import FLOODS
from .plan import make_plan
from .processes import local_dds
from .recorder import Recorder
from .scheduling import keep_cpus_warm, saved_scheduling

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
#: Time between the first command and the start of the measurement [s].
WARMUP = 2.0


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
    node_params: Mapping[str, str] | None = None,
    warmup: float = WARMUP,
    journal: bool = False,
    flood: str = "",
    flood_rate: float | None = None,
    burners: int = 0,
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
        keep_warm: a SCHED_IDLE busy loop on every CPU during the run (see
            :func:`~itasc_bench.loop.scheduling.keep_cpus_warm`),
            the stand-in for a host tuned with ``idle=poll``; ``keep_warm_spinners`` in the
            result.
        domain: ROS domain id; default a private one derived from this process id.
        log_dir: where the node's and the sim robot's output go; default a temporary directory
            (kept, its path is in the result as ``log_dir``).
        node_module: the node's module, run with ``python -m`` (another build of the node).
        node_params: further ``-p name:=value`` of the node's command line (a peer's own).
        warmup: time between the first command and the measurement [s].
        journal: subscribe to the node's ``~/journal`` (as a recorder would), so that the node
            publishes it every tick; ``journal_messages`` in the result.
        flood: '' or a kind of :data:`~itasc_bench.loop.flood.FLOODS` ('jog', 'ik',
            'target', 'unread'): a process publishing it from the first command on.
        flood_rate: its rate [Hz]; default the kind's.
        burners: processes spinning at the normal priority (a busy machine) from the first
            command to the end of the window: the warm-up and the window, as the flood; not
            the processes' start and stop, which they would only slow down.

    Returns:
        The keys of :data:`RESULT_KEYS` (see :mod:`itasc_bench.loop` for the methods) plus
        ``missed_ticks``, ``missed_tick_fraction_by_count``, ``latency_max_ms``,
        ``publish_period_error_{p50,p99,max}_ms``, ``publish_missed_tick_fraction``,
        ``delivery_{p50,p99}_ms``, ``joint_state_missed_tick_fraction`` and
        ``joint_state_gap_max_ms`` (the sim robot's own gaps, from the joint states' stamps),
        ``steal_percent`` (CPU time the hypervisor took from this virtual machine during the
        run, % of all CPUs), ``node_runqueue_wait_max_ms`` (the most any thread of the node
        waited on a run queue for a CPU during the window), ``timestamps`` ('dds'),
        ``sim_cpu_percent``, ``bench_cpu_percent``, ``commands_received``,
        ``joint_states_received``, ``sim_rate_hz``, ``startup_s`` (start to first command),
        ``max_velocity_ratio`` (largest ``|q'| / limit``), ``tracking_error_rms_mm``,
        ``tracking_error_max_mm``, ``load_average`` (1-min load before the run), ``robot``,
        ``log_dir``, ``exit_codes``, ``command_gap_max_ms`` (the longest time between two
        commands' arrivals), ``flood``, ``flood_rate_hz``, ``flood_sent``, ``burners`` and, for a
        soak,
        ``rss_growth_kb_per_min`` and ``rss_max_kb``.

    Raises:
        BenchError: the node module is missing, a process died or no command arrived.
        FileNotFoundError: no bundled URDF or config for ``robot``.
    """
    if duration <= 0.0 or rate <= 0.0:
        raise BenchError(f"duration and rate must be > 0, got {duration} s and {rate} Hz")
    if importlib.util.find_spec(node_module) is None:
        raise BenchError(f"the node module {node_module} does not exist")
    from .session import LoopSession  # rclpy and the messages: only where a run starts

    plan = make_plan(
        robot,
        rate,
        sim_rate=sim_rate,
        trigger=trigger,
        realtime=realtime,
        domain=domain,
        log_dir=log_dir,
        node_module=node_module,
        node_params=node_params,
    )
    if flood and flood not in FLOODS:
        raise BenchError(f"no flood {flood!r}; valid: {', '.join(sorted(FLOODS))}")
    rate_of_flood = (flood_rate or FLOODS[flood].rate) if flood else 0.0
    saved = saved_scheduling()
    load_before = os.getloadavg()[0]
    rec = Recorder(len(plan.robot.joints), plan.robot.vmax)
    with local_dds(plan.domain), keep_cpus_warm(keep_warm) as spinners:
        flooding = (flood, rate_of_flood) if flood else None
        session = LoopSession(plan, rec, journal, flooding, burners)
        win = session.run(warmup, duration, soak, saved)
    s = session
    facts = RunFacts(
        s.realtime_applied, spinners, s.startup, s.stop_s, load_before, s.codes, s.t_path0
    )
    result = loop_figures(plan, rec, win, facts, soak)
    result.update(
        flood=flood,
        flood_rate_hz=rate_of_flood,
        flood_sent=s.flood_sent,
        burners=burners,
        command_gap_max_ms=rec.longest_gap(win.w0, win.w1) * 1e3,
    )
    return result


__all__ = ["RESULT_KEYS", "WARMUP", "run_loop_bench"]
