"""What a replay starts from: the recorded node's parameters, URDF and topics (:class:`NodeSetup`).

The parameters come from the node's ``~/parameters`` in the bag or the snapshot on
:data:`PARAMS_TOPIC` (or a params file); live parameter changes are read from
:data:`PARAMETER_EVENTS_TOPIC`. Shared by the offline replay (:mod:`itasc_ros.tools.replay`),
the online one (:mod:`itasc_ros.tools.replay_online`) and the demo. Never imports rclpy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from itasc_ros.cli import unknown_choice
from itasc_ros.core import REGISTRY, ControllerConfig, KinematicTree
from itasc_ros.core.control.config import LIVE_KEYS
from itasc_ros.core.errors import ItascError
from itasc_ros.params import config_from_parameters, read_params_file, target_topics
from itasc_ros.tools.bagio import BagWriter, read_bag
from itasc_ros.tools.resources import robot_urdf, share_dir, share_file

#: Topic (std_msgs/msg/String, JSON) holding a snapshot of the node's parameters.
PARAMS_TOPIC = "/itasc_replay/node_parameters"
#: The ROS parameter-event topic; changes of the node's live parameters are replayed.
PARAMETER_EVENTS_TOPIC = "/parameter_events"
#: Defaults of the node-only parameters (the node's own defaults).
NODE_DEFAULTS: dict[str, Any] = {
    "command_out_type": "std_msgs/Float64MultiArray",
    "command_out_topic": "/forward_velocity_controller/commands",
    "joint_topic": "joint_states",
    "robot_description": "",
    "urdf_file": "",
}


class ReplayError(ItascError):
    """A bag cannot be replayed (no parameters, no URDF, no inputs, unknown topics)."""


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


def _topic(name: str, node_name: str) -> str:
    """Fully qualified topic of a node-relative name ('~/x', 'x' or '/x')."""
    if name.startswith("~/"):
        return f"/{node_name}/{name[2:]}"
    if name.startswith("/"):
        return name
    return f"/{name}"


@dataclass
class NodeSetup:
    """What the replay needs to know about the recorded node.

    Attributes:
        params: the node's flat ROS parameters.
        config: the controller configuration built from them.
        urdf_xml: the robot's URDF.
        urdf_source: where the URDF came from (for messages).
        node_name: the node's name (topics '~/...' resolve under it).
        joint_topic: joint states topic.
        command_topic: command topic. command_type: 'pkg/Type' of the commands.
        pose_topics: constraint -> target pose topic. twist_topics: constraint -> twist topic.
        params_source: where the parameters came from.
        journal_topic: the node's journal (what each tick consumed).
        parameters_topic: the node's parameters with their revisions.
    """

    params: dict[str, Any]
    config: ControllerConfig
    urdf_xml: str
    urdf_source: str
    node_name: str
    joint_topic: str
    command_topic: str
    command_type: str
    pose_topics: dict[str, str]
    twist_topics: dict[str, str]
    params_source: str = ""
    journal_topic: str = "/itasc_node/journal"
    parameters_topic: str = "/itasc_node/parameters"

    def tree(self) -> KinematicTree:
        """A new kinematic tree of the URDF."""
        return KinematicTree.from_urdf(self.urdf_xml)

    @property
    def input_topics(self) -> list[str]:
        """Joint state, pose and twist topics."""
        return [self.joint_topic, *self.pose_topics.values(), *self.twist_topics.values()]


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


def node_parameters(bag: str | Path, node_name: str = "itasc_node") -> dict[int, dict[str, Any]]:
    """Revision -> the node's parameters, from its ``~/parameters`` messages in the bag."""
    out: dict[int, dict[str, Any]] = {}
    for _topic_name, _t, msg in read_bag(bag, [f"/{node_name.strip('/')}/parameters"]):
        data = json.loads(msg.data)
        out[int(data["revision"])] = dict(data["parameters"])
    return out


def _read_urdf(urdf: str) -> tuple[str, str]:
    path = Path(urdf)
    if path.is_file():
        return path.read_text(encoding="utf-8"), str(path)
    try:
        found = robot_urdf(urdf)
    except FileNotFoundError:
        try:
            found = share_file("urdf", path.name)
        except FileNotFoundError:
            robots = [u.stem for u in (share_dir() / "urdf").glob("*.urdf")]
            raise ReplayError(
                unknown_choice("URDF (not a file here, not a bundled robot)", urdf, robots)
            ) from None
    return found.read_text(encoding="utf-8"), str(found)


def load_setup(
    bag: str | Path | None = None,
    params_file: str | Path | None = None,
    urdf: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    node_name: str = "itasc_node",
) -> NodeSetup:
    """Resolve the node's parameters, URDF and topics for a replay.

    Args:
        bag: the bag (its parameter snapshot is used unless ``params_file`` is given).
        params_file: a ROS 2 params file for ``node_name``.
        urdf: a URDF file or a bundled robot name; default from the parameters.
        overrides: flat parameter name -> value, applied last.
        node_name: the node's name.

    Raises:
        ReplayError: no parameters or no URDF. ConfigError: invalid parameters.
    """
    params: dict[str, Any] | None = None
    source = ""
    if params_file is not None:
        params = read_params_file(params_file, node_name)
        source = str(params_file)
    elif bag is not None:
        snap = bag_parameters(bag, node_name)
        if snap is not None:
            params, source = snap
    if params is None:
        raise ReplayError(
            f"no node parameters: the bag has neither /{node_name}/parameters nor "
            f"{PARAMS_TOPIC}; give --params-file (e.g. config/panda.yaml)"
        )
    params = {**NODE_DEFAULTS, **params}
    if overrides:
        params.update(overrides)
        source += " + overrides " + ", ".join(f"{k}={v!r}" for k, v in overrides.items())
    config = config_from_parameters(params)
    if urdf is not None:
        xml, urdf_source = _read_urdf(urdf)
    elif str(params.get("robot_description", "")).strip():
        xml, urdf_source = str(params["robot_description"]), "parameter robot_description"
    elif params.get("urdf_file"):
        xml, urdf_source = _read_urdf(str(params["urdf_file"]))
    else:
        raise ReplayError(
            "no URDF: the parameters have neither robot_description nor "
            "urdf_file; give --urdf (a file, or 'panda' / 'ur5')"
        )
    topics = target_topics(config)
    pose_topics = {n: _topic(pose, node_name) for n, (pose, _) in topics.items()}
    twist_topics = {n: _topic(twist, node_name) for n, (_, twist) in topics.items()}
    return NodeSetup(
        params=params,
        config=config,
        urdf_xml=xml,
        urdf_source=urdf_source,
        node_name=node_name,
        joint_topic=_topic(str(params["joint_topic"]), node_name),
        command_topic=_topic(str(params["command_out_topic"]), node_name),
        command_type=str(params["command_out_type"]),
        pose_topics=pose_topics,
        twist_topics=twist_topics,
        params_source=source,
        journal_topic=_topic("~/journal", node_name),
        parameters_topic=_topic("~/parameters", node_name),
    )


def parameters_snapshot_msg(params: Mapping[str, Any], node_name: str = "/itasc_node") -> Any:
    """A typestore std_msgs/msg/String with the JSON snapshot read by :func:`bag_parameters`."""
    from itasc_ros.tools.bagio import default_typestore

    text = json.dumps({"node": "/" + node_name.lstrip("/"), "parameters": dict(params)})
    return default_typestore().types["std_msgs/msg/String"](data=text)


def write_parameters_snapshot(
    writer: BagWriter, t_ns: int, params: Mapping[str, Any], node_name: str = "/itasc_node"
) -> None:
    """Store the node's parameters in a bag (topic :data:`PARAMS_TOPIC`) for the replay."""
    writer.write(PARAMS_TOPIC, int(t_ns), parameters_snapshot_msg(params, node_name))
