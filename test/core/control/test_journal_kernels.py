"""The compiled journal writers against the records' layout written with numpy (pure core).

Every record a controller writes (TICK, JOINT_STATE, TARGET, TWIST, JOG) is compared, value for
value, with the same record assembled field by field from the controller's state as the layout
of :mod:`itasc_ros.core.control.journal` describes it: with no target, one or two, a straight-line
reference active or not, every status, stamped and unstamped inputs.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control._journal_kernels import write_target, write_twist
from itasc_ros.core.control.journal import TICK_TARGET_SIZE, Code, Journal, decode, stamp_value
from itasc_ros.core.control.status import STATUS_CODE, Status, StepOutput
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of

REPO = Path(__file__).resolve().parents[3]
HOME = home_of("panda")
POSTURE = ConstraintConfig("posture", "joint_value", joints=["panda_joint4"], values=[-2.0])
HAND = ConstraintConfig("ee", "copy_pose", link="panda_hand")
ELBOW = ConstraintConfig("elbow", "copy_pose", link="panda_link4")


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def expected_tick(ctrl: Controller, revision: int, now: float, out: StepOutput) -> np.ndarray:
    """The TICK payload of ``out``, field by field (the journal's layout)."""
    q, qdot = ctrl._inputs.joints.q, out.qdot
    active = out.status is Status.ACTIVE or out.result is not None
    js = ctrl._inputs.joints
    head = [now, STATUS_CODE[out.status], out.publish, revision, js.stamp, js.header, len(q)]
    parts = [np.array(head, dtype=float), q]
    for st in ctrl._inputs.targets.values():
        used = st.ref.pose if st.ref.active else st.pose
        parts.append(np.array([st.source if active else 0, st.stamp, st.header], dtype=float))
        parts += [used[:3].ravel(), st.applied]
    parts.append(qdot)
    rec = np.concatenate(parts)
    k = len(ctrl._inputs.targets)
    assert rec.shape == (7 + 2 * len(q) + k * TICK_TARGET_SIZE,)
    return rec


def last_record(journal: Journal) -> tuple[int, np.ndarray]:
    msg = decode(journal.take().copy())
    rec = msg.records[-1]
    return rec.code, rec.payload


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


@pytest.mark.parametrize("constraints", [[POSTURE], [HAND], [HAND, POSTURE, ELBOW]])
def test_every_record_as_the_layout_says(
    tree: KinematicTree, constraints: list[ConstraintConfig]
) -> None:
    cfg = ControllerConfig(
        constraints=constraints,
        control_rate=250.0,
        input_timeout=0.1,
        max_cartesian_speed=0.3,
    )
    ctrl = Controller(tree, cfg)
    journal = Journal(capacity=64)  # grows on the way
    ctrl.attach_journal(journal)
    journal.take()
    targets = [c.name for c in constraints if c.takes_target]
    goals = {c.name: tree.forward_kinematics(HOME, c.link) for c in constraints if c.takes_target}
    rng = np.random.default_rng(5)
    now, q, statuses, referenced = 50.0, HOME.copy(), set(), False
    for k in range(120):
        now += 0.004
        if not 60 <= k < 90:  # a stale period
            stamp = None if k % 3 == 0 else now - 0.001
            ctrl.set_joint_state(ctrl.joint_names, q, now, stamp)
            code, rec = last_record(journal)
            assert code == Code.JOINT_STATE
            assert same(rec, np.concatenate([[now, stamp_value(stamp)], q]))
        for j, name in enumerate(targets):
            if k % (j + 2):
                continue
            goal = goals[name]
            goal[:3, 3] += [0.002, 0.0, 0.001] if k != 40 else [0.1, 0.0, 0.0]  # a step
            quat = spatial.matrix_to_quat(goal)
            stamp = None if k % 5 == 0 else now - 0.002
            ctrl.set_target(name, "", goal[:3, 3], quat, now, stamp, jump=k == 100)
            code, rec = last_record(journal)
            assert code == Code.TARGET
            head = [j, now, stamp_value(stamp), -1, k == 100]
            assert same(rec, np.concatenate([head, goal[:3, 3], quat]))
            if k % 4 == 0:
                twist = rng.normal(0.0, 0.05, 6)
                ctrl.set_target_twist(name, "panda_link3", twist, now, now - 0.003)
                code, rec = last_record(journal)
                link = tree.link_index("panda_link3")
                assert code == Code.TWIST
                assert same(rec, np.concatenate([[j, now, now - 0.003, link], twist]))
            if k == 20:
                ctrl.set_jog_twist(name, "", np.full(6, 0.01), now)
                code, rec = last_record(journal)
                assert code == Code.JOG
                assert same(rec, np.concatenate([[j, now, math.nan, -1], np.full(6, 0.01)]))
        if k == 30:
            ctrl.set_enabled(False)
        if k == 33:
            ctrl.set_enabled(True)
        journal.revision = k // 50
        journal.take()
        out = ctrl.step(now)
        statuses.add(out.status)
        referenced |= any(st.ref.active for st in ctrl._inputs.targets.values())
        code, rec = last_record(journal)
        assert code == Code.TICK
        assert same(rec, expected_tick(ctrl, k // 50, now, out)), k
        if out.publish:
            q = q + out.qdot * 0.004
    assert {"active", "stale", "disabled"} <= {s.value for s in statuses}
    assert referenced == bool(targets)  # the step at k = 40 went through the reference


def test_the_input_writers_take_strided_and_read_only_arrays() -> None:
    """A matrix's column, a read-only buffer: written as they are, nothing compiled anew."""
    buf = np.zeros(40)
    pose = np.arange(16.0).reshape(4, 4)
    quat = np.array([0.0, 0.0, 0.0, 1.0])
    quat.flags.writeable = False
    write_target(buf, 0, 2, 1.5, math.nan, 3, 1.0, pose[:3, 3], quat)
    assert same(
        buf[:14], np.array([Code.TARGET, 12, 2, 1.5, math.nan, 3, 1, 3, 7, 11, 0, 0, 0, 1])
    )
    twist = np.arange(12.0)[::2]
    write_twist(buf, 14, float(Code.JOG), 1, 2.5, 2.0, -1, twist)
    assert same(buf[14:26], np.concatenate([[Code.JOG, 10, 1, 2.5, 2.0, -1], twist]))
    assert len(write_target.signatures) == len(write_twist.signatures) == 1
