"""The statistics of a loop run: period error and missed ticks, latency, commands out of limits.

Pure functions of the recorded times and commands (NumPy only), see :mod:`itasc_bench.loop`
for what each figure means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Relative tolerance on the URDF velocity limits for the out-of-limits count [-].
LIMIT_TOLERANCE = 1e-9


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


__all__ = ["LIMIT_TOLERANCE", "latency_stats", "out_of_limits", "period_stats"]
