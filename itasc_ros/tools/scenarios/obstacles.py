"""Obstacles: the Panda's hand sent into a plate and into a ball, held off at the margin.

The Panda of example-robot-data (its collision meshes as convex hulls, the pairs its SRDF
leaves in) starts at the home pose. The real :class:`~itasc_ros.core.Controller` (the object
the node runs) is configured from ``config/panda_obstacles.yaml``: a ``copy_pose`` task and a
``collision`` constraint with self-collision and two static obstacles, a thin plate in front
of the robot (``box 0.5 0.0 0.0 0.4 0.6 0.02``, top at z = 0.01 m) and a ball above it
(``sphere 0.4 0.3 0.5 0.05``). The hand, with the home orientation, is sent to a point below
the plate's top, then to a point that puts the fingers inside the ball. The robot is ideal
(``q += q' dt``). The metrics say what happened, whether or not the margin held: the smallest
distance to an obstacle and between the robot's own links at every tick, how many ticks were
below the margin and how deep.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics import home_of
from itasc_ros.core.kinematics.collision_geometry import resolve_file

from ._common import IdealRobot, json_ready, scenario_config, set_pose_target

NAME: str = "obstacles"
DESCRIPTION: str = (
    "Panda (config/panda_obstacles.yaml): the hand is sent into a plate, then into a ball; "
    "the collision constraint keeps the links off the obstacles and each other"
)

CONFIG = "panda_obstacles.yaml"
"""The params file in config/."""

HOME = home_of("panda")
"""Start configuration of the 7 arm joints [rad]."""

WAYPOINTS = (
    ("plate", np.array([0.5, 0.0, 0.05])),  # the fingertips ~0.1 m below: into the plate
    ("ball", np.array([0.4, 0.3, 0.6])),  # the fingertips at the ball's centre
)
"""Hand targets [m], root frame, each held for a while, with the home orientation."""

TOLERANCE = 0.001
"""Below the margin by more than this [m] counts as crossing it."""


def run(out_dir: pathlib.Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``obstacles.png`` into ``out_dir``, return the metrics.

    Args:
        out_dir: folder for the plot (created if missing).
        quick: a shorter run (1.5 s per waypoint instead of 2.5 s of robot time).

    Returns:
        JSON-able metrics: ``min_obstacle_distance_m`` and ``min_self_distance_m`` (over every
        tick and pair), ``collision_margin_m``, ``ticks_below_margin``, ``margin_held``, the
        hand's distance to each target and more.
    """
    cfg = scenario_config(CONFIG)
    settings = cfg.constraint("collision").settings
    tree = KinematicTree.from_urdf_file(
        resolve_file(settings["urdf_file"], settings["package_path"], "robot URDF")
    )
    ctrl = Controller(tree, cfg)
    coll = ctrl.constraint("collision")
    assert isinstance(coll, Collision)
    robot = IdealRobot(ctrl, ctrl.joint_names, HOME)
    hold = 1.5 if quick else 2.5
    trace = _drive(ctrl, robot, coll, round(hold / robot.dt))
    final = coll.min_distance(robot.q)  # the state after the last command
    return _finish(out_dir, trace, coll, final, hold, cfg.control_rate)


def _drive(
    ctrl: Controller, robot: IdealRobot, coll: Collision, per_wp: int
) -> dict[str, np.ndarray]:
    """Hold each waypoint for ``per_wp`` ticks; the distances and hand error of every tick."""
    n = per_wp * len(WAYPOINTS)
    trace = {k: np.zeros(n) for k in ("t", "obstacle", "self", "error")}
    closest = np.empty(n, dtype=object)  # the link nearest an obstacle, per tick
    arm = ctrl.tree
    goal = np.zeros(3)
    for k in range(n):
        robot.sense()
        if k % per_wp == 0:
            pose = arm.forward_kinematics(HOME, "panda_hand").copy()
            goal = WAYPOINTS[k // per_wp][1]
            pose[:3, 3] = goal
            set_pose_target(ctrl, "ee", pose, robot.t)
        trace["t"][k] = robot.t
        hand = arm.forward_kinematics(robot.q, "panda_hand")[:3, 3]
        out = robot.tick()
        if out.status != "active":
            raise RuntimeError(f"the controller stopped: {out.status}: {out.reason}")
        dist = coll.distances()  # at this tick's state
        obstacle = {a: d for (a, b), d in dist.items() if not b}
        closest[k] = min(obstacle, key=lambda link: obstacle[link])
        trace["obstacle"][k] = obstacle[closest[k]]
        trace["self"][k] = min(d for (a, b), d in dist.items() if b)
        trace["error"][k] = float(np.linalg.norm(hand - goal))
    trace["closest"] = closest
    return trace


def _finish(
    out_dir: pathlib.Path,
    trace: dict[str, np.ndarray],
    coll: Collision,
    final: float,
    hold: float,
    rate: float,
) -> dict[str, Any]:
    """The metrics of a run, and its plot."""
    margin = coll.margin
    both = np.minimum(trace["obstacle"], trace["self"])
    below = both < margin - TOLERANCE
    per_wp = len(trace["t"]) // len(WAYPOINTS)
    ends = [(i + 1) * per_wp - 1 for i in range(len(WAYPOINTS))]
    metrics: dict[str, Any] = {
        "scenario": NAME,
        "collision_margin_m": margin,
        "collision_pairs": coll.n_pairs,
        "obstacles": list(coll.obstacles),
        "min_obstacle_distance_m": float(trace["obstacle"].min()),
        "closest_link_to_an_obstacle": str(trace["closest"][int(trace["obstacle"].argmin())]),
        "min_self_distance_m": float(trace["self"].min()),
        "final_min_distance_m": final,
        "ticks_below_margin": int(below.sum()),
        "deepest_below_margin_m": float(max(0.0, margin - both.min())),
        "margin_held": bool(not below.any()),
        "waypoints": [name for name, _ in WAYPOINTS],
        "hand_targets_m": [goal.tolist() for _, goal in WAYPOINTS],
        "hand_error_end_of_waypoints_m": [float(trace["error"][i]) for i in ends],
        "min_obstacle_distance_per_waypoint_m": [
            float(trace["obstacle"][i + 1 - per_wp : i + 1].min()) for i in ends
        ],
        "hold_s": hold,
        "control_rate_hz": rate,
    }
    _plot(out_dir, trace, margin, metrics)
    result: dict[str, Any] = json_ready(metrics)
    return result


def _plot(
    out_dir: pathlib.Path, trace: dict[str, np.ndarray], margin: float, metrics: dict[str, Any]
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    t = trace["t"]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ax1.plot(t, trace["obstacle"] * 1e3, label="robot to the obstacles")
    ax1.plot(t, trace["self"] * 1e3, label="robot to itself")
    ax1.axhline(margin * 1e3, color="r", ls="--", label=f"margin {margin * 1e3:.0f} mm")
    ax1.set_ylim(0.0, max(8.0 * margin, 0.15) * 1e3)
    ax1.set_ylabel("smallest distance [mm]")
    n_below = metrics["ticks_below_margin"]
    held = "held" if metrics["margin_held"] else f"crossed at {n_below} ticks"
    ax1.set_title(
        f"Panda and two obstacles: {metrics['collision_pairs']} pairs, margin {held}, min "
        f"{metrics['min_obstacle_distance_m'] * 1e3:.1f} mm to an obstacle"
    )
    ax1.legend(loc="upper right")
    ax1.grid(True, alpha=0.3)
    ax2.plot(t, trace["error"] * 1e3, color="C2")
    ax2.set_ylabel("hand to target [mm]")
    ax2.set_xlabel("time [s]")
    names = ", then the ".join(metrics["waypoints"])
    ax2.set_title(f"targets inside the {names}: the hand stops where the margin allows")
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / f"{NAME}.png", dpi=100)
    plt.close(fig)


__all__ = ["DESCRIPTION", "NAME", "run"]
