"""Strict priorities: ``constraints.<name>.priority`` through the scene, the solver, the config.

* one level (every priority equal) is today's solve bit for bit (the scene and the kernel);
* a lower level acts only in the null space of the higher ones: the rate of the priority-1
  rows is the single-task rate to 1e-9 at any configuration away from singularities;
* the projector rolls off smoothly at a singularity of the higher level (no jump in q');
* joint-limit locking and velocity scaling hold for the combined q';
* the priority is a live setting of every constraint type, checked (an integer >= 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    ConstraintError,
    Controller,
    ControllerConfig,
    KinematicTree,
    Scene,
)
from itasc_ros.core.constraints import CopyPose, JointValue
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.solve import solver as S
from itasc_ros.tools.resources import robot_urdf

HOME = home_of("panda")
TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
DT = 0.004


def _scene(
    posture_priority: int | None,
    offset: tuple[float, float, float],
    at: np.ndarray | None = None,
) -> Scene:
    """Hand pose (target: the hand at ``at`` + offset), and a posture at the given priority."""
    ee = CopyPose("ee", "panda_hand", gain=5.0)
    goal = TREE.forward_kinematics(HOME if at is None else at, "panda_hand")
    goal[:3, 3] += offset
    ee.set_target(goal)
    cons: list[CopyPose | JointValue] = [ee]
    if posture_priority is not None:
        post = JointValue("posture", TREE.joint_names, TREE.neutral(), gain=2.0)
        post.set_priority(posture_priority)
        cons.append(post)
    return Scene(TREE, cons)


def test_one_level_is_todays_solve_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = TREE.random_configuration(rng)
        at_one, at_five = _scene(1, (0.05, 0.0, 0.0)), _scene(1, (0.05, 0.0, 0.0))
        for c in at_five.constraints:
            c.set_priority(5)  # one level, whatever its number
        a = at_one.solve(q, DT).qdot.copy()
        b = at_five.solve(q, DT).qdot.copy()
        assert np.array_equal(a, b)
        # the kernel with one level is solve_limited, bit for bit
        m = at_one.matrices(q)
        n = TREE.n_joints
        rows = m["A"].shape[0]
        out = [np.zeros(n), np.zeros(n)]
        for i, prioritized in enumerate((False, True)):
            args = [
                np.ascontiguousarray(m["A"]),
                m["rhs"].copy(),
                m["wy"].copy(),
                np.ones(n),
                q.copy(),
                TREE.lower,
                TREE.upper,
                TREE.velocity_limits,
                DT,
                0,
                0.1,
                0.06,
                np.pi,
                out[i],
                np.zeros(n, dtype=bool),
                np.zeros((rows, n)),
                np.zeros(rows),
                np.zeros(n),
                np.zeros(n),
                np.zeros(S.INFO_SIZE),
            ]
            if prioritized:
                levels = np.array([0, rows], dtype=np.int64)
                extra = [levels, 1, np.zeros((n, n)), np.zeros((rows, n)), np.zeros(rows)]
                S.solve_prioritized(
                    *args,
                    *extra,
                    np.zeros(n),
                    np.full(n, -np.inf),
                    np.full(n, np.inf),
                    np.zeros(rows, dtype=bool),
                    np.zeros(n),
                    np.zeros(rows, dtype=bool),
                )
            else:
                S.solve_limited(*args)
        assert np.array_equal(out[0], out[1])
        assert np.array_equal(out[0], a)


def test_the_lower_level_acts_only_in_the_null_space_of_the_higher() -> None:
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(30):
        q = HOME + rng.normal(0.0, 0.3, TREE.n_joints)
        q = TREE.clamp(q)
        alone = _scene(None, (0.02, -0.01, 0.01), q)
        both = _scene(2, (0.02, -0.01, 0.01), q)
        r1, r2 = alone.solve(q, DT), both.solve(q, DT).copy()
        if r1.sigma_min < 0.06 or r1.velocity_scaled or r2.velocity_scaled:
            continue  # damped or scaled: exact isolation is not promised there
        if r1.locked.any() or r2.locked.any():
            continue
        a1 = both.matrices(q)["A"][both.rows("ee")]
        diff = np.abs(a1 @ (r2.qdot - r1.qdot)).max()
        assert diff <= 1e-9, diff
        # ... and the posture does move the arm (in the one free direction)
        assert np.abs(r2.qdot - r1.qdot).max() > 1e-4
        checked += 1
    assert checked >= 15
    print(f"\nisolation checked at {checked} configurations")


def test_rows_are_grouped_by_level_and_the_layout_follows_a_priority_change() -> None:
    scene = _scene(2, (0.0, 0.0, 0.0))
    assert [(p, s.stop - s.start) for p, s in scene.levels] == [(1, 6), (2, 7)]
    scene.get("ee").set_priority(3)  # now the posture comes first
    assert [(p, s.stop - s.start) for p, s in scene.levels] == [(2, 7), (3, 6)]
    assert scene.rows("posture") == slice(0, 7) and scene.rows("ee") == slice(7, 13)
    res = scene.solve(HOME, DT)
    assert res.ok and res.constraint_names == ["ee", "posture"]  # errors keep their order


def test_a_singular_higher_level_hands_over_smoothly() -> None:
    """Straightening the elbow into the damping band of the hand's position rows.

    Along a fine sweep of panda_joint4 toward the stretched arm the smallest singular value of
    the priority-1 rows falls below ``damping_epsilon``; the projector's roll-off hands that
    direction to the posture continuously: q' changes by about as little per step as the
    single-task solve's does.
    """
    ee = CopyPose("ee", "panda_hand", rotation_axes="", gain=0.5)
    target = TREE.forward_kinematics(HOME, "panda_hand")
    target[:3, 3] += [0.3, 0.0, 0.2]
    ee.set_target(target)
    post = JointValue("posture", TREE.joint_names, TREE.neutral(), gain=0.5)
    post.set_priority(2)
    # The joint limit keeps the elbow from the exact singularity: a wider damping band
    # (sigma < 0.15 instead of 0.06) puts the sweep through it.
    both = Scene(TREE, [ee, post], damping_epsilon=0.15)
    alone = Scene(
        TREE, [CopyPose("ee", "panda_hand", rotation_axes="", gain=0.5)], damping_epsilon=0.15
    )
    alone.get("ee").set_target(target)
    q = HOME.copy()
    smins, steps = [], {"both": [], "alone": []}
    prev: dict[str, np.ndarray] = {}
    for q4 in np.linspace(-1.2, TREE.upper[3] - 1e-3, 1500):
        q[3] = q4
        for name, scene in (("both", both), ("alone", alone)):
            res = scene.solve(q, 1e-6)  # a tiny step: no joint reaches a limit
            assert res.ok and not res.locked.any()
            if name in prev:
                steps[name].append(np.abs(res.qdot - prev[name]).max())
            prev[name] = res.qdot.copy()
            if name == "alone":
                smins.append(res.sigma_min)
    assert min(smins) < 0.15 < max(smins)  # through the band where damping and roll-off act
    jump_both, jump_alone = max(steps["both"]), max(steps["alone"])
    print(f"\nlargest change of q' per step: {jump_both:.2e} (posture at priority 2), "
          f"{jump_alone:.2e} (pose alone)")  # fmt: skip
    assert jump_both < 3.0 * jump_alone + 1e-3


def test_joint_limits_hold_for_the_combined_velocities() -> None:
    """A posture at priority 2 that asks for a joint beyond its limit: locked at the limit."""
    ee = CopyPose("ee", "panda_hand", rotation_axes="", gain=5.0)
    target = TREE.forward_kinematics(HOME, "panda_hand")
    target[:3, 3] += [0.05, 0.05, 0.0]
    ee.set_target(target)
    # panda_joint7 turns the hand about its origin: free for a position task; limit 2.8973
    post = JointValue("posture", ["panda_joint7"], [3.5], gain=50.0)
    post.set_priority(2)
    scene = Scene(TREE, [ee, post])
    q = HOME.copy()
    locked = scaled = 0
    for _ in range(500):
        res = scene.solve(q, DT)
        locked += bool(res.locked.any())
        scaled += res.velocity_scaled
        assert np.all(np.abs(res.qdot) <= TREE.velocity_limits + 1e-12)
        q = q + DT * res.qdot
        assert np.all(q <= TREE.upper + 1e-12) and np.all(q >= TREE.lower - 1e-12)
    print(f"\nlocked ticks {locked}, scaled ticks {scaled}, q {np.round(q, 4).tolist()}")
    assert locked > 0  # the posture saturates joint 7; the hand (level 1) is never scaled
    assert scaled == 0
    assert q[6] == pytest.approx(TREE.upper[6], abs=1e-9)
    assert np.linalg.norm(TREE.forward_kinematics(q, "panda_hand")[:3, 3] - target[:3, 3]) < 1e-3


def test_priority_is_a_checked_live_setting_of_every_type() -> None:
    cfg = ControllerConfig(
        constraints=[
            ConstraintConfig("ee", "copy_pose", link="panda_hand"),
            ConstraintConfig("posture", "joint_value", joints=["panda_joint1"], values=[0.0]),
        ]
    )
    ctrl = Controller(TREE, cfg)
    assert [c.priority for c in ctrl.scene.constraints] == [1, 1]
    ctrl.update_parameters(**{"constraints.posture.priority": 2})
    assert ctrl.scene.get("posture").priority == 2
    assert ctrl.config.constraint("posture").priority == 2
    assert [p for p, _ in ctrl.scene.levels] == [1, 2]
    for bad in (0, -1, 1.5, "2", True, 101):
        with pytest.raises(ConfigError, match="priority"):
            ctrl.update_parameters(**{"constraints.posture.priority": bad})
    assert ctrl.scene.get("posture").priority == 2  # all or nothing
    with pytest.raises(ConstraintError, match="priority"):
        JointValue("j", ["panda_joint1"], [0.0]).set_priority(0)
    # an integral double (e.g. from a YAML file written by hand) is accepted as the integer
    one = {"name": "p", "type": "joint_value", "joints": ["a"], "values": [0.0], "priority": 2.0}
    assert ControllerConfig.from_dict({"constraints": [one]}).constraint("p").priority == 2
