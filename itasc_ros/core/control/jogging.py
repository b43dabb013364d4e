"""Jogging: an effector moved by a stream of twists, as MoveIt Servo does (ROS-free).

A jog twist is valid for ``input_timeout``: a virtual target (the constraint's
:class:`~itasc_ros.core.control.cartesian_reference.CartesianReference`) starts where the
effector is and moves with the twists, within ``max_cartesian_speed`` /
``max_cartesian_acceleration`` and the angular pair; when they stop it decelerates to rest and
stays there. Each twist pays for its share of the stream's time, so that the effector moves for
as long as the stream lasted, whatever the delivery. At each tick :meth:`Jogging._follow_reference`
advances the reference of a jog, or of a target step approached along a straight line.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..constraints import Constraint
from ..kinematics import spatial
from ..kinematics.tree import KinematicTree
from ._target_kernels import cap_twist, extrapolate_pose, joints_along
from .config import ControllerConfig
from .journal import Code, TwistSource
from .journaling import Journaling
from .streams import TargetStream

_REST = np.zeros(6)  # (6,) the zero twist a stopped jog decelerates to
_REST.flags.writeable = False

STEP_SHARES = (0.5, 0.5)
"""The shares of each joint's velocity and of its acceleration limit a step's straight line may
take (the rest is the feedback's, and the configuration's change along the line)."""


class Jogging(Journaling):
    """Jog twists, and the reference a jog or a step moves at each tick."""

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        super().__init__(tree, config)
        n = self._q.shape[0]
        self._jac = np.zeros((6, n))  # work of _step_limits: the effector's Jacobian
        self._gram = np.zeros((6, 6))
        self._y = np.zeros(6)
        self._rates = np.zeros((2, n))
        self._along = np.zeros(4)

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
        st = self._target_state(constraint)
        what = f"jog of {constraint!r}"
        if self.base_joints:
            raise self._reject(
                f"{what}: jogging moves the effector in the robot's frame, which a commanded "
                f"base (base_kind {self.config.base_kind!r}) moves too; send targets in "
                f"{self.config.world_frame!r} instead"
            )
        tw_msg = self._twist_arg(what, twist, received)
        c = self.scene.get(constraint)
        if self._effector_pose(c) is None:
            raise self._reject(f"{what} needs a joint state and an effector")
        tw = self._twist_in_root(what, st.jog_order, tw_msg, frame, received, header_stamp)
        timeout = self.config.input_timeout
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
            pose = self._effector_pose(c)
            if pose is not None:
                c.set_target(pose, check=False)
        if self.journal is not None:
            self._record_twist(
                self.journal, Code.JOG, constraint, frame, tw_msg, received, header_stamp
            )

    def _jog_pay(self, st: TargetStream, received: float, header_stamp: float | None) -> float:
        """How long [s] the reference may move for this jog twist (its share of the stream).

        Each twist pays the time since the previous one on the stream's own clock: its header
        stamps when both are stamped and within ``input_timeout`` of each other, else the
        reception times' average period since the stream began (DDS delivers in bursts); the
        first twist of a stream pays one control period. So the effector moves v t for t the
        stream's length whatever the delivery (bursts, a lost message, a late callback), late
        twists catching up, and stops then, not ``input_timeout`` later.
        """
        timeout = self.config.input_timeout
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
        return st.jog_period or self._dt

    def jog_late_twists(self, constraint: str) -> int:
        """Jog twists received after their jog had stopped, stamped as its continuation.

        The jog stops when no twist came for ``input_timeout``; a twist whose header stamp then
        shows the stream went on was delivered too late: the delivery cut the jog.
        """
        return self._target_state(constraint).jog_late

    def _follow_reference(self, name: str, st: TargetStream, now: float) -> bool:
        """Advance a jog or a step's straight-line reference; False when there is none."""
        ref = st.ref
        c = self.scene.get(name)
        if st.jog_fresh:
            if not ref.jogging:
                start = self._effector_in(st, c) if not ref.active else ref.pose
                if start is None:
                    return False
                ref.start(start, jogging=True)
            move = min(self._elapsed, st.jog_budget)
            st.jog_budget -= move
            ref.jog(st.jog, move, self._cartesian_limits())
        elif ref.jogging:  # the jog twists stopped: decelerate, then hold where it stopped
            st.jog_budget = 0.0
            if ref.jog(_REST, self._elapsed, self._cartesian_limits()):
                st.pose[:] = ref.pose
                st.has_pose = True
        elif ref.active:
            goal_twist = st.twist if st.twist_fresh else st.estimate
            ref.toward(st.pose, goal_twist, self._elapsed, self._step_limits(st, c))
        else:
            return False
        st.source = TwistSource.REFERENCE
        if not self.config.aim_ahead:
            self._give_pose(c, st, ref.pose)
            if not np.array_equal(ref.twist, st.applied):
                st.applied[:] = ref.twist
                self._give_twist(c, st, st.applied)
            return True
        back, ahead = self._reference_leads(now)
        lag = self.config.actuator_lag  # the joints head lag ahead: the reference too, straight
        extrapolate_pose(ref.pose, ref.twist, back + lag, st.aimed)
        self._give_pose(c, st, st.aimed)
        st.applied[:] = ref.twist
        aimed = st.aimed_twist
        aimed[:] = ref.accel
        aimed *= min(ahead, self._dt) + lag  # the profile is known one period ahead
        aimed += ref.twist
        cfg = self.config
        cap_twist(aimed, cfg.max_target_speed, cfg.max_target_angular_speed)
        self._give_twist(c, st, aimed)
        return True

    def _reference_leads(self, now: float) -> tuple[float, float]:
        """How far [s] to move a reference: back to the joint state, ahead to the command.

        The reference is where it is at the tick's time ``now``; the effector it is compared
        with was measured at its joint state's header stamp (its reception when unstamped, or
        when the stamps are on another clock: delivered ahead of them, or later than the cap
        even at their most punctual), and the command acts a
        delivery later (``command_latency``, or that delivery) for a period. Compared at the
        same instant and fed forward as it will be over the command's period, a braking
        reference is followed without the arm running ahead of it: a step's overshoot (the
        acceleration times those delays over the gain, ~1 mm at 2.5 m/s^2 and K = 20)
        shrinks. Each within ``input_timeout / 2``.
        """
        cfg = self.config
        js = self._joints
        cap = 0.5 * cfg.input_timeout
        punctual = 0.0 <= js.order.offset <= cap  # stamps on this clock, delivered in the cap
        measured = js.header if punctual and js.header == js.header else js.stamp
        back = min(max(measured - now, -cap), 0.0)
        return back, min(max(self._command_delivery() + 0.5 * self._dt, 0.0), cap)

    def _command_delivery(self) -> float:
        """How long [s] from a tick until the robot applies its command.

        ``command_latency``, or with -1 the joint states' most punctual delivery (0 while
        unknown).
        """
        delivery = self.config.command_latency
        if delivery < 0.0:
            offset = self._joints.order.offset
            delivery = offset if 0.0 <= offset < math.inf else 0.0
        return delivery

    def _step_limits(self, st: TargetStream, c: Constraint) -> tuple[float, float, float, float]:
        """The limits of a step's straight line, lowered to what the joints give along it here.

        :meth:`_cartesian_limits`, and the joints along the line and about its axis. With
        joint acceleration limits, a line the joints cannot follow at the configured
        Cartesian acceleration (an arm stretching forward is slow in its shoulder and elbow)
        leaves the effector behind while the line accelerates, and the feedback that catches
        up overshoots the goal (7 % of a 0.1 m step forward on the Panda at 2.5 m/s^2). So the
        line's speed and acceleration are at most those whose least-norm joint rates take
        :data:`STEP_SHARES` of each joint's limits, at the configuration the tick solves at.
        """
        limits = self._cartesian_limits()
        link = c.effector_link
        if not self._limiter.active or link is None:
            return limits
        ref = st.ref
        dp = st.pose[:3, 3] - ref.pose[:3, 3]
        dist = float(np.linalg.norm(dp))
        rot = spatial.so3_log(st.pose[:3, :3] @ ref.pose[:3, :3].T)
        angle = float(np.linalg.norm(rot))
        u = dp / dist if dist > 1e-9 else np.zeros(3)
        axis = rot / angle if angle > 1e-9 else np.zeros(3)
        tree = self.tree
        tree.compute(self._prediction.q)
        tree.jacobian_into(tree.link_index(link), self._jac)
        along = self._along
        joints_along(
            self._jac, u, axis, self._limiter.amax, self._vmax, STEP_SHARES, self._gram, self._y,
            self._rates, along,
        )  # fmt: skip
        v, a, w, alpha = limits
        return min(v, along[0]), min(a, along[1]), min(w, along[2]), min(alpha, along[3])

    def _cartesian_limits(self) -> tuple[float, float, float, float]:
        """The reference's limits.

        Returns:
            (speed [m/s], acceleration [m/s^2], angular speed [rad/s], angular acceleration
            [rad/s^2]).
        """
        cfg = self.config
        return (
            cfg.max_cartesian_speed or cfg.max_target_speed,
            cfg.max_cartesian_acceleration,
            cfg.max_cartesian_angular_speed,
            cfg.max_cartesian_angular_acceleration,
        )


__all__ = ["Jogging"]
