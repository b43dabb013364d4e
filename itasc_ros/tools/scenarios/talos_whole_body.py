"""Talos whole-body position IK: both feet fixed, the CoM over them, both hands reach low.

:func:`~itasc_ros.core.solve_ik` on Talos (example-robot-data's ``talos_full_v2.urdf``) behind
a free-floating base (:func:`~itasc_ros.core.kinematics.mobile_base.with_floating_base`): both
soles held on their half-sitting poses, the centre of mass kept in config/talos_com.yaml's
support band, both hands on poses that go down toward the floor in front of the feet. Each
waypoint is solved from the last solution; the legs bend and the pelvis goes down, as no arm
alone reaches that low. The same waypoints with the legs and base held (the tree without its
floating base, as config/talos_com.yaml commands it) show where a fixed-base solve stops.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ...core import CopyPose, KinematicTree, solve_ik
from ...core.constraints.com import CenterOfMass
from ...core.kinematics.mobile_base import with_floating_base
from ..resources import example_robot_data_file
from ._common import json_ready, scenario_config
from .talos_com import COM, PARAMS, URDF, half_sitting

NAME = "talos_whole_body"
DESCRIPTION = (
    "Talos whole-body position IK (solve_ik, a floating base): both feet fixed, the CoM in the "
    "support band of config/talos_com.yaml, both hands down toward the floor; compared with "
    "the legs held."
)
FEET = ("left_sole_link", "right_sole_link")
HANDS = ("gripper_left_base_link", "gripper_right_base_link")
#: How far down from their half-sitting height the hands go, per waypoint [m], and forward.
DROPS = (0.0, 0.15, 0.3, 0.45, 0.6)
FORWARD = 0.15
#: solve_ik's budget per waypoint [s] (a waypoint solved from the last one).
BUDGET = 0.05


def _targets(tree: KinematicTree, q0: np.ndarray, drop: float) -> list[np.ndarray]:
    """The hands' half-sitting poses moved down by ``drop`` and forward [m]."""
    out = []
    for h in HANDS:
        pose = tree.forward_kinematics(q0, h)
        pose[:3, 3] += (FORWARD if drop else 0.0, 0.0, -drop)
        out.append(pose)
    return out


def _solve_all(
    tree: KinematicTree, q0: np.ndarray, com: CenterOfMass, feet: bool
) -> dict[str, Any]:
    """Each waypoint solved from the last: success, time, errors, the solutions."""
    cons: list[Any] = [CopyPose(f"hand_{i}", h) for i, h in enumerate(HANDS)]
    if feet:
        for f in FEET:
            c = CopyPose(f, f)
            c.set_target(tree.forward_kinematics(q0, f))
            cons.append(c)
    cons.append(com)
    q = q0.copy()
    for c, pose in zip(cons, _targets(tree, q0, 0.0), strict=False):
        c.set_target(pose)
    solve_ik(tree, constraints=cons, seed=q)  # compiled code loaded before the timed solves
    out: dict[str, Any] = {"success": [], "ms": [], "hand_error_m": [], "q": []}
    for drop in DROPS:
        for c, pose in zip(cons, _targets(tree, q0, drop), strict=False):
            c.set_target(pose)
        t = time.perf_counter()
        r = solve_ik(tree, constraints=cons, seed=q, timeout=BUDGET)
        out["ms"].append(1e3 * (time.perf_counter() - t))
        out["success"].append(bool(r.success))
        out["hand_error_m"].append(float(r.position_error))
        q = r.q
        out["q"].append(q.copy())
    return out


def run(out_dir: Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``talos_whole_body.png`` into ``out_dir``; returns the metrics."""
    full = KinematicTree.from_urdf_file(example_robot_data_file(URDF))
    tree = with_floating_base(full)
    q0 = half_sitting(tree)
    band = scenario_config(PARAMS).constraint(COM)
    lo, hi = np.array(band.support_min), np.array(band.support_max)
    com = CenterOfMass("com", "xy", lo.tolist(), hi.tolist(), margin=0.005)
    whole = _solve_all(tree, q0, com, feet=True)
    held_tree = full.select_joints(
        [n for n in full.joint_names if not n.startswith("leg_")], q_fixed=q0[6:]
    )
    held = _solve_all(held_tree, half_sitting(held_tree), com, feet=False)
    feet_err, com_out, base_z = [], [], []
    for q in whole["q"]:
        feet_err.append(
            max(
                float(np.abs(tree.forward_kinematics(q, f) - tree.forward_kinematics(q0, f)).max())
                for f in FEET
            )
        )
        c = tree.center_of_mass(q)[0][:2]
        com_out.append(float(np.linalg.norm(np.maximum(0.0, np.maximum(lo - c, c - hi)))))
        base_z.append(float(q[2]))
    metrics = {
        "drops_m": list(DROPS),
        "success": whole["success"],
        "solve_ms": whole["ms"],
        "feet_error_max": max(feet_err),
        "com_outside_band_max_m": max(com_out),
        "base_z_m": base_z,
        "success_legs_held": held["success"],
        "hand_error_legs_held_m": held["hand_error_m"],
        "params_file": f"config/{PARAMS}",
    }
    _plot(out_dir / f"{NAME}.png", tree, whole["q"], lo, hi)
    return json_ready(metrics)


def _plot(path: Path, tree: KinematicTree, solutions: list[np.ndarray], lo: Any, hi: Any) -> None:
    """Each solution's links from the side (x, z), and the CoM over the support band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(1, 2, figsize=(11, 5))
    for k, q in enumerate(solutions):
        poses = tree.all_poses(q)
        xyz = np.array([p[:3, 3] for p in poses.values()])
        ax[0].scatter(xyz[:, 0], xyz[:, 2], s=4, label=f"hands down {DROPS[k]:.2f} m")
        c = tree.center_of_mass(q)[0]
        ax[1].plot(c[0], c[1], "o", label=f"CoM, hands down {DROPS[k]:.2f} m")
    ax[0].set_xlabel("x [m]")
    ax[0].set_ylabel("z [m]")
    ax[0].axis("equal")
    ax[0].legend(fontsize=7)
    ax[0].set_title("link origins from the side")
    ax[1].add_patch(
        Rectangle(lo, hi[0] - lo[0], hi[1] - lo[1], fill=False, ls="--", label="support band")
    )
    ax[1].set_xlabel("x [m]")
    ax[1].set_ylabel("y [m]")
    ax[1].axis("equal")
    ax[1].legend(fontsize=7)
    fig.suptitle("Talos whole-body IK: feet fixed, CoM over them, hands down to the floor")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
