"""What a replay starts from: the recorded node's parameters, URDF and topics (:class:`NodeSetup`).

The parameters come from a params file or the bag (:func:`~itasc_ros.tools.replay.
recorded_parameters.bag_parameters`), the URDF from ``--urdf`` or the parameters. Shared by the
offline replay, the online one and the demo. Never imports rclpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from itasc_ros.cli import unknown_choice
from itasc_ros.core import ControllerConfig, KinematicTree
from itasc_ros.core.kinematics.mobile_base import BASE_JOINTS
from itasc_ros.params import (
    config_from_parameters,
    read_params_file,
    robot_parameters,
    robots_urdf,
    target_topics,
)
from itasc_ros.tools.replay.errors import ReplayError
from itasc_ros.tools.replay.recorded_parameters import (
    NODE_DEFAULTS,
    PARAMS_TOPIC,
    bag_parameters,
)
from itasc_ros.tools.resources import robot_urdf, share_dir, share_file


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
        odom_topic: the base's odometry topic ('' without ``world_frame``: a fixed base).
        base_topic: a commanded base's twist topic ('' without ``base_kind``).
        base_joints: a commanded base's virtual joints (the first of every command).
        robot_topics: several robots (``robots``): each robot's joint state and command topics.
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
    odom_topic: str = ""
    base_topic: str = ""
    base_joints: tuple[str, ...] = ()
    robot_topics: dict[str, tuple[str, str]] = field(default_factory=dict)
    params_source: str = ""
    journal_topic: str = "/itasc_node/journal"
    parameters_topic: str = "/itasc_node/parameters"

    def tree(self) -> KinematicTree:
        """A new kinematic tree of the URDF."""
        return KinematicTree.from_urdf(self.urdf_xml)

    @property
    def joint_topics(self) -> list[str]:
        """The joint state topics: each robot's (``robots``), else ``joint_topic``."""
        return [j for j, _ in self.robot_topics.values()] or [self.joint_topic]

    @property
    def command_topics(self) -> list[str]:
        """The command topics: each robot's (``robots``), else ``command_topic``."""
        return [c for _, c in self.robot_topics.values()] or [self.command_topic]

    @property
    def input_topics(self) -> list[str]:
        """Joint state (each robot's), odometry, pose and twist topics."""
        odom = [self.odom_topic] if self.odom_topic else []
        return [*self.joint_topics, *odom, *self.pose_topics.values(), *self.twist_topics.values()]


def _read_urdf(urdf: str) -> tuple[str, str]:
    """(URDF text, where from) of a file or a bundled robot's name or file name."""
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


def _parameters(
    bag: str | Path | None, params_file: str | Path | None, node_name: str
) -> tuple[dict[str, Any], str]:
    """(the node's flat parameters, where from): the params file, else the bag's."""
    if params_file is not None:
        return read_params_file(params_file, node_name), str(params_file)
    snap = bag_parameters(bag, node_name) if bag is not None else None
    if snap is None:
        raise ReplayError(
            f"no node parameters: the bag has neither /{node_name}/parameters nor "
            f"{PARAMS_TOPIC}; give --params-file (e.g. config/panda.yaml)"
        )
    return snap


def _urdf(urdf: str | None, params: Mapping[str, Any]) -> tuple[str, str]:
    """(URDF text, where from): ``urdf``, else robot_description, else urdf_file."""
    if urdf is not None:
        return _read_urdf(urdf)
    if str(params.get("robot_description", "")).strip():
        return str(params["robot_description"]), "parameter robot_description"
    if params.get("urdf_file"):
        return _read_urdf(str(params["urdf_file"]))
    raise ReplayError(
        "no URDF: the parameters have neither robot_description nor "
        "urdf_file; give --urdf (a file, or 'panda' / 'ur5')"
    )


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
    params, source = _parameters(bag, params_file, node_name)
    params = {**NODE_DEFAULTS, **params}
    if overrides:
        params.update(overrides)
        source += " + overrides " + ", ".join(f"{k}={v!r}" for k, v in overrides.items())
    robots = [str(r) for r in params.get("robots") or []]
    config = config_from_parameters(params)
    if robots and urdf is None:  # several robots: their files composed, as the node does
        composed, why = robots_urdf(params, robots)
        if composed is None:
            raise ReplayError(f"the robots' URDFs: {why}")
        xml, urdf_source = composed, "the robots' URDF files"
    else:
        xml, urdf_source = _urdf(urdf, params)
    robot_topics = {
        r: (
            _topic(str(robot_parameters(params, r)["joint_topic"]), node_name),
            _topic(str(robot_parameters(params, r)["command_out_topic"]), node_name),
        )
        for r in robots
    }
    topics = target_topics(config)
    base = BASE_JOINTS.get(config.base_kind, ())
    return NodeSetup(
        params=params,
        config=config,
        urdf_xml=xml,
        urdf_source=urdf_source,
        node_name=node_name,
        joint_topic=_topic(str(params["joint_topic"]), node_name),
        command_topic=_topic(str(params["command_out_topic"]), node_name),
        command_type=str(params["command_out_type"]),
        pose_topics={n: _topic(pose, node_name) for n, (pose, _) in topics.items()},
        twist_topics={n: _topic(twist, node_name) for n, (_, twist) in topics.items()},
        odom_topic=_topic(str(params["odom_topic"]), node_name) if config.world_frame else "",
        base_topic=_topic(str(params["base_cmd_topic"]), node_name) if base else "",
        base_joints=base,
        robot_topics=robot_topics,
        params_source=source,
        journal_topic=_topic("~/journal", node_name),
        parameters_topic=_topic("~/parameters", node_name),
    )


__all__ = ["NodeSetup", "load_setup"]
