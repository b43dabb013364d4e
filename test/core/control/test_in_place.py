"""Live scalar changes set on the running scene: nothing rebuilt, the same command as a rebuild.

A gain, weight, feed-forward, damping or Cartesian limit change keeps the scene, its
constraints and the motion limiter (the same objects); the next command equals the one after
the same change made by rebuilding; a bad value changes nothing; the caller's configuration is
never modified. The time of a change is measured by ``itasc-bench tick``
(``live_gain_change_us``).
"""

from __future__ import annotations

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.control.in_place import in_place_changes
from itasc_ros.core.errors import ConfigError
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config
from itasc_ros.tools.resources import share_file

HOME = home_of("panda")
CHANGES = [
    {"constraints.ee.gain": 7.0},
    {"constraints": {"ee": {"weight": 3.0, "feedforward": False}}},
    {"damping_max": 0.2, "damping_epsilon": 0.1},
    {"max_cartesian_speed": 0.2, "max_cartesian_acceleration": 1.0},
    {"max_cartesian_angular_speed": 0.5, "max_cartesian_angular_acceleration": 2.0},
]


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(erd_urdf_path("panda"))


def _moving(tree: KinematicTree) -> Controller:
    """config/panda.yaml (Franka's limits), a far target, 0.1 s into the motion."""
    ctrl = Controller(tree, load_config(share_file("config", "panda.yaml")))
    hand = ctrl.tree.forward_kinematics(HOME, "panda_hand")
    q, now = HOME.copy(), 0.0
    for _ in range(25):
        ctrl.set_joint_state(ctrl.joint_names, q, now, now)
        ctrl.set_target(
            "ee", "", hand[:3, 3] + [0.3, 0.2, -0.1], spatial.matrix_to_quat(hand), now, now
        )
        q = q + ctrl.step(now).qdot * ctrl.period
        now += ctrl.period
    return ctrl


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: ",".join(map(str, c)))
def test_a_scalar_change_is_set_in_place_as_a_rebuild_would(
    tree: KinematicTree, change: dict
) -> None:
    a, b = _moving(tree), _moving(tree)
    scene, limiter, original = a.scene, a._model.limiter, a.config
    assert in_place_changes(a.config, change) is not None
    a.update_parameters(**change)
    assert a.scene is scene and a._model.limiter is limiter  # nothing rebuilt
    assert a.config is not original  # a new configuration; the old one untouched
    b.update_parameters(**change, input_timeout=b.config.input_timeout)  # the rebuild path
    assert b.scene is not scene
    assert a.config.to_dict() == b.config.to_dict()
    for ctrl in (a, b):
        ctrl.set_joint_state(ctrl.joint_names, ctrl.q, 1.0, 1.0)
    np.testing.assert_allclose(a.step(1.0).qdot, b.step(1.0).qdot, rtol=0.0, atol=1e-12)


def test_a_bad_value_changes_nothing(tree: KinematicTree) -> None:
    a = _moving(tree)
    before, gain = a.config.to_dict(), a.scene.get("ee").gain
    with pytest.raises(ConfigError, match="damping_max must be >= 0"):
        a.update_parameters(**{"constraints.ee.gain": 5.0, "damping_max": -1.0})
    with pytest.raises(ConfigError, match="gain"):
        a.update_parameters(**{"constraints.ee.gain": -5.0})
    with pytest.raises(ConfigError, match="damping_epsilon must be > 0"):
        a.update_parameters(damping_epsilon=0.0)
    assert a.config.to_dict() == before and a.scene.get("ee").gain == gain


def test_other_live_settings_still_rebuild(tree: KinematicTree) -> None:
    a = _moving(tree)
    assert in_place_changes(a.config, {"velocity_scale": 0.5}) is None
    assert in_place_changes(a.config, {"constraints.ee.gain": 5.0, "velocity_scale": 0.5}) is None
    scene = a.scene
    a.update_parameters(velocity_scale=0.5)
    assert a.scene is not scene and a.config.velocity_scale == 0.5
