"""Plain figures of a replay (:func:`replay_metrics`): tracking error, joint speeds, limit hits."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.control.following import FOLLOWED
from itasc_ros.tools.replay.result import ReplayResult


def _intervals(mask: NDArray[np.bool_]) -> int:
    """Number of runs of True in a boolean array."""
    if mask.size == 0:
        return 0
    m = mask.astype(np.int8)
    return int(m[0] + np.count_nonzero(np.diff(m) == 1))


def _active_metrics(res: ReplayResult, active: NDArray[np.bool_]) -> dict[str, Any]:
    """Figures over the active steps: position error [m], speeds [rad/s], sigma_min, hits."""
    pe = res.position_error[active]
    pe = pe[np.isfinite(pe)]
    ratio = np.abs(res.recomputed[active]) / res.velocity_limits
    sig = res.sigma_min[active]
    return {
        "position_error_rms_m": float(np.sqrt(np.mean(pe**2))) if pe.size else math.nan,
        "position_error_max_m": float(np.max(pe)) if pe.size else math.nan,
        "max_joint_speed_rad_s": float(np.max(np.abs(res.recomputed[active]))),
        "max_joint_speed_ratio": float(np.max(ratio)),
        "velocity_limit_hits": int(np.count_nonzero(np.any(ratio >= 1.0 - 1e-9, axis=1))),
        "locked_steps": int(np.count_nonzero(res.locked[active])),
        "sigma_min_min": float(np.min(sig)),
        "singularity_events": _intervals(sig < res.damping_epsilon[active]),
        "time_not_followed_s": _time_short(res, active),
    }


def _time_short(res: ReplayResult, active: NDArray[np.bool_]) -> float:
    """The time [s] of the active steps whose command gave a task less than :data:`FOLLOWED`."""
    if res.t.size < 2:
        return 0.0
    dt = np.diff(res.t, prepend=res.t[0])
    short = active & (res.followed < FOLLOWED)  # NaN: not judged, not short
    return float(np.sum(dt[short]))


def replay_metrics(res: ReplayResult) -> dict[str, Any]:
    """Plain numbers about a replay (active steps only where it matters).

    Returns:
        steps, duration [s], step rate [Hz], status counts, inputs, rejected inputs, parameter
        changes; over the active steps the tracking error [m], peak joint speed [rad/s] and its
        ratio to the limit, limit hits, locked steps, smallest sigma_min, singularity events,
        the time a task was not followed [s];
        the peak recorded joint speed [rad/s].
    """
    active = np.array([s == "active" for s in res.status], dtype=bool)
    dur = float(res.t[-1] - res.t[0]) if res.t.size > 1 else 0.0
    out: dict[str, Any] = {
        "steps": int(res.t.size),
        "duration_s": dur,
        "step_rate_hz": (res.t.size - 1) / dur if dur > 0 else 0.0,
        "status_counts": {s: res.status.count(s) for s in sorted(set(res.status))},
        "inputs": dict(res.inputs),
        "rejected_inputs": res.rejections,
        "parameter_changes": len(res.parameter_changes),
    }
    if active.any():
        out.update(_active_metrics(res, active))
    rec = np.all(np.isfinite(res.recorded), axis=1)
    if rec.any():
        out["max_recorded_joint_speed_rad_s"] = float(np.max(np.abs(res.recorded[rec])))
    return out


__all__ = ["replay_metrics"]
