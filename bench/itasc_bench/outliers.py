"""``itasc-bench outliers``: one bad target pose in a 50 Hz stream on a circle.

The outlier is 1e6, 1e12 or 1e149 m away (refused) or 1 or 3 m away (a jump); the figures are
the effector's largest deviation from the run without it and the time to come back within 1 mm,
the controller (config/panda.yaml) closed on a perfect velocity robot.
"""

from __future__ import annotations

import argparse
from typing import Any

from itasc_ros.core import KinematicTree, scenarios
from itasc_ros.core.kinematics.home_poses import HOME_POSES
from itasc_ros.params import load_config
from itasc_ros.tools.resources import robot_urdf, share_file

OUTLIER_POSITIONS = {  # name -> the outlier's position in the root frame [m]
    "1e6 m": (1e6, 0.0, 0.5),
    "1e12 m": (1e12, 0.0, 0.5),
    "1e149 m": (1e149, 0.0, 0.5),
    "3 m": (3.0, 0.0, 0.5),
    "1 m": (1.0, 0.0, 0.5),
}


def bench_outliers() -> dict[str, Any]:
    """One outlier pose at t = 1.01 s in a 50 Hz circle stream (Panda, config/panda.yaml).

    Returns:
        Per outlier (a key of :data:`OUTLIER_POSITIONS`) the scenario's figures: largest
        deviation, recovery time, deviation at +1/3/5 s [m], refused poses, jumps, largest
        feed-forward.
    """
    tree = KinematicTree.from_urdf(robot_urdf("panda").read_text())
    config = load_config(share_file("config", "panda.yaml"))
    home = HOME_POSES["panda"]
    out: dict[str, Any] = {}
    for name, position in OUTLIER_POSITIONS.items():
        bad = [scenarios.HostileInput(1.01, "pose", position)]
        r = scenarios.stream_with_hostile_inputs(tree, config, home, bad, duration=10.0)
        out[name] = {k: v for k, v in r.items() if k not in ("t", "deviation_m")}
    return out


def print_outliers(r: dict[str, Any]) -> None:
    """The table of :func:`bench_outliers`'s result, one line per outlier [mm, s]."""
    print("\n== one outlier pose in a 50 Hz stream (deviation from the run without it)")
    for name, row in r.items():
        at = ", ".join(f"{v * 1e3:.1f}" for v in row["deviation_at_m"].values())
        print(
            f"  {name:>8}: max {row['max_deviation_m'] * 1e3:8.1f} mm, back within 1 mm "
            f"after {row['recovery_s']:.2f} s, at +1/3/5 s [{at}] mm, refused "
            f"{row['rejected']}, jumps {row['jumps']}, largest feed-forward "
            f"{row['max_feedforward_m_s']:.3f} m/s"
        )


def outliers_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench outliers``; the figures for the JSON line.

    Args:
        args: The parsed command line (unused: the scenario has fixed parameters).
    """
    r = bench_outliers()
    print_outliers(r)
    return {"outliers": r}


__all__ = ["OUTLIER_POSITIONS", "bench_outliers", "outliers_command", "print_outliers"]
