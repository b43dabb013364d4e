"""Two Pandas carry one box along a figure-eight: a loop closure, the robots kept apart.

A closed-loop run of the real :class:`~itasc_ros.core.control.Controller` on two ideal robots
(``q += q' dt``), from ``config/two_pandas.yaml`` (``robots: [a, b]``, b 1 m from a, facing
it): b's hand holds the box's other side (``closure``, priority 1), no link of one robot comes
within 5 cm of the other's (``apart``), a's hand carries the box along a figure-eight 0.2 m
across at up to 0.2 m/s (``box``, priority 2), every joint within ``panda.yaml``'s limits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import coal
import numpy as np

from ...core import Controller, KinematicTree
from ...core.kinematics import spatial
from ...core.kinematics.collision_geometry import collision_model
from ...params import read_params_file, robots_urdf
from ..resources import share_file
from ._common import json_ready, scenario_config

NAME = "two_pandas"
DESCRIPTION = (
    "Two Pandas (config/two_pandas.yaml: robots a and b) carry one box along a figure-eight: "
    "a loop closure at priority 1, no link of one robot within 5 cm of the other's."
)
PARAMS = "two_pandas.yaml"
HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]


def two_pandas_model() -> tuple[KinematicTree, Any]:
    """The two Pandas of ``config/two_pandas.yaml`` as one tree, and its configuration.

    The file's relative URDF paths are resolved to the package's own.

    Raises:
        RuntimeError: the robots' URDFs cannot be composed.
    """
    flat = read_params_file(share_file("config", PARAMS))
    for r in ("a", "b"):
        flat[f"robots.{r}.urdf_file"] = str(
            share_file("urdf", Path(flat[f"robots.{r}.urdf_file"]).name)
        )
    xml, why = robots_urdf(flat, ["a", "b"])
    if xml is None:
        raise RuntimeError(why)
    return KinematicTree.from_urdf(xml), scenario_config(PARAMS)


def run(out_dir: Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``two_pandas.png`` into ``out_dir``; returns the metrics."""
    tree, cfg = two_pandas_model()
    ctrl = Controller(tree, cfg)
    q = np.array(HOME * 2)
    hand = tree.forward_kinematics(q, "a_panda_hand")
    grasp = np.linalg.inv(hand) @ tree.forward_kinematics(q, "b_panda_hand")
    quat = spatial.matrix_to_quat(hand)
    dt, n = ctrl.period, round((6.0 if quick else 12.0) / ctrl.period)
    rows: dict[str, Any] = {"t": np.zeros(n), "grasp": np.zeros((n, 2)), "box": np.zeros((n, 3))}
    rows["goal"], rows["q"] = np.zeros((n, 3)), np.zeros((n, 14))
    w = 2.0 * np.pi / 6.0  # 0.2 m across in 6 s: up to ~0.2 m/s
    for k in range(n):
        t = k * dt
        goal = hand[:3, 3] + [0.0, 0.1 * np.sin(w * t), 0.05 * np.sin(2.0 * w * t)]
        ctrl.set_joint_state(tree.joint_names, q, t)
        ctrl.set_target("box", "", goal, quat, t)
        out = ctrl.step(t)
        if out.status != "active":
            raise RuntimeError(f"the controller stopped: {out.status}: {out.reason}")
        q = q + out.qdot * dt
        a, b = (
            tree.forward_kinematics(q, "a_panda_hand"),
            tree.forward_kinematics(q, "b_panda_hand"),
        )
        d = np.linalg.inv(grasp) @ np.linalg.inv(a) @ b
        rows["t"][k], rows["box"][k], rows["goal"][k], rows["q"][k] = t, a[:3, 3], goal, q
        rows["grasp"][k] = np.linalg.norm(d[:3, 3]), np.linalg.norm(spatial.so3_log(d[:3, :3]))
    settled = rows["t"] >= 1.0
    box_error = np.linalg.norm(rows["box"] - rows["goal"], axis=1)[settled]
    metrics = {
        "grasp_error_max_m": float(rows["grasp"][settled, 0].max()),
        "grasp_angle_max_rad": float(rows["grasp"][settled, 1].max()),
        "box_error_max_m": float(box_error.max()),
        "closest_pair_between_robots_m": closest_between(tree, rows["q"][::25]),
        "margin_m": float(cfg.constraint("apart").settings["margin"]),
        "ticks": n,
        "params_file": f"config/{PARAMS}",
    }
    _plot(out_dir / f"{NAME}.png", rows)
    return json_ready(metrics)


def closest_between(tree: KinematicTree, qs: Any) -> float:
    """The smallest distance [m] of a link of a from a link of b over ``qs`` (coal)."""
    model = collision_model(tree, tree.urdf_xml, geometry="capsules", between=["a_", "b_"])
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    best = np.inf
    for q in qs:
        poses = tree.all_poses(q)
        for i, k in model.pairs:
            sa, sb = model.shapes[i], model.shapes[k]
            ta, tb = poses[sa.link] @ sa.origin, poses[sb.link] @ sb.origin
            res.clear()
            best = min(best, coal.distance(
                sa.geometry, coal.Transform3s(ta[:3, :3], ta[:3, 3]),
                sb.geometry, coal.Transform3s(tb[:3, :3], tb[:3, 3]), req, res,
            ))  # fmt: skip
    return float(best)


def _plot(path: Path, rows: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
    ax[0].plot(rows["goal"][:, 1], rows["goal"][:, 2], "k:", label="the box's path")
    ax[0].plot(rows["box"][:, 1], rows["box"][:, 2], label="a's hand (the box)")
    ax[0].set_xlabel("y [m] (world)")
    ax[0].set_ylabel("z [m]")
    ax[0].axis("equal")
    ax[0].legend(fontsize=8)
    ax[1].semilogy(rows["t"], np.maximum(rows["grasp"][:, 0], 1e-9) * 1e3, label="grasp [mm]")
    ax[1].semilogy(rows["t"], np.maximum(np.degrees(rows["grasp"][:, 1]), 1e-9), label="[deg]")
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("b's hand from its grasp on the box")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


__all__ = ["DESCRIPTION", "NAME", "closest_between", "run"]
