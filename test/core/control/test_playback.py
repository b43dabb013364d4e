"""Journal + playback: identical inputs through the same controller give identical commands.

A controller drives a simulated robot with an uneven input stream (stamped and unstamped joint
states, target bursts between ticks, explicit twists, a link-frame target, a stale period,
disable/enable, live parameter changes); its journal, attached mid-run, is played back into a
new controller and every tick must agree bit for bit. Pure core, no ROS.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control.config import apply_updates
from itasc_ros.core.control.journal import Code, Journal, decode
from itasc_ros.core.control.playback import ConfigHistory, Playback, PlaybackError
from itasc_ros.core.errors import InputError
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of

REPO = Path(__file__).resolve().parents[3]
HOME = home_of("panda")
CHANGES = (
    {"constraints.ee.gain": 35.0},
    {"solver": "sdls", "damping_max": 0.2},
    {"max_target_speed": 0.5, "constraints.ee.position_axes": "xy"},
)


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def base_config() -> ControllerConfig:
    return ControllerConfig(
        constraints=[
            ConstraintConfig("ee", "copy_pose", link="panda_hand"),
            ConstraintConfig("posture", "joint_value", joints=["panda_joint4"], values=[-2.0]),
        ],
        control_rate=250.0,
        input_timeout=0.1,
    )


def drive(
    tree: KinematicTree, seed: int, attach_at: int, ticks: int = 260
) -> tuple[list[np.ndarray], dict[int, dict[str, Any]], int]:
    """Run the controller on a robot; returns the journal messages, changes, base revision."""
    rng = np.random.default_rng(seed)
    ctrl = Controller(tree, base_config())
    journal = Journal(capacity=64)  # small: the buffer must grow
    messages: list[np.ndarray] = []
    changes: dict[int, dict[str, Any]] = {}
    revision = base_revision = 0
    q = HOME.copy()
    goal = tree.forward_kinematics(q, "panda_hand")
    dt = ctrl.period
    now = 1000.0
    cmd = np.zeros(7)
    for k in range(ticks):
        if k == attach_at:
            base_revision = journal.revision = revision
            ctrl.attach_journal(journal)
        now += dt * rng.uniform(0.7, 1.3)
        stale = 120 <= k < 150
        q = q + cmd * dt
        if not stale and rng.random() < 0.9:
            stamp = None if rng.random() < 0.3 else now - rng.uniform(0.0, 0.003)
            try:
                ctrl.set_joint_state(ctrl.joint_names, q, now, stamp)
            except InputError:
                pass  # a stamp out of order: rejected, not journaled
        for _ in range(int(rng.integers(0, 3))):  # 0, 1 or 2 poses per tick
            goal[:3, 3] += rng.normal(0.0, 0.002, 3)
            goal[:3, :3] = spatial.so3_exp(rng.normal(0.0, 0.01, 3)) @ goal[:3, :3]
            quat = spatial.matrix_to_quat(goal)
            stamp = now - rng.uniform(0.0, 0.004) if rng.random() < 0.7 else None
            try:
                if rng.random() < 0.15:  # in the frame of a moving link
                    link = tree.forward_kinematics(ctrl.q, "panda_link3")
                    local = np.linalg.solve(link, goal)
                    quat = spatial.matrix_to_quat(local)
                    ctrl.set_target("ee", "panda_link3", local[:3, 3], quat, now, stamp)
                else:
                    ctrl.set_target("ee", "", goal[:3, 3], quat, now, stamp, rng.random() < 0.05)
            except InputError:
                pass  # e.g. a stamp out of order: rejected, not journaled
        if rng.random() < 0.1:
            ctrl.set_target_twist("ee", "", rng.normal(0.0, 0.05, 6), now, None)
        if k in (60, 62):
            ctrl.set_enabled(k == 62)
        if k in (90, 170, 200):
            update = CHANGES[(90, 170, 200).index(k)]
            ctrl.update_parameters(**update)
            revision += 1
            changes[revision] = update
            if ctrl.journal is not None:
                ctrl.journal.parameters(revision)
        out = ctrl.step(now)
        if out.publish:
            cmd = out.qdot
        if ctrl.journal is not None:
            if k % 50 == 0:
                ctrl.write_snapshot(ctrl.journal)
            messages.append(ctrl.journal.take().copy())
    return messages, changes, base_revision


def play(
    tree: KinematicTree, messages: list[np.ndarray], changes: dict[int, dict[str, Any]], base: int
) -> Playback:
    cfg = base_config()
    for r in range(1, base + 1):
        cfg = apply_updates(cfg, **changes[r])
    history = ConfigHistory(base, cfg, changes, {0.0: lambda: tree})
    pb = Playback(history)
    for data in messages:
        msg = decode(data)
        pb.feed(msg.sequence, msg.records)
    return pb


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**31 - 1), attach_at=st.sampled_from([0, 5, 100]))
def test_playback_reproduces_every_tick_exactly(
    tree: KinematicTree, seed: int, attach_at: int
) -> None:
    messages, changes, base = drive(tree, seed, attach_at)
    pb = play(tree, messages, changes, base)
    assert pb.log.problems == []
    assert pb.log.state_mismatches == 0 and pb.log.snapshots >= 4
    assert len(pb.ticks) == len(messages)
    published = [t for t in pb.ticks if t.published]
    assert len(published) > 50
    expected = {"active", "stale"} | ({"disabled"} if attach_at < 60 else set())
    assert {t.status for t in pb.ticks} >= expected
    for t in pb.ticks:
        assert (t.status, t.published) == (t.replayed_status, t.replayed_published)
        assert t.diff == 0.0, (t.t, t.recorded, t.recomputed)


def test_a_lost_message_resynchronises_at_the_next_snapshot(tree: KinematicTree) -> None:
    messages, changes, base = drive(tree, 7, 0)
    del messages[30:33]
    pb = play(tree, messages, changes, base)
    assert pb.log.lost_messages == 3
    assert pb.log.skipped_records > 0
    assert all(t.diff == 0.0 for t in pb.ticks)
    assert len(pb.ticks) < len(messages)  # the ticks until the next snapshot are not compared


def test_a_wrong_parameter_history_is_found(tree: KinematicTree) -> None:
    messages, changes, base = drive(tree, 3, 0)
    wrong = dict(changes)
    wrong[1] = {"constraints.ee.gain": 36.0}
    pb = play(tree, messages, wrong, base)
    assert max(t.diff for t in pb.ticks) > 1e-6
    # The inputs agree; the commands do not, and the snapshots keep the last command (a step's
    # reference starts with the effector's twist under it), so they differ too.
    assert pb.log.rejected == 0 and pb.log.state_mismatches > 0


def test_a_missing_revision_is_named(tree: KinematicTree) -> None:
    messages, changes, base = drive(tree, 3, 0)
    with pytest.raises(PlaybackError, match="revision 2 were not recorded"):
        play(tree, messages, {1: changes[1]}, base)


def test_what_if_playback_moves_an_ideal_robot(tree: KinematicTree) -> None:
    messages, changes, base = drive(tree, 11, 0)
    cfg = base_config()
    history = ConfigHistory(base, cfg, changes, {0.0: lambda: tree}, {"constraints.ee.gain": 5.0})
    pb = Playback(history, what_if=True)
    for data in messages:
        msg = decode(data)
        pb.feed(msg.sequence, msg.records)
    assert pb.log.rejected == 0
    diffs = [t.diff for t in pb.ticks]
    assert max(diffs) > 1e-3  # another gain, other commands
    errs = np.array([t.position_error for t in pb.ticks if t.status == "active"])
    assert np.all(np.isfinite(errs)) and errs.max() < 0.2


def test_records_carry_what_the_tick_consumed(tree: KinematicTree) -> None:
    messages, _changes, _base = drive(tree, 5, 0, ticks=40)
    codes = [r.code for m in messages for r in decode(m).records]
    assert codes[0] == Code.SNAPSHOT
    assert codes.count(Code.TICK) == 40
    assert {Code.JOINT_STATE, Code.TARGET}.issubset(codes)
    assert [decode(m).sequence for m in messages] == list(range(len(messages)))
    assert math.isfinite(float(messages[-1][2]))


def test_malformed_journal_messages_are_named() -> None:
    from itasc_ros.core.control.journal import FORMAT, JournalError

    with pytest.raises(JournalError, match="not an itasc journal"):
        decode(np.array([FORMAT + 1.0, 0.0, 1.0]))
    with pytest.raises(JournalError, match="runs past the end"):
        decode(np.array([FORMAT, 0.0, float(Code.TICK), 50.0, 1.0]))
    with pytest.raises(JournalError, match="cut off"):
        decode(np.array([FORMAT, 0.0, float(Code.TICK)]))
    assert decode(np.array([FORMAT, 3.0])).records == []


def test_a_snapshot_of_another_robot_is_refused(tree: KinematicTree) -> None:
    from itasc_ros.core.errors import ConfigError

    messages, _changes, _base = drive(tree, 1, 0, ticks=5)
    snapshot = decode(messages[0]).records[0].payload.copy()
    snapshot[3] = 6.0  # six joints
    ctrl = Controller(tree, base_config())
    with pytest.raises(ConfigError, match="does not fit this controller"):
        ctrl.restore_state(snapshot)
