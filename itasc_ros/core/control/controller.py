"""Controller: the control tick, between the inputs it keeps and the command, ROS-free.

The rclpy node and the offline replay drive the same :class:`Controller`, so that a replay is
deterministic and identical to what the node did. Inputs are plain values with float-second
stamps (the node's ROS clock, or bag timestamps); :meth:`Controller.step` returns what to
publish.

Safety rules (doc/safety.md lists every case):

* no command before a joint state and a target arrived (``publish`` False);
* joint states older than ``input_timeout`` (or received "in the future" of ``now``: the
  clock jumped back), disabled, a failed solve -> the last command ramped to zero within the
  motion limits (open loop; an immediate zero when no acceleration limit is set), then
  silence until fresh input;
* every command differs from the last published one by at most the acceleration (and jerk)
  limits over the nominal period: late ticks are not allowed a larger change;
* never NaN/Inf; ``|q'|`` never above the URDF velocity limits (times ``velocity_scale``).

Bad inputs raise :class:`~itasc_ros.core.errors.InputError` naming the reason; the last good
input is kept. Bad means: NaN/Inf or larger than :data:`HUGE`, a wrong length, missing or repeated
commanded joints, a zero quaternion, an unknown constraint or frame, a target beyond the reach,
or a header stamp out of order or leaping ahead within a live stream
(:class:`~itasc_ros.core.control.streams.StampOrder`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..errors import ItascError
from ..kinematics._kernels import any_nonzero
from ..kinematics.robots import SEPARATOR
from ..kinematics.tree import KinematicTree
from ..solve.scene import SolveResult
from ._target_kernels import aim_twist, cap_twist, copy_if_changed, extrapolate_pose
from .config import ControllerConfig
from .following import Following
from .inputs import Inputs
from .jogging import Jogging
from .journal import TwistSource
from .live_parameters import LiveParameters
from .odometry import place_in_base
from .status import STATUSES, Status, StepOutput
from .streams import TargetStream, fresh

Array = NDArray[np.float64]


class Controller(Inputs, Jogging, LiveParameters):
    """The control loop between inputs and the iTaSC scene (one instance per robot model).

    Its parts, one concept each: the model fitted to the tree
    (:mod:`~itasc_ros.core.control.model_fit`), the state it keeps
    (:mod:`~itasc_ros.core.control.state`), the inputs (:mod:`~itasc_ros.core.control.inputs`),
    jogging (:mod:`~itasc_ros.core.control.jogging`), the live parameters
    (:mod:`~itasc_ros.core.control.live_parameters`) and the journal
    (:mod:`~itasc_ros.core.control.journaling`); here, the tick (:meth:`step`).

    Args:
        tree: the robot's kinematic tree.
        config: the configuration (validated here).

    Raises:
        ConfigError: the configuration does not fit the tree (unknown joint, link...) or is
            invalid.
    """

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        super().__init__(tree, config)
        n = self.n_joints
        self._zeros = np.zeros(n)  # (n,) the zero command
        self._ramp = np.zeros(n)  # (n,) a held robot's step of its stop ramp
        self._capped = np.zeros(n)  # (n,) a solve's command capped while a state is late
        #: how much of each task the commands give, and the report when one stays short
        self.following = Following(self.scene.result.constraint_names)
        self._warm_up()

    @classmethod
    def from_urdf(cls, xml: str | bytes, config: ControllerConfig) -> Controller:
        """Build the tree of a URDF document and a controller on it.

        Raises:
            UrdfError: the URDF is invalid. ConfigError: the configuration does not fit.
        """
        return cls(KinematicTree.from_urdf(xml), config)

    # ------------------------------------------------------------------------- the tick
    def step(self, now: float) -> StepOutput:
        """One control tick at time ``now`` [s] (the clock of the input stamps).

        Reads the inputs (the status they allow), updates the references, solves inside this
        tick's motion box, records the tick and returns the command. Any other status while
        the last command was motion ramps that command to zero within the motion limits.

        Returns:
            A new :class:`StepOutput`; publish ``qdot`` when ``publish`` is True.
        """
        self._tick_time(now)
        self._look_at_inputs(now)
        js = self._joints
        self._prediction.advance(self._q, js.stamps, now, js.interval)
        self._prediction.lead(self.config.actuator_lag, self._elapsed)  # where the joints head
        status, reason = self._status(now)
        if status is Status.ACTIVE:
            self._update_references(now)
            self._aim(now)
            self._place_world()
            held = self._hold_stopped_robots(now) if self._robots.any_stale else None
            out = self._limit(self._solve(), status)
            if held is not None and out.status is Status.ACTIVE:
                out.reason, out.held = held
            self._judge_following(now, out)
        elif self._can_stop_smoothly():
            out = self._stop(status, reason)
        else:
            out = self._zero(status, reason, None)
        if out.result is None:
            self.following.idle()
        if out.publish:
            self._prediction.publish(out.qdot)
        if self.journal is not None:
            self._record_tick(self.journal, now, out)
        return out

    def _judge_following(self, now: float, out: StepOutput) -> None:
        """How much of each task the command gives (:class:`Following`); its report in ``out``."""
        res = out.result
        if res is None or out.status is not Status.ACTIVE:
            self.following.idle()
            return
        if self.following.source is not res.constraint_names:  # the scene's tasks changed
            self.following = Following(res.constraint_names)
        self.scene.following(out.qdot, self.following.fraction)
        causes = self.scene.limiting if not out.held else self._held_causes(out.held)
        self.following.update(now, self._elapsed, causes, out.qdot)
        out.shortfall = self.following.report

    def _held_causes(self, held: tuple[str, ...]) -> Callable[[Array], list[str]]:
        """The causes of a shortfall while the robots ``held`` stop.

        The held robots first, then the limits of the others' joints (a held robot's joints
        are on their stop ramp, not at a limit of their own).
        """
        prefixes = tuple(r + SEPARATOR for r in held)
        first = f"robot {', '.join(held)} held (stopping: joint states stale)"

        def causes(qdot: Array) -> list[str]:
            rest = [c for c in self.scene.limiting(qdot) if not c.startswith(prefixes)]
            return [first, *rest]

        return causes

    def _tick_time(self, now: float) -> float:
        """The time since the last step [s], at most ``input_timeout`` (the period at first).

        Jogging moves its reference by it. The motion limits do not use it: every command
        differs from the last one by at most what the limits allow over the *nominal* period,
        as a ros2_control velocity controller applies a command at once, however late it is.
        """
        dt = now - self._last_step
        self._last_step = now
        if not (0.0 < dt < math.inf):
            dt = self._dt
        self._elapsed = min(dt, self.config.input_timeout)
        return self._elapsed

    def _look_at_inputs(self, now: float) -> None:
        """The tick's one look at its inputs: which are fresh at ``now`` [s].

        The rest of the tick reads these flags (and :attr:`_joint_age`), never the clock: one
        snapshot, one judgement of freshness per input per tick.
        """
        timeout = self.config.input_timeout
        self._joint_age = now - self._joints.stamp
        if self._robots.size and not self._robots.look(now, timeout):
            self._held_limit.release()
        self._joints_fresh = fresh(self._joint_age, timeout)
        self._odom_fresh = fresh(now - self._odom.stamp, timeout)
        for st in self._targets.values():
            st.pose_fresh = st.has_pose and fresh(now - st.stamp, timeout)
            st.twist_fresh = fresh(now - st.twist_stamp, timeout)
            st.jog_fresh = fresh(now - st.jog_stamp, st.jog_valid)

    def _status(self, now: float) -> tuple[Status, str]:
        """What the inputs allow (:meth:`_look_at_inputs`), and why when it is not 'active'."""
        if not self._enabled:
            return Status.DISABLED, "~/enable is false: zero command sent, then silence"
        if not self._joints.has_state:
            return Status.WAITING, "no joint state received yet"
        age = self._joint_age
        if not self._joints_fresh:
            if age < 0.0:
                return Status.STALE, (
                    f"the last joint state was received {-age:.3f} s after now: the clock "
                    "jumped back"
                )
            return Status.STALE, (
                f"joint states are {age:.3f} s old (input_timeout {self.config.input_timeout} s)"
            )
        if not self._odom_fresh and (self.base_joints or self._holds_world_target()):
            age = now - self._odom.stamp
            return Status.STALE, (
                f"odometry is {age:.3f} s old (input_timeout {self.config.input_timeout} s) "
                + ("and the base is commanded" if self.base_joints else "and a target is held "
                   "in the world frame")
            )  # fmt: skip
        # A term that resolves redundancy starts no motion: it acts once a task has a target
        # (one from outside when some task takes one: not a grasp held between two robots).
        active = engaged = False
        for c in self._constraints:
            if c.enabled and c.has_target and not c.resolves_redundancy:
                active = True
                if not self._targets or c.name in self._targets:
                    engaged = True
                    break
        self.scene.redundancy_engaged = engaged
        return (Status.ACTIVE, "") if active else (Status.WAITING, "no target received yet")

    def _holds_world_target(self) -> bool:
        """True when an enabled constraint's target is held in the world frame."""
        for name, st in self._targets.items():
            if st.world and self.scene.get(name).enabled:
                return True
        return False

    def _place_world(self) -> None:
        """Place each world-frame target in the root frame, from where the base is now.

        The base's pose is moved on by its twist from the odometry's stamp to the joint
        state's instant (within ``input_timeout / 2``); the target's twist relative to the
        base includes the base's own (``feed_base_twist``), so that ``B Xu'`` feeds both
        forward (:func:`~itasc_ros.core.control.odometry.place_in_base`).
        """
        base = None
        for name, st in self._targets.items():
            if not st.world:
                continue
            if base is None:
                base = self._base_now()
            place_in_base(
                base, self._odom.twist, st.world_target, st.world_twist,
                self._feed_base, st.placed, st.placed_twist,
            )  # fmt: skip
            c = self.scene.get(name)
            c.set_target(st.placed, check=False)
            c.set_target_twist(st.placed_twist, check=False)

    def _update_references(self, now: float) -> None:
        """Give each pose constraint its twist: explicit if recent, else the estimate, else 0.

        A jog or a step followed along the straight-line reference comes first.
        """
        for name, st in self._targets.items():
            if st.ref.active or st.ref.jogging or st.jog_fresh:
                if self._follow_reference(name, st, now):
                    continue
            if st.twist_fresh:
                src: Array | None = st.twist
                st.source = TwistSource.EXPLICIT
            elif st.pose_fresh:
                src = st.estimate
                st.source = TwistSource.ESTIMATED
            else:
                src = None
                st.source = TwistSource.NONE
            if src is not None:
                if copy_if_changed(src, st.applied):
                    self._give_twist(self.scene.get(name), st, st.applied)
            elif any_nonzero(st.applied):
                st.applied[:] = 0.0
                self._give_twist(self.scene.get(name), st, None)

    def _aim(self, now: float) -> None:
        """Aim each moving target at the joint state's instant (the tick's time ``now`` [s]).

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
        """
        cfg = self.config
        if not cfg.aim_ahead:
            for name, st in self._targets.items():
                if st.aiming:
                    self._stop_aiming(name, st)
            return
        js = self._joints
        lag = cfg.actuator_lag
        acts = now + self._command_delivery() + lag  # [s] when the command reaches the robot
        cap = 0.5 * cfg.input_timeout
        measured = js.header if js.header == js.header else js.stamp  # NaN: unstamped
        # a late state is predicted on to an instant after it (see StatePrediction)
        measured += max(self._prediction.instant - js.stamp, 0.0)
        for name, st in self._targets.items():
            if (
                st.source == TwistSource.NONE
                or st.ref.active
                or st.ref.jogging
                or not any_nonzero(st.applied)
            ):
                if st.aiming:
                    self._stop_aiming(name, st)
                continue
            at = st.header if st.header == st.header else st.stamp
            lead = min(max(measured - at, -cap), cap)
            c = self.scene.get(name)
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
                self._give_twist(c, st, st.aimed_twist)
            else:
                if st.aiming:  # an explicit twist aimed last tick: the estimate now
                    self._give_twist(c, st, st.applied)
                extrapolate_pose(st.pose, st.applied, lead + lag, st.aimed)
            self._give_pose(c, st, st.aimed)
            st.aiming = True

    def _stop_aiming(self, name: str, st: TargetStream) -> None:
        """Give the constraint its target and twist as received again (not aimed ahead)."""
        st.aiming = False
        if st.ref.active or st.ref.jogging:
            return  # the reference gives both
        c = self.scene.get(name)
        if st.has_pose:
            self._give_pose(c, st, st.pose)
        self._give_twist(c, st, st.applied if any_nonzero(st.applied) else None)

    def _hold_stopped_robots(self, now: float) -> tuple[str, tuple[str, ...]] | None:
        """Hold the stale robots, and the robots linked to them, on their stop ramp.

        Their joints get this tick's step of the open-loop ramp of their last command, every
        joint slowed by one common fraction (the robots linked by a constraint keep the link
        through the stop; a zero without motion limits) as a box ``lo = hi``, the scene's
        last limit; the other robots are solved as before (see
        :mod:`~itasc_ros.core.control.robot_groups`).

        Returns:
            Why, for the tick's reason, and the robots held; None when the rows could not be
            computed (the solve then fails, and the whole command ramps down).
        """
        scene, robots = self.scene, self._robots
        try:
            a = scene.matrices(self._q)["A"]
        except ItascError:
            return None
        rows = [scene.rows(c.name) for c in self._constraints if c.enabled]
        stopped = robots.hold(a, rows)
        # in step (one common fraction): robots held together keep their link through the stop
        self._limiter.stop_ramp(self._dt, self._ramp, sync=True)
        self._held_limit.hold(robots.held, self._ramp)
        timeout = self.config.input_timeout
        stale = [
            f"{r} ({now - robots.stamp[g]:.3f} s old)"
            for g, r in enumerate(robots.names)
            if robots.stale[g]
        ]
        linked = [r for r in stopped if not robots.stale[robots.names.index(r)]]
        it = "it" if len(stale) == 1 else "they"
        why = (
            f"joint states of robot {', '.join(stale)} stale (input_timeout {timeout} s): "
            + (f"{it} and {', '.join(linked)} (linked by constraints)" if linked else it)
            + " decelerating to zero within the joint limits; the others go on"
        )
        return why, tuple(stopped)

    def _solve(self) -> SolveResult | str:
        """The scene's solve at the last joint state, or why it failed.

        The scene's limits include this tick's motion box (:class:`~itasc_ros.core.solve.limits.
        MotionBox`: the acceleration, jerk and braking limits from the last command at the
        nominal period), so every priority level of the solve keeps them (a lower level cannot
        take a higher one's share of a limit).
        """
        try:
            return self.scene.solve(self._prediction.q, self._dt)
        except ItascError as exc:
            return f"solve failed: {exc}"
        except Exception as exc:  # whatever broke, the robot gets a zero, not a crash
            return f"solve failed: {type(exc).__name__}: {exc}"

    def _limit(self, res: SolveResult | str, status: Status) -> StepOutput:
        """The command of a solve: finite, within the velocity and motion limits; else a fault.

        The solve kept the motion box: its command is taken as it is. The limiter is the guard
        of a command outside the box (the box and the collision rows could not both be kept):
        it holds the limits then.
        """
        if isinstance(res, str):
            return self._fault(res, None)
        lim, scene, out = self._limiter, self.scene, self._qdot
        # clipped to the velocity limits and taken as the last command (without motion
        # limits: as it is, as a snapshot of the journal keeps it), in one compiled call
        taken = -1
        if res.ok:
            qdot = self._prediction.cap(res.qdot, self._capped)  # a late state: no faster
            taken = lim.take_clipped(
                qdot, self._vmax_hard, out, scene.box_lo, scene.box_hi, self._dt
            )
        if taken < 0:
            return self._fault("solve produced non-finite joint velocities", res)
        if taken == 0:  # outside the box: the limiter makes the command
            lim.step(out, self._prediction.q, self._dt, 2.0 * self._dt, out)
        self._halted = False
        return StepOutput(status, True, out.copy(), self._q.copy(), res, "")

    def _fault(self, reason: str, res: SolveResult | None) -> StepOutput:
        """A failed solve: the command ramps to zero within the limits (else an immediate zero)."""
        if self._can_stop_smoothly():
            out = self._stop(Status.FAULT, reason)
            out.result = res
            return out
        return self._zero(Status.FAULT, reason, res)

    @property
    def motion_limited(self) -> bool:
        """True when joint acceleration limits are set: a stop ramps down within them."""
        return bool(self._limiter.active)

    def _can_stop_smoothly(self) -> bool:
        """Ramp the last command down within the motion limits rather than send a zero."""
        return self._limiter.active and self._limiter.moving and not self._halted

    def _stop(self, status: Status, reason: str) -> StepOutput:
        """One step of the ramp to zero within the motion limits, open loop.

        It needs no joint state (they may be stale): the command only slows down, at the
        deceleration and jerk limits over the nominal period. The braking curve of every active
        command keeps half the deceleration limit in reserve before the position limits, so
        this ramp stops a joint within half the distance it had left.
        """
        self._limiter.stop(self._dt, self._qdot)
        self._halted = not self._limiter.moving
        if status is Status.DISABLED:
            if not self._halted:
                status = Status.STOPPING
                reason = "~/enable is false: decelerating within the joint limits, then zero"
        elif not self._halted:
            reason = f"{reason}; decelerating to zero within the joint limits"
        return StepOutput(status, True, self._qdot.copy(), self._q.copy(), None, reason)

    def take_motion(self, old: Controller) -> bool:
        """Go on from ``old``'s last command (a new model of the same joints): no jump.

        The next tick starts from ``old``'s command and its acceleration: it solves inside the
        box they leave, or ramps them down. Returns False (nothing taken; the caller stops
        ``old`` with a zero) when the joints differ or a controller has no motion limits.
        """
        if not (
            old.commanding
            and old.joint_names == self.joint_names
            and old._limiter.active
            and self._limiter.active
        ):
            return False
        self._limiter.v[:] = old._limiter.v
        self._limiter.a[:] = old._limiter.a
        self._qdot[:] = old._limiter.v
        self._prediction.publish(old._prediction.sent)
        self._halted = False
        return True

    def ramp_down(self) -> StepOutput:
        """One step of the open-loop ramp of the last command to zero, outside a tick.

        For the node when a tick cannot run (its step raised, a URDF parse holds the loop): the
        command still changes only within the motion limits. ``publish`` is False once the
        ramp has ended (or without motion limits, after one zero).
        """
        if self._can_stop_smoothly():
            return self._stop(Status.FAULT, "the control tick could not run")
        return self._zero(Status.FAULT, "the control tick could not run", None)

    def _zero(self, status: Status, reason: str, res: SolveResult | None) -> StepOutput:
        """An immediate zero (once, then silence): the limiter starts again from rest."""
        publish = not self._halted
        self._halted = True
        self._limiter.halt()
        return StepOutput(status, publish, self._zeros.copy(), self._q.copy(), res, reason)


__all__ = ["STATUSES", "Controller", "Status", "StepOutput"]
