"""``itasc-bench tracking``: a target on a circle (and a figure 8), with and without feed-forward.

The demo's scenario with the same parameters (0.1 m, 0.25 m/s, K = 20, dt = 2 ms), the Panda
from its home pose: the steady-state RMS error of each, beside the feedback-only lag ``v / K``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from itasc_ros.core import KinematicTree, scenarios
from itasc_ros.core.kinematics.home_poses import HOME_POSES
from itasc_ros.tools.resources import robot_urdf


def bench_tracking() -> dict[str, Any]:
    """Circle tracking with and without feed-forward (the demo's scenario, same parameters).

    Returns:
        Per shape ('circle', 'figure8') the scenario's results ``feedforward`` and
        ``feedback_only``; and the circle's ``tracking_error_feedforward_m`` and
        ``tracking_error_feedback_only_m`` [m].
    """
    xml = robot_urdf("panda").read_text()
    tree = KinematicTree.from_urdf(xml)
    out: dict[str, Any] = {}
    for shape in ("circle", "figure8"):
        home = np.array(HOME_POSES["panda"])
        ff = scenarios.circle_tracking(tree, "panda_hand", home, True, shape=shape)
        fb = scenarios.circle_tracking(tree, "panda_hand", home, False, shape=shape)
        out[shape] = {"feedforward": ff, "feedback_only": fb}
    out["tracking_error_feedforward_m"] = out["circle"]["feedforward"]["rms_error_m"]
    out["tracking_error_feedback_only_m"] = out["circle"]["feedback_only"]["rms_error_m"]
    return out


def print_tracking(r: dict[str, Any]) -> None:
    """The table of :func:`bench_tracking`'s result: RMS errors [mm] per shape."""
    print("\n== tracking (0.1 m, 0.25 m/s, K = 20, dt = 2 ms; steady-state RMS over 2 s)")
    print(f"  {'shape':<8} {'feed-forward [mm]':>18} {'feedback only [mm]':>19} {'v/K [mm]':>9}")
    for shape in ("circle", "figure8"):
        ff, fb = r[shape]["feedforward"], r[shape]["feedback_only"]
        ff_mm, fb_mm = ff["rms_error_m"] * 1e3, fb["rms_error_m"] * 1e3
        print(f"  {shape:<8} {ff_mm:>18.4f} {fb_mm:>19.3f} {ff['expected_lag_m'] * 1e3:>9.2f}")


def tracking_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench tracking``; the figures for the JSON line.

    Args:
        args: The parsed command line (unused: the scenario has fixed parameters).
    """
    r = bench_tracking()
    print_tracking(r)
    return {
        "tracking": r,
        "tracking_error_feedforward_m": r["tracking_error_feedforward_m"],
        "tracking_error_feedback_only_m": r["tracking_error_feedback_only_m"],
    }


__all__ = ["bench_tracking", "print_tracking", "tracking_command"]
