"""The recorded node's parameters in a bag: revisions, snapshots and live changes.

The parameters come from the node's ``~/parameters`` (one message per revision) or the
snapshot on :data:`PARAMS_TOPIC`; live parameter changes are read from
:data:`PARAMETER_EVENTS_TOPIC`. Never imports rclpy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from itasc_ros.core import REGISTRY
from itasc_ros.core.control.settings import LIVE_KEYS, NODE, SETTINGS, default
from itasc_ros.tools.bagio import BagWriter, default_typestore, read_bag

#: Topic (std_msgs/msg/String, JSON) holding a snapshot of the node's parameters.
PARAMS_TOPIC = "/itasc_replay/node_parameters"
#: The ROS parameter-event topic; changes of the node's live parameters are replayed.
PARAMETER_EVENTS_TOPIC = "/parameter_events"
#: Defaults of the node-only parameters (the node's own, from its one declaration).
NODE_DEFAULTS: dict[str, Any] = {s.name: default(s.name) for s in SETTINGS if s.scope == NODE}


def parameter_value(pv: Any) -> Any:
    """The Python value of an rcl_interfaces/msg/ParameterValue (typestore or rclpy)."""
    kind = int(pv.type)
    if kind == 1:
        return bool(pv.bool_value)
    if kind == 2:
        return int(pv.integer_value)
    if kind == 3:
        return float(pv.double_value)
    if kind == 4:
        return str(pv.string_value)
    if kind == 5:
        return list(pv.byte_array_value)
    if kind == 6:
        return [bool(v) for v in pv.bool_array_value]
    if kind == 7:
        return [int(v) for v in pv.integer_array_value]
    if kind == 8:
        return [float(v) for v in pv.double_array_value]
    if kind == 9:
        return [str(v) for v in pv.string_array_value]
    return None


def is_live_parameter(name: str) -> bool:
    """True for a parameter that :meth:`Controller.update_parameters` changes live."""
    if name in LIVE_KEYS:
        return True
    parts = name.split(".")
    return (
        len(parts) == 3
        and parts[0] == "constraints"
        and any(f.name == parts[2] and f.live for t in REGISTRY.values() for f in t.FIELDS)
    )


def live_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The live parameters that differ between two parameter sets (``update_parameters``)."""
    return {k: v for k, v in after.items() if is_live_parameter(k) and before.get(k, None) != v}


def node_parameters(bag: str | Path, node_name: str = "itasc_node") -> dict[int, dict[str, Any]]:
    """Revision -> the node's parameters, from its ``~/parameters`` messages in the bag."""
    out: dict[int, dict[str, Any]] = {}
    for _topic_name, _t, msg in read_bag(bag, [f"/{node_name.strip('/')}/parameters"]):
        data = json.loads(msg.data)
        out[int(data["revision"])] = dict(data["parameters"])
    return out


def bag_parameters(
    bag: str | Path, node_name: str = "itasc_node"
) -> tuple[dict[str, Any], str] | None:
    """The node's parameters in a bag: its first ``~/parameters``, else :data:`PARAMS_TOPIC`.

    Returns:
        (flat parameters, where from) or None when the bag has neither.
    """
    revisions = node_parameters(bag, node_name)
    if revisions:
        first = min(revisions)
        return revisions[first], f"{bag} (/{node_name}/parameters, revision {first})"
    for _topic_name, _t, msg in read_bag(bag, [PARAMS_TOPIC]):
        data = json.loads(msg.data)
        return dict(data["parameters"]), f"{bag} ({PARAMS_TOPIC})"
    return None


def parameters_snapshot_msg(params: Mapping[str, Any], node_name: str = "/itasc_node") -> Any:
    """A typestore std_msgs/msg/String with the JSON snapshot read by :func:`bag_parameters`."""
    text = json.dumps({"node": "/" + node_name.lstrip("/"), "parameters": dict(params)})
    return default_typestore().types["std_msgs/msg/String"](data=text)


def write_parameters_snapshot(
    writer: BagWriter, t_ns: int, params: Mapping[str, Any], node_name: str = "/itasc_node"
) -> None:
    """Store the node's parameters in a bag (topic :data:`PARAMS_TOPIC`) for the replay.

    Args:
        writer: the open bag.
        t_ns: the message's bag time [ns].
        params: flat parameter name -> value.
        node_name: the node's fully qualified name.
    """
    writer.write(PARAMS_TOPIC, int(t_ns), parameters_snapshot_msg(params, node_name))


__all__ = [
    "NODE_DEFAULTS",
    "PARAMETER_EVENTS_TOPIC",
    "PARAMS_TOPIC",
    "bag_parameters",
    "is_live_parameter",
    "live_changes",
    "node_parameters",
    "parameter_value",
    "parameters_snapshot_msg",
    "write_parameters_snapshot",
]
