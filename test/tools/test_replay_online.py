"""``itasc-replay --online``'s schedule: the inputs republished at the times they were made.

A bag's time is when its recorder took a message; a recorder that fell behind a 250 Hz
joint-state stream took them seconds late while it took the targets at once. Republished by bag
time, the online node would get each joint state long after the targets that came with it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from itasc_ros.tools.replay.online import _scheduled

NS = 1_000_000_000
JS, TARGET, EVENTS = "/joint_states", "/target_pose", "/parameter_events"


def _msg(stamp_ns: int | None) -> Any:
    """A message with a header stamped ``stamp_ns`` [ns] (None: no header; 0: a zero stamp)."""
    if stamp_ns is None:
        return SimpleNamespace()
    sec, nanosec = divmod(stamp_ns, NS)
    return SimpleNamespace(header=SimpleNamespace(stamp=SimpleNamespace(sec=sec, nanosec=nanosec)))


def _recording(backlog_s: float, clock_offset_ns: int = 0) -> list[tuple[str, int, Any]]:
    """3 s of joint states (250 Hz) and targets (50 Hz) in bag order: the recorder took the
    targets 3 ms after their stamps and fell behind the joint states, up to ``backlog_s`` [s]
    at the end; the stamps' clock is ``clock_offset_ns`` behind the bag's."""
    out = []
    for k in range(750):
        stamp = 100 * NS + k * 4_000_000
        late = int(2e6 + backlog_s * NS * k / 750)  # [ns]
        out.append((JS, stamp + clock_offset_ns + late, _msg(stamp)))
    for k in range(150):
        stamp = 100 * NS + k * 20_000_000
        out.append((TARGET, stamp + clock_offset_ns + 3_000_000, _msg(stamp)))
    return sorted(out, key=lambda m: m[1])


def _times(messages: list[tuple[str, int, Any]], topic: str) -> list[int]:
    return [t for tp, t, _ in messages if tp == topic]


def test_joint_states_a_recorder_took_late_are_republished_beside_their_targets() -> None:
    """1.3 s of backlog: each joint state again within a few ms of the target of its moment."""
    bag = _recording(1.3)
    out = _scheduled(bag)
    assert len(out) == len(bag)
    js, targets = _times(out, JS), _times(out, TARGET)
    assert js == sorted(js) and targets == sorted(targets), "each topic's order kept"
    assert [t for _, t, _ in out] == sorted(t for _, t, _ in out), "in time order"
    # the joint state stamped with the k-th target (every 5th) goes out beside it
    assert max(abs(js[5 * k] - targets[k]) for k in range(150)) < 5_000_000  # [ns]
    # never later than the recorder took it (the replay does not invent lateness)
    taken = dict(zip((id(m) for _, _, m in bag), (t for _, t, _ in bag), strict=True))
    assert all(t <= taken[id(m)] for _, t, m in out)


def test_a_bag_recorded_on_time_keeps_its_times() -> None:
    """No backlog: the least latency is the latency, every message keeps its bag time."""
    bag = _recording(0.0)
    assert [(tp, t) for tp, t, _ in _scheduled(bag)] == [(tp, t) for tp, t, _ in bag]


def test_stamps_of_another_clock_keep_the_bag_s_timeline() -> None:
    """Stamps 1000 s behind the bag's clock (a robot's own clock): the offset is the topic's
    least latency, not lateness; the times stay on the bag's timeline."""
    bag = _recording(1.3, clock_offset_ns=1000 * NS)
    out = _scheduled(bag)
    assert _times(out, TARGET) == _times(bag, TARGET)
    assert min(_times(out, JS)) == min(_times(bag, JS))
    js, targets = _times(out, JS), _times(out, TARGET)
    assert max(abs(js[5 * k] - targets[k]) for k in range(150)) < 5_000_000


def test_unstamped_and_zero_stamped_messages_keep_their_bag_time_and_order() -> None:
    """No header (a parameter event) or a zero stamp: nothing tells when it was made."""
    bag = [
        (JS, 1 * NS, _msg(1 * NS)),
        (EVENTS, 2 * NS, _msg(None)),
        (TARGET, 3 * NS, _msg(0)),
        (JS, 4 * NS, _msg(2 * NS)),  # taken 2 s late: goes before the event and the target
    ]
    out = _scheduled(bag)
    assert [(tp, t) for tp, t, _ in out] == [
        (JS, 1 * NS),
        (EVENTS, 2 * NS),
        (JS, 2 * NS),
        (TARGET, 3 * NS),
    ]


def test_a_stamp_out_of_order_goes_out_in_its_topic_s_order() -> None:
    """A joint state stamped before the previous one is republished after it, as it came."""
    bag = [
        (JS, 10 * NS, _msg(10 * NS)),
        (JS, 11 * NS, _msg(11 * NS)),
        (JS, 12 * NS, _msg(5 * NS)),  # a stamp from the past
        (JS, 13 * NS, _msg(13 * NS)),
    ]
    out = _scheduled(bag)
    assert [m for _, _, m in out] == [m for _, _, m in bag]
    assert [t for _, t, _ in out] == [10 * NS, 11 * NS, 11 * NS, 13 * NS]
