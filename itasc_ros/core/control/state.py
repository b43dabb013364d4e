"""The controller's state between ticks, and the checks its inputs share (ROS-free).

:class:`ControllerState` adds to the fitted model (:mod:`~itasc_ros.core.control.model_fit`)
what the controller has received and decided so far: the joint state
(:mod:`~itasc_ros.core.control.joint_input`), one :class:`TargetStream` per constraint that takes
a target, ``enable``, whether the last command was zero, the time of the last tick; the counted
rejection of a bad input, and the look-ups every input makes (a constraint's stream, a frame's
pose, the effector's pose, a twist argument). The inputs, the jog, the live parameters, the
journal and the tick (:class:`~itasc_ros.core.control.Controller`) build on it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..constraints import Constraint
from ..errors import InputError, ItascError, TargetNotSet, echo
from ..kinematics.tree import KinematicTree
from .config import ControllerConfig
from .joint_input import JointStateInput
from .journal import Journal
from .model_fit import FittedModel, target_reach
from .odometry import Odometry, place_in_base, world_of_base
from .prediction import StatePrediction
from .robot_groups import RobotGroups
from .streams import HUGE, StampOrder, TargetStream, as_array, usable

Array = NDArray[np.float64]

_REST = np.zeros(6)  # (6,) a twist at rest


class ControllerState(FittedModel):
    """The fitted model plus the inputs received and the command state.

    Args:
        tree: the robot's kinematic tree.
        config: the configuration (validated here).

    Raises:
        ConfigError: the configuration does not fit the tree or is invalid.

    Attributes:
        last_rejection: the reason of the latest refused input ('' before the first).
        rejections: inputs refused so far.
        journal: where inputs and ticks are recorded, or None (see ``attach_journal``).
    """

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        super().__init__(tree, config)
        self._targets = {c.name: TargetStream() for c in self.config.constraints if c.takes_target}
        self._stream_index = {name: i for i, name in enumerate(self._targets)}
        self._set_reach()
        self._joints = JointStateInput(self.tree, self._q_full, len(self.base_joints))
        self._robots = RobotGroups(self.config.robots, self.joint_names)  # each one's freshness
        self._odom = Odometry()  # the base in world_frame (used once a target is given there)
        self._odom_fresh = False  # the tick's look: odometry received within input_timeout
        self._q = self._joints.q  # (n,) the same array: the last good joint positions
        #: the positions a tick solves at: ``_q``, advanced by the commands sent once it is late
        self._prediction = StatePrediction(self._q.shape[0], self._dt)
        self._qdot = np.zeros(self._q.shape[0])  # (n,) the command being made [rad/s or m/s]
        self._mean_twist = np.zeros(6)  # (6,) work array of the aim
        self._enabled = True
        self._halted = True  # the last command sent (if any) was zero
        self._last_step = -math.inf  # [s] time of the last tick
        self._elapsed = self._dt  # [s] time since the last tick, at most input_timeout
        self.last_rejection = ""
        self.rejections = 0
        self.journal: Journal | None = None

    def _set_reach(self) -> None:
        """Each target's largest distance from the root [m] (see ``target_reach_margin``)."""
        for name, st in self._targets.items():
            st.reach = target_reach(self.config, self.scene, self.tree, name)

    # ------------------------------------------------------------------------- read-outs
    @property
    def enabled(self) -> bool:
        """False after ``set_enabled(False)``."""
        return self._enabled

    @property
    def commanding(self) -> bool:
        """True when the last command ``step`` asked to publish was motion, not zeros."""
        return not self._halted

    @property
    def has_joint_state(self) -> bool:
        """True once a valid joint state was accepted."""
        return self._joints.has_state

    @property
    def joint_state_stamp(self) -> float:
        """Reception time [s] of the last accepted joint state (-inf before the first)."""
        return self._joints.stamp

    @property
    def q(self) -> Array:
        """(n,) a copy of the last accepted joint positions [rad or m]."""
        return self._q.copy()

    def poses(self, constraint: str) -> tuple[Array, Array | None]:
        """Effector pose and target pose (4, 4) in the root frame at the current state.

        The target is None when the constraint has no target pose yet; both are the identity
        and None for a type without an effector (e.g. joint_value).
        """
        c = self.constraint(constraint)
        link = c.effector_link
        if link is None:
            return np.eye(4), None
        eff = self.tree.forward_kinematics(self._q, link)
        st = self._targets.get(constraint)
        if st is not None and st.has_pose and not st.world:  # the target given, not the ref
            return eff, st.pose.copy()
        try:
            return eff, c.target_pose(self.tree, self._q)
        except TargetNotSet:
            return eff, None

    # ------------------------------------------------------------------------- shared checks
    def _reject(self, reason: str) -> InputError:
        """Count a refused input; returns the :class:`InputError` to raise."""
        self.last_rejection = reason
        self.rejections += 1
        return InputError(reason)

    def _target_state(self, constraint: str) -> TargetStream:
        """The target stream of ``constraint``.

        Raises:
            InputError: the constraint takes no target (naming those that do).
        """
        st = self._targets.get(constraint)  # a stream for each constraint that takes a target
        if st is None:
            raise self._reject(
                f"constraint {echo(constraint)} takes no target pose; constraints with a target "
                f"are: {', '.join(self.pose_constraints) or '(none)'}"
            )
        return st

    @property
    def _feed_base(self) -> bool:
        """Feed the base's twist forward into world targets: a base moved by others only.

        A commanded base's motion is the solve's own (its virtual joints' columns of ``A``);
        fed forward too, it would count twice.
        """
        return self.config.feed_base_twist and not self.base_joints

    def _is_world(self, frame: str) -> bool:
        """True when ``frame`` is the world frame (``world_frame``, when set)."""
        return bool(frame) and frame == self.config.world_frame

    def _frame_pose(self, frame: str, what: str) -> Array | None:
        """Pose (4, 4) of a URDF link in the root frame at the current state; None = root."""
        if not frame or frame == self.tree.root_link:
            return None
        try:
            idx = self.tree.link_index(frame)
        except ItascError:
            world = self.config.world_frame
            raise self._reject(
                f"{what} frame {echo(frame)} is not a URDF link"
                + (f" nor the world frame {world!r}" if world else "")
                + f"; use '' or {self.tree.root_link!r} for the root"
                + (f", {world!r} for the world" if world else "")
                + ", or one of: "
                + ", ".join(self.tree.link_names)
            ) from None
        if not self._joints.has_state:
            raise self._reject(
                f"{what} in frame {echo(frame)} needs a joint state to transform it "
                f"to {self.tree.root_link!r}; none received yet"
            )
        self.tree.compute(self._q)
        return self.tree.pose_ref(idx).copy()

    def _frame_code(self, frame: str) -> int:
        """A frame as journaled: -1 the root ('' or its name), -2 the world, else a link index."""
        if not frame or frame == self.tree.root_link:
            return -1
        if self._is_world(frame):
            return -2
        return self.tree.link_index(frame)

    def _effector_pose(self, c: Constraint) -> Array | None:
        """The constraint's effector pose (4, 4) now, or None (no effector, no joint state)."""
        link = c.effector_link
        if link is None or not self._joints.has_state:
            return None
        return self.tree.forward_kinematics(self._q, link)

    def _base_now(self) -> Array:
        """(4, 4) the base's pose in the world at the joint state's instant (odometry)."""
        js = self._joints
        measured = js.header if js.header == js.header else js.stamp
        return self._odom.place(measured, 0.5 * self.config.input_timeout)

    def _effector_in(self, st: TargetStream, c: Constraint) -> Array | None:
        """The effector's pose (4, 4) in ``st``'s frame (the root's, or the world's), or None."""
        pose = self._effector_pose(c)
        if pose is None or not st.world:
            return pose
        world_of_base(self._base_now(), self._odom.twist, pose, _REST, st.placed, st.placed_twist)
        return st.placed.copy()

    def _effector_twist_in(self, st: TargetStream, c: Constraint) -> Array | None:
        """The effector's twist (6,) in ``st``'s frame from the last command, or None."""
        twist = self._effector_twist(c)
        if not st.world:
            return twist
        pose = self._effector_pose(c)
        if pose is None:
            return None
        moving = _REST if twist is None else twist
        world_of_base(self._base_now(), self._odom.twist, pose, moving, st.placed, st.placed_twist)
        return st.placed_twist.copy()

    def _give_pose(self, c: Constraint, st: TargetStream, pose: Array) -> None:
        """Set the target pose (4, 4) of ``st``'s constraint, in the stream's frame.

        A root-frame stream sets the constraint; a world-frame one keeps it and places it in
        the base from where the base is now (each tick places it again:
        :meth:`~itasc_ros.core.control.Controller._place_world`).
        """
        if st.world:
            st.world_target[:] = pose
            place_in_base(
                self._base_now(), self._odom.twist, pose, st.world_twist,
                self._feed_base, st.placed, st.placed_twist,
            )  # fmt: skip
            c.set_target(st.placed, check=False)
        else:
            c.set_target(pose, check=False)

    def _give_twist(self, c: Constraint, st: TargetStream, twist: Array | None) -> None:
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
        if link is None or not self._joints.has_state or self._halted:
            return None
        return self.tree.jacobian(self._q, link) @ self._qdot

    def _twist_arg(self, what: str, twist: ArrayLike, received: float) -> Array:
        """A twist argument (6,) checked: 6 finite values of at most HUGE, a finite time.

        Raises:
            InputError: naming ``what``.
        """
        tw = as_array(twist, what, self._reject)
        if tw.shape != (6,) or not usable(tw):
            raise self._reject(
                f"{what} must be 6 finite values of at most {HUGE:g}, got {tw.tolist()}"
            )
        if not math.isfinite(received):
            raise self._reject(f"{what}: reception time {received!r} not finite")
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
        why = order.check(header_stamp, received, self.config.input_timeout)
        if why:
            raise self._reject(f"{what}: {why}")
        ref = self._frame_pose(frame, what)
        if ref is None:
            return tw
        r = ref[:3, :3]
        return np.concatenate([r @ tw[:3], r @ tw[3:]])


__all__ = ["ControllerState"]
