"""Aiming at when the command acts: the robot and the targets extrapolated over the delays.

A closed loop with the delays of a real set-up (pure core, no ROS): joint states measured at
1 kHz and delivered 0.6 ms later, the command delivered 0.6 ms after its tick, a target on a
circle at 0.25 m/s published at 250 Hz (as ``itasc-demo`` does) with its twist (feed-forward)
and delivered 0.6 ms later, the controller ticking at 250 Hz between them. The effector's
distance from where the target *is* at each joint state is the error the demo measures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control._target_kernels import extrapolate_pose
from itasc_ros.core.kinematics import spatial

REPO = Path(__file__).resolve().parents[3]
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
LINK = "panda_hand"
DELAY = 0.0006  # [s] each delivery (joint state, command, target)
RADIUS, OMEGA = 0.1, 2.5  # [m], [rad/s]: 0.25 m/s


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def test_extrapolate_pose_moves_by_the_twist() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        pose = np.eye(4)
        pose[:3, :3] = spatial.so3_exp(rng.normal(size=3))
        pose[:3, 3] = rng.normal(size=3)
        twist, dt = rng.normal(size=6), float(rng.uniform(0.0, 0.05))
        out = np.zeros((4, 4))
        extrapolate_pose(pose, twist, dt, out)
        assert np.allclose(out[:3, 3], pose[:3, 3] + twist[:3] * dt, atol=1e-15)
        assert np.allclose(out[:3, :3], spatial.so3_exp(twist[3:] * dt) @ pose[:3, :3])
        assert np.array_equal(out[3], [0.0, 0.0, 0.0, 1.0])
    out = np.zeros((4, 4))
    extrapolate_pose(pose, np.zeros(6), 0.01, out)
    assert np.array_equal(out, pose)


def _circle(center: np.ndarray, t: float) -> np.ndarray:
    return center + RADIUS * np.array([np.cos(OMEGA * t) - 1.0, np.sin(OMEGA * t), 0.0])


def _circle_twist(t: float) -> np.ndarray:
    v = RADIUS * OMEGA * np.array([-np.sin(OMEGA * t), np.cos(OMEGA * t), 0.0])
    return np.concatenate([v, np.zeros(3)])


def _track(tree: KinematicTree, aim: bool, latency: float = -1.0) -> float:
    """RMS distance [m] from the effector to the target's true position, last 2 of 4 s."""
    ctrl = Controller(
        tree,
        ControllerConfig(
            constraints=[ConstraintConfig("ee", "copy_pose", link=LINK)],
            control_rate=250.0,
            aim_ahead=aim,
            command_latency=latency,
        ),
    )
    names = tree.joint_names
    home = tree.forward_kinematics(HOME, LINK)
    quat = spatial.matrix_to_quat(home)
    q, qdot = HOME.copy(), np.zeros(7)
    pending: list[tuple[float, np.ndarray]] = []  # commands on their way: (arrival, qdot)
    states: list[tuple[float, np.ndarray]] = []  # joint states on their way: (stamp, q)
    targets: list[float] = []  # target stamps on their way
    errors = []
    t0 = 1000.0
    for k in range(4000):  # the robot's 1 kHz clock
        t = t0 + k * 0.001
        while pending and pending[0][0] <= t:
            qdot = pending.pop(0)[1]
        q = q + qdot * 0.001
        states.append((t, q.copy()))
        if k % 4 == 2:  # the target at the control rate, half a period from the ticks
            targets.append(t)
        p_true = _circle(home[:3, 3], t - t0)
        if t - t0 >= 2.0:
            errors.append(np.linalg.norm(tree.forward_kinematics(q, LINK)[:3, 3] - p_true))
        now = t + 0.0003  # the tick, between two joint states
        while states and states[0][0] + DELAY <= now:
            stamp, qs = states.pop(0)
            ctrl.set_joint_state(names, qs, stamp + DELAY, stamp)
        while targets and targets[0] + DELAY <= now:
            ts = targets.pop(0)
            ctrl.set_target("ee", "", _circle(home[:3, 3], ts - t0), quat, ts + DELAY, ts)
            ctrl.set_target_twist("ee", "", _circle_twist(ts - t0), ts + DELAY, ts)
        if k % 4 == 0:
            out = ctrl.step(now)
            assert k < 20 or out.status == "active", out.reason
            pending.append((now + DELAY, out.qdot.copy()))
    return float(np.sqrt(np.mean(np.square(errors))))


def test_aiming_ahead_removes_most_of_the_lag_of_the_delays(tree: KinematicTree) -> None:
    aimed, as_measured = _track(tree, True), _track(tree, False)
    print(f"\ncircle: aimed {aimed * 1e3:.3f} mm, as measured {as_measured * 1e3:.3f} mm")
    assert as_measured > 2e-4  # the delays cost this much without aiming
    assert aimed < 1e-4 and aimed < 0.25 * as_measured


def test_a_given_latency_is_used_and_an_absurd_one_is_refused(tree: KinematicTree) -> None:
    measured = _track(tree, True)
    given = _track(tree, True, latency=DELAY)
    assert given == pytest.approx(measured, rel=0.2)  # the measured one is that delay
    with pytest.raises(Exception, match="command_latency"):
        ControllerConfig(
            constraints=[ConstraintConfig("ee", "copy_pose", link=LINK)], command_latency=5.0
        ).validate()


def test_old_stamps_move_a_target_no_farther_than_the_speed_limits_allow(
    tree: KinematicTree,
) -> None:
    """Stamps 10 s behind the joint state, a huge twist, Franka's limits, then a stop.

    The aimed target stays within ``max_target_speed x input_timeout / 2`` of the received pose,
    every command within the velocity limits, and ``~/enable false`` still ramps to zero.
    """
    from itasc_ros.params import load_config

    cfg = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link=LINK)], control_rate=250.0
    )
    cfg.joint_limits = load_config(REPO / "config" / "panda.yaml").joint_limits
    ctrl = Controller(tree, cfg)
    names, home = tree.joint_names, tree.forward_kinematics(HOME, LINK)
    quat = spatial.matrix_to_quat(home)
    vmax = tree.velocity_limits
    bound = cfg.max_target_speed * 0.5 * cfg.input_timeout + 1e-12
    t = 1000.0
    for k in range(200):
        t += 0.004
        ctrl.set_joint_state(names, HOME, t, t)
        old = t - 10.0 + 0.004 * k  # stamped 10 s before the joint state (within the order)
        ctrl.set_target("ee", "", home[:3, 3], quat, t, old)
        ctrl.set_target_twist("ee", "", [1e3, -1e3, 0.0, 0.0, 0.0, 50.0], t, old)
        if k == 150:
            ctrl.set_enabled(False)
        out = ctrl.step(t)
        assert np.all(np.abs(out.qdot) <= vmax + 1e-9)
        aimed = ctrl.scene.get("ee").target.pose  # type: ignore[attr-defined]
        assert np.linalg.norm(aimed[:3, 3] - home[:3, 3]) <= bound
    for _ in range(500):  # the ramp to zero goes on, a period a step
        t += 0.004
        out = ctrl.step(t)
        assert np.all(np.abs(out.qdot) <= vmax + 1e-9)
        if not out.qdot.any():
            break
    assert not out.qdot.any() and out.status == "disabled"
