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
commanded joints, a zero quaternion, an unknown constraint or frame, or a header stamp out of
order or leaping ahead within a live stream (:class:`_StampOrder`). SAFETY.md lists every case.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._kernels import clip_finite
from ._target_kernels import (
    BAD_POSITION,
    BAD_QUATERNION,
    ZERO_QUATERNION,
    cap_twist,
    filter_twist,
    is_target_jump,
    pose_from_position_quat,
)
from .constraints import Constraint, CopyPose, Distance, JointValue
from .errors import ConfigError, InputError, ItascError
from .scene import Scene, SolveResult
from .solver import SOLVERS
from .tree import KinematicTree

Array = NDArray[np.float64]

CONSTRAINT_TYPES = ("copy_pose", "distance", "joint_value")
"""Values of :attr:`ConstraintConfig.type`."""

STATUSES = ("waiting", "active", "stale", "disabled", "fault")
"""Values of :attr:`StepOutput.status`."""

HUGE = 1e150
"""Input values larger than this [rad, m, m/s, rad/s] are rejected as garbage (the limit
:meth:`KinematicTree.compute` applies to q)."""

CONTROLLER_RANGES: dict[str, tuple[float, float]] = {
    "control_rate": (1.0, 2000.0),
    "input_timeout": (0.001, 60.0),
    "damping_max": (0.0, 10.0),
    "damping_epsilon": (0.0, 10.0),
    "velocity_scale": (0.001, 1.0),
    "joint_limit_margin": (0.0, 1.0),
    "max_velocity": (0.001, 100.0),
    "twist_filter_time_constant": (0.0, 10.0),
    "max_target_speed": (0.001, 100.0),
    "max_target_angular_speed": (0.001, 1000.0),
    "target_reach_margin": (0.0, 1000.0),
}
"""Closed ranges ``(lo, hi)`` of the numeric :class:`ControllerConfig` fields: the one source of
the checks of :meth:`ControllerConfig.validate` and of the node's parameter descriptors."""

CONSTRAINT_RANGES: dict[str, tuple[float, float]] = {
    "weight": (0.0, 1e6),
    "gain": (0.0, 1000.0),
    "distance": (0.0, 100.0),
    "min_distance": (-1.0, 100.0),
    "max_distance": (-1.0, 100.0),
    "values": (-1e6, 1e6),
}
"""Closed ranges ``(lo, hi)`` of the numeric :class:`ConstraintConfig` fields (``values``: each
element), as :data:`CONTROLLER_RANGES`."""

POSE_CONSTRAINT_TYPES = ("copy_pose", "distance")
"""Constraint types that take a target pose (unless they follow a ``target_link``)."""

NODE_ONLY_KEYS = frozenset(
    {
        "robot_description",
        "urdf_file",
        "command_out_type",
        "command_out_topic",
        "joint_topic",
        "publish_markers",
        "control_trigger",
        "thread_priority",
        "cpu_affinity",
        "use_sim_time",
        "start_type_description_service",
    }
)
"""Parameters of the node that are not part of :class:`ControllerConfig`."""


def _float(
    owner: str,
    key: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{owner}{key} must be a number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{owner}{key} must be a number, got {value!r}") from None
    if not math.isfinite(v):
        raise ConfigError(f"{owner}{key} must be finite, got {value!r}")
    if lo is not None and v < lo:
        raise ConfigError(f"{owner}{key} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ConfigError(f"{owner}{key} must be <= {hi}, got {v}")
    return v


def _ranged(owner: str, key: str, value: Any, ranges: Mapping[str, tuple[float, float]]) -> float:
    """``value`` as a float within ``ranges[key]`` (see :data:`CONTROLLER_RANGES`)."""
    return _float(owner, key, value, *ranges[key])


def _strings(owner: str, key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise ConfigError(f"{owner}{key} must be a list of strings, got {value!r}")
    out = [str(v) for v in value]
    if any(not v for v in out):
        raise ConfigError(f"{owner}{key} must not contain empty names, got {out}")
    return out


@dataclass
class ConstraintConfig:
    """One constraint of the controller (an entry of the YAML ``constraints`` list).

    Attributes:
        name: unique constraint name.
        type: 'copy_pose', 'distance' or 'joint_value'.
        link: effector link (copy_pose, distance); '' = the tree's tip (:func:`tip_link`).
        target_link: follow this link of the robot instead of a target topic ('' = topic).
        position_axes: copy_pose: subset of 'xyz' (position rows).
        rotation_axes: copy_pose: subset of 'xyz' (rotation rows).
        reference: copy_pose: axes of the selection: 'target', 'effector' or 'root'.
        weight: task weight Wy (>= 0).
        gain: feedback gain K [1/s] (>= 0).
        feedforward: feed the target twist forward (copy_pose, distance).
        distance: distance: desired distance [m].
        min_distance: distance: lower bound of a band [m]; -1 = unset.
        max_distance: distance: upper bound of a band [m]; -1 = unset.
        joints: joint_value: the joints to drive.
        values: joint_value: desired positions [rad or m], one per joint.
        target_topic: node: target pose topic ('' = default name).
        twist_topic: node: target twist topic ('' = default name).
    """

    name: str
    type: str
    link: str = ""
    target_link: str = ""
    position_axes: str = "xyz"
    rotation_axes: str = "xyz"
    reference: str = "target"
    weight: float = 1.0
    gain: float = 20.0
    feedforward: bool = True
    distance: float = 0.0
    min_distance: float = -1.0
    max_distance: float = -1.0
    joints: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    target_topic: str = ""
    twist_topic: str = ""

    @property
    def takes_target(self) -> bool:
        """True for a constraint whose target is a pose set from outside (a topic)."""
        return self.type in POSE_CONSTRAINT_TYPES and not self.target_link

    def validate(self) -> ConstraintConfig:
        """Check types and ranges (not names: those need the tree) and normalise values.

        Returns:
            self.

        Raises:
            ConfigError: naming the field and the valid values.
        """
        if not isinstance(self.name, str) or not self.name or "." in self.name:
            raise ConfigError(
                f"constraint name must be a non-empty string without '.', got {self.name!r}"
            )
        owner = f"constraint {self.name!r}: "
        if self.type not in CONSTRAINT_TYPES:
            raise ConfigError(
                f"{owner}unknown type {self.type!r}; types are: " + ", ".join(CONSTRAINT_TYPES)
            )
        for key in (
            "link",
            "target_link",
            "position_axes",
            "rotation_axes",
            "reference",
            "target_topic",
            "twist_topic",
        ):
            if not isinstance(getattr(self, key), str):
                raise ConfigError(f"{owner}{key} must be a string, got {getattr(self, key)!r}")
        if not isinstance(self.feedforward, bool | np.bool_):
            raise ConfigError(
                f"{owner}feedforward must be true or false, got {self.feedforward!r}"
            )
        self.feedforward = bool(self.feedforward)
        for key in ("weight", "gain", "distance", "min_distance", "max_distance"):
            setattr(self, key, _ranged(owner, key, getattr(self, key), CONSTRAINT_RANGES))
        if 0.0 <= self.max_distance < self.min_distance:
            raise ConfigError(
                f"{owner}min_distance {self.min_distance} > max_distance {self.max_distance}"
            )
        self.joints = _strings(owner, "joints", self.joints)
        if self.values is None:
            self.values = []
        if isinstance(self.values, str) or not isinstance(self.values, Sequence | np.ndarray):
            raise ConfigError(f"{owner}values must be a list of numbers, got {self.values!r}")
        self.values = [_ranged(owner, "values", v, CONSTRAINT_RANGES) for v in self.values]
        if self.type == "joint_value":
            if not self.joints:
                raise ConfigError(f"{owner}a joint_value constraint needs 'joints'")
            if len(self.values) != len(self.joints):
                raise ConfigError(
                    f"{owner}'values' needs one value per joint {self.joints}, got {self.values}"
                )
        try:  # the constraint's own rules (axes, reference, ...): the same as when it is built
            _make_constraint(self)
        except ConfigError:
            raise
        except ItascError as exc:
            raise ConfigError(f"{owner}{exc}") from None
        return self

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], name: str | None = None) -> ConstraintConfig:
        """Build from a YAML-like dict; ``name`` overrides/supplies the name.

        Raises:
            ConfigError: unknown keys (naming the valid ones), bad types or values.
        """
        if not isinstance(d, Mapping):
            raise ConfigError(f"a constraint must be a mapping, got {d!r}")
        valid = [f.name for f in fields(cls)]
        unknown = [k for k in d if k not in valid]
        if unknown:
            raise ConfigError(
                f"constraint {d.get('name', name)!r}: unknown keys {unknown}; "
                "valid keys are: " + ", ".join(valid)
            )
        kw = dict(d)
        if name is not None:
            kw["name"] = name
        if "name" not in kw or "type" not in kw:
            raise ConfigError(
                f"a constraint needs 'name' and 'type' (one of "
                f"{', '.join(CONSTRAINT_TYPES)}), got {dict(d)}"
            )
        return cls(**kw).validate()

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (YAML-ready)."""
        return asdict(self)


@dataclass
class ControllerConfig:
    """Configuration of a :class:`Controller` (the node's parameters minus the ROS plumbing).

    Attributes:
        joints: command order; [] = the tree's joints. Tree joints left out are held at their
            measured positions.
        control_rate: loop rate [Hz]; the solve uses the period 1 / control_rate.
        input_timeout: joint states older than this [s] stop the robot.
        solver: 'dls' or 'sdls'.
        damping_max: largest damping lambda (at a singularity).
        damping_epsilon: smallest singular value below which damping starts.
        velocity_scale: fraction (0, 1] of the URDF velocity limits.
        joint_limit_margin: distance kept from position limits [rad or m].
        max_velocity: cap for joints without a URDF velocity limit [rad/s or m/s].
        twist_filter_time_constant: first-order filter of the target twist estimated from
            successive poses [s] (0 = unfiltered).
        max_target_speed: fastest linear speed of a target [m/s]: successive poses further
            apart are a jump (no feed-forward from them); twists are capped to it.
        max_target_angular_speed: fastest angular speed of a target [rad/s], likewise.
        target_reach_margin: target poses farther from the root than the effector's reach
            (from the URDF) plus this margin [m] are refused.
        constraints: the constraints, in row order.
    """

    joints: list[str] = field(default_factory=list)
    control_rate: float = 250.0
    input_timeout: float = 0.1
    solver: str = "dls"
    damping_max: float = 0.1
    damping_epsilon: float = 0.06
    velocity_scale: float = 1.0
    joint_limit_margin: float = 0.0
    max_velocity: float = 10.0
    twist_filter_time_constant: float = 0.05
    max_target_speed: float = 2.0
    max_target_angular_speed: float = 6.0
    target_reach_margin: float = 2.0
    constraints: list[ConstraintConfig] = field(default_factory=list)

    def validate(self) -> ControllerConfig:
        """Check types and ranges (names are checked against the tree by the Controller).

        Returns:
            self.

        Raises:
            ConfigError: naming the field and the valid values.
        """
        self.joints = _strings("", "joints", self.joints)
        if len(set(self.joints)) != len(self.joints):
            raise ConfigError(f"joints repeat in {self.joints}")
        for key in CONTROLLER_RANGES:
            setattr(self, key, _ranged("", key, getattr(self, key), CONTROLLER_RANGES))
        if not isinstance(self.solver, str) or self.solver not in SOLVERS:
            raise ConfigError(
                f"unknown solver {self.solver!r}; solvers are: " + ", ".join(SOLVERS)
            )
        if self.damping_max > 0.0 and self.damping_epsilon == 0.0:
            raise ConfigError("damping_epsilon must be > 0 when damping_max > 0")
        names = [c.name for c in self.constraints]
        if len(set(names)) != len(names):
            raise ConfigError(f"constraint names repeat in {names}")
        for c in self.constraints:
            if not isinstance(c, ConstraintConfig):
                raise ConfigError(f"constraints must be ConstraintConfig, got {c!r}")
            c.validate()
        return self

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ControllerConfig:
        """Build from a YAML-like dict.

        ``constraints`` is a list of constraint dicts (each with a ``name``), or a mapping
        name -> fields (the ROS params-file layout ``constraints.<name>.<field>``), ordered by
        ``constraint_names`` when given.

        Raises:
            ConfigError: unknown keys (naming the valid ones), bad types or values.
        """
        if not isinstance(d, Mapping):
            raise ConfigError(f"a controller configuration must be a mapping, got {d!r}")
        valid = [f.name for f in fields(cls)]
        kw: dict[str, Any] = {}
        order = None
        for k, v in d.items():
            if k == "constraint_names":
                order = _strings("", "constraint_names", v)
            elif k in valid:
                kw[k] = v
            else:
                raise ConfigError(
                    f"unknown key {k!r}; valid keys are: "
                    + ", ".join([*valid, "constraint_names"])
                )
        raw = kw.pop("constraints", None) or []
        cons: list[ConstraintConfig] = []
        if isinstance(raw, Mapping):
            names = order if order is not None else list(raw)
            missing = [n for n in names if n not in raw]
            if missing:
                raise ConfigError(
                    f"constraint_names lists {missing} without settings under "
                    f"'constraints'; configured: {list(raw)}"
                )
            cons = [ConstraintConfig.from_dict(raw[n], name=n) for n in names]
        elif isinstance(raw, Sequence) and not isinstance(raw, str):
            cons = [ConstraintConfig.from_dict(c) for c in raw]
            if order is not None and order != [c.name for c in cons]:
                raise ConfigError(
                    f"constraint_names {order} does not match the constraints "
                    f"{[c.name for c in cons]}"
                )
        else:
            raise ConfigError(f"constraints must be a list or a mapping, got {raw!r}")
        return cls(constraints=cons, **kw).validate()

    @classmethod
    def from_params(cls, d: Mapping[str, Any], node_name: str = "itasc_node") -> ControllerConfig:
        """Build from a ROS 2 params file's content (``{node: {ros__parameters: {...}}}``).

        Also accepts the bare ``ros__parameters`` mapping. Node-only keys (``robot_description``,
        ``command_out_type``...: :data:`NODE_ONLY_KEYS`) are skipped.

        Raises:
            ConfigError: as :meth:`from_dict`, or no section for ``node_name``.
        """
        params: Any = d
        if isinstance(d, Mapping) and "ros__parameters" not in d:
            for key in (node_name, f"/{node_name}", "/**"):
                if isinstance(d.get(key), Mapping):
                    params = d[key]
                    break
            else:
                if all(isinstance(v, Mapping) and "ros__parameters" in v for v in d.values()):
                    raise ConfigError(f"no parameters for node {node_name!r}; sections: {list(d)}")
        if isinstance(params, Mapping) and "ros__parameters" in params:
            params = params["ros__parameters"]
        if not isinstance(params, Mapping):
            raise ConfigError(f"parameters must be a mapping, got {params!r}")
        return cls.from_dict({k: v for k, v in params.items() if k not in NODE_ONLY_KEYS})

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (YAML-ready) that :meth:`from_dict` reads back."""
        return asdict(self)

    def constraint(self, name: str) -> ConstraintConfig:
        """A constraint's configuration by name.

        Raises:
            ConfigError: naming the configured constraints.
        """
        for c in self.constraints:
            if c.name == name:
                return c
        raise ConfigError(
            f"no constraint named {name!r}; constraints are: "
            + (", ".join(repr(c.name) for c in self.constraints) or "(none)")
        )


LIVE_KEYS = frozenset(
    {
        "control_rate",
        "input_timeout",
        "solver",
        "damping_max",
        "damping_epsilon",
        "velocity_scale",
        "joint_limit_margin",
        "max_velocity",
        "twist_filter_time_constant",
        "max_target_speed",
        "max_target_angular_speed",
        "target_reach_margin",
    }
)
"""Controller settings that :meth:`Controller.update_parameters` changes live."""

LIVE_CONSTRAINT_KEYS = frozenset(
    {
        "weight",
        "gain",
        "feedforward",
        "distance",
        "min_distance",
        "max_distance",
        "values",
        "position_axes",
        "rotation_axes",
        "reference",
    }
)
"""Constraint settings that :meth:`Controller.update_parameters` changes live."""


def apply_updates(config: ControllerConfig, **kw: Any) -> ControllerConfig:
    """A validated copy of ``config`` with live settings changed (``config`` is untouched).

    Keys as in :meth:`Controller.update_parameters`.

    Raises:
        ConfigError: unknown or structural key (naming the live ones), invalid value.
    """
    cfg = copy.deepcopy(config)
    per: dict[str, dict[str, Any]] = {}
    for key, value in kw.items():
        if key == "constraints":
            if not isinstance(value, Mapping):
                raise ConfigError(f"constraints must be a mapping name -> settings, got {value!r}")
            for name, settings in value.items():
                per.setdefault(name, {}).update(settings)
        elif key.startswith("constraints."):
            parts = key.split(".")
            if len(parts) != 3:
                raise ConfigError(f"parameter {key!r} is not 'constraints.<name>.<field>'")
            per.setdefault(parts[1], {})[parts[2]] = value
        elif key in LIVE_KEYS:
            setattr(cfg, key, value)
        else:
            raise ConfigError(
                f"{key!r} cannot change live (rebuild the controller); live "
                "settings are: " + ", ".join(sorted(LIVE_KEYS))
            )
    for name, settings in per.items():
        c = cfg.constraint(name)
        for f, value in settings.items():
            if f not in LIVE_CONSTRAINT_KEYS:
                raise ConfigError(
                    f"constraint {name!r}: {f!r} cannot change live (rebuild the "
                    "controller); live settings are: " + ", ".join(sorted(LIVE_CONSTRAINT_KEYS))
                )
            setattr(c, f, value)
    cfg.validate()
    return cfg


@dataclass
class StepOutput:
    """What one :meth:`Controller.step` decided.

    Attributes:
        status: 'waiting' (no joint state or no target yet), 'active', 'stale', 'disabled'
            or 'fault'.
        publish: True when a command must be sent now (an active one, or the single zero).
        qdot: (n,) joint velocities [rad/s or m/s] in ``joint_names`` order (zeros unless
            active).
        q: (n,) the current joint positions [rad or m] (last good joint state).
        result: the scene's solve result (reused by the next step: copy it to keep it), or
            None when no solve ran.
        reason: why the status is not 'active' ('' when it is).
    """

    status: str
    publish: bool
    qdot: Array
    q: Array
    result: SolveResult | None = None
    reason: str = ""


def _fresh(age: float, timeout: float) -> bool:
    """True when an input received ``age`` [s] ago is recent: ``|age| <= timeout`` (not NaN).

    Negative ages happen when the clock jumps back (use_sim_time and a looping bag): an input
    received "in the future" of the clock is as unusable as an old one.
    """
    return -timeout <= age <= timeout


class _StampOrder:
    """Header stamps [s] of one input stream (joint states, a target's poses or twists).

    A stamped message is compared with the last accepted stamped message of its stream while
    that one is fresh (received within ``input_timeout``, see :func:`_fresh`): an older stamp is
    *out of order*; a stamp further ahead than the reception times allow, plus
    ``input_timeout`` of jitter, *leaps ahead* (a stamp in the future). Both are rejected. Once
    the last stamped message is no longer fresh the stream re-anchors on the next one, so a
    single bad stamp, a restarted publisher or a clock that jumped can never lock a stream out
    for longer than ``input_timeout``. Unstamped messages (stamp zero) are not compared.
    """

    def __init__(self) -> None:
        self.source: float | None = None  # [s] header stamp of the last accepted message
        self.received = -math.inf  # [s] its reception time

    def check(self, source: float | None, received: float, timeout: float) -> str:
        """'' when a message stamped ``source`` [s] received at ``received`` [s] is in order."""
        if source is None:
            return ""
        if not math.isfinite(source):
            return f"stamp {source!r} is not finite"
        elapsed = received - self.received
        if self.source is None or not _fresh(elapsed, timeout):
            return ""  # nothing recent to compare with: re-anchor
        if source < self.source:
            return (
                f"stamp {source:.6f} s is older than the last accepted {self.source:.6f} s "
                "(out of order)"
            )
        lead = source - self.source - max(elapsed, 0.0)
        if lead > timeout:
            return (
                f"stamp {source:.6f} s is {lead:.3f} s further ahead of the last accepted "
                f"{self.source:.6f} s than the time between them (a stamp in the future; "
                f"input_timeout {timeout} s)"
            )
        return ""

    def accept(self, source: float | None, received: float) -> None:
        """Record an accepted message (unstamped ones leave the anchor as it is)."""
        if source is not None:
            self.source = float(source)
            self.received = float(received)


def _as_array(value: ArrayLike, what: str, reject: Any) -> Array:
    """``value`` as a flat float array; ``reject(reason)`` -> the InputError to raise."""
    try:
        return np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise reject(f"{what} must be numbers: {exc}") from None


def _usable(v: Array) -> bool:
    """All values finite and at most :data:`HUGE` in magnitude (NaN fails the comparison)."""
    return bool((np.abs(v) <= HUGE).all())  # the method: no np.all dispatch in the tick


class _TargetState:
    """Per pose-constraint bookkeeping: last pose, twist estimate, explicit twist."""

    def __init__(self) -> None:
        self.pose = np.eye(4)  # (4, 4) root frame
        self.stamp = -math.inf  # [s] reception time of the last pose
        self.order = _StampOrder()  # header stamps of the poses
        self.has_pose = False
        self.estimate = np.zeros(6)  # (6,) filtered root-frame twist from successive poses
        self.raw = np.zeros(6)  # (6,) work array: the unfiltered finite-difference twist
        self.rel = np.zeros((3, 3))  # (3, 3) work array: rotation from the last pose
        self.new_pose = np.eye(4)  # (4, 4) work array: the pose of the message being taken
        self.twist = np.zeros(6)  # (6,) last explicit twist (root frame)
        self.twist_stamp = -math.inf  # [s]
        self.twist_order = _StampOrder()  # header stamps of the twists
        self.applied = np.zeros(6)  # (6,) what was given to the constraint last step
        self.reach = math.inf  # [m] targets farther from the root are refused
        self.jumps = 0  # poses that implied a target faster than the speed limits
        self.capped = 0  # explicit twists scaled down to the speed limits


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
        for c in self.config.constraints:
            if c.type in POSE_CONSTRAINT_TYPES and not c.link:
                c.link = tip_link(self.tree)
        self.scene = self._build_scene(self.config)
        self._constraints = self.scene.constraints
        self._targets = {
            c.name: _TargetState()
            for c in self.config.constraints
            if c.type in POSE_CONSTRAINT_TYPES
        }
        self._set_reach(self.config)
        self._vmax = self.scene.velocity_limits  # (n,)
        self._dt = 1.0 / self.config.control_rate
        self._q = np.zeros(n)
        self._zeros = np.zeros(n)
        self._qdot = np.zeros(n)
        self._has_state = False
        self._js_stamp = -math.inf
        self._js_order = _StampOrder()
        self._names_cache: list[str] | None = None
        self._idx = np.zeros(n, dtype=np.int64)
        self._held_idx: list[tuple[int, int]] = []
        self._enabled = True
        self._halted = True  # the last command sent (if any) was zero
        self.last_rejection = ""
        self.rejections = 0
        self._warm_up()

    def _warm_up(self) -> None:
        """Run one solve now so that compiling/loading the kernels never delays a tick."""
        try:
            self.scene.solve(self.tree.neutral(), self._dt)
        except Exception:  # a model that cannot be solved faults in step(), never crashes here
            pass

    # ------------------------------------------------------------------------- building
    def _set_reach(self, cfg: ControllerConfig) -> None:
        """Each target's largest distance from the root [m] (see ``target_reach_margin``).

        The effector's reach (:meth:`KinematicTree.reach`) plus the margin, plus for a
        distance constraint the largest distance it may keep from its target.
        """
        for name, st in self._targets.items():
            c = cfg.constraint(name)
            keep = max(c.distance, c.max_distance) if c.type == "distance" else 0.0
            st.reach = self.tree.reach(c.link) + keep + cfg.target_reach_margin

    def _build_scene(self, cfg: ControllerConfig) -> Scene:
        try:
            cons = [_make_constraint(c) for c in cfg.constraints]
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

        The target is None when the constraint has no target yet (or is a joint_value).
        """
        c = self.constraint(constraint)
        if not isinstance(c, CopyPose | Distance):
            return np.eye(4), None
        eff = self.tree.forward_kinematics(self._q, c.effector)
        if c.target.link is not None:
            tgt = self.tree.forward_kinematics(self._q, c.target.link) @ c.target.offset
            return eff, tgt
        return eff, (c.target.pose.copy() if c.has_target else None)

    # ------------------------------------------------------------------------- inputs
    def _reject(self, reason: str) -> InputError:
        self.last_rejection = reason
        self.rejections += 1
        return InputError(reason)

    def set_joint_state(
        self,
        names: Sequence[str],
        positions: ArrayLike,
        stamp: float,
        source_stamp: float | None = None,
    ) -> None:
        """Accept a joint state, mapped by name (extra joints ignored).

        Args:
            names: joint names of the message.
            positions: one position per name [rad or m].
            stamp: reception time [s] (the clock of :meth:`step`); staleness is measured
                from it.
            source_stamp: the message's own stamp [s] if it has one (not zero); checked
                against the last accepted one by :class:`_StampOrder` (out of order, leaping
                ahead).

        Raises:
            InputError: missing or repeated commanded joints, positions of commanded joints
                NaN/Inf or above :data:`HUGE`, a length mismatch, a non-finite reception
                stamp or a stamp out of order / leaping ahead; the last good state is kept.
        """
        names = list(names)
        pos = _as_array(positions, "joint state positions", self._reject)
        if pos.shape[0] != len(names):
            raise self._reject(f"joint state has {len(names)} names but {pos.shape[0]} positions")
        if not math.isfinite(stamp):
            raise self._reject(f"joint state reception time {stamp!r} is not finite")
        if names != self._names_cache:
            self._map_names(names)
        q = pos[self._idx]
        if not _usable(q):
            finite = np.isfinite(q)
            bad = [self.joint_names[i] for i in np.flatnonzero(~finite)]
            if bad:
                raise self._reject(f"joint state has non-finite positions for {bad}")
            huge = [self.joint_names[i] for i in np.flatnonzero(np.abs(q) > HUGE)]
            raise self._reject(f"joint state has huge positions (> {HUGE:g}) for {huge}")
        why = self._js_order.check(source_stamp, stamp, self.config.input_timeout)
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
        self._js_stamp = float(stamp)
        self._js_order.accept(source_stamp, stamp)

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

    def _target_state(self, constraint: str) -> _TargetState:
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
        stamp: float,
        source_stamp: float | None = None,
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
            stamp: reception time [s].
            source_stamp: the message's stamp [s] if non-zero (used for the twist estimate
                and checked by :class:`_StampOrder`: out of order, leaping ahead).
            jump: the pose is a jump, not part of a motion (e.g. the RViz marker snapped back
                to the effector): the twist estimate restarts from zero.

        Raises:
            InputError: unknown constraint or frame, NaN/Inf or huge (> :data:`HUGE`) position,
                NaN/Inf or zero (norm < 1e-6) quaternion, a stamp out of order / leaping ahead,
                a position farther from the root than :meth:`target_reach`; the target is
                unchanged. Other quaternions are normalised.
        """
        st = self._target_state(constraint)
        p = _as_array(position, f"target of {constraint!r}: position", self._reject)
        qt = _as_array(quat_xyzw, f"target of {constraint!r}: quaternion", self._reject)
        if p.shape != (3,):
            code = BAD_POSITION
        elif qt.shape != (4,):
            code = BAD_QUATERNION if _usable(p) else BAD_POSITION
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
        if not math.isfinite(stamp):
            raise self._reject(f"target of {constraint!r}: reception time {stamp!r} not finite")
        if code == ZERO_QUATERNION:
            raise self._reject(
                f"target of {constraint!r}: quaternion {qt.tolist()} has zero "
                "norm (identity is (0, 0, 0, 1))"
            )
        why = st.order.check(source_stamp, stamp, self.config.input_timeout)
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
        self.scene.get(constraint).set_target(pose, check=False)  # type: ignore[attr-defined]
        t = float(stamp)
        t_src = t if source_stamp is None else float(source_stamp)
        prev_src = st.order.source
        t_prev = st.stamp if (source_stamp is None or prev_src is None) else prev_src
        dt = t_src - t_prev
        if not jump and st.has_pose and 0.0 < dt <= self.config.input_timeout:
            jump = self._is_jump(st, pose, dt)
            if not jump:
                tau = self.config.twist_filter_time_constant  # from zero: a jump kicks gently
                filter_twist(pose, st.pose, dt, dt / (tau + dt), st.rel, st.raw, st.estimate)
                cfg = self.config  # the estimate never exceeds the speed limits
                cap_twist(st.estimate, cfg.max_target_speed, cfg.max_target_angular_speed)
        if jump or not (st.has_pose and 0.0 <= dt <= self.config.input_timeout):
            st.estimate[:] = 0.0
        st.pose[:] = pose
        st.stamp = t
        st.order.accept(source_stamp, t)
        st.has_pose = True

    def _is_jump(self, st: _TargetState, pose: Array, dt: float) -> bool:
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
        stamp: float,
        source_stamp: float | None = None,
    ) -> None:
        """Set the target's twist explicitly (feed-forward), valid for ``input_timeout``.

        Its linear and angular parts are each scaled down to ``max_target_speed`` /
        ``max_target_angular_speed`` (counted: :meth:`target_twists_capped`).

        Args:
            constraint: as in :meth:`set_target`.
            frame: axes of the twist: '' (root) or a URDF link (rotated to the root).
            twist: (6,) linear velocity of the target origin [m/s], angular velocity [rad/s].
            stamp: reception time [s].
            source_stamp: the message's stamp [s] if non-zero, checked by
                :class:`_StampOrder` (out of order, leaping ahead).

        Raises:
            InputError: unknown constraint or frame, not 6 finite values of at most
                :data:`HUGE`, a stamp out of order / leaping ahead; the twist is unchanged.
        """
        st = self._target_state(constraint)
        tw = _as_array(twist, f"twist of {constraint!r}", self._reject)
        if tw.shape != (6,) or not _usable(tw):
            raise self._reject(
                f"twist of {constraint!r} must be 6 finite values of at most {HUGE:g}, "
                f"got {tw.tolist()}"
            )
        if not math.isfinite(stamp):
            raise self._reject(f"twist of {constraint!r}: reception time {stamp!r} not finite")
        why = st.twist_order.check(source_stamp, stamp, self.config.input_timeout)
        if why:
            raise self._reject(f"twist of {constraint!r}: {why}")
        ref = self._frame_pose(frame, f"twist of {constraint!r}")
        if ref is not None:
            r = ref[:3, :3]
            tw = np.concatenate([r @ tw[:3], r @ tw[3:]])
        st.twist[:] = tw
        if cap_twist(st.twist, self.config.max_target_speed, self.config.max_target_angular_speed):
            st.capped += 1
        st.twist_stamp = float(stamp)
        st.twist_order.accept(source_stamp, stamp)

    def set_enabled(self, enabled: bool) -> None:
        """Enable or disable the output (disabled: zeros once, then silence)."""
        self._enabled = bool(enabled)

    def update_parameters(self, **kw: Any) -> None:
        """Change settings live; all or nothing.

        Keys: those of :data:`LIVE_KEYS`; per constraint either ``constraints={name: {field:
        value}}`` or the flat ROS name ``**{'constraints.<name>.<field>': value}`` with the
        fields of :data:`LIVE_CONSTRAINT_KEYS`.

        Raises:
            ConfigError: unknown or structural key (naming the live ones), invalid value;
                nothing is changed.
        """
        cfg = apply_updates(self.config, **kw)
        scene = self._build_scene(cfg)
        for old in self.scene.constraints:  # carry the targets over
            new = scene.get(old.name)
            if isinstance(old, CopyPose | Distance) and old.target.link is None and old.has_target:
                new.set_target(old.target.pose)  # type: ignore[attr-defined]
        for st in self._targets.values():
            st.applied[:] = 0.0  # the new constraints start without a twist
            for tw in (st.estimate, st.twist):  # within the (new) speed limits
                cap_twist(tw, cfg.max_target_speed, cfg.max_target_angular_speed)
        self.config = cfg
        self.scene = scene
        self._set_reach(cfg)
        self._constraints = scene.constraints
        self._vmax = scene.velocity_limits
        self._dt = 1.0 / cfg.control_rate

    # ------------------------------------------------------------------------- the tick
    def _status(self, now: float) -> tuple[str, str]:
        if not self._enabled:
            return "disabled", "~/enable is false: zero command sent, then silence"
        if not self._has_state:
            return "waiting", "no joint state received yet"
        age = now - self._js_stamp
        if not _fresh(age, self.config.input_timeout):
            if age < 0.0:
                return "stale", (
                    f"the last joint state was received {-age:.3f} s after now: the clock "
                    "jumped back"
                )
            return "stale", (
                f"joint states are {age:.3f} s old (input_timeout {self.config.input_timeout} s)"
            )
        for c in self._constraints:
            if c.enabled and c.has_target:  # type: ignore[attr-defined]
                return "active", ""
        return "waiting", "no target received yet"

    def _apply_twists(self, now: float) -> None:
        """Give each pose constraint its twist: explicit if recent, else the estimate, else 0."""
        timeout = self.config.input_timeout
        for name, st in self._targets.items():
            if _fresh(now - st.twist_stamp, timeout):
                src: Array | None = st.twist
            elif st.has_pose and _fresh(now - st.stamp, timeout):
                src = st.estimate
            else:
                src = None
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
        status, reason = self._status(now)
        if status == "active":
            self._apply_twists(now)
            try:
                res: SolveResult | None = self.scene.solve(self._q, self._dt)
            except ItascError as exc:
                res, reason = None, f"solve failed: {exc}"
            except Exception as exc:  # whatever broke, the robot gets a zero, not a crash
                res, reason = None, f"solve failed: {type(exc).__name__}: {exc}"
            if res is not None and res.ok and clip_finite(res.qdot, self._vmax, self._qdot):
                self._halted = False
                return StepOutput("active", True, self._qdot.copy(), self._q.copy(), res, "")
            status = "fault"
            reason = reason or "solve produced non-finite joint velocities"
            publish = not self._halted
            self._halted = True
            return StepOutput(status, publish, self._zeros.copy(), self._q.copy(), res, reason)
        publish = not self._halted
        self._halted = True
        return StepOutput(status, publish, self._zeros.copy(), self._q.copy(), None, reason)


def tip_link(tree: KinematicTree) -> str:
    """The link at the end of the longest chain of movable joints (the effector by default).

    Ties go to the deepest link, then to the last in URDF order (``tool0`` after ``ee_link``).
    """
    movable: dict[str, int] = {tree.root_link: 0}
    depth: dict[str, int] = {tree.root_link: 0}
    for j in tree.joints:  # parents before children
        movable[j.child] = movable.get(j.parent, 0) + (0 if j.type == "fixed" else 1)
        depth[j.child] = depth.get(j.parent, 0) + 1
    best = tree.root_link
    for link in tree.link_names:
        if (movable.get(link, 0), depth.get(link, 0)) >= (movable[best], depth[best]):
            best = link
    return best


def _make_constraint(c: ConstraintConfig) -> Constraint:
    if c.type == "copy_pose":
        return CopyPose(
            c.name,
            c.link,
            position_axes=c.position_axes,
            rotation_axes=c.rotation_axes,
            reference=c.reference,
            target_link=c.target_link or None,
            weight=c.weight,
            gain=c.gain,
            feedforward=c.feedforward,
        )
    if c.type == "distance":
        return Distance(
            c.name,
            c.link,
            distance=c.distance,
            min_distance=c.min_distance if c.min_distance >= 0.0 else None,
            max_distance=c.max_distance if c.max_distance >= 0.0 else None,
            target_link=c.target_link or None,
            weight=c.weight,
            gain=c.gain,
            feedforward=c.feedforward,
        )
    return JointValue(c.name, c.joints, c.values, weight=c.weight, gain=c.gain)


__all__ = [
    "CONSTRAINT_TYPES",
    "HUGE",
    "LIVE_CONSTRAINT_KEYS",
    "LIVE_KEYS",
    "NODE_ONLY_KEYS",
    "STATUSES",
    "ConstraintConfig",
    "Controller",
    "ControllerConfig",
    "StepOutput",
    "apply_updates",
    "tip_link",
]
