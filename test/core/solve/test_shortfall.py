"""The shortfall: how much of each task a command gives, read from a scene's last solve."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from robots import bundled_urdf_path

from itasc_ros.core import CopyPose, JointValue, KinematicTree, Scene
from itasc_ros.core.constraints.joint_limit_avoidance import JointLimitAvoidance
from itasc_ros.core.kinematics.home_poses import HOME_POSES

DT = 0.002


@functools.cache
def _tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(bundled_urdf_path("panda"))


def _scene() -> tuple[Scene, np.ndarray]:
    """A pose task at level 1 listed after a posture at level 2, a pose task without a target,
    joint-limit avoidance (soft one-sided rows) and a task of weight 0."""
    tree = _tree()
    q = np.array(HOME_POSES["panda"], dtype=float)
    posture = JointValue("posture", tree.joint_names[:3], q[:3] + 0.3)
    posture.set_priority(1)
    posture.resolves_redundancy = True
    ee = CopyPose("ee", "panda_hand")
    ee.set_target(tree.forward_kinematics(q + 0.05, "panda_hand"))
    untargeted = CopyPose("untargeted", "panda_link5")
    jla = JointLimitAvoidance("jla", margin=0.5)
    light = JointValue("light", [tree.joint_names[6]], q[6:] + 0.4, weight=0.0)
    wrist = JointValue("wrist", [tree.joint_names[5]], q[5:6] + 0.2)
    return Scene(tree, [posture, ee, untargeted, jla, light, wrist]), q


def _expected(scene: Scene, q: np.ndarray, qdot: np.ndarray, name: str) -> float:
    """``<A_i q', b_i> / |b_i|^2`` over the task's weighted rows, from the scene's matrices."""
    mats, s = scene.matrices(q), scene.rows(name)
    on = mats["wy"][s] > 0.0
    a, b = mats["A"][s][on], mats["rhs"][s][on]
    return float((a @ qdot) @ b / (b @ b))


def test_each_task_gets_its_own_fraction_in_the_result_order() -> None:
    scene, q = _scene()
    res = scene.solve(q, DT)
    names = res.constraint_names
    assert names == ["posture", "ee", "untargeted", "jla", "light", "wrist"]
    qdot = res.qdot.copy()
    out = np.full(len(names), -1.0)
    scene.following(qdot, out)
    got = dict(zip(names, out, strict=True))
    for task in ("ee", "wrist"):  # tasks: the fraction of what they ask that qdot gives
        assert got[task] == pytest.approx(_expected(scene, q, qdot, task), rel=1e-12, abs=1e-15)
        assert 0.0 < got[task] <= 1.0 + 1e-9
    # a term that resolves redundancy, no target, one-sided rows, weight 0: not tasks
    for other in ("posture", "untargeted", "jla", "light"):
        assert math.isnan(got[other]), other


def test_the_fraction_is_linear_in_the_command() -> None:
    scene, q = _scene()
    qdot = scene.solve(q, DT).qdot.copy()
    full, half, none = np.zeros(6), np.zeros(6), np.zeros(6)
    scene.following(qdot, full)
    scene.following(0.5 * qdot, half)
    scene.following(np.zeros_like(qdot), none)
    tasks = ~np.isnan(full)
    assert tasks.sum() == 2
    np.testing.assert_allclose(half[tasks], 0.5 * full[tasks], rtol=1e-12)
    np.testing.assert_array_equal(none[tasks], 0.0)
    assert np.array_equal(np.isnan(half), ~tasks) and np.array_equal(np.isnan(none), ~tasks)


def test_a_task_asking_for_nothing_and_a_disabled_one_are_not_judged() -> None:
    scene, q = _scene()
    ee = scene.get("ee")
    ee.set_target(_tree().forward_kinematics(q, "panda_hand"))  # reached: asks for nothing
    scene.get("wrist").enabled = False
    res = scene.solve(q, DT)
    assert "wrist" not in res.constraint_names
    out = np.zeros(len(res.constraint_names))
    scene.following(res.qdot.copy(), out)
    assert np.all(np.isnan(out))
