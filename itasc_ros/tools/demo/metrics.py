"""The demo's figures, computed from the recorded bag (and its offline replay).

Per phase: the steady-state tracking error, the step responses' settle times, how far the arm
stretched toward the unreachable target; over the run: loop rate, solve time, joint speeds,
accelerations and jerks against their limits, position-limit hits and singularity events.
ROS-free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.control.following import FOLLOWED
from itasc_ros.core.solve.joint_limits import JointLimits
from itasc_ros.core.solve.motion_limits import limit_ratios
from itasc_ros.tools.demo.bag_data import BagData
from itasc_ros.tools.demo.phases import STEP_OFFSETS, Phase, step_hold
from itasc_ros.tools.demo.solve_trace import SolveTrace
from itasc_ros.tools.demo.target_path import UNREACHABLE_DISTANCE, TargetPath

Array = NDArray[np.float64]

STEADY_FRACTION = 0.5  # the second half of a tracking phase is its steady state
SETTLE_BAND = 0.02  # step response: within 2 % of the step (at least SETTLE_FLOOR)
SETTLE_FLOOR = 0.001  # [m]
SIGN_CHANGES_AFTER = 1.0  # [s] into the unreachable phase: chattering is counted from here
SIGN_DEADBAND = 1e-3  # [rad/s] a commanded speed at or below this has no sign
#: Two commands further apart than this many control periods (three ticks missed in a row): a
#: stall, the robot moving on the last one while the node did not run (a busy host held it
#: up). Shorter gaps are a loop's jitter (up to 15 ms at 250 Hz in a quiet run of the demo):
#: their travel is not counted apart.
STALL_PERIODS = 4.0


def _interp_positions(t: Array, ts: Array, ps: Array) -> Array:
    """(k, 3) target positions at times ``t`` by linear interpolation of samples (ts, ps)."""
    return np.stack([np.interp(t, ts, ps[:, i]) for i in range(3)], axis=1)


def _rms(x: Array) -> float:
    return float(np.sqrt(np.mean(x**2))) if x.size else math.nan


def _max(x: Array) -> float:
    return float(np.max(x)) if x.size else math.nan


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
    actuator_lag: float = 0.0,
) -> dict[str, Any]:
    """Every number of the summary, from the recorded bag (and its offline replay).

    Args:
        data: the bag's signals.
        phases: the measured phases, run (their times filled).
        path: the targets.
        vlim: (n,) velocity limits [rad/s].
        lower: (n,) lower position limits [rad or m].
        upper: (n,) upper position limits [rad or m].
        trace: the node's solves (None when the journal could not be played back).
        damping_epsilon: the node's singularity threshold.
        control_rate: the node's rate [Hz].
        limits: per commanded joint, its acceleration and jerk limits.
        actuator_lag: the robot's actuator lag [s] (0: it follows each command at once).

    Returns:
        The figures by name ('phases': per phase), JSON-able but for NaN.
    """
    m: dict[str, Any] = {}
    if limits and data.cmd_t.size > 2:  # over the whole run, at the nominal period
        m.update(_limit_ratio_figures(data, limits, 1.0 / control_rate))
    err_all = position_errors(data, phases)
    timing = (1.0 / control_rate, actuator_lag)
    per_phase = {
        ph.name: _phase_entry(data, ph, err_all, path, vlim, trace, timing) for ph in phases
    }
    m["phases"] = per_phase
    m["tracking_error_feedforward_m"] = per_phase["circle_ff"]["rms_error_m"]
    m["tracking_error_feedback_only_m"] = per_phase["circle_fb"]["rms_error_m"]
    m["figure8_error_feedforward_m"] = per_phase["figure8_ff"]["rms_error_m"]
    m["figure8_error_feedback_only_m"] = per_phase["figure8_fb"]["rms_error_m"]
    t_first, t_last = phases[0].start_ns * 1e-9, phases[-1].end_ns * 1e-9
    in_run = (data.cmd_t >= t_first) & (data.cmd_t < t_last)
    m.update(_rate_figures(data, in_run, t_last - t_first, control_rate))
    m.update(_speed_figures(data, in_run, vlim, lower, upper))
    if trace is not None:
        m.update(_trace_figures(trace, t_first, t_last, damping_epsilon))
    m["damping_epsilon"] = damping_epsilon
    m["step_overshoot_ratio"] = per_phase["steps"].get("step_overshoot_ratio", math.nan)
    m["step_overshoot_own_ratio"] = per_phase["steps"].get("step_overshoot_own_ratio", math.nan)
    m["max_velocity_sign_changes_per_s"] = per_phase["unreachable"].get(
        "max_velocity_sign_changes_per_s", math.nan
    )
    m["status_messages"] = len(data.status)
    return m


def _limit_ratio_figures(
    data: BagData, limits: Sequence[JointLimits], period: float
) -> dict[str, Any]:
    """The largest acceleration and jerk ratios to their limits, and the commands reaching them.

    At the nominal ``period`` [s]: what the controller promises.
    """
    acc, jerk = limit_ratios(data.cmd_t, data.cmd, limits, period)
    return {
        "max_joint_acceleration_ratio": float(np.max(acc)),
        "max_joint_jerk_ratio": float(np.max(jerk)),
        "max_joint_acceleration_index": int(np.argmax(acc)) + 1,  # the command reaching it
        "max_joint_jerk_index": int(np.argmax(jerk)) + 2,
    }


def _phase_entry(
    data: BagData,
    ph: Phase,
    err_all: Array,
    path: TargetPath,
    vlim: Array,
    trace: SolveTrace | None,
    timing: tuple[float, float],
) -> dict[str, Any]:
    """The figures of one phase.

    ``err_all``: :func:`position_errors`; ``timing``: the control period and the robot's
    actuator lag [s].
    """
    t0, t1 = ph.start_ns * 1e-9, ph.end_ns * 1e-9
    sel = (data.js_t >= t0) & (data.js_t < t1) & np.isfinite(err_all)
    entry: dict[str, Any] = {"duration_s": ph.duration, "feedforward": ph.feedforward}
    if trace is not None and trace.followed.shape == trace.t.shape:
        entry["time_not_followed_s"] = time_not_followed(trace, t0, t1)
    cmd_sel = (data.cmd_t >= t0) & (data.cmd_t < t1)
    if cmd_sel.any():
        entry["max_joint_speed_ratio"] = float(np.max(np.abs(data.cmd[cmd_sel]) / vlim))
    if ph.tracking:
        ss = sel & (data.js_t >= t0 + STEADY_FRACTION * ph.duration)
        entry["rms_error_m"] = _rms(err_all[ss])
        entry["max_error_m"] = float(np.max(err_all[ss])) if ss.any() else math.nan
        entry["samples"] = int(np.count_nonzero(ss))
    elif ph.kind == "steps":
        entry.update(_steps_entry(data, ph, path, *timing))
    else:
        last = sel & (data.js_t >= t1 - 0.2)
        entry["final_distance_m"] = float(np.mean(err_all[last])) if last.any() else math.nan
        entry["target_distance_from_home_m"] = UNREACHABLE_DISTANCE
        if trace is not None:
            rs = (trace.t >= t0) & (trace.t < t1) & np.isfinite(trace.sigma_min)
            entry["sigma_min_min"] = float(np.min(trace.sigma_min[rs])) if rs.any() else math.nan
            entry["damping_max_used"] = _max(trace.damping[rs])
        entry["commands_finite"] = bool(np.all(np.isfinite(data.cmd[cmd_sel])))
        late = cmd_sel & (data.cmd_t >= t0 + SIGN_CHANGES_AFTER)
        entry["max_velocity_sign_changes_per_s"] = sign_changes_per_s(
            data.cmd[late], t1 - t0 - SIGN_CHANGES_AFTER
        )
    return entry


def time_not_followed(trace: SolveTrace, t0: float, t1: float) -> float:
    """The time [s] within ``[t0, t1)`` whose commands gave a task less than ``FOLLOWED``.

    Each command counts until the next one (the last: the median interval).
    """
    sel = (trace.t >= t0) & (trace.t < t1)
    t = trace.t[sel]
    if t.size == 0:
        return 0.0
    dt = np.diff(t, append=t[-1] + (float(np.median(np.diff(t))) if t.size > 1 else 0.0))
    return float(np.sum(dt[trace.followed[sel] < FOLLOWED]))


def sign_changes_per_s(cmds: Array, seconds: float, deadband: float = SIGN_DEADBAND) -> float:
    """The most sign changes per second of one joint's commanded velocity (chattering).

    Args:
        cmds: (k, n) commands [rad/s], in time order.
        seconds: the time they span [s].
        deadband: speeds at or below this are no sign [rad/s] (rounding and rest).

    Returns:
        The largest count over the joints divided by ``seconds`` (0 without commands).
    """
    if cmds.size == 0 or seconds <= 0.0:
        return 0.0
    worst = 0
    for j in range(cmds.shape[1]):
        signs = np.sign(cmds[:, j])[np.abs(cmds[:, j]) > deadband]
        worst = max(worst, int(np.count_nonzero(np.diff(signs) != 0)))
    return worst / seconds


def _steps_entry(
    data: BagData, ph: Phase, path: TargetPath, period: float, lag: float
) -> dict[str, Any]:
    """The step phase's figures: hold time, settle time of each step, mean and max, overshoot.

    The overshoot: the largest of the steps', that largest less what was travelled while the
    node's commands stalled (the controller's own), and per step both and the longest gap
    between commands (:func:`step_overshoots`).
    """
    settle = _settle_times(data, ph, path)
    st = [s for s in settle if s is not None]
    over = step_overshoots(data, ph, path, period, lag)
    return {
        "step_overshoot_ratio": max((o.ratio for o in over), default=0.0),
        "step_overshoot_own_ratio": max((o.own_ratio for o in over), default=0.0),
        "step_overshoots": [o.ratio for o in over],
        "step_overshoots_stalled": [o.stalled_ratio for o in over],
        "step_command_gap_max_s": [o.longest_gap_s for o in over],
        "step_hold_s": step_hold(ph),
        "settle_times_s": settle,
        "settle_time_mean_s": float(np.mean(st)) if st else math.nan,
        "settle_time_max_s": float(np.max(st)) if st else math.nan,
        "settled": f"{len(st)}/{len(settle)}",
    }


def _rate_figures(
    data: BagData, in_run: NDArray[np.bool_], run_time: float, control_rate: float
) -> dict[str, Any]:
    """Loop and command rates [Hz] and solve times [ms] (the node's diagnostics)."""
    rates = _float_values(data.diagnostics, "loop_rate_hz")
    solve_mean = _float_values(data.diagnostics, "solve_time_mean_ms")
    solve_max = _float_values(data.diagnostics, "solve_time_max_ms")
    return {
        "control_rate_hz": control_rate,
        "command_rate_hz": float(np.count_nonzero(in_run) / max(run_time, 1e-9)),
        "loop_rate_hz": float(np.median(rates)) if rates.size else math.nan,
        "loop_rate_min_hz": float(np.min(rates)) if rates.size else math.nan,
        "solve_time_mean_ms": (
            float(np.mean(solve_mean[solve_mean > 0])) if np.any(solve_mean > 0) else math.nan
        ),
        "solve_time_max_ms": _max(solve_max),
    }


def _speed_figures(
    data: BagData, in_run: NDArray[np.bool_], vlim: Array, lower: Array, upper: Array
) -> dict[str, Any]:
    """Commanded and measured joint speeds against their limits; position-limit hits."""
    m: dict[str, Any] = {}
    cmds = data.cmd[in_run]
    if cmds.size:
        ratio = np.abs(cmds) / vlim
        m["max_joint_speed_rad_s"] = float(np.max(np.abs(cmds)))
        m["max_joint_speed_ratio"] = float(np.max(ratio))
        m["max_joint_speed_joint"] = int(np.argmax(np.max(ratio, axis=0)))
        m["velocity_limit_hits"] = int(np.count_nonzero(np.any(ratio >= 1.0 - 1e-9, axis=1)))
        m["commands_finite"] = bool(np.all(np.isfinite(cmds)))
    m["max_measured_joint_speed_rad_s"] = _max(np.abs(data.js_v))
    at_limit = (data.js_q <= lower + 1e-9) | (data.js_q >= upper - 1e-9)
    m["position_limit_hits"] = int(np.count_nonzero(np.any(at_limit, axis=1)))
    m["joints_within_limits"] = bool(
        np.all((data.js_q >= lower - 1e-9) & (data.js_q <= upper + 1e-9))
    )
    return m


def _trace_figures(
    trace: SolveTrace, t_first: float, t_last: float, damping_epsilon: float
) -> dict[str, Any]:
    """Smallest singular value, singularity events, damped and locked ticks over the run."""
    run = (trace.t >= t_first) & (trace.t < t_last) & np.isfinite(trace.sigma_min)
    sig = trace.sigma_min[run]
    return {
        "sigma_min_min": float(np.min(sig)) if sig.size else math.nan,
        "singularity_events": _runs(sig < damping_epsilon),
        "damped_ticks": int(np.count_nonzero(sig < damping_epsilon)),
        "locked_ticks": int(np.count_nonzero(trace.locked[run])),
        "solve_trace": trace.source,
    }


def _runs(mask: NDArray[np.bool_]) -> int:
    """The number of runs of True in ``mask``."""
    if mask.size == 0:
        return 0
    x = mask.astype(np.int8)
    return int(x[0] + np.count_nonzero(np.diff(x) == 1))


@dataclass
class StepOvershoot:
    """How far the effector went past one step's target, and how much of it the node missed.

    Attributes:
        ratio: the largest distance past the target along the step's direction, as a fraction
            of the step's length (0: none).
        stalled_ratio: the part of it travelled while the node sent no command for more than
            :data:`STALL_PERIODS` control periods (the robot moving on its last command while
            the node did not run: the host held it up), same unit, at most ``ratio``.
        longest_gap_s: the longest time between two commands up to the overshoot's peak [s].
    """

    ratio: float
    stalled_ratio: float
    longest_gap_s: float

    @property
    def own_ratio(self) -> float:
        """The overshoot the controller made: ``ratio`` less ``stalled_ratio``."""
        return self.ratio - self.stalled_ratio


def step_overshoots(
    data: BagData, ph: Phase, path: TargetPath, period: float, lag: float = 0.0
) -> list[StepOvershoot]:
    """Each step's overshoot, and the part of it travelled while the node's commands stalled.

    A command acts on the robot ``lag`` after it is sent and, in a loop that runs, until the next
    one a ``period`` later; when the next one comes later than :data:`STALL_PERIODS` periods,
    the robot moves on the last one from ``period`` after it (plus the lag) until the next one
    acts. Its travel along the step within those windows, up to the overshoot's peak, is
    ``stalled_ratio`` (at most the overshoot): a stall of the node, not of the controller's
    law, carried the robot that far (a bound: a robot the stall left ahead of the node's plan
    overshoots by at most that much more).

    Args:
        data: the bag's signals (``cmd_t``: the commands' times, the node's ticks where its
            journal gives them).
        ph: the steps phase, run.
        path: the targets.
        period: the node's control period [s].
        lag: the robot's actuator lag [s] (0: it follows each command at once).

    Returns:
        One per step long enough to judge (a step shorter than 1 mm, or with fewer than two
        joint states, has none).
    """
    hold = step_hold(ph)
    t0 = ph.start_ns * 1e-9
    out = []
    for i in range(len(STEP_OFFSETS)):
        sel = (data.js_t >= t0 + i * hold) & (data.js_t < t0 + (i + 1) * hold)
        if np.count_nonzero(sel) < 2:
            continue
        ee, t = data.ee[sel], data.js_t[sel]
        target = path.step_target(i)
        step = target - ee[0]
        length = float(np.linalg.norm(step))
        if length < 1e-3:
            continue
        past = (ee - target) @ (step / length)
        peak = int(np.argmax(past))
        over = max(float(past[peak]), 0.0)
        stalled, gap = _stalled_travel(data.cmd_t, t, past, float(t[peak]), period, lag)
        out.append(StepOvershoot(over / length, min(stalled, over) / length, gap))
    return out


def _stalled_travel(
    cmd_t: Array, t: Array, past: Array, t_peak: float, period: float, lag: float
) -> tuple[float, float]:
    """The travel toward the target [m] while the commands stalled, and the longest gap [s].

    ``t``, ``past``: the step's joint states' times [s] and signed distances past the target
    [m]; counted up to ``t_peak`` [s]. Travel the node did not command, before the target or
    past it: what it brings the robot ahead of the node's plan the node has to brake away, at
    most by overshooting that much.
    """
    ct = cmd_t[(cmd_t >= t[0] - lag - STALL_PERIODS * period) & (cmd_t <= t_peak)]
    if ct.size < 2:
        return 0.0, 0.0
    gaps = np.diff(ct)
    travel = 0.0
    for k in np.flatnonzero(gaps > STALL_PERIODS * period):
        a, b = ct[k] + period + lag, min(ct[k + 1] + lag, t_peak)
        if b > a:
            pa, pb = np.interp([a, b], t, past)
            travel += max(float(pb - pa), 0.0)
    return travel, float(np.max(gaps))


def _settle_times(data: BagData, ph: Phase, path: TargetPath) -> list[float | None]:
    """Per step: time [s] after which the effector stays within the band of the target."""
    hold = step_hold(ph)
    t0 = ph.start_ns * 1e-9
    out: list[float | None] = []
    for i in range(len(STEP_OFFSETS)):
        ts, te = t0 + i * hold, t0 + (i + 1) * hold
        sel = (data.js_t >= ts) & (data.js_t < te)
        if not sel.any():
            out.append(None)
            continue
        err = np.linalg.norm(data.ee[sel] - path.step_target(i), axis=1)
        band = max(SETTLE_BAND * float(err[0]), SETTLE_FLOOR)
        outside = np.flatnonzero(err > band)
        if outside.size == 0:
            out.append(0.0)
        elif outside[-1] == err.size - 1:
            out.append(None)  # not settled within the hold time
        else:
            out.append(float(data.js_t[sel][outside[-1] + 1] - ts))
    return out


__all__ = [
    "SETTLE_BAND",
    "SETTLE_FLOOR",
    "STALL_PERIODS",
    "STEADY_FRACTION",
    "StepOvershoot",
    "compute_metrics",
    "position_errors",
    "sign_changes_per_s",
    "step_overshoots",
]
