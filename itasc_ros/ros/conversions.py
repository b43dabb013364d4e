"""Messages <-> numpy: joint states, poses, twists, stamps and the three command types."""

from __future__ import annotations

import array
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Pose, PoseStamped, TwistStamped
from nav_msgs.msg import Odometry
from numpy.typing import NDArray
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..command_messages import command_velocities
from ..core.kinematics import spatial

Array = NDArray[np.float64]

FLOAT64_MULTI_ARRAY = "std_msgs/Float64MultiArray"
JOINT_TRAJECTORY = "trajectory_msgs/JointTrajectory"
JOINT_STATE = "sensor_msgs/JointState"

COMMAND_TYPES: dict[str, type[Any]] = {
    FLOAT64_MULTI_ARRAY: Float64MultiArray,
    JOINT_TRAJECTORY: JointTrajectory,
    JOINT_STATE: JointState,
}
"""``command_out_type`` value -> message class."""


# ---------------------------------------------------------------------------- time
def stamp_to_sec(stamp: Time | Duration) -> float:
    """A builtin_interfaces Time or Duration in float seconds [s]."""
    return stamp.sec + stamp.nanosec * 1e-9


def stamp_or_none(stamp: Time) -> float | None:
    """A header stamp in seconds [s], or None for the zero stamp ("not stamped")."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return None
    return stamp.sec + stamp.nanosec * 1e-9


def sec_to_stamp(t: float, out: Time | Duration | None = None) -> Time | Duration:
    """Float seconds [s] into a Time (or into ``out``, a Time or Duration, in place)."""
    msg = Time() if out is None else out
    sec = math.floor(t)
    nsec = round((t - sec) * 1e9)
    if nsec >= 1_000_000_000:
        sec, nsec = sec + 1, nsec - 1_000_000_000
    msg.sec = int(sec)
    msg.nanosec = nsec
    return msg


# ---------------------------------------------------------------------------- inputs
def joint_state_positions(msg: JointState) -> tuple[list[str], Array]:
    """(names, positions (k,)) of a JointState (positions may be shorter: caller checks)."""
    return list(msg.name), np.asarray(msg.position, dtype=float)


def pose_arrays(pose: Pose) -> tuple[Array, Array]:
    """(position (3,) [m], quaternion (4,) (x, y, z, w)) of a geometry_msgs Pose."""
    p, o = pose.position, pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])


def pose_stamped_arrays(msg: PoseStamped) -> tuple[str, Array, Array, float | None]:
    """(frame_id, position (3,), quaternion (4,) xyzw, stamp [s] or None if zero)."""
    p, q = pose_arrays(msg.pose)
    return msg.header.frame_id, p, q, stamp_or_none(msg.header.stamp)


def twist_stamped_array(msg: TwistStamped) -> tuple[str, Array, float | None]:
    """(frame_id, twist (6,) [m/s, rad/s] linear then angular, stamp [s] or None)."""
    lin, ang = msg.twist.linear, msg.twist.angular
    tw = np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z])
    return msg.header.frame_id, tw, stamp_or_none(msg.header.stamp)


def odometry_values(msg: Odometry) -> tuple[str, str, Array, float | None]:
    """(frame_id, child_frame_id, values (13,), stamp [s] or None) of a nav_msgs/Odometry.

    ``values``: position (3) [m], quaternion x y z w (4), linear (3) [m/s] and angular (3)
    [rad/s] velocity in the child frame's axes (the covariances are not used).
    """
    p, q = pose_arrays(msg.pose.pose)
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    values = np.concatenate([p, q, [lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]])
    return msg.header.frame_id, msg.child_frame_id, values, stamp_or_none(msg.header.stamp)


def matrix_to_pose(t: Array, out: Pose | None = None) -> Pose:
    """A (4, 4) pose into a geometry_msgs Pose (or into ``out``)."""
    msg = Pose() if out is None else out
    q = spatial.matrix_to_quat(t[:3, :3])
    msg.position.x, msg.position.y, msg.position.z = (float(v) for v in t[:3, 3])
    o = msg.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in q)
    return msg


def pose_to_matrix(pose: Pose) -> Array:
    """(4, 4) pose of a geometry_msgs Pose (the quaternion is normalised)."""
    p, q = pose_arrays(pose)
    return spatial.pose_from_xyz_quat(p, q)


# ---------------------------------------------------------------------------- commands
class CommandMessage:
    """One preallocated command message of a ``command_out_type``, refilled every tick.

    Float64MultiArray: ``data`` = q' in ``joints`` order (ros2_control
    JointGroupVelocityController). JointTrajectory: one point, ``positions = q + q' dt``,
    ``velocities = q'``, ``time_from_start = dt``, header stamp zero ("start now").
    JointState: ``name = joints``, ``velocity = q'``, ``position = q``, stamped.

    Args:
        kind: a key of :data:`COMMAND_TYPES`.
        joints: joint names, the order of every array.

    Raises:
        ValueError: unknown kind (naming the valid ones).
    """

    def __init__(self, kind: str, joints: Sequence[str]) -> None:
        if kind not in COMMAND_TYPES:
            raise ValueError(
                f"unknown command_out_type {kind!r}; valid types are: " + ", ".join(COMMAND_TYPES)
            )
        self.kind = kind
        self.joints = list(joints)
        n = len(self.joints)
        self.msg_type = COMMAND_TYPES[kind]
        self._stamp: Time | None = None
        self._dt = 0.0
        if kind == FLOAT64_MULTI_ARRAY:
            msg = Float64MultiArray()
            msg.layout.dim = [MultiArrayDimension(label="joints", size=n, stride=n)]
            msg.data = array.array("d", bytes(8 * n))
            self._vel = np.frombuffer(msg.data, dtype=np.float64)  # view on the message
            self._pos: Array | None = None
        elif kind == JOINT_TRAJECTORY:
            msg = JointTrajectory()
            msg.joint_names = list(self.joints)
            point = JointTrajectoryPoint()
            point.positions = array.array("d", bytes(8 * n))
            point.velocities = array.array("d", bytes(8 * n))
            msg.points = [point]
            self._vel = np.frombuffer(point.velocities, dtype=np.float64)
            self._pos = np.frombuffer(point.positions, dtype=np.float64)
            self._point = point
        else:
            msg = JointState()
            msg.name = list(self.joints)
            msg.position = array.array("d", bytes(8 * n))
            msg.velocity = array.array("d", bytes(8 * n))
            self._vel = np.frombuffer(msg.velocity, dtype=np.float64)
            self._pos = np.frombuffer(msg.position, dtype=np.float64)
            self._stamp = msg.header.stamp
        self.msg = msg
        self._wire: bytearray | None = None  # Float64MultiArray serialized, its data a view
        if kind == FLOAT64_MULTI_ARRAY:
            self._wire, self._wire_vel = _serialized_with_view(msg, n)

    def fill(self, q: Array, qdot: Array, dt: float, now: float) -> Any:
        """Write q (n,) [rad or m] and q' (n,) [rad/s or m/s] into the message; return it.

        Args:
            q: current joint positions in ``joints`` order.
            qdot: commanded joint velocities in ``joints`` order.
            dt: command period [s] (JointTrajectory: time_from_start and the q + q' dt step).
            now: time [s] for the JointState stamp.

        Raises:
            ValueError: q or qdot is not one value per joint (numpy would broadcast a single
                value to every joint).
        """
        n = self._vel.shape[0]
        if np.shape(qdot) != (n,) or np.shape(q) != (n,):
            raise ValueError(
                f"command for joints {self.joints} needs q and qdot of shape ({n},), got "
                f"{np.shape(q)} and {np.shape(qdot)}"
            )
        self._vel[:] = qdot
        if self._pos is not None:
            if self.kind == JOINT_TRAJECTORY:
                np.multiply(qdot, dt, out=self._pos)
                self._pos += q
                if dt != self._dt:
                    sec_to_stamp(dt, self._point.time_from_start)
                    self._dt = dt
            else:
                self._pos[:] = q
        if self._stamp is not None:
            sec_to_stamp(now, self._stamp)
        return self.msg

    def wire(self, q: Array, qdot: Array, dt: float, now: float) -> Any:
        """As :meth:`fill`, but what to publish: a Float64MultiArray as its serialized bytes.

        rclpy publishes bytes as they are (no conversion of a Python message, field by field,
        in the tick). The other kinds return the filled message.
        """
        if self._wire is None:
            return self.fill(q, qdot, dt, now)
        n = self._wire_vel.shape[0]
        if qdot.shape != (n,) or q.shape != (n,):  # arrays (np.shape would convert)
            self.fill(q, qdot, dt, now)  # raises the same error
        self._wire_vel[:] = qdot
        return bytes(self._wire)


def _serialized_with_view(msg: Float64MultiArray, n: int) -> tuple[bytearray, Array]:
    """``msg`` serialized (CDR), and a float64 view (n,) of its data in those bytes."""
    pattern = np.arange(1.0, n + 1.0) * np.pi  # values that occur nowhere else in the bytes
    copy = Float64MultiArray(layout=msg.layout, data=array.array("d", pattern))
    raw = bytearray(serialize_message(copy))
    at = raw.find(pattern.astype("<f8").tobytes()) if n else len(raw)
    if at < 0:
        raise RuntimeError("Float64MultiArray data not found in its serialized form")
    view = np.frombuffer(raw, dtype="<f8", count=n, offset=at)
    view[:] = 0.0
    return raw, view


__all__ = [
    "COMMAND_TYPES",
    "FLOAT64_MULTI_ARRAY",
    "JOINT_STATE",
    "JOINT_TRAJECTORY",
    "CommandMessage",
    "command_velocities",
    "joint_state_positions",
    "matrix_to_pose",
    "pose_arrays",
    "pose_stamped_arrays",
    "pose_to_matrix",
    "sec_to_stamp",
    "stamp_or_none",
    "stamp_to_sec",
    "twist_stamped_array",
]
