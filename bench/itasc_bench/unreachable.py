"""``itasc-bench unreachable``: coming to rest at an unreachable target without chattering.

The controller of ``config/<robot>.yaml`` (its joint velocity, acceleration and jerk limits)
closed on an ideal velocity robot that applies each command one tick late (``q += u dt`` with
the joint state of the tick before, as over DDS), in process. From a start drawn around the
robot's home pose (each joint home + N(0, ``spread``), seeded), the hand holds its start pose
for 1 s, then its target jumps 2 m away horizontally (the demo's unreachable phase) for 4 s.
The figure of a run is the most sign changes per second of one joint's commanded velocity over
the last 3 s (speeds at or below 1e-3 rad/s have no sign), the demo's
``max_velocity_sign_changes_per_s``; chattering is more than 2 per second. Reported per robot:
every run's figure, the worst, and how many runs are above 2 per second.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config
from itasc_ros.tools.demo.metrics import sign_changes_per_s
from itasc_ros.tools.resources import robot_urdf, share_file

from .report import print_table

Array = NDArray[np.float64]

HOLD = 1.0  # [s] at the start pose
FAR = 4.0  # [s] with the target 2 m away
SETTLE = 1.0  # [s] into the far phase before sign changes count
DISTANCE = 2.0  # [m] of the far target from the start, horizontally
CHATTER = 2.0  # [1/s] more sign changes than this is chattering


def unreachable_run(robot: str, seed: int, spread: float) -> float:
    """Sign changes per second of the worst joint after 1 s at the far target (one run).

    Args:
        robot: 'panda' or 'ur5' (its config/<robot>.yaml and bundled URDF).
        seed: the start's random seed.
        spread: standard deviation of the start around the home pose, per joint [rad].
    """
    cfg = load_config(share_file("config", f"{robot}.yaml"))
    ctrl = Controller(KinematicTree.from_urdf_file(robot_urdf(robot)), cfg)
    dt = 1.0 / cfg.control_rate
    link = str(cfg.constraints[0].settings["link"])
    home = np.asarray(home_of(robot), dtype=float)
    q = home + np.random.default_rng(seed).normal(0.0, spread, home.shape[0])
    start = ctrl.tree.forward_kinematics(q, link)
    quat = spatial.matrix_to_quat(start[:3, :3])
    out = np.array([start[0, 3], start[1, 3], 0.0])
    far = start[:3, 3] + DISTANCE * out / max(float(np.linalg.norm(out)), 1e-9)
    seen = q.copy()  # the joint state the node gets: one tick old
    cmds = []
    for k in range(round((HOLD + FAR) / dt)):
        now = k * dt
        ctrl.set_joint_state(ctrl.joint_names, seen, now, now)
        ctrl.set_target("ee", "", start[:3, 3] if now < HOLD else far, quat, now, now)
        u = ctrl.step(now).qdot
        seen = q.copy()
        q = q + u * dt
        if now >= HOLD + SETTLE:
            cmds.append(u.copy())
    return sign_changes_per_s(np.array(cmds), len(cmds) * dt)


def bench_unreachable(
    robots: tuple[str, ...] = ("panda", "ur5"), runs: int = 20, spread: float = 0.4
) -> dict[str, Any]:
    """:func:`unreachable_run` for seeds 1..``runs`` on each robot."""
    out: dict[str, Any] = {"runs": runs, "spread_rad": spread}
    for robot in robots:
        figs = [unreachable_run(robot, s, spread) for s in range(1, runs + 1)]
        out[robot] = {
            "sign_changes_per_s": [round(f, 3) for f in figs],
            "max_sign_changes_per_s": max(figs),
            "median_sign_changes_per_s": float(np.median(figs)),
            "runs_chattering": sum(f > CHATTER for f in figs),
        }
    return out


def unreachable_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench unreachable`` (``--samples`` runs per robot, at most 100)."""
    r = bench_unreachable(runs=min(args.samples, 100))
    for robot in ("panda", "ur5"):
        row = {k: v for k, v in r[robot].items() if k != "sign_changes_per_s"}
        print_table(f"unreachable target, {robot}, {r['runs']} starts", row)
    return {"unreachable": r}


__all__ = ["bench_unreachable", "unreachable_command", "unreachable_run"]
