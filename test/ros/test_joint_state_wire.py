"""itasc_ros.ros.joint_state_wire: serialized joint states read as rclpy's deserializer does."""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from itasc_ros.ros.joint_state_wire import JointStateWire

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
        with pytest.raises(_rclpy.RMWError):
            wire.read(bad)


def test_big_endian_goes_to_the_deserializer() -> None:
    wire = JointStateWire()
    start = wire.decoded
    raw = serialize_message(JointState(name=PANDA, position=[0.1] * 7))
    try:
        wire.read(b"\x00\x00" + raw[2:])  # the representation says big endian
    except _rclpy.RMWError:
        pass  # these little-endian bytes read big-endian may well be malformed
    assert wire.decoded == start + 1  # never read by the fast path
