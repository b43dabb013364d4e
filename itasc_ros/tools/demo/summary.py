"""The demo's printed summary: the table of its figures and the comparison with offline."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.tools.demo.formatting import fmt, mm, pct
from itasc_ros.tools.demo.processes import SIM_RATE
from itasc_ros.tools.demo.target_path import SPEED

Array = NDArray[np.float64]
Row = tuple[str, str]


def summary_table(
    m: dict[str, Any],
    offline: dict[str, dict[str, float]],
    joint_names: Sequence[str],
    vlim: Array,
) -> str:
    """The human-readable summary.

    Args:
        m: the demo's metrics.
        offline: the offline tracking figures per tracking phase.
        joint_names: the commanded joints (n).
        vlim: (n,) their velocity limits [rad/s].

    Returns:
        The table, one figure a line, as text (starting with an empty line).
    """
    rows = _timing_rows(m) + _tracking_rows(m, offline) + _motion_rows(m, joint_names, vlim)
    rows += _phase_rows(m)
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


def _timing_rows(m: dict[str, Any]) -> list[Row]:
    return [
        (
            "loop rate (node, median of /diagnostics)",
            f"{fmt(m['loop_rate_hz'], '.1f', ' Hz')} of {m['control_rate_hz']:.0f} Hz "
            f"(min {fmt(m['loop_rate_min_hz'], '.1f')}); commands recorded at "
            f"{fmt(m['command_rate_hz'], '.1f', ' Hz')}",
        ),
        (
            "solve time (node, /diagnostics)",
            f"mean {fmt(m['solve_time_mean_ms'], '.3f', ' ms')}, max "
            f"{fmt(m['solve_time_max_ms'], '.3f', ' ms')}",
        ),
    ]


def _tracking_rows(m: dict[str, Any], offline: dict[str, dict[str, float]]) -> list[Row]:
    ph = m["phases"]
    rows: list[Row] = []
    for shape in ("circle", "figure8"):
        for suffix, label in (("ff", "feed-forward"), ("fb", "feedback only")):
            key = f"{shape}_{suffix}"
            off = offline.get(key, {})
            rows.append(
                (
                    f"{shape} RMS error, {label}",
                    f"{mm(ph[key]['rms_error_m'])} over DDS (max {mm(ph[key]['max_error_m'])}); "
                    f"offline {mm(off.get('rms_error_m', math.nan))}",
                )
            )
    return rows


def _motion_rows(m: dict[str, Any], joint_names: Sequence[str], vlim: Array) -> list[Row]:
    j = m.get("max_joint_speed_joint", 0)
    return [
        (
            "max joint speed vs limit",
            f"{fmt(m.get('max_joint_speed_rad_s'), '.3f', ' rad/s')}; largest ratio "
            f"{fmt(m.get('max_joint_speed_ratio'), '.1f', ' %', 100)} ({joint_names[j]}, limit "
            f"{vlim[j]:.3f} rad/s)",
        ),
        (
            "max joint acceleration / jerk vs limit",
            f"{fmt(m.get('max_joint_acceleration_ratio'), '.1f', ' %', 100)} / "
            f"{fmt(m.get('max_joint_jerk_ratio'), '.1f', ' %', 100)} (joint_limits, over the "
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
            f"smallest sigma_min {fmt(m.get('sigma_min_min'), '.3g')} "
            f"(damping_epsilon {m['damping_epsilon']:g})",
        ),
    ]


def _phase_rows(m: dict[str, Any]) -> list[Row]:
    steps, far = m["phases"]["steps"], m["phases"]["unreachable"]
    short = [
        f"{name} {ph['time_not_followed_s']:.2f} s"
        for name, ph in m["phases"].items()
        if "time_not_followed_s" in ph
    ]
    rows = [("time a task was not followed", ", ".join(short))] if short else []
    return [
        *rows,
        (
            "step response settle time (2 % band)",
            f"mean {fmt(steps['settle_time_mean_s'], '.3f', ' s')}, max "
            f"{fmt(steps['settle_time_max_s'], '.3f', ' s')} ({steps['settled']} "
            f"settled within their {steps['step_hold_s']:.2f} s)",
        ),
        (
            "unreachable target 2 m away",
            f"stretched to {fmt(far['final_distance_m'], '.3f', ' m')} from it; "
            f"sigma_min {fmt(far.get('sigma_min_min'), '.3g')}; speed "
            f"{fmt(far.get('max_joint_speed_ratio'), '.1f', ' %', 100)} of limit; "
            f"joints within limits: {m['joints_within_limits']}; finite commands: "
            f"{m.get('commands_finite', False)}",
        ),
    ]


def explain_offline(m: dict[str, Any], gain: float, radius: float, control_rate: float) -> str:
    """The paragraph comparing the tracking errors over DDS with the offline ones.

    Args:
        m: the demo's metrics (with 'offline').
        gain: the pose constraint's gain K [1/s].
        radius: the circle's radius [m].
        control_rate: the node's rate [Hz].
    """
    offline = m["offline"]
    ff, fb = m["tracking_error_feedforward_m"], m["tracking_error_feedback_only_m"]
    off_ff, off_fb = offline["circle_ff"]["rms_error_m"], offline["circle_fb"]["rms_error_m"]
    return (
        f"\nOffline = itasc_ros.core.scenarios.circle_tracking (what `itasc-bench tracking` "
        f"runs) with the same K = {gain:g} 1/s, radius {radius:g} m, speed {SPEED} "
        f"m/s, period 1/{control_rate:g} s and steady-state window (second half of the phase); "
        f"it integrates q += q' dt exactly, every tick. Feedback only, both show the lag "
        f"v / sqrt(K^2 + w^2) = {mm(offline['circle_fb']['expected_lag_m'])}: "
        f"{mm(fb)} over DDS vs {mm(off_fb)} offline ({pct(fb, off_fb)}). With "
        f"feed-forward: {mm(ff)} over DDS vs {mm(off_ff)} offline ({mm(ff - off_ff)} "
        f"more): over DDS the node ticks on its own clock at "
        f"{fmt(m['loop_rate_hz'], '.0f', ' Hz')}, "
        f"its joint state is up to 1/{SIM_RATE:g} s old, the target is held between the "
        "generator's ticks and each command acts one DDS hop later."
    )


__all__ = ["explain_offline", "summary_table"]
