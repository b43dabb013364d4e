"""Controller: all the control logic between input messages and the scene, ROS-free.

The rclpy node and the offline replay drive the same :class:`Controller`, so that a replay is
deterministic and identical to what the node did. Inputs are plain values with float-second
stamps (the node's ROS clock, or bag timestamps); :meth:`Controller.step` returns what to
publish.

Safety rules (SAFETY.md lists every case):

* no command before a joint state and a target arrived (``publish`` False);
* joint states older than ``input_timeout`` (or received "in the future" of ``now``: the
  clock jumped back) -> zeros once, then silence until fresh input;
* disabled -> zeros once, then silence; a failed solve -> zeros once and status 'fault';
* never NaN/Inf; ``|q'|`` never above the URDF velocity limits (times ``velocity_scale``).

Bad inputs raise :class:`~itasc_ros.core.errors.InputError` naming the reason; the last good
input is kept. Bad means: NaN/Inf or larger than :data:`HUGE`, a wrong length, missing or repeated
commanded joints, a zero quaternion, an unknown constraint or frame, a target beyond the reach,
or a header stamp out of order or leaping ahead within a live stream
(:class:`~itasc_ros.core.control.streams.StampOrder`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..constraints import Constraint
from ..errors import ConfigError, InputError, ItascError, TargetNotSet
from ..kinematics import spatial
from ..kinematics._kernels import clip_finite
from ..kinematics.tree import KinematicTree
from ..solve.motion_limits import JointLimits, MotionLimiter
from ..solve.scene import Scene, SolveResult
from ._target_kernels import (
    BAD_POSITION,
    BAD_QUATERNION,
    ZERO_QUATERNION,
    cap_twist,
    filter_twist,
    is_target_jump,
    pose_from_position_quat,
)
from .config import ControllerConfig, apply_updates
from .journal import (
    SNAPSHOT_HEAD,
    STREAM,
    STREAM_SIZE,
    TICK_TARGET_SIZE,
    Code,
    Journal,
    TwistSource,
    stamp_of,
    stamp_value,
)
from .streams import HUGE, StampOrder, TargetStream, as_array, fresh, usable

Array = NDArray[np.float64]


class Status(str, Enum):
    """What a control tick decided (:attr:`StepOutput.status`); compares equal to its value."""

    WAITING = "waiting"  # no joint state or no target yet
    ACTIVE = "active"  # commanding
    STALE = "stale"  # joint states too old (or from the future): zero once, then silence
    DISABLED = "disabled"  # ~/enable false: zero once, then silence
    FAULT = "fault"  # the solve failed: zero once, then silence
    STOPPING = "stopping"  # disabled while moving: decelerating within the limits, then zero

    def __str__(self) -> str:
        return self.value


STATUSES = tuple(s.value for s in Status)
"""The values of :class:`Status`."""

_STATUS_CODE = {s: i for i, s in enumerate(Status)}  # journal TICK status codes


@dataclass
class StepOutput:
    """What one :meth:`Controller.step` decided.

    Attributes:
        status: see :class:`Status`.
        publish: True when a command must be sent now (an active one, or the single zero).
        qdot: (n,) joint velocities [rad/s or m/s] in ``joint_names`` order (zeros unless
            active).
        q: (n,) the current joint positions [rad or m] (last good joint state).
        result: the scene's solve result (reused by the next step: copy it to keep it), or
            None when no solve ran.
        reason: why the status is not 'active' ('' when it is).
    """

    status: Status
    publish: bool
    qdot: Array
    q: Array
    result: SolveResult | None = None
    reason: str = ""


class Controller:
    """The control loop between inputs and the iTaSC scene (one instance per robot model).

    Args:
        tree: the robot's kinematic tree.
        config: the configuration (validated here).

    Raises:
        ConfigError: the configuration does not fit the tree (unknown joint, link...) or is
            invalid.
    """

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        self.config = copy.deepcopy(config).validate()
        self.full_tree = tree
        joints = self.config.joints or tree.joint_names
        unknown = [j for j in joints if j not in tree.joint_names]
        if unknown:
            raise ConfigError(
                f"joints {unknown} are not movable joints of the URDF; joints "
                f"are: {', '.join(tree.joint_names)}"
            )
        self.joint_names: list[str] = list(joints)
        self.tree = tree.select_joints(self.joint_names)
        n = len(self.joint_names)
        self._all = tree.all_joint_names
        self._held = [j for j in self._all if j not in self.joint_names]
        self._q_full = np.zeros(len(self._all))
        self._q_full[[self._all.index(j) for j in self.joint_names]] = self.tree.neutral()
        self.tree.set_fixed_positions(self._q_full)
        for c in self.config.constraints:  # e.g. an empty effector link: the tip link
            c.settings = c.kind.resolve_settings(c.settings, self.tree)
        self.scene = self._build_scene(self.config)
        self._constraints = self.scene.constraints
        self._targets = {c.name: TargetStream() for c in self.config.constraints if c.takes_target}
        self._set_reach(self.config)
        self._limiter = self._build_limiter(self.config, self.scene)
        self._vmax = self._limiter.vmax  # (n,) the URDF's and joint_limits' velocity limits
        self._dt = 1.0 / self.config.control_rate
        self._last_step = -math.inf  # [s] time of the last step
        self._elapsed = self._dt  # [s] time since the last step, at most input_timeout
        self._zeros6 = np.zeros(6)
        self._q = np.zeros(n)
        self._zeros = np.zeros(n)
        self._qdot = np.zeros(n)
        self._has_state = False
        self._js_stamp = -math.inf
        self._js_header = math.nan  # header stamp of the last joint state (NaN: unstamped)
        self._js_order = StampOrder()
        self._names_cache: list[str] | None = None
        self._idx = np.zeros(n, dtype=np.int64)
        self._held_idx: list[tuple[int, int]] = []
        self._enabled = True
        self._halted = True  # the last command sent (if any) was zero
        self.last_rejection = ""
        self.rejections = 0
        self.journal: Journal | None = None  # see attach_journal
        self._cmd_in_all = np.array([self._all.index(j) for j in self.joint_names], dtype=int)
        self._held_in_all = np.array([self._all.index(j) for j in self._held], dtype=int)
        self._q_all = np.zeros(len(self._all))  # work array: positions of every joint
        self._commands_all = self.joint_names == self._all
        self._stream_index = {name: i for i, name in enumerate(self._targets)}
        self._warm_up()

    def _warm_up(self) -> None:
        """Run one solve now so that compiling/loading the kernels never delays a tick."""
        try:
            self.scene.solve(self.tree.neutral(), self._dt)
        except Exception:  # a model that cannot be solved faults in step(), never crashes here
            pass
        self._limiter.warm_up()

    # ------------------------------------------------------------------------- building
    def _set_reach(self, cfg: ControllerConfig) -> None:
        """Each target's largest distance from the root [m] (see ``target_reach_margin``).

        The effector's reach (:meth:`KinematicTree.reach`) plus the margin, plus how far from
        the effector the type keeps its target (``Constraint.target_distance``).
        """
        for name, st in self._targets.items():
            c = cfg.constraint(name)
            link = self.scene.get(name).effector_link
            reach = math.inf if link is None else self.tree.reach(link)
            st.reach = reach + c.kind.target_distance(c.settings) + cfg.target_reach_margin

    def _build_limiter(self, cfg: ControllerConfig, scene: Scene) -> MotionLimiter:
        """The motion limits of the commanded joints (``joint_limits``).

        Entries for joints this URDF does not have are ignored, as MoveIt and ros2_control do
        (e.g. another robot's limits after a URDF change); they are listed in
        :attr:`ignored_joint_limits` for the node to warn about.
        """
        limits = cfg.limits()
        self.ignored_joint_limits = sorted(
            j for j in limits if j not in self.full_tree.all_joint_names
        )
        lower, upper = scene.position_limits
        return MotionLimiter(
            scene.velocity_limits,
            [limits.get(j, JointLimits()) for j in self.joint_names],
            lower,
            upper,
        )

    def _build_scene(self, cfg: ControllerConfig) -> Scene:
        try:
            cons = [c.build() for c in cfg.constraints]
            return Scene(
                self.tree,
                cons,
                solver=cfg.solver,
                damping_max=cfg.damping_max,
                damping_epsilon=cfg.damping_epsilon,
                velocity_scale=cfg.velocity_scale,
                joint_limit_margin=cfg.joint_limit_margin,
                max_velocity=cfg.max_velocity,
            )
        except ConfigError:
            raise
        except ItascError as exc:
            raise ConfigError(str(exc)) from exc

    @classmethod
    def from_urdf(cls, xml: str | bytes, config: ControllerConfig) -> Controller:
        """Build the tree of a URDF document and a controller on it.

        Raises:
            UrdfError: the URDF is invalid. ConfigError: the configuration does not fit.
        """
        return cls(KinematicTree.from_urdf(xml), config)

    # ------------------------------------------------------------------------- properties
    @property
    def n_joints(self) -> int:
        """Number of commanded joints."""
        return len(self.joint_names)

    @property
    def enabled(self) -> bool:
        """False after ``set_enabled(False)``."""
        return self._enabled

    @property
    def commanding(self) -> bool:
        """True when the last command :meth:`step` asked to publish was motion, not zeros."""
        return not self._halted

    @property
    def has_joint_state(self) -> bool:
        """True once a valid joint state was accepted."""
        return self._has_state

    @property
    def joint_state_stamp(self) -> float:
        """Reception time [s] of the last accepted joint state (-inf before the first)."""
        return self._js_stamp

    @property
    def q(self) -> Array:
        """(n,) a copy of the last accepted joint positions [rad or m]."""
        return self._q.copy()

    @property
    def period(self) -> float:
        """Nominal control period 1 / control_rate [s]."""
        return self._dt

    @property
    def velocity_limits(self) -> Array:
        """(n,) the velocity limits every command respects [rad/s or m/s]."""
        return self._vmax.copy()

    @property
    def pose_constraints(self) -> list[str]:
        """Names of the constraints that take a target pose from outside, in config order."""
        return [c.name for c in self.config.constraints if c.takes_target]

    def target_stamp(self, constraint: str) -> float:
        """Reception time [s] of the constraint's last target pose (-inf before the first)."""
        return self._target_state(constraint).stamp

    def target_jumps(self, constraint: str) -> int:
        """Poses of the constraint's target that implied a speed above the limits (jumps)."""
        return self._target_state(constraint).jumps

    def jog_late_twists(self, constraint: str) -> int:
        """Jog twists received after their jog had stopped, stamped as its continuation.

        The jog stops when no twist came for ``input_timeout``; a twist whose header stamp then
        shows the stream went on was delivered too late: the delivery cut the jog.
        """
        return self._target_state(constraint).jog_late

    def target_twists_capped(self, constraint: str) -> int:
        """Explicit twists of the constraint's target scaled down to the speed limits."""
        return self._target_state(constraint).capped

    def target_reach(self, constraint: str) -> float:
        """Largest distance [m] of the constraint's target from the root (farther: refused)."""
        return self._target_state(constraint).reach

    def fed_forward_twist(self, constraint: str) -> Array:
        """(6,) the target twist the last :meth:`step` fed forward (root frame) [m/s, rad/s]."""
        return self._target_state(constraint).applied.copy()

    def target_twist_estimate(self, constraint: str) -> Array:
        """(6,) the filtered twist estimated from successive target poses (root frame)."""
        return self._target_state(constraint).estimate.copy()

    def constraint(self, name: str) -> Constraint:
        """The scene's constraint object by name.

        Raises:
            ConfigError: naming the constraints.
        """
        try:
            return self.scene.get(name)
        except ItascError as exc:
            raise ConfigError(str(exc)) from None

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
        if st is not None and st.has_pose:  # the target given, not the reference toward it
            return eff, st.pose.copy()
        try:
            return eff, c.target_pose(self.tree, self._q)
        except TargetNotSet:
            return eff, None

    # ------------------------------------------------------------------------- inputs
    def _reject(self, reason: str) -> InputError:
        self.last_rejection = reason
        self.rejections += 1
        return InputError(reason)

    def set_joint_state(
        self,
        names: Sequence[str],
        positions: ArrayLike,
        received: float,
        header_stamp: float | None = None,
    ) -> None:
        """Accept a joint state, mapped by name (extra joints ignored).

        Args:
            names: joint names of the message.
            positions: one position per name [rad or m].
            received: reception time [s] (the clock of :meth:`step`); staleness is measured
                from it.
            header_stamp: the message's own stamp [s] if it has one (not zero); checked
                against the last accepted one by :class:`StampOrder` (out of order, leaping ahead).

        Raises:
            InputError: missing or repeated commanded joints, positions of commanded joints
                NaN/Inf or above :data:`HUGE`, a length mismatch, a non-finite reception
                stamp or a stamp out of order / leaping ahead; the last good state is kept.
        """
        names = list(names)
        pos = as_array(positions, "joint state positions", self._reject)
        if pos.shape[0] != len(names):
            raise self._reject(f"joint state has {len(names)} names but {pos.shape[0]} positions")
        if not math.isfinite(received):
            raise self._reject(f"joint state reception time {received!r} is not finite")
        if names != self._names_cache:
            self._map_names(names)
        q = pos[self._idx]
        if not usable(q):
            finite = np.isfinite(q)
            bad = [self.joint_names[i] for i in np.flatnonzero(~finite)]
            if bad:
                raise self._reject(f"joint state has non-finite positions for {bad}")
            huge = [self.joint_names[i] for i in np.flatnonzero(np.abs(q) > HUGE)]
            raise self._reject(f"joint state has huge positions (> {HUGE:g}) for {huge}")
        why = self._js_order.check(header_stamp, received, self.config.input_timeout)
        if why:
            raise self._reject(f"joint state {why}")
        self._q[:] = q
        if self._held_idx:
            changed = False
            for i_msg, i_full in self._held_idx:
                v = pos[i_msg]
                if abs(v) <= HUGE and v != self._q_full[i_full]:
                    self._q_full[i_full] = v
                    changed = True
            if changed:
                self.tree.set_fixed_positions(self._q_full)
        self._has_state = True
        self._js_stamp = float(received)
        self._js_header = stamp_value(header_stamp)
        self._js_order.accept(header_stamp, received)
        if self.journal is not None:
            rec = self.journal.begin(Code.JOINT_STATE, 2 + self._q_all.shape[0])
            rec[0], rec[1] = received, self._js_header
            rec[2:] = self._all_positions()

    def _all_positions(self) -> Array:
        """(n_all,) positions of every movable joint (URDF order) as the controller has them."""
        if self._commands_all:
            return self._q  # every joint commanded, in URDF order
        q = self._q_all
        q[:] = self._q_full
        q[self._cmd_in_all] = self._q
        return q

    def _map_names(self, names: list[str]) -> None:
        index: dict[str, int] = {}
        dup: list[str] = []
        for i, n in enumerate(names):
            if n in index:
                dup.append(n)
            index[n] = i
        needed = [n for n in dup if n in self.joint_names or n in self._held]
        if needed:
            raise self._reject(f"joint state lists {needed} more than once")
        missing = [j for j in self.joint_names if j not in index]
        if missing:
            raise self._reject(
                f"joint state lacks joints {missing}; commanded joints are: "
                + ", ".join(self.joint_names)
            )
        self._idx[:] = [index[j] for j in self.joint_names]
        self._held_idx = [(index[j], self._all.index(j)) for j in self._held if j in index]
        self._names_cache = names

    def _target_state(self, constraint: str) -> TargetStream:
        st = self._targets.get(constraint)
        if st is None or not self.config.constraint(constraint).takes_target:
            raise self._reject(
                f"constraint {constraint!r} takes no target pose; constraints with a target "
                f"are: {', '.join(self.pose_constraints) or '(none)'}"
            )
        return st

    def _frame_pose(self, frame: str, what: str) -> Array | None:
        """Pose (4, 4) of a URDF link in the root frame at the current state; None = root."""
        if not frame or frame == self.tree.root_link:
            return None
        try:
            idx = self.tree.link_index(frame)
        except ItascError:
            raise self._reject(
                f"{what} frame {frame!r} is not a URDF link; use '' or "
                f"{self.tree.root_link!r} for the root, or one of: "
                + ", ".join(self.tree.link_names)
            ) from None
        if not self._has_state:
            raise self._reject(
                f"{what} in frame {frame!r} needs a joint state to transform it "
                f"to {self.tree.root_link!r}; none received yet"
            )
        self.tree.compute(self._q)
        return self.tree.pose_ref(idx).copy()

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
        asked_jump = jump
        p = as_array(position, f"target of {constraint!r}: position", self._reject)
        qt = as_array(quat_xyzw, f"target of {constraint!r}: quaternion", self._reject)
        if p.shape != (3,):
            code = BAD_POSITION
        elif qt.shape != (4,):
            code = BAD_QUATERNION if usable(p) else BAD_POSITION
        else:  # compiled: validates and writes the pose (~2 us instead of ~100 us of numpy)
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
        why = st.order.check(header_stamp, received, self.config.input_timeout)
        if why:
            raise self._reject(f"target of {constraint!r}: {why}")
        pose = st.new_pose  # (4, 4) rotation orthonormal by construction
        ref = self._frame_pose(frame, f"target of {constraint!r}")
        if ref is not None:
            pose = ref @ pose
        dist = math.sqrt(pose[0, 3] ** 2 + pose[1, 3] ** 2 + pose[2, 3] ** 2)
        if dist > st.reach:
            raise self._reject(
                f"target of {constraint!r}: {dist:.6g} m from {self.tree.root_link!r} is beyond "
                f"the robot's reach ({st.reach:.3f} m with target_reach_margin "
                f"{self.config.target_reach_margin} m)"
            )
        t = float(received)
        t_src = t if header_stamp is None else float(header_stamp)
        prev_src = st.order.source
        t_prev = st.stamp if (header_stamp is None or prev_src is None) else prev_src
        dt = t_src - t_prev
        if not jump and st.has_pose and 0.0 < dt <= self.config.input_timeout:
            jump = self._is_jump(st, pose, dt)
            if not jump:
                tau = self.config.twist_filter_time_constant  # from zero: a jump kicks gently
                filter_twist(pose, st.pose, dt, dt / (tau + dt), st.rel, st.raw, st.estimate)
                cfg = self.config  # the estimate never exceeds the speed limits
                cap_twist(st.estimate, cfg.max_target_speed, cfg.max_target_angular_speed)
        step = jump or not (st.has_pose and 0.0 <= dt <= self.config.input_timeout)
        if step:
            st.estimate[:] = 0.0
        if asked_jump:  # e.g. the RViz marker snapped back to the effector: no reference
            st.ref.stop()
        self._take_target(constraint, st, pose, step and not asked_jump)
        st.pose[:] = pose
        st.stamp = t
        st.header = stamp_value(header_stamp)
        st.order.accept(header_stamp, t)
        st.has_pose = True
        if self.journal is not None:
            rec = self.journal.begin(Code.TARGET, 12)
            rec[:5] = (
                self._stream_index[constraint],
                t,
                st.header,
                self._frame_code(frame),
                asked_jump,
            )
            rec[5:8] = p
            rec[8:12] = qt

    def _frame_code(self, frame: str) -> int:
        """A frame as journaled: -1 for the root ('' or its name), else the link's index."""
        if not frame or frame == self.tree.root_link:
            return -1
        return self.tree.link_index(frame)

    def _take_target(self, name: str, st: TargetStream, pose: Array, step: bool) -> None:
        """Give the constraint its new target, at once within a smooth stream.

        A step (a jump, a first target, a target after a pause) or a target during a jog goes
        through the straight-line reference (:mod:`~itasc_ros.core.control.cartesian_reference`).
        """
        c = self.scene.get(name)
        if step and not st.ref.active and self.config.max_cartesian_speed > 0.0:
            start = self._effector_pose(c)
            if start is not None and self._is_far(start, pose):
                st.ref.start(start)
                c.set_target(st.ref.pose, check=False)  # active from here, where it is
        if st.ref.active:
            st.ref.jogging = False  # a pose target ends a jog: approach it from here
            st.jog_stamp = -math.inf
            return
        c.set_target(pose, check=False)

    def _is_far(self, a: Array, b: Array) -> bool:
        """True when pose ``b`` is more than a tick away from ``a`` at the Cartesian limits."""
        cfg = self.config
        dist = math.dist(a[:3, 3], b[:3, 3])
        angle = float(np.linalg.norm(spatial.so3_log(b[:3, :3] @ a[:3, :3].T)))
        return dist > cfg.max_cartesian_speed * self._dt or (
            angle > cfg.max_cartesian_angular_speed * self._dt
        )

    def _effector_pose(self, c: Constraint) -> Array | None:
        """The constraint's effector pose (4, 4) now, or None (no effector, no joint state)."""
        link = c.effector_link
        if link is None or not self._has_state:
            return None
        return self.tree.forward_kinematics(self._q, link)

    def _cartesian_limits(self) -> tuple[float, float, float, float]:
        cfg = self.config
        return (
            cfg.max_cartesian_speed or cfg.max_target_speed,
            cfg.max_cartesian_acceleration,
            cfg.max_cartesian_angular_speed,
            cfg.max_cartesian_angular_acceleration,
        )

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
            InputError: as :meth:`set_target_twist`; no joint state yet (the jog starts from
                the effector's pose).
        """
        st = self._target_state(constraint)
        tw = tw_msg = self._twist_arg(f"jog of {constraint!r}", twist, received)
        c = self.scene.get(constraint)
        if self._effector_pose(c) is None:
            raise self._reject(f"jog of {constraint!r} needs a joint state and an effector")
        why = st.jog_order.check(header_stamp, received, self.config.input_timeout)
        if why:
            raise self._reject(f"jog of {constraint!r}: {why}")
        tw = self._twist_in_root(tw, frame, f"jog of {constraint!r}")
        timeout = self.config.input_timeout
        st.jog_valid = timeout
        st.jog_budget = min(st.jog_budget + self._jog_pay(st, received, header_stamp), timeout)
        st.jog[:] = tw
        st.jog_stamp = float(received)
        st.jog_order.accept(header_stamp, received)
        if not c.has_target:  # jogging without a target so far: hold the effector first
            pose = self._effector_pose(c)
            if pose is not None:
                c.set_target(pose, check=False)
        if self.journal is not None:
            rec = self.journal.begin(Code.JOG, 10)
            rec[0], rec[1] = self._stream_index[constraint], received
            rec[2], rec[3] = stamp_value(header_stamp), self._frame_code(frame)
            rec[4:10] = tw_msg

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

    def _is_jump(self, st: TargetStream, pose: Array, dt: float) -> bool:
        """True (and counted) when ``pose`` implies a target faster than the speed limits.

        ``dt`` [s] is floored at the control period: poses that arrive in a burst are not
        jumps, and a target cannot be followed faster than the loop runs anyway.
        """
        cfg = self.config
        dt = max(dt, self._dt)
        if not is_target_jump(
            pose, st.pose, dt, cfg.max_target_speed, cfg.max_target_angular_speed, st.rel
        ):
            return False
        st.jumps += 1
        return True

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
        tw = tw_msg = self._twist_arg(f"twist of {constraint!r}", twist, received)
        why = st.twist_order.check(header_stamp, received, self.config.input_timeout)
        if why:
            raise self._reject(f"twist of {constraint!r}: {why}")
        tw = self._twist_in_root(tw, frame, f"twist of {constraint!r}")
        st.twist[:] = tw
        if cap_twist(st.twist, self.config.max_target_speed, self.config.max_target_angular_speed):
            st.capped += 1
        st.twist_stamp = float(received)
        st.twist_order.accept(header_stamp, received)
        if self.journal is not None:
            rec = self.journal.begin(Code.TWIST, 10)
            rec[0], rec[1] = self._stream_index[constraint], received
            rec[2], rec[3] = stamp_value(header_stamp), self._frame_code(frame)
            rec[4:10] = tw_msg

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

    def _twist_in_root(self, tw: Array, frame: str, what: str) -> Array:
        """A twist (6,) given in the axes of ``frame`` ('' or a link), in the root's axes."""
        ref = self._frame_pose(frame, what)
        if ref is None:
            return tw
        r = ref[:3, :3]
        return np.concatenate([r @ tw[:3], r @ tw[3:]])

    def set_enabled(self, enabled: bool) -> None:
        """Enable or disable the output (disabled: zeros once, then silence)."""
        self._enabled = bool(enabled)
        if self.journal is not None:
            self.journal.enabled(self._enabled)

    def update_parameters(self, **kw: Any) -> None:
        """Change settings live; all or nothing.

        Keys: those of :data:`~itasc_ros.core.control.config.LIVE_KEYS`; per constraint either
        ``constraints={name: {field: value}}`` or the flat ROS name
        ``**{'constraints.<name>.<field>': value}`` with the live fields of its type.

        Raises:
            ConfigError: unknown or structural key (naming the live ones), invalid value;
                nothing is changed.
        """
        cfg = apply_updates(self.config, **kw)
        scene = self._build_scene(cfg)
        for old in self.scene.constraints:  # carry the targets over
            new = scene.get(old.name)
            new.carry_over(old)
        for st in self._targets.values():
            st.applied[:] = 0.0  # the new constraints start without a twist
            for tw in (st.estimate, st.twist):  # within the (new) speed limits
                cap_twist(tw, cfg.max_target_speed, cfg.max_target_angular_speed)
        limiter = self._build_limiter(cfg, scene)
        limiter.v[:], limiter.a[:] = self._limiter.v, self._limiter.a  # the motion goes on
        self.config = cfg
        self.scene = scene
        self._set_reach(cfg)
        self._constraints = scene.constraints
        self._limiter = limiter
        self._vmax = limiter.vmax
        self._dt = 1.0 / cfg.control_rate

    # ------------------------------------------------------------------------- the tick
    def _status(self, now: float) -> tuple[Status, str]:
        if not self._enabled:
            return Status.DISABLED, "~/enable is false: zero command sent, then silence"
        if not self._has_state:
            return Status.WAITING, "no joint state received yet"
        age = now - self._js_stamp
        if not fresh(age, self.config.input_timeout):
            if age < 0.0:
                return Status.STALE, (
                    f"the last joint state was received {-age:.3f} s after now: the clock "
                    "jumped back"
                )
            return Status.STALE, (
                f"joint states are {age:.3f} s old (input_timeout {self.config.input_timeout} s)"
            )
        for c in self._constraints:
            if c.enabled and c.has_target:
                return Status.ACTIVE, ""
        return Status.WAITING, "no target received yet"

    def _follow_reference(self, name: str, st: TargetStream, now: float) -> bool:
        """Advance a jog or a step's straight-line reference; False when there is none."""
        ref = st.ref
        c = self.scene.get(name)
        if fresh(now - st.jog_stamp, st.jog_valid):
            if not ref.jogging:
                start = self._effector_pose(c) if not ref.active else ref.pose
                if start is None:
                    return False
                ref.start(start, jogging=True)
            move = min(self._elapsed, st.jog_budget)
            st.jog_budget -= move
            ref.jog(st.jog, move, self._cartesian_limits())
        elif ref.jogging:  # the jog twists stopped: decelerate, then hold where it stopped
            st.jog_budget = 0.0
            if ref.jog(self._zeros6, self._elapsed, self._cartesian_limits()):
                st.pose[:] = ref.pose
                st.has_pose = True
        elif ref.active:
            timeout = self.config.input_timeout
            goal_twist = st.twist if fresh(now - st.twist_stamp, timeout) else st.estimate
            ref.toward(st.pose, goal_twist, self._elapsed, self._cartesian_limits())
        else:
            return False
        c.set_target(ref.pose, check=False)
        st.source = TwistSource.REFERENCE
        if not np.array_equal(ref.twist, st.applied):
            st.applied[:] = ref.twist
            c.set_target_twist(st.applied)
        return True

    def _apply_twists(self, now: float) -> None:
        """Give each pose constraint its twist: explicit if recent, else the estimate, else 0.

        A jog or a step followed along the straight-line reference comes first.
        """
        timeout = self.config.input_timeout
        for name, st in self._targets.items():
            if st.ref.active or st.ref.jogging or fresh(now - st.jog_stamp, st.jog_valid):
                if self._follow_reference(name, st, now):
                    continue
            if fresh(now - st.twist_stamp, timeout):
                src: Array | None = st.twist
                st.source = TwistSource.EXPLICIT
            elif st.has_pose and fresh(now - st.stamp, timeout):
                src = st.estimate
                st.source = TwistSource.ESTIMATED
            else:
                src = None
                st.source = TwistSource.NONE
            if src is not None:
                if not np.array_equal(src, st.applied):
                    st.applied[:] = src
                    self.scene.get(name).set_target_twist(st.applied)
            elif st.applied.any():
                st.applied[:] = 0.0
                self.scene.get(name).set_target_twist(None)

    def step(self, now: float) -> StepOutput:
        """One control tick at time ``now`` [s] (the clock of the input stamps).

        Returns:
            A new :class:`StepOutput`; publish ``qdot`` when ``publish`` is True.
        """
        out = self._decide(now)
        if self.journal is not None:
            self._journal_tick(self.journal, now, out)
        return out

    def _decide(self, now: float) -> StepOutput:
        dt = self._tick_time(now)
        status, reason = self._status(now)
        if status is Status.ACTIVE:
            self._apply_twists(now)
            try:
                res: SolveResult | None = self.scene.solve(self._q, self._dt)
            except ItascError as exc:
                res, reason = None, f"solve failed: {exc}"
            except Exception as exc:  # whatever broke, the robot gets a zero, not a crash
                res, reason = None, f"solve failed: {type(exc).__name__}: {exc}"
            if res is not None and res.ok and clip_finite(res.qdot, self._vmax, self._qdot):
                if self._limiter.active:
                    self._limiter.step(self._qdot, self._q, dt, 2.0 * self._dt, self._qdot)
                self._halted = False
                return StepOutput(Status.ACTIVE, True, self._qdot.copy(), self._q.copy(), res, "")
            status = Status.FAULT
            reason = reason or "solve produced non-finite joint velocities"
            return self._zero(status, reason, res)
        if status is Status.DISABLED and self._can_stop_smoothly(now):
            self._limiter.step(self._zeros, self._q, dt, 2.0 * self._dt, self._qdot)  # stop 1
            self._halted = not self._limiter.moving
            status = Status.DISABLED if self._halted else Status.STOPPING
            if not self._halted:
                reason = "~/enable is false: decelerating within the joint limits, then zero"
            return StepOutput(status, True, self._qdot.copy(), self._q.copy(), None, reason)
        return self._zero(status, reason, None)

    def _zero(self, status: Status, reason: str, res: SolveResult | None) -> StepOutput:
        """An immediate zero (once, then silence): the limiter starts again from rest."""
        publish = not self._halted
        self._halted = True
        self._limiter.halt()
        return StepOutput(status, publish, self._zeros.copy(), self._q.copy(), res, reason)

    def _tick_time(self, now: float) -> float:
        """The time since the last step [s], at most ``input_timeout`` (the period at first).

        The motion limits use it as it is: a late tick may change the command by what the
        limits allow over the time that really passed, so that the accelerations and jerks of
        the published commands, at the ticks' times, are within the limits.
        """
        dt = now - self._last_step
        self._last_step = now
        if not (0.0 < dt < math.inf):
            dt = self._dt
        self._elapsed = min(dt, self.config.input_timeout)
        return self._elapsed

    def _can_stop_smoothly(self, now: float) -> bool:
        """Decelerate within the limits rather than send a zero: moving, fresh joint states."""
        return (
            self._limiter.active
            and self._limiter.moving
            and not self._halted
            and self._has_state
            and fresh(now - self._js_stamp, self.config.input_timeout)
        )

    # ------------------------------------------------------------------------- journal
    def attach_journal(self, journal: Journal | None) -> None:
        """Record every accepted input and tick into ``journal`` (None: stop recording).

        Attaching writes a SNAPSHOT of the input state first, so that the journal can be
        played back from here (:mod:`itasc_ros.core.control.playback`).
        """
        self.journal = journal
        if journal is not None:
            self.write_snapshot(journal)

    def write_snapshot(self, journal: Journal) -> None:
        """Append a SNAPSHOT record of the input state (:mod:`~itasc_ros.core.control.journal`)."""
        rec = journal.begin(Code.SNAPSHOT, SNAPSHOT_HEAD + self._state_size())
        rec[0], rec[1], rec[2] = journal.revision, journal.urdf_tag, journal.model
        self._state_into(rec[3:])

    def _state_size(self) -> int:
        """Values of the input state after the SNAPSHOT head."""
        n_all, k, n = self._q_all.shape[0], len(self._targets), self._q.shape[0]
        return n_all + k * STREAM_SIZE + 1 + 2 * n

    def _state_into(self, out: Array) -> None:
        """The input state from ``n_all`` on (a SNAPSHOT payload without its first three)."""
        n_all, k = self._q_all.shape[0], len(self._targets)
        o = self._js_order
        out[0:9] = (
            n_all,
            k,
            self._enabled,
            self._halted,
            self._has_state,
            self._js_stamp,
            self._js_header,
            stamp_value(o.source),
            o.received,
        )
        out[9 : 9 + n_all] = self._all_positions()
        i = 9 + n_all
        for st in self._targets.values():
            _stream_into(st, out[i : i + STREAM_SIZE])
            i += STREAM_SIZE
        n = self._q.shape[0]
        out[i] = self._last_step
        out[i + 1 : i + 1 + n] = self._limiter.v
        out[i + 1 + n : i + 1 + 2 * n] = self._limiter.a

    def state_values(self) -> Array:
        """(SNAPSHOT size - 3,) the input state as a SNAPSHOT holds it (for comparisons)."""
        out = np.zeros(SNAPSHOT_HEAD - 3 + self._state_size())
        self._state_into(out)
        return out

    def restore_state(self, snapshot: Array) -> None:
        """Set the input state from a SNAPSHOT payload (the inverse of :meth:`write_snapshot`).

        Raises:
            ConfigError: the snapshot is of another robot or another set of targets.
        """
        s = np.asarray(snapshot, dtype=float)
        n_all, k = self._q_all.shape[0], len(self._targets)
        if s.shape[0] != SNAPSHOT_HEAD + self._state_size() or (s[3], s[4]) != (n_all, k):
            raise ConfigError(
                f"snapshot of {int(s[3]) if s.shape[0] > 4 else '?'} joints and "
                f"{int(s[4]) if s.shape[0] > 4 else '?'} targets does not fit this controller "
                f"({n_all} joints, {k} targets)"
            )
        self._enabled, self._halted, self._has_state = bool(s[5]), bool(s[6]), bool(s[7])
        self._js_stamp, self._js_header = float(s[8]), float(s[9])
        self._js_order.source, self._js_order.received = stamp_of(s[10]), float(s[11])
        q_all = s[SNAPSHOT_HEAD : SNAPSHOT_HEAD + n_all]
        self._q[:] = q_all[self._cmd_in_all]
        if self._held_in_all.size:
            self._q_full[self._held_in_all] = q_all[self._held_in_all]
            self.tree.set_fixed_positions(self._q_full)
        i = SNAPSHOT_HEAD + n_all
        for name, st in self._targets.items():
            _stream_from(st, s[i : i + STREAM_SIZE])
            c = self.scene.get(name)
            if st.has_pose:
                c.set_target(st.pose, check=False)
            c.set_target_twist(st.applied if st.applied.any() else None)
            i += STREAM_SIZE
        n = self._q.shape[0]
        self._last_step = float(s[i])
        self._limiter.v[:] = s[i + 1 : i + 1 + n]
        self._limiter.a[:] = s[i + 1 + n : i + 1 + 2 * n]

    def _journal_tick(self, journal: Journal, now: float, out: StepOutput) -> None:
        """Append the TICK record of ``out`` (what the tick consumed and decided)."""
        n, k = self._q.shape[0], len(self._targets)
        rec = journal.begin(Code.TICK, 7 + 2 * n + k * TICK_TARGET_SIZE)
        rec[:7] = (
            now,
            _STATUS_CODE[out.status],
            out.publish,
            journal.revision,
            self._js_stamp,
            self._js_header,
            n,
        )
        rec[7 : 7 + n] = self._q
        i = 7 + n
        active = out.status is Status.ACTIVE or out.result is not None
        for st in self._targets.values():
            rec[i : i + 3] = (st.source if active else 0, st.stamp, st.header)
            used = st.ref.pose if st.ref.active else st.pose
            rec[i + 3 : i + 15] = used.ravel()[:12]  # rows 0-2
            rec[i + 15 : i + 21] = st.applied
            i += TICK_TARGET_SIZE
        rec[i : i + n] = out.qdot


def _stream_into(st: TargetStream, out: Array) -> None:
    """One target stream's SNAPSHOT values (:data:`~itasc_ros.core.control.journal.STREAM`)."""
    f = STREAM
    out[f["has_pose"]] = st.has_pose
    out[f["pose"]] = st.pose.reshape(16)
    out[f["stamp"]], out[f["header"]] = st.stamp, st.header
    out[f["order"]] = (stamp_value(st.order.source), st.order.received)
    out[f["estimate"]], out[f["twist"]] = st.estimate, st.twist
    out[f["twist_stamp"]] = st.twist_stamp
    out[f["twist_order"]] = (stamp_value(st.twist_order.source), st.twist_order.received)
    out[f["applied"]] = st.applied
    out[f["jumps"]], out[f["capped"]], out[f["source"]] = st.jumps, st.capped, st.source
    out[f["ref_active"]], out[f["ref_jogging"]] = st.ref.active, st.ref.jogging
    out[f["ref_pose"]], out[f["ref_twist"]] = st.ref.pose.reshape(16), st.ref.twist
    out[f["jog"]], out[f["jog_stamp"]] = st.jog, st.jog_stamp
    out[f["jog_order"]] = (stamp_value(st.jog_order.source), st.jog_order.received)
    out[f["jog_valid"]], out[f["jog_period"]] = st.jog_valid, st.jog_period
    out[f["jog_budget"]] = st.jog_budget
    out[f["jog_start"]], out[f["jog_count"]] = st.jog_start, st.jog_count


def _stream_from(st: TargetStream, v: Array) -> None:
    """Set a target stream from its SNAPSHOT values (inverse of :func:`_stream_into`)."""
    f = STREAM
    st.has_pose = bool(v[f["has_pose"]][0])
    st.pose[:] = v[f["pose"]].reshape(4, 4)
    st.stamp, st.header = float(v[f["stamp"]][0]), float(v[f["header"]][0])
    st.order.source, st.order.received = stamp_of(v[f["order"]][0]), float(v[f["order"]][1])
    st.estimate[:], st.twist[:] = v[f["estimate"]], v[f["twist"]]
    st.twist_stamp = float(v[f["twist_stamp"]][0])
    order = v[f["twist_order"]]
    st.twist_order.source, st.twist_order.received = stamp_of(order[0]), float(order[1])
    st.applied[:] = v[f["applied"]]
    st.jumps, st.capped = int(v[f["jumps"]][0]), int(v[f["capped"]][0])
    st.source = int(v[f["source"]][0])
    ref = st.ref
    ref.active, ref.jogging = bool(v[f["ref_active"]][0]), bool(v[f["ref_jogging"]][0])
    ref.pose[:], ref.twist[:] = v[f["ref_pose"]].reshape(4, 4), v[f["ref_twist"]]
    ref.speed = float(np.linalg.norm(ref.twist[:3]))
    ref.angular_speed = float(np.linalg.norm(ref.twist[3:]))
    st.jog[:], st.jog_stamp = v[f["jog"]], float(v[f["jog_stamp"]][0])
    order = v[f["jog_order"]]
    st.jog_order.source, st.jog_order.received = stamp_of(order[0]), float(order[1])
    st.jog_valid = float(v[f["jog_valid"]][0])
    st.jog_period = float(v[f["jog_period"]][0])
    st.jog_budget = float(v[f["jog_budget"]][0])
    st.jog_start, st.jog_count = float(v[f["jog_start"]][0]), int(v[f["jog_count"]][0])


__all__ = ["STATUSES", "Controller", "Status", "StepOutput"]
