"""itasc_ros.ros.wire: serialized joint states read as rclpy's deserializer does."""

from __future__ import annotations

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from itasc_ros.ros.rclpy_compat import RMWError
from itasc_ros.ros.wire import JointStateWire, pose_stamped_wire, twist_stamped_wire

PANDA = [f"panda_joint{i}" for i in range(1, 8)]


def _expected(raw: bytes) -> tuple[list[str], np.ndarray, float | None]:
    msg = deserialize_message(raw, JointState)
    s = msg.header.stamp
    stamp = None if s.sec == 0 == s.nanosec else s.sec + s.nanosec * 1e-9
    return list(msg.name), np.array(msg.position, dtype=float), stamp


def _random_message(rng: np.random.Generator, i: int) -> JointState:
    names = [f"j{k}" + "x" * int(rng.integers(0, 6)) for k in range(int(rng.integers(0, 9)))]
    msg = JointState(
        name=names,
        position=list(rng.normal(size=int(rng.integers(0, 9)))),
        velocity=list(rng.normal(size=int(rng.integers(0, 3)))),
        effort=list(rng.normal(size=int(rng.integers(0, 3)))),
    )
    msg.header.frame_id = "f" * int(rng.integers(0, 7))  # every alignment of what follows
    msg.header.stamp.sec = int(rng.integers(-5, 5)) if i % 3 else 0
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9)) if i % 5 else 0
    return msg


def test_random_messages_read_as_the_deserializer_reads_them() -> None:
    wire = JointStateWire()
    rng = np.random.default_rng(7)
    for i in range(1500):
        raw = serialize_message(_random_message(rng, i))
        names, pos, stamp = _expected(raw)
        for _ in range(2):  # the first may decode the names, the second reads them cached
            got = wire.read(raw)
            assert got.name == names
            assert np.array_equal(got.position, pos)
            assert got.position.dtype == np.float64 and got.position.flags.aligned
            assert got.stamp == stamp


def test_names_are_decoded_once_per_change() -> None:
    wire = JointStateWire()
    start = wire.decoded
    for k in range(50):
        got = wire.read(serialize_message(JointState(name=PANDA, position=[0.01 * k] * 7)))
        assert got.position[0] == pytest.approx(0.01 * k)
    assert wire.decoded == start + 1  # the first message only
    wire.read(serialize_message(JointState(name=PANDA[::-1], position=[0.0] * 7)))
    assert wire.decoded == start + 2  # new names: decoded again
    assert wire.read(serialize_message(JointState(name=PANDA, position=[0.0] * 7))).name == PANDA


def test_malformed_bytes_are_refused_by_the_deserializer() -> None:
    wire = JointStateWire()
    raw = serialize_message(JointState(name=PANDA, position=[0.1] * 7))
    wire.read(raw)  # the names cached: a fast path exists for them
    for bad in (b"", raw[:4], raw[:30], raw[:4] + b"\xff" * 40, raw[:40] + b"\xff" * 8):
        with pytest.raises(RMWError):
            wire.read(bad)


def test_big_endian_goes_to_the_deserializer() -> None:
    wire = JointStateWire()
    start = wire.decoded
    raw = serialize_message(JointState(name=PANDA, position=[0.1] * 7))
    try:
        wire.read(b"\x00\x00" + raw[2:])  # the representation says big endian
    except RMWError:
        pass  # these little-endian bytes read big-endian may well be malformed
    assert wire.decoded == start + 1  # never read by the fast path


def _random_stamped(rng: np.random.Generator, i: int, twist: bool) -> PoseStamped | TwistStamped:
    v = rng.normal(size=7)
    if i % 7 == 0:
        v[int(rng.integers(0, 6))] = [np.nan, np.inf, -np.inf, 1e308][i % 4]  # passed through
    if twist:
        msg: PoseStamped | TwistStamped = TwistStamped()
        lin, ang = msg.twist.linear, msg.twist.angular
        lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = map(float, v[:6])
    else:
        msg = PoseStamped()
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = map(float, v)
    msg.header.frame_id = ["", "world", "panda_link0", "ü", "a" * int(rng.integers(0, 9))][i % 5]
    msg.header.stamp.sec = int(rng.integers(-5, 5)) if i % 3 else 0
    msg.header.stamp.nanosec = int(rng.integers(0, 10**9)) if i % 4 else 0
    return msg


@pytest.mark.parametrize("twist", [False, True], ids=["PoseStamped", "TwistStamped"])
def test_random_stamped_messages_read_as_the_deserializer_reads_them(twist: bool) -> None:
    wire = twist_stamped_wire() if twist else pose_stamped_wire()
    rng = np.random.default_rng(11)
    for i in range(1500):
        raw = serialize_message(_random_stamped(rng, i, twist))
        msg = deserialize_message(raw, wire.msg_type)
        if twist:
            lin, ang = msg.twist.linear, msg.twist.angular
            expected = [lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]
        else:
            p, o = msg.pose.position, msg.pose.orientation
            expected = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
        s = msg.header.stamp
        stamp = None if s.sec == 0 == s.nanosec else s.sec + s.nanosec * 1e-9
        for _ in range(2):  # decoded, then read with the frame cached
            frame, values, got_stamp = wire.read(raw)
            assert frame == msg.header.frame_id and got_stamp == stamp
            assert np.array_equal(values, expected, equal_nan=True)
            assert values.dtype == np.float64 and values.flags.aligned


def test_a_frame_is_decoded_once_per_change_and_malformed_bytes_refused() -> None:
    wire = pose_stamped_wire()
    start = wire.decoded
    msg = PoseStamped()
    msg.header.frame_id = "world"
    for k in range(20):
        msg.pose.position.x = 0.01 * k
        assert wire.read(serialize_message(msg))[1][0] == pytest.approx(0.01 * k)
    assert wire.decoded == start + 1
    raw = serialize_message(msg)
    for bad in (b"", raw[:4], raw[:20], raw[:-9], raw[:12] + b"\xff\xff\xff\x7f" + raw[16:]):
        with pytest.raises(RMWError):
            wire.read(bad)
