"""ROS 2 parameters of ``itasc_node`` as plain data: params files, flat names, the config.

The one reader of the node's parameters outside ROS: the replay, the demo, the benchmarks and
the tests read a params file (``config/panda.yaml``) with :func:`read_params_file` or
:func:`load_config`, and the node turns its declared parameters into the controller's
configuration with the same :func:`config_from_parameters`. ROS-free (yaml only).

Names are flat, as ``ros2 param`` shows them (``constraints.ee.gain``); a params file nests
them under ``<node>: ros__parameters:``, where ``<node>`` is matched as rclpy matches it
(``/**``, ``/**/itasc_node``, ``itasc_node``, ``/arm1/itasc_node``; :func:`node_section`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .core.control.config import ControllerConfig
from .core.control.settings import CONTROLLER_SETTINGS, NODE_ONLY_KEYS, RCLPY_PREFIXES
from .core.errors import ConfigError

NODE_NAME = "itasc_node"
CONTROLLER_KEYS = frozenset(s.name for s in CONTROLLER_SETTINGS)
"""Flat parameter names that are controller settings (besides ``constraints.<name>.*``)."""
IGNORED_PREFIXES = RCLPY_PREFIXES
"""Parameters rclpy may declare on any node; not the node's settings."""


def flatten_parameters(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested params-file mapping -> flat ROS parameter names (``constraints.ee.gain``)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten_parameters(v, name + "."))
        else:
            out[name] = v
    return out


def nest_parameters(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flat ROS parameter names -> a nested mapping (the params-file layout).

    Raises:
        ConfigError: a name that is both a value and a group (``a`` and ``a.b``).
    """
    out: dict[str, Any] = {}
    for name, value in flat.items():
        parts = name.split(".")
        d = out
        for p in parts[:-1]:
            nxt = d.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"parameter {name!r} clashes with parameter {p!r}")
            d = nxt
        d[parts[-1]] = value
    return out


def section_pattern(key: str) -> re.Pattern[str]:
    """The node names a params-file section ``key`` applies to, as rclpy matches them.

    A key without a leading ``/`` gets one; ``/*`` is one name token and ``/**`` any number
    of them (``/**``, ``/**/itasc_node``, ``/arm1/*``).
    """
    name = key if key.startswith("/") else "/" + key
    parts = (re.escape(p).replace(r"\*", "*") for p in name.split("/*"))
    return re.compile(r"(/\w+)".join(parts))


def _specific_name(key: str) -> str | None:
    """``key`` as a fully qualified node name, or None when it has a wildcard."""
    if "*" in key:
        return None
    return key if key.startswith("/") else "/" + key


def resolve_node_name(keys: Iterable[str], node_name: str, what: str = "params") -> str:
    """The fully qualified name of ``node_name`` whose sections to read among ``keys``.

    A name with a leading ``/`` is already fully qualified (``/arm1/itasc_node``). A bare name
    (``itasc_node``) is the node in whatever namespace the file gives it: the one specific
    section ending in ``/<node_name>`` (``/arm1/itasc_node``), else ``/<node_name>``.

    Raises:
        ConfigError: a bare name with specific sections in several namespaces.
    """
    if node_name.startswith("/"):
        return node_name
    found = sorted(
        {n for n in map(_specific_name, keys) if n and n.rsplit("/", 1)[-1] == node_name}
    )
    if len(found) > 1:
        raise ConfigError(
            f"{what} has sections for several nodes named {node_name!r}: {found}; "
            "give the fully qualified node name"
        )
    return found[0] if found else "/" + node_name


def node_section(data: Any, node_name: str = NODE_NAME, what: str = "params") -> dict[str, Any]:
    """The flat parameters of ``node_name`` in a params file's content, as rclpy reads them.

    Every section whose key matches the node's fully qualified name applies: ``/**``,
    ``/**/itasc_node``, ``itasc_node``, ``/itasc_node``, ``/arm1/itasc_node`` (see
    :func:`resolve_node_name` for a bare ``node_name``). Matching sections merge in the file's
    order, a later value replacing an earlier one, as rclpy and rclcpp do: the usual layout,
    ``/**`` first and the node's own section after it, gives the node's section the last
    word. A bare ``ros__parameters:`` mapping is accepted too.

    Raises:
        ConfigError: not a mapping, a matching section without a ``ros__parameters`` mapping,
            or no section for the node (naming the sections).
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{what} is not a mapping")
    if "ros__parameters" in data and isinstance(data["ros__parameters"], Mapping):
        return flatten_parameters(data["ros__parameters"])
    keys = [str(k) for k in data]
    fqn = resolve_node_name(keys, node_name, what)
    flat: dict[str, Any] = {}
    matched = False
    for key, section in data.items():
        if not section_pattern(str(key)).fullmatch(fqn):
            continue
        params = section.get("ros__parameters") if isinstance(section, Mapping) else None
        if not isinstance(params, Mapping):
            raise ConfigError(f"{what}: section {key!r} has no 'ros__parameters:' mapping")
        flat.update(flatten_parameters(params))
        matched = True
    if not matched:
        raise ConfigError(
            f"{what} has no section for node {fqn!r} ('/**:', '{node_name}:' or "
            f"'/<namespace>/{node_name.rsplit('/', 1)[-1]}:' with 'ros__parameters:'); "
            f"sections: {keys}"
        )
    return flat


def read_params_file(path: str | Path, node_name: str = NODE_NAME) -> dict[str, Any]:
    """The flat parameters of ``node_name`` in a ROS 2 params file (see :func:`node_section`).

    Args:
        path: the params file.
        node_name: the node's name, bare (``itasc_node``) or fully qualified
            (``/arm1/itasc_node``).

    Raises:
        ConfigError: unreadable file or no section for the node (naming the sections).
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read params file {str(path)!r}: {exc}") from exc
    return node_section(data, node_name, f"params file {str(path)!r}")


ROBOT_KEYS = ("urdf_file", "description_topic", "joint_topic", "command_out_topic", "base_pose")
"""Each robot's parameters ``robots.<name>.<key>`` (node-only: the node composes the robots)."""


def robot_defaults(name: str) -> dict[str, Any]:
    """The defaults of robot ``name``'s parameters, by key of :data:`ROBOT_KEYS`."""
    return {
        "urdf_file": "",
        "description_topic": "",
        "joint_topic": f"/{name}/joint_states",
        "command_out_topic": f"/{name}/forward_velocity_controller/commands",
        "base_pose": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
    }


def robots_urdf(
    flat: Mapping[str, Any],
    names: Sequence[str],
    documents: Mapping[str, str | bytes] | None = None,
) -> tuple[str | None, str]:
    """The URDF document of robots ``names`` composed from their URDFs and base poses.

    A robot's URDF is the one its ``description_topic`` brought (``documents``, by robot), else
    its ``urdf_file``.

    Returns:
        ``(document, '')``, or ``(None, why)`` (a robot still waiting for its description, a
        file not read, a bad base pose or URDF).
    """
    from .core.control.model_manager import read_urdf_file
    from .core.kinematics.robots import Mounted, base_pose, compose_urdf

    mounted = []
    for r in names:
        own = robot_parameters(flat, r)
        data = (documents or {}).get(r)
        if data is None and own["description_topic"] and not own["urdf_file"]:
            return None, f"robot {r!r}: waiting for its URDF on {own['description_topic']!r}"
        if data is None:
            data, why = read_urdf_file(str(own["urdf_file"]))
            if data is None:
                return None, f"robot {r!r}: {why}"
        try:
            mounted.append(Mounted(r, data, base_pose(r, own["base_pose"])))
        except ConfigError as exc:
            return None, str(exc)
    try:
        return compose_urdf(mounted), ""
    except Exception as exc:  # a bad robot URDF: named (the node stays up without a model)
        return None, f"the robots' URDFs cannot be composed: {exc}"


def robot_parameters(flat: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Robot ``name``'s parameters from the node's flat ones (defaults for those not given)."""
    return {k: flat.get(f"robots.{name}.{k}", v) for k, v in robot_defaults(name).items()}


def _robot_key(k: str) -> bool:
    parts = k.split(".")
    return len(parts) == 3 and parts[0] == "robots" and parts[2] in ROBOT_KEYS


def config_from_parameters(flat: Mapping[str, Any]) -> ControllerConfig:
    """The controller's configuration from the node's flat parameters.

    Node-only parameters (:data:`~itasc_ros.core.control.config.NODE_ONLY_KEYS`) are skipped; any
    other name that is not a controller setting is an error, so a typo such as ``damping_mx``
    does not pass silently.

    Raises:
        ConfigError: an unknown parameter (naming the valid ones) or an invalid value.
    """
    kept: dict[str, Any] = {}
    unknown = []
    for k, v in flat.items():
        if k in CONTROLLER_KEYS or (
            k.startswith(("constraints.", "joint_limits.")) and k.count(".") == 2
        ):
            kept[k] = v
        elif k not in NODE_ONLY_KEYS and not k.startswith(IGNORED_PREFIXES) and not _robot_key(k):
            unknown.append(k)
    if unknown:
        raise ConfigError(
            f"unknown parameters {sorted(unknown)}; parameters are: "
            + ", ".join(sorted(CONTROLLER_KEYS | NODE_ONLY_KEYS))
            + ", constraints.<name>.<setting>, joint_limits.<joint>.<field>, "
            + "robots.<name>.<"
            + "|".join(ROBOT_KEYS)
            + ">"
        )
    nested = nest_parameters(kept)
    if "constraint_names" not in nested and isinstance(nested.get("constraints"), Mapping):
        nested["constraint_names"] = list(nested["constraints"])
    return ControllerConfig.from_dict(nested)


def target_topics(config: ControllerConfig) -> dict[str, tuple[str, str]]:
    """Each target-taking constraint's (pose topic, twist topic), node-relative.

    A constraint's ``target_topic`` / ``twist_topic`` when set; else ``~/target_pose`` and
    ``~/target_twist`` for the first such constraint and ``~/<name>/target_pose``,
    ``~/<name>/target_twist`` for the others.
    """
    out: dict[str, tuple[str, str]] = {}
    for c in config.constraints:
        if not c.takes_target:
            continue
        base = "~/" if not out else f"~/{c.name}/"
        out[c.name] = (
            c.target_topic or base + "target_pose",
            c.twist_topic or base + "target_twist",
        )
    return out


def settings_naming(config: ControllerConfig, value: str) -> list[str]:
    """The constraint settings (``constraints.<name>.<setting>``) whose value is ``value``.

    A list-valued setting names ``value`` when it holds it (e.g. a link among ``links``). Used
    to say which parameter holds a link or joint name the URDF lacks.
    """
    out = []
    for c in config.constraints:
        for key, v in c.settings.items():
            if v == value or (isinstance(v, list | tuple) and value in v):
                out.append(f"constraints.{c.name}.{key}")
    return out


def load_config(path: str | Path, node_name: str = NODE_NAME) -> ControllerConfig:
    """The controller's configuration in a ROS 2 params file (e.g. ``config/panda.yaml``).

    Raises:
        ConfigError: as :func:`read_params_file` and :func:`config_from_parameters`.
    """
    return config_from_parameters(read_params_file(path, node_name))


def config_from_params_data(data: Any, node_name: str = NODE_NAME) -> ControllerConfig:
    """The controller's configuration in a params file's parsed content.

    Raises:
        ConfigError: as :func:`node_section` and :func:`config_from_parameters`.
    """
    return config_from_parameters(node_section(data, node_name))


__all__ = [
    "CONTROLLER_KEYS",
    "IGNORED_PREFIXES",
    "NODE_NAME",
    "config_from_parameters",
    "config_from_params_data",
    "flatten_parameters",
    "load_config",
    "nest_parameters",
    "node_section",
    "read_params_file",
    "resolve_node_name",
    "section_pattern",
    "settings_naming",
    "target_topics",
]
