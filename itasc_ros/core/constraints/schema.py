"""The settings of a constraint type: one :class:`Field` per setting, checked in one place.

A constraint type declares its fields (``Constraint.FIELDS``); everything that configures
constraints is derived from them: the controller's configuration checks, the node's ROS
parameters ``constraints.<name>.<field>`` with their descriptors and ranges, the replay of a
recorded configuration and the parameter reference (doc/parameters.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError

KINDS = ("string", "double", "integer", "bool", "string_array", "double_array")
"""Kinds of a field's value (the ROS parameter types they become)."""


@dataclass(frozen=True)
class Field:
    """One setting of a constraint type.

    Attributes:
        name: the setting's name (``constraints.<constraint>.<name>`` in the node).
        kind: one of :data:`KINDS`.
        default: the value when not given.
        description: what it does, with units in brackets.
        lo: smallest value (numbers; each element of a double array), or None.
        hi: largest value, likewise.
        live: changeable while running (else read-only: restart to change).
        choices: the valid values in words (e.g. "one of: target, effector, root").
    """

    name: str
    kind: str
    default: Any
    description: str
    lo: float | None = None
    hi: float | None = None
    live: bool = False
    choices: str = ""

    def check(self, owner: str, value: Any) -> Any:
        """``value`` checked against the kind and the range, normalised (float, list).

        Args:
            owner: prefix of the error message (e.g. "constraint 'ee': ").
            value: the value to check.

        Raises:
            ConfigError: naming the field, what it must be and what it got.
        """
        what = f"{owner}{self.name}"
        if self.kind == "string":
            if not isinstance(value, str):
                raise ConfigError(f"{what} must be a string, got {value!r}")
            return value
        if self.kind == "bool":
            if not isinstance(value, bool | np.bool_):
                raise ConfigError(f"{what} must be true or false, got {value!r}")
            return bool(value)
        if self.kind == "double":
            return self._number(what, value)
        if self.kind == "integer":
            return self._integer(what, value)
        if value is None:
            return []
        if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
            raise ConfigError(f"{what} must be a list, got {value!r}")
        if self.kind == "string_array":
            out = [v for v in value]
            if any(not isinstance(v, str) or not v for v in out):
                raise ConfigError(f"{what} must be a list of non-empty strings, got {out}")
            return out
        return [self._number(what, v) for v in value]

    def _integer(self, what: str, value: Any) -> int:
        if isinstance(value, bool | np.bool_) or not isinstance(
            value, int | float | np.integer | np.floating
        ):
            raise ConfigError(f"{what} must be an integer, got {value!r}")
        v = float(value)
        if not math.isfinite(v) or v != math.floor(v):
            raise ConfigError(f"{what} must be an integer, got {value!r}")
        if self.lo is not None and v < self.lo:
            raise ConfigError(f"{what} must be >= {self.lo:g}, got {int(v)}")
        if self.hi is not None and v > self.hi:
            raise ConfigError(f"{what} must be <= {self.hi:g}, got {int(v)}")
        return int(v)

    def _number(self, what: str, value: Any) -> float:
        if isinstance(value, bool | np.bool_ | str | bytes):
            raise ConfigError(f"{what} must be a number, got {value!r}")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{what} must be a number, got {value!r}") from None
        if not math.isfinite(v):
            raise ConfigError(f"{what} must be finite, got {value!r}")
        if self.lo is not None and v < self.lo:
            raise ConfigError(f"{what} must be >= {self.lo}, got {v}")
        if self.hi is not None and v > self.hi:
            raise ConfigError(f"{what} must be <= {self.hi}, got {v}")
        return v


def check_settings(
    owner: str, fields: Sequence[Field], settings: Mapping[str, Any]
) -> dict[str, Any]:
    """Every field's value: from ``settings`` (checked) or its default.

    Raises:
        ConfigError: an unknown key (naming the valid ones) or a bad value.
    """
    by_name = {f.name: f for f in fields}
    unknown = [k for k in settings if k not in by_name]
    if unknown:
        raise ConfigError(
            f"{owner}unknown settings {unknown}; valid settings are: " + ", ".join(by_name)
        )
    out: dict[str, Any] = {}
    for f in fields:
        value = settings[f.name] if f.name in settings else f.default
        out[f.name] = f.check(owner, value)
    return out


__all__ = ["KINDS", "Field", "check_settings"]
