"""The command line's ``-p`` values of ``itasc_sim_robot``, checked before DDS starts.

:func:`check_overrides` turns a wrong parameter name, type, range, command type, topic name,
CPU, robot, joint or initial position into one :class:`~itasc_ros.cli.UsageError` (or
:class:`~itasc_ros.core.ItascError`) line, before rclpy starts; the node checks them again.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from rclpy.exceptions import InvalidTopicNameException
from rclpy.parameter import Parameter
from rclpy.validate_topic_name import validate_topic_name

from itasc_ros.cli import UsageError, unknown_choice

from .commands import COMMAND_TYPES
from .joints import SimulatedJoints
from .parameters import NODE_BUILTIN_PARAMETERS, PARAMETERS, SimParam, load_urdf_file

_D = Parameter.Type


def check_overrides(overrides: Mapping[str, object], params_file: bool = False) -> None:
    """Check the command line's ``-p`` values before DDS starts (rclpy checks them again).

    Args:
        overrides: parameter name -> value, as ``ros_args.param_overrides`` reads them.
        params_file: a ``--params-file`` may give the URDF (not read here).

    Raises:
        UsageError: an unknown parameter (naming the closest), a value of the wrong type or
            out of its range, an unknown command type or a bad topic name.
        ItascError: a missing URDF file or robot, an unknown joint, bad initial positions.
    """
    specs = {spec.name: spec for spec in PARAMETERS}
    for name, value in overrides.items():
        spec = specs.get(name)
        if spec is not None:
            _check_value(spec, value)
        elif name not in NODE_BUILTIN_PARAMETERS and not name.startswith("qos_overrides."):
            raise UsageError(unknown_choice("parameter", name, specs))
    _check_cpus(_as_list(overrides.get("cpu_affinity")))
    if overrides.get("robot_description") or (params_file and "urdf_file" not in overrides):
        return  # the URDF comes from elsewhere: the node checks it
    tree = load_urdf_file(str(overrides.get("urdf_file", "")))
    joints = _as_list(overrides.get("joints"))
    q0 = _as_list(overrides.get("initial_positions"))
    SimulatedJoints(tree, joints, q0 or None)  # an unknown joint, bad initial positions


def _check_cpus(cpus: list[int]) -> None:
    count = os.cpu_count() or 1
    bad = [c for c in cpus if not 0 <= c < count]
    if bad:
        raise UsageError(f"cpu_affinity: no CPU {bad}; this machine has CPUs 0-{count - 1}")


def _as_list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_integer(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_ok(kind: Parameter.Type, value: object) -> bool:
    items = value if isinstance(value, list) else None
    return {
        _D.DOUBLE: _is_number(value),
        _D.INTEGER: _is_integer(value),
        _D.STRING: isinstance(value, str),
        _D.STRING_ARRAY: items is not None and all(isinstance(v, str) for v in items),
        _D.DOUBLE_ARRAY: items is not None and all(_is_number(v) for v in items),
        _D.INTEGER_ARRAY: items is not None and all(_is_integer(v) for v in items),
    }.get(kind, True)


def _check_value(spec: SimParam, value: object) -> None:
    kind = spec.kind
    ok = _type_ok(kind, value)
    if ok and spec.lo is not None and spec.hi is not None and isinstance(value, int | float):
        ok = spec.lo <= value <= spec.hi
    if not ok:
        want = _WANTED[kind] + (f" in [{spec.lo:g}, {spec.hi:g}]" if spec.lo is not None else "")
        raise UsageError(
            f"parameter {spec.name!r} must be {want} ({spec.description}), got {value!r}"
        )
    if spec.name == "command_type" and value not in COMMAND_TYPES:
        raise UsageError(unknown_choice("command_type", str(value), COMMAND_TYPES))
    if spec.name == "command_topic" and value:
        try:
            validate_topic_name(str(value))
        except InvalidTopicNameException:
            raise UsageError(
                f"parameter 'command_topic' {value!r} is not a valid topic name "
                "(letters, digits, '_' and '/', e.g. /forward_velocity_controller/commands)"
            ) from None


_WANTED = {
    _D.DOUBLE: "a number",
    _D.INTEGER: "a whole number",
    _D.STRING: "a string",
    _D.STRING_ARRAY: "a list of names [a,b]",
    _D.DOUBLE_ARRAY: "a list of numbers [x,y]",
    _D.INTEGER_ARRAY: "a list of whole numbers [i,j]",
}


__all__ = ["check_overrides"]
