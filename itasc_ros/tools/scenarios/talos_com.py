"""Talos moves both hands while its centre of mass stays over its feet.

Closed-loop runs of the real :class:`~itasc_ros.core.control.Controller` on an ideal robot,
from ``config/talos_com.yaml`` (example-robot-data's ``talos_full_v2.urdf``; legs held in the
SRDF's half-sitting pose, torso and both arms commanded). Both hands reach forward and down,
then to the side; the ``com`` band (priority 1) keeps the CoM inside the support region while
the hands (priority 2) get as close as that allows. The same targets without the ``com``
constraint show where the CoM would have gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from ...core import Controller, KinematicTree
from ..resources import example_robot_data_file
from ._common import IdealRobot, json_ready, scenario_config, set_pose_target, without

NAME = "talos_com"
DESCRIPTION = (
    "Talos (example-robot-data) reaches with both hands while the com band (priority 1, "
    "config/talos_com.yaml) keeps its centre of mass over the feet; compared with the same "
    "run without the com constraint."
)
PARAMS = "talos_com.yaml"
URDF = "talos_data/robots/talos_full_v2.urdf"
SRDF = "talos_data/srdf/talos.srdf"
COM, HANDS = "com", ("left_hand", "right_hand")
# Hand targets [m, base_link frame]: (left, right) per waypoint; the right mirrors the left
# unless given.
WAYPOINTS = (
    ((0.50, 0.25, -0.05), (0.50, -0.25, -0.05)),  # both forward: the CoM is pulled forward
    ((0.35, 0.55, 0.00), (0.45, -0.15, -0.10)),  # left out to the side, right across
    ((0.55, 0.20, -0.25), (0.55, -0.20, -0.25)),  # both forward and low
)


def half_sitting(tree: KinematicTree) -> np.ndarray:
    """(n,) the SRDF's ``half_sitting`` positions of the tree's joints (0 where not given)."""
    doc = etree.parse(str(example_robot_data_file(SRDF)))
    state = doc.find(".//group_state[@name='half_sitting']")
    if state is None:
        raise RuntimeError(f"{SRDF} has no half_sitting group_state")
    values = {
        str(j.get("name")): float(str(j.get("value")))
        for j in state
        if j.get("value") is not None and " " not in str(j.get("value")).strip()
    }
    return np.array([values.get(n, 0.0) for n in tree.joint_names])


def _run(
    tree: KinematicTree, cfg: Any, q0: np.ndarray, hold: float, waypoints: Any
) -> dict[str, np.ndarray]:
    ctrl = Controller(tree, cfg)
    robot = IdealRobot(ctrl, tree.joint_names, q0)
    n_ticks = round(hold * len(waypoints) / ctrl.period)
    per_wp = n_ticks // len(waypoints)
    com = np.zeros((n_ticks, 3))
    hands = np.zeros((n_ticks, 2))  # distance of each hand to its final target [m]
    t = np.zeros(n_ticks)
    idx = [tree.link_index(ctrl.constraint(h).effector_link or "") for h in HANDS]
    goals = np.zeros((2, 3))
    for k in range(n_ticks):
        robot.sense()
        if k % per_wp == 0 and k // per_wp < len(waypoints):
            for i, h in enumerate(HANDS):
                goals[i] = waypoints[k // per_wp][i]
                pose = np.eye(4)
                pose[:3, 3] = goals[i]
                set_pose_target(ctrl, h, pose, robot.t)
        t[k] = robot.t
        out = robot.tick()
        if out.status != "active":
            raise RuntimeError(f"the controller stopped: {out.status}: {out.reason}")
        com[k] = tree.center_of_mass(robot.q)[0]
        poses = tree.all_poses(robot.q)
        for i in range(2):
            hands[k, i] = float(np.linalg.norm(poses[tree.link_names[idx[i]]][:3, 3] - goals[i]))
    return {"t": t, "com": com, "hands": hands, "per_wp": np.array([per_wp])}


def _outside(com: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(T,) distance of the CoM's xy outside the band [m] (0 inside)."""
    d = np.maximum(0.0, np.maximum(lo - com[:, :2], com[:, :2] - hi))
    return np.sqrt((d * d).sum(axis=1))


def run(out_dir: Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``talos_com.png`` into ``out_dir``; returns the metrics."""
    full = KinematicTree.from_urdf_file(example_robot_data_file(URDF))
    q0 = half_sitting(full)
    cfg = scenario_config(PARAMS)
    band = cfg.constraint(COM)
    lo, hi = np.array(band.support_min), np.array(band.support_max)
    hold = 2.0 if quick else 2.5  # [s] per waypoint
    waypoints = WAYPOINTS[::2] if quick else WAYPOINTS
    held = _run(full, cfg, q0, hold, waypoints)
    free = _run(full, without(cfg, [COM]), q0, hold, waypoints)
    out_held, out_free = _outside(held["com"], lo, hi), _outside(free["com"], lo, hi)
    per_wp = int(held["per_wp"][0])
    ends = [min(len(held["t"]), (i + 1) * per_wp) - 1 for i in range(len(waypoints))]
    metrics = {
        "max_com_outside_band_m": float(out_held.max()),
        "max_com_outside_band_without_com_constraint_m": float(out_free.max()),
        "com_start_xy_m": held["com"][0, :2].tolist(),
        "support_min_m": lo.tolist(),
        "support_max_m": hi.tolist(),
        "hand_error_end_of_waypoints_m": {
            h: [float(held["hands"][e, i]) for e in ends] for i, h in enumerate(HANDS)
        },
        "hand_error_end_of_waypoints_without_com_constraint_m": {
            h: [float(free["hands"][e, i]) for e in ends] for i, h in enumerate(HANDS)
        },
        "waypoints": len(waypoints),
        "ticks": len(held["t"]),
        "params_file": f"config/{PARAMS}",
    }
    _plot(out_dir / f"{NAME}.png", held, free, lo, hi)
    return json_ready(metrics)


def _plot(
    path: Path, held: dict[str, np.ndarray], free: dict[str, np.ndarray], lo: Any, hi: Any
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(1, 2, figsize=(11, 4.8))
    ax[0].add_patch(
        Rectangle(lo, hi[0] - lo[0], hi[1] - lo[1], fill=False, ls="--", label="support band")
    )
    ax[0].plot(held["com"][:, 0], held["com"][:, 1], label="CoM, com at priority 1")
    ax[0].plot(free["com"][:, 0], free["com"][:, 1], ":", label="CoM without the com constraint")
    ax[0].set_xlabel("x [m] (base_link)")
    ax[0].set_ylabel("y [m]")
    ax[0].axis("equal")
    ax[0].legend(fontsize=8)
    for i, h in enumerate(HANDS):
        ax[1].plot(held["t"], held["hands"][:, i], label=f"{h}, com held")
        ax[1].plot(free["t"], free["hands"][:, i], ":", label=f"{h}, without com")
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("hand distance to its waypoint [m]")
    ax[1].legend(fontsize=8)
    fig.suptitle("Talos: both hands move, the centre of mass stays over the feet")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
