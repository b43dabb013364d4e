"""A robot whose velocity servos lag: ``actuator_lag`` inverts the lag; steps in every direction.

In process: ``config/panda.yaml``'s controller at 250 Hz on a robot whose joint velocities
follow the command through a first-order lag (integrated exactly at 1 kHz), as a real arm's
velocity interface does (5-30 ms). The oracles: the circle's error beside the same run on an
ideal robot, a step's overshoot along its line.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.core.scenarios import LaggingRobot, lagging_circle
from itasc_ros.params import load_config

REPO = Path(__file__).resolve().parents[3]
RATE = 250.0  # [Hz]


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def _controller(tree: KinematicTree, lag: float) -> Controller:
    cfg = load_config(REPO / "config" / "panda.yaml")
    return Controller(tree, dataclasses.replace(cfg, actuator_lag=lag))


def _command(tree: KinematicTree, lag: float):
    """The controller as ``command(t, q, pose, twist) -> q'`` (twist None: poses only)."""
    ctrl = _controller(tree, lag)
    names = ctrl.joint_names

    def command(t: float, q: np.ndarray, pose: np.ndarray, twist: np.ndarray | None):
        ctrl.set_joint_state(names, q, t, t)
        ctrl.set_target("ee", "", pose[:3, 3], spatial.matrix_to_quat(pose[:3, :3]), t, t)
        if twist is not None:
            ctrl.set_target_twist("ee", "", twist, t, t)
        out = ctrl.step(t)
        return out.qdot if out.publish else np.zeros(len(names))

    return command


def _circle_rms(tree: KinematicTree, robot_lag: float, node_lag: float) -> float:
    """RMS distance [m] of the hand to the circle's target over its second half (3 s)."""
    q0 = home_pose(tree)
    r = lagging_circle(tree, "panda_hand", q0, _command(tree, node_lag), robot_lag, RATE)
    return r["rms_error_m"]


def test_the_lag_is_inverted_on_a_moving_target(tree: KinematicTree) -> None:
    """20 ms of lag: 0.66 mm RMS on the circle when the node does not know it, within 0.15 mm
    (about the ideal robot's 0.06 mm plus the lag model's discretisation) when it does."""
    ideal = _circle_rms(tree, 0.0, 0.0)
    lagging = _circle_rms(tree, 0.02, 0.0)
    compensated = _circle_rms(tree, 0.02, 0.02)
    assert ideal < 1e-4
    assert lagging > 5e-4, "the lag costs the feed-forward its lead"
    assert compensated <= 1.5e-4, (ideal, lagging, compensated)


@pytest.mark.parametrize("robot_lag", [0.015, 0.025, 0.03])
def test_a_lag_estimated_wrong_still_does_better_than_none(
    tree: KinematicTree, robot_lag: float
) -> None:
    """The node told 20 ms, the robot's servos at 15, 25 or 30 ms: still closer than not told
    (at least a third off). Told twice the robot's lag (20 ms for 10 ms) it is about as far
    off as without: the lag is a setting to measure, not to guess high."""
    assert _circle_rms(tree, robot_lag, 0.02) < 0.67 * _circle_rms(tree, robot_lag, 0.0)


DIRECTIONS = [
    (0.1, 0.0, 0.0),  # forward: the shoulder and elbow, slow under Franka's limits
    (-0.1, 0.0, 0.0),
    (0.0, 0.1, 0.0),
    (0.0, 0.0, 0.1),
    (0.0, 0.0, -0.1),
    (0.07, 0.07, 0.0),
    (0.0, -0.08, 0.08),
]


STARTS = {
    "home": None,  # the Panda's home: elbow folded, the hand low in front
    "upright": [0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0],  # example-robot-data's default
}


@pytest.mark.parametrize("start_name", list(STARTS))
@pytest.mark.parametrize("step", DIRECTIONS)
@pytest.mark.parametrize("lag", [0.0, 0.02])
def test_a_step_in_any_direction_comes_to_rest_without_overshoot(
    tree: KinematicTree, step: tuple[float, float, float], lag: float, start_name: str
) -> None:
    """A 0.1 m step under Franka's limits from two configurations, on an ideal robot and behind
    20 ms servos told to the node: the hand stays within 2 % of the step beyond the goal, and
    settles on it. (Forward from home, a line at the configured 2.5 m/s^2 left the hand behind
    and overshot by 7 %; from upright, a line at 80 % of the joints' speed limits by 5 %.)"""
    given = STARTS[start_name]
    q0 = home_pose(tree) if given is None else np.array(given)
    start = tree.forward_kinematics(q0, "panda_hand")
    c0 = start[:3, 3].copy()
    d = np.array(step)
    length = float(np.linalg.norm(d))
    robot, command = LaggingRobot(q0, lag), _command(tree, lag)
    along, goal = [], start.copy()
    for k in range(int(2.5 * RATE)):
        t = k / RATE
        goal[:3, 3] = c0 + (d if t >= 0.2 else 0.0)
        q = robot.step(command(t, robot.q.copy(), goal, None), 1.0 / RATE)
        along.append(float((tree.forward_kinematics(q, "panda_hand")[:3, 3] - c0) @ d) / length)
    assert max(along) - length <= 0.02 * length, (max(along) - length) / length
    final = tree.forward_kinematics(robot.q, "panda_hand")[:3, 3]
    assert abs(along[-1] - length) < 1e-3 and np.linalg.norm(final - c0 - d) < 2e-3
