"""A joint's velocity, acceleration, deceleration and jerk limits, as parameters give them.

The ros2_control / MoveIt ``joint_limits`` convention (``joint_limits.<joint>.<field>``): a
limit counts when its ``has_..._limits`` is true; a limit that is not given is infinite. The
motion limiter (:mod:`~itasc_ros.core.solve.motion_limits`) applies them (ROS-free).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

#: Fields of one joint's entry under ``joint_limits.<joint>`` (MoveIt's joint_limits.yaml);
#: the position ones are accepted and checked, the URDF's position limits apply.
LIMIT_FIELDS: dict[str, str] = {
    "has_velocity_limits": "bool",
    "max_velocity": "double",
    "has_acceleration_limits": "bool",
    "max_acceleration": "double",
    "has_deceleration_limits": "bool",
    "max_deceleration": "double",
    "has_jerk_limits": "bool",
    "max_jerk": "double",
    "has_position_limits": "bool",
    "min_position": "double",
    "max_position": "double",
    "has_effort_limits": "bool",
    "max_effort": "double",
    "angle_wraparound": "bool",
}


@dataclass(frozen=True)
class JointLimits:
    """One joint's limits [rad/s, rad/s^2, rad/s^3 or m/...]; ``inf`` = not limited."""

    max_velocity: float = math.inf
    max_acceleration: float = math.inf
    max_deceleration: float = math.inf
    max_jerk: float = math.inf

    @classmethod
    def from_fields(cls, joint: str, fields: Mapping[str, Any]) -> JointLimits:
        """The limits of ``joint_limits.<joint>.*`` (a limit counts when its ``has_`` is true).

        A ``max_deceleration`` given without ``has_deceleration_limits`` follows MoveIt: the
        deceleration limit defaults to the acceleration limit.

        Raises:
            ConfigError: an unknown field (naming the valid ones), a limit that is not a
                positive number.
        """
        unknown = sorted(set(fields) - set(LIMIT_FIELDS))
        if unknown:
            raise ConfigError(
                f"joint_limits.{joint}: unknown fields {unknown}; valid: "
                + ", ".join(LIMIT_FIELDS)
            )
        values = {}
        for kind in ("velocity", "acceleration", "deceleration", "jerk"):
            if not fields.get(f"has_{kind}_limits", False):
                values[kind] = math.inf
                continue
            raw = fields.get(f"max_{kind}")
            try:
                v = abs(float(raw)) if kind == "deceleration" else float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise ConfigError(
                    f"joint_limits.{joint}.max_{kind} must be a number when "
                    f"has_{kind}_limits is true, got {raw!r}"
                ) from None
            if not (v > 0.0 and math.isfinite(v)):
                raise ConfigError(
                    f"joint_limits.{joint}.max_{kind} must be a positive finite number, "
                    f"got {raw!r}"
                )
            values[kind] = v
        if math.isinf(values["deceleration"]):
            values["deceleration"] = values["acceleration"]
        return cls(
            values["velocity"], values["acceleration"], values["deceleration"], values["jerk"]
        )


def limits_from_parameters(flat: Mapping[str, Any]) -> dict[str, JointLimits]:
    """Joint name -> limits, from flat parameters ``joint_limits.<joint>.<field>``.

    Raises:
        ConfigError: see :meth:`JointLimits.from_fields`.
    """
    per: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        parts = key.split(".")
        if len(parts) == 3 and parts[0] == "joint_limits":
            per.setdefault(parts[1], {})[parts[2]] = value
        elif parts[0] == "joint_limits":
            raise ConfigError(
                f"{key!r}: joint limits are named joint_limits.<joint>.<field>, fields: "
                + ", ".join(LIMIT_FIELDS)
            )
    return {j: JointLimits.from_fields(j, f) for j, f in per.items()}


__all__ = ["LIMIT_FIELDS", "JointLimits", "limits_from_parameters"]
