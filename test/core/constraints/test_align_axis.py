"""align_axis: a vector of a link along a direction, closed loop (the rows: the contract test).

Typical use: track only the position of the hand and keep the tool pointing down. Shown on the
Panda with the controller closed on a perfect velocity robot: the hand's z axis goes down from a
tilted start and from pointing straight up (the opposite direction), the position task keeps
working meanwhile, a rotating target pose is followed with a smaller lag with feed-forward,
and the whole set-up reads from a ROS 2 params file.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    Controller,
    ControllerConfig,
    KinematicTree,
)
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import config_from_params_data
from itasc_ros.tools.resources import robot_urdf

TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
HOME = home_of("panda")
HAND = "panda_hand"
PARAMS = """
itasc_node:
  ros__parameters:
    control_rate: 250.0
    constraint_names: [tip, down]
    constraints:
      tip: {type: copy_pose, link: panda_hand, rotation_axes: ''}
      down: {type: align_axis, link: panda_hand, axis: [0.0, 0.0, 1.0],
             direction: [0.0, 0.0, -1.0], gain: 10.0}
"""


def angle_to(q: np.ndarray, axis: np.ndarray, direction: np.ndarray) -> float:
    a = TREE.forward_kinematics(q, HAND)[:3, :3] @ axis
    return math.acos(float(np.clip(a @ direction, -1.0, 1.0)))


def run(ctrl: Controller, q: np.ndarray, seconds: float, target: np.ndarray) -> np.ndarray:
    """Closed loop: q += q' dt with a fixed position target for 'tip'."""
    for k in range(round(seconds / ctrl.period)):
        t = k * ctrl.period
        ctrl.set_joint_state(TREE.joint_names, q, t)
        ctrl.set_target("tip", "", target, [0.0, 0.0, 0.0, 1.0], t)
        q = q + ctrl.step(t).qdot * ctrl.period
    return q


def test_from_a_params_file_the_tool_turns_down_while_the_position_holds() -> None:
    config = config_from_params_data(yaml.safe_load(PARAMS))
    assert [c.type for c in config.constraints] == ["copy_pose", "align_axis"]
    q0 = HOME + np.array([0.0, 0.0, 0.0, 0.0, 0.6, 0.0, 0.0])  # wrist tilted
    down = np.array([0.0, 0.0, -1.0])
    z = np.array([0.0, 0.0, 1.0])
    assert angle_to(q0, z, down) > 0.4
    target = TREE.forward_kinematics(q0, HAND)[:3, 3]
    q = run(Controller(TREE, config), q0, 2.0, target)
    assert angle_to(q, z, down) < 1e-3
    assert np.linalg.norm(TREE.forward_kinematics(q, HAND)[:3, 3] - target) < 1e-3


def test_a_vector_pointing_the_opposite_way_still_turns_around() -> None:
    """Opposite vectors are an equilibrium of y = u . a; the desired rate leaves it."""
    cons = [
        ConstraintConfig("tip", "copy_pose", link=HAND, rotation_axes=""),
        ConstraintConfig("down", "align_axis", link=HAND, axis=[0.0, 0.0, -1.0], gain=10.0),
    ]
    ctrl = Controller(TREE, ControllerConfig(constraints=cons))
    minus_z, down = np.array([0.0, 0.0, -1.0]), np.array([0.0, 0.0, -1.0])
    assert angle_to(HOME, minus_z, down) > math.pi - 0.05  # the hand's -z points up
    q = run(ctrl, HOME.copy(), 5.0, TREE.forward_kinematics(HOME, HAND)[:3, 3])
    assert angle_to(q, minus_z, down) < 1e-2


def follow_a_turning_target(feedforward: bool) -> float:
    """Largest angle [rad] between the hand's z and a target's z turning at 0.5 rad/s."""
    cons = [
        ConstraintConfig("tip", "copy_pose", link=HAND, rotation_axes=""),
        ConstraintConfig(
            "aim", "align_axis", link=HAND, align_to="target", feedforward=feedforward
        ),
    ]
    ctrl = Controller(TREE, ControllerConfig(constraints=cons))
    q = HOME.copy()
    hand = TREE.forward_kinematics(q, HAND)
    w = np.array([0.5, 0.0, 0.0])  # [rad/s] about the root x axis
    worst = 0.0
    for k in range(round(2.0 / ctrl.period)):
        t = k * ctrl.period
        pose = hand.copy()
        pose[:3, :3] = spatial.so3_exp(w * t) @ hand[:3, :3]
        ctrl.set_joint_state(TREE.joint_names, q, t)
        ctrl.set_target("tip", "", hand[:3, 3], [0.0, 0.0, 0.0, 1.0], t)
        ctrl.set_target("aim", "", pose[:3, 3], spatial.matrix_to_quat(pose), t)
        ctrl.set_target_twist("aim", "", [0.0, 0.0, 0.0, *w], t)
        q = q + ctrl.step(t).qdot * ctrl.period
        if t > 1.0:  # q is the state at t + dt: compare with the target then
            zt = spatial.so3_exp(w * (t + ctrl.period)) @ hand[:3, 2]
            worst = max(worst, angle_to(q, np.array([0.0, 0.0, 1.0]), zt))
    return worst


def test_feed_forward_of_a_turning_target_removes_the_lag() -> None:
    with_ff, without = follow_a_turning_target(True), follow_a_turning_target(False)
    print(f"\nangle lag: {with_ff:.2e} rad with feed-forward, {without:.2e} rad without")
    assert without == pytest.approx(0.5 / 20.0, rel=0.2)  # w / K
    assert with_ff < 0.01 * without


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"align_to": "sideways"}, "choices are: direction, target, link"),
        ({"axis": [0.0, 0.0, 0.0]}, "axis must be 3 finite values, not all zero"),
        ({"direction": [1.0, 2.0]}, "direction must be 3 finite values"),
        ({"align_to": "link"}, "target_link is needed for align_to 'link'"),
        ({"target_link": "panda_link3"}, "target_link is needed for align_to 'link' and only"),
    ],
)
def test_bad_settings_name_the_choices(settings: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ConstraintConfig("a", "align_axis", link=HAND, **settings).validate()
