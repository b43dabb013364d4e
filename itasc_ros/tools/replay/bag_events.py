"""A bag's messages as replay events: joint states, targets, commands, parameter changes.

Times are converted as the node converts them (:mod:`itasc_ros.ros.conversions`), so the floats
agree bit for bit. Messages are the bag reader's (rosbags typestore), not rclpy's: this module
never imports rclpy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.command_messages import command_velocities
from itasc_ros.tools.bagio import read_bag
from itasc_ros.tools.replay.errors import ReplayError
from itasc_ros.tools.replay.node_setup import NodeSetup
from itasc_ros.tools.replay.recorded_parameters import (
    PARAMETER_EVENTS_TOPIC,
    is_live_parameter,
    parameter_value,
)

Array = NDArray[np.float64]


def header_seconds(sec: int, nanosec: int) -> float | None:
    """A header stamp in seconds [s] as the node computes it, or None for the zero stamp."""
    if sec == 0 and nanosec == 0:
        return None
    return sec + nanosec * 1e-9


def bag_seconds(t_ns: int) -> float:
    """A bag time stamp [ns] in seconds [s] (the replay's clock for reception times)."""
    return t_ns * 1e-9


@dataclass
class JointStateEvent:
    """A joint state: bag time t [s], names, positions (n,) [rad], header stamp src [s]."""

    t: float
    names: list[str]
    pos: Array
    src: float | None


@dataclass
class PoseEvent:
    """A target pose of constraint ``name``: position (3,) [m], quaternion (4,) x, y, z, w."""

    t: float
    name: str
    frame: str
    pos: Array
    quat: Array
    src: float | None


@dataclass
class TwistEvent:
    """A target twist of constraint ``name``: (6,) linear [m/s] then angular [rad/s]."""

    t: float
    name: str
    frame: str
    twist: Array  # (6,)
    src: float | None = None


@dataclass
class OdometryEvent:
    """The base's odometry: frames, (13,) position, quaternion x y z w, body twist."""

    t: float
    frame: str
    child: str
    values: Array  # (13,)
    src: float | None = None


@dataclass
class CommandEvent:
    """A command: joint velocities (n,) [rad/s], or None with the problem when unreadable."""

    t: float
    qdot: Array | None  # (n,) or None when it cannot be read
    problem: str = ""


@dataclass
class ParameterChangeEvent:
    """Live parameter changes of the node; ``ignored``: names that are not live."""

    t: float
    changes: dict[str, Any]
    ignored: list[str]
    src: float | None = None  # the event's stamp (the node's clock when it was set)


Event = (
    JointStateEvent | OdometryEvent | PoseEvent | TwistEvent | CommandEvent | ParameterChangeEvent
)
"""One replay event (every kind has the bag time ``t`` [s])."""

Reader = Callable[[float, Any], Event | None]
"""(bag time [s], message) -> its event, or None when it is not one of the node's."""


def command_event(t: float, msg: Any, joints: Sequence[str]) -> CommandEvent:
    """The command at bag time ``t`` [s]; an unreadable one has no velocities and a problem."""
    try:
        return CommandEvent(t, command_velocities(msg, joints))
    except ValueError as exc:
        return CommandEvent(t, None, str(exc))


def _joint_state(t: float, msg: Any) -> JointStateEvent:
    h = msg.header.stamp
    return JointStateEvent(
        t, list(msg.name), np.asarray(msg.position, dtype=float), header_seconds(h.sec, h.nanosec)
    )


def _pose(t: float, msg: Any, name: str) -> PoseEvent:
    h = msg.header.stamp
    p, o = msg.pose.position, msg.pose.orientation
    return PoseEvent(
        t,
        name,
        msg.header.frame_id,
        np.array([p.x, p.y, p.z]),
        np.array([o.x, o.y, o.z, o.w]),
        header_seconds(h.sec, h.nanosec),
    )


def _twist(t: float, msg: Any, name: str) -> TwistEvent:
    lin, ang = msg.twist.linear, msg.twist.angular
    h = msg.header.stamp
    return TwistEvent(
        t,
        name,
        msg.header.frame_id,
        np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]),
        header_seconds(h.sec, h.nanosec),
    )


def _odometry(t: float, msg: Any) -> OdometryEvent:
    h = msg.header.stamp
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    values = np.array(
        [p.x, p.y, p.z, o.x, o.y, o.z, o.w, lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]
    )
    return OdometryEvent(
        t, msg.header.frame_id, msg.child_frame_id, values, header_seconds(h.sec, h.nanosec)
    )


def _parameter_change(t: float, msg: Any, node_fq: str) -> ParameterChangeEvent | None:
    if msg.node != node_fq:
        return None
    changes: dict[str, Any] = {}
    ignored: list[str] = []
    for prm in msg.changed_parameters:
        if is_live_parameter(prm.name):
            changes[prm.name] = parameter_value(prm.value)
        else:
            ignored.append(prm.name)
    if not (changes or ignored):
        return None
    return ParameterChangeEvent(
        t, changes, ignored, header_seconds(msg.stamp.sec, msg.stamp.nanosec)
    )


def _readers(setup: NodeSetup, joints: Sequence[str]) -> dict[str, Reader]:
    """Topic -> its reader; where topics coincide, joint states, then poses, twists, commands."""
    readers: dict[str, Reader] = {
        PARAMETER_EVENTS_TOPIC: partial(
            _parameter_change, node_fq="/" + setup.node_name.lstrip("/")
        ),
        setup.command_topic: partial(command_event, joints=joints),
    }
    for name, topic in setup.twist_topics.items():
        readers[topic] = partial(_twist, name=name)
    for name, topic in setup.pose_topics.items():
        readers[topic] = partial(_pose, name=name)
    if setup.odom_topic:
        readers[setup.odom_topic] = _odometry
    readers[setup.joint_topic] = _joint_state
    return readers


def load_events(bag: str | Path, setup: NodeSetup, joints: Sequence[str]) -> list[Event]:
    """The bag's inputs, commands and parameter changes as replay events, in bag order.

    Args:
        bag: bag directory or a single .mcap / .db3 file.
        setup: the node's topics (:func:`~itasc_ros.tools.replay.node_setup.load_setup`).
        joints: the commanded joints (n,), the order of command velocities.

    Raises:
        ReplayError: the bag has no joint states or no target poses on the node's topics;
            several robots (see below).
    """
    if setup.robot_topics:
        raise ReplayError(
            "the bag-order replay takes one robot's joint states; a recording of several "
            "robots replays from the node's journal (record ~/journal) or online (--online: "
            "each robot's joint states republished into a running node)"
        )
    readers = _readers(setup, joints)
    topics = [t for t in setup.input_topics if t in readers]
    topics += [setup.command_topic, PARAMETER_EVENTS_TOPIC]
    events: list[Event] = []
    for topic, t_ns, msg in read_bag(bag, topics):
        event = readers[topic](bag_seconds(t_ns), msg)
        if event is not None:
            events.append(event)
    if not any(isinstance(e, JointStateEvent) for e in events):
        raise ReplayError(f"bag {str(bag)!r} has no joint states on {setup.joint_topic}")
    if setup.pose_topics and not any(isinstance(e, PoseEvent) for e in events):
        raise ReplayError(
            f"bag {str(bag)!r} has no target poses on " + ", ".join(setup.pose_topics.values())
        )
    return events


def bag_commands(
    bag: str | Path, setup: NodeSetup, joints: Sequence[str], topic: str = ""
) -> list[CommandEvent]:
    """The command messages of the bag, in bag order (velocities in ``joints`` order).

    ``topic``: another command topic than the setup's (one of several robots').
    """
    return [
        command_event(bag_seconds(t_ns), msg, joints)
        for _topic, t_ns, msg in read_bag(bag, [topic or setup.command_topic])
    ]


def bag_base_commands(bag: str | Path, setup: NodeSetup) -> list[CommandEvent]:
    """A commanded base's twists (``setup.base_topic``) as commands of its virtual joints."""
    nb = len(setup.base_joints)
    out = []
    for _topic, t_ns, msg in read_bag(bag, [setup.base_topic]):
        lin, ang = msg.linear, msg.angular
        v = [lin.x, lin.y, ang.z] if nb == 3 else [lin.x, ang.z]
        out.append(CommandEvent(bag_seconds(t_ns), np.array(v, dtype=float)))
    return out


__all__ = [
    "CommandEvent",
    "Event",
    "JointStateEvent",
    "ParameterChangeEvent",
    "PoseEvent",
    "TwistEvent",
    "bag_base_commands",
    "bag_commands",
    "bag_seconds",
    "command_event",
    "command_velocities",
    "header_seconds",
    "load_events",
]
