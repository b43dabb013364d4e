"""Several robots in one tree: each robot's kinematics as its own, mounted at its base pose."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import ConfigError, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.robots import Mounted, compose_robots

REPO = Path(__file__).resolve().parents[3]


def test_each_robot_moves_as_its_own_tree_at_its_base() -> None:
    panda = KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")
    ur5 = KinematicTree.from_urdf_file(REPO / "urdf" / "ur5.urdf")
    base_b = np.eye(4)
    base_b[:3, :3] = spatial.so3_exp(np.array([0.0, 0.0, np.pi]))
    base_b[:3, 3] = [1.0, 0.2, 0.0]
    both = compose_robots(
        [Mounted("a", (REPO / "urdf" / "panda.urdf").read_text()),
         Mounted("b", (REPO / "urdf" / "ur5.urdf").read_text(), base_b)]
    )  # fmt: skip
    assert both.root_link == "world"
    assert both.joint_names == [f"a_{j}" for j in panda.joint_names] + [
        f"b_{j}" for j in ur5.joint_names
    ]
    rng = np.random.default_rng(2)
    for _ in range(10):
        qa, qb = panda.random_configuration(rng), ur5.random_configuration(rng)
        q = np.concatenate([qa, qb])
        np.testing.assert_allclose(
            both.forward_kinematics(q, "a_panda_hand"), panda.forward_kinematics(qa, "panda_hand")
        )
        np.testing.assert_allclose(
            both.forward_kinematics(q, "b_tool0"), base_b @ ur5.forward_kinematics(qb, "tool0")
        )
        jac = both.jacobian(q, "b_tool0")  # the other robot's columns are zero
        assert not jac[:, : panda.n_joints].any()
        own = ur5.jacobian(qb, "tool0")
        rot = base_b[:3, :3]
        np.testing.assert_allclose(jac[:3, panda.n_joints :], rot @ own[:3], atol=1e-12)
        np.testing.assert_allclose(jac[3:, panda.n_joints :], rot @ own[3:], atol=1e-12)


def test_bad_compositions_are_named() -> None:
    panda = (REPO / "urdf" / "panda.urdf").read_text()
    for robots in ([], [Mounted("a", panda), Mounted("a", panda)], [Mounted("a/b", panda)]):
        with pytest.raises(ConfigError, match="distinct names"):
            compose_robots(robots)
    with pytest.raises(ConfigError, match="finite rigid transform"):
        compose_robots([Mounted("a", panda, np.full((4, 4), np.nan))])


def test_collision_geometry_and_masses_come_along() -> None:
    panda = (REPO / "urdf" / "panda.urdf").read_text()
    one = KinematicTree.from_urdf(panda)
    two = compose_robots([Mounted("l", panda), Mounted("r", panda, np.eye(4))])
    assert two.mass == pytest.approx(2.0 * one.mass)
    xml = str(two.urdf_xml)
    assert xml.count("<collision") == 2 * panda.count("<collision")


def test_collision_pairs_between_robots_only() -> None:
    from itasc_ros.core.kinematics.collision_geometry import collision_model

    panda = (REPO / "urdf" / "panda.urdf").read_text()
    facing = np.eye(4)
    facing[:3, 3] = [0.8, 0.0, 0.0]
    two = compose_robots([Mounted("a", panda), Mounted("b", panda, facing)])
    everything = collision_model(two, two.urdf_xml, geometry="capsules")
    across = collision_model(two, two.urdf_xml, geometry="capsules", between=["a_", "b_"])
    names = [(across.shapes[i].link, across.shapes[k].link) for i, k in across.pairs]
    assert names and all(a[:2] != b[:2] for a, b in names)
    assert len(across.pairs) < len(everything.pairs)
