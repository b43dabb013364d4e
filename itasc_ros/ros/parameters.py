"""The node's ROS parameters from their one declaration: descriptors, checks, reading them.

Each parameter is declared once, in :data:`itasc_ros.core.control.settings.SETTINGS` (and a
constraint type's ``FIELDS``); this module turns those declarations into ROS declarations and
descriptors, checks the values the node is given at start-up and live, and reads the
controller's configuration back. Structural parameters (joints, command output, topics,
constraint names/types/links) are read-only: change them by restarting the node. Gains,
weights, damping, limits, feed-forward, distances and joint values change live. Per
constraint ``<name>`` listed in ``constraint_names`` the node declares
``constraints.<name>.type``, then ``constraints.<name>.<field>`` for every field that type
declares (:attr:`itasc_ros.core.constraints.Constraint.FIELDS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..cli import unknown_choice
from ..core.constraints import REGISTRY, Field
from ..core.control.config import ConstraintConfig, ControllerConfig
from ..core.control.settings import (
    LIVE_KEYS,
    RCLPY_PARAMETERS,
    RCLPY_PREFIXES,
    SETTINGS,
    TRIGGER_JOINT_STATES,
    TRIGGER_TIMER,
    TRIGGERS,
    Setting,
)
from ..core.errors import ConfigError
from ..core.solve.joint_limits import LIMIT_FIELDS
from ..params import CONTROLLER_KEYS, config_from_parameters, robot_defaults
from .rclpy_compat import parameter_overrides, set_parameter_overrides

try:  # rclpy >= Humble
    from rclpy.exceptions import ParameterUninitializedException
except ImportError:  # pragma: no cover - older rclpy
    ParameterUninitializedException = LookupError  # type: ignore[assignment,misc]


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: default (or a Parameter.Type for an empty array), text, range.

    Attributes:
        name: parameter name (relative to the node).
        default: default value, or ``Parameter.Type.STRING_ARRAY``/``DOUBLE_ARRAY`` for an
            empty array (rclpy cannot infer the type of ``[]``).
        description: what it does, with units.
        lo: lower bound of the range, or None.
        hi: upper bound of the range, or None.
        read_only: structural (restart to change).
        constraints: ``additional_constraints`` text (the valid choices).
    """

    name: str
    default: Any
    description: str
    lo: float | None = None
    hi: float | None = None
    read_only: bool = False
    constraints: str = ""

    def descriptor(self) -> ParameterDescriptor:
        """The ParameterDescriptor, with an integer or floating-point range when bounded."""
        d = ParameterDescriptor(
            name=self.name,
            description=self.description,
            read_only=self.read_only,
            additional_constraints=self.constraints,
        )
        if self.lo is not None and self.hi is not None:
            if isinstance(self.default, int) and not isinstance(self.default, bool):
                d.integer_range = [
                    IntegerRange(from_value=int(self.lo), to_value=int(self.hi), step=0)
                ]
            else:
                d.floating_point_range = [
                    FloatingPointRange(
                        from_value=float(self.lo), to_value=float(self.hi), step=0.0
                    )
                ]
        return d


_EMPTY_ARRAYS = {
    "string_array": Parameter.Type.STRING_ARRAY,
    "double_array": Parameter.Type.DOUBLE_ARRAY,
    "integer_array": Parameter.Type.INTEGER_ARRAY,
}
DEFAULT_CONSTRAINT_TYPE = "copy_pose"


def setting_spec(name: str, f: Field) -> ParamSpec:
    """The ROS parameter ``name`` of a declared setting (a node setting or a constraint's).

    A :class:`~itasc_ros.core.control.settings.Setting`'s unit is appended to its
    description and its options become the descriptor's ``additional_constraints``. A double
    array's range is checked by the node (rclpy ranges apply to scalars only) and stated in
    ``additional_constraints``.
    """
    default: Any = f.default
    lo, hi, choices = f.lo, f.hi, f.choices
    text = f.description
    if isinstance(f, Setting):
        choices = f.valid
        text = f"{text} [{f.unit}]" if f.unit else text
    if f.kind.endswith("_array"):
        if not default:
            default = _EMPTY_ARRAYS[f.kind]
        if lo is not None or hi is not None:
            choices = choices or f"each in [{lo}, {hi}]"
        lo = hi = None
    return ParamSpec(name, default, text, lo, hi, read_only=not f.live, constraints=choices)


NODE_PARAMS: tuple[ParamSpec, ...] = tuple(setting_spec(s.name, s) for s in SETTINGS)
"""Parameters of the node itself, in declaration order (from the one declaration)."""


def type_spec(name: str) -> ParamSpec:
    """The ``constraints.<name>.type`` parameter (declared first: it decides the others)."""
    return ParamSpec(
        f"constraints.{name}.type",
        DEFAULT_CONSTRAINT_TYPE,
        "Constraint type.",
        read_only=True,
        constraints="one of: " + ", ".join(sorted(REGISTRY)),
    )


def field_spec(name: str, f: Field) -> ParamSpec:
    """The ``constraints.<name>.<field>`` parameter of one field of a constraint type."""
    return setting_spec(f"constraints.{name}.{f.name}", f)


def constraint_specs(name: str, type_name: str) -> list[ParamSpec]:
    """The parameters of constraint ``name`` of type ``type_name``: the type, then its fields.

    Raises:
        ConfigError: an unknown type, naming the registered ones.
    """
    return [type_spec(name), *(field_spec(name, f) for f in _kind(name, type_name).FIELDS)]


def robot_specs(name: str) -> list[ParamSpec]:
    """The parameters ``robots.<name>.*`` of one robot of ``robots`` (read-only)."""
    texts = {
        "urdf_file": "The robot's URDF file (until its description_topic brings one).",
        "description_topic": "The robot's robot_description topic (std_msgs/String, transient "
        "local, as its robot_state_publisher publishes it); its URDF replaces urdf_file's. "
        "Empty: urdf_file only.",
        "joint_topic": "The robot's joint states (its own joint names).",
        "command_out_topic": "The robot's commands (its own joint names, command_out_type).",
        "base_pose": "The robot's root in the world: [x, y, z, qx, qy, qz, qw] (m).",
    }
    return [
        ParamSpec(
            f"robots.{name}.{key}",
            default,
            texts[key],
            read_only=True,
            constraints="7 values, a non-zero quaternion" if key == "base_pose" else "",
        )
        for key, default in robot_defaults(name).items()
    ]


def _kind(name: str, type_name: str) -> Any:
    return ConstraintConfig(name, type_name).kind


def _declare(node: Node, spec: ParamSpec) -> None:
    if not node.has_parameter(spec.name):
        node.declare_parameter(spec.name, spec.default, spec.descriptor())
        if isinstance(spec.default, Parameter.Type):
            _empty_array(node, spec.name, spec.default)


def _empty_array(node: Node, name: str, kind: Parameter.Type) -> None:
    """Give an empty array parameter its typed empty value.

    rclpy declares a parameter given only its type as *uninitialised* (and would read a plain
    ``[]`` as a byte array): ``get_parameters`` then answers nothing for a request that names
    it with others (``ros2 param get`` of several names). rclpy has no public call to set a
    read-only parameter, so the node's own table is set; without it (another rclpy) the
    parameter stays uninitialised and :func:`value` reads it as []. A value given at start-up
    (a params file, ``-p``) is kept.
    """
    try:
        node.get_parameter(name)
        return  # a value was given (a params file, -p): it stays
    except ParameterUninitializedException:
        pass
    table = getattr(node, "_parameters", None)
    if isinstance(table, dict) and name in table:
        table[name] = Parameter(name, kind, [])


def value(node: Node, name: str) -> Any:
    """A parameter's value; an uninitialised (empty) array parameter reads as []."""
    try:
        v = node.get_parameter(name).value
    except ParameterUninitializedException:
        return []
    return [] if v is None else v


def declare_parameters(node: Node) -> list[str]:
    """Declare every parameter of the node (with the constraints of ``constraint_names``).

    The parameters the node was given (params files, ``-p``) are checked first
    (:func:`check_overrides`): an integer given for a double becomes that double.

    Returns:
        The constraint names.

    Raises:
        ConfigError: an unknown parameter name, a value of the wrong type, out of its range or
            not one of its choices, a constraint of an unknown type (one line, naming what is
            valid).
    """
    set_parameter_overrides(node, check_overrides(parameter_overrides(node)))
    for spec in NODE_PARAMS:
        _declare(node, spec)
    names = [str(n) for n in value(node, "constraint_names")]
    for name in names:
        _declare(node, type_spec(name))
        for spec in constraint_specs(name, str(value(node, f"constraints.{name}.type")))[1:]:
            _declare(node, spec)
    for robot in value(node, "robots"):
        for spec in robot_specs(str(robot)):
            _declare(node, spec)
    declare_joint_limits(node)
    return names


def declare_joint_limits(node: Node) -> list[str]:
    """Declare the ``joint_limits.<joint>.<field>`` the node was given (read-only).

    The joints are those of the parameter overrides (a params file's ``joint_limits``
    section, as MoveIt's joint_limits.yaml writes it); numbers may be integers or doubles.

    Returns:
        The declared names.

    Raises:
        ConfigError: a field that is not one of :data:`LIMIT_FIELDS` (naming them).
    """
    overrides: dict[str, Any] = getattr(node, "_parameter_overrides", {}) or {}
    names = sorted(n for n in overrides if n.startswith("joint_limits."))
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or parts[2] not in LIMIT_FIELDS:
            raise ConfigError(
                f"{name!r}: joint limits are joint_limits.<joint>.<field>, fields: "
                + ", ".join(LIMIT_FIELDS)
            )
        kind = LIMIT_FIELDS[parts[2]]
        if not node.has_parameter(name):
            node.declare_parameter(
                name,
                False if kind == "bool" else 0.0,
                ParameterDescriptor(
                    name=name,
                    description=f"{parts[2]} of joint {parts[1]} (ros2_control / MoveIt "
                    "joint_limits convention)",
                    read_only=True,
                    dynamic_typing=True,
                ),
            )
    return names


def read_config(node: Node) -> ControllerConfig:
    """The controller configuration from the node's declared parameters.

    Raises:
        ConfigError: invalid values (e.g. an unknown constraint type), naming the choices.
    """
    flat: dict[str, Any] = {k: _plain(value(node, k)) for k in CONTROLLER_KEYS}
    limits = [f"joint_limits.{k}" for k in node.get_parameters_by_prefix("joint_limits")]
    flat.update({k: value(node, k) for k in limits})
    for name in flat["constraint_names"]:
        prefix = f"constraints.{name}."
        kind = _kind(name, str(value(node, prefix + "type")))
        flat[prefix + "type"] = kind.type_name
        flat.update({prefix + f.name: _plain(value(node, prefix + f.name)) for f in kind.FIELDS})
    return config_from_parameters(flat)


def _plain(val: Any) -> Any:
    """A parameter value as a plain Python value (arrays as lists)."""
    return val if isinstance(val, str | bytes) or not hasattr(val, "__iter__") else list(val)


def live_update(name: str, val: Any) -> dict[str, Any] | None:
    """The ``Controller.update_parameters`` keyword for a controller setting, else None.

    Constraint settings are passed on whatever they are: the configuration refuses a setting
    that is not live (rclpy refuses read-only ones before).
    """
    if name in LIVE_KEYS:
        return {name: val}
    parts = name.split(".")
    if len(parts) == 3 and parts[0] == "constraints":
        return {name: _plain(val)}
    return None


# ----------------------------------------------------------------------- the given values
#: The valid values of the node's parameters that have a fixed set of them.
CHOICES: dict[str, tuple[str, ...]] = {s.name: s.options for s in SETTINGS if s.options}
_T = Parameter.Type
_WORDS = {
    _T.BOOL: "true or false",
    _T.INTEGER: "an integer",
    _T.DOUBLE: "a number",
    _T.STRING: "a string",
    _T.BYTE_ARRAY: "a list of bytes",
    _T.BOOL_ARRAY: "a list of booleans",
    _T.INTEGER_ARRAY: "a list of integers",
    _T.DOUBLE_ARRAY: "a list of numbers",
    _T.STRING_ARRAY: "a list of strings",
    _T.NOT_SET: "no value",
}
_ARRAYS = (_T.BYTE_ARRAY, _T.BOOL_ARRAY, _T.INTEGER_ARRAY, _T.DOUBLE_ARRAY, _T.STRING_ARRAY)


def declared_type(spec: ParamSpec) -> Parameter.Type:
    """The ROS type a parameter is declared with (from its default)."""
    if isinstance(spec.default, Parameter.Type):
        return spec.default
    return Parameter.Type.from_parameter_value(spec.default)


def coerced(p: Parameter, expected: Parameter.Type) -> Parameter | None:
    """``p`` as a value of type ``expected``, or None when it is not one.

    An integer is a double wherever a double is declared (``gain: 10``), and a list of
    integers a list of doubles.
    """
    if p.type_ == expected:
        return p
    if expected == _T.DOUBLE and p.type_ == _T.INTEGER:
        return Parameter(p.name, _T.DOUBLE, float(p.value))
    if expected == _T.DOUBLE_ARRAY and p.type_ == _T.INTEGER_ARRAY:
        return Parameter(p.name, _T.DOUBLE_ARRAY, [float(v) for v in p.value])
    return None


def type_error(name: str, expected: Parameter.Type, p: Parameter) -> str:
    """One line: parameter ``name`` must be of type ``expected``; what ``p`` is instead."""
    got = _WORDS.get(p.type_, str(p.type_))
    shown = "" if p.type_ == _T.NOT_SET else f" {_plain(p.value)!r}"
    return f"parameter {name!r} must be {_WORDS[expected]}, got {got}{shown}"


def _check_value(spec: ParamSpec, val: Any) -> None:
    """Range and choices of one value of the declared type (ConfigError, one line)."""
    if spec.lo is not None and spec.hi is not None and not isinstance(val, bool | str | list):
        if not spec.lo <= val <= spec.hi:  # NaN is in no range
            raise ConfigError(
                f"parameter {spec.name!r} is {val!r}, out of range; valid: "
                f"[{spec.lo:g}, {spec.hi:g}]"
            )
    choices = CHOICES.get(spec.name)
    if choices is not None and val not in choices:
        raise ConfigError(f"parameter {spec.name!r}: " + unknown_choice("value", val, choices))


def check_override(spec: ParamSpec, p: Parameter) -> Parameter:
    """A given value checked against its declaration: type (integers for doubles), range, choices.

    Raises:
        ConfigError: one line naming the parameter, the value and what is valid.
    """
    expected = declared_type(spec)
    if p.type_ == _T.NOT_SET and expected in _ARRAYS:  # `[]` in YAML: an empty list
        return p
    q = coerced(p, expected)
    if q is None:
        raise ConfigError(type_error(spec.name, expected, p))
    _check_value(spec, q.value)
    return q


def schema(overrides: Mapping[str, Parameter]) -> dict[str, ParamSpec]:
    """Every parameter the node declares with these overrides, by name.

    The constraints are those of ``constraint_names``, each with the settings of its type.

    Raises:
        ConfigError: a bad ``constraint_names`` or constraint type (naming the valid ones).
    """
    specs = {s.name: s for s in NODE_PARAMS}
    given = overrides.get("constraint_names")
    names = specs["constraint_names"].default
    if given is not None:
        names = check_override(specs["constraint_names"], given).value or []
    for name in names:
        t = type_spec(str(name))
        given = overrides.get(t.name)
        kind = t.default if given is None else check_override(t, given).value
        if kind not in REGISTRY:
            raise ConfigError(
                f"parameter {t.name!r}: " + unknown_choice("constraint type", kind, REGISTRY)
            )
        specs.update((s.name, s) for s in constraint_specs(str(name), kind))
    given = overrides.get("robots")
    if given is not None:
        for robot in check_override(specs["robots"], given).value or []:
            specs.update((s.name, s) for s in robot_specs(str(robot)))
    return specs


def check_overrides(overrides: Mapping[str, Parameter]) -> dict[str, Parameter]:
    """The parameters given to the node, checked against :func:`schema`; integers for doubles.

    ``joint_limits.*`` are checked when declared (:func:`declare_joint_limits`); rclpy's own
    parameters (``use_sim_time``, ``qos_overrides.*``) pass.

    Raises:
        ConfigError: an unknown name (naming the closest declared one), a value of the wrong
            type, out of its range or not one of its choices.
    """
    specs = schema(overrides)
    out = dict(overrides)
    for name, p in overrides.items():
        if name in RCLPY_PARAMETERS or name.startswith((*RCLPY_PREFIXES, "joint_limits.")):
            continue
        spec = specs.get(name)
        if spec is None:
            valid = [*specs, *RCLPY_PARAMETERS, "joint_limits.<joint>.<field>"]
            raise ConfigError(unknown_choice("parameter", name, valid, limit=12))
        out[name] = check_override(spec, p)
    return out


STAND_IN = "publish_markers"
"""A declared parameter whose current value stands in for an undeclared name in a request."""


def coerce_request(node: Node, params: list[Parameter]) -> tuple[list[Parameter], dict[str, str]]:
    """A set-parameters request with integers for doubles; the values of a wrong type named.

    A value of a wrong type is replaced by the parameter's current value (rclpy would refuse
    it with a reason naming neither the parameter nor the value) and its one-line error
    returned by name: the node's set-parameters callback refuses the request with it. An
    undeclared name is replaced by :data:`STAND_IN`'s current value and refused the same way,
    naming the closest declared parameter (rclpy's refusal names neither).

    Returns:
        (the parameters to set, {name: why the value given has the wrong type}).
    """
    out: list[Parameter] = []
    errors: dict[str, str] = {}
    for p in params:
        if not node.has_parameter(p.name):
            declared = list(node.get_parameters_by_prefix(""))  # every name
            errors[p.name] = unknown_choice("parameter", p.name, declared, limit=12)
            out.append(node.get_parameter(STAND_IN))  # refused whole with that line
            continue
        if p.type_ == _T.NOT_SET:
            out.append(p)  # rclpy's own refusal: undeclaring
            continue
        descriptor = node.describe_parameter(p.name)
        expected = _T(descriptor.type)
        q = None if descriptor.dynamic_typing else coerced(p, expected)
        if q is not None or descriptor.dynamic_typing:
            out.append(q or p)
            continue
        try:
            out.append(node.get_parameter(p.name))
        except ParameterUninitializedException:
            out.append(p)
            continue
        errors[p.name] = type_error(p.name, expected, p)
    return out, errors


__all__ = [
    "CHOICES",
    "NODE_PARAMS",
    "RCLPY_PARAMETERS",
    "RCLPY_PREFIXES",
    "TRIGGERS",
    "TRIGGER_JOINT_STATES",
    "TRIGGER_TIMER",
    "ParamSpec",
    "check_override",
    "check_overrides",
    "coerce_request",
    "coerced",
    "constraint_specs",
    "declare_parameters",
    "declared_type",
    "field_spec",
    "live_update",
    "read_config",
    "schema",
    "setting_spec",
    "type_error",
    "type_spec",
    "value",
]
