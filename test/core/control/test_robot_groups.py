"""Several robots: a stale robot stops with the robots linked to it, the others go on.

Two Pandas composed into one tree (``a_*``, ``b_*``, b's base 1 m from a's, facing it), each
with config/panda.yaml's motion limits, driven as ideal robots (each integrates its command).
Robot b's joint states stop while both move: with a pose task each (nothing links them) b
ramps down within its limits and a goes on to its target; with b's hand holding a's (a loop
closure links them) both ramp down; with every robot stale the whole controller stops. The
journal of the run replays exactly. Pure core, no ROS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control.journal import Journal, decode
from itasc_ros.core.control.playback import ConfigHistory, Playback
from itasc_ros.core.control.robot_groups import RobotGroups, robot_of
from itasc_ros.core.errors import InputError
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.robots import Mounted, compose_robots

REPO = Path(__file__).resolve().parents[3]
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
FACING = spatial.pose_from_xyz_quat(np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0, 0.0]))
RATE = 250.0
STOP_AT = 100  # the tick from which b's joint states no longer arrive


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    xml = (REPO / "urdf" / "panda.urdf").read_text()
    return compose_robots([Mounted("a", xml), Mounted("b", xml, FACING)])


def limits() -> dict[str, dict[str, object]]:
    data = yaml.safe_load((REPO / "config" / "panda.yaml").read_text())
    own = data["/**"]["ros__parameters"]["joint_limits"]
    return {f"{r}_{j}": dict(v) for r in ("a", "b") for j, v in own.items()}


def config(tree: KinematicTree, linked: bool) -> ControllerConfig:
    q0 = np.r_[HOME, HOME]
    if linked:  # b's hand holds a's at their present relative pose
        rel = np.linalg.inv(tree.forward_kinematics(q0, "a_panda_hand")) @ (
            tree.forward_kinematics(q0, "b_panda_hand")
        )
        offset = [*rel[:3, 3], *spatial.matrix_to_quat(rel)]
        second = ConstraintConfig(
            "closure", "copy_pose", link="b_panda_hand", target_link="a_panda_hand",
            target_offset=offset, priority=1,
        )  # fmt: skip
    else:
        second = ConstraintConfig("hand_b", "copy_pose", link="b_panda_hand")
    return ControllerConfig(
        robots=["a", "b"],
        constraints=[ConstraintConfig("hand_a", "copy_pose", link="a_panda_hand"), second],
        control_rate=RATE,
        input_timeout=0.1,
        joint_limits=limits(),
    )


def run(
    tree: KinematicTree,
    cfg: ControllerConfig,
    ticks: int = 400,
    stop_all: bool = False,
    changes: dict[int, dict[str, Any]] | None = None,
) -> tuple[list[tuple[str, str, np.ndarray, tuple[str, ...]]], list[np.ndarray], float]:
    """Drive both robots after moving targets; b's states stop at :data:`STOP_AT`.

    Returns:
        (status, reason, command, robots held) of each tick, the journal's messages, a's
        last error [m].
    """
    ctrl = Controller(tree, cfg)
    journal = Journal(capacity=256)
    ctrl.attach_journal(journal)
    messages: list[np.ndarray] = []
    q = np.r_[HOME, HOME]
    dt, now = 1.0 / RATE, 50.0
    t_b = now
    goals = {
        name: tree.forward_kinematics(q, link)
        for name, link in (("hand_a", "a_panda_hand"), ("hand_b", "b_panda_hand"))
        if any(c.name == name for c in cfg.constraints)
    }
    aim = {name: goal[:3, 3] for name, goal in goals.items()}
    out: list[tuple[str, str, np.ndarray, tuple[str, ...]]] = []
    cmd = np.zeros(14)
    for k in range(ticks):
        now += dt
        q = q + cmd * dt
        if k < STOP_AT or not stop_all:
            t_a = now
            if k < STOP_AT:
                t_b = now
            ctrl.set_joint_state(ctrl.joint_names, q, max(t_a, t_b), now - 0.001, [t_a, t_b])
        for name, goal in goals.items():  # moving on a circle until after b went stale
            if k % 5 == 0:
                t = min(k, STOP_AT + 40) * dt
                p = goal[:3, 3] + [0.0, 0.08 * np.sin(2.0 * t), 0.08 * (np.cos(2.0 * t) - 1.0)]
                ctrl.set_target(name, "", p, spatial.matrix_to_quat(goal), now)
                aim[name] = p
        if changes and k in changes:  # a live change between two ticks
            ctrl.update_parameters(**changes[k])
        step = ctrl.step(now)
        if step.publish:
            cmd = step.qdot
        out.append((step.status.value, step.reason, cmd.copy(), step.held))
        messages.append(journal.take().copy())
    a_hand = tree.forward_kinematics(q, "a_panda_hand")
    return out, messages, float(np.linalg.norm(a_hand[:3, 3] - aim["hand_a"]))


def assert_ramp_within_limits(cmds: np.ndarray, cfg: ControllerConfig) -> None:
    """Every change of the commands (k, n) within the joints' acceleration limits."""
    lim = cfg.limits()
    names = [f"{r}_panda_joint{i}" for r in ("a", "b") for i in range(1, 8)]
    amax = np.array([lim[j].max_acceleration for j in names])
    dv = np.abs(np.diff(cmds, axis=0)) * RATE
    assert np.all(dv <= amax * (1 + 1e-9)), (dv / amax).max()


def test_robot_of_takes_the_longest_prefix() -> None:
    robots = ["arm", "arm_left", "b"]
    assert robot_of("arm_left_joint1", robots) == 1
    assert robot_of("arm_joint1", robots) == 0
    assert robot_of("b_x", robots) == 2
    assert robot_of("base_x", robots) == -1


def test_robot_receptions_are_checked(tree: KinematicTree) -> None:
    ctrl = Controller(tree, config(tree, linked=False))
    q = np.r_[HOME, HOME]
    for bad in ([1.0], [1.0, np.nan], [1.0, 2.5]):  # not one per robot, NaN, after received
        with pytest.raises(InputError, match="robot"):
            ctrl.set_joint_state(ctrl.joint_names, q, 2.0, None, bad)
    assert not ctrl.has_joint_state
    groups = RobotGroups(["a", "b"], ctrl.joint_names)
    assert groups.size == 2 and groups.look(0.0, 0.1)  # nothing received yet: stale
    groups.accept(np.array([1.0, 0.5]))
    assert groups.look(1.05, 0.1) and groups.stale.tolist() == [False, True]


def stopped_run(
    tree: KinematicTree, linked: bool, changes: dict[int, dict[str, Any]] | None = None
) -> tuple[list[Any], np.ndarray, int, float]:
    """:func:`run` with or without the link; the ticks, the commands (k, 14) checked within the
    acceleration limits, the first tick that judges b stale, a's last error [m]."""
    cfg = config(tree, linked)
    ticks, _, a_error = run(tree, cfg, changes=changes)
    cmds = np.array([c for _, _, c, _ in ticks])
    assert_ramp_within_limits(cmds, cfg)
    return ticks, cmds, STOP_AT + int(0.1 * RATE) + 1, a_error


def test_an_unlinked_robot_goes_on_while_the_stale_one_stops(tree: KinematicTree) -> None:
    ticks, cmds, stale_from, a_error = stopped_run(tree, linked=False)
    assert all(s == "active" for s, _, _, _ in ticks)  # a is still commanded
    assert "robot b" in ticks[stale_from + 1][1] and "the others go on" in ticks[stale_from + 1][1]
    assert "a (linked" not in ticks[stale_from + 1][1] and ticks[stale_from + 1][3] == ("b",)
    assert ticks[stale_from - 2][3] == ()
    assert np.abs(cmds[stale_from - 2, 7:]).max() > 0.01  # b was moving when it went stale
    assert not np.any(cmds[-50:, 7:])  # b ramped down to zero and stays there
    assert np.abs(cmds[stale_from + 5 : stale_from + 40, :7]).max() > 0.01  # a went on
    assert a_error < 1e-3  # and reached its target


def test_a_linked_robot_stops_with_the_stale_one(tree: KinematicTree) -> None:
    ticks, cmds, stale_from, _ = stopped_run(tree, linked=True)
    assert np.abs(cmds[stale_from - 2]).max() > 0.01  # both were moving
    assert "a (linked by constraints)" in ticks[stale_from + 1][1]
    assert ticks[stale_from + 1][3] == ("a", "b")
    assert not np.any(cmds[-50:])  # both ramped down to zero


def test_every_robot_stale_stops_the_controller(tree: KinematicTree) -> None:
    cfg = config(tree, linked=False)
    ticks, _, _ = run(tree, cfg, ticks=200, stop_all=True)
    cmds = np.array([c for _, _, c, _ in ticks])
    assert_ramp_within_limits(cmds, cfg)
    assert {s for s, _, _, _ in ticks[STOP_AT + 30 :]} <= {"stale"}
    assert not np.any(cmds[-20:])


@pytest.mark.parametrize("linked", [False, True])
def test_the_journal_replays_the_stop_exactly(tree: KinematicTree, linked: bool) -> None:
    cfg = config(tree, linked)
    ticks, messages, _ = run(tree, cfg, ticks=250)
    pb = Playback(ConfigHistory(0, config(tree, linked), {}, {0.0: lambda: tree}))
    for data in messages:
        msg = decode(data)
        pb.feed(msg.sequence, msg.records)
    assert pb.log.problems == [] and pb.log.rejected == 0
    assert len(pb.ticks) == len(ticks)
    for t in pb.ticks:
        assert (t.status, t.published) == (t.replayed_status, t.replayed_published)
        assert t.diff == 0.0, (t.t, t.recorded, t.recomputed)


def test_live_changes_while_a_robot_is_held(tree: KinematicTree) -> None:
    """A new scene (another solver) and a gain set in place while b is held: b's ramp goes on
    within its limits to zero, a still reaches its target."""
    stale_from = STOP_AT + int(0.1 * RATE) + 1
    changes = {
        stale_from + 3: {"solver": "sdls"},
        stale_from + 6: {"constraints.hand_a.gain": 30.0},
    }
    ticks, cmds, stale_from, a_error = stopped_run(tree, linked=False, changes=changes)
    assert all(t[3] == ("b",) for t in ticks[stale_from + 1 : stale_from + 12])  # held across
    assert np.abs(cmds[stale_from - 2, 7:]).max() > 0.01 and not np.any(cmds[-50:, 7:])
    assert a_error < 1e-3
