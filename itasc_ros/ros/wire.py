"""Inputs read from their serialized form: what the tick needs of a message, without the message.

Converting a message into its Python class runs the generated class's constructor and a
checking property setter per field (every name checked to be a ``str``, every array copied):
~70 us of the control thread's CPU for a ``sensor_msgs/JointState`` and ~90 us for a
``geometry_msgs/PoseStamped`` on a 2-core VM, a fifth of a 1 kHz tick. The tick needs a few
numbers and strings that rarely change. The readers here take them from the message's CDR bytes
(what DDS received, taken with ``raw=True``): one compiled call finds the fields, the numbers
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

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from geometry_msgs.msg import PoseStamped, TwistStamped
from numba import njit
from numpy.typing import NDArray
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

Array = NDArray[np.float64]

#: The layout's fields, indices of the array :func:`joint_state_layout` fills.
SEC, NANOSEC, NAMES, NAMES_START, NAMES_END, POS, POS_COUNT = range(7)
#: The fields of :func:`stamped_layout` (the stamp as above).
FRAME_START, FRAME_END, VALUES = range(2, 5)
LAYOUT_SIZE = 7


@njit(cache=True, nogil=True)
def _u32(b: NDArray[np.uint8], p: int) -> int:
    return int(b[p]) | (int(b[p + 1]) << 8) | (int(b[p + 2]) << 16) | (int(b[p + 3]) << 24)


@njit(cache=True, nogil=True)
def _align(p: int, to: int) -> int:
    """``p`` moved up to a multiple of ``to`` counted from the payload's start (byte 4)."""
    r = (p - 4) % to
    return p if r == 0 else p + to - r


@njit(cache=True, nogil=True)
def joint_state_layout(b: NDArray[np.uint8], out: NDArray[np.int64]) -> bool:
    """Where a serialized JointState's fields are (see the module); False: not the fast case.

    Args:
        b: the serialized message (n,) uint8, encapsulation header included.
        out: (:data:`LAYOUT_SIZE`,) int64, filled: the stamp's sec and nanosec, the count of
            names and the byte range of the name sequence's elements, the byte offset and count
            of the positions.

    Returns:
        True for little-endian CDR whose sequences all fit in ``b`` (velocity and effort
        checked too); False otherwise (out is then meaningless).
    """
    n = b.shape[0]
    if n < 24 or b[0] != 0 or b[1] != 1:
        return False
    sec = _u32(b, 4)
    out[SEC] = sec - (1 << 32) if sec >= (1 << 31) else sec  # int32
    out[NANOSEC] = _u32(b, 8)
    p = 16 + _u32(b, 12)  # past frame_id
    p = _align(p, 4)
    if p + 4 > n:
        return False
    count = _u32(b, p)
    p += 4
    out[NAMES] = count
    out[NAMES_START] = p
    for _ in range(count):
        p = _align(p, 4)
        if p + 4 > n:
            return False
        p += 4 + _u32(b, p)
    if p > n:
        return False
    out[NAMES_END] = p
    for field in range(3):  # position, velocity, effort
        p = _align(p, 4)
        if p + 4 > n:
            return False
        count = _u32(b, p)
        p += 4
        if count > 0:
            p = _align(p, 8)
        if field == 0:
            out[POS] = p
            out[POS_COUNT] = count
        p += 8 * count
        if p > n:
            return False
    return True


@njit(cache=True, nogil=True)
def stamped_layout(b: NDArray[np.uint8], count: int, out: NDArray[np.int64]) -> bool:
    """Where a serialized header-then-``count``-float64s message's fields are; False: not fast.

    Args:
        b: the serialized message (n,) uint8, encapsulation header included.
        count: the float64s after the header (PoseStamped 7, TwistStamped 6).
        out: (:data:`LAYOUT_SIZE`,) int64, filled: the stamp's sec and nanosec, the frame id's
            byte range (without its NUL) and the byte offset of the float64s.

    Returns:
        True for little-endian CDR whose frame id ends with its NUL and whose values fit in
        ``b``; False otherwise.
    """
    n = b.shape[0]
    if n < 17 or b[0] != 0 or b[1] != 1:
        return False
    sec = _u32(b, 4)
    out[SEC] = sec - (1 << 32) if sec >= (1 << 31) else sec
    out[NANOSEC] = _u32(b, 8)
    length = _u32(b, 12)
    end = 16 + length
    if length == 0 or end > n or b[end - 1] != 0:
        return False
    out[FRAME_START] = 16
    out[FRAME_END] = end - 1
    p = _align(end, 8)
    if p + 8 * count > n:
        return False
    out[VALUES] = p
    return True


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
        self._layout = np.zeros(LAYOUT_SIZE, dtype=np.int64)
        self._names_bytes = b""
        self._names: list[str] = []
        self.decoded = 0  # messages that went through rclpy's deserializer
        self.read(serialize_message(JointState(name=["a"], position=[0.0])))  # compiled now

    def read(self, raw: bytes) -> JointStateValues:
        """The names, positions and stamp of one serialized ``sensor_msgs/JointState``.

        Raises:
            Exception: what rclpy's deserializer raises for a malformed message.
        """
        lay = self._layout
        if not joint_state_layout(np.frombuffer(raw, dtype=np.uint8), lay):
            return self._decoded(raw)
        start, end = int(lay[NAMES_START]), int(lay[NAMES_END])
        if raw[start:end] != self._names_bytes or len(self._names) != lay[NAMES]:
            return self._decoded(raw)
        count = int(lay[POS_COUNT])
        pos = np.frombuffer(raw, dtype="<f8", count=count, offset=int(lay[POS])).astype(float)
        sec, nsec = int(lay[SEC]), int(lay[NANOSEC])
        return JointStateValues(self._names, pos, None if sec == 0 == nsec else sec + nsec * 1e-9)

    def _decoded(self, raw: bytes) -> JointStateValues:
        """The whole message through rclpy's deserializer; its names kept for the next ones."""
        self.decoded += 1
        msg = deserialize_message(raw, JointState)
        lay = self._layout
        if joint_state_layout(np.frombuffer(raw, dtype=np.uint8), lay):
            self._names_bytes = raw[int(lay[NAMES_START]) : int(lay[NAMES_END])]
            self._names = list(msg.name)
        stamp = msg.header.stamp
        sec, nsec = int(stamp.sec), int(stamp.nanosec)
        return JointStateValues(
            list(msg.name),
            np.array(msg.position, dtype=float),
            None if sec == 0 == nsec else sec + nsec * 1e-9,
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
        self._layout = np.zeros(LAYOUT_SIZE, dtype=np.int64)
        self._frame_bytes = b""
        self._frame = ""
        self.decoded = 0  # messages that went through rclpy's deserializer
        msg = msg_type()
        msg.header.frame_id = "a"
        self.read(serialize_message(msg))  # compiled now

    def read(self, raw: bytes) -> tuple[str, Array, float | None]:
        """``(frame_id, values (count,), stamp [s] or None for the zero stamp)``.

        Raises:
            Exception: what rclpy's deserializer raises for a malformed message.
        """
        lay = self._layout
        if not stamped_layout(np.frombuffer(raw, dtype=np.uint8), self.count, lay):
            return self._decoded(raw)
        if raw[int(lay[FRAME_START]) : int(lay[FRAME_END])] != self._frame_bytes:
            return self._decoded(raw)
        values = np.frombuffer(raw, dtype="<f8", count=self.count, offset=int(lay[VALUES]))
        sec, nsec = int(lay[SEC]), int(lay[NANOSEC])
        return self._frame, values.astype(float), None if sec == 0 == nsec else sec + nsec * 1e-9

    def _decoded(self, raw: bytes) -> tuple[str, Array, float | None]:
        """The whole message through rclpy's deserializer; its frame kept for the next ones."""
        self.decoded += 1
        msg = deserialize_message(raw, self.msg_type)
        lay = self._layout
        if stamped_layout(np.frombuffer(raw, dtype=np.uint8), self.count, lay):
            self._frame_bytes = raw[int(lay[FRAME_START]) : int(lay[FRAME_END])]
            self._frame = str(msg.header.frame_id)
        stamp = msg.header.stamp
        sec, nsec = int(stamp.sec), int(stamp.nanosec)
        values = np.array(self._values(msg), dtype=float)
        return str(msg.header.frame_id), values, None if sec == 0 == nsec else sec + nsec * 1e-9


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
    "joint_state_layout",
    "pose_stamped_wire",
    "stamped_layout",
    "twist_stamped_wire",
]
