"""The figures of one loop run, from what was recorded and the window's counters.

See :mod:`itasc_bench.loop` for what each figure means and
:func:`~itasc_bench.loop.run.run_loop_bench` for the list of keys.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .plan import LoopPlan
from .recorder import Recorder
from .stats import latency_stats, period_stats
from .target import tracking_error
from .window import Window


@dataclass(frozen=True)
class RunFacts:
    """What a run reports besides its measurements.

    Attributes:
        realtime_applied: ``realtime``: this process's policy and CPUs, or why not applied.
        spinners: ``keep_warm``: the busy loops that ran.
        startup_s: Time from the processes' start to the first command [s].
        stop_s: Time the processes took to stop [s].
        load_average: The machine's 1-min load before the run.
        exit_codes: The processes' exit codes by name.
        t_path0: Wall-clock time of the target path's start [s].
    """

    realtime_applied: str
    spinners: int
    startup_s: float
    stop_s: float
    load_average: float
    exit_codes: dict[str, int | None]
    t_path0: float


def loop_figures(
    plan: LoopPlan, rec: Recorder, win: Window, facts: RunFacts, soak: bool
) -> dict[str, Any]:
    """The result of :func:`~itasc_bench.loop.run.run_loop_bench` (its keys, in order).

    Args:
        plan: The run.
        rec: What this process recorded over the whole run.
        win: The measured window.
        facts: What the run reports besides its measurements.
        soak: Add the memory growth (``rss_growth_kb_per_min``, ``rss_max_kb``).
    """
    rate, sim_rate, wall = plan.rate, plan.sim_rate, win.wall
    received = np.frombuffer(rec.cmd_received, dtype=float)  # (k_all,) whole run
    sent = np.frombuffer(rec.cmd_sent, dtype=float)  # (k_all,)
    window = (received >= win.w0) & (received <= win.w1)
    n_cmd = int(np.count_nonzero(window))
    periods = period_stats(received[window], rate)
    published = period_stats(np.sort(sent[window]), rate)
    stamps = np.frombuffer(rec.js_stamps, dtype=float)  # (m_all,)
    js_window = (stamps >= win.w0) & (stamps <= win.w1)
    latency = latency_stats(stamps[js_window], received)
    js_periods = period_stats(np.sort(stamps[js_window]), sim_rate)
    delivery = (received[window] - sent[window]) * 1e3  # [ms] node publish -> arrival here
    cpu0, cpu1 = win.cpu0, win.cpu1
    result: dict[str, Any] = dict(
        achieved_rate_hz=n_cmd / wall,
        missed_tick_fraction=periods["missed_ticks"] / (wall * rate),
        period_error_p50_ms=periods["period_error_p50_ms"],
        period_error_p99_ms=periods["period_error_p99_ms"],
        period_error_max_ms=periods["period_error_max_ms"],
        latency_p50_ms=latency["latency_p50_ms"],
        latency_p99_ms=latency["latency_p99_ms"],
        node_cpu_percent=100.0 * (cpu1[0] - cpu0[0]) / wall,
        commands_out_of_limits=rec.bad_commands,
        rss_start_kb=win.rss_start,
        rss_end_kb=win.rss_end,
        duration_s=wall,
        rate_hz=float(rate),
        missed_ticks=int(periods["missed_ticks"]),
        missed_tick_fraction_by_count=max(0.0, 1.0 - n_cmd / (wall * rate)),
        latency_max_ms=latency["latency_max_ms"],
        sim_cpu_percent=100.0 * (cpu1[1] - cpu0[1]) / wall,
        bench_cpu_percent=100.0 * (cpu1[2] - cpu0[2]) / wall,
        steal_percent=100.0 * (win.steal1 - win.steal0) / (wall * (os.cpu_count() or 1)),
        node_runqueue_wait_max_ms=1e3 * win.node_wait,
        publish_period_error_p50_ms=published["period_error_p50_ms"],
        publish_period_error_p99_ms=published["period_error_p99_ms"],
        publish_period_error_max_ms=published["period_error_max_ms"],
        publish_missed_tick_fraction=published["missed_ticks"] / (wall * rate),
        joint_state_missed_tick_fraction=js_periods["missed_ticks"] / (wall * sim_rate),
        joint_state_gap_max_ms=_longest_step(np.sort(stamps[js_window])) * 1e3,
        delivery_p50_ms=float(np.percentile(delivery, 50)) if n_cmd else math.nan,
        delivery_p99_ms=float(np.percentile(delivery, 99)) if n_cmd else math.nan,
        timestamps="dds",
        commands_received=n_cmd,
        joint_states_received=int(np.count_nonzero(js_window)),
        sim_rate_hz=float(sim_rate),
        control_trigger=plan.trigger,
        realtime=plan.realtime,
        realtime_applied=facts.realtime_applied,
        keep_warm_spinners=facts.spinners,
        node_module=plan.node_module,
        startup_s=facts.startup_s,
        stop_s=facts.stop_s,
        max_velocity_ratio=rec.max_abs_ratio,
        load_average=facts.load_average,
        robot=plan.robot.name,
        log_dir=str(plan.logs),
        exit_codes=",".join(f"{k}={v}" for k, v in facts.exit_codes.items()),
        journal_messages=rec.journal_messages,
    )
    r = plan.robot
    track = [(t, q) for t, q in rec.track if win.w0 <= t <= win.w1]
    result.update(tracking_error(r.tree, r.joints, r.effector, r.center, track, facts.t_path0))
    if soak:
        result.update(_memory_growth(win))
    return result


def _memory_growth(win: Window) -> dict[str, Any]:
    """``rss_growth_kb_per_min`` (a line fitted to the samples) and ``rss_max_kb``."""
    t = np.array([s[0] for s in win.rss_samples])
    kb = np.array([s[1] for s in win.rss_samples], dtype=float)
    growth = float(np.polyfit(t / 60.0, kb, 1)[0]) if t.size >= 2 else math.nan
    return {
        "rss_growth_kb_per_min": growth,
        "rss_max_kb": int(kb.max()) if kb.size else win.rss_end,
    }


def _longest_step(t: NDArray[np.float64]) -> float:
    """The longest step [s] between consecutive times ``t`` (sorted; 0 for fewer than two)."""
    return float(np.max(np.diff(t))) if t.shape[0] > 1 else 0.0


__all__ = ["RunFacts", "loop_figures"]
