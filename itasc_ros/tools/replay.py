"""``itasc-replay``: replay a recorded bag through the controller, offline or online.

Offline (the default) is deterministic and needs no ROS graph (this path never imports
rclpy): the bag's joint states, target poses and twists and the node's live parameter changes
(``/parameter_events``) are fed in bag-time order to a :class:`~itasc_ros.core.Controller`
built with the node's parameters, and :meth:`~itasc_ros.core.Controller.step` runs at each
recorded command time (``--at commands``, the default when the bag has commands) or at
``control_rate`` (``--at rate``). It prints metrics (tracking error, joint speeds, smallest
singular value, limit hits) and writes plots with ``--out``.

Parameters come from, in this order of precedence: ``--set KEY=VALUE`` (ROS names such as
``constraints.ee.gain=40``), ``--params-file`` (a ROS 2 params file such as config/panda.yaml),
the snapshot of the node's parameters stored in the bag on :data:`PARAMS_TOPIC` (written by
``itasc-demo``, the tests and ``--online``; see :func:`write_parameters_snapshot`). The URDF:
``--urdf`` (a file or a bundled robot name), else the parameters' ``robot_description`` or
``urdf_file`` (a bundled URDF is found by its file name when the path does not exist here).

``--compare``: what is compared, and why the tolerance is what it is
--------------------------------------------------------------------
Each recorded command is compared with what the controller computes, joint by joint, as the
largest absolute difference [rad/s]. The controller is the very code the node runs, on float64
inputs that the bag holds bit for bit (CDR), so the *same inputs* give the same command up to
floating-point rounding (~1e-15 rad/s; damping bounds the amplification near singularities).
The default tolerance of 1e-6 rad/s is far above rounding and far below any change that
matters: a 1 % gain change or a 0.05 mm target change already moves the command by more.

The bag's order is not the node's order, though. The recorder received the joint states
(from the robot), the targets and the node's commands on its own schedule, and a busy
recorder serves its subscriptions unevenly (in the demo on a loaded machine its joint states
lagged by up to 2 s while the commands lagged less), so bag times of different topics cannot
be compared, and the node may have used a joint state or target older or newer than the latest
one before the command in the bag. A Float64MultiArray command carries no stamp either. The
comparison therefore asks whether the recorded command is *exactly* what the controller
computes from **some** inputs that the node could have had:

1. ``latest``: the replay's own command (every input with a bag time <= the command's);
2. ``realigned``: a search in the node's order. Each topic's messages keep their order
   (reliable DDS), and the node's ticks use ever newer inputs, so the inputs of a command are
   not older than those that reproduced the previous one. Candidates: the joint states after
   that one (the expected step first: joint states per command, and the command's bag-time
   gap), each with the target poses whose header stamps are within ``--window`` (0.1 s) of the
   joint state's stamp (nearest first), each pose with the twist the node may have applied
   (an explicit twist stamped near it, the twist estimated from the poses up to it, or none),
   and with the parameters in force at those stamps (parameter events carry the node's clock).
   At most ``--max-candidates`` combinations per command; the likeliest are tried first, so a
   command is usually found after a few.

A command that no combination reproduces within ``--tolerance`` is a mismatch: the report
names the time, the joint, the recorded and the closest recomputed value, and the exit status
is 1. Commands that are exactly zero while the replay is active are counted as ``halts`` (the
node's single zero command when its inputs went stale on its side, when it was disabled, or at
shutdown); more than 10 % of them is a mismatch too. Targets given in a moving frame (a URDF
link, not the root) are transformed with the candidate joint state rather than the one the
node had when it received them, so such bags compare only approximately.

Online (``--online``): the bag's joint states and targets are republished into a running node
over DDS with the bag's timing (header stamps shifted to now, intervals kept) while the node's
commands (and the republished inputs) are recorded into a new bag (``--online-out``), which
``--compare`` then checks offline like any other bag. This path uses rclpy; setting a local DDS
environment is the caller's job (the tests do).
"""

from __future__ import annotations

import argparse
import bisect
import copy
import itertools
import json
import math
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from itasc_ros.core import REGISTRY, Controller, ControllerConfig, KinematicTree, spatial
from itasc_ros.core.config import LIVE_KEYS
from itasc_ros.core.errors import ConfigError, InputError, ItascError
from itasc_ros.params import config_from_parameters, read_params_file, target_topics
from itasc_ros.tools.bagio import BagWriter, Storage, read_bag
from itasc_ros.tools.resources import robot_urdf, share_file

Array = NDArray[np.float64]

#: Topic (std_msgs/msg/String, JSON) holding a snapshot of the node's parameters.
PARAMS_TOPIC = "/itasc_replay/node_parameters"
#: The ROS parameter-event topic; changes of the node's live parameters are replayed.
PARAMETER_EVENTS_TOPIC = "/parameter_events"
#: Default comparison tolerance [rad/s] (see the module docstring).
DEFAULT_TOLERANCE = 1e-6
#: Default half-width of the candidate window around a command's bag time [s].
DEFAULT_WINDOW = 0.1
#: Default largest number of input combinations tried for one command.
DEFAULT_MAX_CANDIDATES = 5000
#: More exactly-zero commands than this fraction of the compared ones is a mismatch.
MAX_HALT_FRACTION = 0.1

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


# ---------------------------------------------------------------------------------------------
# Times: the same conversions as the node (itasc_ros.ros.conversions), so floats agree bit for bit


def header_seconds(sec: int, nanosec: int) -> float | None:
    """A header stamp in seconds as the node computes it, or None for the zero stamp."""
    if sec == 0 and nanosec == 0:
        return None
    return sec + nanosec * 1e-9


def bag_seconds(t_ns: int) -> float:
    """A bag time stamp [ns] in seconds [s] (the replay's clock for reception times)."""
    return t_ns * 1e-9


# ---------------------------------------------------------------------------------------------
# Parameters


def parse_override(spec: str) -> tuple[str, Any]:
    """``'name=value'`` -> (name, value parsed as YAML: numbers, true/false, lists).

    Raises:
        ConfigError: no '=' or an empty name.
    """
    name, sep, value = spec.partition("=")
    if not sep or not name.strip():
        raise ConfigError(
            f"override {spec!r} must look like 'name=value', e.g. 'constraints.ee.gain=40'"
        )
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    return name.strip(), parsed


def _parameter_value(pv: Any) -> Any:
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

    def tree(self) -> KinematicTree:
        """A new kinematic tree of the URDF."""
        return KinematicTree.from_urdf(self.urdf_xml)

    @property
    def input_topics(self) -> list[str]:
        """Joint state, pose and twist topics."""
        return [self.joint_topic, *self.pose_topics.values(), *self.twist_topics.values()]


def bag_parameters(bag: str | Path) -> tuple[dict[str, Any], str] | None:
    """The node parameters stored in a bag on :data:`PARAMS_TOPIC` (first message), or None.

    Returns:
        (flat parameters, node name) or None when the bag has no snapshot.
    """
    for _topic_name, _t, msg in read_bag(bag, [PARAMS_TOPIC]):
        data = json.loads(msg.data)
        return dict(data["parameters"]), str(data.get("node", "/itasc_node")).lstrip("/")
    return None


def _read_urdf(urdf: str) -> tuple[str, str]:
    path = Path(urdf)
    if path.is_file():
        return path.read_text(encoding="utf-8"), str(path)
    try:
        found = robot_urdf(urdf)
    except FileNotFoundError:
        try:
            found = share_file("urdf", path.name)
        except FileNotFoundError as exc:
            raise ReplayError(f"URDF {urdf!r} not found: {exc}") from None
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
        snap = bag_parameters(bag)
        if snap is not None:
            params, snap_node = snap
            node_name = snap_node or node_name
            source = f"{bag} ({PARAMS_TOPIC})"
    if params is None:
        raise ReplayError(
            "no node parameters: the bag has no snapshot on "
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


# ---------------------------------------------------------------------------------------------
# Bag contents


@dataclass
class _JointState:
    t: float
    names: list[str]
    pos: Array
    src: float | None
    accepted: bool = True

    @property
    def stamp(self) -> float:
        """Header stamp [s], or the bag time when unstamped."""
        return self.t if self.src is None else self.src


@dataclass
class _Pose:
    t: float
    name: str
    frame: str
    pos: Array
    quat: Array
    src: float | None
    estimate: Array = field(default_factory=lambda: np.zeros(6))  # (6,) after this pose
    accepted: bool = True

    @property
    def stamp(self) -> float:
        """Header stamp [s], or the bag time when unstamped."""
        return self.t if self.src is None else self.src


@dataclass
class _Twist:
    t: float
    name: str
    frame: str
    twist: Array  # (6,)
    src: float | None = None

    @property
    def stamp(self) -> float:
        """Header stamp [s], or the bag time when unstamped."""
        return self.t if self.src is None else self.src


@dataclass
class _Command:
    t: float
    qdot: Array | None  # (n,) or None when it cannot be read
    problem: str = ""


@dataclass
class _ParamChange:
    t: float
    changes: dict[str, Any]
    ignored: list[str]
    src: float | None = None  # the event's stamp (the node's clock when it was set)

    @property
    def stamp(self) -> float:
        """Event stamp [s], or the bag time when unstamped."""
        return self.t if self.src is None else self.src


def _command_velocities(msg: Any, joints: Sequence[str]) -> Array:
    kind = getattr(msg, "__msgtype__", "")
    n = len(joints)
    if kind == "std_msgs/msg/Float64MultiArray":
        v = np.asarray(msg.data, dtype=float)
        if v.shape != (n,):
            raise ValueError(f"command has {v.size} values for {n} joints")
        return v
    if kind == "trajectory_msgs/msg/JointTrajectory":
        if len(msg.points) == 0:
            raise ValueError("trajectory has no points")
        names, vel = list(msg.joint_names), np.asarray(msg.points[0].velocities, dtype=float)
    elif kind == "sensor_msgs/msg/JointState":
        names, vel = list(msg.name), np.asarray(msg.velocity, dtype=float)
    else:
        raise ValueError(f"not a command message: {kind}")
    if vel.shape[0] != len(names):
        raise ValueError(f"command has {len(names)} names and {vel.shape[0]} velocities")
    missing = [j for j in joints if j not in names]
    if missing:
        raise ValueError(f"command lacks joints {missing}")
    return vel[[names.index(j) for j in joints]]


def load_events(bag: str | Path, setup: NodeSetup, joints: Sequence[str]) -> list[Any]:
    """The bag's inputs, commands and parameter changes as replay events, in bag order.

    Raises:
        ReplayError: the bag has no joint states or no target poses on the node's topics.
    """
    pose_of = {t: n for n, t in setup.pose_topics.items()}
    twist_of = {t: n for n, t in setup.twist_topics.items()}
    topics = [*setup.input_topics, setup.command_topic, PARAMETER_EVENTS_TOPIC]
    node_fq = "/" + setup.node_name.lstrip("/")
    events: list[Any] = []
    for topic, t_ns, msg in read_bag(bag, topics):
        t = bag_seconds(t_ns)
        if topic == setup.joint_topic:
            h = msg.header.stamp
            events.append(
                _JointState(
                    t,
                    list(msg.name),
                    np.asarray(msg.position, dtype=float),
                    header_seconds(h.sec, h.nanosec),
                )
            )
        elif topic in pose_of:
            h = msg.header.stamp
            p, o = msg.pose.position, msg.pose.orientation
            events.append(
                _Pose(
                    t,
                    pose_of[topic],
                    msg.header.frame_id,
                    np.array([p.x, p.y, p.z]),
                    np.array([o.x, o.y, o.z, o.w]),
                    header_seconds(h.sec, h.nanosec),
                )
            )
        elif topic in twist_of:
            lin, ang = msg.twist.linear, msg.twist.angular
            h = msg.header.stamp
            events.append(
                _Twist(
                    t,
                    twist_of[topic],
                    msg.header.frame_id,
                    np.array([lin.x, lin.y, lin.z, ang.x, ang.y, ang.z]),
                    header_seconds(h.sec, h.nanosec),
                )
            )
        elif topic == setup.command_topic:
            try:
                events.append(_Command(t, _command_velocities(msg, joints)))
            except ValueError as exc:
                events.append(_Command(t, None, str(exc)))
        elif topic == PARAMETER_EVENTS_TOPIC and msg.node == node_fq:
            changes: dict[str, Any] = {}
            ignored: list[str] = []
            for prm in msg.changed_parameters:
                if is_live_parameter(prm.name):
                    changes[prm.name] = _parameter_value(prm.value)
                else:
                    ignored.append(prm.name)
            if changes or ignored:
                events.append(
                    _ParamChange(
                        t, changes, ignored, header_seconds(msg.stamp.sec, msg.stamp.nanosec)
                    )
                )
    if not any(isinstance(e, _JointState) for e in events):
        raise ReplayError(f"bag {str(bag)!r} has no joint states on {setup.joint_topic}")
    if setup.pose_topics and not any(isinstance(e, _Pose) for e in events):
        raise ReplayError(
            f"bag {str(bag)!r} has no target poses on " + ", ".join(setup.pose_topics.values())
        )
    return events


# ---------------------------------------------------------------------------------------------
# Replay


@dataclass
class ReplayResult:
    """Per-step outputs of an offline replay (k steps, n joints).

    Attributes:
        joint_names: (n,) command order.
        t: (k,) step times (bag time [s]).
        recorded: (k, n) recorded commands [rad/s] (NaN rows: none at that step).
        recomputed: (k, n) the replay's commands [rad/s] (zeros unless active).
        status: (k,) controller status per step.
        sigma_min: (k,) smallest singular value (NaN when no solve).
        damping: (k,) damping lambda (NaN when no solve).
        velocity_scale: (k,) scale applied for velocity limits (NaN when no solve).
        locked: (k,) number of joints locked at a position limit.
        position_error: (k,) |target - effector| of the first pose constraint [m] (NaN if none).
        rotation_error: (k,) rotation angle between them [rad].
        q: (k, n) joint positions used [rad].
        velocity_limits: (n,) [rad/s].
        damping_epsilon: the config's damping_epsilon per step (k,).
        rejections: inputs the controller rejected; rejection_reasons: the first few reasons.
        parameter_changes: (time [s], changes) applied; ignored_parameters: names not live.
        inputs: counts of joint states, poses, twists, commands, parameter changes.
    """

    joint_names: list[str]
    t: Array
    recorded: Array
    recomputed: Array
    status: list[str]
    sigma_min: Array
    damping: Array
    velocity_scale: Array
    locked: NDArray[np.int64]
    position_error: Array
    rotation_error: Array
    q: Array
    velocity_limits: Array
    damping_epsilon: Array
    rejections: int = 0
    rejection_reasons: list[str] = field(default_factory=list)
    parameter_changes: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    ignored_parameters: list[str] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)


@dataclass
class Mismatch:
    """A recorded command that no candidate input reproduces."""

    t: float
    joint: str
    recorded: float
    recomputed: float
    diff: float
    candidates: int

    def text(self) -> str:
        """One line for the report."""
        return (
            f"t={self.t:.6f} s: {self.joint} recorded {self.recorded:+.9f} rad/s, closest "
            f"recomputed {self.recomputed:+.9f} rad/s (|diff| {self.diff:.3e}, "
            f"{self.candidates} input combinations tried)"
        )


@dataclass
class CompareReport:
    """Outcome of :meth:`Replayer.compare`.

    Per compared command (arrays of length ``commands``, NaN where not reproduced):
    ``input_stamp`` is the header stamp [s] of the joint state that reproduces it (the node's
    time of that tick, up to the input latency), ``sigma_min``, ``damping``, ``locked`` and
    ``position_error`` [m] the solve's figures for those inputs: what the node computed.
    """

    tolerance: float
    window: float
    commands: int = 0
    matched_latest: int = 0
    matched_reordered: int = 0
    halts: int = 0
    unreadable: int = 0
    unchecked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    max_diff_matched: float = 0.0
    max_diff_latest: float = 0.0
    candidates_tried: int = 0
    command_time: Array = field(default_factory=lambda: np.zeros(0))
    input_stamp: Array = field(default_factory=lambda: np.zeros(0))
    sigma_min: Array = field(default_factory=lambda: np.zeros(0))
    damping: Array = field(default_factory=lambda: np.zeros(0))
    locked: Array = field(default_factory=lambda: np.zeros(0))
    position_error: Array = field(default_factory=lambda: np.zeros(0))

    @property
    def too_many_halts(self) -> bool:
        """True when more than :data:`MAX_HALT_FRACTION` of the commands are unexplained zeros."""
        return self.halts > MAX_HALT_FRACTION * max(self.commands, 1)

    @property
    def ok(self) -> bool:
        """True when every recorded command is reproduced."""
        return (
            not self.mismatches
            and self.unchecked == 0
            and self.unreadable == 0
            and not self.too_many_halts
            and self.commands > 0
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {
            "ok": self.ok,
            "tolerance_rad_s": self.tolerance,
            "window_s": self.window,
            "commands": self.commands,
            "matched_latest": self.matched_latest,
            "matched_reordered": self.matched_reordered,
            "halts": self.halts,
            "unreadable": self.unreadable,
            "unchecked": self.unchecked,
            "mismatches": len(self.mismatches),
            "max_diff_matched_rad_s": self.max_diff_matched,
            "max_diff_latest_rad_s": self.max_diff_latest,
            "candidates_tried": self.candidates_tried,
        }

    def text(self) -> str:
        """A human-readable report."""
        lines = [
            f"compare: {self.commands} recorded commands, tolerance {self.tolerance:g} rad/s, "
            f"stamp window +-{1e3 * self.window:g} ms",
            f"  reproduced from the latest inputs:      {self.matched_latest}",
            f"  reproduced from realigned inputs:       {self.matched_reordered}",
            f"  halts (exact zeros while active):       {self.halts}",
            f"  largest |diff| of a reproduced command: {self.max_diff_matched:.3e} rad/s",
        ]
        if self.unreadable:
            lines.append(f"  unreadable command messages:            {self.unreadable}")
        if self.too_many_halts:
            lines.append(
                f"  MISMATCH: {self.halts} zero commands are more than "
                f"{100 * MAX_HALT_FRACTION:g} % of the commands"
            )
        if self.mismatches:
            lines.append(
                f"  MISMATCH: {len(self.mismatches)} commands not reproduced"
                + (f" (stopped; {self.unchecked} not checked)" if self.unchecked else "")
            )
            lines.extend("    " + m.text() for m in self.mismatches[:10])
        if self.commands == 0:
            lines.append("  MISMATCH: the bag has no commands to compare")
        lines.append("  result: " + ("OK" if self.ok else "FAILED"))
        return "\n".join(lines)


def _ranked_product(lists: Sequence[Sequence[Any]], cap: int) -> Iterator[tuple[Any, ...]]:
    """Combinations of one item per list, the sum of the items' ranks ascending, at most cap."""
    sizes = [len(x) for x in lists]
    if not sizes or min(sizes) == 0:
        return
    sizes = [min(s, cap) for s in sizes]
    if math.prod(sizes) <= 20_000:
        idx = sorted(itertools.product(*(range(s) for s in sizes)), key=sum)[:cap]
    else:  # walk rank sums in order
        idx = []
        r = 0
        while len(idx) < cap and r < sum(sizes):
            for combo in itertools.product(*(range(min(s, r + 1)) for s in sizes)):
                if sum(combo) == r:
                    idx.append(combo)
                    if len(idx) >= cap:
                        break
            r += 1
    for combo in idx:
        yield tuple(lst[i] for lst, i in zip(lists, combo, strict=True))


@dataclass
class _Target:
    """A candidate target of one constraint: a pose and the twist applied with it."""

    pose_index: int
    pose: _Pose
    frame: str
    twist: Array  # (6,)
    twist_index: int  # -1: estimated or none


@dataclass
class _Pointers:
    """Indices of the inputs that reproduced the previous command (node order is monotone).

    ``js``, ``pose``, ``twist``: the earliest indices the node may have used (a lower bound
    for the next command); ``js_found``: the joint state that reproduced it (where to look).
    """

    js: int
    pose: dict[str, int]
    twist: dict[str, int]
    js_found: int = -1

    @property
    def js_hint(self) -> int:
        """Where the next command's joint state is expected from."""
        return max(self.js, self.js_found)


class Replayer:
    """Offline replay of a bag through a :class:`Controller` (deterministic).

    Args:
        bag: bag directory or a single .mcap / .db3 file.
        setup: the node's parameters, URDF and topics (:func:`load_setup`).

    Raises:
        ReplayError: the bag lacks inputs. ConfigError: the configuration does not fit the URDF.
    """

    #: Joint states searched after the previous match at most (per command).
    MAX_JS_CANDIDATES = 48
    #: Combinations tried per joint-state candidate at most.
    PER_JS_CAP = 60
    #: How far [s] (joint-state stamps) after the previous match a command's inputs may be.
    HORIZON = 1.0

    def __init__(self, bag: str | Path, setup: NodeSetup) -> None:
        self.bag = Path(bag)
        self.setup = setup
        self.tree = setup.tree()
        self.controller = Controller(self.tree, setup.config)
        self.joint_names = list(self.controller.joint_names)
        self.events = load_events(bag, setup, self.joint_names)
        # (stamp [s] of the change, configuration from then on)
        self._epochs: list[tuple[float, ControllerConfig]] = [(-math.inf, setup.config)]
        self._probes: dict[int, Controller] = {}
        self._js: list[_JointState] = []
        self._poses: dict[str, list[_Pose]] = {n: [] for n in setup.pose_topics}
        self._twists: dict[str, list[_Twist]] = {n: [] for n in setup.twist_topics}
        self._commands: list[tuple[int, _Command]] = []  # (step index, command)
        self._step_inputs: list[_Pointers] = []  # latest input indices at each step
        self.result: ReplayResult | None = None

    # --------------------------------------------------------------------------- the pass
    def run(self, at: str = "commands") -> ReplayResult:
        """Feed every input in bag order and step at each command time (or at control_rate).

        Args:
            at: 'commands' (at each recorded command's bag time) or 'rate' (every
                1 / control_rate from the first to the last input).

        Raises:
            ReplayError: 'commands' with a bag without commands, or an unknown ``at``.
        """
        if at not in ("commands", "rate"):
            raise ReplayError(f"unknown step mode {at!r}; valid: 'commands', 'rate'")
        ctrl = self.controller
        events = list(self.events)
        if at == "commands":
            if not any(isinstance(e, _Command) for e in events):
                raise ReplayError(
                    f"bag {str(self.bag)!r} has no commands on "
                    f"{self.setup.command_topic}; use --at rate"
                )
        else:
            t0 = min(e.t for e in events)
            t1 = max(e.t for e in events)
            period = 1.0 / ctrl.config.control_rate
            ticks = [
                _Command(t0 + k * period, None, "tick") for k in range(int((t1 - t0) / period) + 1)
            ]
            inputs = [e for e in events if not isinstance(e, _Command)]
            # stable sort: bag order kept, a tick after the inputs of the same time
            events = sorted(inputs + ticks, key=lambda e: (e.t, isinstance(e, _Command)))
        n = len(self.joint_names)
        rows: dict[str, list[Any]] = {
            k: []
            for k in (
                "t",
                "recorded",
                "recomputed",
                "status",
                "sigma",
                "damping",
                "scale",
                "locked",
                "perr",
                "rerr",
                "q",
                "eps",
            )
        }
        first_pose = next(iter(self.setup.pose_topics), None)
        rejections = 0
        reasons: list[str] = []
        changes: list[tuple[float, dict[str, Any]]] = []
        ignored: list[str] = []
        counts = {
            "joint_states": 0,
            "target_poses": 0,
            "target_twists": 0,
            "commands": 0,
            "parameter_changes": 0,
        }
        nan_row = np.full(n, np.nan)
        last_js = -1
        for ev in events:
            try:
                if isinstance(ev, _JointState):
                    counts["joint_states"] += 1
                    self._js.append(ev)
                    ctrl.set_joint_state(ev.names, ev.pos, ev.t, ev.src)
                    last_js = len(self._js) - 1
                elif isinstance(ev, _Pose):
                    counts["target_poses"] += 1
                    self._poses[ev.name].append(ev)
                    ctrl.set_target(ev.name, ev.frame, ev.pos, ev.quat, ev.t, ev.src)
                    ev.estimate = ctrl.target_twist_estimate(ev.name)
                elif isinstance(ev, _Twist):
                    counts["target_twists"] += 1
                    self._twists[ev.name].append(ev)
                    ctrl.set_target_twist(ev.name, ev.frame, ev.twist, ev.t)
                elif isinstance(ev, _ParamChange):
                    counts["parameter_changes"] += 1
                    ignored.extend(ev.ignored)
                    if ev.changes:
                        ctrl.update_parameters(**ev.changes)
                        changes.append((ev.t, dict(ev.changes)))
                        self._epochs.append((ev.stamp, copy.deepcopy(ctrl.config)))
                else:
                    if ev.problem != "tick":
                        counts["commands"] += 1
                        self._commands.append((len(rows["t"]), ev))
                    self._step_inputs.append(
                        _Pointers(
                            last_js,
                            {c: len(v) - 1 for c, v in self._poses.items()},
                            {c: len(v) - 1 for c, v in self._twists.items()},
                        )
                    )
                    out = ctrl.step(ev.t)
                    res = out.result
                    rows["t"].append(ev.t)
                    rows["recorded"].append(ev.qdot if ev.qdot is not None else nan_row)
                    rows["recomputed"].append(out.qdot)
                    rows["status"].append(out.status)
                    rows["sigma"].append(res.sigma_min if res is not None else np.nan)
                    rows["damping"].append(res.damping if res is not None else np.nan)
                    rows["scale"].append(res.velocity_scale if res is not None else np.nan)
                    rows["locked"].append(int(np.count_nonzero(res.locked)) if res else 0)
                    rows["q"].append(out.q)
                    rows["eps"].append(ctrl.config.damping_epsilon)
                    pe = re = np.nan
                    if first_pose is not None and ctrl.has_joint_state:
                        pe, re = _pose_errors(ctrl, first_pose)
                    rows["perr"].append(pe)
                    rows["rerr"].append(re)
            except InputError as exc:
                rejections += 1
                if isinstance(ev, _JointState | _Pose):
                    ev.accepted = False
                if len(reasons) < 5:
                    reasons.append(f"t={ev.t:.6f} s: {exc}")
            except ConfigError as exc:
                ignored.append(f"{ev.changes if isinstance(ev, _ParamChange) else ev}: {exc}")
        self._epochs.sort(key=lambda e: e[0])
        k = len(rows["t"])
        self.result = ReplayResult(
            joint_names=self.joint_names,
            t=np.asarray(rows["t"], dtype=float),
            recorded=np.asarray(rows["recorded"], dtype=float).reshape(k, n),
            recomputed=np.asarray(rows["recomputed"], dtype=float).reshape(k, n),
            status=rows["status"],
            sigma_min=np.asarray(rows["sigma"], dtype=float),
            damping=np.asarray(rows["damping"], dtype=float),
            velocity_scale=np.asarray(rows["scale"], dtype=float),
            locked=np.asarray(rows["locked"], dtype=np.int64),
            position_error=np.asarray(rows["perr"], dtype=float),
            rotation_error=np.asarray(rows["rerr"], dtype=float),
            q=np.asarray(rows["q"], dtype=float).reshape(k, n),
            velocity_limits=ctrl.velocity_limits,
            damping_epsilon=np.asarray(rows["eps"], dtype=float),
            rejections=rejections,
            rejection_reasons=reasons,
            parameter_changes=changes,
            ignored_parameters=sorted(set(ignored)),
            inputs=counts,
        )
        return self.result

    # --------------------------------------------------------------------------- compare
    def _epoch(self, stamp: float) -> int:
        return max(0, bisect.bisect_right([e[0] for e in self._epochs], stamp) - 1)

    def _probe(self, epoch: int) -> Controller:
        probe = self._probes.get(epoch)
        if probe is None:
            probe = Controller(self.tree, self._epochs[epoch][1])
            self._probes[epoch] = probe
        return probe

    @staticmethod
    def _stamped(
        items: Sequence[Any],
        stamps: Sequence[float],
        s: float,
        window: float,
        first: int,
        limit: int = 8,
    ) -> list[int]:
        """Indices >= first of items stamped within s +- window, the likeliest ``limit`` first.

        Messages stamped after ``s`` count three times their distance (the node used what it
        had received). Plus ``first`` itself (the input of the previous command, held) and the
        last one before the window (a target is held until the next one).
        """
        lo = max(bisect.bisect_left(stamps, s - window), first)
        hi = bisect.bisect_right(stamps, s + window)

        def distance(i: int) -> float:
            d = stamps[i] - s
            return 3.0 * d if d > 0.0 else -d

        out = sorted(range(lo, hi), key=distance)
        out = [i for i in out if getattr(items[i], "accepted", True)][:limit]
        for extra in (lo - 1, first):
            if (
                0 <= max(first, 0) <= extra < len(items)
                and extra not in out
                and getattr(items[extra], "accepted", True)
            ):
                out.append(extra)
        return out

    def _input_lists(
        self, js: _JointState, prev: _Pointers | None, window: float, cfg: ControllerConfig
    ) -> list[list[_Target]]:
        """Candidate targets per pose constraint for a joint-state candidate, likeliest first.

        A candidate is a target pose (stamped near the joint state, not older than the one
        the previous command used) with the twist the node applied to it: an explicit twist
        stamped near the pose (published with it, or one tick before or after), the twist
        estimated from the poses up to it, or none.
        """
        lists: list[list[_Target]] = []
        s = js.stamp
        for name in self.setup.pose_topics:
            poses = self._poses[name]
            first = 0 if prev is None else max(prev.pose[name], 0)
            pidx = self._stamped(poses, self._pose_stamps[name], s, window, first)
            ff = cfg.constraint(name).feedforward
            tws = self._twists[name]
            tfirst = 0 if prev is None else max(prev.twist[name], 0)
            ranked: list[tuple[int, _Target]] = []
            zero = np.zeros(6)
            for rp, i in enumerate(pidx):
                pose = poses[i]
                if ff:
                    ranked.append((rp, _Target(i, pose, "", pose.estimate, -1)))
                    near = self._stamped(
                        tws, self._twist_stamps[name], pose.stamp, window, tfirst, limit=4
                    )
                    for rt, k in enumerate(near):
                        ranked.append((rp + rt, _Target(i, pose, tws[k].frame, tws[k].twist, k)))
                ranked.append((rp + 1, _Target(i, pose, "", zero, -1)))
            ranked.sort(key=lambda x: x[0])
            lists.append([t for _r, t in ranked])
        return lists

    def _js_candidates(self, prev: _Pointers | None, since: int, gap: float) -> list[int]:
        """Joint-state indices for the next command, the most likely first.

        Args:
            prev: inputs of the last reproduced command (None: none yet).
            since: commands since then (1 = this is the next one).
            gap: bag time since then [s].
        """
        if prev is None:  # first command: from the first target on
            first_target = min((p[0].stamp for p in self._poses.values() if p), default=-math.inf)
            start = bisect.bisect_left(self._js_stamps, first_target - 0.5)
            e1 = e2 = float(since - 1) * self._js_per_command
        else:
            start = max(prev.js, 0)
            e1 = since * self._js_per_command
            e2 = gap * self._js_rate
        if not self._js:
            return []
        hint = start if prev is None else max(prev.js_hint, start)
        horizon = self._js_stamps[hint] + self.HORIZON + since / self._command_rate
        stop = bisect.bisect_right(self._js_stamps, horizon)
        cands = [i for i in range(start, stop) if self._js[i].accepted]
        cands.sort(key=lambda i: min(abs(i - hint - e1), abs(i - hint - e2)))
        return cands

    def _search(
        self,
        recorded: Array,
        prev: _Pointers | None,
        since: int,
        gap: float,
        window: float,
        tolerance: float,
        cap: int,
    ) -> tuple[float, Any, int, _Pointers | None, float]:
        """Best input combination: (|diff|, its StepOutput, tried, pointers, js stamp).

        Three rounds, each cheap where the previous was likely: the likeliest joint states
        with their likeliest targets; every joint state within the horizon (a stalled node)
        with its three likeliest targets; the likeliest joint states with more targets.
        """
        best = math.inf
        best_out: Any = None
        tried = 0
        names = list(self.setup.pose_topics)
        js_all = self._js_candidates(prev, since, gap)
        top = js_all[: self.MAX_JS_CANDIDATES]
        done: dict[tuple[int, int], int] = {}  # (js index, epoch) -> combinations tried
        lists_cache: dict[tuple[int, int], list[list[_Target]]] = {}
        for js_list, per_js in ((top, 8), (js_all, 3), (top, self.PER_JS_CAP)):
            for i in js_list:
                js = self._js[i]
                epochs = []
                for st in (js.stamp, js.stamp - window, js.stamp + 4 * window):
                    e = self._epoch(st)
                    if e not in epochs:
                        epochs.append(e)
                for epoch in epochs:
                    key = (i, epoch)
                    skip = done.get(key, 0)
                    if skip >= per_js:
                        continue
                    done[key] = per_js
                    probe = self._probe(epoch)
                    lists = lists_cache.get(key)
                    if lists is None:
                        lists = self._input_lists(js, prev, window, self._epochs[epoch][1])
                        lists_cache[key] = lists
                    combos = list(_ranked_product(lists, per_js))[skip:]
                    for combo in combos:
                        try:
                            probe.set_joint_state(js.names, js.pos, js.t)
                            for name, tgt in zip(names, combo, strict=True):
                                pose = tgt.pose
                                probe.set_target(name, pose.frame, pose.pos, pose.quat, js.t)
                                probe.set_target_twist(name, tgt.frame, tgt.twist, js.t)
                        except InputError:
                            continue
                        out = probe.step(js.t)
                        tried += 1
                        diff = float(np.max(np.abs(out.qdot - recorded)))
                        if diff < best:
                            best, best_out = diff, out
                        if diff <= tolerance:
                            pointers = _Pointers(
                                i,
                                {n: t.pose_index for n, t in zip(names, combo, strict=True)},
                                {
                                    n: (
                                        t.twist_index
                                        if t.twist_index >= 0
                                        else (prev.twist[n] if prev is not None else -1)
                                    )
                                    for n, t in zip(names, combo, strict=True)
                                },
                            )
                            return best, out, tried, pointers, js.stamp
                        if tried >= cap:
                            return best, best_out, tried, None, math.nan
        return best, best_out, tried, None, math.nan

    def _rewind(self, ptr: _Pointers, floor: _Pointers | None) -> _Pointers:
        """The earliest inputs equal to those of ``ptr`` (not before ``floor``).

        A robot at rest publishes the same joint state again and again, a held target is the
        same pose: the node may have used the first of equal messages, and the next command's
        inputs are only known not to be older than that one.
        """

        def back(items: Sequence[Any], i: int, lo: int, same: Any) -> int:
            while i - 1 >= max(lo, 0) and same(items[i - 1], items[i]):
                i -= 1
            return i

        def same_js(a: _JointState, b: _JointState) -> bool:
            return a.accepted and a.names == b.names and np.array_equal(a.pos, b.pos)

        def same_pose(a: _Pose, b: _Pose) -> bool:
            return (
                a.accepted
                and a.frame == b.frame
                and np.array_equal(a.pos, b.pos)
                and np.array_equal(a.quat, b.quat)
                and np.array_equal(a.estimate, b.estimate)
            )

        def same_twist(a: _Twist, b: _Twist) -> bool:
            return a.frame == b.frame and np.array_equal(a.twist, b.twist)

        js = back(self._js, ptr.js, floor.js if floor else 0, same_js) if ptr.js >= 0 else -1
        pose = {
            n: back(self._poses[n], i, floor.pose[n] if floor else 0, same_pose) if i >= 0 else i
            for n, i in ptr.pose.items()
        }
        twist = {
            n: back(self._twists[n], i, floor.twist[n] if floor else 0, same_twist)
            if i >= 0
            else i
            for n, i in ptr.twist.items()
        }
        return _Pointers(js, pose, twist, js_found=ptr.js)

    def compare(
        self,
        tolerance: float = DEFAULT_TOLERANCE,
        window: float = DEFAULT_WINDOW,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        max_mismatches: int = 20,
        max_commands: int | None = None,
    ) -> CompareReport:
        """Check every recorded command against the controller (see the module docstring).

        Args:
            tolerance: largest accepted |recorded - recomputed| per joint [rad/s].
            window: joint state and target stamps of one tick lie within this [s].
            max_candidates: input combinations tried per command at most.
            max_mismatches: stop searching after this many mismatches (the rest: unchecked).
            max_commands: compare only the first this many recorded commands (None: all).

        Raises:
            ReplayError: :meth:`run` was not called with at='commands'.
        """
        res = self.result
        if res is None or not self._commands:
            raise ReplayError(
                "compare needs a replay at the recorded command times: call "
                "run(at='commands') on a bag with commands"
            )
        self._js_stamps = [j.stamp for j in self._js]
        self._pose_stamps = {n: [p.stamp for p in v] for n, v in self._poses.items()}
        self._twist_stamps = {n: [p.stamp for p in v] for n, v in self._twists.items()}
        n_cmd = max(len(self._commands), 1)
        self._js_per_command = sum(j.accepted for j in self._js) / n_cmd
        span = (self._js_stamps[-1] - self._js_stamps[0]) if len(self._js) > 1 else 0.0
        self._js_rate = (len(self._js) - 1) / span if span > 0 else 0.0
        cspan = self._commands[-1][1].t - self._commands[0][1].t
        self._command_rate = (len(self._commands) - 1) / cspan if cspan > 0 else 1.0
        commands = self._commands[:max_commands]
        k = len(commands)
        rep = CompareReport(tolerance=tolerance, window=window)
        nan = np.full(k, np.nan)
        rep.command_time = np.array([c.t for _i, c in commands])
        rep.input_stamp, rep.sigma_min, rep.damping = nan.copy(), nan.copy(), nan.copy()
        rep.locked, rep.position_error = nan.copy(), nan.copy()
        first_pose = next(iter(self.setup.pose_topics), None)
        prev: _Pointers | None = None
        prev_t = commands[0][1].t if commands else 0.0  # bag time of the last reproduced one
        since = 0  # commands since the last reproduced one
        for row, (idx, cmd) in enumerate(commands):
            rep.commands += 1
            since += 1
            if cmd.qdot is None:
                rep.unreadable += 1
                continue
            if len(rep.mismatches) >= max_mismatches:
                rep.unchecked += 1
                continue
            diff0 = float(np.max(np.abs(res.recomputed[idx] - cmd.qdot)))
            rep.max_diff_latest = max(rep.max_diff_latest, diff0)
            latest = self._step_inputs[idx]
            if diff0 <= tolerance and latest.js >= 0 and (prev is None or latest.js >= prev.js):
                rep.matched_latest += 1
                rep.max_diff_matched = max(rep.max_diff_matched, diff0)
                prev, prev_t, since = self._rewind(latest, prev), cmd.t, 0
                rep.input_stamp[row] = self._js[latest.js].stamp
                rep.sigma_min[row] = res.sigma_min[idx]
                rep.damping[row] = res.damping[idx]
                rep.locked[row] = res.locked[idx]
                rep.position_error[row] = res.position_error[idx]
                continue
            if not np.any(cmd.qdot):
                rep.halts += 1
                continue
            best, out, tried, pointers, stamp = self._search(
                cmd.qdot, prev, since, cmd.t - prev_t, window, tolerance, max_candidates
            )
            rep.candidates_tried += tried
            if pointers is not None:
                rep.matched_reordered += 1
                rep.max_diff_matched = max(rep.max_diff_matched, best)
                prev, prev_t, since = self._rewind(pointers, prev), cmd.t, 0
                rep.input_stamp[row] = stamp
                if out.result is not None:
                    rep.sigma_min[row] = out.result.sigma_min
                    rep.damping[row] = out.result.damping
                    rep.locked[row] = int(np.count_nonzero(out.result.locked))
                if first_pose is not None:
                    probe = self._probe(self._epoch(stamp))
                    rep.position_error[row] = _pose_errors(probe, first_pose)[0]
                continue
            ref = res.recomputed[idx] if out is None else out.qdot
            j = int(np.argmax(np.abs(ref - cmd.qdot)))
            rep.mismatches.append(
                Mismatch(
                    cmd.t,
                    self.joint_names[j],
                    float(cmd.qdot[j]),
                    float(ref[j]),
                    float(abs(ref[j] - cmd.qdot[j])),
                    tried,
                )
            )
        return rep


def _pose_errors(ctrl: Controller, constraint: str) -> tuple[float, float]:
    """(position [m], rotation [rad]) distance between a constraint's effector and target."""
    eff, tgt = ctrl.poses(constraint)
    if tgt is None:
        return math.nan, math.nan
    pe = float(np.linalg.norm(tgt[:3, 3] - eff[:3, 3]))
    re = float(np.linalg.norm(spatial.so3_log(tgt[:3, :3] @ eff[:3, :3].T)))
    return pe, re


# ---------------------------------------------------------------------------------------------
# Metrics and plots


def _intervals(mask: NDArray[np.bool_]) -> int:
    """Number of runs of True in a boolean array."""
    if mask.size == 0:
        return 0
    m = mask.astype(np.int8)
    return int(m[0] + np.count_nonzero(np.diff(m) == 1))


def replay_metrics(res: ReplayResult) -> dict[str, Any]:
    """Plain numbers about a replay (active steps only where it matters)."""
    active = np.array([s == "active" for s in res.status], dtype=bool)
    dur = float(res.t[-1] - res.t[0]) if res.t.size > 1 else 0.0
    out: dict[str, Any] = {
        "steps": int(res.t.size),
        "duration_s": dur,
        "step_rate_hz": (res.t.size - 1) / dur if dur > 0 else 0.0,
        "status_counts": {s: res.status.count(s) for s in sorted(set(res.status))},
        "inputs": dict(res.inputs),
        "rejected_inputs": res.rejections,
        "parameter_changes": len(res.parameter_changes),
    }
    if active.any():
        pe = res.position_error[active]
        pe = pe[np.isfinite(pe)]
        ratio = np.abs(res.recomputed[active]) / res.velocity_limits
        sig = res.sigma_min[active]
        out.update(
            position_error_rms_m=float(np.sqrt(np.mean(pe**2))) if pe.size else math.nan,
            position_error_max_m=float(np.max(pe)) if pe.size else math.nan,
            max_joint_speed_rad_s=float(np.max(np.abs(res.recomputed[active]))),
            max_joint_speed_ratio=float(np.max(ratio)),
            velocity_limit_hits=int(np.count_nonzero(np.any(ratio >= 1.0 - 1e-9, axis=1))),
            locked_steps=int(np.count_nonzero(res.locked[active])),
            sigma_min_min=float(np.min(sig)),
            singularity_events=_intervals(sig < res.damping_epsilon[active]),
        )
    rec = np.all(np.isfinite(res.recorded), axis=1)
    if rec.any():
        out["max_recorded_joint_speed_rad_s"] = float(np.max(np.abs(res.recorded[rec])))
    return out


def write_replay_plots(res: ReplayResult, out: str | Path) -> list[Path]:
    """PNG plots of a replay (matplotlib Agg): tracking error, joint velocities, sigma_min."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    t = res.t - (res.t[0] if res.t.size else 0.0)
    paths = []

    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(t, 1e3 * res.position_error, lw=0.8)
    ax.set(xlabel="time [s]", ylabel="position error [mm]", title="replay: tracking error")
    ax.grid(True, alpha=0.3)
    paths.append(folder / "replay_tracking_error.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 4))
    for j, name in enumerate(res.joint_names):
        line = ax.plot(t, res.recomputed[:, j], lw=0.8, label=name)[0]
        if np.isfinite(res.recorded[:, j]).any():
            ax.plot(t, res.recorded[:, j], ".", ms=1.5, color=line.get_color())
    ax.set(
        xlabel="time [s]",
        ylabel="joint velocity [rad/s]",
        title="replay: recomputed (lines) and recorded (dots) commands",
    )
    ax.legend(fontsize=7, ncol=4)
    ax.grid(True, alpha=0.3)
    paths.append(folder / "replay_joint_velocities.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(t, res.sigma_min, lw=0.8, label="sigma_min")
    ax.plot(t, res.damping_epsilon, "--", lw=0.8, label="damping_epsilon")
    ax.set(xlabel="time [s]", ylabel="smallest singular value", title="replay: sigma_min")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    paths.append(folder / "replay_sigma_min.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=90)
    plt.close(fig)
    return paths


# ---------------------------------------------------------------------------------------------
# Online replay (rclpy, imported here only)


def fetch_node_parameters(
    node: Any, target: str = "/itasc_node", timeout: float = 5.0
) -> dict[str, Any]:
    """All parameters of a running node, flat (``constraints.ee.gain``), via its services.

    Args:
        node: an rclpy node that is being spun by an executor in another thread.
        target: fully qualified name of the node.
        timeout: seconds to wait for the services.

    Raises:
        ReplayError: the services do not answer.
    """
    from rcl_interfaces.srv import GetParameters, ListParameters

    target = "/" + target.lstrip("/")
    lst = node.create_client(ListParameters, f"{target}/list_parameters")
    get = node.create_client(GetParameters, f"{target}/get_parameters")
    try:
        if not (
            lst.wait_for_service(timeout_sec=timeout) and get.wait_for_service(timeout_sec=timeout)
        ):
            raise ReplayError(f"the parameter services of {target} do not answer")
        fut = lst.call_async(ListParameters.Request(depth=0))
        deadline = time.monotonic() + timeout
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not fut.done() or fut.result() is None:
            raise ReplayError(f"{target}/list_parameters timed out")
        names = list(fut.result().result.names)

        def call(request_names: list[str]) -> list[Any]:
            fut2 = get.call_async(GetParameters.Request(names=request_names))
            while not fut2.done() and time.monotonic() < deadline:
                time.sleep(0.005)
            if not fut2.done() or fut2.result() is None:
                raise ReplayError(f"{target}/get_parameters timed out")
            return [_parameter_value(v) for v in fut2.result().values]

        values = call(names)
        if len(values) == len(names):
            return dict(zip(names, values, strict=True))
        # rclpy answers nothing at all when one parameter is uninitialised (an empty array
        # declared by type): ask one by one and leave those out.
        out: dict[str, Any] = {}
        for name in names:
            one = call([name])
            if one:
                out[name] = one[0]
        return out
    finally:
        node.destroy_client(lst)
        node.destroy_client(get)


def _restamp(msg: Any, offset_ns: int) -> None:
    """Shift a typestore message's header stamp by ``offset_ns`` (zero stamps stay zero)."""
    h = getattr(msg, "header", None)
    if h is None or (h.stamp.sec == 0 and h.stamp.nanosec == 0):
        return
    t = h.stamp.sec * 1_000_000_000 + h.stamp.nanosec + offset_ns
    h.stamp.sec, h.stamp.nanosec = divmod(max(t, 0), 1_000_000_000)


def replay_online(
    bag: str | Path,
    out_bag: str | Path,
    setup: NodeSetup,
    storage: Storage = "mcap",
    speed: float = 1.0,
    wait: float = 15.0,
    drain: float = 0.5,
    log: Any = print,
) -> dict[str, int]:
    """Republish a bag's joint states and targets into a running node; record its commands.

    The node's live parameter changes recorded in the bag (``/parameter_events``) are made
    again with its SetParameters service at the same times.

    Args:
        bag: input bag.
        out_bag: the new bag (inputs as republished, the node's commands, parameter events and
            a snapshot of the node's parameters).
        setup: topics and types (:func:`load_setup`).
        storage: 'mcap' or 'sqlite3' for ``out_bag``.
        speed: playback rate factor (1 = the bag's timing).
        wait: seconds to wait for the node to subscribe and publish.
        drain: seconds to keep recording after the last message.
        log: where progress lines go.

    Returns:
        Topic -> messages written to ``out_bag``.

    Raises:
        ReplayError: the node does not appear within ``wait``.
    """
    import threading

    import rclpy
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from rcl_interfaces.srv import SetParameters
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState

    from itasc_ros.tools.bagio import default_typestore
    from itasc_ros.tools.record import Recorder

    if speed <= 0.0:
        raise ReplayError(f"speed must be > 0, got {speed}")
    ts = default_typestore()
    topics = setup.input_topics
    fq = "/" + setup.node_name.lstrip("/")
    messages = [
        m
        for m in read_bag(bag, [*topics, PARAMETER_EVENTS_TOPIC])
        if m[0] != PARAMETER_EVENTS_TOPIC
        or (m[2].node == fq and any(is_live_parameter(p.name) for p in m[2].changed_parameters))
    ]
    if not messages:
        raise ReplayError(f"bag {str(bag)!r} has no messages on {topics}")
    classes: dict[str, Any] = {setup.joint_topic: JointState}
    classes.update({t: PoseStamped for t in setup.pose_topics.values()})
    classes.update({t: TwistStamped for t in setup.twist_topics.values()})
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("itasc_replay", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.02)

    thread = threading.Thread(target=spin, daemon=True)
    qos = QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE
    )
    pubs = {t: node.create_publisher(classes[t], t, qos) for t in topics}
    set_params: Any = node.create_client(SetParameters, f"{fq}/set_parameters")
    calls: list[Any] = []
    try:
        with BagWriter(out_bag, storage) as writer:
            record: dict[str, str | None] = {t: None for t in topics}
            record[setup.command_topic] = None
            record[PARAMETER_EVENTS_TOPIC] = "rcl_interfaces/msg/ParameterEvent"
            recorder = Recorder(node, writer, record)
            thread.start()
            deadline = time.monotonic() + wait
            needed = [setup.joint_topic, *setup.pose_topics.values()]
            while any(pubs[t].get_subscription_count() < 2 for t in needed) or (
                setup.command_topic not in recorder.subscribed
            ):
                if time.monotonic() > deadline:
                    raise ReplayError(
                        f"node {fq} did not appear within {wait} s (subscribed: "
                        f"{sorted(recorder.subscribed)}; subscribers of "
                        f"{setup.joint_topic}: {pubs[setup.joint_topic].get_subscription_count()})"
                    )
                time.sleep(0.05)
            params = fetch_node_parameters(node, fq, timeout=wait)
            write_parameters_snapshot(writer, node.get_clock().now().nanoseconds, params, fq)
            t_bag0 = messages[0][1]
            now0 = node.get_clock().now().nanoseconds
            wall0 = time.monotonic()
            offset = now0 - t_bag0
            log(
                f"itasc-replay --online: {len(messages)} messages into {fq} over "
                f"{(messages[-1][1] - t_bag0) * 1e-9 / speed:.2f} s"
            )
            for topic, t_ns, msg in messages:
                due = wall0 + (t_ns - t_bag0) * 1e-9 / speed
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if topic == PARAMETER_EVENTS_TOPIC:
                    live = [
                        Parameter(p.name, value=_parameter_value(p.value)).to_parameter_msg()
                        for p in msg.changed_parameters
                        if is_live_parameter(p.name)
                    ]
                    calls.append(set_params.call_async(SetParameters.Request(parameters=live)))
                    continue
                _restamp(msg, offset)
                pubs[topic].publish(ts.serialize_cdr(msg, msg.__msgtype__).tobytes())
            time.sleep(drain)
            refused = [
                r.reason
                for c in calls
                if c.done() and c.result() is not None
                for r in c.result().results
                if not r.successful
            ]
            if refused or not all(c.done() for c in calls):
                log(f"itasc-replay --online: parameter changes refused or unanswered: {refused}")
            recorder.close()
            counts = writer.counts
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=2.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return counts


# ---------------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="itasc-replay",
        description="Replay a recorded bag through the iTaSC controller: offline "
        "(deterministic, no ROS graph) or --online into a running node.",
    )
    p.add_argument("bag", help="rosbag2 directory (MCAP or sqlite3)")
    p.add_argument(
        "--params-file",
        help=f"ROS 2 params file of the node (default: the snapshot in the bag on {PARAMS_TOPIC})",
    )
    p.add_argument("--urdf", help="URDF file or bundled robot name (default: from the params)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a parameter, e.g. constraints.ee.gain=40 (repeatable)",
    )
    p.add_argument("--node-name", default="itasc_node", help="the recorded node's name")
    p.add_argument(
        "--at",
        choices=["commands", "rate"],
        default=None,
        help="step at each recorded command (default when the bag has commands) "
        "or at control_rate",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="check the recorded commands against the controller; exit 1 on a mismatch",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help="largest accepted |recorded - recomputed| per joint [rad/s] (default %(default)g)",
    )
    p.add_argument(
        "--window",
        type=float,
        default=DEFAULT_WINDOW,
        help="candidate inputs within this many seconds of a command [s] (default %(default)g)",
    )
    p.add_argument(
        "--max-candidates",
        type=int,
        default=DEFAULT_MAX_CANDIDATES,
        help="input combinations tried per command at most (default %(default)d)",
    )
    p.add_argument(
        "--max-mismatches",
        type=int,
        default=20,
        help="stop comparing after this many mismatches (default %(default)d)",
    )
    p.add_argument("--out", help="folder for plots (and the --online bag)")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument(
        "--json", action="store_true", help="print the metrics as one JSON object on the last line"
    )
    p.add_argument(
        "--online",
        action="store_true",
        help="republish into a running node over DDS and record its commands",
    )
    p.add_argument(
        "--online-out",
        help="bag to record with --online (default: <out>/online_bag or <bag>_online)",
    )
    p.add_argument(
        "--storage",
        choices=["mcap", "sqlite3"],
        default="mcap",
        help="storage of the --online bag",
    )
    p.add_argument("--speed", type=float, default=1.0, help="--online playback rate factor")
    p.add_argument(
        "--wait", type=float, default=15.0, help="--online: seconds to wait for the node"
    )
    return p


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (1: mismatch, 2: usage error)."""
    args = _parser().parse_args(argv)
    try:
        overrides = dict(parse_override(s) for s in args.set)
        setup = load_setup(args.bag, args.params_file, args.urdf, overrides, args.node_name)
        bag = Path(args.bag)
        summary: dict[str, Any] = {
            "bag": str(bag),
            "parameters": setup.params_source,
            "urdf": setup.urdf_source,
        }
        if args.online:
            out_bag = (
                Path(args.online_out)
                if args.online_out
                else (
                    Path(args.out) / "online_bag"
                    if args.out
                    else bag.with_name(bag.name + "_online")
                )
            )
            counts = replay_online(bag, out_bag, setup, args.storage, args.speed, args.wait)
            print(
                f"itasc-replay: recorded {out_bag}: "
                + ", ".join(f"{t} {n}" for t, n in counts.items())
            )
            summary["online_bag"] = str(out_bag)
            summary["online_counts"] = counts
            bag = out_bag
            setup = load_setup(bag, args.params_file, args.urdf, overrides, args.node_name)
        replayer = Replayer(bag, setup)
        at = args.at or (
            "commands" if any(isinstance(e, _Command) for e in replayer.events) else "rate"
        )
        result = replayer.run(at)
        metrics = replay_metrics(result)
        summary.update(metrics)
        print(
            f"itasc-replay {bag} ({at}): parameters from {setup.params_source}; "
            f"URDF {setup.urdf_source}"
        )
        for k, v in metrics.items():
            print(f"  {k:32s} {_fmt(v)}")
        for t, ch in result.parameter_changes:
            print(f"  parameter change at {t:.3f} s: {ch}")
        for r in result.rejection_reasons:
            print(f"  rejected input: {r}")
        status = 0
        if args.compare:
            report = replayer.compare(
                args.tolerance, args.window, args.max_candidates, args.max_mismatches
            )
            print(report.text())
            summary["compare"] = report.to_dict()
            status = 0 if report.ok else 1
        if args.out and not args.no_plots:
            paths = write_replay_plots(result, args.out)
            print("  plots: " + ", ".join(str(p) for p in paths))
            summary["plots"] = [str(p) for p in paths]
    except (ItascError, OSError) as exc:
        print(f"itasc-replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, default=_fmt))
    return status


if __name__ == "__main__":
    sys.exit(main())
