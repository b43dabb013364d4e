"""The base in the world frame: odometry, world-fixed targets, the base's twist fed forward.

A closed loop without ROS: the Panda on a base that drives a circle (odometry only, the base
not controlled), odometry and joint states at 500 Hz delivered 1 ms late, the controller at
250 Hz; a hand target fixed in the world is given once. The hand's distance from that target
*in the world* is the error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    Controller,
    ControllerConfig,
    InputError,
    KinematicTree,
)
from itasc_ros.core.control.journal import Journal, decode
from itasc_ros.core.control.odometry import place_in_base, world_of_base
from itasc_ros.core.control.playback import ConfigHistory, Playback
from itasc_ros.core.kinematics import spatial
from itasc_ros.tools.base_motion import SwayBase

REPO = Path(__file__).resolve().parents[3]
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
LINK = "panda_hand"
DELAY = 0.001  # [s] delivery of joint states, odometry and commands


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def _controller(tree: KinematicTree, **kw: object) -> Controller:
    settings: dict[str, object] = {"world_frame": "odom", **kw}
    cfg = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link=LINK)],
        control_rate=250.0,
        **settings,  # type: ignore[arg-type]
    )
    return Controller(tree, cfg)


def _base(t: float, radius: float, speed: float, yaw_rate: float) -> tuple[np.ndarray, np.ndarray]:
    """The base's pose (4, 4) and body twist (6,) at ``t`` [s] on its circle."""
    w = speed / radius
    pose = np.eye(4)
    pose[:3, 3] = [radius * np.sin(w * t), radius * (1.0 - np.cos(w * t)), 0.0]
    pose[:3, :3] = spatial.so3_exp(np.array([0.0, 0.0, yaw_rate * t]))
    v_world = np.array([speed * np.cos(w * t), speed * np.sin(w * t), 0.0])
    body = np.concatenate([pose[:3, :3].T @ v_world, [0.0, 0.0, yaw_rate]])
    return pose, body


def _odom_values(pose: np.ndarray, body: np.ndarray) -> np.ndarray:
    return np.concatenate([pose[:3, 3], spatial.matrix_to_quat(pose), body])


def _hold(
    tree: KinematicTree,
    feed: bool,
    radius: float = 0.25,
    speed: float = 0.3,
    yaw_rate: float = 0.0,
    journal: Journal | None = None,
    ticks: int = 2000,
    messages: list[np.ndarray] | None = None,
) -> tuple[float, Controller, list[np.ndarray]]:
    """RMS world distance [m] of the hand from its world-fixed target over the last 2 of 4 s."""
    ctrl = _controller(tree, feed_base_twist=feed)
    if journal is not None:
        ctrl.attach_journal(journal)
    names = tree.joint_names
    q, qdot = HOME.copy(), np.zeros(7)
    hand0 = tree.forward_kinematics(HOME, LINK)
    pending: list[tuple[float, np.ndarray]] = []
    errors, commands = [], []
    t0 = 500.0
    for k in range(ticks):  # the robot's 500 Hz clock
        t = t0 + k * 0.002
        while pending and pending[0][0] <= t:
            qdot = pending.pop(0)[1]
        q = q + qdot * 0.002
        base, body = _base(t - t0, radius, speed, yaw_rate)
        ctrl.set_joint_state(names, q, t + DELAY, t)
        ctrl.set_odometry("odom", "panda_link0", _odom_values(base, body), t + DELAY, t)
        if k == 0:  # the hand's pose at the start, fixed in the world from now on
            quat = spatial.matrix_to_quat(hand0)
            ctrl.set_target("ee", "odom", hand0[:3, 3], quat, t + DELAY, t)
        hand_world = base @ tree.forward_kinematics(q, LINK)
        if t - t0 >= 2.0:
            errors.append(np.linalg.norm(hand_world[:3, 3] - hand0[:3, 3]))
        if k % 2 == 0:
            now = t + DELAY
            out = ctrl.step(now)
            assert out.status == "active", out.reason
            assert np.all(np.abs(out.qdot) <= ctrl.velocity_limits + 1e-12)
            commands.append(out.qdot.copy())
            pending.append((now + DELAY, out.qdot.copy()))
            if journal is not None and messages is not None:
                if k % 200 == 0:
                    ctrl.write_snapshot(journal)
                messages.append(journal.take().copy())
    rms = float(np.sqrt(np.mean(np.square(errors)))) if errors else np.nan
    return rms, ctrl, commands


def test_place_in_base_is_the_derivative_of_the_relative_pose() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        base, target = np.eye(4), np.eye(4)
        base[:3, :3], target[:3, :3] = (
            spatial.so3_exp(rng.normal(size=3)),
            spatial.so3_exp(rng.normal(size=3)),
        )
        base[:3, 3], target[:3, 3] = rng.normal(size=3), rng.normal(size=3)
        tw_b, tw_t = rng.normal(size=6), rng.normal(size=6)
        pose_b, twist_b = np.eye(4), np.zeros(6)
        place_in_base(base, tw_b, target, tw_t, True, pose_b, twist_b)
        assert np.allclose(pose_b, np.linalg.inv(base) @ target)
        h = 1e-6  # finite difference of base(t)^-1 target(t)
        nb, nt = np.eye(4), np.eye(4)
        nb[:3, :3] = spatial.so3_exp(tw_b[3:] * h) @ base[:3, :3]
        nb[:3, 3] = base[:3, 3] + tw_b[:3] * h
        nt[:3, :3] = spatial.so3_exp(tw_t[3:] * h) @ target[:3, :3]
        nt[:3, 3] = target[:3, 3] + tw_t[:3] * h
        rel = np.linalg.inv(nb) @ nt
        assert np.allclose((rel[:3, 3] - pose_b[:3, 3]) / h, twist_b[:3], atol=1e-4)
        omega = spatial.so3_log(rel[:3, :3] @ pose_b[:3, :3].T) / h
        assert np.allclose(omega, twist_b[3:], atol=1e-4)
        back, back_tw = np.eye(4), np.zeros(6)
        world_of_base(base, tw_b, pose_b, twist_b, back, back_tw)
        assert np.allclose(back, target) and np.allclose(back_tw, tw_t)


def test_a_world_fixed_target_is_held_while_the_base_drives_a_circle(
    tree: KinematicTree,
) -> None:
    fed, ctrl, _ = _hold(tree, True)
    unfed, _, _ = _hold(tree, False)
    print(f"\nbase circle 0.3 m/s: fed forward {fed * 1e3:.3f} mm, without {unfed * 1e3:.3f} mm")
    assert fed < 1e-3 and fed < 0.25 * unfed
    assert ctrl.rejections == 0


def test_a_turning_base_is_fed_forward_too(tree: KinematicTree) -> None:
    fed, _, _ = _hold(tree, True, radius=0.2, speed=0.1, yaw_rate=0.3)
    unfed, _, _ = _hold(tree, False, radius=0.2, speed=0.1, yaw_rate=0.3)
    print(f"\nturning base: fed forward {fed * 1e3:.3f} mm, without {unfed * 1e3:.3f} mm")
    assert fed < 1e-3 and fed < 0.25 * unfed


def test_hostile_odometry_is_refused_and_the_last_good_one_kept(tree: KinematicTree) -> None:
    ctrl = _controller(tree)
    good = _odom_values(*_base(0.0, 0.25, 0.3, 0.0))
    ctrl.set_odometry("odom", "", good, 10.0, 10.0)
    bad = [
        ("map", "", good, "not the world frame"),
        ("odom", "base_footprint", good, "not the URDF's root link"),
        ("odom", "", np.r_[np.nan, good[1:]], "position"),
        ("odom", "", np.r_[good[:3], 0, 0, 0, 0, good[7:]], "zero norm"),
        ("odom", "", np.r_[good[:7], np.inf, good[8:]], "twist"),
        ("odom", "", np.r_[good[:3] + np.array([5.0, 0, 0]), good[3:]], "jumped"),
        ("odom", "", good[:12], "13 values"),
    ]
    for frame, child, values, why in bad:
        with pytest.raises(InputError, match=why):
            ctrl.set_odometry(frame, child, values, 10.01, 10.01)
    with pytest.raises(InputError, match="out of order"):
        ctrl.set_odometry("odom", "", good, 10.02, 9.9)
    assert np.allclose(ctrl._inputs.odom.pose[:3, 3], good[:3]) and ctrl._inputs.odom.jumps == 1
    with pytest.raises(InputError, match="world frame 'odom'"):
        ctrl.set_target("ee", "nowhere", [0.3, 0, 0.5], [0, 0, 0, 1], 10.0)
    fixed = _controller(tree, world_frame="")
    with pytest.raises(InputError, match="world_frame is not set"):
        fixed.set_odometry("odom", "", good, 10.0)
    with pytest.raises(ConfigError, match="is a link of the URDF"):
        _controller(tree, world_frame="panda_link0")


def test_odometry_too_late_to_place_the_base_by_its_twist_is_counted(tree: KinematicTree) -> None:
    """The base moves on by its twist to the joint state's instant, at most ``cap``; the
    placements of a base measured longer before are counted with how long (the node warns)."""
    ctrl = _controller(tree, input_timeout=0.1)
    ctrl.set_joint_state(tree.joint_names, HOME, 10.0, 10.0)
    ctrl.set_odometry("odom", "", _odom_values(np.eye(4), np.r_[0.3, 0, 0, 0, 0, 0]), 10.0, 10.0)
    odom = ctrl._inputs.odom
    assert np.allclose(odom.place(10.03, 0.05)[:3, 3], [0.009, 0.0, 0.0])  # 30 ms on: followed
    assert ctrl.odometry_counts == (0, 0, 0.0)
    assert np.allclose(odom.place(10.08, 0.05)[:3, 3], [0.015, 0.0, 0.0])  # 80 ms: 50 ms of it
    assert np.allclose(odom.place(9.9, 0.05)[:3, 3], [-0.015, 0.0, 0.0])  # ahead: not counted
    jumps, behind, by = ctrl.odometry_counts
    assert (jumps, behind) == (0, 1) and by == pytest.approx(0.08)
    ctrl.set_joint_state(tree.joint_names, HOME, 10.09, 10.09)
    ctrl.set_target("ee", "odom", [0.5, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0], 10.09, 10.09)
    ctrl.step(10.09)  # the tick places the world target from the base 90 ms before
    assert ctrl.odometry_counts[1] > 1 and ctrl.odometry_counts[2] == pytest.approx(0.09)


def test_a_jump_after_a_silence_is_refused_until_the_limits_allow_it(tree: KinematicTree) -> None:
    """Stale or not, a pose the base cannot have reached at ``max_target_speed`` is refused.

    The good odometry stops; 0.3 s later (stale: ``input_timeout`` 0.1 s) a pose 3 m away
    comes: refused, the last good pose kept (a world target is not moved by it). Once 3 m at
    the speed limit have had time (1.5 s at 2 m/s), the same pose is taken (a relocalisation).
    """
    ctrl = _controller(tree)
    assert ctrl.config.max_target_speed == 2.0 and ctrl.config.input_timeout == 0.1
    good = _odom_values(np.eye(4), np.zeros(6))
    ctrl.set_odometry("odom", "", good, 10.0, 10.0)
    far = np.r_[good[:3] + np.array([3.0, 0, 0]), good[3:]]
    for t in (10.3, 11.0, 11.45):
        with pytest.raises(InputError, match="jumped"):
            ctrl.set_odometry("odom", "", far, t, t)
    assert np.allclose(ctrl._inputs.odom.pose[:3, 3], good[:3]) and ctrl._inputs.odom.jumps == 3
    ctrl.set_odometry("odom", "", far, 11.6, 11.6)  # 3 m in 1.6 s: within 2 m/s
    assert np.allclose(ctrl._inputs.odom.pose[:3, 3], far[:3])


def test_a_world_target_needs_odometry_and_stale_odometry_stops(tree: KinematicTree) -> None:
    ctrl = _controller(tree)
    with pytest.raises(InputError, match="needs the base's odometry"):
        ctrl.set_target("ee", "odom", [0.3, 0, 0.5], [1, 0, 0, 0], 0.0)
    hand = tree.forward_kinematics(HOME, LINK)
    ctrl.set_joint_state(tree.joint_names, HOME, 0.0)
    ctrl.set_odometry("odom", "", _odom_values(np.eye(4), np.zeros(6)), 0.0)
    ctrl.set_target("ee", "odom", hand[:3, 3] + [0.05, 0, 0], [1, 0, 0, 0], 0.0)
    assert ctrl.step(0.004).status == "active"
    for k in range(2, 30):  # joint states keep coming; the odometry has stopped
        ctrl.set_joint_state(tree.joint_names, HOME, 0.004 * k)
        out = ctrl.step(0.004 * k)
        assert np.all(np.abs(out.qdot) <= ctrl.velocity_limits + 1e-12)
    assert out.status in ("stale", "stopping") and "odometry" in out.reason
    assert not out.qdot.any() or not out.publish


def test_a_journal_with_odometry_plays_back_bit_for_bit(tree: KinematicTree) -> None:
    journal = Journal()
    messages: list[np.ndarray] = []
    _, ctrl, _ = _hold(tree, True, journal=journal, ticks=400, messages=messages)
    history = ConfigHistory(0, ctrl.config, {}, {0.0: lambda: tree})
    pb = Playback(history)
    for data in messages:
        msg = decode(data)
        pb.feed(msg.sequence, msg.records)
    assert pb.log.problems == [] and pb.log.rejected == 0
    assert pb.log.state_mismatches == 0 and pb.log.snapshots >= 3
    assert len(pb.ticks) == len(messages) and all(t.published for t in pb.ticks[1:])
    assert all(t.diff == 0.0 for t in pb.ticks)


# ------------------------------------------------------------------ a commanded base
def _drive(
    tree: KinematicTree, kind: str, goal: np.ndarray, seconds: float = 12.0
) -> tuple[Controller, np.ndarray, list[np.ndarray]]:
    """An ideal robot: the base integrates its commanded body twist, the arm its velocities.

    Returns the controller, the hand's final world pose and every command.
    """
    ctrl = _controller(
        tree, base_kind=kind, joint_limits=_PANDA_ACCELERATIONS, max_cartesian_speed=0.5
    )
    nb = len(ctrl.base_joints)
    q, base = HOME.copy(), np.eye(4)
    cmd = np.zeros(ctrl.n_joints)
    commands = []
    dt = 0.004
    for k in range(int(seconds / dt)):
        t = 100.0 + k * dt
        body = np.zeros(6)  # the base's twist in its axes, from the command
        body[0] = cmd[0]
        if kind == "holonomic":
            body[1], body[5] = cmd[1], cmd[2]
        else:
            body[5] = cmd[1]
        ctrl.set_joint_state(tree.joint_names, q, t, t)
        ctrl.set_odometry("odom", "", _odom_values(base, body), t, t)
        if k == 0:
            ctrl.set_target("ee", "odom", goal[:3, 3], spatial.matrix_to_quat(goal), t, t)
        out = ctrl.step(t)
        assert out.status == "active", out.reason
        cmd = out.qdot.copy()
        commands.append(cmd)
        q = q + cmd[nb:] * dt
        step = np.eye(4)  # the base moves by its body twist over dt
        step[:3, :3] = spatial.so3_exp(body[3:] * dt)
        step[:3, 3] = body[:3] * dt
        base = base @ step
    return ctrl, base @ tree.forward_kinematics(q, LINK), commands


_PANDA_ACCELERATIONS = {
    f"panda_joint{i}": {"has_acceleration_limits": True, "max_acceleration": a}
    for i, a in enumerate((15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0), start=1)
}


@pytest.mark.parametrize("kind", ["holonomic", "diff_drive"])
def test_a_commanded_base_carries_the_hand_to_a_target_beyond_its_reach(
    tree: KinematicTree, kind: str
) -> None:
    home = tree.forward_kinematics(HOME, LINK)
    goal = home.copy()  # 1.5 m beyond the arm's reach (ahead; and aside for the holonomic)
    goal[:3, 3] += [tree.reach(LINK) + 1.5, 0.5 if kind == "holonomic" else 0.3, 0.0]
    ctrl, hand, commands = _drive(tree, kind, goal, 14.0)
    err = float(np.linalg.norm(hand[:3, 3] - goal[:3, 3]))
    print(
        f"\n{kind}: hand {err * 1e3:.3f} mm from a target {np.linalg.norm(goal[:3, 3]):.2f} m away"
    )
    assert err < 1e-3
    vmax = ctrl.velocity_limits
    linear = [1.0] * (len(ctrl.base_joints) - 1)  # base_max_acceleration's default
    acc = np.array([*linear, 2.0, 15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    dv = np.abs(np.diff(np.array(commands), axis=0)) / 0.004
    assert np.all(np.abs(np.array(commands)) <= vmax + 1e-12)
    assert np.all(dv <= acc * (1.0 + 1e-9) + 1e-9), dv.max(axis=0)
    assert abs(np.array(commands)[:, 0]).max() > 0.4  # the base did the travelling


def test_a_commanded_base_holds_targets_in_the_world(tree: KinematicTree) -> None:
    ctrl = _controller(tree, base_kind="holonomic")
    assert ctrl.joint_names[:3] == ["base_x", "base_y", "base_yaw"]
    ctrl.set_joint_state(tree.joint_names, HOME, 0.0)  # the base's joints need no state
    with pytest.raises(InputError, match="needs the base's odometry"):
        ctrl.set_target("ee", "", [0.3, 0, 0.5], [1, 0, 0, 0], 0.0)
    base = np.eye(4)
    base[:3, 3] = [2.0, 1.0, 0.0]  # a target in the robot's frame: placed in the world now
    ctrl.set_odometry("odom", "panda_link0", _odom_values(base, np.zeros(6)), 0.0)
    ctrl.set_target("ee", "", [0.3, 0, 0.5], [1, 0, 0, 0], 0.001)
    frame, pose = ctrl.given_target("ee") or ("", np.eye(4))
    assert frame == "odom" and np.allclose(pose[:3, 3], [2.3, 1.0, 0.5])
    with pytest.raises(InputError, match="jogging moves the effector"):
        ctrl.set_jog_twist("ee", "", np.zeros(6), 0.0)
    with pytest.raises(ConfigError, match="needs world_frame"):
        _controller(tree, base_kind="holonomic", world_frame="")
    with pytest.raises(ConfigError, match=r"unknown base kind .tracked"):
        _controller(tree, base_kind="tracked")


# ------------------------------------------------------------------ a floating base
TALOS_ARM = ["torso_1_joint", "torso_2_joint", *(f"arm_left_{i}_joint" for i in range(1, 8))]


def test_a_floating_base_robot_holds_a_hand_fixed_in_the_world_while_its_trunk_moves() -> None:
    """Talos (example-robot-data): the trunk's pose on odometry, torso and left arm solved."""
    from robots import erd_urdf_path

    tree = KinematicTree.from_urdf_file(erd_urdf_path("talos"))
    link = "arm_left_7_link"
    ctrl = Controller(
        tree,
        ControllerConfig(
            joints=TALOS_ARM,
            constraints=[ConstraintConfig("hand", "copy_pose", link=link)],
            control_rate=250.0,
            world_frame="odom",
        ),
    )
    arm = tree.select_joints(TALOS_ARM)
    q = np.array([0.0, 0.0, 0.4, 0.3, 0.0, -1.2, 0.0, 0.0, 0.0])  # an elbow bent forward
    qdot = np.zeros(len(TALOS_ARM))
    gait = SwayBase(speed=0.05, amplitude=0.04, frequency=0.5, height=1.0)
    trunk0, _ = gait.at(0.0)
    goal = trunk0 @ arm.forward_kinematics(q, link)  # held where it starts, in the world
    errors = []
    dt = 0.004
    for k in range(1500):  # 6 s
        t = 50.0 + k * dt
        q = q + qdot * dt
        trunk, body = gait.at(k * dt)
        ctrl.set_joint_state(TALOS_ARM, q, t, t)
        ctrl.set_odometry("odom", "base_link", _odom_values(trunk, body), t, t)
        if k == 0:
            ctrl.set_target("hand", "odom", goal[:3, 3], spatial.matrix_to_quat(goal), t, t)
        out = ctrl.step(t)
        assert out.status == "active", out.reason
        qdot = out.qdot
        if k * dt >= 1.0:
            hand = trunk @ arm.forward_kinematics(q, link)
            errors.append(float(np.linalg.norm(hand[:3, 3] - goal[:3, 3])))
    print(f"\nTalos, trunk swaying: the hand held to {max(errors) * 1e3:.3f} mm in the world")
    assert max(errors) < 1e-3


def test_a_urdf_naming_its_floating_base_joint_is_rooted_at_the_base() -> None:
    from itasc_ros.core.kinematics.urdf import parse_urdf

    xml = (REPO / "urdf" / "panda.urdf").read_text()
    free = xml.replace(
        '<link name="panda_link0"',
        '<link name="world"/><joint name="world_joint" type="floating"><parent link="world"/>'
        '<child link="panda_link0"/></joint><link name="panda_link0"',
        1,
    )
    spec = parse_urdf(free)
    assert spec.free_root_joint == "world_joint (floating)" and "world" not in spec.links
    tree = KinematicTree.from_urdf(free)
    assert tree.root_link == "panda_link0" and tree.n_joints == 7
