"""Target paths of the closed-loop scenarios, the demo and the benchmarks: a circle or a figure 8.

Plain geometry (numpy only): the processes that only publish targets along a path (the
benchmarks' flooding publisher, the demo's target) import it without the solver. ROS-free.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

SHAPES = ("circle", "figure8")
"""Target paths accepted by :func:`circle_tracking`."""

PLANES = {"xy": (0, 1), "yz": (1, 2), "xz": (0, 2)}
"""Planes of the root frame the path can lie in (first axis, second axis)."""


def path_point(
    t: float,
    center: Array,
    radius: float,
    speed: float,
    shape: str = "circle",
    plane: str = "yz",
) -> tuple[Array, Array]:
    """Position (3,) [m] and velocity (3,) [m/s] on the tracking path at time ``t`` [s].

    The angular rate is ``omega = speed / radius`` [rad/s]. ``circle``:
    ``c + r (cos wt, sin wt)`` (constant speed ``speed``); ``figure8`` (Gerono lemniscate):
    ``c + r (sin wt, sin(2 wt) / 2)`` (peak speed ``sqrt(2) speed``). The two coordinates are
    along the axes of ``plane`` of the root frame.
    """
    w = speed / radius
    i, j = PLANES[plane]
    p = np.array(center, dtype=float)  # (3,)
    v = np.zeros(3)
    if shape == "circle":
        p[i] += radius * math.cos(w * t)
        p[j] += radius * math.sin(w * t)
        v[i] = -radius * w * math.sin(w * t)
        v[j] = radius * w * math.cos(w * t)
    else:
        p[i] += radius * math.sin(w * t)
        p[j] += 0.5 * radius * math.sin(2.0 * w * t)
        v[i] = radius * w * math.cos(w * t)
        v[j] = radius * w * math.cos(2.0 * w * t)
    return p, v


__all__ = ["PLANES", "SHAPES", "path_point"]
