"""Hard limits in combination: obstacles, self-collision, a pose task and the motion limits.

The controller of ``config/panda_obstacles.yaml`` (self-collision, a plate and a ball, the pose
task at the *same* priority as the collision constraint, Franka's acceleration and jerk limits)
drives an ideal robot that follows every command, from random collision-free starting
configurations toward targets the margin forbids: the ball's centre, inside the plate, inside
the robot's base, behind the arm, and a target swept fast through the ball. The distances are
measured independently of the constraint's code, by Pinocchio + coal on the URDF's collision
meshes (:func:`~itasc_bench.collision.pinocchio_reference`), at every state and half-way
between consecutive states: no pair ever comes closer than the margin less 1 mm.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_bench.collision import pinocchio_reference
from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.solve.limits import FixedBox
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


def _two_levels(tree: KinematicTree, both: bool, accel: bool) -> Controller:
    """The hand's position at priority 1; with ``both``, its whole pose at priority 2 (weight
    1e6, gain 50) toward another pose; Franka's acceleration and jerk limits with ``accel``.
    Steps go to the constraints at once (no straight-line reference): the limits bind."""
    from itasc_ros.core import ConstraintConfig, ControllerConfig

    cons = [
        ConstraintConfig(
            "pos", "copy_pose", link="panda_hand", rotation_axes="", gain=20.0, reference="target"
        )
    ]
    if both:
        cons.append(
            ConstraintConfig(
                "pose",
                "copy_pose",
                link="panda_hand",
                priority=2,
                weight=1e6,
                gain=50.0,
                reference="target",
            )
        )
    limits = {}
    if accel:
        cfg = load_config(share_file("config", "panda.yaml"))
        limits = cfg.joint_limits
    return Controller(
        tree,
        ControllerConfig(
            constraints=cons, control_rate=500.0, joint_limits=limits, max_cartesian_speed=0.0
        ),
    )


@pytest.mark.parametrize("accel", [False, True], ids=["velocity limits", "+ acceleration"])
def test_a_lower_level_never_changes_the_higher_one_under_saturation(accel: bool) -> None:
    """Every tick, level 1's task velocity with level 2 below it equals level 1 solved alone in
    the same box (velocity, position and motion limits) and with the same limit of its demand
    (from the same last command) to 1e-9, while the limits bind. With
    velocity limits only, the whole closed-loop error trajectory of level 1 is the same."""
    tree = KinematicTree.from_urdf_file(share_file("urdf", "panda.urdf"))
    runs = []
    for both in (False, True):
        ctrl = _two_levels(tree, both, accel)
        alone = _two_levels(tree, False, False).scene  # the same box given below
        same_box = alone.add_limit(FixedBox(np.full(7, -np.inf), np.full(7, np.inf)))
        dt = ctrl.period
        last = np.zeros(7)  # the command before this tick, as the controller's scene reads it
        cfg = ctrl.config
        if accel:  # the same limit of the task's demand (set_demand_limits), from that command
            alone.set_demand_limits(
                cfg.max_cartesian_acceleration, cfg.max_cartesian_angular_acceleration, last, dt
            )
        q, v, now = home_of("panda").copy(), np.zeros(7), 10.0
        home = ctrl.tree.forward_kinematics(q, "panda_hand")
        goal = home[:3, 3] + [0.3, 0.0, 0.0]
        other = home.copy()
        other[:3, :3] = spatial.so3_exp(np.array([0.0, 0.6, 0.0])) @ home[:3, :3]
        errors, saturated = [], 0
        for _ in range(int(1.0 / dt)):
            now += dt
            q = q + v * dt
            ctrl.set_joint_state(ctrl.joint_names, q, now, now)
            ctrl.set_target("pos", "", goal, spatial.matrix_to_quat(home), now, now)
            if both:
                ctrl.set_target("pose", "", other[:3, 3] - [0.2, 0.0, 0.0],
                                spatial.matrix_to_quat(other), now, now)  # fmt: skip
            last[:] = ctrl._model.limiter.v
            seen = ctrl.scene.get("pos")._twist_seen.copy()
            out = ctrl.step(now)
            assert out.publish and out.result is not None
            if both:  # level 1 alone, same state, box and demand limit
                level1 = ctrl.scene.get("pos")  # its reference pose and twist this tick
                alone.get("pos")._twist_seen[:] = seen
                alone.get("pos").set_target(level1.target_pose(ctrl.tree, q))
                alone.get("pos").set_target_twist(level1._target_twist.copy())
                same_box.lo[:], same_box.hi[:] = ctrl.scene.box_lo, ctrl.scene.box_hi
                ref = alone.solve(q, dt).qdot
                jac = ctrl.tree.jacobian(q, "panda_hand")[:3]
                np.testing.assert_allclose(jac @ out.qdot, jac @ ref, rtol=0.0, atol=1e-9)
                saturated += out.result.velocity_scale < 1.0 or bool(out.result.locked.any())
            v = out.qdot.copy()
            errors.append(
                np.linalg.norm(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, 3] - goal)
            )
        runs.append(np.array(errors))
        if both:
            assert saturated > 20, saturated
    # In closed loop level 2 moves the arm in level 1's null space, and the configuration it
    # leaves decides how fast level 1 can go within the limits (its Jacobian, the joints
    # at their bounds): level 1's error differs a little, and converges as fast.
    assert all(np.any(r < 0.1 * r[0]) for r in runs)  # both reach 10 % of the step
    t10 = [int(np.argmax(r < 0.1 * r[0])) for r in runs]
    diff = float(np.max(np.abs(runs[1] - runs[0])))
    print(
        f"\nlevel 1 error: time to 10 %: {t10[0]} ticks alone, {t10[1]} with level 2; "
        f"largest difference {diff * 1e3:.2f} mm; overshoot {_overshoot(runs) * 1e3:.2f} mm"
    )
    assert t10[0] > 0 and t10[1] <= 1.05 * t10[0]
    assert _overshoot(runs) < 0.02 * 0.3  # the error does not grow back by 2 % of the step


def _overshoot(runs: list[np.ndarray]) -> float:
    """How far an error grows back after its first minimum below 10 % [m] (the worst run)."""
    worst = 0.0
    for r in runs:
        k = int(np.argmax(r < 0.1 * r[0]))
        low = np.minimum.accumulate(r[k:])
        worst = max(worst, float(np.max(r[k:] - low)))
    return worst
