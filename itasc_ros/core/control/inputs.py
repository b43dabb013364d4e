"""The controller's inputs: joint states, target poses and target twists (ROS-free).

Each input is checked whole and refused with an :class:`~itasc_ros.core.errors.InputError`
naming the reason (the last good input is kept), then journaled. A target pose is a stream:
successive poses give the target's twist estimate, fed forward; a step (a jump, a first target,
a target after a pause) is approached along the straight-line reference
(:mod:`~itasc_ros.core.control.cartesian_reference`). Jog twists are in
:mod:`~itasc_ros.core.control.jogging`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import echo
from ..kinematics import spatial
from ._target_kernels import (
    BAD_POSITION,
    BAD_QUATERNION,
    ZERO_QUATERNION,
    cap_twist,
    filter_rate,
    pose_from_position_quat,
    stream_step,
)
from .journal import Code, stamp_value
from .journaling import Journaling
from .streams import HUGE, TargetStream, as_array, fresh, usable

Array = NDArray[np.float64]


class Inputs(Journaling):
    """Joint states, target poses and explicit target twists, taken or refused."""

    def set_joint_state(
        self,
        names: Sequence[str],
        positions: ArrayLike,
        received: float,
        header_stamp: float | None = None,
        robot_received: ArrayLike | None = None,
    ) -> None:
        """Accept a joint state, mapped by name (extra joints ignored).

        Args:
            names: joint names of the message.
            positions: one position per name [rad or m].
            received: reception time [s] (the clock of ``step``); staleness is measured
                from it.
            header_stamp: the message's own stamp [s] if it has one (not zero); checked
                against the last accepted one by :class:`StampOrder` (out of order, leaping ahead).
            robot_received: with ``robots``: each robot's own reception time [s] (g,), at most
                ``received``, for a state merged from the robots' latest ones; each robot's
                freshness is judged from its own (default: all ``received``).

        Raises:
            InputError: missing or repeated commanded joints, positions of commanded joints
                NaN/Inf or above :data:`HUGE`, a length mismatch, a non-finite reception
                stamp, a stamp out of order / leaping ahead, or robots' reception times that
                are not one finite time per robot at most ``received``; the last good state
                is kept.
        """
        timeout = self.config.input_timeout
        groups = self._robots
        robots = groups.check(received, robot_received, self._reject) if groups.names else None
        self._joints.accept(names, positions, received, header_stamp, timeout, self._reject)
        if robots is not None:
            groups.accept(robots)
            groups.joint_stamps(self._joints.stamps)
        if self.journal is not None:
            self._record_joint_state(self.journal, received)

    def set_target(
        self,
        constraint: str,
        frame: str,
        position: ArrayLike,
        quat_xyzw: ArrayLike,
        received: float,
        header_stamp: float | None = None,
        jump: bool = False,
    ) -> None:
        """Set a constraint's target pose; estimates the target twist from successive poses.

        Poses at most ``input_timeout`` apart are a stream: their finite differences, filtered
        with ``twist_filter_time_constant`` (starting from zero) and capped to
        ``max_target_speed`` / ``max_target_angular_speed``, are the target twist fed forward
        until ``input_timeout`` after the last pose, unless an explicit twist
        (:meth:`set_target_twist`) is more recent. Poses further apart, and poses that imply a
        target faster than those limits (counted: :meth:`target_jumps`), are jumps: the
        estimate restarts from zero.

        Args:
            constraint: name of a copy_pose/distance constraint without ``target_link``.
            frame: '' (or the root link) or a URDF link; transformed to the root with the
                current joint state.
            position: (3,) [m].
            quat_xyzw: (4,) orientation (x, y, z, w), normalised here.
            received: reception time [s].
            header_stamp: the message's stamp [s] if non-zero (used for the twist estimate
                and checked by :class:`StampOrder`: out of order, leaping ahead).
            jump: the pose is a jump, not part of a motion (e.g. the RViz marker snapped back
                to the effector): the twist estimate restarts from zero.

        Raises:
            InputError: unknown constraint or frame, NaN/Inf or huge (> :data:`HUGE`) position,
                NaN/Inf or zero (norm < 1e-6) quaternion, a stamp out of order / leaping ahead,
                a position farther from the root than :meth:`target_reach`; the target is
                unchanged. Other quaternions are normalised.
        """
        st = self._target_state(constraint)
        p = as_array(position, f"target of {constraint!r}: position", self._reject)
        qt = as_array(quat_xyzw, f"target of {constraint!r}: quaternion", self._reject)
        self._read_pose(constraint, st, p, qt, received)
        why = st.order.check(header_stamp, received, self.config.input_timeout)
        if why:
            raise self._reject(f"target of {constraint!r}: {why}")
        world = self._is_world(frame)
        pose = self._pose_in_reach(constraint, st, frame, world)
        if self.base_joints and not world:  # the robot's frame now, held in the world from here
            pose = self._in_world_now(constraint, frame, pose)
            world = True
        switch = st.has_pose and world != st.world  # root <-> world: a step in a new frame
        step = self._estimate_twist(st, pose, received, header_stamp, jump or switch)
        if jump or switch:  # e.g. the RViz marker snapped back to the effector: no reference
            st.ref.stop()
        if world != st.world:
            st.world = world
            st.twist_stamp = -math.inf  # an explicit twist was in the other frame's axes
        self._take_target(constraint, st, pose, step and not jump)
        t = float(received)
        st.pose[:] = pose
        st.stamp = t
        st.header = stamp_value(header_stamp)
        st.order.accept(header_stamp, t)
        st.has_pose = True
        if self.journal is not None:
            self._record_target(self.journal, constraint, frame, jump, p, qt)

    def _read_pose(
        self, constraint: str, st: TargetStream, p: Array, qt: Array, received: float
    ) -> None:
        """Write the pose of ``p`` (3,) [m] and ``qt`` (x, y, z, w) into ``st.new_pose``.

        Raises:
            InputError: not 3 and 4 finite values, a huge position, a zero quaternion or a
                non-finite reception time; nothing is written.
        """
        if p.shape != (3,):
            code = BAD_POSITION
        elif qt.shape != (4,):
            code = BAD_QUATERNION if usable(p) else BAD_POSITION
        else:  # compiled: validates and writes the pose in one call
            code = pose_from_position_quat(p, qt, HUGE, st.new_pose)
        if code == BAD_POSITION:
            raise self._reject(
                f"target of {constraint!r}: position must be 3 finite values of at most "
                f"{HUGE:g} m, got {p.tolist()}"
            )
        if code == BAD_QUATERNION:
            raise self._reject(
                f"target of {constraint!r}: quaternion (x, y, z, w) must be 4 "
                f"finite values, got {qt.tolist()}"
            )
        if not math.isfinite(received):
            raise self._reject(f"target of {constraint!r}: reception time {received!r} not finite")
        if code == ZERO_QUATERNION:
            raise self._reject(
                f"target of {constraint!r}: quaternion {qt.tolist()} has zero "
                "norm (identity is (0, 0, 0, 1))"
            )

    def _pose_in_reach(
        self, constraint: str, st: TargetStream, frame: str, world: bool = False
    ) -> Array:
        """``st.new_pose`` (4, 4) in ``frame``, in the stream's frame, checked against the reach.

        A pose in a link's frame is put in the root frame (with the current joint state); one
        in the world frame (``world``) stays there, its reach measured from where the base is.

        Raises:
            InputError: an unknown frame, a world target before any odometry, or a position
                beyond :meth:`target_reach`.
        """
        pose = st.new_pose  # (4, 4) rotation orthonormal by construction
        if world:
            if not self._odom.has_state:
                raise self._reject(
                    f"target of {constraint!r} in {frame!r} needs the base's odometry to place "
                    "it; none received yet"
                )
            base = self._odom.pose
            dist = math.dist(pose[:3, 3], base[:3, 3])
            return self._check_reach(constraint, st, dist, pose)
        ref = self._frame_pose(frame, f"target of {constraint!r}")
        if ref is not None:
            pose = ref @ pose
        dist = math.sqrt(pose[0, 3] ** 2 + pose[1, 3] ** 2 + pose[2, 3] ** 2)
        return self._check_reach(constraint, st, dist, pose)

    def _in_world_now(self, constraint: str, frame: str, pose: Array) -> Array:
        """A pose (4, 4) in the root frame, in the world where the base is now.

        With a commanded base a target in the robot's frame (the root or a link, as an RViz
        marker gives it) is placed in the world when it is received, as a link's frame is
        placed in the root with the current joint state: the base's own motion does not carry
        it along.

        Raises:
            InputError: no odometry yet.
        """
        if not self._odom.has_state:
            raise self._reject(
                f"target of {constraint!r} in {echo(frame) if frame else 'the root frame'} "
                "needs the base's odometry to be placed in the world (a commanded base); none "
                "received yet"
            )
        return self._base_now() @ pose

    def _check_reach(self, constraint: str, st: TargetStream, dist: float, pose: Array) -> Array:
        """``pose``, unless ``dist`` [m] from the root is beyond the reach (refused)."""
        if dist > st.reach:
            raise self._reject(
                f"target of {constraint!r}: {dist:.6g} m from {self.tree.root_link!r} is beyond "
                f"the robot's reach ({st.reach:.3f} m with target_reach_margin "
                f"{self.config.target_reach_margin} m)"
            )
        return pose

    def _estimate_twist(
        self,
        st: TargetStream,
        pose: Array,
        received: float,
        header_stamp: float | None,
        jump: bool,
    ) -> bool:
        """Update the stream's twist estimate with ``pose`` (4, 4) received at ``received`` [s].

        Returns:
            True when ``pose`` is a step (a jump, asked or too fast, a first pose or one after
            a pause): the estimate restarts from zero.
        """
        t_src = float(received) if header_stamp is None else float(header_stamp)
        prev_src = st.order.source
        t_prev = st.stamp if (header_stamp is None or prev_src is None) else prev_src
        dt = t_src - t_prev
        cfg = self.config
        if not jump and st.has_pose and 0.0 < dt <= cfg.input_timeout:
            # a jump (counted) or the estimate updated and capped, in one compiled call; the
            # filter starts from zero: a jump kicks gently
            jump = stream_step(
                pose, st.pose, dt, self._dt, cfg.max_target_speed,
                cfg.max_target_angular_speed, cfg.twist_filter_time_constant, st.rel, st.raw,
                st.estimate,
            )  # fmt: skip
            st.jumps += jump
        step = jump or not (st.has_pose and 0.0 <= dt <= cfg.input_timeout)
        if step:
            st.estimate[:] = 0.0
        return step

    def _take_target(self, name: str, st: TargetStream, pose: Array, step: bool) -> None:
        """Give the constraint its new target, at once within a smooth stream.

        A step (a jump, a first target, a target after a pause) or a target during a jog goes
        through the straight-line reference (:mod:`~itasc_ros.core.control.cartesian_reference`).
        """
        c = self.scene.get(name)
        if step and not st.ref.active and self.config.max_cartesian_speed > 0.0:
            start = self._effector_in(st, c)
            if start is not None and self._is_far(start, pose):
                st.ref.start(start, twist=self._effector_twist_in(st, c))
                self._give_pose(c, st, st.ref.pose)  # active from here, where it is
        if st.ref.active:
            st.ref.jogging = False  # a pose target ends a jog: approach it from here
            st.jog_stamp = -math.inf
            return
        self._give_pose(c, st, pose)

    def _is_far(self, a: Array, b: Array) -> bool:
        """True when pose ``b`` is more than a tick away from ``a`` at the Cartesian limits."""
        cfg = self.config
        dist = math.dist(a[:3, 3], b[:3, 3])
        angle = float(np.linalg.norm(spatial.so3_log(b[:3, :3] @ a[:3, :3].T)))
        return dist > cfg.max_cartesian_speed * self._dt or (
            angle > cfg.max_cartesian_angular_speed * self._dt
        )

    def set_target_twist(
        self,
        constraint: str,
        frame: str,
        twist: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Set the target's twist explicitly (feed-forward), valid for ``input_timeout``.

        Its linear and angular parts are each scaled down to ``max_target_speed`` /
        ``max_target_angular_speed`` (counted: :meth:`target_twists_capped`).

        Args:
            constraint: as in :meth:`set_target`.
            frame: axes of the twist: '' (root) or a URDF link (rotated to the root).
            twist: (6,) linear velocity of the target origin [m/s], angular velocity [rad/s].
            received: reception time [s].
            header_stamp: the message's stamp [s] if non-zero, checked by
                :class:`StampOrder` (out of order, leaping ahead).

        Raises:
            InputError: unknown constraint or frame, not 6 finite values of at most
                :data:`HUGE`, a stamp out of order / leaping ahead; the twist is unchanged.
        """
        st = self._target_state(constraint)
        what = f"twist of {constraint!r}"
        tw_msg = self._twist_arg(what, twist, received)
        tw = self._twist_in_stream(what, st, tw_msg, frame, received, header_stamp)
        cfg = self.config
        new = st.aimed_twist  # a work array here (the tick's aim rewrites it)
        new[:] = tw
        if cap_twist(new, cfg.max_target_speed, cfg.max_target_angular_speed):
            st.capped += 1
        t = float(received) if header_stamp is None else float(header_stamp)
        dt = t - st.twist_time
        if 0.0 < dt <= cfg.input_timeout and fresh(received - st.twist_stamp, cfg.input_timeout):
            tau = cfg.twist_filter_time_constant
            filter_rate(new, st.twist, dt, dt / (tau + dt), st.accel)
        else:  # a first twist, or one after a pause: no change rate yet
            st.accel[:] = 0.0
        st.twist_time = t
        st.twist[:] = new
        st.twist_stamp = float(received)
        st.twist_order.accept(header_stamp, received)
        if self.journal is not None:
            self._record_twist(
                self.journal, Code.TWIST, constraint, frame, tw_msg, received, header_stamp
            )

    def _twist_in_stream(
        self,
        what: str,
        st: TargetStream,
        tw: Array,
        frame: str,
        received: float,
        header_stamp: float | None,
    ) -> Array:
        """A target's twist (6,) in ``frame``'s axes, in its stream's (the root's or the world's).

        Between the root's axes and the world's it turns by the base's rotation now.

        Raises:
            InputError: as :meth:`_twist_in_root`; a twist in the world frame before any
                odometry.
        """
        if not self._is_world(frame):
            tw = self._twist_in_root(what, st.twist_order, tw, frame, received, header_stamp)
            if not st.world:
                return tw
            rot = self._odom.pose[:3, :3]
            return np.concatenate([rot @ tw[:3], rot @ tw[3:]])
        tw = self._twist_in_root(what, st.twist_order, tw, "", received, header_stamp)
        if st.world:
            return tw
        if not self._odom.has_state:
            raise self._reject(f"{what} in {frame!r} needs the base's odometry; none received yet")
        rot = self._odom.pose[:3, :3]
        return np.concatenate([rot.T @ tw[:3], rot.T @ tw[3:]])

    def set_odometry(
        self,
        frame: str,
        child: str,
        values: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Take the base's odometry: its pose and twist in the world frame (``world_frame``).

        Args:
            frame: the frame of the pose (``header.frame_id``): must be ``world_frame``.
            child: the moving frame (``child_frame_id``): '' or the URDF's root link.
            values: (13,) position [m], quaternion x y z w, linear [m/s] and angular [rad/s]
                velocity in the child's axes (as ``nav_msgs/Odometry``).
            received: reception time [s].
            header_stamp: the message's stamp [s] if non-zero (checked for order).

        Raises:
            InputError: no ``world_frame`` set, a wrong frame, bad values, a stamp out of order
                or leaping ahead, a jump (see :mod:`~itasc_ros.core.control.odometry`); the
                last good odometry is kept.
        """
        cfg, root = self.config, self.base_root
        if not cfg.world_frame:
            raise self._reject("odometry received but world_frame is not set (a fixed base)")
        if frame != cfg.world_frame:
            raise self._reject(
                f"odometry: header.frame_id {echo(frame)} is not the world frame "
                f"{cfg.world_frame!r} (world_frame)"
            )
        if child not in ("", root):
            raise self._reject(
                f"odometry: child_frame_id {echo(child)} is not the URDF's root link {root!r}"
            )
        v = as_array(values, "odometry", self._reject)
        why = self._odom.accept(
            v, received, header_stamp, cfg.input_timeout, cfg.max_target_speed,
            cfg.max_target_angular_speed,
        )  # fmt: skip
        if why:
            raise self._reject(f"odometry: {why}")
        if self.journal is not None:
            self._record_odometry(self.journal, v)

    def take_odometry(self, old: Inputs) -> None:
        """Go on from ``old``'s odometry (a new model of the same robot and world frame)."""
        if old.config.world_frame != self.config.world_frame:
            return
        new, was = self._odom, old._odom
        new.pose[:], new.twist[:] = was.pose, was.twist
        new.stamp, new.header, new.has_state = was.stamp, was.header, was.has_state
        new.order.source, new.order.received = was.order.source, was.order.received
        new.order.offset = was.order.offset

    # ------------------------------------------------------------------------- read-outs
    def given_target(self, constraint: str) -> tuple[str, Array] | None:
        """The constraint's target pose (4, 4) as given, and its frame.

        Returns:
            ``(frame, pose)``: '' (the root) or ``world_frame``; None before the first pose.
        """
        st = self._target_state(constraint)
        if not st.has_pose:
            return None
        return (self.config.world_frame if st.world else ""), st.pose.copy()

    def odometry(self) -> tuple[Array, Array, float] | None:
        """The base's pose (4, 4) and twist (6,) in the world and their reception time [s].

        None before the first odometry accepted. The twist is in the world's axes (linear
        velocity of the root's origin [m/s], angular [rad/s]).
        """
        odom = self._odom
        if not odom.has_state:
            return None
        return odom.pose.copy(), odom.twist.copy(), odom.stamp

    @property
    def odometry_jumps(self) -> int:
        """Odometry messages refused as a jump of the base's pose."""
        return self._odom.jumps

    def target_stamp(self, constraint: str) -> float:
        """Reception time [s] of the constraint's last target pose (-inf before the first)."""
        return self._target_state(constraint).stamp

    def target_jumps(self, constraint: str) -> int:
        """Poses of the constraint's target that implied a speed above the limits (jumps)."""
        return self._target_state(constraint).jumps

    def target_twists_capped(self, constraint: str) -> int:
        """Explicit twists of the constraint's target scaled down to the speed limits."""
        return self._target_state(constraint).capped

    def target_reach(self, constraint: str) -> float:
        """Largest distance [m] of the constraint's target from the root (farther: refused)."""
        return self._target_state(constraint).reach

    def fed_forward_twist(self, constraint: str) -> Array:
        """(6,) the target twist the last ``step`` fed forward (root frame) [m/s, rad/s]."""
        return self._target_state(constraint).applied.copy()

    def target_twist_estimate(self, constraint: str) -> Array:
        """(6,) the filtered twist estimated from successive target poses (root frame)."""
        return self._target_state(constraint).estimate.copy()


__all__ = ["Inputs"]
