"""Hard limits in combination: obstacles, self-collision, a pose task and the motion limits.

The controller of ``config/panda_obstacles.yaml`` (self-collision, a plate and a ball, the pose
task at the *same* priority as the collision constraint, Franka's acceleration and jerk limits)
drives an ideal robot that follows every command, from random collision-free starting
configurations toward targets the margin forbids: the ball's centre, inside the plate, inside
the robot's base, behind the arm, and a target swept fast through the ball. The distances are
measured independently of the constraint's code, by Pinocchio + coal on the URDF's collision
meshes (:func:`~itasc_ros.bench.collision.pinocchio_reference`), at every state and half-way
between consecutive states: no pair ever comes closer than the margin less 1 mm.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_ros.bench.collision import pinocchio_reference
from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config
from itasc_ros.tools.resources import share_file

pytest.importorskip("pinocchio")

BALL = np.array([0.4, 0.3, 0.5])
TARGETS = {
    "ball centre": BALL,
    "inside the plate": np.array([0.5, 0.0, 0.0]),
    "inside the base": np.array([0.0, 0.0, 0.1]),
    "behind the arm": np.array([-0.45, 0.0, 0.25]),
}
SECONDS = 1.6


@pytest.fixture(scope="module")
def setup() -> tuple[KinematicTree, object, Collision, object]:
    tree = KinematicTree.from_urdf_file(erd_urdf_path("panda"))
    cfg = load_config(share_file("config", "panda_obstacles.yaml"))
    ctrl = Controller(tree, cfg)
    c = ctrl.scene.get("collision")
    assert isinstance(c, Collision)
    ref = pinocchio_reference(str(erd_urdf_path("panda")), ctrl.tree, c)
    return tree, cfg, c, ref


def _starts(ref: object, tree: KinematicTree, count: int, seed: int) -> list[np.ndarray]:
    """Home and random configurations with every pair at least 3 cm apart."""
    rng = np.random.default_rng(seed)
    arm = tree.select_joints([f"panda_joint{i}" for i in range(1, 8)])
    out = [home_of("panda")]
    while len(out) < count:
        q = arm.lower + (arm.upper - arm.lower) * rng.uniform(0.1, 0.9, 7)
        if ref.distances(ref.q_of(q)).min() > 0.03:  # type: ignore[attr-defined]
            out.append(q)
    return out


def _run(
    tree: KinematicTree, cfg: object, ref: object, q0: np.ndarray, goal: np.ndarray, sweep: bool
) -> tuple[float, float]:
    """Drive the ideal robot; returns (closest distance [m], largest acceleration ratio)."""
    ctrl = Controller(tree, cfg)  # type: ignore[arg-type]
    dt = ctrl.period
    q, v, now = q0.copy(), np.zeros(7), 10.0
    quat = spatial.matrix_to_quat(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, :3])
    closest, prev = np.inf, q.copy()
    acc = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    ratio = 0.0
    for k in range(int(SECONDS / dt)):
        now += dt
        q = q + v * dt
        mid = 0.5 * (q + prev)
        for x in (mid, q):
            closest = min(closest, float(ref.distances(ref.q_of(x)).min()))  # type: ignore[attr-defined]
        prev = q.copy()
        ctrl.set_joint_state(ctrl.joint_names, q, now, now)
        p = goal.copy()
        if sweep:  # 1 m/s through the ball along y, there and back
            p = BALL + np.array([0.0, 0.3 * np.sin(2.0 * np.pi * k * dt / 1.2), 0.0])
        ctrl.set_target("ee", "", p, quat, now, now)
        out = ctrl.step(now)
        if out.publish:
            ratio = max(ratio, float(np.max(np.abs(out.qdot - v) / (acc * dt))))
            v = out.qdot.copy()
    return closest, ratio


@pytest.mark.parametrize("target", [*TARGETS, "sweep through the ball"])
def test_no_approach_crosses_the_margin(setup: tuple, target: str) -> None:
    tree, cfg, c, ref = setup
    goal = TARGETS.get(target, BALL)
    worst, worst_ratio = np.inf, 0.0
    for q0 in _starts(ref, tree, 5, seed=zlib.crc32(target.encode())):
        closest, ratio = _run(tree, cfg, ref, q0, goal, target.startswith("sweep"))
        worst, worst_ratio = min(worst, closest), max(worst_ratio, ratio)
    print(f"\n{target}: closest pair {worst * 1e3:.2f} mm (margin {c.margin * 1e3:.0f} mm), "
          f"largest acceleration {worst_ratio:.3f} of the limit")  # fmt: skip
    assert worst >= c.margin - 0.001
    assert worst_ratio <= 1.0 + 1e-9
