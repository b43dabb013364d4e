"""The targets' aim: each tick, what each target constraint is given to follow (ROS-free).

At each tick :class:`TargetAim` gives every target constraint its twist (explicit while
recent, else the estimate from the poses, else none), advances the straight-line reference of
a jog or of a step (within the Cartesian limits and what the joints give along the line),
aims each moving target at the instant the joint state was measured and its twist at the
instant the command acts, and places the targets held in the world from where the base is
now. The streams are the inputs' (:class:`~itasc_ros.core.control.inputs.Inputs`); what the
constraints are given is set through them (in the stream's frame).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..constraints import Constraint
from ..kinematics import spatial
from ..kinematics._kernels import any_nonzero
from ._target_kernels import (
    TWIST_ZEROED,
    aim_twist,
    cap_twist,
    extrapolate_pose,
    joints_along,
    take_stream_twist,
)
from .inputs import Inputs
from .journal import TwistSource
from .model_fit import FittedModel
from .odometry import place_in_base
from .prediction import StatePrediction
from .streams import TargetStream

Array = NDArray[np.float64]

_REST = np.zeros(6)  # (6,) the zero twist a stopped jog decelerates to
_REST.flags.writeable = False

STEP_SHARES = (0.5, 0.5)
"""The shares of each joint's velocity and of its acceleration limit a step's straight line may
take (the rest is the feedback's, and the configuration's change along the line)."""


class TargetAim:
    """The references, jogs and aim of the target constraints, one :meth:`update` a tick.

    Args:
        model: the fitted model (its configuration, scene, tree and motion limits).
        inputs: the target streams and the frames they are given in.
        prediction: where the joints are when the tick solves (its positions and instant).
    """

    def __init__(self, model: FittedModel, inputs: Inputs, prediction: StatePrediction) -> None:
        self._model = model
        self._inputs = inputs
        self._prediction = prediction
        n = len(model.joint_names)
        self._mean_twist = np.zeros(6)  # (6,) work array of the aim
        self._jac = np.zeros((6, n))  # work of _step_limits: the effector's Jacobian
        self._gram = np.zeros((6, 6))
        self._y = np.zeros(6)
        self._rates = np.zeros((2, n))
        self._along = np.zeros(4)

    def update(self, now: float, elapsed: float) -> None:
        """Give each target constraint this tick's target and twist.

        Each stream in turn: its twist (:meth:`_update_reference`), its aim
        (:meth:`_aim_ahead`), then its place in the root frame when it is held in the world
        (:meth:`_place_world`).

        Args:
            now: the tick's time [s].
            elapsed: the time since the last tick [s] (a jog's or a step's reference moves by
                it).
        """
        aim = self._model.config.aim_ahead
        instants: tuple[float, float] | None = None  # the aim's instants, once one is needed
        base: Array | None = None
        for name, st in self._inputs.targets.items():
            moving = self._update_reference(name, st, now, elapsed)
            if not aim:
                if st.aiming:
                    self._stop_aiming(name, st)
            elif (  # (no twist source: nothing applied, so not moving)
                st.ref.active
                or st.ref.jogging
                or not (any_nonzero(st.applied) if moving is None else moving)
            ):
                if st.aiming:
                    self._stop_aiming(name, st)
            else:
                if instants is None:
                    instants = self._aim_instants(now)
                self._aim_ahead(name, st, *instants)
            if st.world:
                if base is None:
                    base = self._inputs.base_now()
                self._place_world(name, st, base)

    def _update_reference(
        self, name: str, st: TargetStream, now: float, elapsed: float
    ) -> bool | None:
        """Give the stream's constraint its twist: explicit if recent, else the estimate, else 0.

        A jog or a step followed along the straight-line reference comes first.

        Returns:
            Whether the twist applied is not zero; None when a reference gave it.
        """
        if st.ref.active or st.ref.jogging or st.jog_fresh:
            if self._follow_reference(name, st, now, elapsed):
                return None
        took = take_stream_twist(st.s, st.twist, st.estimate, st.applied)  # its source too
        if took >= 2:  # changed: given to the constraint (None: no twist from any source)
            given = None if took == TWIST_ZEROED else st.applied
            self._inputs.give_twist(self._model.scene.get(name), st, given)
        return took % 2 == 1

    def _aim_instants(self, now: float) -> tuple[float, float]:
        """When this tick's command reaches the robot [s], and the joint state's instant [s].

        The command: the tick's time ``now`` plus its delivery and ``actuator_lag``; the joint
        state: its header stamp (NaN: unstamped, its reception), moved on to the instant the
        prediction took it to when it is late (see :class:`StatePrediction`).
        """
        js = self._inputs.joints
        acts = now + self._command_delivery() + self._model.config.actuator_lag
        measured = js.header if js.header == js.header else js.stamp
        return acts, measured + max(self._prediction.instant - js.stamp, 0.0)

    def _aim_ahead(self, name: str, st: TargetStream, acts: float, measured: float) -> None:
        """Aim a moving target at the joint state's instant ``measured`` [s].

        The joint state was measured at its header stamp (else its reception), each target at
        its own: a target with a twist (estimated or explicit; not one following a
        straight-line reference or a jog) is extrapolated by that twist to the joint state's
        instant, so that the feedback compares the effector and the target *at the same
        time* (as measured, a target at 0.25 m/s sampled 2 ms apart from the joint state is
        1.5 ms, 0.4 mm, off). An explicit twist is fed forward as it will be when the command
        acts (the tick's time plus ``command_latency``, or the joint states' most punctual
        delivery), moved on by its filtered change rate: a target on a curve turns its
        velocity. Nothing is assumed about the robot: it is taken where it was measured (a
        state later than a period: where the commands sent since took it, at that
        instant, :class:`~itasc_ros.core.control.prediction.StatePrediction`). Each
        lead is kept within +-``input_timeout / 2``, every twist used within
        ``max_target_speed`` / ``max_target_angular_speed``: a target is never moved farther
        than those speeds allow over that lead. With ``aim_ahead`` false: as measured.

        With ``actuator_lag`` ``tau`` the tick solves at where the joints head for
        (:meth:`~itasc_ros.core.control.prediction.StatePrediction.lead`): each target is then
        moved on by ``tau`` along its twist (a straight extrapolation, the exact inverse of the
        lag: ``x + tau x'``) and its twist aimed ``tau`` later (``x' + tau x''``).

        ``acts``: when the command reaches the robot [s] (:meth:`_aim_instants`).
        """
        cfg = self._model.config
        lag, cap = cfg.actuator_lag, 0.5 * cfg.input_timeout
        at = st.header if st.header == st.header else st.stamp
        lead = min(max(measured - at, -cap), cap)
        c = self._model.scene.get(name)
        if st.source == TwistSource.EXPLICIT:  # its change rate too (second order)
            t0 = st.twist_time
            aim_twist(
                st.applied, st.accel, min(max(acts - t0, -cap), cap),
                min(max(at + 0.5 * lead - t0, -cap), cap), self._mean_twist, st.aimed_twist,
            )  # fmt: skip
            cap_twist(st.aimed_twist, cfg.max_target_speed, cfg.max_target_angular_speed)
            cap_twist(self._mean_twist, cfg.max_target_speed, cfg.max_target_angular_speed)
            extrapolate_pose(st.pose, self._mean_twist, lead, st.aimed)
            if lag > 0.0:  # where the joints head for: the target lag ahead, straight
                extrapolate_pose(st.aimed, self._mean_twist, lag, st.aimed)
            self._inputs.give_twist(c, st, st.aimed_twist)
        else:
            if st.aiming:  # an explicit twist aimed last tick: the estimate now
                self._inputs.give_twist(c, st, st.applied)
            extrapolate_pose(st.pose, st.applied, lead + lag, st.aimed)
        self._inputs.give_pose(c, st, st.aimed)
        st.aiming = True

    def _stop_aiming(self, name: str, st: TargetStream) -> None:
        """Give the constraint its target and twist as received again (not aimed ahead)."""
        st.aiming = False
        if st.ref.active or st.ref.jogging:
            return  # the reference gives both
        c = self._model.scene.get(name)
        if st.has_pose:
            self._inputs.give_pose(c, st, st.pose)
        self._inputs.give_twist(c, st, st.applied if any_nonzero(st.applied) else None)

    def _place_world(self, name: str, st: TargetStream, base: Array) -> None:
        """Place a world-frame target in the root frame, from where the base is now.

        ``base`` (4, 4): the base's pose moved on by its twist from the odometry's stamp to the
        joint state's instant (within ``input_timeout / 2``, :meth:`.Inputs.base_now`); the
        target's twist relative to the base includes the base's own (``feed_base_twist``), so
        that ``B Xu'`` feeds both forward (:func:`~itasc_ros.core.control.odometry.
        place_in_base`).
        """
        place_in_base(
            base, self._inputs.odom.twist, st.world_target, st.world_twist,
            self._inputs.feed_base, st.placed, st.placed_twist,
        )  # fmt: skip
        c = self._model.scene.get(name)
        c.set_target(st.placed, check=False)
        c.set_target_twist(st.placed_twist, check=False)

    def _follow_reference(self, name: str, st: TargetStream, now: float, elapsed: float) -> bool:
        """Advance a jog or a step's straight-line reference; False when there is none."""
        ref = st.ref
        c = self._model.scene.get(name)
        if st.jog_fresh:
            if not ref.jogging:
                start = self._inputs.effector_in(st, c) if not ref.active else ref.pose
                if start is None:
                    return False
                ref.start(start, jogging=True)
            move = min(elapsed, st.jog_budget)
            st.jog_budget -= move
            ref.jog(st.jog, move, self._cartesian_limits())
        elif ref.jogging:  # the jog twists stopped: decelerate, then hold where it stopped
            st.jog_budget = 0.0
            if ref.jog(_REST, elapsed, self._cartesian_limits()):
                st.pose[:] = ref.pose
                st.has_pose = True
        elif ref.active:
            goal_twist = st.twist if st.twist_fresh else st.estimate
            ref.toward(st.pose, goal_twist, elapsed, self._step_limits(st, c))
        else:
            return False
        st.source = TwistSource.REFERENCE
        if not self._model.config.aim_ahead:
            self._inputs.give_pose(c, st, ref.pose)
            if not np.array_equal(ref.twist, st.applied):
                st.applied[:] = ref.twist
                self._inputs.give_twist(c, st, st.applied)
            return True
        back, ahead = self._reference_leads(now)
        lag = (
            self._model.config.actuator_lag
        )  # the joints head lag ahead: the reference too, straight
        extrapolate_pose(ref.pose, ref.twist, back + lag, st.aimed)
        self._inputs.give_pose(c, st, st.aimed)
        st.applied[:] = ref.twist
        aimed = st.aimed_twist
        aimed[:] = ref.accel
        aimed *= min(ahead, self._model.dt) + lag  # the profile is known one period ahead
        aimed += ref.twist
        cfg = self._model.config
        cap_twist(aimed, cfg.max_target_speed, cfg.max_target_angular_speed)
        self._inputs.give_twist(c, st, aimed)
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
        cfg = self._model.config
        js = self._inputs.joints
        cap = 0.5 * cfg.input_timeout
        punctual = 0.0 <= js.order.offset <= cap  # stamps on this clock, delivered in the cap
        measured = js.header if punctual and js.header == js.header else js.stamp
        back = min(max(measured - now, -cap), 0.0)
        return back, min(max(self._command_delivery() + 0.5 * self._model.dt, 0.0), cap)

    def _command_delivery(self) -> float:
        """How long [s] from a tick until the robot applies its command.

        ``command_latency``, or with -1 the joint states' most punctual delivery (0 while
        unknown).
        """
        delivery = self._model.config.command_latency
        if delivery < 0.0:
            offset = self._inputs.joints.order.offset
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
        if not self._model.limiter.active or link is None:
            return limits
        ref = st.ref
        dp = st.pose[:3, 3] - ref.pose[:3, 3]
        dist = float(np.linalg.norm(dp))
        rot = spatial.so3_log(st.pose[:3, :3] @ ref.pose[:3, :3].T)
        angle = float(np.linalg.norm(rot))
        u = dp / dist if dist > 1e-9 else np.zeros(3)
        axis = rot / angle if angle > 1e-9 else np.zeros(3)
        tree = self._model.tree
        tree.compute(self._prediction.q)
        tree.jacobian_into(tree.link_index(link), self._jac)
        along = self._along
        joints_along(
            self._jac, u, axis, self._model.limiter.amax, self._model.vmax, STEP_SHARES,
            self._gram, self._y, self._rates, along,
        )  # fmt: skip
        v, a, w, alpha = limits
        return min(v, along[0]), min(a, along[1]), min(w, along[2]), min(alpha, along[3])

    def _cartesian_limits(self) -> tuple[float, float, float, float]:
        """The reference's limits.

        Returns:
            (speed [m/s], acceleration [m/s^2], angular speed [rad/s], angular acceleration
            [rad/s^2]).
        """
        cfg = self._model.config
        return (
            cfg.max_cartesian_speed or cfg.max_target_speed,
            cfg.max_cartesian_acceleration,
            cfg.max_cartesian_angular_speed,
            cfg.max_cartesian_angular_acceleration,
        )


__all__ = ["STEP_SHARES", "TargetAim"]
