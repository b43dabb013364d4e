"""Self-collision: a Panda pose target inside the robot's own base, held off at the margin.

The Panda of example-robot-data (its collision meshes as convex hulls, the pairs its SRDF
leaves in) starts at the home pose; the hand's target is a point inside ``panda_link0`` /
``panda_link1`` with the home orientation. The real :class:`~itasc_ros.core.Controller`
(the object the node runs) is configured from ``config/panda_self_collision.yaml``: a
``copy_pose`` task and a ``collision`` constraint at the same priority. The robot is ideal
(``q += q' dt``). The arm reaches toward the target as far as the collision margin allows.
"""

from __future__ import annotations

import math
import pathlib
import time
from typing import Any

import numpy as np

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics import home_of, spatial
from itasc_ros.core.kinematics.collision_geometry import resolve_file
from itasc_ros.params import load_config
from itasc_ros.tools.resources import share_file

NAME: str = "self_collision"
DESCRIPTION: str = (
    "Panda: a hand target inside the robot's own base; the collision constraint holds every "
    "checked pair of links at >= the margin"
)

CONFIG = "panda_self_collision.yaml"
"""The params file in config/."""

HOME = home_of("panda")
"""Start configuration of the 7 arm joints [rad]."""

TARGET = np.array([0.05, 0.0, 0.15])
"""Hand target [m], root frame: inside panda_link0 / panda_link1."""


def run(out_dir: pathlib.Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``self_collision.png`` into ``out_dir``, return the metrics.

    Args:
        out_dir: folder for the plot (created if missing).
        quick: a shorter run (2.5 s instead of 4 s of robot time).

    Returns:
        JSON-able metrics: ``min_collision_distance_m`` (over every tick and pair),
        ``collision_margin_m``, ``collision_pairs``, the final pose error and more.
    """
    cfg = load_config(share_file("config", CONFIG))
    settings = cfg.constraint("collision").settings
    urdf = resolve_file(settings["urdf_file"], settings["package_path"], "robot URDF")
    tree = KinematicTree.from_urdf_file(urdf)
    ctrl = Controller(tree, cfg)
    coll = ctrl.constraint("collision")
    assert isinstance(coll, Collision)
    names = ctrl.joint_names
    arm = ctrl.tree
    q = HOME.copy()
    quat = spatial.matrix_to_quat(arm.forward_kinematics(q, "panda_hand")[:3, :3])
    dt = 1.0 / cfg.control_rate
    duration = 2.5 if quick else 4.0
    n = round(duration / dt)
    t = np.arange(n) * dt
    dmin = np.zeros(n)  # (n,) smallest pair distance per tick [m]
    err = np.zeros(n)  # (n,) hand position error [m]
    tick = np.zeros(n)  # (n,) controller step time [s]
    closest: tuple[str, str] = ("", "")
    best = math.inf
    for k in range(n):
        ctrl.set_joint_state(names, q, t[k])
        if k == 0:
            ctrl.set_target("ee", "", TARGET, quat, t[k])
        t0 = time.perf_counter()
        out = ctrl.step(t[k])
        tick[k] = time.perf_counter() - t0
        dmin[k] = coll.min_distance()
        if dmin[k] < best:
            best = float(dmin[k])
            dist = coll.distances()
            closest = min(dist, key=lambda p: dist[p])
        err[k] = float(np.linalg.norm(arm.forward_kinematics(q, "panda_hand")[:3, 3] - TARGET))
        q_tick = q  # the state of this tick's distances
        q = q + out.qdot * dt
    hand = arm.forward_kinematics(q, "panda_hand")
    rot_err = float(np.linalg.norm(spatial.so3_log(hand[:3, :3].T @ spatial.quat_to_matrix(quat))))
    metrics: dict[str, Any] = {
        "scenario": NAME,
        "min_collision_distance_m": float(dmin.min()),
        "collision_margin_m": coll.margin,
        "collision_pairs": coll.n_pairs,
        "closest_pair": list(closest),
        "final_collision_distance_m": float(dmin[-1]),
        "target_position_m": TARGET.tolist(),
        "final_hand_position_m": hand[:3, 3].tolist(),
        "final_position_error_m": float(err[-1]),
        "start_position_error_m": float(err[0]),
        "final_orientation_error_rad": rot_err,
        "final_q_rad": q.tolist(),
        "final_tick_q_rad": q_tick.tolist(),
        "duration_s": duration,
        "control_rate_hz": cfg.control_rate,
        "tick_median_us": float(np.median(tick) * 1e6),
        "tick_p99_us": float(np.percentile(tick, 99) * 1e6),
    }
    _plot(out_dir, t, dmin, err, coll.margin, metrics)
    return metrics


def _plot(
    out_dir: pathlib.Path,
    t: np.ndarray,
    dmin: np.ndarray,
    err: np.ndarray,
    margin: float,
    metrics: dict[str, Any],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    ax1.plot(t, dmin * 1e3, label="smallest distance over the pairs")
    ax1.axhline(margin * 1e3, color="r", ls="--", label=f"margin {margin * 1e3:.0f} mm")
    ax1.axhline((margin - 0.001) * 1e3, color="r", ls=":", lw=0.8, label="margin - 1 mm")
    ax1.set_ylabel("distance [mm]")
    a, b = metrics["closest_pair"]
    ax1.set_title(
        f"Panda self-collision: {metrics['collision_pairs']} pairs, min "
        f"{metrics['min_collision_distance_m'] * 1e3:.2f} mm ({a} / {b})"
    )
    ax1.legend(loc="upper right")
    ax1.grid(True, alpha=0.3)
    ax2.plot(t, err * 1e3, color="C1")
    ax2.set_ylabel("hand to target [mm]")
    ax2.set_xlabel("time [s]")
    ax2.set_title("the target is inside the base: the hand stops where the margin allows")
    ax2.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / f"{NAME}.png", dpi=100)
    plt.close(fig)


__all__ = ["DESCRIPTION", "NAME", "run"]
