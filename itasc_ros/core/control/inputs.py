"""The controller's inputs: joint states, target poses, twists, jogs and odometry (ROS-free).

:class:`Inputs` keeps what the controller has received: the joint state
(:class:`~itasc_ros.core.control.joint_input.JointStateInput`), each robot's freshness
(:class:`~itasc_ros.core.control.robot_groups.RobotGroups`), the base's odometry, and one
:class:`~itasc_ros.core.control.streams.TargetStream` per constraint that takes a target. Each
input is checked whole and refused with an :class:`~itasc_ros.core.errors.InputError` naming
the reason (counted; the last good input is kept), then journaled. A target pose is a stream:
successive poses give the target's twist estimate, fed forward; a step (a jump, a first target,
a target after a pause) is approached along the straight-line reference
(:mod:`~itasc_ros.core.control.cartesian_reference`). A jog twist is valid for
``input_timeout``, as MoveIt Servo's: it moves the stream's reference at each tick
(:mod:`~itasc_ros.core.control.aim`). It also answers the look-ups every input and the tick
make: a constraint's stream, a frame's pose, the effector's pose, a pose given to a constraint
in its stream's frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled_call import entry_point
from ..constraints import Constraint
from ..errors import InputError, ItascError, TargetNotSet, echo
from ..kinematics import spatial
from ._input_kernels import REFUSED, SMOOTH, STEP, take_target_pose
from ._packed import TA_SIZE, TARGET_SIZE
from ._target_kernels import (
    BAD_POSITION,
    BAD_QUATERNION,
    ZERO_QUATERNION,
    cap_twist,
    filter_rate,
    pose_from_position_quat,
    stream_step,
)
from .joint_input import JointStateInput
from .journal import Code, stamp_value
from .model_fit import FittedModel
from .odometry import Odometry, place_in_base, world_of_base
from .recorder import NO_ROOM, Recorder
from .robot_groups import RobotGroups
from .streams import F8, HUGE, StampOrder, TargetStream, as_array, fresh, usable

Array = NDArray[np.float64]

_REST = np.zeros(6)  # (6,) a twist at rest
_REST.flags.writeable = False


class Inputs:
    """What the controller has received, each input taken or refused.

    Args:
        model: the fitted model (its configuration, tree and scene are read at each input).
        recorder: where each accepted input is recorded (while it has a journal).
        last_command: the last command (n,) [rad/s or m/s], or None at rest: a step's
            straight-line reference starts with the effector's twist.

    Attributes:
        joints: the last good joint state.
        robots: each robot's freshness (``robots``; none: a single robot).
        odom: the base's last good odometry.
        targets: one stream per constraint that takes a target, by name (config order).
        last_rejection: the reason of the latest refused input ('' before the first).
        rejections: inputs refused so far.
    """

    def __init__(
        self,
        model: FittedModel,
        recorder: Recorder,
        last_command: Callable[[], Array | None],
    ) -> None:
        self._model = model
        self._recorder = recorder
        self._last_command = last_command
        cfg = model.config
        names = [c.name for c in cfg.constraints if c.takes_target]
        #: (k, TARGET_SIZE) the target streams' packed states, one row each (the tick's look
        #: judges them all in one compiled call)
        self.stream_states = np.zeros((len(names), TARGET_SIZE))
        #: (k, TA_SIZE) their arrays a tick's record reads (pose, reference pose, applied
        #: twist), one row each
        self.stream_arrays = np.zeros((len(names), TA_SIZE))
        self.targets = {
            name: TargetStream(self.stream_states[i], self.stream_arrays[i])
            for i, name in enumerate(names)
        }
        self._stream_index = {name: i for i, name in enumerate(self.targets)}
        # take_target_pose's one variant (its explicit signature), called without dispatch
        self._take_pose = entry_point(take_target_pose)
        self.set_reach()
        self.joints = JointStateInput(model.tree, model.q_full, len(model.base_joints))
        self.robots = RobotGroups(cfg.robots, model.joint_names)  # each one's freshness
        self.odom = Odometry()  # the base in world_frame (used once a target is given there)
        self.last_rejection = ""
        self.rejections = 0

    def set_reach(self) -> None:
        """Each target's largest distance from the root [m] (see ``target_reach_margin``)."""
        for name, st in self.targets.items():
            st.reach = self._model.target_reach(name)

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
        timeout = self._model.config.input_timeout
        groups, js, recorder = self.robots, self.joints, self._recorder
        robots = groups.check(received, robot_received, self.reject) if groups.names else None
        # the record written by the compiled acceptance when it can be (one robot's stamp)
        whole = robots is None and js.whole
        buf, at = recorder.room(2 + js.q.shape[0]) if whole else (NO_ROOM, -1)
        try:
            recorded = js.accept(
                names, positions, received, header_stamp, timeout, self.reject, buf, at
            )
        except InputError:
            recorder.release(at)
            raise
        if robots is not None:
            groups.accept(robots)
            groups.joint_stamps(js.stamps)
        if not recorded and recorder.journal is not None:
            recorder.release(at)
            recorder.joint_state(received, js.header, js.all_positions(), groups.stamp)

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
        st = self.targets.get(constraint)
        if (
            st is not None
            and not jump
            and not st.world
            and (not frame or frame == self._model.tree.root_link)
            and not self._model.base_joints
            and type(position) is np.ndarray
            and type(quat_xyzw) is np.ndarray
            and position.dtype is F8
            and quat_xyzw.dtype is F8
            and position.shape == (3,)
            and quat_xyzw.shape == (4,)
            and type(received) is float
            and (header_stamp is None or type(header_stamp) is float)
        ):  # a root-frame pose: taken in one compiled call, else refused below with its reason
            cfg, stamped = self._model.config, header_stamp is not None
            buf, at = self._recorder.room(12)  # its record, written once accepted
            # a pose within the stream goes to the constraint in the same call (as give_pose)
            # while no reference leads it
            target = self._model.scene.get(constraint).target  # type: ignore[attr-defined]
            dest = target.pose
            give = not st.ref.active and target.has_pose and dest.flags.c_contiguous
            taken = self._take_pose(
                position, quat_xyzw, HUGE, st.s, received, header_stamp if stamped else 0.0,
                stamped, cfg.input_timeout, st.reach, self._model.dt, cfg.max_target_speed,
                cfg.max_target_angular_speed, cfg.twist_filter_time_constant, st.new_pose,
                st.pose, st.rel, st.raw, st.estimate, self._stream_index[constraint], buf, at,
                dest if give else st.new_pose, give,
            )  # fmt: skip
            if taken == SMOOTH and give:
                return
            if taken != REFUSED:
                self._take_target(constraint, st, st.new_pose, taken == STEP)
                return
            self._recorder.release(at)
        st = self.target_state(constraint)
        p = as_array(position, "target of %r: position", self.reject, constraint)
        qt = as_array(quat_xyzw, "target of %r: quaternion", self.reject, constraint)
        self._read_pose(constraint, st, p, qt, received)
        why = st.order.check(header_stamp, received, self._model.config.input_timeout)
        if why:
            raise self.reject(f"target of {constraint!r}: {why}")
        world = self.is_world(frame)
        pose = self._pose_in_reach(constraint, st, frame, world)
        if (
            self._model.base_joints and not world
        ):  # the robot's frame now, held in the world from here
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
        if self._recorder.journal is not None:
            index, code = self._stream_index[constraint], self.frame_code(frame)
            self._recorder.target(index, st.stamp, st.header, code, jump, p, qt)

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
            raise self.reject(
                f"target of {constraint!r}: position must be 3 finite values of at most "
                f"{HUGE:g} m, got {p.tolist()}"
            )
        if code == BAD_QUATERNION:
            raise self.reject(
                f"target of {constraint!r}: quaternion (x, y, z, w) must be 4 "
                f"finite values, got {qt.tolist()}"
            )
        if not math.isfinite(received):
            raise self.reject(f"target of {constraint!r}: reception time {received!r} not finite")
        if code == ZERO_QUATERNION:
            raise self.reject(
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
            if not self.odom.has_state:
                raise self.reject(
                    f"target of {constraint!r} in {frame!r} needs the base's odometry to place "
                    "it; none received yet"
                )
            base = self.odom.pose
            dist = math.dist(pose[:3, 3], base[:3, 3])
            return self._check_reach(constraint, st, dist, pose)
        ref = self._frame_pose(frame, "target of %r", constraint)
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
        if not self.odom.has_state:
            raise self.reject(
                f"target of {constraint!r} in {echo(frame) if frame else 'the root frame'} "
                "needs the base's odometry to be placed in the world (a commanded base); none "
                "received yet"
            )
        return self.base_now() @ pose

    def _check_reach(self, constraint: str, st: TargetStream, dist: float, pose: Array) -> Array:
        """``pose``, unless ``dist`` [m] from the root is beyond the reach (refused)."""
        if dist > st.reach:
            raise self.reject(
                f"target of {constraint!r}: {dist:.6g} m from {self._model.tree.root_link!r} is "
                "beyond "
                f"the robot's reach ({st.reach:.3f} m with target_reach_margin "
                f"{self._model.config.target_reach_margin} m)"
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
        cfg = self._model.config
        if not jump and st.has_pose and 0.0 < dt <= cfg.input_timeout:
            # a jump (counted) or the estimate updated and capped, in one compiled call; the
            # filter starts from zero: a jump kicks gently
            jump = stream_step(
                pose, st.pose, dt, self._model.dt, cfg.max_target_speed,
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
        c = self._model.scene.get(name)
        if step and not st.ref.active and self._model.config.max_cartesian_speed > 0.0:
            start = self.effector_in(st, c)
            if start is not None and self._is_far(start, pose):
                st.ref.start(start, twist=self.effector_twist_in(st, c))
                self.give_pose(c, st, st.ref.pose)  # active from here, where it is
        if st.ref.active:
            st.ref.end_jog()  # a pose target ends a jog: approach it from here
            st.jog_stamp = -math.inf
            return
        self.give_pose(c, st, pose)

    def _is_far(self, a: Array, b: Array) -> bool:
        """True when pose ``b`` is more than a tick away from ``a`` at the Cartesian limits."""
        cfg = self._model.config
        dist = math.dist(a[:3, 3], b[:3, 3])
        angle = float(np.linalg.norm(spatial.so3_log(b[:3, :3] @ a[:3, :3].T)))
        return dist > cfg.max_cartesian_speed * self._model.dt or (
            angle > cfg.max_cartesian_angular_speed * self._model.dt
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
        st = self.target_state(constraint)
        what = f"twist of {constraint!r}"
        tw_msg = self._twist_arg(what, twist, received)
        tw = self._twist_in_stream(what, st, tw_msg, frame, received, header_stamp)
        cfg = self._model.config
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
        if self._recorder.journal is not None:
            index, code = self._stream_index[constraint], self.frame_code(frame)
            self._recorder.twist(Code.TWIST, index, code, tw_msg, received, header_stamp)

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
        if not self.is_world(frame):
            tw = self._twist_in_root(what, st.twist_order, tw, frame, received, header_stamp)
            if not st.world:
                return tw
            rot = self.odom.pose[:3, :3]
            return np.concatenate([rot @ tw[:3], rot @ tw[3:]])
        tw = self._twist_in_root(what, st.twist_order, tw, "", received, header_stamp)
        if st.world:
            return tw
        if not self.odom.has_state:
            raise self.reject(f"{what} in {frame!r} needs the base's odometry; none received yet")
        rot = self.odom.pose[:3, :3]
        return np.concatenate([rot.T @ tw[:3], rot.T @ tw[3:]])

    def set_jog_twist(
        self,
        constraint: str,
        frame: str,
        twist: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Jog the constraint's effector with a twist, valid for ``input_timeout`` (as Servo).

        A virtual target starts where the effector is and moves with the twist (its change
        within ``max_cartesian_acceleration``, its size within ``max_cartesian_speed``, and the
        angular pair); when the twists stop, it decelerates to rest and stays there.

        Args:
            constraint: a constraint that takes a target (the node uses the first).
            frame: axes of the twist: '' (root) or a URDF link (rotated to the root).
            twist: (6,) linear [m/s] and angular [rad/s] velocity.
            received: reception time [s].
            header_stamp: the message's stamp [s] if non-zero (checked for order).

        Raises:
            InputError: as ``set_target_twist``; no joint state yet (the jog starts from
                the effector's pose).
        """
        st = self.target_state(constraint)
        what = f"jog of {constraint!r}"
        if self._model.base_joints:
            raise self.reject(
                f"{what}: jogging moves the effector in the robot's frame, which a commanded "
                f"base (base_kind {self._model.config.base_kind!r}) moves too; send targets in "
                f"{self._model.config.world_frame!r} instead"
            )
        tw_msg = self._twist_arg(what, twist, received)
        c = self._model.scene.get(constraint)
        if self.effector_pose(c) is None:
            raise self.reject(f"{what} needs a joint state and an effector")
        tw = self._twist_in_root(what, st.jog_order, tw_msg, frame, received, header_stamp)
        timeout = self._model.config.input_timeout
        st.jog_valid = timeout
        st.jog_budget = min(st.jog_budget + self._jog_pay(st, received, header_stamp), timeout)
        st.jog[:] = tw
        st.jog_stamp = float(received)
        st.jog_order.accept(header_stamp, received)
        if st.world:  # a jog moves the effector in the base's frame: the stream leaves the world
            st.world = False
            st.ref.stop()
            st.has_pose = False
            st.twist_stamp = -math.inf
        if not c.has_target:  # jogging without a target so far: hold the effector first
            pose = self.effector_pose(c)
            if pose is not None:
                c.set_target(pose, check=False)
        if self._recorder.journal is not None:
            index, code = self._stream_index[constraint], self.frame_code(frame)
            self._recorder.twist(Code.JOG, index, code, tw_msg, received, header_stamp)

    def _jog_pay(self, st: TargetStream, received: float, header_stamp: float | None) -> float:
        """How long [s] the reference may move for this jog twist (its share of the stream).

        Each twist pays the time since the previous one on the stream's own clock: its header
        stamps when both are stamped and within ``input_timeout`` of each other, else the
        reception times' average period since the stream began (DDS delivers in bursts); the
        first twist of a stream pays one control period. So the effector moves v t for t the
        stream's length whatever the delivery (bursts, a lost message, a late callback), late
        twists catching up, and stops then, not ``input_timeout`` later.
        """
        timeout = self._model.config.input_timeout
        gap = float(received) - st.jog_stamp
        if 0.0 <= gap <= timeout:  # the stream goes on: its average period since it began
            st.jog_count += 1
            st.jog_period = (float(received) - st.jog_start) / (st.jog_count - 1)
        else:  # a new stream by its reception times
            st.jog_start, st.jog_count, st.jog_period = float(received), 1, 0.0
        last = st.jog_order.source
        if header_stamp is not None and last is not None:
            step = float(header_stamp) - last
            if 0.0 <= step <= timeout:
                if st.jog_count == 1:
                    st.jog_late += 1  # the stream went on, but reached us too late
                return step
        return st.jog_period or self._model.dt

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
        cfg, root = self._model.config, self._model.base_root
        if not cfg.world_frame:
            raise self.reject("odometry received but world_frame is not set (a fixed base)")
        if frame != cfg.world_frame:
            raise self.reject(
                f"odometry: header.frame_id {echo(frame)} is not the world frame "
                f"{cfg.world_frame!r} (world_frame)"
            )
        if child not in ("", root):
            raise self.reject(
                f"odometry: child_frame_id {echo(child)} is not the URDF's root link {root!r}"
            )
        v = as_array(values, "odometry", self.reject)
        why = self.odom.accept(
            v, received, header_stamp, cfg.input_timeout, cfg.max_target_speed,
            cfg.max_target_angular_speed,
        )  # fmt: skip
        if why:
            raise self.reject(f"odometry: {why}")
        if self._recorder.journal is not None:
            self._recorder.odometry(self.odom.stamp, self.odom.header, v)

    def take_odometry(self, old: Inputs) -> None:
        """Go on from ``old``'s odometry (a new model of the same robot and world frame)."""
        if old._model.config.world_frame != self._model.config.world_frame:
            return
        self.odom.take(old.odom)

    # ------------------------------------------------------------------------- frames

    @property
    def feed_base(self) -> bool:
        """Feed the base's twist forward into world targets: a base moved by others only.

        A commanded base's motion is the solve's own (its virtual joints' columns of ``A``);
        fed forward too, it would count twice.
        """
        return self._model.config.feed_base_twist and not self._model.base_joints

    def is_world(self, frame: str) -> bool:
        """True when ``frame`` is the world frame (``world_frame``, when set)."""
        return bool(frame) and frame == self._model.config.world_frame

    def _frame_pose(self, frame: str, what: str, *args: object) -> Array | None:
        """Pose (4, 4) of a URDF link in the root frame at the current state; None = root.

        ``what % args`` (``what`` without ``args``) names the input in a refusal (formatted
        only then).
        """
        if not frame or frame == self._model.tree.root_link:
            return None
        if args:
            what = what % args
        try:
            idx = self._model.tree.link_index(frame)
        except ItascError:
            world = self._model.config.world_frame
            raise self.reject(
                f"{what} frame {echo(frame)} is not a URDF link"
                + (f" nor the world frame {world!r}" if world else "")
                + f"; use '' or {self._model.tree.root_link!r} for the root"
                + (f", {world!r} for the world" if world else "")
                + ", or one of: "
                + ", ".join(self._model.tree.link_names)
            ) from None
        if not self.joints.has_state:
            raise self.reject(
                f"{what} in frame {echo(frame)} needs a joint state to transform it "
                f"to {self._model.tree.root_link!r}; none received yet"
            )
        self._model.tree.compute(self.joints.q)
        return self._model.tree.pose_ref(idx).copy()

    def effector_pose(self, c: Constraint) -> Array | None:
        """The constraint's effector pose (4, 4) now, or None (no effector, no joint state)."""
        link = c.effector_link
        if link is None or not self.joints.has_state:
            return None
        return self._model.tree.forward_kinematics(self.joints.q, link)

    def base_now(self) -> Array:
        """(4, 4) the base's pose in the world at the joint state's instant (odometry)."""
        js = self.joints
        measured = js.header if js.header == js.header else js.stamp
        return self.odom.place(measured, 0.5 * self._model.config.input_timeout)

    def effector_in(self, st: TargetStream, c: Constraint) -> Array | None:
        """The effector's pose (4, 4) in ``st``'s frame (the root's, or the world's), or None."""
        pose = self.effector_pose(c)
        if pose is None or not st.world:
            return pose
        world_of_base(self.base_now(), self.odom.twist, pose, _REST, st.placed, st.placed_twist)
        return st.placed.copy()

    def effector_twist_in(self, st: TargetStream, c: Constraint) -> Array | None:
        """The effector's twist (6,) in ``st``'s frame from the last command, or None."""
        twist = self._effector_twist(c)
        if not st.world:
            return twist
        pose = self.effector_pose(c)
        if pose is None:
            return None
        moving = _REST if twist is None else twist
        world_of_base(self.base_now(), self.odom.twist, pose, moving, st.placed, st.placed_twist)
        return st.placed_twist.copy()

    def give_pose(self, c: Constraint, st: TargetStream, pose: Array) -> None:
        """Set the target pose (4, 4) of ``st``'s constraint, in the stream's frame.

        A root-frame stream sets the constraint; a world-frame one keeps it and places it in
        the base from where the base is now (each tick places it again:
        :class:`~itasc_ros.core.control.aim.TargetAim`).
        """
        if st.world:
            st.world_target[:] = pose
            place_in_base(
                self.base_now(), self.odom.twist, pose, st.world_twist,
                self.feed_base, st.placed, st.placed_twist,
            )  # fmt: skip
            c.set_target(st.placed, check=False)
        else:
            c.set_target(pose, check=False)

    def give_twist(self, c: Constraint, st: TargetStream, twist: Array | None) -> None:
        """Set the target twist (6,) (None: at rest) of ``st``'s constraint, in its frame."""
        if st.world:
            if twist is None:
                st.world_twist[:] = 0.0
            else:
                st.world_twist[:] = twist
        else:
            c.set_target_twist(twist, check=False)  # the controller's own: checked when taken

    def _effector_twist(self, c: Constraint) -> Array | None:
        """The twist (6,) the last command gives the constraint's effector (root frame), or None.

        None: no effector, no joint state, or at rest.
        """
        link = c.effector_link
        qdot = self._last_command()
        if link is None or not self.joints.has_state or qdot is None:
            return None
        return self._model.tree.jacobian(self.joints.q, link) @ qdot

    def frame_code(self, frame: str) -> int:
        """A frame as journaled: -1 the root ('' or its name), -2 the world, else a link index."""
        if not frame or frame == self._model.tree.root_link:
            return -1
        if self.is_world(frame):
            return -2
        return self._model.tree.link_index(frame)

    # ------------------------------------------------------------------------- checks

    def reject(self, reason: str) -> InputError:
        """Count a refused input; returns the :class:`InputError` to raise."""
        self.last_rejection = reason
        self.rejections += 1
        return InputError(reason)

    def target_state(self, constraint: str) -> TargetStream:
        """The target stream of ``constraint``.

        Raises:
            InputError: the constraint takes no target (naming those that do).
        """
        st = self.targets.get(constraint)  # a stream for each constraint that takes a target
        if st is None:
            raise self.reject(
                f"constraint {echo(constraint)} takes no target pose; constraints with a target "
                f"are: {', '.join(self._model.pose_constraints) or '(none)'}"
            )
        return st

    def _twist_arg(self, what: str, twist: ArrayLike, received: float) -> Array:
        """A twist argument (6,) checked: 6 finite values of at most HUGE, a finite time.

        Raises:
            InputError: naming ``what``.
        """
        tw = as_array(twist, what, self.reject)
        if tw.shape != (6,) or not usable(tw):
            raise self.reject(
                f"{what} must be 6 finite values of at most {HUGE:g}, got {tw.tolist()}"
            )
        if not math.isfinite(received):
            raise self.reject(f"{what}: reception time {received!r} not finite")
        return tw

    def _twist_in_root(
        self,
        what: str,
        order: StampOrder,
        tw: Array,
        frame: str,
        received: float,
        header_stamp: float | None,
    ) -> Array:
        """A twist (6,) given in the axes of ``frame`` ('' or a link), in the root's axes.

        Args:
            what: the input, for the messages (e.g. "jog of 'ee'").
            order: the header stamps of its stream; ``header_stamp`` [s] is checked against
                them (accepting it is the caller's).
            tw: (6,) the twist as received [m/s, rad/s].
            frame: its axes.
            received: reception time [s].
            header_stamp: the message's stamp [s], or None.

        Raises:
            InputError: a stamp out of order / leaping ahead, an unknown frame.
        """
        why = order.check(header_stamp, received, self._model.config.input_timeout)
        if why:
            raise self.reject(f"{what}: {why}")
        ref = self._frame_pose(frame, what)
        if ref is None:
            return tw
        r = ref[:3, :3]
        return np.concatenate([r @ tw[:3], r @ tw[3:]])

    # ------------------------------------------------------------------------- read-outs

    def poses(self, constraint: str) -> tuple[Array, Array | None]:
        """Effector pose and target pose (4, 4) in the root frame at the current state.

        The target is None when the constraint has no target pose yet; both are the identity
        and None for a type without an effector (e.g. joint_value).
        """
        c = self._model.constraint(constraint)
        link = c.effector_link
        if link is None:
            return np.eye(4), None
        eff = self._model.tree.forward_kinematics(self.joints.q, link)
        st = self.targets.get(constraint)
        if st is not None and st.has_pose and not st.world:  # the target given, not the ref
            return eff, st.pose.copy()
        try:
            return eff, c.target_pose(self._model.tree, self.joints.q)
        except TargetNotSet:
            return eff, None

    def given_target(self, constraint: str) -> tuple[str, Array] | None:
        """The constraint's target pose (4, 4) as given, and its frame.

        Returns:
            ``(frame, pose)``: '' (the root) or ``world_frame``; None before the first pose.
        """
        st = self.target_state(constraint)
        if not st.has_pose:
            return None
        return (self._model.config.world_frame if st.world else ""), st.pose.copy()

    def odometry(self) -> tuple[Array, Array, float] | None:
        """The base's pose (4, 4) and twist (6,) in the world and their reception time [s].

        None before the first odometry accepted. The twist is in the world's axes (linear
        velocity of the root's origin [m/s], angular [rad/s]).
        """
        odom = self.odom
        if not odom.has_state:
            return None
        return odom.pose.copy(), odom.twist.copy(), odom.stamp

    def target_stamp(self, constraint: str) -> float:
        """Reception time [s] of the constraint's last target pose (-inf before the first)."""
        return self.target_state(constraint).stamp

    def target_jumps(self, constraint: str) -> int:
        """Poses of the constraint's target that implied a speed above the limits (jumps)."""
        return self.target_state(constraint).jumps

    def target_twists_capped(self, constraint: str) -> int:
        """Explicit twists of the constraint's target scaled down to the speed limits."""
        return self.target_state(constraint).capped

    def target_reach(self, constraint: str) -> float:
        """Largest distance [m] of the constraint's target from the root (farther: refused)."""
        return self.target_state(constraint).reach

    def fed_forward_twist(self, constraint: str) -> Array:
        """(6,) the target twist the last ``step`` fed forward (root frame) [m/s, rad/s]."""
        return self.target_state(constraint).applied.copy()

    def target_twist_estimate(self, constraint: str) -> Array:
        """(6,) the filtered twist estimated from successive target poses (root frame)."""
        return self.target_state(constraint).estimate.copy()

    def jog_late_twists(self, constraint: str) -> int:
        """Jog twists received after their jog had stopped, stamped as its continuation.

        The jog stops when no twist came for ``input_timeout``; a twist whose header stamp then
        shows the stream went on was delivered too late: the delivery cut the jog.
        """
        return self.target_state(constraint).jog_late


__all__ = ["Inputs"]
