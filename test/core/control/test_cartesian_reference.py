"""Cartesian reference: target steps followed along a straight line, and jogging (core)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control._packed import T_REF_ACTIVE, T_SOURCE
from itasc_ros.core.control.cartesian_reference import CartesianReference
from itasc_ros.core.control.journal import TwistSource
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of

REPO = Path(__file__).resolve().parents[3]
HOME = home_of("panda")
LIMITS = (0.5, 2.5, 1.5, 8.0)


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def test_a_step_goes_along_the_straight_line_with_a_bounded_speed_profile() -> None:
    ref = CartesianReference()
    start = np.eye(4)
    goal = np.eye(4)
    goal[:3, 3] = [0.3, -0.2, 0.1]
    goal[:3, :3] = spatial.so3_exp(np.array([0.0, 0.0, 1.0]))
    ref.start(start)
    dt, speeds, points = 0.004, [0.0], []
    for _ in range(1000):
        done = ref.toward(goal, np.zeros(6), dt, LIMITS)
        speeds.append(ref.speed)
        points.append(ref.pose[:3, 3].copy())
        if done:
            break
    assert done and not ref.active
    np.testing.assert_allclose(ref.pose, goal, atol=1e-9)
    p = np.array(points)
    line = goal[:3, 3] / np.linalg.norm(goal[:3, 3])
    off_line = p - np.outer(p @ line, line)
    assert np.abs(off_line).max() < 1e-12  # on the straight line
    assert max(speeds) <= LIMITS[0] + 1e-12
    assert np.abs(np.diff(speeds)).max() <= LIMITS[1] * dt + 1e-12  # bounded acceleration


def test_a_step_taken_while_moving_away_brakes_that_motion_and_does_not_overshoot() -> None:
    """The effector moves away from the new target at 0.25 m/s when the step comes: the
    reference starts with that motion, brakes it within the acceleration limit (no jump of its
    twist), turns back and arrives without passing the target."""
    ref = CartesianReference()
    goal = np.eye(4)
    goal[:3, 3] = [0.1, 0.0, 0.0]
    ref.start(np.eye(4), twist=np.array([-0.25, 0.05, 0.0, 0.0, 0.0, 0.0]))
    dt, twists, along = 0.004, [ref.twist[:3].copy()], []
    for _ in range(1000):
        done = ref.toward(goal, np.zeros(6), dt, LIMITS)
        twists.append(ref.twist[:3].copy())
        along.append(ref.pose[0, 3])
        if done:
            break
    assert done
    change = np.linalg.norm(np.diff(np.array(twists), axis=0), axis=1)
    assert change.max() <= 2.0 * LIMITS[1] * dt + 1e-9  # braked, not dropped (x and y at amax)
    assert min(along) < -(0.25**2) / (2.0 * LIMITS[1]) + 1e-3  # it went on backward, braking
    assert max(along) <= goal[0, 3] + 1e-12  # and never passed the target


def test_a_moving_target_is_caught_up_with_then_followed_directly() -> None:
    ref = CartesianReference()
    ref.start(np.eye(4))
    goal = np.eye(4)
    goal[:3, 3] = [0.1, 0.0, 0.0]
    v = np.array([0.2, 0.0, 0.0, 0.0, 0.0, 0.0])
    for _k in range(1000):
        goal[:3, 3] += v[:3] * 0.004
        if ref.toward(goal, v, 0.004, LIMITS):
            break
    assert not ref.active and _k < 500


def test_jogging_ramps_up_moves_and_stops_smoothly() -> None:
    ref = CartesianReference()
    ref.start(np.eye(4), jogging=True)
    twist = np.array([0.1, 0.0, 0.0, 0.0, 0.0, 0.2])
    dt = 0.004
    for _ in range(500):  # 2 s
        ref.jog(twist, dt, LIMITS)
    assert ref.pose[0, 3] == pytest.approx(0.1 * 2.0, rel=0.02)
    speeds = []
    for _ in range(200):
        done = ref.jog(np.zeros(6), dt, LIMITS)
        speeds.append(ref.speed)
        if done:
            break
    assert done and ref.speed == 0.0
    assert np.abs(np.diff([0.1, *speeds])).max() <= LIMITS[1] * dt + 1e-12


def make(tree: KinematicTree) -> Controller:
    cons = [ConstraintConfig("ee", "copy_pose", link="panda_hand")]
    return Controller(tree, ControllerConfig(constraints=cons, control_rate=250.0))


def run(ctrl: Controller, q: np.ndarray, now: float, ticks: int, jog: np.ndarray | None) -> tuple:
    for _ in range(ticks):
        now += 0.004
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        if jog is not None:
            ctrl.set_jog_twist("ee", "", jog, now)
        out = ctrl.step(now)
        q = q + out.qdot * 0.004
    return q, now, out


def test_controller_step_keeps_the_effector_on_the_line(tree: KinematicTree) -> None:
    ctrl = make(tree)
    q, now = HOME.copy(), 0.0
    start = tree.forward_kinematics(q, "panda_hand")
    goal = start.copy()
    goal[:3, 3] += [0.0, 0.25, -0.15]
    ctrl.set_joint_state(ctrl.joint_names, q, now)
    ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), now)
    line = (goal[:3, 3] - start[:3, 3]) / np.linalg.norm(goal[:3, 3] - start[:3, 3])
    worst = 0.0
    for _ in range(400):
        q, now, _out = run(ctrl, q, now, 1, None)
        d = tree.forward_kinematics(q, "panda_hand")[:3, 3] - start[:3, 3]
        worst = max(worst, float(np.linalg.norm(d - (d @ line) * line)))
    assert worst < 0.005  # within 5 mm of the straight line all the way
    err = np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - goal[:3, 3])
    assert err < 1e-3


def test_controller_jog_moves_v_t_and_stops(tree: KinematicTree) -> None:
    ctrl = make(tree)
    q, now = HOME.copy(), 0.0
    start = tree.forward_kinematics(q, "panda_hand")[:3, 3]
    ctrl.set_joint_state(ctrl.joint_names, q, now)
    q, now, _ = run(ctrl, q, now, 500, np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0]))  # 2 s
    moved = tree.forward_kinematics(q, "panda_hand")[:3, 3] - start
    assert moved[1] == pytest.approx(0.1, rel=0.02)
    q, now, out = run(ctrl, q, now, 150, None)  # the twists stop: it stops smoothly, holds
    assert np.abs(out.qdot).max() < 1e-3
    assert not ctrl._inputs.targets["ee"].ref.active


def test_a_streams_packed_row_keeps_its_reference_and_twist_source(tree: KinematicTree) -> None:
    """The row a compiled call reads (the journal's TICK record) says what the objects say.

    At every tick of a step approached along the reference, then a jog, then a snapshot
    restored: the stream's ``T_REF_ACTIVE`` is its reference's ``active``, ``T_SOURCE`` its
    twist's source.
    """
    ctrl = make(tree)
    st = ctrl._inputs.targets["ee"]
    row = ctrl._inputs.stream_states[0]
    assert np.shares_memory(row, st.s)
    q, now = HOME.copy(), 0.0
    goal = tree.forward_kinematics(q, "panda_hand")
    goal[:3, 3] += [0.0, 0.2, -0.1]
    ctrl.set_joint_state(ctrl.joint_names, q, now)
    ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), now)
    seen = set()
    for k in range(600):
        jog = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0]) if 300 <= k < 450 else None
        if k == 500:
            snapshot = np.concatenate([[0.0, 0.0, 0.0], ctrl.state_values()])
            st.ref.start(np.eye(4))
            assert row[T_REF_ACTIVE] == 1.0
            ctrl.restore_state(snapshot)
        q, now, _ = run(ctrl, q, now, 1, jog)
        assert row[T_REF_ACTIVE] == float(st.ref.active), k
        assert row[T_SOURCE] == st.source, k
        seen.add((st.ref.active, st.source))
    assert {(True, TwistSource.REFERENCE), (False, TwistSource.NONE)} <= seen, seen


@pytest.mark.parametrize("stamped", [True, False])
def test_controller_jog_delivered_unevenly_still_moves_v_t(
    tree: KinematicTree, stamped: bool
) -> None:
    """Twists sent every 10 ms for 2 s but delivered in bursts of up to 8, one in ten lost: the
    effector still moves v t (each twist pays its share of the stream: the stamps' step, else
    the average period of the receptions), and a stall past input_timeout is counted."""
    ctrl = make(tree)
    q, now = HOME.copy(), 0.0
    start = tree.forward_kinematics(q, "panda_hand")[:3, 3]
    ctrl.set_joint_state(ctrl.joint_names, q, now)
    rng = np.random.default_rng(3)
    sent = [0.01 * i for i in range(201) if i in (0, 200) or rng.random() > 0.1]
    jog, due, tick = np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0]), 0, 0.004
    while now < 3.0:
        now += tick
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        if tick * round(now / tick) % 0.028 < tick:  # a burst every 28 ms (7 ticks)
            while due < len(sent) and sent[due] <= now - 0.004:
                ctrl.set_jog_twist("ee", "", jog, now, sent[due] if stamped else None)
                due += 1
        q = q + ctrl.step(now).qdot * tick
    moved = tree.forward_kinematics(q, "panda_hand")[:3, 3] - start
    assert moved[1] == pytest.approx(0.05 * (2.0 + tick), rel=0.02 if stamped else 0.05)
    assert ctrl.jog_late_twists("ee") == 0


def test_controller_jog_counts_twists_cut_off_by_a_stall(tree: KinematicTree) -> None:
    """A delivery stall past input_timeout stops the jog (as Servo); the twists that then come,
    stamped in time, are counted as late and pay only their own share."""
    ctrl = make(tree)
    q, now = HOME.copy(), 0.0
    start = tree.forward_kinematics(q, "panda_hand")[:3, 3]
    ctrl.set_joint_state(ctrl.joint_names, q, now)
    jog, tick = np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.0]), 0.004
    sent, due = [0.01 * i for i in range(101)], 0
    while now < 2.0:
        now += tick
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        stalled = 0.3 <= now < 0.6  # nothing delivered for 0.3 s
        while not stalled and due < len(sent) and sent[due] <= now:
            ctrl.set_jog_twist("ee", "", jog, now, sent[due])
            due += 1
        q = q + ctrl.step(now).qdot * tick
    moved = tree.forward_kinematics(q, "panda_hand")[:3, 3] - start
    assert ctrl.jog_late_twists("ee") == 1  # the first twist after the stall
    # 1 s of twists, of which the 0.3 s stall beyond the 0.1 s the late burst may catch up
    assert 0.05 * 0.75 < moved[1] < 0.05 * 0.85


def _step_overshoot(tree: KinematicTree, aim_ahead: bool) -> float:
    """A 0.1 m step through a loop with delays: how far past the target the hand went [m].

    The robot moves in 0.5 ms substeps with the command in force; it is sampled every 2 ms
    (header stamp: the sample's instant), each sample delivered 1.5 ms later; the controller
    ticks every 4 ms on the latest delivered sample and its command acts 1 ms after the tick.
    """
    cons = [ConstraintConfig("ee", "copy_pose", link="panda_hand")]
    cfg = ControllerConfig(constraints=cons, control_rate=250.0, aim_ahead=aim_ahead)
    ctrl = Controller(tree, cfg)
    q, qdot = HOME.copy(), np.zeros(7)
    start = tree.forward_kinematics(q, "panda_hand")
    goal = start.copy()
    goal[:3, 3] += [0.0, 0.1, 0.0]
    samples: list[tuple[float, np.ndarray]] = []  # (instant, q)
    pending: list[tuple[float, np.ndarray]] = []  # (acts at, qdot)
    worst, sub = -1.0, 0.0005
    for k in range(1, 2400):  # 1.2 s
        t = k * sub
        while pending and pending[0][0] <= t + 1e-12:
            qdot = pending.pop(0)[1]
        q = q + qdot * sub
        if k % 4 == 0:
            samples.append((t, q.copy()))
        if k % 8 == 0:
            delivered = [s for s in samples if s[0] + 0.0015 <= t + 1e-12]
            if not delivered:
                continue
            stamp, qs = delivered[-1]
            ctrl.set_joint_state(ctrl.joint_names, qs, stamp + 0.0015, header_stamp=stamp)
            if k == 8:
                ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), t)
            pending.append((t + 0.001, ctrl.step(t).qdot.copy()))
        worst = max(worst, float(tree.forward_kinematics(q, "panda_hand")[1, 3] - goal[1, 3]))
    assert np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - goal[:3, 3]) < 1e-4
    return worst


def test_a_step_through_delays_is_followed_without_running_ahead_of_its_reference(
    tree: KinematicTree,
) -> None:
    """The braking reference compared with the hand where it was measured and fed forward as
    it will be when the command acts: the overshoot that the delays cause otherwise (the
    deceleration times the delays over the gain) goes."""
    aimed, as_is = _step_overshoot(tree, True), _step_overshoot(tree, False)
    print(f"\nstep overshoot through delays: {aimed * 1e3:.3f} mm aimed, {as_is * 1e3:.3f} mm not")
    assert as_is > 3e-4  # the delays do cause one
    assert aimed < 0.25 * as_is and aimed < 2e-4
