"""A Panda on a mobile base: the hand held in the world while the base drives, then reaching.

Closed-loop runs of the real :class:`~itasc_ros.core.control.Controller` on an ideal robot
(the arm integrates its velocities, the base its twist), from ``config/panda_mobile.yaml``:

* **hold**: the base drives a circle 0.5 m across at 0.3 m/s on its own (``base_kind`` none:
  odometry only); the hand's target is fixed in ``odom`` over the circle's centre. With the
  base's twist fed forward (``feed_base_twist``) and without.
* **reach**: the base is commanded (``base_kind: holonomic``); a target 1.5 m beyond the arm's
  reach is reached by moving the base, the arm first (``base_weight``), every command within
  the base's and the arm's limits.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from ...core import Controller, KinematicTree
from ...core.kinematics import spatial
from ..base_motion import CircleBase, CommandedBase
from ..resources import share_file
from ._common import json_ready, scenario_config

NAME = "mobile_base"
DESCRIPTION = (
    "A Panda on a mobile base (config/panda_mobile.yaml): the hand held fixed in the world "
    "while the base drives a circle (with and without the base's twist fed forward), then a "
    "target 1.5 m beyond the arm's reach reached by the commanded holonomic base."
)
PARAMS = "panda_mobile.yaml"
LINK = "panda_hand"
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
RADIUS, SPEED = 0.25, 0.3  # [m], [m/s] the base's circle in the hold run
BEYOND = 1.5  # [m] the reach run's target, beyond the arm's reach


def _odometry(pose: np.ndarray, body: np.ndarray) -> np.ndarray:
    return np.concatenate([pose[:3, 3], spatial.matrix_to_quat(pose), body])


def _hold(tree: KinematicTree, cfg: Any, seconds: float, feed: bool) -> dict[str, Any]:
    """The base on its circle, the hand held over the circle's centre in ``odom``."""
    cfg = copy.deepcopy(cfg)
    cfg.base_kind, cfg.feed_base_twist = "none", feed
    centre = np.eye(4)
    centre[1, 3] = RADIUS
    goal = centre @ tree.forward_kinematics(HOME, LINK)
    return _drive(tree, Controller(tree, cfg), CircleBase(RADIUS, SPEED, 0.0), goal, seconds)


def _reach(tree: KinematicTree, cfg: Any, seconds: float) -> dict[str, Any]:
    """The commanded base carries the hand to a target beyond the arm's reach."""
    goal = tree.forward_kinematics(HOME, LINK)
    goal[:3, 3] += [tree.reach(LINK) + BEYOND, 0.4, 0.0]
    ctrl = Controller(tree, cfg)
    return _drive(tree, ctrl, CommandedBase(holonomic=True), goal, seconds)


def _drive(
    tree: KinematicTree,
    ctrl: Controller,
    base: CircleBase | CommandedBase,
    goal: np.ndarray,
    seconds: float,
) -> dict[str, Any]:
    """The closed loop: joint states and odometry in, the arm and a commanded base moved.

    Returns per tick the time, the base's and the hand's positions in the world, the hand's
    distance from ``goal`` (4, 4) and the command; and the goal and the velocity limits.
    """
    nb = len(ctrl.base_joints)
    world = ctrl.config.world_frame
    q, dt = HOME.copy(), ctrl.period
    n = round(seconds / dt)
    rows: dict[str, Any] = {"t": np.zeros(n), "base": np.zeros((n, 2)), "hand": np.zeros((n, 3))}
    rows["err"], rows["cmd"] = np.zeros(n), np.zeros((n, ctrl.n_joints))
    for k in range(n):
        t = k * dt
        pose, body = base.at(t)
        ctrl.set_joint_state(tree.joint_names, q, t, t)
        ctrl.set_odometry(world, "", _odometry(pose, body), t, t)
        if k == 0:
            ctrl.set_target("ee", world, goal[:3, 3], spatial.matrix_to_quat(goal), t)
        step = ctrl.step(t)
        if step.status != "active":
            raise RuntimeError(f"the controller stopped: {step.status}: {step.reason}")
        hand = pose @ tree.forward_kinematics(q, LINK)
        rows["t"][k], rows["base"][k], rows["hand"][k] = t, pose[:2, 3], hand[:3, 3]
        rows["err"][k] = float(np.linalg.norm(hand[:3, 3] - goal[:3, 3]))
        rows["cmd"][k] = step.qdot
        q = q + step.qdot[nb:] * dt
        if isinstance(base, CommandedBase):
            base.apply(step.qdot[0], step.qdot[1], step.qdot[2])
            base.step(dt)
    rows["goal"], rows["vmax"] = goal[:3, 3], ctrl.velocity_limits
    return rows


def run(out_dir: Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``mobile_base.png`` into ``out_dir``; returns the metrics."""
    cfg = scenario_config(PARAMS)
    tree = KinematicTree.from_urdf_file(share_file("urdf", "panda.urdf"))
    hold_s = 4.0 if quick else 8.0
    fed, unfed = _hold(tree, cfg, hold_s, True), _hold(tree, cfg, hold_s, False)
    reach = _reach(tree, cfg, 13.0 if quick else 16.0)
    settled = fed["t"] >= 2.0
    dt = 1.0 / cfg.control_rate
    within = np.flatnonzero(reach["err"] > 1e-3)
    acc = np.abs(np.diff(reach["cmd"], axis=0)).max(axis=0) / dt
    metrics = {
        "hold_error_rms_fed_m": float(np.sqrt(np.mean(fed["err"][settled] ** 2))),
        "hold_error_max_fed_m": float(fed["err"][settled].max()),
        "hold_error_rms_without_base_twist_m": float(np.sqrt(np.mean(unfed["err"][settled] ** 2))),
        "reach_target_distance_m": float(np.linalg.norm(reach["goal"])),
        "reach_error_end_m": float(reach["err"][-1]),
        "reach_within_1mm_after_s": float(reach["t"][within[-1] + 1]) if within.size else 0.0,
        "reach_base_travel_m": float(np.linalg.norm(reach["base"][-1])),
        "reach_max_velocity_ratio": float((np.abs(reach["cmd"]) / reach["vmax"]).max()),
        "reach_max_base_acceleration_mps2": float(acc[:2].max()),
        "reach_max_base_angular_acceleration_radps2": float(acc[2]),
        "params_file": f"config/{PARAMS}",
    }
    _plot(out_dir / f"{NAME}.png", fed, unfed, reach)
    return json_ready(metrics)


def _plot(path: Path, fed: dict[str, Any], unfed: dict[str, Any], reach: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 2, figsize=(11, 8.5))
    a = ax[0, 0]
    a.plot(fed["base"][:, 0], fed["base"][:, 1], label="base (odometry)")
    a.plot(fed["hand"][:, 0], fed["hand"][:, 1], label="hand, base twist fed forward")
    a.plot(unfed["hand"][:, 0], unfed["hand"][:, 1], ":", label="hand, without")
    _top_view(a, fed["goal"], "target (fixed in odom)", "hold: the base drives a circle")
    a = ax[0, 1]
    a.semilogy(fed["t"], np.maximum(fed["err"], 1e-7) * 1e3, label="base twist fed forward")
    a.semilogy(unfed["t"], np.maximum(unfed["err"], 1e-7) * 1e3, ":", label="without")
    a.set_xlabel("t [s]")
    a.set_ylabel("hand to target in the world [mm]")
    a.legend(fontsize=8)
    a = ax[1, 0]
    a.plot(reach["base"][:, 0], reach["base"][:, 1], label="base")
    a.plot(reach["hand"][:, 0], reach["hand"][:, 1], label="hand")
    _top_view(a, reach["goal"], "target", f"reach: a target {BEYOND} m beyond the arm's reach")
    a = ax[1, 1]
    a.semilogy(reach["t"], np.maximum(reach["err"], 1e-7) * 1e3, label="hand to target [mm]")
    b = a.twinx()
    b.plot(reach["t"], np.hypot(reach["cmd"][:, 0], reach["cmd"][:, 1]), "C1", label="base speed")
    b.set_ylabel("base speed [m/s]")
    a.set_xlabel("t [s]")
    a.set_ylabel("hand to target [mm]")
    a.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _top_view(a: Any, goal: np.ndarray, label: str, title: str) -> None:
    """The goal, the titles and the axes of a view from above."""
    a.plot(*goal[:2], "k+", ms=12, label=label)
    a.set_title(title)
    a.set_xlabel("x [m] (odom)")
    a.set_ylabel("y [m]")
    a.axis("equal")
    a.legend(fontsize=8)


__all__ = ["DESCRIPTION", "NAME", "run"]
