"""Controller: the control logic between inputs and the scene (pure core, no ROS)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    Controller,
    ControllerConfig,
    InputError,
    ItascError,
    KinematicTree,
)
from itasc_ros.core.constraints import REGISTRY
from itasc_ros.core.control.config import LIVE_KEYS, apply_updates
from itasc_ros.core.kinematics import spatial
from itasc_ros.params import load_config

REPO = Path(__file__).resolve().parents[3]
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def make(tree: KinematicTree, **kw: object) -> Controller:
    cons = kw.pop("constraints", [ConstraintConfig("ee", "copy_pose", link="panda_hand")])
    return Controller(tree, ControllerConfig(constraints=cons, **kw))  # type: ignore[arg-type]


def pose_goal(tree: KinematicTree, q: np.ndarray, dp: list[float], dw: list[float]) -> np.ndarray:
    t = tree.forward_kinematics(q, "panda_hand")
    t[:3, 3] += dp
    t[:3, :3] = spatial.so3_exp(np.array(dw)) @ t[:3, :3]
    return t


def set_goal(c: Controller, goal: np.ndarray, now: float, name: str = "ee") -> None:
    c.set_target(name, "", goal[:3, 3], spatial.matrix_to_quat(goal), now)


def run_closed_loop(
    c: Controller, q: np.ndarray, t0: float, seconds: float
) -> tuple[np.ndarray, float, list[np.ndarray]]:
    """Integrate q += qdot dt with the controller's period; returns q, end time, commands."""
    dt = c.period
    now = t0
    cmds = []
    for _ in range(round(seconds / dt)):
        c.set_joint_state(c.joint_names, q, now)
        out = c.step(now)
        assert out.status == "active", out.reason
        cmds.append(out.qdot)
        q = q + out.qdot * dt
        now += dt
    return q, now, cmds


def errors(tree: KinematicTree, q: np.ndarray, goal: np.ndarray) -> tuple[float, float]:
    t = tree.forward_kinematics(q, "panda_hand")
    return (
        float(np.linalg.norm(t[:3, 3] - goal[:3, 3])),
        float(np.linalg.norm(spatial.so3_log(goal[:3, :3] @ t[:3, :3].T))),
    )


# ------------------------------------------------------------------------------ configuration
def test_config_unknown_key_names_valid_keys() -> None:
    with pytest.raises(ConfigError, match=r"valid keys are: .*control_rate"):
        ControllerConfig.from_dict({"control_rat": 100.0})
    with pytest.raises(ConfigError, match=r"valid settings are: .*position_axes"):
        ControllerConfig.from_dict(
            {"constraints": [{"name": "a", "type": "copy_pose", "link": "x", "gian": 1.0}]}
        )


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ConfigError, match=r"types are: .*copy_pose, distance, .*joint_value"):
        ConstraintConfig("a", "copy_position", link="l").validate()
    with pytest.raises(ConfigError, match="solvers are: dls, sdls"):
        ControllerConfig(solver="svd").validate()
    with pytest.raises(ConfigError, match="control_rate must be <= 2000"):
        ControllerConfig(control_rate=5000.0).validate()
    with pytest.raises(ConfigError, match="gain must be >= 0"):
        ConstraintConfig("a", "copy_pose", link="l", gain=-1.0).validate()
    with pytest.raises(ConfigError, match="values must be 2 finite numbers for joints"):
        ConstraintConfig("p", "joint_value", joints=["j1", "j2"], values=[0.0]).validate()


def test_config_round_trip_and_params_files(tree: KinematicTree) -> None:
    cfg = ControllerConfig(
        joints=["panda_joint1"],
        control_rate=500.0,
        constraints=[
            ConstraintConfig("ee", "copy_pose", link="panda_hand", rotation_axes=""),
            ConstraintConfig(
                "posture", "joint_value", joints=["panda_joint1"], values=[0.5], weight=0.01
            ),
        ],
    ).validate()
    assert ControllerConfig.from_dict(cfg.to_dict()) == cfg
    for robot, link in (("panda", "panda_hand"), ("ur5", "tool0")):
        loaded = load_config(REPO / "config" / f"{robot}.yaml")
        # the Panda is redundant: its posture resolves the spare motion, under the hand
        names = ["ee", "posture"] if robot == "panda" else ["ee"]
        assert [c.name for c in loaded.constraints] == names
        assert loaded.constraints[0].type == "copy_pose"
        assert loaded.constraints[0].link == link
        robot_tree = KinematicTree.from_urdf_file(REPO / "urdf" / f"{robot}.urdf")
        assert loaded.joints == robot_tree.joint_names
        Controller(robot_tree, loaded)  # fits the bundled URDF


def test_config_that_does_not_fit_the_tree(tree: KinematicTree) -> None:
    with pytest.raises(ConfigError, match="joints are: panda_joint1"):
        make(tree, joints=["panda_joint1", "finger"])
    with pytest.raises(ConfigError, match=r"links are: .*panda_hand"):
        make(tree, constraints=[ConstraintConfig("ee", "copy_pose", link="hand")])


# ------------------------------------------------------------------------------ joint states
def test_joint_state_mapped_by_name_with_extra_and_reordered_joints(tree: KinematicTree) -> None:
    c = make(tree, joints=list(reversed(tree.joint_names)))
    assert c.joint_names == list(reversed(tree.joint_names))
    names = ["finger_a", *tree.joint_names[::2], "finger_b", *tree.joint_names[1::2]]
    by_name = dict(zip(tree.joint_names, HOME, strict=True)) | {"finger_a": 9.0, "finger_b": 8.0}
    c.set_joint_state(names, [by_name[n] for n in names], 0.0)
    np.testing.assert_array_equal(c.q, HOME[::-1])
    # The same solve as with the tree's own order, permuted.
    set_goal(c, pose_goal(tree, HOME, [0.05, 0.0, 0.0], [0.0, 0.0, 0.0]), 0.0)
    ref = make(tree)
    ref.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(ref, pose_goal(tree, HOME, [0.05, 0.0, 0.0], [0.0, 0.0, 0.0]), 0.0)
    np.testing.assert_allclose(c.step(0.0).qdot, ref.step(0.0).qdot[::-1], atol=1e-12)


def test_a_names_list_reused_and_reordered_in_place_is_mapped_again(tree: KinematicTree) -> None:
    """The name map is kept while the names are equal, compared by value every message.

    A caller that refills one list (as a message class reused does) gets its new order read, and
    tuples and integer or float32 positions are taken as lists and float64 are.
    """
    c = make(tree)
    names = list(tree.joint_names)
    c.set_joint_state(names, HOME.copy(), 0.0)
    np.testing.assert_array_equal(c.q, HOME)
    names.reverse()  # the same list object, another order
    c.set_joint_state(names, HOME[::-1].copy(), 0.01)
    np.testing.assert_array_equal(c.q, HOME)
    c.set_joint_state(tuple(tree.joint_names), HOME.astype(np.float32), 0.02)
    np.testing.assert_allclose(c.q, HOME, rtol=1e-7)
    c.set_joint_state(tree.joint_names, [0, 0, 0, -2, 0, 2, 1], 0.03)
    np.testing.assert_array_equal(c.q, [0.0, 0.0, 0.0, -2.0, 0.0, 2.0, 1.0])
    with pytest.raises(InputError, match="7 names but 6 positions"):
        c.set_joint_state(tree.joint_names, HOME[:6], 0.04)
    with pytest.raises(InputError, match="must be numbers"):
        c.set_joint_state(tree.joint_names, ["a"] * 7, 0.05)
    np.testing.assert_array_equal(c.q, [0.0, 0.0, 0.0, -2.0, 0.0, 2.0, 1.0])  # kept


def test_subset_of_joints_holds_the_others_at_measured_positions(tree: KinematicTree) -> None:
    c = make(tree, joints=tree.joint_names[:4])
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.02, 0.0, 0.0], [0.0, 0.0, 0.0]), 0.0)
    out = c.step(0.0)
    assert out.qdot.shape == (4,)
    # The effector pose uses the measured positions of joints 5-7.
    eff, _ = c.poses("ee")
    np.testing.assert_allclose(eff, tree.forward_kinematics(HOME, "panda_hand"), atol=1e-12)


@pytest.mark.parametrize(
    ("names", "positions", "match"),
    [
        (["panda_joint1"], [0.1], "lacks joints .*panda_joint2"),
        (None, "nan", "non-finite positions for \\['panda_joint3'\\]"),
        (None, "inf", "non-finite positions"),
        (None, "short", "7 names but 6 positions"),
        ("dup", None, "more than once"),
    ],
)
def test_bad_joint_state_rejected_and_last_good_state_kept(
    tree: KinematicTree, names: object, positions: object, match: str
) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    n = list(tree.joint_names)
    p = list(HOME + 0.1)
    if names == "dup":
        n = [*n, "panda_joint2"]
        p = [*p, 0.0]
    elif names is not None:
        n = names  # type: ignore[assignment]
        p = positions  # type: ignore[assignment]
    elif positions == "nan":
        p[2] = math.nan
    elif positions == "inf":
        p[0] = math.inf
    elif positions == "short":
        p = p[:6]
    with pytest.raises(InputError, match=match):
        c.set_joint_state(n, p, 0.05)
    assert isinstance(InputError("x"), ItascError)
    np.testing.assert_array_equal(c.q, HOME)
    assert c.joint_state_stamp == 0.0
    assert match.split()[0] in c.last_rejection or c.rejections == 1


def test_out_of_order_joint_state_rejected(tree: KinematicTree) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0, header_stamp=10.0)
    with pytest.raises(InputError, match="out of order"):
        c.set_joint_state(tree.joint_names, HOME + 0.1, 0.01, header_stamp=9.5)
    np.testing.assert_array_equal(c.q, HOME)


# ------------------------------------------------------------------------------ targets
def test_target_in_a_link_frame_is_transformed_to_the_root(tree: KinematicTree) -> None:
    c = make(tree)
    with pytest.raises(InputError, match="needs a joint state"):
        c.set_target("ee", "panda_link3", [0, 0, 0], [0, 0, 0, 1], 0.0)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    p, quat = np.array([0.1, -0.2, 0.3]), np.array([0.1, 0.2, 0.3, 0.9])
    c.set_target("ee", "panda_link3", p, quat * 3.0, 0.0)  # not normalised: normalised
    expected = tree.forward_kinematics(HOME, "panda_link3") @ spatial.pose_from_xyz_quat(p, quat)
    _, target = c.poses("ee")
    assert target is not None
    np.testing.assert_allclose(target, expected, atol=1e-12)
    # The root link and '' are the same frame.
    c.set_target("ee", "panda_link0", p, quat, 0.01)
    _, t2 = c.poses("ee")
    c.set_target("ee", "", p, quat, 0.02)
    _, t3 = c.poses("ee")
    assert t2 is not None and t3 is not None
    np.testing.assert_allclose(t2, t3)


@pytest.mark.parametrize(
    ("frame", "position", "quat", "match"),
    [
        ("tool", [0, 0, 0], [0, 0, 0, 1], "not a URDF link.*panda_hand"),
        ("", [0, math.nan, 0], [0, 0, 0, 1], "position must be 3 finite"),
        ("", [0, 0, 0], [0, 0, math.inf, 1], "4 finite values"),
        ("", [0, 0, 0], [0, 0, 0, 0], "zero norm"),
    ],
)
def test_bad_target_rejected_and_target_unchanged(
    tree: KinematicTree, frame: str, position: list[float], quat: list[float], match: str
) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    goal = pose_goal(tree, HOME, [0.05, 0, 0], [0, 0, 0])
    set_goal(c, goal, 0.0)
    with pytest.raises(InputError, match=match):
        c.set_target("ee", frame, position, quat, 0.01)
    _, target = c.poses("ee")
    np.testing.assert_allclose(target, goal, atol=1e-12)  # type: ignore[arg-type]
    out = c.step(0.01)
    assert out.status == "active" and np.all(np.isfinite(out.qdot))


def test_unknown_constraint_names_the_ones_with_targets(tree: KinematicTree) -> None:
    c = make(
        tree,
        constraints=[
            ConstraintConfig("ee", "copy_pose", link="panda_hand"),
            ConstraintConfig("posture", "joint_value", joints=["panda_joint1"], values=[0.0]),
        ],
    )
    with pytest.raises(InputError, match="constraints with a target are: ee"):
        c.set_target("posture", "", [0, 0, 0], [0, 0, 0, 1], 0.0)
    with pytest.raises(InputError, match="constraints with a target are: ee"):
        c.set_target("nope", "", [0, 0, 0], [0, 0, 0, 1], 0.0)


def test_twist_estimate_converges_to_the_target_velocity(tree: KinematicTree) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    start = tree.forward_kinematics(HOME, "panda_hand")
    v = np.array([0.05, -0.02, 0.01])
    w = np.array([0.0, 0.0, 0.3])
    dt = 0.01  # 100 Hz target stream
    for k in range(100):  # 1 s: the filter (tau 0.05 s) has long converged
        t = k * dt
        pose = start.copy()
        pose[:3, 3] += v * t
        pose[:3, :3] = spatial.so3_exp(w * t) @ start[:3, :3]
        c.set_target("ee", "", pose[:3, 3], spatial.matrix_to_quat(pose), t)
    np.testing.assert_allclose(c.target_twist_estimate("ee"), np.r_[v, w], atol=1e-6)
    # While fresh it is fed forward; once the stream stops it is dropped.
    c.set_joint_state(tree.joint_names, HOME, 0.99)
    c.step(1.05)
    np.testing.assert_allclose(c.constraint("ee").target_twist, np.r_[v, w], atol=1e-6)
    c.set_joint_state(tree.joint_names, HOME, 1.1)
    c.step(1.1)
    np.testing.assert_array_equal(c.constraint("ee").target_twist, np.zeros(6))


def test_target_jumps_are_not_a_velocity(tree: KinematicTree) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.0, 0.0, 0.0], [0, 0, 0]), 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.1, 0.0, 0.0], [0, 0, 0]), 0.5)  # a new goal, later
    np.testing.assert_array_equal(c.target_twist_estimate("ee"), np.zeros(6))
    # Within a stream, the first difference only starts the filter: a gentle kick.
    set_goal(c, pose_goal(tree, HOME, [0.11, 0.0, 0.0], [0, 0, 0]), 0.51)
    est = c.target_twist_estimate("ee")
    assert 0.0 < est[0] < 0.5 * (0.01 / 0.01)


def test_a_jump_resets_the_twist_estimate(tree: KinematicTree) -> None:
    """RViz "Snap to effector" right after a drag: the snap is a jump, not a fast motion."""
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    for k in range(20):  # a drag along x at 0.5 m/s, 100 Hz
        set_goal(c, pose_goal(tree, HOME, [0.005 * k, 0.0, 0.0], [0, 0, 0]), 0.01 * k)
    assert c.target_twist_estimate("ee")[0] > 0.4
    snap = pose_goal(tree, HOME, [0.0, 0.0, 0.0], [0, 0, 0])
    c.set_target("ee", "", snap[:3, 3], spatial.matrix_to_quat(snap), 0.2, jump=True)
    np.testing.assert_array_equal(c.target_twist_estimate("ee"), np.zeros(6))
    assert c.target_jumps("ee") == 0  # a flagged jump is not an outlier
    # Without the flag the same pose 10 ms later reads as -9.5 m/s: faster than
    # max_target_speed (2 m/s), so a jump too, counted.
    c2 = make(tree)
    c2.set_joint_state(tree.joint_names, HOME, 0.0)
    for k in range(20):
        set_goal(c2, pose_goal(tree, HOME, [0.005 * k, 0.0, 0.0], [0, 0, 0]), 0.01 * k)
    c2.set_target("ee", "", snap[:3, 3], spatial.matrix_to_quat(snap), 0.2)
    np.testing.assert_array_equal(c2.target_twist_estimate("ee"), np.zeros(6))
    assert c2.target_jumps("ee") == 1
    # With a speed limit above 9.5 m/s it is a (filtered) velocity.
    c3 = make(tree, max_target_speed=20.0)
    c3.set_joint_state(tree.joint_names, HOME, 0.0)
    for k in range(20):
        set_goal(c3, pose_goal(tree, HOME, [0.005 * k, 0.0, 0.0], [0, 0, 0]), 0.01 * k)
    c3.set_target("ee", "", snap[:3, 3], spatial.matrix_to_quat(snap), 0.2)
    assert c3.target_twist_estimate("ee")[0] < -1.0
    assert c3.target_jumps("ee") == 0


def test_explicit_twist_wins_while_recent(tree: KinematicTree) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0, 0, 0], [0, 0, 0]), 0.0)
    c.set_target_twist("ee", "panda_link0", [0.1, 0, 0, 0, 0, 0.2], 0.0)
    c.step(0.05)
    np.testing.assert_allclose(c.constraint("ee").target_twist, [0.1, 0, 0, 0, 0, 0.2])
    c.set_joint_state(tree.joint_names, HOME, 0.2)
    c.step(0.2)  # explicit twist expired, no pose stream: zero
    np.testing.assert_array_equal(c.constraint("ee").target_twist, np.zeros(6))


# ------------------------------------------------------------------------------ step rules
def test_no_command_before_inputs(tree: KinematicTree) -> None:
    c = make(tree)
    out = c.step(0.0)
    assert (out.status, out.publish) == ("waiting", False)
    assert "joint state" in out.reason
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    out = c.step(0.0)
    assert (out.status, out.publish) == ("waiting", False)
    assert "target" in out.reason


def test_stale_joint_states_publish_one_zero_then_silence(tree: KinematicTree) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.1, 0, 0], [0, 0, 0]), 0.0)
    out = c.step(0.004)
    assert out.status == "active" and out.publish and np.abs(out.qdot).max() > 0
    outs = [c.step(0.1 + 0.004 * k) for k in range(1, 50)]  # no more joint states
    assert [o.status for o in outs] == ["stale"] * len(outs)
    assert [o.publish for o in outs] == [True] + [False] * (len(outs) - 1)
    np.testing.assert_array_equal(outs[0].qdot, np.zeros(7))
    assert "old" in outs[0].reason
    c.set_joint_state(tree.joint_names, HOME, 0.5)  # fresh input: active again
    out = c.step(0.5)
    assert out.status == "active" and out.publish


def test_disabled_publishes_zeros_once(tree: KinematicTree) -> None:
    c = make(tree)
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.1, 0, 0], [0, 0, 0]), 0.0)
    assert c.step(0.0).publish
    c.set_enabled(False)
    outs = []
    for k in range(1, 10):
        c.set_joint_state(tree.joint_names, HOME, 0.004 * k)
        outs.append(c.step(0.004 * k))
    assert {o.status for o in outs} == {"disabled"}
    assert [o.publish for o in outs] == [True] + [False] * 8
    np.testing.assert_array_equal(outs[0].qdot, np.zeros(7))
    c.set_enabled(True)
    out = c.step(0.04)
    assert out.status == "active" and out.publish and np.abs(out.qdot).max() > 0


def test_closed_loop_reaches_the_target(tree: KinematicTree) -> None:
    c = make(tree)
    goal = pose_goal(tree, HOME, [0.12, -0.1, 0.08], [0.3, -0.2, 0.4])
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, goal, 0.0)
    q, _, cmds = run_closed_loop(c, HOME.copy(), 0.0, 2.0)
    pos_err, rot_err = errors(tree, q, goal)
    assert pos_err < 1e-3 and rot_err < 0.01
    vmax = tree.velocity_limits
    assert max(float(np.max(np.abs(qd) / vmax)) for qd in cmds) <= 1.0 + 1e-12


def test_output_never_exceeds_velocity_limits(tree: KinematicTree) -> None:
    c = make(
        tree,
        velocity_scale=0.5,
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_hand", gain=200.0)],
    )
    goal = pose_goal(tree, HOME, [0.4, 0.3, -0.2], [1.0, 0.5, 0.0])  # far: large q' wanted
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, goal, 0.0)
    _, _, cmds = run_closed_loop(c, HOME.copy(), 0.0, 0.5)
    limits = 0.5 * tree.velocity_limits
    ratios = [float(np.max(np.abs(qd) / limits)) for qd in cmds]
    assert max(ratios) <= 1.0 + 1e-12
    assert max(ratios) > 0.99  # the limit was actually reached (so the test bites)


def test_live_gain_change_and_validation(tree: KinematicTree) -> None:
    c = make(tree, max_cartesian_speed=100.0)  # the step taken at once: the gain shows
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.01, 0, 0], [0, 0, 0]), 0.0)
    fast = np.abs(c.step(0.0).qdot).max()
    c.update_parameters(**{"constraints.ee.gain": 5.0})
    slow = np.abs(c.step(0.0).qdot).max()
    assert slow == pytest.approx(fast / 4.0, rel=1e-6)  # 20 -> 5: four times slower
    with pytest.raises(ConfigError, match="gain must be >= 0"):
        c.update_parameters(damping_max=0.2, constraints={"ee": {"gain": -1.0}})
    assert c.config.damping_max == 0.1  # all or nothing
    with pytest.raises(ConfigError, match=r"cannot change live.*live settings are"):
        c.update_parameters(joints=["panda_joint1"])
    with pytest.raises(ConfigError, match="cannot change live: 'link'"):
        c.update_parameters(**{"constraints.ee.link": "panda_link7"})
    # The target survived the rebuild.
    assert c.step(0.0).status == "active"


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_fault_when_solve_fails_never_nan(tree: KinematicTree) -> None:
    c = make(tree, max_cartesian_speed=100.0)  # the target itself, not a reference toward it
    c.set_joint_state(tree.joint_names, HOME, 0.0)
    set_goal(c, pose_goal(tree, HOME, [0.05, 0, 0], [0, 0, 0]), 0.0)
    assert c.step(0.0).publish
    # A joint-space solve that cannot be finite: poison the scene's target directly.
    c.constraint("ee").target.pose[0, 3] = math.inf  # type: ignore[attr-defined]
    outs = [c.step(0.001 * k) for k in range(1, 4)]
    assert [o.status for o in outs] == ["fault"] * 3
    assert [o.publish for o in outs] == [True, False, False]
    for o in outs:
        np.testing.assert_array_equal(o.qdot, np.zeros(7))


LIVE_VALUE_POOL: list[object] = [
    0.0,
    -0.0,
    0.5,
    1.0,
    -1.0,
    7.0,
    1e3,
    1e6,
    1e300,
    math.nan,
    math.inf,
    -math.inf,
    True,
    "",
    "x",
    "xyz",
    "xz",
    "qqq",
    "xyzx",
    "xxz",
    "target",
    "effector",
    "root",
    "nowhere",
    "dls",
    "sdls",
    "svd",
    [],
    [0.1],
    [math.nan],
    [1e300],
    None,
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    updates=st.dictionaries(
        st.sampled_from(
            sorted(LIVE_KEYS)
            + [
                f"constraints.{n}.{k}"
                for n in ("ee", "post")
                for k in sorted({f.name for t in REGISTRY.values() for f in t.FIELDS})
            ]
        ),
        st.sampled_from(LIVE_VALUE_POOL),
        min_size=1,
        max_size=4,
    )
)
def test_a_live_change_is_applied_whole_or_refused_with_config_error(
    tree: KinematicTree, updates: dict[str, object]
) -> None:
    """One validation path: a change that validates also builds; any other is a ConfigError.

    ``apply_updates`` (what the node checks) accepts a change exactly when the controller can
    be rebuilt with it, and the controller raises nothing but :class:`ConfigError` and stays
    unchanged when it refuses.
    """
    cons = [
        ConstraintConfig("ee", "copy_pose", link="panda_hand"),
        ConstraintConfig("post", "joint_value", joints=["panda_joint1"], values=[0.0]),
    ]
    c = make(tree, constraints=cons)
    before = c.config.to_dict()
    try:
        cfg = apply_updates(c.config, **updates)
    except ConfigError:
        with pytest.raises(ConfigError):
            c.update_parameters(**updates)
        assert c.config.to_dict() == before
        return
    Controller(tree, cfg)  # what a start-up with these values builds
    c.update_parameters(**updates)
    assert c.config.to_dict() == cfg.to_dict()


# ------------------------------------------------------------------------------ snapshot
def feed(c: Controller, tree: KinematicTree, k: int, now: float, goal: np.ndarray) -> None:
    """Tick ``k``'s inputs: joint states, a moving target, then explicit twists, then a jog."""
    q = HOME + 0.01 * math.sin(0.05 * k)
    c.set_joint_state(tree.joint_names, q, now, now - 0.001)
    if k < 40:
        g = goal.copy()
        g[:3, 3] += [0.002 * k, 0.0, 0.001 * k]
        c.set_target("ee", "", g[:3, 3], spatial.matrix_to_quat(g), now, now - 0.002)
    elif k < 70:
        c.set_target_twist("ee", "panda_link3", [0.02, 0.0, 0.01, 0.0, 0.0, 0.1], now, now)
    elif k < 110:
        c.set_jog_twist("ee", "panda_hand", [0.03, 0.01, 0.0, 0.0, 0.1, 0.0], now, now)


@pytest.mark.parametrize("cartesian_speed", [0.0, 0.2])  # 0: no step reference
def test_a_controller_restored_from_a_snapshot_ticks_bit_for_bit_like_the_original(
    tree: KinematicTree, cartesian_speed: float
) -> None:
    """Joint states (some joints held), a target stream, its twists, a jog and the motion limits
    all carry over: from the snapshot on, both controllers command exactly the same."""
    limits = load_config(REPO / "config" / "panda.yaml").joint_limits
    kw = {
        "joints": tree.joint_names[:5],
        "joint_limits": limits,
        "max_cartesian_speed": cartesian_speed,
    }
    a, b = make(tree, **kw), make(tree, **kw)
    goal = pose_goal(tree, HOME, [0.05, 0.0, 0.02], [0.0, 0.0, 0.2])
    now = 10.0
    for k in range(130):
        now += a.period
        feed(a, tree, k, now, goal)
        out_a = a.step(now)
        if k > 20:
            feed(b, tree, k, now, goal)
            out_b = b.step(now)
            assert out_a.status == out_b.status == "active"
            assert out_a.qdot.tobytes() == out_b.qdot.tobytes(), k
            assert a.fed_forward_twist("ee").tobytes() == b.fed_forward_twist("ee").tobytes()
        if k in (20, 50, 90):  # during the stream, the twists, the jog
            b.set_enabled(False)  # whatever b's state was, the snapshot's replaces it
            b.step(now)
            b.restore_state(np.concatenate([[0.0, 0.0, 0.0], a.state_values()]))
            assert b.state_values().tobytes() == a.state_values().tobytes()
            assert b.commanding == a.commanding and b.q.tobytes() == a.q.tobytes()


def test_the_joint_order_does_not_change_an_undamped_command_beside_a_singularity(
    tree: KinematicTree,
) -> None:
    """Fuzzing found it: 1e-10 rad from the Panda's wrist singularity, joint 6 far past its limit
    and damping_max 0, the smallest singular value (2.4e-11 of the largest) was inverted with a
    gain of 4e10; the rounding then decided which joint saturated first, and listing the joints
    in another order changed the command by 1 %. Such a direction is not inverted (RCOND)."""
    names = list(tree.joint_names)
    config = load_config(REPO / "config" / "panda.yaml")
    config.joint_limits, config.max_cartesian_speed = {}, 0.0  # iTaSC as it is, no ramps
    q = np.array([0.0, -1.0975, 0.0, -2.356, 1e-10, 6364181932901366.0, 0.785])
    hand = tree.forward_kinematics(HOME, "panda_hand")[:3, 3] + 0.05
    outs = []
    for order in (names, [*names[1:5], names[0], *names[5:]], names[::-1]):
        c = Controller(tree, ControllerConfig.from_dict({**config.to_dict(), "joints": order}))
        c.update_parameters(damping_max=0.0)
        c.set_joint_state(names, HOME, 1000.0, 1000.0)
        c.set_target("ee", "", hand, np.array([1.0, 0.0, 0.0, 0.0]), 1000.0, 1000.0)
        c.set_joint_state(names, q, 1000.0, 1000.0)
        out = c.step(1000.0)
        assert out.status.value == "active" and np.all(np.isfinite(out.qdot))
        outs.append(dict(zip(order, out.qdot, strict=True)))
    for other in outs[1:]:
        np.testing.assert_allclose(
            [other[n] for n in names], [outs[0][n] for n in names], rtol=1e-9, atol=1e-9
        )


def test_a_posture_that_resolves_redundancy_starts_no_motion_of_its_own() -> None:
    """The shipped Panda config's posture (``resolves_redundancy``): no command before the hand
    has a target (the arm stays where it is), then the posture acts under the hand; a
    posture that does not resolve redundancy (a task of its own) moves the arm at once."""
    tree = KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")
    q = np.array([0.3, -0.785, 0.2, -2.356, 0.0, 1.571, 0.785])
    for resolves in (True, False):
        cfg = load_config(REPO / "config" / "panda.yaml")
        assert [c.name for c in cfg.constraints] == ["ee", "posture"]
        cfg.constraints[1].settings["resolves_redundancy"] = resolves
        ctrl = Controller(tree, cfg)
        for k in range(5):
            ctrl.set_joint_state(ctrl.joint_names, q, 1.0 + 0.004 * k)
            out = ctrl.step(1.0 + 0.004 * k)
        if resolves:
            assert out.status == "waiting" and not np.any(out.qdot), out.reason
            hand = tree.forward_kinematics(q, "panda_hand")
            quat = spatial.matrix_to_quat(hand)
            for k in range(5, 250):  # the hand held where it is: the posture swings the elbow
                ctrl.set_joint_state(ctrl.joint_names, q, 1.0 + 0.004 * k)
                ctrl.set_target("ee", "", hand[:3, 3], quat, 1.0 + 0.004 * k)
                out = ctrl.step(1.0 + 0.004 * k)
                q = q + out.qdot * 0.004
            assert out.status == "active" and not out.shortfall
            moved = tree.forward_kinematics(q, "panda_hand")
            assert np.linalg.norm(moved[:3, 3] - hand[:3, 3]) < 1e-4  # the hand stays
            assert abs(q[0] - 0.3) > 0.01 or abs(q[2] - 0.2) > 0.01  # the elbow swung
        else:
            assert out.status == "active" and np.any(out.qdot)


def _near_singular_configurations(tree: KinematicTree, eps: float) -> list[np.ndarray]:
    """Panda configurations whose hand Jacobian has a damped direction (sigma_min < eps)."""
    rng = np.random.default_rng(7)
    stretched = np.array([0.0988, 0.653, -0.0155, -0.871, 0.0095, 1.524, 0.372])  # in a node
    found = []
    for _ in range(400):
        q = stretched + rng.normal(0.0, 0.15, 7)
        if np.linalg.svd(tree.jacobian(q, "panda_hand"), compute_uv=False)[-1] < eps:
            found.append(q)
    return found


def test_a_posture_never_moves_the_hand_near_a_singularity(tree: KinematicTree) -> None:
    """The shipped Panda config's posture resolves redundancy: near a singularity of the hand
    (a direction damped) it still never changes the hand's velocity. Seen in a node: with the
    arm stretched (sigma_min 0.058 < epsilon 0.06), the hand stopped 3 mm off a snapped target
    for good, "followed at 0 %": the posture, faded to asking for no motion, held the hand
    still along the direction the damped projector shared with it."""
    names = list(tree.joint_names)
    config = load_config(REPO / "config" / "panda.yaml")
    config.joint_limits, config.max_cartesian_speed = {}, 0.0  # iTaSC as it is, no ramps
    alone = load_config(REPO / "config" / "panda.yaml")
    alone.joint_limits, alone.max_cartesian_speed = {}, 0.0
    alone.constraints = alone.constraints[:1]  # the hand only
    eps = config.damping_epsilon
    qs = _near_singular_configurations(tree, eps)
    assert len(qs) >= 5, len(qs)
    rng = np.random.default_rng(11)
    for q in qs[:12]:
        hand = tree.forward_kinematics(q, "panda_hand")
        offset = rng.normal(0.0, 1.0, 3)
        target = hand[:3, 3] + 0.003 * offset / np.linalg.norm(offset)  # 3 mm away
        quat = spatial.matrix_to_quat(hand)
        velocities = []
        for cfg in (config, alone):
            c = Controller(tree, cfg)
            c.set_joint_state(names, q, 1.0, 1.0)
            c.set_target("ee", "", target, quat, 1.0, 1.0)
            out = c.step(1.0)
            assert out.status == "active", out.reason
            velocities.append(tree.jacobian(q, "panda_hand") @ out.qdot)
        np.testing.assert_allclose(velocities[0], velocities[1], rtol=1e-7, atol=1e-10)
        assert np.dot(velocities[0][:3], target - hand[:3, 3]) > 0.0  # toward the target
        limited = []  # with the shipped motion limits: five ticks from rest, the box binding
        for posture in (True, False):
            cfg = load_config(REPO / "config" / "panda.yaml")
            cfg.constraints = cfg.constraints if posture else cfg.constraints[:1]
            c = Controller(tree, cfg)
            for k in range(5):
                t = 1.0 + 0.004 * k
                c.set_joint_state(names, q, t, t)
                c.set_target("ee", "", target, quat, t, t)
                out = c.step(t)
            limited.append(tree.jacobian(q, "panda_hand") @ out.qdot)
        np.testing.assert_allclose(limited[0], limited[1], rtol=1e-7, atol=1e-10)


def test_the_hand_reaches_a_target_millimetres_away_beside_a_singularity(
    tree: KinematicTree,
) -> None:
    """The shipped Panda config as it is (motion limits, posture), a robot that follows its
    commands: from stretched configurations (a damped direction), the hand reaches targets
    3 mm away in any direction within 2 s, and no task is reported short at the end."""
    names = list(tree.joint_names)
    config = load_config(REPO / "config" / "panda.yaml")
    qs = _near_singular_configurations(tree, config.damping_epsilon)
    rng = np.random.default_rng(5)
    dt = 1.0 / config.control_rate
    for q0 in qs[:6]:
        for _ in range(3):
            q = q0.copy()
            hand = tree.forward_kinematics(q, "panda_hand")
            offset = rng.normal(0.0, 1.0, 3)
            target = hand[:3, 3] + 0.003 * offset / np.linalg.norm(offset)
            c = Controller(tree, config)
            t = 1.0
            c.set_joint_state(names, q, t, t)
            c.set_target("ee", "", target, spatial.matrix_to_quat(hand), t, t, jump=True)
            for _k in range(int(2.0 / dt)):
                t += dt
                c.set_joint_state(names, q, t, t)
                out = c.step(t)
                q = q + out.qdot * dt
            error = np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - target)
            assert error < 5e-5 and not out.shortfall, (error, out.shortfall)
