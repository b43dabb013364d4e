"""The physics robot (MuJoCo): its servos' lag, torque limits, gravity, contacts, real URDFs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.tools.resources import example_robot_data_file
from itasc_ros.tools.sim_robot.physics import PHYSICS_DT, PhysicsError, PhysicsJoints

PANDA = "panda_description/urdf/panda.urdf"  # example-robot-data's: real inertias, STL meshes
UR5 = "ur_description/urdf/ur5_robot.urdf"
ARM = [f"panda_joint{i}" for i in range(1, 8)]


def _robot(rel: str = PANDA, **kw: object) -> tuple[KinematicTree, PhysicsJoints]:
    path = example_robot_data_file(rel)
    xml = path.read_text()
    tree = KinematicTree.from_urdf(xml)
    joints = kw.pop("joints", ARM if rel == PANDA else None)
    sim = PhysicsJoints(tree, xml, joints, base_dir=path.parent, **kw)  # type: ignore[arg-type]
    return tree, sim


def _time_constant(t: np.ndarray, v: np.ndarray, target: float) -> float:
    """When the response first reaches 63.2 % of ``target`` [s]."""
    reached = np.nonzero(np.abs(v) >= (1.0 - math.exp(-1.0)) * abs(target))[0]
    assert reached.size, "the joint never reached 63 % of its command"
    return float(t[reached[0]])


@pytest.mark.parametrize("lag", [0.01, 0.02, 0.03])
def test_each_joint_follows_a_step_with_the_lag_and_without_overshoot(lag: float) -> None:
    _, sim = _robot(lag=lag)
    q0 = sim.q
    for j in range(sim.n):
        sim = _robot(lag=lag)[1]
        cmd = np.zeros(sim.n)
        cmd[j] = 0.3
        sim.apply(cmd)
        t, v = [], []
        for k in range(int(6 * lag / PHYSICS_DT)):
            sim.step(PHYSICS_DT)
            t.append((k + 1) * PHYSICS_DT)
            v.append(sim.velocity[j])
        tau = _time_constant(np.array(t), np.array(v), 0.3)
        assert 0.7 * lag <= tau <= 1.3 * lag, (sim.names[j], tau)
        assert max(v) <= 0.3 * 1.02, "no overshoot"
        assert abs(v[-1] - 0.3) < 0.02 * 0.3, "it settles on its command"
        others = np.delete(sim.q - q0, j)
        assert np.abs(others).max() < 2e-3, "the other joints hold"


def test_it_holds_itself_against_gravity_and_within_its_torque_limits() -> None:
    """Gravity compensated as the robot's own controller does: a zero command holds the arm
    where it is, stretched out, for a second; every torque stays within the URDF's effort."""
    tree, sim = _robot()
    q = home_pose(tree)[[tree.joint_index(n) for n in sim.names]]
    q[1], q[3] = 0.6, -0.4  # leaning forward, elbow nearly straight
    tree, sim = _robot(q0=q)
    efforts = np.array([87.0] * 4 + [12.0] * 3)
    worst = 0.0
    for _ in range(1000):
        sim.step(PHYSICS_DT)
        worst = max(worst, float(np.max(np.abs(sim.effort) / efforts)))
    assert np.abs(sim.q - q).max() < 5e-3
    assert worst <= 1.0 + 1e-9


def test_a_torque_limit_bounds_the_acceleration() -> None:
    """A joint asked for its full speed at once accelerates at most as its torque allows."""
    _, sim = _robot(lag=0.005)
    cmd = np.zeros(sim.n)
    cmd[6] = 2.5  # joint 7: 12 N m on a light link; the servo asks far more
    sim.apply(cmd)
    sim.step(0.002)
    assert 0.0 < sim.velocity[6] < 2.5
    assert abs(sim.effort[6]) <= 12.0 + 1e-9


def test_a_contact_with_an_obstacle_is_counted_and_named() -> None:
    """The referee: the arm turned about its base sweeps its hand into a ball on the hand's
    circle; MuJoCo's contact names the pair. Without the ball, no contact (the fingers that
    touch at the start, a closed gripper, are not counted)."""
    tree, free = _robot()
    hand = tree.forward_kinematics(home_pose(tree), "panda_hand")[:3, 3]
    radius, angle = math.hypot(hand[0], hand[1]), math.atan2(hand[1], hand[0]) + 0.3
    ball = f"sphere {radius * math.cos(angle)} {radius * math.sin(angle)} {hand[2]} 0.04"
    _, sim = _robot(obstacles=[ball])
    cmd = np.zeros(sim.n)
    cmd[0] = 0.5  # joint 1: the hand sweeps a horizontal circle toward the ball
    for s in (sim, free):
        s.apply(cmd)
        for _ in range(1200):
            s.step(PHYSICS_DT)
    assert sim.contacts.steps > 0, "the hand went into the ball"
    assert any("world" in pair for pair in sim.contacts.pairs), sim.contacts.pairs
    assert free.contacts.steps == 0, free.contacts.pairs
    assert ("panda_leftfinger", "panda_rightfinger") in free.ignored


def test_a_kinematics_only_urdf_runs_and_the_ur5_too() -> None:
    """A URDF without inertials (the shipped Panda's) gets small ones; the UR5 of
    example-robot-data runs with its own."""
    from itasc_ros.tools.resources import share_dir

    xml = (share_dir() / "urdf" / "panda.urdf").read_text()
    tree = KinematicTree.from_urdf(xml)
    sim = PhysicsJoints(tree, xml, None, lag=0.02)
    sim.apply(np.full(sim.n, 0.1))
    sim.step(0.1)
    assert np.all(sim.velocity > 0.05)
    _, ur5 = _robot(UR5)
    ur5.apply(np.full(ur5.n, 0.1))
    ur5.step(0.1)
    assert np.all(ur5.velocity > 0.05)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(PhysicsError, match="actuator_lag"):
        _robot(lag=0.0)
    xml = example_robot_data_file(PANDA).read_text()
    tree = KinematicTree.from_urdf(xml)
    gone = xml.replace("meshes/collision/link3.stl", "meshes/collision/nowhere.stl")
    with pytest.raises(PhysicsError, match=r"nowhere\.stl.*not found"):
        PhysicsJoints(tree, gone, ARM)
