"""Several robots in one tree: each robot's kinematics as its own, mounted at its base pose."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import ConfigError, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.robots import Mounted, compose_robots, robot_of

REPO = Path(__file__).resolve().parents[3]


def test_each_robot_moves_as_its_own_tree_at_its_base() -> None:
    panda = KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")
    ur5 = KinematicTree.from_urdf_file(REPO / "urdf" / "ur5.urdf")
    base_b = np.eye(4)
    base_b[:3, :3] = spatial.so3_exp(np.array([0.0, 0.0, np.pi]))
    base_b[:3, 3] = [1.0, 0.2, 0.0]
    both = compose_robots([Mounted("a", panda), Mounted("b", ur5, base_b)])
    assert both.root_link == "world"
    assert both.joint_names == [f"a/{j}" for j in panda.joint_names] + [
        f"b/{j}" for j in ur5.joint_names
    ]
    assert robot_of("b/tool0") == ("b", "tool0")
    rng = np.random.default_rng(2)
    for _ in range(10):
        qa, qb = panda.random_configuration(rng), ur5.random_configuration(rng)
        q = np.concatenate([qa, qb])
        np.testing.assert_allclose(
            both.forward_kinematics(q, "a/panda_hand"), panda.forward_kinematics(qa, "panda_hand")
        )
        np.testing.assert_allclose(
            both.forward_kinematics(q, "b/tool0"), base_b @ ur5.forward_kinematics(qb, "tool0")
        )
        jac = both.jacobian(q, "b/tool0")  # the other robot's columns are zero
        assert not jac[:, : panda.n_joints].any()
        own = ur5.jacobian(qb, "tool0")
        rot = base_b[:3, :3]
        np.testing.assert_allclose(jac[:3, panda.n_joints :], rot @ own[:3], atol=1e-12)
        np.testing.assert_allclose(jac[3:, panda.n_joints :], rot @ own[3:], atol=1e-12)


def test_bad_compositions_are_named() -> None:
    panda = KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")
    for robots in ([], [Mounted("a", panda), Mounted("a", panda)], [Mounted("a/b", panda)]):
        with pytest.raises(ConfigError, match="distinct, non-empty names"):
            compose_robots(robots)
    with pytest.raises(ConfigError, match="finite rigid transform"):
        compose_robots([Mounted("a", panda, np.full((4, 4), np.nan))])
