"""``itasc-replay``: replay a recorded bag through the controller, offline or online.

Offline (the default) is deterministic and needs no ROS graph (this path never imports rclpy). A
bag that holds the node's journal (``~/journal``, recorded by ``itasc-record`` and ``itasc-demo``
by default) is played back exactly: every input each tick consumed, with the node's own reception
times and header stamps, goes through the same :class:`~itasc_ros.core.Controller` calls in the
same order (:mod:`itasc_ros.core.control.playback`), with the configuration of each revision
(``~/parameters``). A bag without a journal is replayed in bag order (the recorder's order, not the
node's): figures, no exact comparison.

It prints metrics (tracking error, joint speeds, smallest singular value, limit hits) and
writes plots with ``--out``.

Parameters come from, in this order of precedence: ``--set KEY=VALUE`` (ROS names such as
``constraints.ee.gain=40``), ``--params-file`` (a ROS 2 params file such as config/panda.yaml),
the node's ``~/parameters`` in the bag, the snapshot on
:data:`~itasc_ros.tools.replay_setup.PARAMS_TOPIC`. The URDF:
``--urdf`` (a file or a bundled robot name), else the parameters' ``robot_description`` or
``urdf_file`` (a bundled URDF is found by its file name when the path does not exist here).

``--compare``
-------------
Every command on the command topic is matched, in order and value for value, with the command
a journal TICK says was published, and that tick's command is recomputed from the journaled
inputs. Identical code and inputs give identical commands, so the default tolerance is
:data:`DEFAULT_TOLERANCE` (1e-12 rad/s; the difference is 0.0 when nothing changed). Commands
recorded before the journal's first covered command or after its last (a recording started
before the node's journal, or stopped before the node) are reported, not compared; a command
within the journal's span that it does not cover (a lost message) fails the check, as does
any difference above the tolerance or a tick whose status differs.
A bag without a journal cannot be compared exactly: the report says so and claims nothing.
``--compare`` also reports the tracking error (effector to target, RMS and max [mm]) of the
recorded run and of the replayed one (online: the fresh node's) over the ticks active in both,
and fails when the RMS differ by more than ``--tracking-tolerance`` [mm].

What-if (``--set NAME=VALUE`` without ``--compare``, on a bag with a journal): the recorded
targets, times and events drive an ideal robot (it follows the commands exactly) with the
changed parameters; ``--out`` plots the recorded run against the re-computed one (tracking
error, joint velocities), to tune on a bag rather than on the robot.

Online (``--online``): the bag's joint states and targets are republished into a running node
over DDS with the bag's timing (header stamps shifted to now, intervals kept) while the node's
commands and journal are recorded into a new bag (``--online-out``), which ``--compare`` then
checks offline like any other bag. This path uses rclpy; setting a local DDS environment is the
caller's job (the tests do).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from numpy.typing import NDArray

from itasc_ros.cli import (
    CliParser,
    UsageError,
    closest,
    existing_path,
    positive_float,
    usage_status,
    writable_dir,
)
from itasc_ros.core import REGISTRY, Controller, KinematicTree
from itasc_ros.core.control.config import LIVE_KEYS
from itasc_ros.core.control.journal import JournalError, decode, urdf_tag
from itasc_ros.core.control.model_manager import urdf_digest
from itasc_ros.core.control.playback import ConfigHistory, Playback, Tick, pose_errors
from itasc_ros.core.errors import ConfigError, InputError, ItascError
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.bagio import bag_summary, read_bag
from itasc_ros.tools.replay_result import ReplayResult
from itasc_ros.tools.replay_setup import (
    NODE_DEFAULTS,
    PARAMETER_EVENTS_TOPIC,
    NodeSetup,
    ReplayError,
    bag_parameters,
    is_live_parameter,
    load_setup,
    node_parameters,
    parameter_value,
)

Array = NDArray[np.float64]

#: Default comparison tolerance [rad/s] (see the module docstring).
DEFAULT_TOLERANCE = 1e-12
#: Default largest difference of the RMS tracking error, recorded vs replayed run [mm]. Online,
#: the node ticks at other moments between the same inputs: while an error decays at K e per
#: second, a tick period earlier or later changes it by up to K e / control_rate (measured:
#: 0.24 mm apart on a 50 mm step, RMS 12.6 mm).
DEFAULT_TRACKING_TOLERANCE_MM = 2.0

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


# ---------------------------------------------------------------------------------------------
# Bag contents


@dataclass
class _JointState:
    t: float
    names: list[str]
    pos: Array
    src: float | None


@dataclass
class _Pose:
    t: float
    name: str
    frame: str
    pos: Array
    quat: Array
    src: float | None


@dataclass
class _Twist:
    t: float
    name: str
    frame: str
    twist: Array  # (6,)
    src: float | None = None


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
                    changes[prm.name] = parameter_value(prm.value)
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
# Replay in bag order


class Replayer:
    """Replay of a bag without a journal, in bag order, through a :class:`Controller`.

    The recorder's order of the inputs is not the node's, so its commands differ from the
    recorded ones; the figures (tracking error, singular values) are those of the bag order.

    Args:
        bag: bag directory or a single .mcap / .db3 file.
        setup: the node's parameters, URDF and topics (:func:`load_setup`).

    Raises:
        ReplayError: the bag lacks inputs. ConfigError: the configuration does not fit the URDF.
    """

    def __init__(self, bag: str | Path, setup: NodeSetup) -> None:
        self.bag = Path(bag)
        self.setup = setup
        self.tree = setup.tree()
        self.controller = Controller(self.tree, setup.config)
        self.joint_names = list(self.controller.joint_names)
        self.events = load_events(bag, setup, self.joint_names)
        self.result: ReplayResult | None = None

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
        for ev in events:
            try:
                if isinstance(ev, _JointState):
                    counts["joint_states"] += 1
                    ctrl.set_joint_state(ev.names, ev.pos, ev.t, ev.src)
                elif isinstance(ev, _Pose):
                    counts["target_poses"] += 1
                    ctrl.set_target(ev.name, ev.frame, ev.pos, ev.quat, ev.t, ev.src)
                elif isinstance(ev, _Twist):
                    counts["target_twists"] += 1
                    ctrl.set_target_twist(ev.name, ev.frame, ev.twist, ev.t)
                elif isinstance(ev, _ParamChange):
                    counts["parameter_changes"] += 1
                    ignored.extend(ev.ignored)
                    if ev.changes:
                        ctrl.update_parameters(**ev.changes)
                        changes.append((ev.t, dict(ev.changes)))
                else:
                    if ev.problem != "tick":
                        counts["commands"] += 1
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
                        pe, re = pose_errors(ctrl, first_pose)
                    rows["perr"].append(pe)
                    rows["rerr"].append(re)
            except InputError as exc:
                rejections += 1
                if len(reasons) < 5:
                    reasons.append(f"t={ev.t:.6f} s: {exc}")
            except ConfigError as exc:
                ignored.append(f"{ev.changes if isinstance(ev, _ParamChange) else ev}: {exc}")
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


# ---------------------------------------------------------------------------------------------
# Exact replay: the node's journal


def journal_messages(bag: str | Path, setup: NodeSetup) -> list[Array]:
    """The data of every journal message in the bag, in bag order (empty: no journal)."""
    return [
        np.asarray(msg.data, dtype=float) for _t, _ns, msg in read_bag(bag, [setup.journal_topic])
    ]


def live_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The live parameters that differ between two parameter sets (``update_parameters``)."""
    return {k: v for k, v in after.items() if is_live_parameter(k) and before.get(k, None) != v}


def config_history(
    bag: str | Path, setup: NodeSetup, overrides: Mapping[str, Any] | None = None
) -> ConfigHistory:
    """The configurations of the bag's parameter revisions and the URDFs at hand.

    Revisions come from the node's ``~/parameters`` messages; without them the setup's
    parameters are revision 0 and the only one. ``overrides`` must be live parameters.

    Raises:
        ReplayError: an override that is not live, or parameters that do not give a config.
    """
    extra = dict(overrides or {})
    not_live = sorted(k for k in extra if not is_live_parameter(k))
    if not_live:
        raise ReplayError(
            f"{', '.join(not_live)} cannot change in a replay of the journal (they change "
            "the node's structure); live parameters are: "
            + ", ".join(sorted(LIVE_KEYS))
            + ", constraints.<name>.<live field>"
        )
    revisions = node_parameters(bag, setup.node_name)
    setup_params = {k: v for k, v in setup.params.items() if k not in extra}
    if not revisions:
        revisions = {0: setup_params}
    first = min(revisions)
    base = {**NODE_DEFAULTS, **revisions[first]}
    changes: dict[int, dict[str, Any]] = {}
    for r in sorted(revisions)[1:]:
        if r - 1 in revisions:
            changes[r] = live_changes(revisions[r - 1], revisions[r])
    trees: dict[float, Any] = {}
    for params in revisions.values():
        xml = str(params.get("robot_description", "") or "")
        if xml.strip():
            trees[urdf_tag(urdf_digest(xml))] = _tree_maker(xml)
    for _topic, _t, msg in read_bag(bag, ["/robot_description"]):  # a URDF from the topic
        trees.setdefault(urdf_tag(urdf_digest(msg.data)), _tree_maker(msg.data))
    trees.setdefault(urdf_tag(urdf_digest(setup.urdf_xml)), _tree_maker(setup.urdf_xml))
    try:
        config = config_from_parameters(base)
    except ConfigError as exc:
        raise ReplayError(
            f"the recorded parameters (revision {first}) are invalid: {exc}"
        ) from exc
    return ConfigHistory(first, config, changes, trees, extra)


def _tree_maker(xml: str) -> Any:
    cache: list[KinematicTree] = []

    def make() -> KinematicTree:
        if not cache:
            cache.append(KinematicTree.from_urdf(xml))
        return cache[0]

    return make


def play_journal(
    bag: str | Path,
    setup: NodeSetup,
    overrides: Mapping[str, Any] | None = None,
    what_if: bool = False,
    any_urdf: bool = False,
) -> Playback | None:
    """Play the bag's journal back (None when the bag has none).

    Args:
        bag: the bag.
        setup: topics, parameters and URDF (:func:`load_setup`).
        overrides: live parameters changed on top of every recorded revision.
        what_if: an ideal robot follows the recomputed commands (see the module docstring).
        any_urdf: use the setup's URDF whatever URDF the journal names (``--urdf`` given).

    Raises:
        ReplayError: a malformed journal, a recorded revision or URDF that is missing.
    """
    messages = journal_messages(bag, setup)
    if not messages:
        return None
    history = config_history(bag, setup, overrides)
    if any_urdf:
        history.trees = {0.0: _tree_maker(setup.urdf_xml)}
    first = next(iter(setup.pose_topics), None)
    playback = Playback(history, what_if, first)
    try:
        for data in messages:
            msg = decode(data)
            playback.feed(msg.sequence, msg.records)
    except (JournalError, ItascError) as exc:
        raise ReplayError(f"journal of {str(bag)!r}: {exc}") from exc
    return playback


def ticks_result(playback: Playback, joint_names: list[str]) -> ReplayResult:
    """The played-back ticks as a :class:`ReplayResult` (for metrics and plots)."""
    ticks = playback.ticks
    ctrl = playback.controller
    n = len(joint_names)
    k = len(ticks)
    eps = {r: playback.history.config(r).damping_epsilon for r in {t.revision for t in ticks}}

    def col(name: str) -> Array:
        return np.array([getattr(t, name) for t in ticks], dtype=float)

    return ReplayResult(
        joint_names=joint_names,
        t=col("t"),
        recorded=np.array([t.recorded for t in ticks], dtype=float).reshape(k, n),
        recomputed=np.array([t.recomputed for t in ticks], dtype=float).reshape(k, n),
        status=[t.replayed_status for t in ticks],
        sigma_min=col("sigma_min"),
        damping=col("damping"),
        velocity_scale=col("velocity_scale"),
        locked=np.array([t.locked for t in ticks], dtype=np.int64),
        position_error=col("position_error"),
        rotation_error=col("rotation_error"),
        q=np.array([t.q for t in ticks], dtype=float).reshape(k, n),
        velocity_limits=ctrl.velocity_limits if ctrl is not None else np.full(n, np.inf),
        damping_epsilon=np.array([eps[t.revision] for t in ticks], dtype=float),
        rejections=playback.log.rejected,
        rejection_reasons=list(playback.log.problems[:5]),
        parameter_changes=list(playback.log.parameter_changes),
        inputs={"journal_ticks": k, "journal_snapshots": playback.log.snapshots},
    )


# ---------------------------------------------------------------------------------------------
# Compare


@dataclass
class Mismatch:
    """A recorded command the replay does not reproduce."""

    t: float
    joint: str
    recorded: float
    recomputed: float
    diff: float
    why: str = ""

    def text(self) -> str:
        """One line for the report."""
        return (
            f"t={self.t:.6f} s: {self.joint} recorded {self.recorded:+.15f} rad/s, recomputed "
            f"{self.recomputed:+.15f} rad/s (|diff| {self.diff:.3e}){self.why}"
        )


@dataclass
class CompareReport:
    """Outcome of :func:`compare_commands`.

    Attributes:
        exact: the bag has a journal (otherwise nothing is compared).
        commands: command messages on the command topic.
        compared: those matched with a journal tick and recomputed.
        max_abs_diff: largest |recorded - recomputed| over the compared commands [rad/s].
        mismatches: compared commands above the tolerance, ticks whose status differs.
        not_covered: commands within the journal's span without a tick (lost messages).
        outside: commands before the journal's first covered command or after its last (the
            recording started before the node's journal, or stopped before its last message).
        matched: per command, the index of its tick in the playback (None: not covered).
    """

    tolerance: float
    exact: bool
    commands: int = 0
    compared: int = 0
    max_abs_diff: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)
    not_covered: int = 0
    outside: int = 0
    unreadable: int = 0
    status_differences: int = 0
    lost_messages: int = 0
    state_mismatches: int = 0
    problems: list[str] = field(default_factory=list)
    matched: list[int | None] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every command of the journal's span was compared and reproduced."""
        return (
            self.exact
            and self.compared > 0
            and self.compared == self.commands - self.outside - self.unreadable
            and not self.mismatches
            and self.state_mismatches == 0
            and self.lost_messages == 0
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {
            "ok": self.ok,
            "exact": self.exact,
            "tolerance_rad_s": self.tolerance,
            "commands": self.commands,
            "compared": self.compared,
            "max_abs_diff": self.max_abs_diff,
            "mismatches": len(self.mismatches),
            "not_covered": self.not_covered,
            "outside_journal": self.outside,
            "unreadable": self.unreadable,
            "status_differences": self.status_differences,
            "lost_journal_messages": self.lost_messages,
            "state_mismatches": self.state_mismatches,
        }

    def text(self) -> str:
        """A human-readable report."""
        if not self.exact:
            return (
                f"compare: the bag has no journal of the node: its {self.commands} commands "
                "cannot be compared exactly (replayed in bag order; no pass/fail)"
            )
        lines = [
            f"compare: {self.commands} recorded commands, {self.compared} compared, tolerance "
            f"{self.tolerance:g} rad/s",
            f"  largest |recorded - recomputed|: {self.max_abs_diff:.3e} rad/s",
        ]
        for label, value in (
            ("commands within the journal's span that it does not cover", self.not_covered),
            ("commands before or after the journal (not compared)", self.outside),
            ("unreadable command messages", self.unreadable),
            ("journal messages lost", self.lost_messages),
            ("snapshots that differ from the replayed state", self.state_mismatches),
            ("ticks whose status differs", self.status_differences),
        ):
            if value:
                lines.append(f"  {label}: {value}")
        if self.mismatches:
            lines.append(f"  MISMATCH: {len(self.mismatches)} commands not reproduced")
            lines.extend("    " + m.text() for m in self.mismatches[:10])
        lines.extend("  " + p for p in self.problems[:5])
        if self.commands == 0:
            lines.append("  the bag has no commands to compare")
        lines.append("  result: " + ("OK" if self.ok else "FAILED"))
        return "\n".join(lines)


def bag_commands(bag: str | Path, setup: NodeSetup, joints: Sequence[str]) -> list[_Command]:
    """The command messages of the bag, in bag order."""
    out = []
    for _topic, t_ns, msg in read_bag(bag, [setup.command_topic]):
        try:
            out.append(_Command(bag_seconds(t_ns), _command_velocities(msg, joints)))
        except ValueError as exc:
            out.append(_Command(bag_seconds(t_ns), None, str(exc)))
    return out


def align(commands: Sequence[_Command], ticks: Sequence[Tick]) -> list[int | None]:
    """Per command, the index of the published tick with exactly its values, in order.

    Both streams keep their order (reliable DDS), so each command is searched after the
    previous match; a command matching no published tick is not covered (None).
    """
    published = [i for i, t in enumerate(ticks) if t.published]
    out: list[int | None] = [None] * len(commands)
    j = 0
    for c, cmd in enumerate(commands):
        if cmd.qdot is None:
            continue
        for k in range(j, len(published)):
            if np.array_equal(ticks[published[k]].recorded, cmd.qdot):
                out[c] = published[k]
                j = k + 1
                break
    return out


def compare_commands(
    bag: str | Path,
    setup: NodeSetup,
    playback: Playback | None,
    joints: Sequence[str],
    tolerance: float = DEFAULT_TOLERANCE,
) -> CompareReport:
    """Compare every recorded command with the played-back journal (see the module docstring)."""
    commands = bag_commands(bag, setup, joints)
    rep = CompareReport(tolerance=tolerance, exact=playback is not None, commands=len(commands))
    rep.unreadable = sum(c.qdot is None for c in commands)
    if playback is None:
        return rep
    ticks = playback.ticks
    rep.matched = align(commands, ticks)
    rep.lost_messages = playback.log.lost_messages
    rep.state_mismatches = playback.log.state_mismatches
    rep.problems = list(playback.log.problems)
    covered = [c for c, i in enumerate(rep.matched) if i is not None]
    first, last = (covered[0], covered[-1]) if covered else (len(commands), -1)
    for c, (cmd, i) in enumerate(zip(commands, rep.matched, strict=True)):
        if i is None:
            if cmd.qdot is not None and first < c < last:
                rep.not_covered += 1
            elif cmd.qdot is not None:
                rep.outside += 1
            continue
        rep.compared += 1
        tick = ticks[i]
        rep.max_abs_diff = max(rep.max_abs_diff, tick.diff)
        if tick.diff > tolerance:
            j = int(np.argmax(np.abs(tick.recorded - tick.recomputed)))
            rep.mismatches.append(
                Mismatch(tick.t, joints[j], tick.recorded[j], tick.recomputed[j], tick.diff)
            )
    for t in ticks:
        if (t.status, t.published) != (t.replayed_status, t.replayed_published):
            rep.status_differences += 1
            if len(rep.mismatches) < 1000:
                why = f" (status {t.status} -> {t.replayed_status})"
                rep.mismatches.append(Mismatch(t.t, "-", 0.0, 0.0, t.diff, why))
    return rep


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


def _tick_columns(playback: Playback, replayed: bool) -> tuple[Array, list[str], Array]:
    ticks = [t for t in playback.ticks if t.kind == "tick"]
    t = np.array([x.t for x in ticks], dtype=float)
    status = [x.replayed_status if replayed else x.status for x in ticks]
    pe = np.array([x.position_error for x in ticks], dtype=float)
    return t, status, pe


def _figures(e_m: Array) -> dict[str, float]:
    e = 1e3 * e_m
    return {
        "rms_mm": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
        "max_mm": float(np.max(e)) if e.size else math.nan,
        "ticks": int(e.size),
    }


def tracking_pair(
    recorded: Playback,
    replayed: Playback,
    offset: float = 0.0,
    replayed_status: bool = False,
) -> tuple[dict[str, float], dict[str, float]]:
    """Tracking error of two runs of the same inputs, over the ticks active in both.

    The error is the first target constraint's effector to its target (position). A tick of
    ``recorded`` at time t is paired with the tick of ``replayed`` nearest to t + ``offset``
    (within one tick period), so that both figures cover the same moments.

    Args:
        recorded: the recorded run's journal played back.
        replayed: the replayed run's (the same playback offline, the new bag's online).
        offset: replayed time minus recorded time of the same input [s].
        replayed_status: pair on the replay's statuses of ``replayed`` (offline) rather than
            the recorded ones.

    Returns:
        (recorded, replayed) figures: ``rms_mm``, ``max_mm`` [mm] and ``ticks``.
    """
    rt, rs, re_ = _tick_columns(recorded, False)
    ot, os_, oe = _tick_columns(replayed, replayed_status)
    if rt.size < 2 or ot.size == 0:
        return _figures(np.zeros(0)), _figures(np.zeros(0))
    period = float(np.median(np.diff(rt)))
    j = np.clip(np.searchsorted(ot, rt + offset), 1, max(ot.size - 1, 1))
    j = np.where(np.abs(ot[j - 1] - rt - offset) <= np.abs(ot[j] - rt - offset), j - 1, j)
    j = np.minimum(j, ot.size - 1)
    near = np.abs(ot[j] - rt - offset) <= period
    both = np.array(
        [rs[i] == "active" and os_[j[i]] == "active" for i in range(rt.size)], dtype=bool
    )
    keep = near & both & np.isfinite(re_) & np.isfinite(oe[j])
    return _figures(re_[keep]), _figures(oe[j][keep])


def stamp_offset(recorded_bag: Path, replayed_bag: Path, setup: NodeSetup) -> float:
    """Replayed minus recorded header stamp of the first joint state [s] (online: the shift)."""
    firsts = []
    for bag in (recorded_bag, replayed_bag):
        for _topic, _t, msg in read_bag(bag, [setup.joint_topic]):
            firsts.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
            break
    return firsts[1] - firsts[0] if len(firsts) == 2 else 0.0


@dataclass
class TrackingComparison:
    """The tracking error of the recorded run beside the replayed run's.

    Attributes:
        recorded, replayed: :func:`tracking_of` of each run.
        tolerance_mm: largest accepted difference of the RMS errors [mm].
        labels: what each run is (for the report).
        recorded_active: the recording's active ticks (paired or not).
    """

    recorded: dict[str, float]
    replayed: dict[str, float]
    tolerance_mm: float
    labels: tuple[str, str] = ("the recording", "the replay")
    recorded_active: int = 0

    @property
    def diff_mm(self) -> float:
        """|RMS replayed - RMS recorded| [mm] (NaN when a run has no active tick)."""
        return abs(self.replayed["rms_mm"] - self.recorded["rms_mm"])

    @property
    def ok(self) -> bool:
        """Both runs track alike over the ticks active in both (none: nothing to compare)."""
        if self.recorded["ticks"] == 0:
            return self.recorded_active == 0  # the replayed run was never active with it
        return bool(self.diff_mm <= self.tolerance_mm)

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {
            "ok": self.ok,
            "recorded": dict(self.recorded),
            "replayed": dict(self.replayed),
            "rms_difference_mm": self.diff_mm,
            "recorded_active_ticks": self.recorded_active,
            "tolerance_mm": self.tolerance_mm,
        }

    def text(self) -> str:
        """The report: both runs' figures, the difference, the threshold and the result."""
        width = max(len(x) for x in self.labels) + 12
        lines = [
            "tracking error (first target's effector to its target, over the ticks active in "
            "both runs):"
        ]
        for name, label, f in (
            ("recorded", self.labels[0], self.recorded),
            ("replayed", self.labels[1], self.replayed),
        ):
            lines.append(
                f"  {f'{name} ({label})':<{width}} RMS {f['rms_mm']:9.3f} mm, max "
                f"{f['max_mm']:9.3f} mm ({f['ticks']} ticks)"
            )
        verdict = "OK" if self.ok else "FAILED: the runs do not track alike"
        lines.append(
            f"  RMS difference {self.diff_mm:.3f} mm (threshold {self.tolerance_mm:g} mm, "
            f"--tracking-tolerance): {verdict}"
        )
        return "\n".join(lines)


_SIDE_BY_SIDE = (  # (label, metric key, scale, unit)
    ("tracking error RMS", "position_error_rms_m", 1e3, "mm"),
    ("tracking error max", "position_error_max_m", 1e3, "mm"),
    ("peak joint speed", "max_joint_speed_rad_s", 1.0, "rad/s"),
    ("peak joint speed / limit", "max_joint_speed_ratio", 100.0, "%"),
    ("commands at a velocity limit", "velocity_limit_hits", 1.0, ""),
    ("smallest sigma_min", "sigma_min_min", 1.0, ""),
    ("singularity events", "singularity_events", 1.0, ""),
    ("steps with a locked joint", "locked_steps", 1.0, ""),
)


def side_by_side(a: ReplayResult, b: ReplayResult, label_a: str, label_b: str) -> str:
    """A table of two runs' figures (tracking error, peak speed, ...), one row each."""
    ma, mb = replay_metrics(a), replay_metrics(b)
    width = max(len(r[0]) for r in _SIDE_BY_SIDE) + 8
    col = max(len(label_a), 12)
    lines = [f"  {'':<{width}} {label_a:>{col}}   {label_b}"]
    for label, key, scale, unit in _SIDE_BY_SIDE:
        name = f"{label} [{unit}]" if unit else label
        cells = [
            f"{scale * float(m[key]):.4g}" if key in m and m[key] is not None else "n/a"
            for m in (ma, mb)
        ]
        lines.append(f"  {name:<{width}} {cells[0]:>{col}}   {cells[1]}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog="itasc-replay",
        description="Replay a recorded bag through the iTaSC controller: offline "
        "(exactly, from the node's journal; deterministic, no ROS graph) or --online into a "
        "running node.",
    )
    p.add_argument("bag", help="rosbag2 directory (MCAP or sqlite3)")
    p.add_argument(
        "--params-file",
        help="ROS 2 params file of the node (default: the node's parameters in the bag)",
    )
    p.add_argument("--urdf", help="URDF file or bundled robot name (default: from the params)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a live parameter, e.g. constraints.ee.gain=40 (repeatable); without "
        "--compare: a what-if replay on an ideal robot",
    )
    p.add_argument("--node-name", default="itasc_node", help="the recorded node's name")
    p.add_argument(
        "--at",
        choices=["commands", "rate"],
        default=None,
        help="bag without a journal: step at each recorded command (default when the bag has "
        "commands) or at control_rate",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="recompute every recorded command from the journal; exit 1 unless all agree",
    )
    p.add_argument(
        "--tolerance",
        type=positive_float,
        default=DEFAULT_TOLERANCE,
        help="largest accepted |recorded - recomputed| per joint [rad/s] (default %(default)g)",
    )
    p.add_argument(
        "--tracking-tolerance",
        type=positive_float,
        default=DEFAULT_TRACKING_TOLERANCE_MM,
        metavar="MM",
        help="--compare: largest accepted difference of the RMS tracking error between the "
        "recorded and the replayed run [mm] (default %(default)g)",
    )
    p.add_argument("--out", help="folder for plots (and the --online bag)")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument(
        "--json", action="store_true", help="print the results as one JSON object on the last line"
    )
    p.add_argument(
        "--online",
        action="store_true",
        help="republish into a running node over DDS and record its commands and journal",
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
    p.add_argument(
        "--speed", type=positive_float, default=1.0, help="--online playback rate factor"
    )
    p.add_argument(
        "--wait", type=positive_float, default=15.0, help="--online: seconds to wait for the node"
    )
    return p


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _online(args: argparse.Namespace, bag: Path, setup: NodeSetup) -> tuple[Path, dict[str, int]]:
    out_bag = (
        Path(args.online_out)
        if args.online_out
        else (Path(args.out) / "online_bag" if args.out else bag.with_name(bag.name + "_online"))
    )
    from itasc_ros.tools.replay_online import replay_online  # rclpy: only here

    counts = replay_online(bag, out_bag, setup, args.storage, args.speed, args.wait)
    print(f"itasc-replay: recorded {out_bag}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return out_bag, counts


def _replay(
    args: argparse.Namespace, bag: Path, setup: NodeSetup, overrides: dict[str, Any]
) -> tuple[ReplayResult, Playback | None, list[str]]:
    """The replay of the bag: its journal (exactly) or, without one, bag order."""
    what_if = bool(overrides) and not args.compare
    playback = play_journal(bag, setup, overrides, what_if, any_urdf=args.urdf is not None)
    if playback is not None:
        result = ticks_result(playback, setup_joints(setup, playback))
        changes = [f"parameter change at {t:.3f} s: {ch}" for t, ch in result.parameter_changes]
        return result, playback, changes
    replayer = Replayer(bag, setup)
    at = args.at or (
        "commands" if any(isinstance(e, _Command) for e in replayer.events) else "rate"
    )
    result = replayer.run(at)
    notes = [f"no journal in the bag: replayed in bag order ({at})"]
    notes += [f"parameter change at {t:.3f} s: {ch}" for t, ch in result.parameter_changes]
    return result, None, notes


def setup_joints(setup: NodeSetup, playback: Playback | None) -> list[str]:
    """The commanded joints (of the played-back controller, else of the setup's URDF)."""
    if playback is not None and playback.controller is not None:
        return list(playback.controller.joint_names)
    return list(Controller(setup.tree(), setup.config).joint_names)


def parameter_names(args: argparse.Namespace, bag: Path) -> set[str]:
    """The flat parameter names a ``--set`` may use (for "did you mean")."""
    if args.params_file:
        params = read_params_file(args.params_file, args.node_name)
    else:
        params = (bag_parameters(bag, args.node_name) or ({}, ""))[0]
    names = set(NODE_DEFAULTS) | set(params) | set(LIVE_KEYS)
    try:
        config = config_from_parameters({**NODE_DEFAULTS, **params})
    except ItascError:
        return names
    for c in config.constraints:
        fields = REGISTRY[c.type].FIELDS if c.type in REGISTRY else ()
        names |= {f"constraints.{c.name}.{f.name}" for f in fields}
    return names


def load_with_overrides(
    args: argparse.Namespace, bag: Path, overrides: dict[str, Any]
) -> NodeSetup:
    """:func:`load_setup` with ``--set``; a wrong name gets the closest valid one.

    Raises:
        UsageError: a parameter name or value that cannot be used.
    """
    try:
        return load_setup(bag, args.params_file, args.urdf, overrides, args.node_name)
    except ConfigError as exc:
        if not overrides:
            raise
        known = parameter_names(args, bag)
        for name in overrides:
            if name not in known:
                near = closest(name, known)
                hint = f"; did you mean {near!r}?" if near else ""
                raise UsageError(f"--set {name}: unknown parameter{hint} ({exc})") from None
        raise UsageError(f"--set {', '.join(overrides)}: {exc}") from None


def check_bag(path: str) -> Path:
    """``path`` as a Path if it is a readable rosbag2 bag, else :class:`UsageError`."""
    bag = existing_path(path, "bag")
    try:
        bag_summary(bag)
    except Exception as exc:  # rosbags raises its own errors for what is not a bag
        raise UsageError(
            f"{path!r} is not a rosbag2 bag (a folder with metadata.yaml, or an .mcap / .db3 "
            f"file): {exc}"
        ) from None
    return bag


def _check_outputs(args: argparse.Namespace) -> None:
    if args.out:
        writable_dir(args.out, "--out")
    if args.online_out:
        writable_dir(Path(args.online_out).expanduser().resolve().parent, "--online-out's folder")


def _run(args: argparse.Namespace) -> int:
    bag = check_bag(args.bag)
    _check_outputs(args)
    overrides = dict(parse_override(s) for s in args.set)
    setup = load_with_overrides(args, bag, overrides)
    summary: dict[str, Any] = {"bag": str(bag), "parameters": setup.params_source}
    summary["urdf"] = setup.urdf_source
    original = (bag, setup)
    if args.online:
        bag, summary["online_counts"] = _online(args, bag, setup)
        summary["online_bag"] = str(bag)
        setup = load_setup(bag, args.params_file, args.urdf, overrides, args.node_name)
    result, playback, notes = _replay(args, bag, setup, overrides)
    summary["exact"] = playback is not None
    metrics = replay_metrics(result)
    summary.update(metrics)
    print(f"itasc-replay {bag}: parameters from {setup.params_source}; URDF {setup.urdf_source}")
    for k, v in metrics.items():
        print(f"  {k:32s} {_fmt(v)}")
    for line in notes + [f"rejected input: {r}" for r in result.rejection_reasons]:
        print(f"  {line}")
    status = 0
    if args.compare:
        status = _compare(args, bag, setup, playback, result, original, summary)
    elif overrides and playback is not None:
        _what_if(args, bag, result, overrides, summary)
    if args.out and not args.no_plots:
        from itasc_ros.tools.replay_plots import write_replay_plots

        paths = write_replay_plots(result, args.out) + summary.pop("_what_if_plots", [])
        print("  plots: " + ", ".join(str(p) for p in paths))
        summary["plots"] = [str(p) for p in paths]
    summary.pop("_what_if_plots", None)
    if args.json:
        print(json.dumps(summary, default=_fmt))
    return status


def _compare(
    args: argparse.Namespace,
    bag: Path,
    setup: NodeSetup,
    playback: Playback | None,
    result: ReplayResult,
    original: tuple[Path, NodeSetup],
    summary: dict[str, Any],
) -> int:
    """``--compare``: every command, and the tracking error of both runs. Returns the status."""
    joints = setup_joints(setup, playback)
    report = compare_commands(bag, setup, playback, joints, args.tolerance)
    print(report.text())
    summary.update(report.to_dict())
    summary["compare"] = report.to_dict()
    orig_bag, orig_setup = original
    recorded_pb = play_journal(orig_bag, orig_setup) if args.online else playback
    empty = {"rms_mm": math.nan, "max_mm": math.nan, "ticks": 0}
    recorded, replayed = empty, empty
    if recorded_pb is not None and playback is not None:
        offset = stamp_offset(orig_bag, bag, setup) if args.online else 0.0
        recorded, replayed = tracking_pair(recorded_pb, playback, offset, not args.online)
    if args.online:
        label = f"the recording {orig_bag}", f"the online run {bag}"
    else:
        label = "the recording", "the offline replay"
    active = 0 if recorded_pb is None else sum(t.status == "active" for t in recorded_pb.ticks)
    tracking = TrackingComparison(recorded, replayed, args.tracking_tolerance, label, active)
    print(tracking.text())
    summary["tracking"] = tracking.to_dict()
    commands_ok = report.ok or not report.exact
    summary["ok"] = commands_ok and tracking.ok
    reasons = [
        r for r, bad in (("commands", not commands_ok), ("tracking", not tracking.ok)) if bad
    ]
    print("itasc-replay: compare: " + (f"FAILED ({', '.join(reasons)})" if reasons else "OK"))
    return 0 if summary["ok"] else 1


def _what_if(
    args: argparse.Namespace,
    bag: Path,
    result: ReplayResult,
    overrides: dict[str, Any],
    summary: dict[str, Any],
) -> None:
    """What-if: the recorded run's figures beside the what-if run's (and its plots)."""
    base = load_setup(bag, args.params_file, args.urdf, None, args.node_name)
    recorded_pb = play_journal(bag, base, any_urdf=args.urdf is not None)
    if recorded_pb is None:
        return
    rec = ticks_result(recorded_pb, setup_joints(base, recorded_pb))
    summary["recorded"] = replay_metrics(rec)
    change = ", ".join(f"{k}={v}" for k, v in overrides.items())
    print(side_by_side(rec, result, "recorded", f"what-if ({change})"))
    if args.out and not args.no_plots:
        from itasc_ros.tools.replay_plots import write_what_if_plots

        summary["_what_if_plots"] = write_what_if_plots(rec, result, overrides, args.out)


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (1: mismatch, 2: usage error)."""
    args = _parser().parse_args(argv)
    return usage_status("itasc-replay", lambda: _run(args))


if __name__ == "__main__":
    sys.exit(main())
