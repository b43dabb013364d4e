"""The controller's configuration: settings, their ranges, and which of them change live.

:class:`ControllerConfig` holds the loop's settings and one :class:`ConstraintConfig` per
constraint. A constraint's settings are those its type declares
(:attr:`~itasc_ros.core.constraints.Constraint.FIELDS`), checked by the same rules at start-up
and live (:func:`apply_updates`): the fields' kinds and ranges, then the type's own checks by
building it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..constraints import REGISTRY, Constraint
from ..constraints.schema import Field, check_settings
from ..errors import ConfigError, ItascError
from ..kinematics.tree import KinematicTree
from ..solve.joint_limits import JointLimits
from .settings import (
    CONTROLLER_RANGES,
    CONTROLLER_SETTINGS,
    LIVE_KEYS,
    NODE_ONLY_KEYS,
    default,
)


def _strings(owner: str, key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise ConfigError(f"{owner}{key} must be a list of strings, got {value!r}")
    out = [str(v) for v in value]
    if any(not v for v in out):
        raise ConfigError(f"{owner}{key} must not contain empty names, got {out}")
    return out


class ConstraintConfig:
    """One constraint of the controller: a name, a registered type and that type's settings.

    ``ConstraintConfig("ee", "copy_pose", link="panda_hand", gain=40.0)``; a setting reads as
    an attribute (``c.gain``) or from :attr:`settings`. :meth:`validate` fills in the defaults
    of the type's :attr:`~itasc_ros.core.constraints.Constraint.FIELDS`.

    Args:
        name: unique constraint name (no '.').
        type: a registered constraint type (:data:`~itasc_ros.core.constraints.REGISTRY`).
        **settings: the type's settings.
    """

    def __init__(self, name: str, type: str, **settings: Any) -> None:
        self.name = name
        self.type = type
        self.settings: dict[str, Any] = dict(settings)

    def __getattr__(self, key: str) -> Any:
        settings = self.__dict__.get("settings")
        if settings is not None and key in settings:
            return settings[key]
        raise AttributeError(f"constraint {self.__dict__.get('name')!r} has no setting {key!r}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstraintConfig) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"ConstraintConfig({self.name!r}, {self.type!r}, **{self.settings!r})"

    @property
    def kind(self) -> type[Constraint]:
        """The registered class of :attr:`type`.

        Raises:
            ConfigError: an unknown type, naming the registered ones.
        """
        cls = REGISTRY.get(self.type) if isinstance(self.type, str) else None
        if cls is None:
            raise ConfigError(
                f"constraint {self.name!r}: unknown type {self.type!r}; types are: "
                + ", ".join(sorted(REGISTRY))
            )
        return cls

    @property
    def fields(self) -> tuple[Field, ...]:
        """The settings of the type."""
        return self.kind.FIELDS

    @property
    def takes_target(self) -> bool:
        """True for a constraint whose target is a pose set from outside (a topic)."""
        return self.kind.takes_target(self.settings)

    def validate(self) -> ConstraintConfig:
        """Check the settings against the type's fields, fill in defaults, build it once.

        Returns:
            self.

        Raises:
            ConfigError: naming the setting and the valid values.
        """
        if not isinstance(self.name, str) or not self.name or "." in self.name:
            raise ConfigError(
                f"constraint name must be a non-empty string without '.', got {self.name!r}"
            )
        owner = f"constraint {self.name!r}: "
        kind = self.kind
        self.settings = check_settings(owner, kind.FIELDS, self.settings)
        try:  # the type's own rules (axes, reference, ...): the same as when it is built
            kind.build(self.name, self.settings)
        except ItascError as exc:
            raise ConfigError(f"{owner}{exc}") from None
        return self

    def resolve(self, tree: KinematicTree) -> None:
        """Resolve the settings on the controller's tree view (an empty effector: the tip)."""
        self.settings = self.kind.resolve_settings(self.settings, tree)

    def with_setting(self, key: str, value: Any) -> ConstraintConfig:
        """A copy with one setting changed (not validated)."""
        c = copy.copy(self)
        c.settings = {**self.settings, key: value}
        return c

    def build(self) -> Constraint:
        """The constraint object of these (validated) settings.

        Raises:
            ConfigError: settings the type refuses.
        """
        try:
            return self.kind.build(self.name, self.settings)
        except ConfigError:
            raise
        except ItascError as exc:
            raise ConfigError(f"constraint {self.name!r}: {exc}") from exc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], name: str | None = None) -> ConstraintConfig:
        """Build from a YAML-like dict: ``type``, the type's settings, and ``name``.

        A ``name`` argument wins over the dict's.

        Raises:
            ConfigError: no type, an unknown type or setting (naming the valid ones), a bad
                value.
        """
        if not isinstance(d, Mapping):
            raise ConfigError(f"a constraint must be a mapping, got {d!r}")
        kw = dict(d)
        if name is not None:
            kw["name"] = name
        if "name" not in kw or "type" not in kw:
            raise ConfigError(
                f"a constraint needs 'name' and 'type' (one of "
                f"{', '.join(sorted(REGISTRY))}), got {dict(d)}"
            )
        cname, ctype = kw.pop("name"), kw.pop("type")
        return cls(cname, ctype, **kw).validate()

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (YAML-ready): name, type and the settings."""
        return {"name": self.name, "type": self.type, **copy.deepcopy(self.settings)}


@dataclass
class ControllerConfig:
    """Configuration of a controller (the node's parameters minus the ROS plumbing).

    One attribute per setting of scope ``controller`` in
    :data:`~itasc_ros.core.control.settings.SETTINGS`, where each is declared once with its
    default, range or choices, unit and meaning (the parameter reference shows them);
    the defaults below are read from there.

    Attributes:
        constraints: the constraints, in row order.
        joint_limits: joint name -> its ``joint_limits`` fields in the ros2_control / MoveIt
            convention (``has_acceleration_limits``, ``max_acceleration``, ...; see
            :mod:`~itasc_ros.core.solve.motion_limits`); read-only.
    """

    joints: list[str] = field(default_factory=lambda: default("joints"))
    robots: list[str] = field(default_factory=lambda: default("robots"))
    control_rate: float = default("control_rate")
    input_timeout: float = default("input_timeout")
    solver: str = default("solver")
    damping_max: float = default("damping_max")
    damping_epsilon: float = default("damping_epsilon")
    velocity_scale: float = default("velocity_scale")
    joint_limit_margin: float = default("joint_limit_margin")
    max_velocity: float = default("max_velocity")
    twist_filter_time_constant: float = default("twist_filter_time_constant")
    world_frame: str = default("world_frame")
    feed_base_twist: bool = default("feed_base_twist")
    base_kind: str = default("base_kind")
    base_max_speed: float = default("base_max_speed")
    base_max_angular_speed: float = default("base_max_angular_speed")
    base_max_acceleration: float = default("base_max_acceleration")
    base_max_angular_acceleration: float = default("base_max_angular_acceleration")
    base_weight: float = default("base_weight")
    aim_ahead: bool = default("aim_ahead")
    command_latency: float = default("command_latency")
    actuator_lag: float = default("actuator_lag")
    max_target_speed: float = default("max_target_speed")
    max_target_angular_speed: float = default("max_target_angular_speed")
    target_reach_margin: float = default("target_reach_margin")
    max_cartesian_speed: float = default("max_cartesian_speed")
    max_cartesian_acceleration: float = default("max_cartesian_acceleration")
    max_cartesian_angular_speed: float = default("max_cartesian_angular_speed")
    max_cartesian_angular_acceleration: float = default("max_cartesian_angular_acceleration")
    constraints: list[ConstraintConfig] = field(default_factory=list)
    joint_limits: dict[str, dict[str, Any]] = field(default_factory=dict)

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
        self.robots = _strings("", "robots", self.robots)
        if len(set(self.robots)) != len(self.robots) or "" in self.robots:
            raise ConfigError(f"robots must be distinct non-empty names, got {self.robots}")
        for s in CONTROLLER_SETTINGS:
            if s.name not in ("joints", "robots", "constraint_names"):
                setattr(self, s.name, s.check("", getattr(self, s.name)))
        if self.damping_max > 0.0 and self.damping_epsilon == 0.0:
            raise ConfigError("damping_epsilon must be > 0 when damping_max > 0")
        names = [c.name for c in self.constraints]
        if len(set(names)) != len(names):
            raise ConfigError(f"constraint names repeat in {names}")
        for c in self.constraints:
            if not isinstance(c, ConstraintConfig):
                raise ConfigError(f"constraints must be ConstraintConfig, got {c!r}")
            c.validate()
        self.limits()
        return self

    def limits(self) -> dict[str, JointLimits]:
        """Joint name -> :class:`~itasc_ros.core.solve.JointLimits` of ``joint_limits``.

        Raises:
            ConfigError: not a mapping of mappings, an unknown field, a bad limit.
        """
        if not isinstance(self.joint_limits, Mapping) or not all(
            isinstance(f, Mapping) for f in self.joint_limits.values()
        ):
            raise ConfigError(
                "joint_limits must map joint names to their fields (joint_limits.<joint>."
                f"max_acceleration, ...), got {self.joint_limits!r}"
            )
        return {str(j): JointLimits.from_fields(str(j), f) for j, f in self.joint_limits.items()}

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

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (YAML-ready) that :meth:`from_dict` reads back."""
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)}
        out["constraints"] = [c.to_dict() for c in self.constraints]
        return out

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


def live_fields(c: ConstraintConfig) -> tuple[str, ...]:
    """The settings of constraint ``c`` that change live (its type's ``live`` fields)."""
    return tuple(f.name for f in c.fields if f.live)


def apply_updates(config: ControllerConfig, **kw: Any) -> ControllerConfig:
    """A validated copy of ``config`` with live settings changed (``config`` is untouched).

    Keys as in :meth:`~itasc_ros.core.control.Controller.update_parameters`.

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
        live = live_fields(c)
        for f, value in settings.items():
            if f not in live:
                what = "has no setting" if f not in c.settings else "cannot change live:"
                raise ConfigError(
                    f"constraint {name!r} ({c.type}) {what} {f!r}; its live settings are: "
                    + ", ".join(live)
                )
            c.settings[f] = value
    cfg.validate()
    return cfg


__all__ = [
    "CONTROLLER_RANGES",
    "LIVE_KEYS",
    "NODE_ONLY_KEYS",
    "ConstraintConfig",
    "ControllerConfig",
    "apply_updates",
    "live_fields",
]
