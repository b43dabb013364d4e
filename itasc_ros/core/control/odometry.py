"""The base in the world frame: its pose and twist from odometry (ROS-free).

With ``world_frame`` set (e.g. ``odom``), the robot's root link moves in that frame and an
odometry source (``nav_msgs/Odometry`` on ``~/odom`` in the node) says where it is: the base's
pose and twist are part of iTaSC's uncontrolled coordinates ``Xu``. A target given in the world
frame is then held fixed in the world: each tick it is placed in the root frame from the base's
pose at the joint state's instant, and the base's twist enters its feed-forward ``B Xu'`` as
the target's own does (:func:`place_in_base`).

An odometry message is checked whole and refused with a reason (the last good one is kept):
its frames (``header.frame_id`` the world frame, ``child_frame_id`` the root link or empty),
NaN/Inf or huge values, a zero quaternion, a stamp out of order or leaping ahead
(:class:`~itasc_ros.core.control.streams.StampOrder`), and a pose that jumped: farther from
where the last one and its twist put the base than ``max_target_speed`` /
``max_target_angular_speed`` allow over the time since the last accepted one (a relocalisation
is not a motion the arm should follow at once). That holds whether or not the odometry went
stale meanwhile: a pose 3 m away after a 0.3 s silence is refused as one 10 ms later would be.
Refusals past ``input_timeout`` leave the odometry stale: the controller then stops the robot as
for stale joint states. The next good message re-anchors the stream; a relocalisation by ``d``
[m] is taken once ``d / max_target_speed`` [s] have passed since the last accepted pose (the
robot stopped meanwhile).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ._target_kernels import BAD_POSITION, BAD_QUATERNION, extrapolate_pose
from ._target_kernels import pose_from_position_quat as _pose_from_position_quat
from .streams import HUGE, StampOrder

Array = NDArray[np.float64]

#: Slack on the jump check: a pose this far [m, rad] from the prediction is never a jump.
JUMP_SLACK = 1e-3


class Odometry:
    """The last good odometry: the base's pose and twist in the world frame.

    Attributes:
        pose: (4, 4) the root link's pose in the world frame (T_wb).
        twist: (6,) the root's twist in the world's axes: linear velocity of its origin
            [m/s], angular velocity [rad/s].
        stamp: reception time [s] of the last accepted message (-inf before the first).
        header: its header stamp [s] (NaN: unstamped).
        order: the header stamps' :class:`StampOrder`.
        has_state: a message was accepted.
        jumps: messages refused as a jump.
        behind: placements (:meth:`place`) of a base measured longer before the joint
            state's instant than the lead allowed (the odometry late: its motion since then
            only partly followed).
        behind_by: how long before the joint state's instant [s] the base was measured at
            the last of them (0.0: none yet).
        at: (4, 4) work array: the pose moved on to the joint state's instant (:meth:`place`).
    """

    def __init__(self) -> None:
        self.pose = np.eye(4)
        self.twist = np.zeros(6)
        self.stamp = -math.inf
        self.header = math.nan
        self.order = StampOrder()
        self.has_state = False
        self.jumps = 0
        self.behind = 0
        self.behind_by = 0.0
        self.at = np.eye(4)
        self._new = np.eye(4)  # work array: the pose of the message being taken
        self._body = np.zeros(6)  # work array: the message's twist in the base's axes
        self._guess = np.eye(4)  # work array: where the last pose and twist put the base

    def take(self, other: Odometry) -> None:
        """Go on from ``other``'s odometry (the same base, kept by a new controller)."""
        self.pose[:], self.twist[:] = other.pose, other.twist
        self.stamp, self.header, self.has_state = other.stamp, other.header, other.has_state
        self.order.take(other.order)

    def state_into(self, out: Array) -> None:
        """Write the (:data:`~.journal.ODOMETRY_SIZE`,) SNAPSHOT values to ``out``."""
        out[0], out[1], out[2] = self.has_state, self.stamp, self.header
        self.order.state_into(out[3:6])
        out[6:22] = self.pose.reshape(16)
        out[22:28] = self.twist
        out[28] = self.jumps

    def state_from(self, v: Array) -> None:
        """Set the odometry from its SNAPSHOT values (the inverse of :meth:`state_into`)."""
        self.has_state, self.stamp, self.header = bool(v[0]), float(v[1]), float(v[2])
        self.order.state_from(v[3:6])
        self.pose[:] = v[6:22].reshape(4, 4)
        self.twist[:] = v[22:28]
        self.jumps = int(v[28])

    def accept(
        self,
        values: Array,
        received: float,
        header_stamp: float | None,
        timeout: float,
        max_speed: float,
        max_angular_speed: float,
    ) -> str:
        """Take an odometry message; returns why it is refused ('' when taken).

        Args:
            values: (13,) position (3) [m], quaternion x y z w (4), linear (3) [m/s] and
                angular (3) [rad/s] velocity in the base's axes (``child_frame_id``'s, as
                ``nav_msgs/Odometry`` gives them).
            received: reception time [s] on the controller's clock.
            header_stamp: the message's stamp [s], or None.
            timeout: ``input_timeout`` [s].
            max_speed: ``max_target_speed`` [m/s]: a faster implied motion is a jump.
            max_angular_speed: ``max_target_angular_speed`` [rad/s].
        """
        if values.shape != (13,):
            return f"needs 13 values (position, quaternion, twist), got {values.shape[0]}"
        code = _pose_from_position_quat(values[:3], values[3:7], HUGE, self._new)
        if code == BAD_POSITION:
            return f"position must be 3 finite values of at most {HUGE:g} m: {values[:3]}"
        if code != 0:
            what = "not finite" if code == BAD_QUATERNION else "of zero norm"
            return f"orientation quaternion {values[3:7]} is {what}"
        body = self._body
        body[:] = values[7:]
        if not (np.abs(body) <= HUGE).all():
            return f"twist must be 6 finite values of at most {HUGE:g}: {body}"
        if not math.isfinite(received):
            return f"reception time {received!r} is not finite"
        why = self.order.check(header_stamp, received, timeout)
        if why:
            return why
        t = received if header_stamp is None else header_stamp
        if self.has_state:  # stale or not: the base cannot have gone faster than the limits
            why = self._jump(t, max_speed, max_angular_speed)
            if why:
                self.jumps += 1
                return why
        self.pose[:] = self._new
        rot = self.pose[:3, :3]
        self.twist[:3] = rot @ body[:3]
        self.twist[3:] = rot @ body[3:]
        self.stamp = float(received)
        self.header = math.nan if header_stamp is None else float(header_stamp)
        self.order.accept(header_stamp, received)
        self.has_state = True
        return ""

    def _jump(self, t: float, max_speed: float, max_angular_speed: float) -> str:
        """Why the new pose is a jump from the last one moved on to ``t`` [s] ('' if not)."""
        last = self.header if self.header == self.header else self.stamp
        dt = max(t - last, 0.0)
        extrapolate_pose(self.pose, self.twist, dt, self._guess)
        dist = math.dist(self._guess[:3, 3], self._new[:3, 3])
        cos = (np.trace(self._guess[:3, :3].T @ self._new[:3, :3]) - 1.0) / 2.0
        angle = math.acos(min(max(cos, -1.0), 1.0))
        if dist > max_speed * dt + JUMP_SLACK or angle > max_angular_speed * dt + JUMP_SLACK:
            return (
                f"pose jumped {dist:.3f} m and {angle:.3f} rad from where the last one and its "
                f"twist put the base {dt:.3f} s later (faster than max_target_speed "
                f"{max_speed} m/s / max_target_angular_speed {max_angular_speed} rad/s)"
            )
        return ""

    def place(self, instant: float, cap: float) -> Array:
        """(4, 4) the base's pose moved on by its twist to ``instant`` [s] (lead within ±cap).

        The base is measured at its header stamp (else its reception time); the lead to the
        joint state's instant is kept within ``cap`` [s]; a base measured longer before it
        is counted (:attr:`behind`). Returns :attr:`at` (updated).
        """
        at = self.header if self.header == self.header else self.stamp
        lead = instant - at
        if lead > cap:
            self.behind += 1
            self.behind_by = lead
            lead = cap
        elif lead < -cap:
            lead = -cap
        extrapolate_pose(self.pose, self.twist, lead, self.at)
        return self.at


@njit(cache=True, nogil=True)
def place_in_base(base, base_twist, pose_w, twist_w, feed_base, pose_b, twist_b):
    """A world target's pose (4, 4) and twist (6,) as seen from the moving base.

    ``pose_b = base^-1 pose_w``; the twist is the rate of ``pose_b`` in the base's axes: with
    ``R`` the base's rotation, ``d`` the target's offset from the base (world axes),
    ``v_b = R^T (v_t - v_base - w_base x d)`` and ``w_b = R^T (w_t - w_base)``. Without
    ``feed_base`` the base's twist is left out (the feedback alone then follows the base).

    Args:
        base: (4, 4) the base's pose in the world.
        base_twist: (6,) its twist (linear velocity of its origin, angular), world axes.
        pose_w: (4, 4) the target's pose in the world.
        twist_w: (6,) its twist in the world (its origin's velocity, angular), world axes.
        feed_base: include the base's twist.
        pose_b: (4, 4) out: the target in the base's frame.
        twist_b: (6,) out: its twist in the base's axes.
    """
    d0 = pose_w[0, 3] - base[0, 3]
    d1 = pose_w[1, 3] - base[1, 3]
    d2 = pose_w[2, 3] - base[2, 3]
    for i in range(3):  # R^T [R_t | d]
        for j in range(3):
            pose_b[i, j] = (
                base[0, i] * pose_w[0, j] + base[1, i] * pose_w[1, j] + (base[2, i] * pose_w[2, j])
            )
        pose_b[i, 3] = base[0, i] * d0 + base[1, i] * d1 + base[2, i] * d2
    pose_b[3, 0], pose_b[3, 1], pose_b[3, 2], pose_b[3, 3] = 0.0, 0.0, 0.0, 1.0
    v0, v1, v2 = twist_w[0], twist_w[1], twist_w[2]
    w0, w1, w2 = twist_w[3], twist_w[4], twist_w[5]
    if feed_base:
        bw0, bw1, bw2 = base_twist[3], base_twist[4], base_twist[5]
        v0 -= base_twist[0] + bw1 * d2 - bw2 * d1
        v1 -= base_twist[1] + bw2 * d0 - bw0 * d2
        v2 -= base_twist[2] + bw0 * d1 - bw1 * d0
        w0, w1, w2 = w0 - bw0, w1 - bw1, w2 - bw2
    for i in range(3):
        twist_b[i] = base[0, i] * v0 + base[1, i] * v1 + base[2, i] * v2
        twist_b[3 + i] = base[0, i] * w0 + base[1, i] * w1 + base[2, i] * w2


@njit(cache=True, nogil=True)
def world_of_base(base, base_twist, pose_b, twist_b, pose_w, twist_w):
    """The inverse of :func:`place_in_base` (with the base's twist): base frame -> world.

    Args:
        base: (4, 4) the base's pose in the world.
        base_twist: (6,) its twist, world axes.
        pose_b: (4, 4) a pose in the base's frame.
        twist_b: (6,) its twist in the base's axes (None-like zeros for a pose at rest).
        pose_w: (4, 4) out: the pose in the world.
        twist_w: (6,) out: its twist in the world's axes.
    """
    for i in range(3):
        for j in range(4):
            pose_w[i, j] = (
                base[i, 0] * pose_b[0, j] + base[i, 1] * pose_b[1, j] + (base[i, 2] * pose_b[2, j])
            )
        pose_w[i, 3] += base[i, 3]
    pose_w[3, 0], pose_w[3, 1], pose_w[3, 2], pose_w[3, 3] = 0.0, 0.0, 0.0, 1.0
    d0, d1, d2 = pose_w[0, 3] - base[0, 3], pose_w[1, 3] - base[1, 3], pose_w[2, 3] - base[2, 3]
    bw0, bw1, bw2 = base_twist[3], base_twist[4], base_twist[5]
    for i in range(3):
        twist_w[i] = base[i, 0] * twist_b[0] + base[i, 1] * twist_b[1] + base[i, 2] * twist_b[2]
        twist_w[3 + i] = (
            base[i, 0] * twist_b[3] + base[i, 1] * twist_b[4] + base[i, 2] * twist_b[5]
        )
    twist_w[0] += base_twist[0] + bw1 * d2 - bw2 * d1
    twist_w[1] += base_twist[1] + bw2 * d0 - bw0 * d2
    twist_w[2] += base_twist[2] + bw0 * d1 - bw1 * d0
    twist_w[3] += bw0
    twist_w[4] += bw1
    twist_w[5] += bw2


def warm_up_odometry() -> None:
    """Compile (or load) the kernels a world target's tick calls, outside any tick."""
    a, b, t = np.eye(4), np.eye(4), np.zeros(6)
    place_in_base(a, t, a, t, True, b, t.copy())
    world_of_base(a, t, a, t, b, t.copy())
    odo = Odometry()
    odo.accept(np.r_[0, 0, 0, 0, 0, 0, 1, np.zeros(6)].astype(float), 0.0, None, 1.0, 1.0, 1.0)
    odo.place(0.0, 0.1)


__all__ = ["JUMP_SLACK", "Odometry", "place_in_base", "warm_up_odometry", "world_of_base"]
