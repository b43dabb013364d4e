"""StampOrder: header stamps checked against the stream's own delivery (pure core, no ROS).

A stream is measured by its delivery offset (reception time minus stamp): a stamp is ahead when
its offset is smaller than the stream's most punctual one by more than ``input_timeout``. A
stalled publisher (late messages, a burst, a pause, a first message come late) is never
refused; a stamp in the future, an out-of-order stamp and a clock that jumped are refused at
most ``input_timeout``; the state travels in the journal's SNAPSHOT and replays exactly.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control.journal import STREAM, STREAM_SIZE, Journal, decode
from itasc_ros.core.control.playback import ConfigHistory, Playback
from itasc_ros.core.control.streams import StampOrder
from itasc_ros.core.errors import InputError
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of

REPO = Path(__file__).resolve().parents[3]
HOME = home_of("panda")
TIMEOUT = 0.1  # [s] input_timeout
PERIOD = 0.004  # [s] the publishers' period
LATENCY = 0.0005  # [s] a punctual delivery


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def config() -> ControllerConfig:
    return ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_hand")],
        control_rate=250.0,
        input_timeout=TIMEOUT,
    )


def offer(order: StampOrder, source: float | None, received: float) -> str:
    """Check a message and accept it when in order; returns the reason of a refusal ('')."""
    why = order.check(source, received, TIMEOUT)
    if not why:
        order.accept(source, received)
    return why


def punctual(order: StampOrder, t0: float, count: int) -> list[str]:
    """``count`` messages stamped every PERIOD from ``t0`` [s], delivered LATENCY later."""
    return [offer(order, t0 + k * PERIOD, t0 + k * PERIOD + LATENCY) for k in range(count)]


# ------------------------------------------------------------------------------ the rule
def test_a_stalled_publisher_is_never_refused() -> None:
    """A publisher stamps 10 messages, then stalls 0.3 s (3 input_timeouts): the 10 come in a
    burst, late by 0.26 to 0.3 s, the stream re-anchoring on the first of them; then it is
    punctual again. Measured from the last accepted message (the burst's last, late), the
    punctual stamps looked ahead by its lateness and were refused for input_timeout; measured
    from the stream's own delivery, none is refused."""
    order = StampOrder()
    assert punctual(order, 100.0, 50) == [""] * 50
    stalled = 100.0 + 50 * PERIOD
    burst_at = stalled + 0.3
    burst = [offer(order, stalled + k * PERIOD, burst_at + 1e-5 * k) for k in range(10)]
    assert burst == [""] * 10
    assert order.offset == pytest.approx(LATENCY)  # the most punctual delivery, kept
    assert punctual(order, burst_at + 0.001, 100) == [""] * 100


def test_a_publisher_descheduled_at_random_is_never_refused() -> None:
    """A publisher descheduled between stamping and sending, for up to twice input_timeout
    (stamping nothing meanwhile): its late messages and the punctual ones after them pass."""
    rng = np.random.default_rng(3)
    order = StampOrder()
    t = 50.0
    for _ in range(500):
        t += PERIOD
        late = rng.uniform(0.0, 2.0 * TIMEOUT) if rng.random() < 0.1 else LATENCY
        assert offer(order, t, t + late) == ""
        t += late  # nothing stamped while it was descheduled


def test_a_stream_paused_longer_than_input_timeout_resumes_at_once() -> None:
    order = StampOrder()
    punctual(order, 10.0, 20)
    assert punctual(order, 12.0, 20) == [""] * 20  # a 1.9 s pause, resumed punctually
    # another pause whose first message comes late: the punctual ones after it are in time
    assert offer(order, 14.0, 14.5) == ""
    assert order.offset == pytest.approx(LATENCY)  # kept across the pause
    assert punctual(order, 14.5, 20) == [""] * 20


@pytest.mark.parametrize("late", [0.0, 0.05, 0.3, 2.0])
def test_a_stream_whose_first_message_came_late_is_never_refused(late: float) -> None:
    """The first message comes ``late`` [s] late (a first publish, a publisher descheduled
    right after stamping it), the ones after it punctually: measured from the late anchor, the
    punctual stamps looked ahead by its lateness and were refused for input_timeout; none is."""
    order = StampOrder()
    assert offer(order, 100.0, 100.0 + late + LATENCY) == ""
    assert order.offset == pytest.approx(late + LATENCY)  # the anchor's own, alone
    assert punctual(order, 100.0 + late + PERIOD, 50) == [""] * 50
    assert order.offset == pytest.approx(LATENCY)


@pytest.mark.parametrize("clock", [0.0, 10.0, -10.0])
def test_the_message_after_a_lone_anchor_is_ahead_when_ahead_of_its_own_reception(
    clock: float,
) -> None:
    """While the anchor is alone, the next message is measured against the anchor's offset or
    zero, the smaller: on a publisher's clock ``clock`` [s] ahead of the node's or on the
    node's, a stamp ahead of the anchor's delivery by more than input_timeout is refused; on a
    clock behind, one ahead of its own reception time by more than input_timeout is."""

    def anchored() -> StampOrder:
        order = StampOrder()
        assert offer(order, 100.0 + clock, 100.0 + LATENCY) == ""
        return order

    t = 100.0 + PERIOD
    reference = min(LATENCY - clock, 0.0)  # the anchor's offset or zero
    for ahead in (0.05, 0.5, 10.5, 20.5):  # [s] ahead of a punctual stamp
        why = offer(anchored(), t + clock + ahead, t + LATENCY)
        lead = reference - (LATENCY - clock - ahead)
        assert ("in the future" in why) == (lead > TIMEOUT), (ahead, why)
        if clock >= 0.0:
            assert bool(why) == (ahead > TIMEOUT)
    order = anchored()
    assert offer(order, t + clock, t + LATENCY) == ""  # punctual: taken
    assert order.offset == pytest.approx(LATENCY - clock)
    why = offer(order, t + PERIOD + clock + 0.5, t + PERIOD + LATENCY)  # two in the stream
    assert "in the future" in why


def test_a_stamp_in_the_future_is_refused_and_the_stream_goes_on() -> None:
    order = StampOrder()
    punctual(order, 10.0, 20)
    t = 10.0 + 20 * PERIOD
    why = offer(order, t + 0.5, t + LATENCY)
    assert "in the future" in why and "input_timeout 0.1 s" in why
    assert offer(order, t + TIMEOUT * 0.9, t + LATENCY) == ""  # ahead by less: accepted
    assert punctual(order, t + TIMEOUT, 20) == [""] * 20


def test_out_of_order_is_refused_while_the_last_accepted_is_fresh() -> None:
    order = StampOrder()
    punctual(order, 10.0, 20)
    last = order.received
    assert "out of order" in offer(order, 9.0, last + 0.05)
    assert offer(order, 9.0, last + TIMEOUT + 1e-3) == ""  # stale: re-anchored
    assert order.offset == pytest.approx(last + TIMEOUT + 1e-3 - 9.0)  # the new clock's


@pytest.mark.parametrize("jump", [10.0, -10.0])
def test_a_clock_that_jumped_is_refused_then_re_anchored_within_input_timeout(
    jump: float,
) -> None:
    """The publisher's clock jumps 10 s forward (a stamp in the future) or back (out of order):
    refused while the last accepted message is fresh, then the stream re-anchors, offset
    included: the new clock's punctual messages pass, a stamp in its future is refused."""
    order = StampOrder()
    punctual(order, 100.0, 25)
    last = order.received
    t0 = 100.0 + 25 * PERIOD
    reasons = [offer(order, t0 + jump + k * PERIOD, t0 + k * PERIOD + LATENCY) for k in range(60)]
    refused = [k for k, why in enumerate(reasons) if why]
    word = "in the future" if jump > 0 else "out of order"
    assert all(word in reasons[k] for k in refused)
    assert refused == list(range(len(refused)))  # a run, then accepted for good
    first_accepted = t0 + len(refused) * PERIOD + LATENCY
    assert 0.0 < first_accepted - last - TIMEOUT <= PERIOD  # refused input_timeout at most
    assert order.offset == pytest.approx(LATENCY - jump)
    t = t0 + 60 * PERIOD
    assert "in the future" in offer(order, t + jump + 0.5, t + LATENCY)


def test_unstamped_and_non_finite_stamps() -> None:
    order = StampOrder()
    punctual(order, 10.0, 5)
    before = (order.source, order.received, order.offset)
    assert offer(order, None, 1e9) == ""  # not compared, changes nothing
    assert (order.source, order.received, order.offset) == before
    assert "not finite" in order.check(math.nan, 10.1, TIMEOUT)
    assert "not finite" in order.check(math.inf, 10.1, TIMEOUT)


# ------------------------------------------------------------------------------ the controller
def assert_took_every_pose(ctrl: Controller, last: np.ndarray) -> None:
    """No input was refused, and the target is the ``last`` (3,) position sent."""
    assert ctrl.rejections == 0
    _, target = ctrl.poses("ee")
    assert target is not None
    np.testing.assert_array_equal(target[:3, 3], last)


def test_the_robot_follows_a_stalled_target_publisher(tree: KinematicTree) -> None:
    """The target publisher stamps 10 poses, then stalls 0.3 s; the 10 come in a burst, then
    punctual poses: every pose is taken, the target follows the last, the tick stays active."""
    ctrl = Controller(tree, config())
    goal = tree.forward_kinematics(HOME, "panda_hand")
    quat = spatial.matrix_to_quat(goal)
    now = 100.0
    pending: list[tuple[float, np.ndarray]] = []  # the stalled poses: (stamp, position)
    for k in range(200):
        now += PERIOD
        ctrl.set_joint_state(ctrl.joint_names, HOME, now, now - LATENCY)
        p = goal[:3, 3] + [0.05 * math.sin(2.0 * k * PERIOD), 0.0, 0.0]
        if not 60 <= k < 125:  # stalled from 60 to 125 (0.26 s), 10 poses stamped before
            pending.append((now - LATENCY, p))
        if not 50 <= k < 125:
            for stamp, pos in pending:
                ctrl.set_target("ee", "", pos, quat, now, stamp)
            pending.clear()
        out = ctrl.step(now)
        assert out.status == "active", (k, out.reason)
    assert_took_every_pose(ctrl, p)


def test_the_snapshot_carries_each_stream_s_offset(tree: KinematicTree) -> None:
    """A controller restored from a SNAPSHOT taken after a stall decides as the original: the
    stream's most punctual delivery (not the late anchor's) is in it."""
    a, b = Controller(tree, config()), Controller(tree, config())
    a.set_joint_state(a.joint_names, HOME, 10.0, 10.0 - LATENCY)
    a.set_joint_state(a.joint_names, HOME, 10.5, 10.004)  # after a pause, 0.496 s late
    for t in (10.0, 10.004):  # target poses 0.3 s late
        a.set_target("ee", "", [0.4, 0.0, 0.5], [1.0, 0.0, 0.0, 0.0], t + 0.3, t)
    values = a.state_values()
    # n_all, k, enabled, halted, has_state, stamp, header, stamp order (3), q (n_all), streams
    assert values[7:10].tolist() == [10.004, 10.5, 10.0 - (10.0 - LATENCY)]
    n_all = int(values[0])
    stream = values[10 + n_all : 10 + n_all + STREAM_SIZE]
    assert stream[STREAM["order"]].tolist() == [10.004, 10.304, 10.304 - 10.004]
    b.restore_state(np.concatenate([[0.0, 0.0, 0.0], values]))
    assert b.state_values().tobytes() == values.tobytes()
    for c in (a, b):  # punctual (0.5 s ahead of the late anchor), then 0.2 s in the future
        c.set_joint_state(c.joint_names, HOME, 10.52, 10.52 - LATENCY)
        with pytest.raises(InputError, match="in the future"):
            c.set_joint_state(c.joint_names, HOME, 10.53, 10.53 + 0.2)


def test_the_snapshot_carries_a_lone_anchor(tree: KinematicTree) -> None:
    """A controller restored from a SNAPSHOT taken after one late joint state decides as the
    original: the punctual state after it is taken, one stamped in its future refused."""
    a, b = Controller(tree, config()), Controller(tree, config())
    a.set_joint_state(a.joint_names, HOME, 10.3, 10.0)  # the first, 0.3 s late
    values = a.state_values()
    assert values[7:10].tolist() == [10.0, 10.3, math.inf]  # the anchor alone
    b.restore_state(np.concatenate([[0.0, 0.0, 0.0], values]))
    assert b.state_values().tobytes() == values.tobytes()
    for c in (a, b):
        with pytest.raises(InputError, match="in the future"):
            c.set_joint_state(c.joint_names, HOME, 10.304, 10.304 + 0.2)
        c.set_joint_state(c.joint_names, HOME, 10.308, 10.308 - LATENCY)  # punctual
    assert a.state_values().tobytes() == b.state_values().tobytes()
    assert a.state_values()[9] == pytest.approx(LATENCY)


def test_the_robot_follows_a_target_whose_first_pose_came_late(tree: KinematicTree) -> None:
    """The first target pose comes 0.28 s late, the next ones punctually: all are taken."""
    ctrl = Controller(tree, config())
    goal = tree.forward_kinematics(HOME, "panda_hand")
    quat = spatial.matrix_to_quat(goal)
    now = 100.0
    for k in range(100):
        now += PERIOD
        ctrl.set_joint_state(ctrl.joint_names, HOME, now, now - LATENCY)
        p = goal[:3, 3] + [0.05 * math.sin(2.0 * k * PERIOD), 0.0, 0.0]
        stamp = now - 0.28 if k == 0 else now - LATENCY
        ctrl.set_target("ee", "", p, quat, now, stamp)
        out = ctrl.step(now)
        assert out.status == "active", (k, out.reason)
    assert_took_every_pose(ctrl, p)


class StalledPublisher:
    """A publisher stamping every PERIOD on a clock ``skew`` [s] off. While it is stalled its
    first 10 messages wait (none is stamped after them), then come in a burst."""

    def __init__(self) -> None:
        self.pending: list[float] = []  # stamps [s] not delivered yet
        self.stalled_for = 0  # periods

    def stamps(self, now: float, skew: float, stalled: bool) -> list[float]:
        """The stamps delivered at ``now`` [s]: none while stalled, else all pending."""
        self.stalled_for = self.stalled_for + 1 if stalled else 0
        if self.stalled_for <= 10:
            self.pending.append(now + skew - LATENCY)
        if stalled:
            return []
        out, self.pending = self.pending, []
        return out


def test_a_journal_of_stalls_and_clock_jumps_plays_back_exactly(tree: KinematicTree) -> None:
    """Stalls (bursts), pauses and clock jumps of the joint-state and target streams, refused
    messages among them: the journal, with SNAPSHOTs, plays back bit for bit."""
    rng = np.random.default_rng(11)
    ctrl = Controller(tree, config())
    journal = Journal()
    ctrl.attach_journal(journal)
    goal = tree.forward_kinematics(HOME, "panda_hand")
    quat = spatial.matrix_to_quat(goal)
    q, cmd, now, skew = HOME.copy(), np.zeros(7), 100.0, 0.0
    joints, targets = StalledPublisher(), StalledPublisher()
    messages, refused = [], 0
    for k in range(400):
        now += PERIOD
        q = q + cmd * PERIOD
        if k in (150, 300):
            skew += 10.0 if k == 150 else -25.0  # the publishers' clock jumps
        for stamp in joints.stamps(now, skew, 80 <= k < 130 or 200 <= k < 240):
            try:
                ctrl.set_joint_state(ctrl.joint_names, q, now, stamp)
            except InputError:
                refused += 1
        for stamp in targets.stamps(now, skew, 250 <= k < 320):
            goal[:3, 3] += rng.normal(0.0, 0.0005, 3)
            try:
                ctrl.set_target("ee", "", goal[:3, 3], quat, now, stamp)
            except InputError:
                refused += 1
        out = ctrl.step(now)
        if out.publish:
            cmd = out.qdot
        if k % 40 == 0:
            ctrl.write_snapshot(journal)
        messages.append(journal.take().copy())
    assert refused > 0  # the clock jumps
    history = ConfigHistory(0, config(), {}, {0.0: lambda: tree})
    pb = Playback(history)
    for data in messages:
        msg = decode(data)
        pb.feed(msg.sequence, msg.records)
    assert pb.log.problems == [] and pb.log.state_mismatches == 0 and pb.log.rejected == 0
    assert pb.log.snapshots >= 10
    assert len(pb.ticks) == 400 and all(t.diff == 0.0 for t in pb.ticks)
