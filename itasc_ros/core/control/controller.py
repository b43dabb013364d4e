"""Controller: the control tick, between the inputs it keeps and the command, ROS-free.

A :class:`Controller` is composed of parts that each keep their own state: the model fitted to
the tree (:class:`~itasc_ros.core.control.model_fit.FittedModel`: the configuration, the scene,
the motion limits), the inputs received (:class:`~itasc_ros.core.control.inputs.Inputs`), where
the joints are when the tick solves (:class:`~itasc_ros.core.control.prediction.StatePrediction`),
the targets' references and aim (:class:`~itasc_ros.core.control.aim.TargetAim`), how much of
each task the commands give (:class:`~itasc_ros.core.control.following.Following`) and the
journal's records (:class:`~itasc_ros.core.control.recorder.Recorder`); the controller keeps
the command and calls them in order in :meth:`Controller.step`.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..constraints import Constraint
from ..errors import ConfigError, ItascError
from ..kinematics.tree import KinematicTree
from ..solve.motion_limits import MotionLimiter
from ..solve.scene import Scene, SolveResult
from ..solve.small_svd import MEMORY_SIZE
from . import _tick_kernels as tick
from ._command_kernels import (
    LOOKED,
    NOT_FINITE,
    NOT_SOLVED,
    OUTSIDE,
    SENT,
    take_solved,
)
from ._target_kernels import cap_twist
from .aim import TargetAim
from .config import ControllerConfig, apply_updates
from .following import Following
from .fused_tick import FusedTick
from .in_place import apply_in_place, in_place_changes
from .inputs import Inputs
from .journal import ODOMETRY_SIZE, SNAPSHOT_HEAD, STREAM_SIZE, Code, Journal
from .model_fit import FittedModel
from .odometry import place_in_base
from .prediction import SNAPSHOT_EXTRA, SNAPSHOT_PER_JOINT, StatePrediction
from .recorder import Recorder
from .robot_groups import held_causes, hold_stopped_robots
from .status import STATUSES, Status, StepOutput
from .stream_snapshot import stream_from, stream_into

Array = NDArray[np.float64]


def _why(exc: Exception) -> str:
    """A failed solve's reason: the project's error as it is, another with its type."""
    return str(exc) if isinstance(exc, ItascError) else f"{type(exc).__name__}: {exc}"


class Controller:
    """The control loop between inputs and the iTaSC scene (one instance per robot model).

    Args:
        tree: the robot's kinematic tree.
        config: the configuration (validated here).

    Raises:
        ConfigError: the configuration does not fit the tree (unknown joint, link...) or is
            invalid.

    Attributes:
        following: how much of each task the commands give, and the report when one stays
            short.
    """

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        self._model = model = FittedModel(tree, config)
        n = model.n_joints
        self._qdot = np.zeros(n)  # (n,) the command being made [rad/s or m/s]
        self._halted = True  # the last command sent (if any) was zero
        self._recorded = False  # this tick's record was written by its compiled command
        self._enabled = True
        # The tick's one look at its time and inputs (FusedTick.look: the time of the last
        # tick and since it, the joint state's age, freshness), packed for its compiled call
        self._clock = np.zeros(tick.CLOCK_SIZE)
        self._clock[tick.LAST_STEP], self._clock[tick.ELAPSED] = -math.inf, model.dt
        self._clock[tick.JOINT_AGE] = math.inf
        self._zeros = np.zeros(n)  # (n,) the zero command
        self._ramp = np.zeros(n)  # (n,) a held robot's step of its stop ramp
        self._capped = np.zeros(n)  # (n,) a solve's command capped while a state is late
        self._recorder = Recorder(n)
        self._inputs = Inputs(model, self._recorder, self._last_command)
        self._recorder.watch(
            self._inputs.targets, self._inputs.stream_states, self._inputs.stream_arrays
        )
        #: the positions a tick solves at: the joint state's, advanced by the commands sent
        #: once it is late
        self._prediction = StatePrediction(n, model.dt)
        self._aim = TargetAim(model, self._inputs, self._prediction)
        self.following = Following(model.scene.result.constraint_names)
        self._fused = FusedTick(
            model, self._inputs, self._prediction, self._recorder, self._clock, self._capped,
            self._qdot,
        )  # fmt: skip
        model.warm_up()
        js = self._inputs.joints
        tick.warm_up(js.s, self._inputs.stream_states, js.q, js.stamps, self._prediction.state)
        self._fused.warm_up()

    @classmethod
    def from_urdf(cls, xml: str | bytes, config: ControllerConfig) -> Controller:
        """Build the tree of a URDF document and a controller on it.

        Raises:
            UrdfError: the URDF is invalid. ConfigError: the configuration does not fit.
        """
        return cls(KinematicTree.from_urdf(xml), config)

    def _last_command(self) -> Array | None:
        """(n,) the last command [rad/s or m/s], or None at rest."""
        return None if self._halted else self._qdot

    # ------------------------------------------------------------------------- the inputs
    def set_joint_state(
        self,
        names: Sequence[str],
        positions: ArrayLike,
        received: float,
        header_stamp: float | None = None,
        robot_received: ArrayLike | None = None,
    ) -> None:
        """Accept a joint state (:meth:`Inputs.set_joint_state <.inputs.Inputs.set_joint_state>`).

        Raises:
            InputError: the state is refused; the last good one is kept.
        """
        self._inputs.set_joint_state(names, positions, received, header_stamp, robot_received)

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
        """Set a constraint's target pose (:meth:`Inputs.set_target <.inputs.Inputs.set_target>`).

        Raises:
            InputError: the pose is refused; the target is unchanged.
        """
        self._inputs.set_target(
            constraint, frame, position, quat_xyzw, received, header_stamp, jump
        )

    def set_target_twist(
        self,
        constraint: str,
        frame: str,
        twist: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Set a target's twist (:meth:`.inputs.Inputs.set_target_twist`).

        Raises:
            InputError: the twist is refused; the last one is kept.
        """
        self._inputs.set_target_twist(constraint, frame, twist, received, header_stamp)

    def set_jog_twist(
        self,
        constraint: str,
        frame: str,
        twist: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Jog the constraint's effector (:meth:`.inputs.Inputs.set_jog_twist`).

        Raises:
            InputError: the jog twist is refused.
        """
        self._inputs.set_jog_twist(constraint, frame, twist, received, header_stamp)

    def set_odometry(
        self,
        frame: str,
        child: str,
        values: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Take the base's odometry (:meth:`Inputs.set_odometry <.inputs.Inputs.set_odometry>`).

        Raises:
            InputError: the odometry is refused; the last good one is kept.
        """
        self._inputs.set_odometry(frame, child, values, received, header_stamp)

    def take_odometry(self, old: Controller) -> None:
        """Go on from ``old``'s odometry (a new model of the same robot and world frame)."""
        self._inputs.take_odometry(old._inputs)

    # ------------------------------------------------------------------------- read-outs
    @property
    def config(self) -> ControllerConfig:
        """The configuration in force."""
        return self._model.config

    @property
    def scene(self) -> Scene:
        """The iTaSC scene of the configuration's constraints."""
        return self._model.scene

    @property
    def tree(self) -> KinematicTree:
        """The view of :attr:`full_tree` that moves :attr:`joint_names` and holds the others."""
        return self._model.tree

    @property
    def full_tree(self) -> KinematicTree:
        """The robot's tree as given."""
        return self._model.full_tree

    @property
    def joint_names(self) -> list[str]:
        """The commanded joints, in the order of every command."""
        return self._model.joint_names

    @property
    def base_joints(self) -> tuple[str, ...]:
        """The commanded base's virtual joints (none for a fixed base)."""
        return self._model.base_joints

    @property
    def base_root(self) -> str:
        """The base's link: the odometry's child frame."""
        return self._model.base_root

    @property
    def ignored_joint_limits(self) -> list[str]:
        """``joint_limits`` entries of joints the URDF does not have."""
        return self._model.ignored_joint_limits

    @property
    def n_joints(self) -> int:
        """Number of commanded joints."""
        return self._model.n_joints

    @property
    def period(self) -> float:
        """Nominal control period 1 / control_rate [s]."""
        return self._model.dt

    @property
    def velocity_limits(self) -> Array:
        """(n,) the velocity limits the commands keep [rad/s or m/s] (``velocity_scale``'d).

        After a live change lowers them, a faster joint slows down to them at its deceleration
        limit: the commands stay within :attr:`hard_velocity_limits` meanwhile.
        """
        return self._model.velocity_limits

    @property
    def hard_velocity_limits(self) -> Array:
        """(n,) the velocity limits no command ever exceeds (the URDF's and joint_limits')."""
        return self._model.hard_velocity_limits

    @property
    def pose_constraints(self) -> list[str]:
        """Names of the constraints that take a target pose from outside, in config order."""
        return self._model.pose_constraints

    def constraint(self, name: str) -> Constraint:
        """The scene's constraint object by name.

        Raises:
            ConfigError: naming the constraints.
        """
        return self._model.constraint(name)

    @property
    def journal(self) -> Journal | None:
        """Where inputs and ticks are recorded, or None (see :meth:`attach_journal`)."""
        return self._recorder.journal

    @property
    def last_rejection(self) -> str:
        """The reason of the latest refused input ('' before the first)."""
        return self._inputs.last_rejection

    @property
    def rejections(self) -> int:
        """Inputs refused so far."""
        return self._inputs.rejections

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
        return self._inputs.joints.has_state

    @property
    def joint_state_stamp(self) -> float:
        """Reception time [s] of the last accepted joint state (-inf before the first)."""
        return self._inputs.joints.stamp

    @property
    def q(self) -> Array:
        """(n,) a copy of the last accepted joint positions [rad or m]."""
        return self._inputs.joints.q.copy()

    def poses(self, constraint: str) -> tuple[Array, Array | None]:
        """Effector pose and target pose (4, 4) in the root frame at the current state.

        See :meth:`Inputs.poses <.inputs.Inputs.poses>`.
        """
        return self._inputs.poses(constraint)

    def given_target(self, constraint: str) -> tuple[str, Array] | None:
        """The constraint's target pose (4, 4) as given, and its frame ('' or the world's)."""
        return self._inputs.given_target(constraint)

    def odometry(self) -> tuple[Array, Array, float] | None:
        """The base's pose (4, 4) and twist (6,) in the world and their reception time [s]."""
        return self._inputs.odometry()

    @property
    def odometry_counts(self) -> tuple[int, int, float]:
        """Odometry refused as a jump, placed late (:attr:`.Odometry.behind`), the last lag [s]."""
        odom = self._inputs.odom
        return odom.jumps, odom.behind, odom.behind_by

    def target_stamp(self, constraint: str) -> float:
        """Reception time [s] of the constraint's last target pose (-inf before the first)."""
        return self._inputs.target_stamp(constraint)

    def target_jumps(self, constraint: str) -> int:
        """Poses of the constraint's target that implied a speed above the limits (jumps)."""
        return self._inputs.target_jumps(constraint)

    def target_twists_capped(self, constraint: str) -> int:
        """Explicit twists of the constraint's target scaled down to the speed limits."""
        return self._inputs.target_twists_capped(constraint)

    def target_reach(self, constraint: str) -> float:
        """Largest distance [m] of the constraint's target from the root (farther: refused)."""
        return self._inputs.target_reach(constraint)

    def fed_forward_twist(self, constraint: str) -> Array:
        """(6,) the target twist the last ``step`` fed forward (root frame) [m/s, rad/s]."""
        return self._inputs.fed_forward_twist(constraint)

    def target_twist_estimate(self, constraint: str) -> Array:
        """(6,) the filtered twist estimated from successive target poses (root frame)."""
        return self._inputs.target_twist_estimate(constraint)

    def jog_late_twists(self, constraint: str) -> int:
        """Jog twists received after their jog had stopped, stamped as its continuation."""
        return self._inputs.jog_late_twists(constraint)

    # ------------------------------------------------------------------------- the tick
    def step(self, now: float) -> StepOutput:
        """One control tick at time ``now`` [s] (the clock of the input stamps).

        Reads the inputs (the status they allow), updates the references, solves inside this
        tick's motion box, records the tick and returns the command. Any other status while
        the last command was motion ramps that command to zero within the motion limits. The
        common active tick makes these calls in one compiled call
        (:class:`~.fused_tick.FusedTick`), the same calls on the same arrays.

        Returns:
            A new :class:`StepOutput`; publish ``qdot`` when ``publish`` is True.
        """
        now = float(now)
        fused = self._fused_command(now)  # the common tick in one compiled call
        if fused is not None:
            out, judged = fused
            self._judge_following(now, out, judged)
            return self._recorded_tick(now, out, judged)
        status, reason = self._status(now)
        if status is Status.ACTIVE:
            js, robots = self._inputs.joints, self._inputs.robots
            self._aim.update(now, self._clock.item(tick.ELAPSED))
            held = (
                hold_stopped_robots(self._model, robots, js.q, self._ramp, now)
                if robots.any_stale
                else None
            )
            out, judged = self._command(status)
            if held is not None and out.status is Status.ACTIVE:
                out.reason, out.held = held
            self._judge_following(now, out, judged)
        elif self._can_stop_smoothly():
            out, judged = self._stop(status, reason), None
        else:
            out, judged = self._zero(status, reason, None), None
        return self._recorded_tick(now, out, judged)

    def _recorded_tick(
        self, now: float, out: StepOutput, judged: tuple[int, float] | None
    ) -> StepOutput:
        """The end of the tick at ``now`` [s] that made ``out``: its command sent, its record.

        ``judged``: what the compiled command's judgement found (it sent the command), else
        None.
        """
        if out.result is None:
            self.following.idle()
        if out.publish and judged is None:
            self._prediction.publish(out.qdot)
        if self._recorded:  # by the compiled command (the journal's TICK record)
            self._recorded = False
        elif self._recorder.journal is not None:
            js = self._inputs.joints
            self._recorder.tick(now, out, js.s, js.q)
        return out

    def _fused_command(self, now: float) -> tuple[StepOutput, tuple[int, float] | None] | None:
        """The active tick at ``now`` [s] in one compiled call, from its look to its record.

        (:class:`~.fused_tick.FusedTick`) when its inputs and its scene allow it; else, or
        when the call stopped after the tick's look, None: the tick's look is made, its parts
        make the rest.
        """
        scene, fused = self._model.scene, self._fused
        ready = False
        if self._enabled and fused.possible() and self._targets_active():
            following = self._following_of(scene.result)
            try:
                scene.ready(self._prediction.q, self._model.dt)
                ready = True
            except Exception:  # the parts meet it again, after the look (a fault)
                ready = False
        if not ready or not scene.solves_in_one_call:
            fused.look(now)
            return None
        try:
            code, worst, longest, self._recorded = fused.run(now, following)
        except Exception as exc:  # after the look: the solve's fault
            return self._fault(f"solve failed: {_why(exc)}", None), None
        return None if code == LOOKED else self._command_of(Status.ACTIVE, code, worst, longest)

    def _judge_following(
        self, now: float, out: StepOutput, judged: tuple[int, float] | None
    ) -> None:
        """How much of each task the command gives (:class:`Following`); its report in ``out``.

        ``judged``: the tasks' fractions of ``out.qdot`` were measured and judged already (the
        compiled command's, :meth:`_command`): what it found (the task short the longest
        and for how long), else None.
        """
        res = out.result
        if res is None or out.status is not Status.ACTIVE:
            self.following.idle()
            return
        scene = self._model.scene
        causes = scene.limiting if not out.held else held_causes(scene, out.held)
        if judged is None:
            self._model.scene.following(out.qdot, self._following_of(res).fraction)
            self.following.update(now, self._clock.item(tick.ELAPSED), causes, out.qdot)
        else:
            self.following.report_on(*judged, now, causes, out.qdot)
        out.shortfall = self.following.report

    def _status(self, now: float) -> tuple[Status, str]:
        """What the inputs allow, and why when it is not 'active'.

        After the tick's look (:meth:`.fused_tick.FusedTick.look`).
        """
        if not self._enabled:
            return Status.DISABLED, "~/enable is false: zero command sent, then silence"
        if not self._inputs.joints.has_state:
            return Status.WAITING, "no joint state received yet"
        timeout, base_joints = self._model.config.input_timeout, self._model.base_joints
        clock = self._clock
        age = clock.item(tick.JOINT_AGE)
        if not clock.item(tick.JOINTS_FRESH):
            if age < 0.0:
                return Status.STALE, (
                    f"the last joint state was received {-age:.3f} s after now: the clock "
                    "jumped back"
                )
            return Status.STALE, (f"joint states are {age:.3f} s old (input_timeout {timeout} s)")
        if not clock.item(tick.ODOM_FRESH) and (base_joints or self._holds_world_target()):
            age = now - self._inputs.odom.stamp
            return Status.STALE, (
                f"odometry is {age:.3f} s old (input_timeout {timeout} s) "
                + ("and the base is commanded" if base_joints else "and a target is held "
                   "in the world frame")
            )  # fmt: skip
        if self._targets_active():
            return Status.ACTIVE, ""
        return Status.WAITING, "no target received yet"

    def _targets_active(self) -> bool:
        """True when a task has a target: the tick is active (its inputs fresh).

        A term that resolves redundancy starts no motion: it acts once a task has a target
        (one from outside when some task takes one: not a grasp held between two robots);
        the scene is told (:meth:`~itasc_ros.core.solve.Scene.engage_redundancy`).
        """
        active = engaged = False
        for c in self._model.constraints:
            if c.enabled and c.has_target and not c.resolves_redundancy:
                active = True
                if not self._inputs.targets or c.name in self._inputs.targets:
                    engaged = True
                    break
        self._model.scene.engage_redundancy(engaged)
        return active

    def _holds_world_target(self) -> bool:
        """True when an enabled constraint's target is held in the world frame."""
        for name, st in self._inputs.targets.items():
            if st.world and self._model.scene.get(name).enabled:
                return True
        return False

    def _following_of(self, res: SolveResult) -> Following:
        """The :class:`Following` of ``res``'s tasks (a new one once the scene's tasks changed)."""
        if self.following.source is not res.constraint_names:
            self.following = Following(res.constraint_names)
        return self.following

    def _command(self, status: Status) -> tuple[StepOutput, tuple[int, float] | None]:
        """This tick's solve at the predicted joint positions and its command, or a fault.

        The scene's limits include this tick's motion box (:class:`~itasc_ros.core.solve.limits.
        MotionBox`: the acceleration, jerk and braking limits from the last command at the
        nominal period), so every priority level of the solve keeps them (a lower level cannot
        take a higher one's share of a limit). Its command is taken in one compiled call
        (:func:`~itasc_ros.core.control._command_kernels.take_solved`): no faster than the last
        fresh one while a joint state is late, clipped to the hard velocity limits, taken by
        the limiter (the limiter makes it when it is outside the box: the box and the collision
        rows could not both be kept), sent, and the tasks' fractions of it measured and judged.
        A scene whose tick is compiled makes the solve inside that call, on the tick's plan
        (:meth:`~.fused_tick.FusedTick.command`).

        Returns:
            The output, and once its command was sent, what the judgement of its fractions
            found (:func:`~itasc_ros.core.control.following.judge_tasks`); else None.
        """
        scene, pred, model = self._model.scene, self._prediction, self._model
        lim, following = model.limiter, self.following
        if following.source is not scene.result.constraint_names:  # the scene's tasks changed
            following = self._following_of(scene.result)
        try:
            if scene.compiled_tick:  # in one call on the tick's plan, its record too
                scene.ready(pred.q, model.dt)
                code, worst, longest, self._recorded = self._fused.command(following)
            else:
                scene.run(scene.prepare(pred.q, model.dt))
                code, worst, longest = take_solved(
                    *scene.solve_buffers, model.dt, pred.values, self._capped, model.vmax_hard,
                    self._qdot, lim.v, lim.a, lim.active, pred.sent, following.tasks,
                    self._clock,
                )  # fmt: skip
        except Exception as exc:  # whatever broke, the robot gets a zero, not a crash
            self._recorder.settle(False)
            return self._fault(f"solve failed: {_why(exc)}", None), None
        return self._command_of(status, code, worst, longest)

    def _command_of(
        self, status: Status, code: int, worst: int, longest: float
    ) -> tuple[StepOutput, tuple[int, float] | None]:
        """The output of the compiled command's ``code`` (and its judgement), or a fault."""
        scene, pred, model = self._model.scene, self._prediction, self._model
        try:
            res = scene.solved(code != NOT_SOLVED)
        except ItascError as exc:
            return self._fault(f"solve failed: {exc}", None), None
        if code == NOT_FINITE:
            return self._fault("solve produced non-finite joint velocities", res), None
        if code == OUTSIDE:  # outside the box: the limiter makes the command
            model.limiter.step(self._qdot, pred.q, model.dt, 2.0 * model.dt, self._qdot)
        self._halted = False
        out = StepOutput(status, True, self._qdot.copy(), self._inputs.joints.q.copy(), res, "")
        return out, (worst, longest) if code == SENT else None

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
        return bool(self._model.limiter.active)

    def _can_stop_smoothly(self) -> bool:
        """Ramp the last command down within the motion limits rather than send a zero."""
        return self._model.limiter.active and self._model.limiter.moving and not self._halted

    def _stop(self, status: Status, reason: str) -> StepOutput:
        """One step of the ramp to zero within the motion limits, open loop.

        It needs no joint state (they may be stale): the command only slows down, at the
        deceleration and jerk limits over the nominal period. The braking curve of every active
        command keeps half the deceleration limit in reserve before the position limits, so
        this ramp stops a joint within half the distance it had left.
        """
        self._model.limiter.stop(self._model.dt, self._qdot)
        self._halted = not self._model.limiter.moving
        if status is Status.DISABLED:
            if not self._halted:
                status = Status.STOPPING
                reason = "~/enable is false: decelerating within the joint limits, then zero"
        elif not self._halted:
            reason = f"{reason}; decelerating to zero within the joint limits"
        return StepOutput(
            status, True, self._qdot.copy(), self._inputs.joints.q.copy(), None, reason
        )

    def take_motion(self, old: Controller) -> bool:
        """Go on from ``old``'s last command (a new model of the same joints): no jump.

        The next tick starts from ``old``'s command and its acceleration (at rest too: a ramp's
        last zero has one until a tick passes): it solves inside the box they leave, or ramps
        them down. Returns False (nothing moving taken; the caller stops a commanding ``old``
        with a zero) when ``old`` is at rest, the joints differ or a limiter is off.
        """
        lim, last = self._model.limiter, old._model.limiter
        if old.joint_names != self.joint_names or not (last.active and lim.active):
            return False
        lim.v[:] = last.v
        lim.a[:] = last.a
        if not old.commanding:
            return False
        self._qdot[:] = old._model.limiter.v
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
        self._model.limiter.halt()
        return StepOutput(
            status, publish, self._zeros.copy(), self._inputs.joints.q.copy(), res, reason
        )

    # ------------------------------------------------------------------------- live parameters
    def set_enabled(self, enabled: bool) -> None:
        """Enable or disable the output (disabled: zeros once, then silence)."""
        self._enabled = bool(enabled)
        if self._recorder.journal is not None:
            self._recorder.journal.enabled(self._enabled)

    def update_parameters(self, **kw: Any) -> None:
        """Change settings live; all or nothing (:meth:`prepare_parameters`, then commit).

        Keys: those of :data:`~itasc_ros.core.control.config.LIVE_KEYS`; per constraint either
        ``constraints={name: {field: value}}`` or the flat ROS name
        ``**{'constraints.<name>.<field>': value}`` with the live fields of its type.

        Raises:
            ConfigError: unknown or structural key (naming the live ones), invalid value;
                nothing is changed.
        """
        self.commit_parameters(self.prepare_parameters(**kw))

    def prepare_parameters(self, **kw: Any) -> PreparedChange:
        """Check a live change and build what it needs; this controller is not touched.

        Safe on another thread while :meth:`step` runs: a new scene is built on a view of the
        tree of its own (its work arrays are not the running scene's). Keys as in
        :meth:`update_parameters`.

        Raises:
            ConfigError: as :meth:`update_parameters`; nothing is changed.
        """
        changes = in_place_changes(self._model.config, kw)
        if changes is not None:  # scalars: set on the running scene when committed
            return PreparedChange(self._model.config, changes)
        cfg = apply_updates(self._model.config, **kw)
        m = self._model
        scene = m.build_scene(cfg, m.tree.select_joints(m.joint_names))
        return PreparedChange(cfg, None, scene, m.build_limiter(cfg, scene))

    def commit_parameters(self, change: PreparedChange) -> None:
        """Put a change of :meth:`prepare_parameters` in force (between two ticks).

        Scalars are set on the running scene; a new scene takes the targets over and the
        motion goes on from the command it had reached.
        """
        m = self._model
        if change.in_place is not None:
            m.set_config(apply_in_place(m.config, m.scene, change.in_place))
            return
        cfg, scene, limiter = change.config, change.scene, change.limiter
        assert scene is not None and limiter is not None  # a structural change has both
        for old in self._model.scene.constraints:  # carry the targets over
            new = scene.get(old.name)
            new.take_run_state(old)  # its streamed target, the twist its demand limit saw
        for st in self._inputs.targets.values():
            st.applied[:] = 0.0  # the new constraints start without a twist
            for tw in (st.estimate, st.twist):  # within the (new) speed limits
                cap_twist(tw, cfg.max_target_speed, cfg.max_target_angular_speed)
        limiter.v[:], limiter.a[:] = m.limiter.v, m.limiter.a  # the motion goes on
        m.refit(cfg, scene, limiter)  # the view of the tree the new scene computes, too
        self._inputs.set_reach()

    # ------------------------------------------------------------------------- journal, snapshot
    def attach_journal(self, journal: Journal | None) -> None:
        """Record every accepted input and tick into ``journal`` (None: stop recording).

        Attaching writes a SNAPSHOT of the input state first, so that the journal can be
        played back from here (:mod:`itasc_ros.core.control.playback`).
        """
        self._recorder.attach(journal)
        if journal is not None:
            self.write_snapshot(journal)

    def write_snapshot(self, journal: Journal) -> None:
        """Append a SNAPSHOT record of the input state (:mod:`~itasc_ros.core.control.journal`)."""
        rec = journal.begin(Code.SNAPSHOT, SNAPSHOT_HEAD + self._state_size())
        rec[0], rec[1], rec[2] = journal.revision, journal.urdf_tag, journal.model
        self._state_into(rec[3:])

    def state_values(self) -> Array:
        """(SNAPSHOT size - 3,) the input state as a SNAPSHOT holds it (for comparisons)."""
        out = np.zeros(SNAPSHOT_HEAD - 3 + self._state_size())
        self._state_into(out)
        return out

    def _state_size(self) -> int:
        """Values of the input state after the SNAPSHOT head."""
        n_all, k = self._model.q_full.shape[0], len(self._inputs.targets)
        n = self._inputs.joints.q.shape[0]
        prediction = SNAPSHOT_PER_JOINT * n + SNAPSHOT_EXTRA + 1  # and the states' interval
        rest = 1 + 2 * n + ODOMETRY_SIZE + self._inputs.robots.size + prediction + MEMORY_SIZE
        return n_all + k * STREAM_SIZE + rest

    def _state_into(self, out: Array) -> None:
        """The input state from ``n_all`` on (a SNAPSHOT payload without its first three)."""
        n_all, k = self._model.q_full.shape[0], len(self._inputs.targets)
        js = self._inputs.joints
        out[0:4] = (n_all, k, self._enabled, self._halted)
        js.head_into(out[4:10])
        h = SNAPSHOT_HEAD - 3
        out[h : h + n_all] = js.all_positions()
        i = h + n_all
        for name, st in self._inputs.targets.items():
            st.given_twist[:] = self._model.scene.get(
                name
            ).target_twist  # as the last solve had it
            stream_into(st, out[i : i + STREAM_SIZE])
            i += STREAM_SIZE
        n = self._inputs.joints.q.shape[0]
        out[i] = self._clock[tick.LAST_STEP]
        out[i + 1 : i + 1 + n] = self._model.limiter.v
        out[i + 1 + n : i + 1 + 2 * n] = self._model.limiter.a
        i += 1 + 2 * n
        self._inputs.odom.state_into(out[i : i + ODOMETRY_SIZE])
        i += ODOMETRY_SIZE
        g = self._inputs.robots.size
        out[i : i + g] = self._inputs.robots.stamp  # each robot's joint-state reception
        out[i + g] = js.interval
        end = out.shape[0] - MEMORY_SIZE
        self._prediction.state_into(out[i + g + 1 : end])  # a late state's prediction
        out[end:] = self._model.scene.solve_memory  # where the next solve's SVD starts

    def restore_state(self, snapshot: Array) -> None:
        """Set the input state from a SNAPSHOT payload (the inverse of :meth:`write_snapshot`).

        Raises:
            ConfigError: the snapshot is of another robot or another set of targets.
        """
        s = np.asarray(snapshot, dtype=float)
        n_all, k = self._model.q_full.shape[0], len(self._inputs.targets)
        if s.shape[0] != SNAPSHOT_HEAD + self._state_size() or (s[3], s[4]) != (n_all, k):
            raise ConfigError(
                f"snapshot of {int(s[3]) if s.shape[0] > 4 else '?'} joints and "
                f"{int(s[4]) if s.shape[0] > 4 else '?'} targets does not fit this controller "
                f"({n_all} joints, {k} targets)"
            )
        js, robots = self._inputs.joints, self._inputs.robots
        self._enabled, self._halted = bool(s[5]), bool(s[6])
        n = js.q.shape[0]
        at_odom = SNAPSHOT_HEAD + n_all + k * STREAM_SIZE + 1 + 2 * n
        self._inputs.odom.state_from(s[at_odom : at_odom + ODOMETRY_SIZE])
        at_robots = at_odom + ODOMETRY_SIZE
        g = robots.size
        robots.stamp[:] = s[at_robots : at_robots + g]
        # each joint's reception time: the state's, or its robot's
        js.restore(s[7:13], s[SNAPSHOT_HEAD : SNAPSHOT_HEAD + n_all], float(s[at_robots + g]))
        if g:
            robots.joint_stamps(js.stamps)
        self._prediction.state_from(s[at_robots + g + 1 : -MEMORY_SIZE])
        self._model.scene.solve_memory[:] = s[-MEMORY_SIZE:]
        i = self._restore_streams(s, SNAPSHOT_HEAD + n_all)  # world targets: the base first
        self._clock[tick.LAST_STEP] = s[i]
        self._model.limiter.v[:] = s[i + 1 : i + 1 + n]
        self._model.limiter.a[:] = s[i + 1 + n : i + 1 + 2 * n]
        self._qdot[:] = self._model.limiter.v  # the last command (the effector's twist at a step)

    def _restore_streams(self, s: Array, i: int) -> int:
        """Set the target streams from snapshot ``s`` at ``i`` on; returns the index after."""
        inputs = self._inputs
        for name, st in inputs.targets.items():
            stream_from(st, s[i : i + STREAM_SIZE])
            c = self._model.scene.get(name)
            if st.has_pose and not st.world:  # (the next tick aims it again, as live)
                c.set_target(st.pose, check=False)
            c.set_target_twist(st.given_twist if st.given_twist.any() else None)
            if st.world:  # as the last tick placed it (the next one places it again)
                place_in_base(
                    inputs.base_now(), inputs.odom.twist, st.world_target, st.world_twist,
                    inputs.feed_base, st.placed, st.placed_twist,
                )  # fmt: skip
                c.set_target(st.placed, check=False)
            c.mark_twist_seen()  # the snapshot is taken between ticks: the last solve's twist
            i += STREAM_SIZE
        return i


@dataclass
class PreparedChange:
    """A live change checked and built, not yet in force.

    Made by :meth:`Controller.prepare_parameters`, put in force by
    :meth:`Controller.commit_parameters`.

    Attributes:
        config: the configuration it puts in force.
        in_place: the scalar changes set on the running scene, or None for a new scene.
        scene: the new scene (a structural change).
        limiter: the new motion limits (a structural change).
    """

    config: ControllerConfig
    in_place: Any | None
    scene: Scene | None = None
    limiter: MotionLimiter | None = None


__all__ = ["STATUSES", "Controller", "PreparedChange", "Status", "StepOutput"]
