"""Model fitting: a controller configuration fitted to a robot's kinematic tree (ROS-free).

The commanded joints (``joints``, every movable joint by default) select a view of the tree that
holds the other joints where the joint states put them; each constraint's settings are resolved
on that view (e.g. an empty effector link: the tip link); the constraints make the
:class:`~itasc_ros.core.solve.scene.Scene` and ``joint_limits`` the
:class:`~itasc_ros.core.solve.motion_limits.MotionLimiter`. A live parameter change fits a new
scene and new limits the same way (:meth:`FittedModel.refit`, from
:meth:`~itasc_ros.core.control.Controller.commit_parameters`).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..constraints import Constraint
from ..errors import ConfigError, ItascError
from ..kinematics.mobile_base import BASE_JOINTS, with_mobile_base
from ..kinematics.tree import KinematicTree
from ..solve.joint_limits import JointLimits
from ..solve.limits import HeldJoints, MotionBox
from ..solve.motion_limits import MotionLimiter
from ..solve.scene import Scene
from ..solve.shortfall import warm_up as warm_up_shortfall
from ._command_kernels import solve_command, take_solved
from ._journal_kernels import tick_length
from ._packed import JS_SIZE, TA_SIZE, TARGET_SIZE
from ._target_kernels import warm_up_kernels
from ._tick_kernels import CLOCK_SIZE
from .config import ControllerConfig
from .following import warm_up as warm_up_following
from .odometry import warm_up_odometry

Array = NDArray[np.float64]


def commanded_joints(tree: KinematicTree, config: ControllerConfig) -> list[str]:
    """The joints the controller commands: ``config.joints``, or every movable joint.

    Raises:
        ConfigError: a name that is not a movable joint of the tree (naming those).
    """
    joints = config.joints or tree.joint_names
    unknown = [j for j in joints if j not in tree.joint_names]
    if unknown:
        raise ConfigError(
            f"joints {unknown} are not movable joints of the URDF; joints "
            f"are: {', '.join(tree.joint_names)}"
        )
    return list(joints)


def target_reach(cfg: ControllerConfig, scene: Scene, tree: KinematicTree, name: str) -> float:
    """The largest distance [m] from the root of constraint ``name``'s target.

    The effector's reach (:meth:`KinematicTree.reach`) plus ``target_reach_margin``, plus how
    far from the effector the type keeps its target (``Constraint.target_distance``); inf for a
    constraint without an effector.
    """
    c = cfg.constraint(name)
    link = scene.get(name).effector_link
    reach = math.inf if link is None else tree.reach(link)
    return reach + c.kind.target_distance(c.settings) + cfg.target_reach_margin


class FittedModel:
    """The configuration fitted to a robot's tree: commanded joints, scene and motion limits.

    Args:
        tree: the robot's kinematic tree.
        config: the configuration (validated here, then copied).

    Raises:
        ConfigError: the configuration does not fit the tree (unknown joint, link...) or is
            invalid.

    Attributes:
        config: the configuration in force.
        full_tree: the robot's tree as given.
        joint_names: the commanded joints, in the order of every command.
        tree: the view of ``full_tree`` that moves ``joint_names`` and holds the others.
        scene: the iTaSC scene of the configuration's constraints.
        constraints: the scene's constraints, in configuration order.
        limiter: the commanded joints' motion limits (``joint_limits``).
        held_limit: a stopped robot's joints on their stop ramp (the scene's last limit with
            ``robots``).
        vmax: (n,) the velocity limits the commands keep [rad/s or m/s] (``velocity_scale``'d).
        vmax_hard: (n,) the velocity limits no command exceeds.
        dt: the nominal control period [s].
        q_full: (n_all,) every joint of ``full_tree``; the held joints' entries hold them.
        base_root: the base's link (the odometry's child frame).
        base_joints: the commanded base's virtual joints (none for a fixed base).
        ignored_joint_limits: ``joint_limits`` entries of joints the URDF does not have.
    """

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        self.config = copy.deepcopy(config).validate()
        cfg = self.config
        if cfg.world_frame in tree.link_names:
            raise ConfigError(
                f"world_frame {cfg.world_frame!r} is a link of the URDF; it must name "
                "the frame the base moves in (e.g. odom), not a link of the robot"
            )
        self.base_root = tree.root_link  # the base's link: odometry's child frame
        self.base_joints = BASE_JOINTS[cfg.base_kind]  # the commanded base's virtual joints
        if self.base_joints:
            if not cfg.world_frame:
                raise ConfigError(
                    f"base_kind {cfg.base_kind!r} needs world_frame (the frame of the base's "
                    "odometry, e.g. odom): a commanded base reaches targets in the world"
                )
            tree = with_mobile_base(
                tree, cfg.base_kind, cfg.base_max_speed, cfg.base_max_angular_speed
            )
        self.full_tree = tree
        arm = [j for j in commanded_joints(tree, cfg) if j not in self.base_joints]
        self.joint_names: list[str] = [*self.base_joints, *arm]
        self.tree = tree.select_joints(self.joint_names)
        every = tree.all_joint_names
        #: (n_all,) every joint of the tree: the held joints' entries hold them
        self.q_full = np.zeros(len(every))
        self.q_full[[every.index(j) for j in self.joint_names]] = self.tree.neutral()
        self.tree.set_fixed_positions(self.q_full)
        for c in self.config.constraints:  # e.g. an empty effector link: the tip link
            c.resolve(self.tree)
        self.ignored_joint_limits: list[str] = []
        scene = self.build_scene(self.config)
        self.refit(self.config, scene, self.build_limiter(self.config, scene))

    def refit(self, cfg: ControllerConfig, scene: Scene, limiter: MotionLimiter) -> None:
        """Put a configuration in force with the scene and the limiter fitted to it.

        The scene's view of the tree becomes :attr:`tree` (a live change builds the new scene
        on a view of its own).
        """
        self.config = cfg
        self.scene = scene
        self.tree = scene.tree
        self.constraints: list[Constraint] = scene.constraints
        self.limiter = limiter
        if limiter.active:  # the motion limits: the scene's last limit, in every level
            scene.add_limit(MotionBox(limiter, 1.0 / cfg.control_rate, cfg.input_timeout))
            scene.set_demand_limits(  # pose tasks ask for what the motion limits can follow
                cfg.max_cartesian_acceleration,
                cfg.max_cartesian_angular_acceleration,
                limiter.v,
                1.0 / cfg.control_rate,
            )
        # several robots: a stopped robot's joints on their stop ramp, after every other limit
        self.held_limit = HeldJoints(limiter.v.shape[0])
        if cfg.robots:
            scene.add_limit(self.held_limit)
        self.vmax: Array = limiter.vmax  # (n,) the URDF's and joint_limits' velocity limits
        self.vmax_hard: Array = limiter.vmax_hard  # (n,) the same, not velocity_scale'd
        self.dt = 1.0 / cfg.control_rate  # [s] the nominal control period

    def set_config(self, cfg: ControllerConfig) -> None:
        """Put ``cfg`` in force when only scalars set on the running scene changed."""
        self.config = cfg

    def build_scene(self, cfg: ControllerConfig, tree: KinematicTree | None = None) -> Scene:
        """The scene of ``cfg``'s constraints on ``tree`` (default: the controller's view).

        Raises:
            ConfigError: a constraint or a solver setting that does not fit.
        """
        try:
            cons = [c.build() for c in cfg.constraints]
            scene = Scene(
                self.tree if tree is None else tree,
                cons,
                solver=cfg.solver,
                damping_max=cfg.damping_max,
                damping_epsilon=cfg.damping_epsilon,
                velocity_scale=cfg.velocity_scale,
                joint_limit_margin=cfg.joint_limit_margin,
                max_velocity=cfg.max_velocity,
            )
            scene.set_feedback_limits(cfg.max_cartesian_speed, cfg.max_cartesian_angular_speed)
            if self.base_joints:  # the base moves less than the arm (base_weight)
                nb = len(self.base_joints)
                weights = np.ones(scene.tree.n_joints)
                weights[:nb] = cfg.base_weight
                scene.set_joint_weights(weights)
            return scene
        except ConfigError:
            raise
        except ItascError as exc:
            raise ConfigError(str(exc)) from exc

    def build_limiter(self, cfg: ControllerConfig, scene: Scene) -> MotionLimiter:
        """The motion limits of the commanded joints (``joint_limits``).

        Entries for joints this URDF does not have are ignored, as MoveIt and ros2_control do
        (e.g. another robot's limits after a URDF change); they are listed in
        :attr:`ignored_joint_limits` for the node to warn about.
        """
        limits = {**self._base_limits(cfg), **cfg.limits()}
        self.ignored_joint_limits = sorted(
            j for j in limits if j not in self.full_tree.all_joint_names
        )
        lower, upper = scene.position_limits
        return MotionLimiter(
            scene.velocity_limits,
            [limits.get(j, JointLimits()) for j in self.joint_names],
            lower,
            upper,
            scene.hard_velocity_limits,
        )

    def _base_limits(self, cfg: ControllerConfig) -> dict[str, JointLimits]:
        """The commanded base's joint limits of ``base_max_*`` (``joint_limits`` override)."""
        out = {}
        for j in self.base_joints:
            yaw = j == "base_yaw"
            acc = cfg.base_max_angular_acceleration if yaw else cfg.base_max_acceleration
            out[j] = JointLimits(
                max_velocity=cfg.base_max_angular_speed if yaw else cfg.base_max_speed,
                max_acceleration=acc if acc > 0.0 else math.inf,
                max_deceleration=acc if acc > 0.0 else math.inf,
            )
        return out

    def warm_up(self) -> None:
        """Run one solve now so that compiling/loading the kernels never delays a tick."""
        try:
            self.scene.solve(self.tree.neutral(), self.dt)
            tick = self.scene.warm_up(self.dt)  # the other kind of tick too (a live change's)
            self._warm_command(tick)
            # each constraint's own update, the tree's FK and a Jacobian (the held robots', the
            # inputs', the aim's: a scene whose every constraint's tick is compiled does them
            # inside its call)
            self.scene.update(self.tree.neutral())
            self.tree.jacobian_into(0, np.zeros((6, self.tree.n_joints)))
        except Exception:  # a model that cannot be solved faults in step(), never crashes here
            pass
        self.limiter.warm_up()
        warm_up_kernels(self.vmax_hard)
        warm_up_shortfall()
        warm_up_following()
        if self.config.world_frame:
            warm_up_odometry()

    def _warm_command(self, tick: tuple[Any, ...]) -> None:
        """Load the tick's command kernels, after ``tick`` (a ``scene_tick``'s arguments).

        :func:`~itasc_ros.core.control._command_kernels.solve_command` and
        :func:`~itasc_ros.core.control._command_kernels.take_solved`, on copies of the
        command's arrays: nothing is taken or sent.
        """
        n, k, lim = self.n_joints, len(self.scene.result.constraint_names), self.limiter
        take = (
            np.zeros(3), np.zeros(n), self.vmax_hard, np.zeros(n), lim.v.copy(), lim.a.copy(),
            lim.active, np.zeros(n), np.zeros((3, k)), np.zeros(CLOCK_SIZE),
        )  # fmt: skip
        # with the record of a sent command: a scratch journal's buffer, the inputs' arrays'
        # types (a joint-state input's packed state, the streams' states and arrays)
        record = (
            np.zeros(2 + tick_length(n, 0)), 0, 0.0, 0.0, np.zeros((0, TARGET_SIZE)),
            np.zeros((0, TA_SIZE)), np.zeros(JS_SIZE), np.zeros(n),
        )  # fmt: skip
        solve_command(*tick, *take, *record)  # type: ignore[call-arg]  # numba's stub: one arg
        take_solved(*self.scene.solve_buffers, self.dt, *take)

    @property
    def n_joints(self) -> int:
        """Number of commanded joints."""
        return len(self.joint_names)

    @property
    def period(self) -> float:
        """Nominal control period 1 / control_rate [s]."""
        return self.dt

    @property
    def velocity_limits(self) -> Array:
        """(n,) the velocity limits the commands keep [rad/s or m/s] (``velocity_scale``'d).

        After a live change lowers them, a faster joint slows down to them at its deceleration
        limit: the commands stay within :attr:`hard_velocity_limits` meanwhile.
        """
        return self.vmax.copy()

    @property
    def hard_velocity_limits(self) -> Array:
        """(n,) the velocity limits no command ever exceeds (the URDF's and joint_limits')."""
        return self.vmax_hard.copy()

    @property
    def pose_constraints(self) -> list[str]:
        """Names of the constraints that take a target pose from outside, in config order."""
        return [c.name for c in self.config.constraints if c.takes_target]

    def constraint(self, name: str) -> Constraint:
        """The scene's constraint object by name.

        Raises:
            ConfigError: naming the constraints.
        """
        try:
            return self.scene.get(name)
        except ItascError as exc:
            raise ConfigError(str(exc)) from None

    def target_reach(self, name: str) -> float:
        """The largest distance [m] of constraint ``name``'s target from the root."""
        return target_reach(self.config, self.scene, self.tree, name)


__all__ = ["FittedModel", "commanded_joints", "target_reach"]
