"""Live changes in place: a scalar setting changes the running scene, nothing is rebuilt.

A change of a constraint's ``weight``, ``gain`` or ``feedforward``, or of the damping, the
Cartesian speeds and accelerations or the aim (``aim_ahead``, ``command_latency``), needs no
new scene: it is checked (the setting's own type
and range, and the damping pair's rule) and then set on the running constraint, scene and
configuration, in a few microseconds, between two ticks. Any other live setting (the velocity
scale, the joint limits' margin, a collision margin, ...) still builds a new scene and new
motion limits (:meth:`~itasc_ros.core.control.controller.Controller.update_parameters`).
All or nothing either way. ROS-free.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from ..solve.scene import Scene
from .config import ConstraintConfig, ControllerConfig
from .settings import BY_NAME

#: Constraint settings set on the running constraint.
CONSTRAINT_FIELDS = frozenset({"weight", "gain", "feedforward"})
#: Controller settings set on the running scene (and read from the configuration each tick).
CONTROLLER_KEYS = frozenset(
    {
        "damping_max",
        "damping_epsilon",
        "max_cartesian_speed",
        "max_cartesian_angular_speed",
        "max_cartesian_acceleration",
        "max_cartesian_angular_acceleration",
        "aim_ahead",
        "feed_base_twist",
        "command_latency",
        "actuator_lag",
    }
)

#: One change: (constraint name, or None for a controller setting; setting; checked value).
Change = tuple[str | None, str, Any]


def in_place_changes(config: ControllerConfig, kw: Mapping[str, Any]) -> list[Change] | None:
    """The checked changes of ``kw`` when all of them apply in place, else None.

    Keys as in :meth:`~itasc_ros.core.control.Controller.update_parameters`.

    Raises:
        ConfigError: a value of the wrong type or out of range (nothing is changed).
    """
    out: list[Change] = []
    flat: list[tuple[str, Any]] = []
    for key, value in kw.items():
        if key == "constraints" and isinstance(value, Mapping):
            for name, settings in value.items():
                if not isinstance(settings, Mapping):
                    return None
                flat += [(f"constraints.{name}.{f}", v) for f, v in settings.items()]
        else:
            flat.append((key, value))
    for key, value in flat:
        if key.startswith("constraints.") and key.count(".") == 2:
            _, name, field = key.split(".")
            c = _constraint(config, name)
            if c is None or field not in CONSTRAINT_FIELDS:
                return None
            spec = next((f for f in c.fields if f.name == field), None)
            if spec is None or not spec.live:
                return None
            out.append((name, field, spec.check(f"constraint {name!r}: ", value)))
        elif key in CONTROLLER_KEYS:
            out.append((None, key, BY_NAME[key].check("", value)))
        else:
            return None
    damping = {k: v for n, k, v in out if n is None and k.startswith("damping_")}
    dmax = damping.get("damping_max", config.damping_max)
    if dmax > 0.0 and damping.get("damping_epsilon", config.damping_epsilon) == 0.0:
        raise ConfigError("damping_epsilon must be > 0 when damping_max > 0")
    return out


def apply_in_place(
    config: ControllerConfig, scene: Scene, changes: list[Change]
) -> ControllerConfig:
    """Set checked ``changes`` on ``scene``; returns the new configuration (``config`` is kept).

    The configuration is copied where it changes (the caller's object is never modified).
    """
    cfg = copy.copy(config)
    cfg.constraints = list(config.constraints)
    for name, key, value in changes:
        if name is None:
            setattr(cfg, key, value)
            continue
        i = next(k for k, c in enumerate(cfg.constraints) if c.name == name)
        cfg.constraints[i] = cfg.constraints[i].with_setting(key, value)
        running = scene.get(name)
        if key == "weight":
            running.set_weight(value)
        elif key == "gain":
            running.set_gain(value)
        else:
            running.feedforward = bool(value)
    scene.set_damping(cfg.damping_max, cfg.damping_epsilon)
    scene.set_feedback_limits(cfg.max_cartesian_speed, cfg.max_cartesian_angular_speed)
    scene.set_demand_accelerations(
        cfg.max_cartesian_acceleration, cfg.max_cartesian_angular_acceleration
    )
    return cfg


def _constraint(config: ControllerConfig, name: str) -> ConstraintConfig | None:
    for c in config.constraints:
        if c.name == name:
            return c
    return None


__all__ = ["CONSTRAINT_FIELDS", "CONTROLLER_KEYS", "apply_in_place", "in_place_changes"]
