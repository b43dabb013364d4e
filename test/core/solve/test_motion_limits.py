"""Motion limits: acceleration, deceleration and jerk per joint; braking before position limits.

A property test drives the controller with Franka's published limits through random target
sequences, far target steps, disable/enable and stale periods, on a simulated robot that
follows the commands: every pair of consecutive published commands respects the acceleration
and jerk limits over the *nominal* period (late ticks, stale joint states, disable and failed
solves included: a stop ramps the command down), and no joint passes a position limit.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    Controller,
    ControllerConfig,
    KinematicTree,
)
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.solve.joint_limits import JointLimits, limits_from_parameters
from itasc_ros.core.solve.motion_limits import MotionLimiter
from itasc_ros.params import load_config

REPO = Path(__file__).resolve().parents[3]
HOME = home_of("panda")
ACC = [15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0]  # Franka's published limits [rad/s^2]
JERK = [7500.0, 3750.0, 5000.0, 6250.0, 7500.0, 10000.0, 10000.0]  # [rad/s^3]


def franka_limits(jerk: bool = True) -> dict[str, dict[str, Any]]:
    return {
        f"panda_joint{i + 1}": {
            "has_acceleration_limits": True,
            "max_acceleration": ACC[i],
            "has_jerk_limits": jerk,
            "max_jerk": JERK[i],
        }
        for i in range(7)
    }


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def make(tree: KinematicTree, rate: float = 250.0, jerk: bool = True) -> Controller:
    cons = [ConstraintConfig("ee", "copy_pose", link="panda_hand")]
    cfg = ControllerConfig(
        constraints=cons, control_rate=rate, joint_limits=franka_limits(jerk), input_timeout=0.1
    )
    return Controller(tree, cfg)


def check_pairs(cmds: list[np.ndarray], period: float, jerk: bool = True) -> tuple[float, float]:
    """Largest acceleration and jerk ratios over consecutive commands, at the nominal period.

    A ros2_control velocity controller applies a command at once, however late it comes: the
    change between two commands is bounded by the limits times the nominal period.
    """
    amax, jmax = np.array(ACC), np.array(JERK)
    acc_ratio = jerk_ratio = 0.0
    a_prev = np.zeros(7)
    dt = period
    for k in range(1, len(cmds)):
        a = (cmds[k] - cmds[k - 1]) / dt
        acc_ratio = max(acc_ratio, float(np.max(np.abs(a) / amax)))
        if jerk:
            jerk_ratio = max(jerk_ratio, float(np.max(np.abs(a - a_prev) / (jmax * dt))))
        a_prev = a
    return acc_ratio, jerk_ratio


class _FailingSolve:
    """A scene whose solve raises while ``failing`` (a solver failure), else the real one."""

    def __init__(self, ctrl: Controller) -> None:
        self.failing = False
        self._solve = ctrl.scene.solve

    def __call__(self, q: Any, dt: float) -> Any:
        if self.failing:
            raise ConfigError("injected solver failure")
        return self._solve(q, dt)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**31 - 1),
    rate=st.sampled_from([250.0, 1000.0]),
    jerk=st.booleans(),
)
# a reload on the tick after a ramp's last zero: the new controller started from rest, not
# from the acceleration that zero was sent with (1.32x the jerk limit)
@example(seed=3203861, rate=1000.0, jerk=True)
def test_every_command_pair_within_the_limits_and_no_limit_crossed(
    tree: KinematicTree, seed: int, rate: float, jerk: bool
) -> None:
    """Every path in combination: random targets and far steps, late and skipped ticks (up to
    4 periods), stale joint states, solver failures, ticks that raise (the node's ramp),
    enable / disable, live changes of the velocity scale, model reloads and a final shutdown
    ramp: every pair of commands the robot is given within the limits at the nominal period,
    no position limit crossed."""
    rng = np.random.default_rng(seed)
    ctrl = make(tree, rate, jerk)
    q = HOME.copy()
    lower, upper = tree.lower, tree.upper
    now, period = 100.0, 1.0 / rate
    v = np.zeros(7)  # what the robot does: the last published command
    ctrl.step(now)  # the loop ticks before any input arrives (waiting: no command)
    cmds = [v.copy()]
    goal = tree.forward_kinematics(q, "panda_hand")
    stale_until = fail_until = raise_until = -1.0
    failing = _FailingSolve(ctrl)
    ctrl.scene.solve = failing  # type: ignore[method-assign]
    for k in range(int(1.6 * rate)):
        dt = period * (rng.uniform(0.7, 1.3) if rng.random() < 0.9 else rng.uniform(1.0, 4.0))
        now += dt
        q = q + v * dt
        assert np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9), (k, q)
        event = rng.random()
        if event < 0.01:  # a far step: up to 0.6 m and a large rotation
            goal[:3, 3] = goal[:3, 3] + rng.uniform(-0.6, 0.6, 3)
            goal[:3, :3] = spatial.so3_exp(rng.normal(0.0, 1.0, 3)) @ goal[:3, :3]
        elif event < 0.02:
            ctrl.set_enabled(not ctrl.enabled)
        elif event < 0.025:
            stale_until = now + 0.2
        elif event < 0.03:
            fail_until = now + rng.uniform(0.0, 0.1)
        elif event < 0.035:
            raise_until = now + rng.uniform(0.0, 0.1)
        elif event < 0.04:  # a live change that moves the velocity limits
            ctrl.update_parameters(velocity_scale=float(rng.uniform(0.2, 1.0)))
            failing = _FailingSolve(ctrl)
            ctrl.scene.solve = failing  # type: ignore[method-assign]
        elif event < 0.045:  # a model reload (same joints): it goes on from the last command
            new = make(tree, rate, jerk)
            new.set_enabled(ctrl.enabled)
            new.take_motion(ctrl)
            ctrl = new
            failing = _FailingSolve(ctrl)
            ctrl.scene.solve = failing  # type: ignore[method-assign]
        else:  # a moving target
            goal[:3, 3] += rng.normal(0.0, 0.002, 3)
        failing.failing = now < fail_until
        if now > stale_until:
            ctrl.set_joint_state(ctrl.joint_names, q, now, now)
        try:
            ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), now, now)
        except Exception:  # beyond the reach: refused, the last target stays
            pass
        # a tick that raised: the node sends the next step of the ramp instead
        out = ctrl.ramp_down() if now < raise_until else ctrl.step(now)
        if out.publish:
            v = out.qdot.copy()
            assert np.all(np.isfinite(v))
            assert np.all(np.abs(v) <= ctrl.hard_velocity_limits + 1e-12)
        cmds.append(v.copy())  # what the robot is commanded this tick: ros2_control holds it
    ctrl.set_enabled(False)  # shutdown: the controlled stop, then silence
    for _ in range(int(2.0 * rate)):
        now += period
        q = q + v * period
        ctrl.set_joint_state(ctrl.joint_names, q, now, now)
        out = ctrl.step(now)
        if out.publish:
            v = out.qdot.copy()
        cmds.append(v.copy())
    assert not np.any(v)  # at rest
    acc_ratio, jerk_ratio = check_pairs(cmds, period, jerk)
    assert acc_ratio <= 1.0 + 1e-9
    assert jerk_ratio <= 1.0 + 1e-9


def drive(
    ctrl: Controller, q: np.ndarray, now: float, goal: np.ndarray, ticks: int
) -> tuple[np.ndarray, float, np.ndarray, list[float]]:
    """``ticks`` ticks at 250 Hz toward ``goal`` on a robot that follows the commands."""
    v, speeds = np.zeros(7), []
    for _ in range(ticks):
        now += 0.004
        q = q + v * 0.004
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), now)
        v = ctrl.step(now).qdot
        speeds.append(float(np.abs(v).max()))
    return q, now, v, speeds


def test_a_step_is_followed_smoothly_and_still_reached(tree: KinematicTree) -> None:
    ctrl = make(tree, 250.0)
    goal = tree.forward_kinematics(HOME, "panda_hand")
    goal[:3, 3] += [0.0, 0.1, 0.0]
    q, _now, _v, speeds = drive(ctrl, HOME.copy(), 0.0, goal, 500)
    assert speeds[0] <= max(ACC) * 0.004 + 1e-12  # the first tick: one tick of acceleration
    err = np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - goal[:3, 3])
    assert err < 1e-3


def test_disable_while_moving_decelerates_then_one_zero(tree: KinematicTree) -> None:
    ctrl = make(tree, 250.0)
    goal = tree.forward_kinematics(HOME, "panda_hand")
    goal[:3, 3] += [0.0, 0.3, 0.0]
    q, now, v, _ = drive(ctrl, HOME.copy(), 0.0, goal, 40)  # moving
    assert np.abs(v).max() > 0.3
    ctrl.set_enabled(False)
    statuses, published = [], []
    for _ in range(100):
        now += 0.004
        q = q + v * 0.004
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        out = ctrl.step(now)
        statuses.append(str(out.status))
        published.append(out.publish)
        if out.publish:
            assert np.all(np.abs(out.qdot - v) <= np.array(ACC) * 0.004 + 1e-12)
            v = out.qdot
    stopping = statuses.count("stopping")
    assert stopping >= 3 and statuses[:stopping] == ["stopping"] * stopping
    assert statuses[stopping] == "disabled" and published[stopping] and not np.any(v)
    assert not any(published[stopping + 1 :])  # then silence


def test_stale_joint_states_ramp_down_open_loop_within_the_limits(tree: KinematicTree) -> None:
    ctrl = make(tree, 250.0)
    q, now = HOME.copy(), 0.0
    goal = tree.forward_kinematics(q, "panda_hand")
    goal[:3, 3] += [0.0, 0.3, 0.0]
    v = np.zeros(7)
    for _ in range(40):
        now += 0.004
        q = q + v * 0.004
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), now)
        v = ctrl.step(now).qdot
    assert np.abs(v).max() > 0.3
    # no joint state any more: the command ramps to zero, each joint at its deceleration
    # limit over the nominal period, then one zero and silence
    now += 0.5
    cmds, statuses = [v.copy()], []
    for _ in range(200):
        now += 0.004
        out = ctrl.step(now)
        statuses.append(str(out.status))
        if out.publish:
            cmds.append(out.qdot.copy())
    assert set(statuses) == {"stale"}
    acc = np.abs(np.diff(cmds, axis=0)) / 0.004
    assert np.all(acc <= np.array(ACC) + 1e-9)
    assert not np.any(cmds[-1]) and np.all(np.any(c) for c in cmds[:-1])
    slowest = max(np.abs(v) / np.array(ACC))  # each joint brakes at its own limit
    assert len(cmds) - 1 <= math.ceil(slowest / 0.004) + 2


def test_braking_before_a_position_limit() -> None:
    n = 1
    lim = MotionLimiter(
        np.array([2.0]), [JointLimits(2.0, 10.0, 10.0)], np.array([-1.0]), np.array([1.0])
    )
    q, dt, out = np.array([0.0]), 0.001, np.zeros(n)
    speeds = []
    for _ in range(3000):  # ask for full speed toward the upper limit all the time
        lim.step(np.array([2.0]), q, dt, 2 * dt, out)
        q = q + out * dt
        speeds.append(out[0])
        assert q[0] <= 1.0
    assert max(speeds) == pytest.approx(2.0)
    assert q[0] > 0.95 and abs(speeds[-1]) < 1e-3  # arrived at the limit, at rest
    acc = np.diff([0.0, *speeds]) / dt
    assert np.max(np.abs(acc)) <= 10.0 + 1e-9


def test_joint_limits_in_the_moveit_convention() -> None:
    params = {
        "joint_limits.panda_joint1.has_velocity_limits": True,
        "joint_limits.panda_joint1.max_velocity": 2.0,
        "joint_limits.panda_joint1.has_acceleration_limits": True,
        "joint_limits.panda_joint1.max_acceleration": 15.0,
        "joint_limits.panda_joint1.has_deceleration_limits": True,
        "joint_limits.panda_joint1.max_deceleration": -20.0,  # MoveIt writes it negative
        "joint_limits.panda_joint1.has_jerk_limits": False,
        "joint_limits.panda_joint1.max_jerk": 100.0,
        "joint_limits.panda_joint1.has_position_limits": True,
        "joint_limits.panda_joint1.min_position": -2.8,
        "joint_limits.panda_joint1.max_position": 2.8,
    }
    lim = limits_from_parameters(params)["panda_joint1"]
    assert lim == JointLimits(2.0, 15.0, 20.0, math.inf)
    with pytest.raises(ConfigError, match="unknown fields \\['max_acc'\\]"):
        JointLimits.from_fields("j", {"max_acc": 1.0})
    with pytest.raises(ConfigError, match="positive finite"):
        JointLimits.from_fields("j", {"has_jerk_limits": True, "max_jerk": 0.0})
    with pytest.raises(ConfigError, match="must be a number"):
        JointLimits.from_fields("j", {"has_jerk_limits": True})


def test_the_bundled_configs_carry_the_published_limits(tree: KinematicTree) -> None:
    cfg = load_config(REPO / "config" / "panda.yaml")
    limits = cfg.limits()
    assert [limits[f"panda_joint{i + 1}"].max_acceleration for i in range(7)] == ACC
    assert [limits[f"panda_joint{i + 1}"].max_jerk for i in range(7)] == JERK
    ur5 = load_config(REPO / "config" / "ur5.yaml").limits()
    assert len(ur5) == 6 and all(math.isfinite(v.max_acceleration) for v in ur5.values())


def test_limits_of_joints_the_urdf_lacks_are_ignored_and_named(tree: KinematicTree) -> None:
    cfg = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_hand")],
        joint_limits={"elbow": {"has_acceleration_limits": True, "max_acceleration": 1.0}},
    )
    ctrl = Controller(tree, cfg)  # as MoveIt and ros2_control: another robot's entries
    assert ctrl.ignored_joint_limits == ["elbow"]  # the node warns with these names
