"""itasc_ros.core.kinematics.mobile_base: the free-floating base (with_floating_base).

The floating base's forward kinematics and centre of mass are checked against Pinocchio's
free-flyer model of the same URDF (:class:`~itasc_bench.peers.whole_body.FreeFlyerMap`),
at random configurations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_ros.core import KinematicTree
from itasc_ros.core.errors import ConfigError
from itasc_ros.core.kinematics.mobile_base import (
    BASE_LINK,
    FLOATING_JOINTS,
    with_floating_base,
    with_mobile_base,
)


def _talos() -> tuple[KinematicTree, str]:
    try:
        path = erd_urdf_path("talos")
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    return KinematicTree.from_urdf(path.read_text()), str(path)


def test_the_floating_base_has_six_bounded_joints_before_the_urdf_ones() -> None:
    full, _ = _talos()
    tree = with_floating_base(full, reach=0.5)
    assert tuple(tree.joint_names[:6]) == FLOATING_JOINTS
    assert tree.joint_names[6:] == full.joint_names
    assert np.allclose(tree.lower[:3], -0.5) and np.allclose(tree.upper[:3], 0.5)
    assert math.isclose(tree.upper[3], math.pi) and math.isclose(tree.upper[5], math.pi / 2)
    q = np.zeros(tree.n_joints)  # at zero the root is where the URDF draws it
    sole = "left_sole_link"
    assert np.allclose(tree.forward_kinematics(q, sole), full.forward_kinematics(q[6:], sole))


def test_the_floating_base_moves_the_body_as_pinocchios_free_flyer() -> None:
    from itasc_bench.peers import PeerUnavailable
    from itasc_bench.peers.whole_body import FreeFlyerMap

    full, path = _talos()
    tree = with_floating_base(full)
    try:
        fmap = FreeFlyerMap(path, tree.joint_names)
    except PeerUnavailable as exc:
        pytest.skip(str(exc))
    pin = fmap.pin
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(tree.lower, tree.upper)
        qp = fmap.to_pin(q)
        assert np.allclose(fmap.from_pin(qp), q, atol=1e-9)
        pin.framesForwardKinematics(fmap.model, fmap.data, qp)
        for link in ("left_sole_link", "gripper_right_base_link", "head_2_link"):
            ref = fmap.data.oMf[fmap.frame(link)].homogeneous
            assert np.abs(tree.forward_kinematics(q, link) - ref).max() < 1e-9
        com = pin.centerOfMass(fmap.model, fmap.data, qp)
        assert np.abs(tree.center_of_mass(q)[0] - com).max() < 1e-3  # the grippers' mimics


def test_a_floating_base_is_refused_with_a_bad_reach_or_names_in_use() -> None:
    full, _ = _talos()
    for reach in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ConfigError, match="reach"):
            with_floating_base(full, reach=reach)
    with pytest.raises(ConfigError, match=BASE_LINK):
        with_floating_base(with_mobile_base(full, "holonomic", 1.0, 1.0))
