"""StatePrediction: a late joint state advanced by the commands sent since, and no faster."""

from __future__ import annotations

import math

import numpy as np
import pytest

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.control.prediction import LATE_AFTER, StatePrediction
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.paths import path_point
from itasc_ros.params import load_config
from itasc_ros.tools.resources import robot_urdf, share_file
from itasc_ros.tools.sim_robot import SimulatedJoints

PERIOD = 0.004


@pytest.mark.parametrize("interval", [0.002, 0.004, 0.010])
def test_a_state_is_advanced_only_once_late_and_continuously(interval: float) -> None:
    """Late: older than LATE_AFTER times the control period or the states' usual interval
    (a robot that publishes slower than the node ticks is not late at every tick)."""
    p = StatePrediction(3, PERIOD)
    expected = LATE_AFTER * max(PERIOD, interval)
    measured = np.array([0.1, 0.2, 0.0])
    stamps = np.array([1.0, 1.0, math.inf])  # the third joint is never measured (implicit)
    cmd = np.array([1.0, -2.0, 5.0])
    p.publish(cmd)
    for age in (0.0, 0.5 * expected, expected):  # not late: the measured state
        np.testing.assert_array_equal(p.advance(measured, stamps, 1.0 + age, interval), measured)
        assert p.late == 0.0
    t1 = 1.0 + expected + 0.006
    q = p.advance(measured, stamps, t1, interval)  # 6 ms late
    np.testing.assert_allclose(q, measured + np.array([0.006, -0.012, 0.0]), atol=1e-12)
    assert p.late == pytest.approx(0.006)
    p.publish(np.array([0.0, 1.0, 0.0]))  # the command changes: integrated piecewise
    q = p.advance(measured, stamps, t1 + 0.004, interval)
    np.testing.assert_allclose(q, measured + np.array([0.006, -0.008, 0.0]), atol=1e-12)
    # a new state of the first joint (robots: per joint): as measured, and the other joint is
    # predicted to the same instant, the freshest state's (or a period ago when that is later)
    stamps = np.array([t1, 1.0, math.inf])
    q = p.advance(np.array([0.3, 0.2, 0.0]), stamps, t1 + 0.008, interval)
    instant = max(t1 + 0.008 - expected, t1)
    more = instant - (t1 + 0.004 - expected)  # at 1 rad/s since the last instant
    np.testing.assert_allclose(q, [0.3, 0.2 - 0.008 + more, 0.0], atol=1e-12)


def test_a_command_is_capped_to_the_last_fresh_one_while_a_state_is_late() -> None:
    p = StatePrediction(2, PERIOD)
    stamps = np.array([1.0, 1.0])
    p.advance(np.zeros(2), stamps, 1.002, PERIOD)
    p.publish(np.array([3.0, 4.0]))  # norm 5, on a fresh state
    out = np.zeros(2)
    big = np.array([6.0, 8.0])
    assert p.cap(big, out) is big  # fresh: as solved
    p.advance(np.zeros(2), stamps, 1.02, PERIOD)
    capped = p.cap(big, out)
    assert capped is out and np.linalg.norm(out) == pytest.approx(5.0)
    np.testing.assert_allclose(out / np.linalg.norm(out), big / np.linalg.norm(big))
    small = np.array([0.1, 0.0])
    assert p.cap(small, out) is small
    p.publish(big)  # published while late: the fresh norm is kept
    assert p.fresh_norm == pytest.approx(5.0)


def test_nothing_is_late_before_the_states_interval_is_known_nor_capped_from_rest() -> None:
    p = StatePrediction(2, PERIOD)
    measured, stamps = np.array([0.1, 0.2]), np.array([1.0, 1.0])
    p.publish(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(p.advance(measured, stamps, 1.09, 0.0), measured)
    assert p.late == 0.0  # one state so far: its interval unknown
    p.publish(np.zeros(2))  # at rest on a fresh state
    p.advance(measured, stamps, 1.09, PERIOD)
    assert p.late > 0.0
    go = np.array([0.3, 0.4])
    assert p.cap(go, np.zeros(2)) is go  # from rest: the prediction holds the position


def _circle_until_the_joint_states_stop(predict: bool) -> dict[str, float]:
    """The Panda on a 0.1 m circle at 0.4 m/s (250 Hz, an ideal robot that follows every
    command); its joint states stop at 1.5 s while the robot goes on with the commands."""
    cfg = load_config(share_file("config", "panda.yaml"))
    cfg.control_rate = 250.0
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    ctrl = Controller(tree, cfg)
    if not predict:
        ctrl._prediction.period = math.inf  # never late: the frozen state, as before
    sim = SimulatedJoints(tree, ctrl.joint_names)
    home = tree.forward_kinematics(sim.q, "panda_hand")
    quat = spatial.matrix_to_quat(home[:3, :3])
    dt, now, stop = 1.0 / 250.0, 100.0, 1.5
    fresh = worst = err = 0.0
    for k in range(int(2.0 / dt)):
        t = k * dt
        if k:
            sim.step(dt)
        if t < stop - 1e-9:
            ctrl.set_joint_state(sim.names, sim.q, now)
        p, v = path_point(t, home[:3, 3], 0.1, 0.4, "circle")
        ctrl.set_target("ee", "", p, quat, now)
        ctrl.set_target_twist("ee", "", np.r_[v, 0.0, 0.0, 0.0], now)
        out = ctrl.step(now)
        if out.publish:
            sim.apply(out.qdot)
        size = float(np.linalg.norm(out.qdot))
        if t <= stop + 1e-9:  # the state at most one period old: fresh
            fresh = size
        elif out.status == "active":
            worst = max(worst, size)
            hand = tree.forward_kinematics(sim.q, "panda_hand")[:3, 3]
            err = max(err, float(np.linalg.norm(hand - p)))
        now += dt
    return {"growth": worst / fresh, "error_m": err}


def test_commands_do_not_grow_on_an_unrefreshed_state_and_the_robot_keeps_tracking() -> None:
    """Until the stale stop (input_timeout 0.1 s), the frozen state made every tick see the
    task's error grow by the motion it did not see, and ask for more (1.29x the last command
    here); predicted, the commands stay those an ideal robot needs (never above the last
    fresh one) and the hand stays on the circle."""
    frozen = _circle_until_the_joint_states_stop(predict=False)
    predicted = _circle_until_the_joint_states_stop(predict=True)
    print(f"\nfrozen state: {frozen}\npredicted: {predicted}")
    assert frozen["growth"] > 1.1  # what it was
    assert predicted["growth"] <= 1.0 + 1e-12
    assert predicted["error_m"] < 1e-3


def test_robots_out_of_phase_are_taken_at_the_freshest_state_without_being_late() -> None:
    """Two robots' states a few milliseconds apart (each driver on its own clock): the older is
    advanced to the newer's instant, nothing is late and nothing capped."""
    p = StatePrediction(2, PERIOD)
    p.publish(np.array([1.0, 2.0]))
    measured, stamps = np.array([0.1, 0.2]), np.array([1.000, 1.003])
    q = p.advance(measured, stamps, 1.004, PERIOD)
    np.testing.assert_allclose(q, [0.1 + 0.003, 0.2], atol=1e-12)
    assert p.late == 0.0 and p.instant == pytest.approx(1.003)
    big = np.array([10.0, 10.0])
    assert p.cap(big, np.zeros(2)) is big
    q = p.advance(np.array([0.104, 0.2]), np.array([1.004, 1.003]), 1.005, PERIOD)
    np.testing.assert_allclose(q, [0.104, 0.2 + 0.002], atol=1e-12)  # now b is behind
