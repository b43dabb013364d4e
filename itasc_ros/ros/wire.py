"""Inputs read from their serialized form: what the tick needs of a message, without the message.

Converting a message into its Python class runs the generated class's constructor and a
checking property setter per field (every name checked to be a ``str``, every array copied), on
the control thread, for every ``sensor_msgs/JointState`` and ``geometry_msgs/PoseStamped``: a
large share of a 1 kHz tick. The tick needs a few
numbers and strings that rarely change. The readers here take them from the message's CDR bytes
(what DDS received, taken with ``raw=True``): a few ``struct`` reads find the fields, the numbers
are one copy, and the strings (joint names, frame ids) are decoded only when their bytes change,
by rclpy's own deserializer.

* :class:`JointStateWire`: a joint state's names, positions and stamp.
* :class:`StampedWire`: a header and a fixed run of float64s (``PoseStamped``: position and
  quaternion x y z w; ``TwistStamped``: linear and angular).

Anything these readers do not expect (big-endian CDR, lengths that overrun the buffer) goes to
rclpy's deserializer whole, which refuses what is malformed: the fast path never accepts a
message the message class would not.

The layout (XCDR1, little endian, the ROS 2 default): a 4-byte encapsulation header, then
``header.stamp`` (int32 sec, uint32 nanosec), ``header.frame_id`` (uint32 length with the NUL,
bytes); a JointState then has ``name`` (uint32 count, each a string as above, 4-aligned),
``position``, ``velocity``, ``effort`` (uint32 count, 8-aligned float64s); a PoseStamped or
TwistStamped its float64s, 8-aligned. Alignment counts from the end of the encapsulation header.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped
from numpy.typing import NDArray
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState

Array = NDArray[np.float64]

_HEAD = struct.Struct("<iII")  # header.stamp.sec, header.stamp.nanosec, frame_id's length
_U32 = struct.Struct("<I")
_F8 = np.dtype("<f8")  # CDR's little-endian float64 (a dtype object: no string parsed per read)
_NATIVE_F8 = _F8 == np.dtype(float)  # a plain copy is the host's float64 (no cast set up)


def _floats(raw: bytes, offset: int, count: int) -> Array:
    """``count`` little-endian float64s at byte ``offset`` of ``raw``: the tick's own copy."""
    view = np.frombuffer(raw, dtype=_F8, count=count, offset=offset)
    return view.copy() if _NATIVE_F8 else view.astype(float)


def _align(p: int, to: int) -> int:
    """Byte ``p`` moved up to a multiple of ``to`` counted from the payload's start (byte 4)."""
    return p + (4 - p) % to


def _stamp(sec: int, nanosec: int) -> float | None:
    return None if sec == 0 == nanosec else sec + nanosec * 1e-9


def _float_sequences(raw: bytes, p: int, fields: int) -> tuple[int, int] | None:
    """The offset and count of the first of ``fields`` float64 sequences from byte ``p``.

    None when a sequence does not fit in ``raw`` (every one is checked).
    """
    n = len(raw)
    first: tuple[int, int] | None = None
    for _ in range(fields):
        p = _align(p, 4)
        if p + 4 > n:
            return None
        (count,) = _U32.unpack_from(raw, p)
        p = _align(p + 4, 8) if count else p + 4
        if first is None:
            first = (p, count)
        p += 8 * count
        if p > n:
            return None
    return first


def _names_end(raw: bytes, p: int) -> int | None:
    """The end of the string sequence whose count is at byte ``p``; None if it overruns."""
    n = len(raw)
    if p + 4 > n:
        return None
    (count,) = _U32.unpack_from(raw, p)
    p += 4
    for _ in range(count):
        p = _align(p, 4)
        if p + 4 > n:
            return None
        p += 4 + _U32.unpack_from(raw, p)[0]
    return p if p <= n else None


def _little_endian(raw: bytes) -> bool:
    return len(raw) >= 16 and raw[0] == 0 and raw[1] == 1


class JointStateValues(NamedTuple):
    """What the tick takes of a joint state.

    Attributes:
        name: the joint names (the same list object while the message's names do not change).
        position: (len(position),) [rad or m], the tick's own copy.
        stamp: the header stamp [s], or None for the zero stamp ("not stamped").
    """

    name: list[str]
    position: Array
    stamp: float | None


class JointStateWire:
    """Reads serialized joint states (see the module); keeps the last names it decoded."""

    def __init__(self) -> None:
        self._names_bytes = b""  # the name sequence (its count first) of the last names
        self._names: list[str] = []
        self.decoded = 0  # messages that went through rclpy's deserializer

    def read(self, raw: bytes) -> JointStateValues:
        """The names, positions and stamp of one serialized ``sensor_msgs/JointState``.

        Raises:
            Exception: what rclpy's deserializer raises for a malformed message.
        """
        if not _little_endian(raw) or not self._names_bytes:
            return self._decoded(raw)
        sec, nanosec, frame = _HEAD.unpack_from(raw, 4)
        start = _align(16 + frame, 4)
        if not raw.startswith(self._names_bytes, start):  # compared in place: no copy made
            return self._decoded(raw)
        end = start + len(self._names_bytes)
        seq = _float_sequences(raw, end, 3)  # position, velocity, effort
        if seq is None:
            return self._decoded(raw)
        return JointStateValues(self._names, _floats(raw, seq[0], seq[1]), _stamp(sec, nanosec))

    def _decoded(self, raw: bytes) -> JointStateValues:
        """The whole message through rclpy's deserializer; its names kept for the next ones."""
        self.decoded += 1
        msg = deserialize_message(raw, JointState)
        if _little_endian(raw):
            start = _align(16 + _HEAD.unpack_from(raw, 4)[2], 4)
            end = _names_end(raw, start)
            if end is not None:
                self._names_bytes = raw[start:end]
                self._names = list(msg.name)
        stamp = msg.header.stamp
        return JointStateValues(
            list(msg.name),
            np.array(msg.position, dtype=float),
            _stamp(int(stamp.sec), int(stamp.nanosec)),
        )


class StampedWire:
    """Reads a serialized header and ``count`` float64s (see the module); keeps the last frame.

    Args:
        msg_type: the message class (``PoseStamped`` or ``TwistStamped``).
        count: its float64s after the header (7 or 6).
        values: the message's float64s in order, from a message of that class (the slow path).
    """

    def __init__(
        self, msg_type: type[Any], count: int, values: Callable[[Any], list[float]]
    ) -> None:
        self.msg_type = msg_type
        self.count = count
        self._values = values
        self._frame_bytes: bytes | None = None  # the last frame id's bytes (its NUL left out)
        self._frame = ""
        self.decoded = 0  # messages that went through rclpy's deserializer

    def read(self, raw: bytes) -> tuple[str, Array, float | None]:
        """``(frame_id, values (count,), stamp [s] or None for the zero stamp)``.

        Raises:
            Exception: what rclpy's deserializer raises for a malformed message.
        """
        if not _little_endian(raw):
            return self._decoded(raw)
        sec, nanosec, length = _HEAD.unpack_from(raw, 4)
        end = 16 + length  # past the NUL
        at = _align(end, 8)
        if (
            length == 0
            or at + 8 * self.count > len(raw)
            or raw[end - 1] != 0
            or raw[16 : end - 1] != self._frame_bytes
        ):
            return self._decoded(raw)
        return self._frame, _floats(raw, at, self.count), _stamp(sec, nanosec)

    def _decoded(self, raw: bytes) -> tuple[str, Array, float | None]:
        """The whole message through rclpy's deserializer; its frame kept for the next ones."""
        self.decoded += 1
        msg = deserialize_message(raw, self.msg_type)
        if _little_endian(raw):
            length = _HEAD.unpack_from(raw, 4)[2]
            if length > 0:
                self._frame_bytes = raw[16 : 16 + length - 1]
                self._frame = str(msg.header.frame_id)
        stamp = msg.header.stamp
        values = np.array(self._values(msg), dtype=float)
        return str(msg.header.frame_id), values, _stamp(int(stamp.sec), int(stamp.nanosec))


def pose_stamped_wire() -> StampedWire:
    """A reader of serialized ``geometry_msgs/PoseStamped``: position, quaternion x y z w."""

    def values(msg: PoseStamped) -> list[float]:
        p, o = msg.pose.position, msg.pose.orientation
        return [p.x, p.y, p.z, o.x, o.y, o.z, o.w]

    return StampedWire(PoseStamped, 7, values)


def twist_stamped_wire() -> StampedWire:
    """A reader of serialized ``geometry_msgs/TwistStamped``: linear then angular velocity."""

    def values(msg: TwistStamped) -> list[float]:
        lin, ang = msg.twist.linear, msg.twist.angular
        return [lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]

    return StampedWire(TwistStamped, 6, values)


__all__ = [
    "JointStateValues",
    "JointStateWire",
    "StampedWire",
    "pose_stamped_wire",
    "twist_stamped_wire",
]
