"""Property-based fuzzing of the node's input path, without DDS (hypothesis).

Inputs are real ROS messages (JointState, PoseStamped, TwistStamped) with arbitrary floats (NaN,
Inf, huge, subnormal), wrong lengths, repeated/unknown/missing joint names, zero and
non-normalised quaternions, frames that are not URDF links and header stamps that are zero, in the
past, in the future, repeated or out of order, on a clock that advances, stalls or jumps back
(use_sim_time and a looping bag). :class:`NodePath` makes exactly the calls of the node's
callbacks (``itasc_ros.ros.conversions`` -> :class:`Controller`) and of its tick
(:meth:`Controller.step` -> :meth:`CommandMessage.fill`), on the bundled Panda URDF and
``config/panda.yaml`` with the ``joints`` in a drawn order.

Definitions (the oracle is :class:`Model`, an independent statement of the rules):

* An input is *rejected* when it must raise :class:`InputError` (message naming the reason) and
  change nothing: joint state -- a position count different from the name count, a commanded
  joint missing or listed twice, a commanded joint's position NaN/Inf or above ``HUGE`` (1e150);
  target pose -- a position value NaN/Inf or above ``HUGE``, a quaternion with NaN/Inf or a norm
  below 1e-6 (other quaternions are normalised), a frame that is neither '' nor a URDF link, or a
  link frame before any joint state; twist -- a value NaN/Inf or above ``HUGE``, a bad frame.
  Any of them with a header stamp (non-zero) is also rejected when the stream's last accepted
  *stamped* message was received within ``input_timeout`` (either side of now) and the stamp is
  older than that one's (out of order) or its delivery offset (reception time minus stamp) is
  smaller than the smallest offset of the stream's accepted messages by more than
  ``input_timeout`` (a stamp in the future; while the stream holds its anchor alone, the one
  accepted message since it started or re-anchored, against the anchor's offset or zero, the
  smaller: the anchor may have come late). Older anchors are not compared with (re-anchoring:
  the smallest offset restarts from the message's own when its stamp is older than the anchor's).
* The inputs are *unusable* at a tick at time ``now`` when the output is disabled, or no joint
  state was ever accepted, or the last accepted joint state was received more than
  ``input_timeout`` before ``now`` or after ``now`` (the clock jumped back), or no target pose was
  ever accepted. Rejected inputs do not count.
* Invariant after every input, at every tick: ``qdot`` has one value per ``joints`` entry, in that
  order (equal to the same controller configured in the URDF order, permuted), finite and within
  the URDF velocity limit times ``velocity_scale``; the filled command message carries exactly
  that; ``q`` is the last accepted joint state in ``joints`` order. Unusable -> status 'disabled',
  'waiting' or 'stale' (in that precedence), ``qdot`` zero, published only as the first zero
  after motion (then silence). Usable -> status 'active' and published.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, TwistStamped
from hypothesis import HealthCheck, example, given, settings
from hypothesis import event as note_event
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory
from urdf_parser_py.urdf import URDF

from itasc_ros.core import ConfigError, Controller, ControllerConfig, InputError, KinematicTree
from itasc_ros.core.control.streams import HUGE
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config
from itasc_ros.ros.conversions import (
    COMMAND_TYPES,
    FLOAT64_MULTI_ARRAY,
    JOINT_STATE,
    JOINT_TRAJECTORY,
    CommandMessage,
    command_velocities,
    joint_state_positions,
    pose_stamped_arrays,
    sec_to_stamp,
    stamp_or_none,
    stamp_to_sec,
    twist_stamped_array,
)
from itasc_ros.ros.wire import JointStateWire, pose_stamped_wire, twist_stamped_wire
from itasc_ros.tools.resources import robot_urdf

REPO = Path(__file__).resolve().parents[2]
TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
CONFIG = load_config(REPO / "config" / "panda.yaml")
# The oracle is plain iTaSC: targets at once, immediate stops (the motion limits, controlled
# stops and straight-line steps have their own property tests: test_motion_limits.py,
# test_cartesian_reference.py).
CONFIG.joint_limits = {}
CONFIG.max_cartesian_speed = 0.0
JOINTS = list(TREE.joint_names)  # the URDF order
LIMITS = dict(zip(JOINTS, TREE.velocity_limits, strict=True))  # [rad/s]
HOME = dict(zip(JOINTS, home_of("panda").tolist(), strict=True))
HAND = TREE.forward_kinematics(np.array(list(HOME.values())), "panda_hand")  # (4, 4)
CONSTRAINT = "ee"
ROOT = TREE.root_link


def _urdf_reach(link: str) -> float:
    """Sum of the joint origins' offsets from the root down to ``link`` (revolute arm) [m]."""
    robot = URDF.from_xml_string(Path(robot_urdf("panda")).read_text())
    by_child = {j.child: j for j in robot.joints}
    total = 0.0
    while link in by_child:
        joint = by_child[link]
        total += math.dist(joint.origin.xyz if joint.origin else [0, 0, 0], [0, 0, 0])
        link = joint.parent
    return total


REACH = _urdf_reach(str(CONFIG.constraint(CONSTRAINT).link)) + CONFIG.target_reach_margin
"""Targets farther than this from the root are refused [m] (URDF reach plus the margin)."""

# ------------------------------------------------------------------------------ value pools
SPECIAL = [
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    -1e308,
    1e200,
    2e150,  # just above HUGE
    1e150,  # HUGE itself: accepted
    -1e30,
    5e-324,  # subnormal
    -5e-324,
    0.0,
    -0.0,
]
special = st.sampled_from(SPECIAL)
reasonable = st.floats(-4.0, 4.0, allow_nan=False)
any_float = st.floats(allow_nan=True, allow_infinity=True)


garbage = st.one_of(special, any_float)  # a value that a broken publisher might send
EXTRA_NAMES = ["panda_finger_joint1", "gripper", "", "panda_joint1 "]
GOOD_FRAMES = ["", ROOT, "panda_hand", "panda_link3"]
BAD_FRAMES = ["world", "panda_leftfinger", "Panda_link0", " panda_link0", "panda_link0/"]
STAMP_KINDS = ["now"] * 8 + ["zero", "zero", "dup", "older", "past", "far_past", "future"]
GOOD_QUAT_SCALES = [1.0, 1.0, 1.0, 1.0, 0.5, 2.0, 1e-5, 1e10, 1e200, 1e308]
BAD_QUAT_SCALES = [0.0, 5e-324, 1e-300, 1e-7]


@st.composite
def corrupted(draw: st.DrawFn, values: list[float]) -> list[float]:
    """``values`` with one to three of them replaced by garbage."""
    out = list(values)
    for i in draw(st.lists(st.integers(0, len(out) - 1), min_size=1, max_size=3)):
        out[i] = draw(garbage)
    return out


# ------------------------------------------------------------------------------ events
@dataclass
class JointStateEvent:
    names: list[str]
    positions: list[float]
    stamp: str


@dataclass
class TargetEvent:
    frame: str
    position: list[float]
    quat: list[float]
    stamp: str


@dataclass
class TwistEvent:
    frame: str
    twist: list[float]
    stamp: str


@dataclass
class ClockEvent:
    """The node clock moves by ``dt`` [s] (< 0: jumps back); the stamps' clock too if
    ``sources``."""

    dt: float
    sources: bool = True


@dataclass
class EnableEvent:
    enabled: bool


@dataclass
class ParamEvent:
    key: str
    value: Any


@st.composite
def joint_state_events(draw: st.DrawFn) -> JointStateEvent:
    """Mostly a good joint state; else one fault: a missing, repeated or unknown joint, garbage
    values or a wrong length. Extra joints (ignored by the controller) carry any value."""
    fault = draw(st.sampled_from(["none"] * 6 + ["missing", "repeated", "unknown", "values"]))
    names = list(draw(st.permutations(JOINTS)))
    positions = [HOME[n] + draw(st.floats(-0.4, 0.4)) for n in names]
    if fault == "missing":
        i = draw(st.integers(0, len(names) - 1))
        del names[i], positions[i]
    elif fault == "repeated":
        names.append(draw(st.sampled_from(JOINTS)))
        positions.append(draw(st.floats(-1.0, 1.0)))
    elif fault == "unknown":
        names = draw(st.lists(st.sampled_from(EXTRA_NAMES), max_size=3))
        positions = [draw(st.floats(-1.0, 1.0)) for _ in names]
    elif fault == "values":
        positions = draw(corrupted(positions))
    if draw(st.integers(0, 3)) == 0:  # an extra joint with any value
        i = draw(st.integers(0, len(names)))
        names.insert(i, draw(st.sampled_from(EXTRA_NAMES)))
        positions.insert(i, draw(st.one_of(st.floats(-1.0, 1.0), garbage)))
    length = draw(st.sampled_from(["same"] * 12 + ["short", "long"]))
    if length == "short" and positions:
        positions.pop()
    elif length == "long":
        positions.append(0.0)
    return JointStateEvent(names, positions, draw(st.sampled_from(STAMP_KINDS)))


@st.composite
def quaternions(draw: st.DrawFn, good: bool) -> list[float]:
    """A unit quaternion scaled (good: norm >= 1e-5; bad: below 1e-6), or bad with garbage."""
    raw = np.array(draw(st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4)))
    norm = float(np.linalg.norm(raw))
    if norm < 0.1:
        raw, norm = np.array([0.0, 0.0, 0.0, 1.0]), 1.0
    if good:
        return [float(v) for v in raw / norm * draw(st.sampled_from(GOOD_QUAT_SCALES))]
    if draw(st.booleans()):
        return [float(v) for v in raw / norm * draw(st.sampled_from(BAD_QUAT_SCALES))]
    return draw(corrupted([float(v) for v in raw / norm]))


@st.composite
def target_events(draw: st.DrawFn) -> TargetEvent:
    """Mostly a good target near the hand; else garbage position, bad quaternion or frame."""
    fault = draw(st.sampled_from(["none"] * 5 + ["position", "quaternion", "frame"]))
    frame = draw(st.sampled_from(BAD_FRAMES if fault == "frame" else GOOD_FRAMES))
    base = HAND[:3, 3] if frame in ("", ROOT) else np.zeros(3)
    position = [float(b) + draw(st.floats(-0.15, 0.15)) for b in base]
    if fault == "position":
        position = draw(corrupted(position))
    quat = draw(quaternions(good=fault != "quaternion"))
    return TargetEvent(frame, position, quat, draw(st.sampled_from(STAMP_KINDS)))


@st.composite
def twist_events(draw: st.DrawFn) -> TwistEvent:
    """Mostly a good twist; else garbage values or a bad frame."""
    fault = draw(st.sampled_from(["none"] * 4 + ["values", "frame"]))
    twist = draw(st.lists(st.floats(-0.5, 0.5), min_size=6, max_size=6))
    if fault == "values":
        twist = draw(corrupted(twist))
    frame = draw(st.sampled_from(BAD_FRAMES if fault == "frame" else GOOD_FRAMES))
    return TwistEvent(frame, twist, draw(st.sampled_from(STAMP_KINDS)))


clock_events = st.builds(
    ClockEvent,
    st.sampled_from([0.004] * 6 + [0.0, 0.0005, 0.02, 0.09, 0.15, 1.0, -0.05, -3.0]),
    st.sampled_from([True, True, True, False]),
)
PARAM_VALUES: dict[str, list[Any]] = {
    "input_timeout": [0.05, 0.1, 0.5, 0.0, -1.0, math.nan, math.inf, 61.0, "x"],
    "velocity_scale": [0.25, 1.0, 0.0, 1.5, math.nan],
    "control_rate": [100.0, 250.0, 0.5, 5000.0, math.inf],
    "damping_max": [0.0, 0.3, -0.1, 11.0, math.nan],
    "solver": ["dls", "sdls", "svd", 3],
    "constraints.ee.gain": [0.0, 5.0, 20.0, -1.0, math.nan, "x"],
    "constraints.ee.position_axes": ["xyz", "xy", "", "qqq", "xyzx", 3],
    "constraints.ee.rotation_axes": ["xyz", "z", "", "xxz"],
    "constraints.ee.reference": ["target", "effector", "nowhere", ""],
    "max_target_speed": [0.5, 2.0, 0.0, math.nan, 1e300],
    "max_target_angular_speed": [1.0, 6.0, -1.0],
    "joints": [["panda_joint1"]],
    "constraints.ee.link": ["panda_link7"],
}
param_events = st.sampled_from(list(PARAM_VALUES)).flatmap(
    lambda k: st.builds(ParamEvent, st.just(k), st.sampled_from(PARAM_VALUES[k]))
)
input_events = st.one_of(
    joint_state_events(), joint_state_events(), target_events(), twist_events()
)
events = st.one_of(
    input_events,
    input_events,
    clock_events,
    clock_events,
    st.builds(EnableEvent, st.sampled_from([True, True, False])),
    param_events,
)


# ------------------------------------------------------------------------------ messages
class SourceClock:
    """The clock of the header stamps, and the stamp kinds of the events -> stamps [s]."""

    def __init__(self, t0: float = 1.7e9) -> None:
        self.now = t0
        self.last = t0

    def stamp(self, kind: str) -> float:
        t = {
            "now": self.now,
            "zero": 0.0,
            "dup": self.last,
            "older": self.last - 0.001,
            "past": self.now - 1.0,
            "far_past": 1.0,
            "future": self.now + 1e6,
        }[kind]
        if kind != "zero":
            self.last = t
        return t


def to_message(event: Any, clock: SourceClock) -> Any:
    """The ROS message of an input event, stamped on ``clock``."""
    if isinstance(event, JointStateEvent):
        msg = JointState(name=list(event.names), position=list(event.positions))
    elif isinstance(event, TargetEvent):
        msg = PoseStamped()
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = event.position
        o.x, o.y, o.z, o.w = event.quat
    else:
        msg = TwistStamped()
        lin, ang = msg.twist.linear, msg.twist.angular
        lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = event.twist
    if not isinstance(event, JointStateEvent):
        msg.header.frame_id = event.frame
    sec_to_stamp(clock.stamp(event.stamp), msg.header.stamp)
    return msg


# ------------------------------------------------------------------------------ the node path
class NodePath:
    """The node's callbacks and tick without rclpy (the same calls as itasc_ros/ros/node.py)."""

    def __init__(self, joints: Sequence[str], kind: str = FLOAT64_MULTI_ARRAY) -> None:
        self.ctrl = Controller(
            TREE, ControllerConfig.from_dict({**CONFIG.to_dict(), "joints": joints})
        )
        self.command = CommandMessage(kind, self.ctrl.joint_names)
        self.joint_wire = JointStateWire()
        self.pose_wire, self.twist_wire = pose_stamped_wire(), twist_stamped_wire()

    # The node's path: each input read from its serialized bytes (ros/wire.py), as DDS hands
    # them to the node's readers.
    def on_joint_state(self, msg: JointState, now: float) -> None:
        js = self.joint_wire.read(serialize_message(msg))
        self.ctrl.set_joint_state(js.name, js.position, now, js.stamp)

    def on_target(self, msg: PoseStamped, now: float) -> None:
        frame, v, src = self.pose_wire.read(serialize_message(msg))
        self.ctrl.set_target(CONSTRAINT, frame, v[:3], v[3:], now, src, jump=False)

    def on_twist(self, msg: TwistStamped, now: float) -> None:
        frame, tw, _ = self.twist_wire.read(serialize_message(msg))  # its stamp is not passed
        self.ctrl.set_target_twist(CONSTRAINT, frame, tw, now)

    def feed(self, msg: Any, now: float) -> None:
        if isinstance(msg, JointState):
            self.on_joint_state(msg, now)
        elif isinstance(msg, PoseStamped):
            self.on_target(msg, now)
        else:
            self.on_twist(msg, now)

    def tick(self, now: float) -> tuple[Any, Any]:
        """(StepOutput, the published message after a serialisation round trip, or None)."""
        out = self.ctrl.step(now)
        if not out.publish:
            return out, None
        sent = self.command.wire(out.q, out.qdot, self.ctrl.period, now)  # what the node sends
        raw = sent if isinstance(sent, bytes) else serialize_message(sent)
        return out, deserialize_message(raw, self.command.msg_type)


# ------------------------------------------------------------------------------ the model
Anchor = tuple[float, float, float]
"""A stream's last accepted stamp, its reception time, the smallest delivery offset [s] of the
messages accepted since it (re-)anchored (inf: the anchor alone)."""


def stamp_problem(anchor: Anchor | None, src: float | None, now: float, timeout: float) -> str:
    """The stamp rule of the module docstring: '' or a word of the expected message."""
    if src is None or anchor is None:
        return ""
    anchor_src, anchor_received, offset = anchor
    elapsed = now - anchor_received
    if not -timeout <= elapsed <= timeout:
        return ""
    if src < anchor_src:
        return "out of order"
    if offset == math.inf:  # the anchor alone
        offset = min(anchor_received - anchor_src, 0.0)
    if offset - (now - src) > timeout:
        return "in the future"
    return ""


def anchored(anchor: Anchor | None, src: float, now: float) -> Anchor:
    """The stream's anchor once a message stamped ``src`` received at ``now`` is accepted."""
    if anchor is None or src < anchor[0]:
        return (src, now, math.inf)
    offset = min(now - src, anchor[2], anchor[1] - anchor[0])
    return (src, now, offset)


def bad(values: Sequence[float] | np.ndarray) -> bool:
    return not all(abs(v) <= HUGE for v in values)


class Model:
    """What the controller must do, stated independently (see the module docstring)."""

    def __init__(self, joints: Sequence[str]) -> None:
        self.joints = list(joints)
        self.timeout = CONFIG.input_timeout
        self.velocity_scale = CONFIG.velocity_scale
        self.q: np.ndarray | None = None  # (n,) last accepted, joints order
        self.js_received = -math.inf
        self.js_anchor: Anchor | None = None
        self.has_target = False
        self.target_anchor: Anchor | None = None
        self.enabled = True
        self.halted = True

    def joint_state(self, msg: JointState, now: float) -> list[str]:
        """Reasons (words of the expected message) to reject; [] = accepted (and applied)."""
        names, pos = list(msg.name), list(msg.position)
        src = stamp_or_none(msg.header.stamp)
        if len(names) != len(pos):
            return ["names but"]
        reasons = []
        if any(names.count(j) > 1 for j in self.joints):
            reasons.append("more than once")
        if any(j not in names for j in self.joints):
            reasons.append("lacks joints")
        if reasons:
            return reasons
        by_name = dict(zip(names, pos, strict=True))
        q = np.array([by_name[j] for j in self.joints])
        if not np.all(np.isfinite(q)):
            reasons.append("non-finite positions")
        elif bad(q):
            reasons.append("huge positions")
        why = stamp_problem(self.js_anchor, src, now, self.timeout)
        if why:
            reasons.append(why)
        if reasons:
            return reasons
        self.q, self.js_received = q, now
        if src is not None:
            self.js_anchor = anchored(self.js_anchor, src, now)
        return []

    def _frame_problem(self, frame: str) -> str:
        if frame in ("", ROOT):
            return ""
        if frame not in TREE.link_names:
            return "is not a URDF link"
        return "" if self.q is not None else "needs a joint state"

    def _root_distance(self, frame: str, p: np.ndarray) -> float:
        """Distance [m] of point ``p`` of ``frame`` from the root at the last joint state."""
        if frame in ("", ROOT):
            return float(np.linalg.norm(p))
        assert self.q is not None
        q = np.array([self.q[self.joints.index(j)] for j in JOINTS])  # the URDF order
        pose = TREE.forward_kinematics(q, frame)
        return float(np.linalg.norm(pose[:3, :3] @ p + pose[:3, 3]))

    def target(self, msg: PoseStamped, now: float) -> list[str]:
        _, p, quat, src = pose_stamped_arrays(msg)
        reasons = []
        if bad(p):
            reasons.append("position must be 3 finite")
        if not np.all(np.isfinite(quat)):
            reasons.append("must be 4 finite")
        elif math.hypot(*quat) < 1e-6:
            reasons.append("zero norm")
        for why in (
            stamp_problem(self.target_anchor, src, now, self.timeout),
            self._frame_problem(msg.header.frame_id),
        ):
            if why:
                reasons.append(why)
        if not reasons and self._root_distance(msg.header.frame_id, p) > REACH:
            reasons.append("beyond the robot's reach")
        if reasons:
            return reasons
        self.has_target = True
        if src is not None:
            self.target_anchor = anchored(self.target_anchor, src, now)
        return []

    def twist(self, msg: TwistStamped, now: float) -> list[str]:
        _, tw, _ = twist_stamped_array(msg)
        reasons = ["must be 6 finite"] if bad(tw) else []
        why = self._frame_problem(msg.header.frame_id)
        return [*reasons, why] if why else reasons

    def feed(self, msg: Any, now: float) -> list[str]:
        if isinstance(msg, JointState):
            return self.joint_state(msg, now)
        if isinstance(msg, PoseStamped):
            return self.target(msg, now)
        return self.twist(msg, now)

    def status(self, now: float) -> str:
        if not self.enabled:
            return "disabled"
        if self.q is None:
            return "waiting"
        if not -self.timeout <= now - self.js_received <= self.timeout:
            return "stale"
        return "active" if self.has_target else "waiting"


def observable(ctrl: Controller) -> tuple[Any, ...]:
    """Everything an accepted input changes, to check that a rejected one changed nothing."""
    _, target = ctrl.poses(CONSTRAINT)
    return (
        ctrl.q.tobytes(),
        ctrl.joint_state_stamp,
        ctrl.target_stamp(CONSTRAINT),
        None if target is None else target.tobytes(),
        ctrl.target_twist_estimate(CONSTRAINT).tobytes(),
    )


# ------------------------------------------------------------------------------ the properties
START = [
    JointStateEvent(JOINTS, list(HOME.values()), "now"),
    TargetEvent("", [float(v) for v in HAND[:3, 3] + 0.05], [1.0, 0.0, 0.0, 0.0], "now"),
]
"""Good inputs that most sequences start with, so that faults also hit a moving robot."""


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    joints=st.permutations(JOINTS),
    start=st.sampled_from([True, True, True, False]),
    sequence=st.lists(events, min_size=1, max_size=60),
)
@example(  # a joint 3e8 rad out: the posture asked 1.6e8 rad/s, rounding then differed by order
    joints=[*JOINTS[:5], JOINTS[6], JOINTS[5]],
    start=True,
    sequence=[
        JointStateEvent(JOINTS, [5e-324, 315810861.0, 0.0, -2.356, 0.0, 1.571, 0.785], "now"),
        TargetEvent(
            "", [0.30701957005161057, -6.5e-17, 0.5902695582766445], [0, 0, 0, 1.0], "now"
        ),
    ],
)
@example(  # undamped, a level scaled: its hold left the posture below no motion but rounding
    joints=[*JOINTS[:5], JOINTS[6], JOINTS[5]],
    start=True,
    sequence=[
        TargetEvent(
            "", [0.30701957005161057, -6.5e-17, 0.5902695582766445], [0, 0, 0, 1.0], "now"
        ),
        ParamEvent("damping_max", 0.0),
        JointStateEvent(
            ["panda_finger_joint1", *JOINTS[:2], *JOINTS[3:6], JOINTS[2], JOINTS[6]],
            [0.0, 0.0, -0.785, -2.356, 0.0, 1.571, 0.25, 0.785],
            "now",
        ),
    ],
)
@example(  # undamped, the elbow at its limit: what the pose task left the posture was rounding
    # (1e-10), which a rank relative to its own largest took for 6 directions (gains of 1e16)
    joints=[*JOINTS[:5], JOINTS[6], JOINTS[5]],
    start=True,
    sequence=[
        ClockEvent(0.15, True),
        TargetEvent(
            "", [0.30701957005161057, -6.5e-17, 0.5902695582766445], [0, 0, 0, 1.0], "now"
        ),
        JointStateEvent(
            [JOINTS[0], JOINTS[3], JOINTS[2], JOINTS[4], JOINTS[1], JOINTS[5], JOINTS[6]],
            [0.0, -2.106, 0.0, 1e-05, -0.785, 1.571, 0.785],
            "past",
        ),
        JointStateEvent(
            ["panda_finger_joint1", *JOINTS],
            [0.0, 0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
            "now",
        ),
        TargetEvent(
            "", [0.30701957005161057, -6.5e-17, 0.5902695582766445], [0, 0, 0, 1.0], "now"
        ),
        JointStateEvent(JOINTS, [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785], "now"),
        TwistEvent("", [0.0] * 6, "now"),
        ParamEvent("damping_max", 0.0),
    ],
)
@example(  # two joints saturated, joint 5 at 1e-9 rad: an increment at round-off (1e-12) was
    # taken as moving toward a bound in one joint order and as still in the other (8.7e-9 apart)
    joints=[*JOINTS[:4], JOINTS[5], JOINTS[4], JOINTS[6]],
    start=True,
    sequence=[
        JointStateEvent(
            ["panda_finger_joint1", *JOINTS],
            [0.0, 0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
            "now",
        ),
        ParamEvent("constraints.ee.rotation_axes", "z"),
        JointStateEvent(
            ["panda_finger_joint1", *(JOINTS[i] for i in (0, 5, 2, 4, 1, 3, 6))],
            [0.0, 0.25, 1.571, 0.0, 1e-09, -0.535, -2.356, 0.785],
            "now",
        ),
    ],
)
def test_any_input_sequence_publishes_only_safe_commands(
    joints: list[str], start: bool, sequence: list[Any]
) -> None:
    path = NodePath(joints)
    twin = NodePath(JOINTS)  # the URDF order: the order oracle
    model = Model(joints)
    perm = [JOINTS.index(j) for j in joints]
    clock = SourceClock()
    now = 1000.0
    for event in [*(START if start else []), *sequence, ClockEvent(0.0)]:  # end with a tick
        if isinstance(event, ClockEvent):
            now += event.dt
            if event.sources:
                clock.now += event.dt
        elif isinstance(event, EnableEvent):
            for p in (path, twin):
                p.ctrl.set_enabled(event.enabled)
            model.enabled = event.enabled
        elif isinstance(event, ParamEvent):
            before = path.ctrl.config.to_dict()
            outcomes = []
            for p in (path, twin):
                try:
                    p.ctrl.update_parameters(**{event.key: event.value})
                    outcomes.append("ok")
                except ConfigError as exc:
                    outcomes.append(str(exc))
            assert (outcomes[0] == "ok") == (outcomes[1] == "ok"), outcomes
            if outcomes[0] == "ok":
                model.timeout = path.ctrl.config.input_timeout
                model.velocity_scale = path.ctrl.config.velocity_scale
                assert getattr(path.ctrl.config, event.key, event.value) == event.value
            else:  # all or nothing, and the message says why
                assert path.ctrl.config.to_dict() == before
                assert outcomes[0]
        else:
            msg = to_message(event, clock)
            reasons = model.feed(msg, now)
            note_event(
                f"{type(msg).__name__}: {'rejected, ' + reasons[0] if reasons else 'accepted'}"
            )
            for p in (path, twin):
                state = observable(p.ctrl)
                if reasons:
                    with pytest.raises(InputError) as info:
                        p.feed(msg, now)
                    assert any(r in str(info.value) for r in reasons), (reasons, info.value)
                    assert observable(p.ctrl) == state  # nothing changed
                else:
                    p.feed(msg, now)
            if not reasons and model.q is not None:
                np.testing.assert_array_equal(path.ctrl.q, model.q)  # joints order
        check_tick(path, twin, model, perm, now)


def check_tick(path: NodePath, twin: NodePath, model: Model, perm: list[int], now: float) -> None:
    """One tick of both controllers against the model: the invariant of the module docstring."""
    out, msg = path.tick(now)
    twin_out, twin_msg = twin.tick(now)
    n = len(model.joints)
    limits = np.array([LIMITS[j] for j in model.joints]) * model.velocity_scale
    assert out.qdot.shape == (n,)
    assert np.all(np.isfinite(out.qdot))
    assert np.all(np.abs(out.qdot) <= limits * (1.0 + 1e-12)), (out.qdot, limits)
    expected = model.status(now)
    assert out.status == expected, (out.status, out.reason, expected)
    assert twin_out.status == expected
    if expected == "active":
        assert out.publish and msg is not None
        model.halted = False
    else:
        assert not np.any(out.qdot)
        assert out.reason
        assert out.publish == (not model.halted)
        model.halted = True
    assert twin_out.publish == out.publish
    np.testing.assert_allclose(out.qdot, twin_out.qdot[perm], rtol=1e-9, atol=1e-9)
    if model.q is not None:
        np.testing.assert_array_equal(out.q, model.q)
    if msg is not None:  # the message that would go out carries exactly q'
        np.testing.assert_array_equal(command_velocities(msg, model.joints), out.qdot)
        twin_qdot = command_velocities(twin_msg, JOINTS)  # no names: the twin's own order
        np.testing.assert_allclose(twin_qdot[perm], out.qdot, rtol=1e-9, atol=1e-9)
    note_event(f"tick: {out.status}{' published' if msg is not None else ''}")


@settings(max_examples=60, deadline=None)
@given(
    # a core-level call with a shape or type that no message can have
    shape=st.sampled_from(["short", "long", "2d", "text", "none", "scalar"]),
    which=st.sampled_from(["joint_state", "target_position", "target_quaternion", "twist"]),
)
def test_wrong_shapes_and_types_raise_input_error_and_change_nothing(
    shape: str, which: str
) -> None:
    ctrl = NodePath(JOINTS).ctrl
    ctrl.set_joint_state(JOINTS, list(HOME.values()), 0.0, 5.0)
    ctrl.set_target(CONSTRAINT, "", HAND[:3, 3], [0.0, 0.0, 0.0, 1.0], 0.0, 5.0)
    good = {"joint_state": 7, "target_position": 3, "target_quaternion": 4, "twist": 6}[which]
    value: Any = {
        "short": [0.1] * (good - 1),
        "long": [0.1] * (good + 1),
        "2d": [[0.1] * good, [0.2] * good],
        "text": ["a"] * good,
        "none": None,
        "scalar": 0.1,
    }[shape]
    before = observable(ctrl)
    with pytest.raises(InputError) as info:
        if which == "joint_state":
            ctrl.set_joint_state(JOINTS, value, 0.01)
        elif which == "target_position":
            ctrl.set_target(CONSTRAINT, "", value, [0.0, 0.0, 0.0, 1.0], 0.01)
        elif which == "target_quaternion":
            ctrl.set_target(CONSTRAINT, "", HAND[:3, 3], value, 0.01)
        else:
            ctrl.set_target_twist(CONSTRAINT, "", value, 0.01)
    assert str(info.value)
    assert observable(ctrl) == before
    # An unknown constraint is rejected the same way, naming the ones that take a target.
    with pytest.raises(InputError, match="constraints with a target are: ee"):
        ctrl.set_target("nope", "", [0.0] * 3, [0.0, 0.0, 0.0, 1.0], 0.02)
    assert observable(ctrl) == before
    assert ctrl.step(0.02).status == "active"  # the last good inputs are still in place


# ------------------------------------------------------------------------------ conversions
def bits(values: Any) -> bytes:
    return np.asarray(values, dtype=np.float64).tobytes()


stamps = st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(0, 10**9 - 1))


@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(st.text(max_size=12), max_size=9),
    positions=st.lists(any_float, max_size=9),
    pose=st.lists(any_float, min_size=7, max_size=7),
    twist=st.lists(any_float, min_size=6, max_size=6),
    frame=st.text(max_size=20),
    stamp=stamps,
)
def test_conversions_carry_every_value_unchanged(
    names: list[str],
    positions: list[float],
    pose: list[float],
    twist: list[float],
    frame: str,
    stamp: tuple[int, int],
) -> None:
    sec, nanosec = stamp
    expected_stamp = None if sec == nanosec == 0 else sec + nanosec * 1e-9

    js = JointState(name=names, position=positions)
    got_names, got_pos = joint_state_positions(js)
    assert got_names == names and bits(got_pos) == bits(positions)  # NaN, -0.0 included

    ps = PoseStamped()
    ps.header.frame_id, ps.header.stamp.sec, ps.header.stamp.nanosec = frame, sec, nanosec
    p, o = ps.pose.position, ps.pose.orientation
    p.x, p.y, p.z, o.x, o.y, o.z, o.w = pose
    got_frame, got_p, got_q, got_stamp = pose_stamped_arrays(ps)
    assert got_frame == frame and got_stamp == expected_stamp
    assert bits(got_p) == bits(pose[:3]) and bits(got_q) == bits(pose[3:])
    assert got_p.shape == (3,) and got_q.shape == (4,)

    ts = TwistStamped()
    ts.header.frame_id, ts.header.stamp.sec, ts.header.stamp.nanosec = frame, sec, nanosec
    lin, ang = ts.twist.linear, ts.twist.angular
    lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = twist
    got_frame, got_tw, got_stamp = twist_stamped_array(ts)
    assert got_frame == frame and got_stamp == expected_stamp
    assert bits(got_tw) == bits(twist)


@settings(max_examples=300, deadline=None)
@given(t=st.floats(0.0, 2.0**31 - 1.0) | st.floats(-1e4, 1e4))
def test_seconds_to_stamp_and_back(t: float) -> None:
    msg = sec_to_stamp(t)
    assert 0 <= msg.nanosec < 1_000_000_000
    assert abs(stamp_to_sec(msg) - t) <= 0.5e-9 + 2.0 * math.ulp(t)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(list(COMMAND_TYPES)),
    joints=st.permutations(JOINTS),
    rows=st.lists(
        st.tuples(
            st.lists(
                st.floats(-HUGE, HUGE) | special.filter(lambda v: abs(v) <= HUGE),
                min_size=7,
                max_size=7,
            ),
            st.lists(
                st.floats(-100.0, 100.0) | st.sampled_from([5e-324, -0.0]), min_size=7, max_size=7
            ),
        ),
        min_size=1,
        max_size=3,
    ),
    dt=st.sampled_from([1.0 / 250.0, 1e-3, 0.5]),
    now=st.floats(0.0, 2.0e9),
)
def test_command_messages_carry_q_and_qdot_in_joints_order(
    kind: str,
    joints: list[str],
    rows: list[tuple[list[float], list[float]]],
    dt: float,
    now: float,
) -> None:
    cmd = CommandMessage(kind, joints)
    for q, qdot in rows:  # refilled: nothing of the previous fill may remain
        q_a, qdot_a = np.array(q), np.array(qdot)
        wire = cmd.wire(q_a, qdot_a, dt, now)  # what the node publishes (bytes: as they are)
        sent = cmd.fill(q_a, qdot_a, dt, now)
        msg = deserialize_message(serialize_message(sent), COMMAND_TYPES[kind])
        assert bits(command_velocities(msg, joints)) == bits(qdot_a)
        assert isinstance(wire, bytes) == (kind == FLOAT64_MULTI_ARRAY)
        published = wire if isinstance(wire, bytes) else serialize_message(wire)
        assert deserialize_message(published, COMMAND_TYPES[kind]) == msg
        if kind == FLOAT64_MULTI_ARRAY:
            assert isinstance(msg, Float64MultiArray) and msg.layout.dim[0].size == 7
        elif kind == JOINT_TRAJECTORY:
            assert isinstance(msg, JointTrajectory) and list(msg.joint_names) == joints
            (point,) = msg.points
            assert bits(point.positions) == bits(q_a + qdot_a * dt)
            assert stamp_to_sec(point.time_from_start) == pytest.approx(dt, abs=1e-9)
            assert msg.header.stamp.sec == msg.header.stamp.nanosec == 0  # "start now"
        else:
            assert kind == JOINT_STATE and list(msg.name) == joints
            assert bits(msg.position) == bits(q_a)
            assert stamp_to_sec(msg.header.stamp) == pytest.approx(now, abs=1e-6)
    # One value per joint or nothing: numpy would broadcast a single value to every joint.
    wrong: list[tuple[Any, Any]] = [
        (np.zeros(7), np.zeros(1)),
        (np.zeros(7), np.zeros(8)),
        (np.zeros(6), np.zeros(7)),
        (np.zeros(7), np.float64(0.5)),
    ]
    for q_bad, qdot_bad in wrong:
        with pytest.raises(ValueError, match="shape"):
            cmd.fill(q_bad, qdot_bad, dt, now)
        with pytest.raises(ValueError, match="shape"):
            cmd.wire(q_bad, qdot_bad, dt, now)


# ------------------------------------------------------------------------------ fixed cases
def started(joints: Sequence[str] = JOINTS) -> tuple[NodePath, float, float]:
    """A node path tracking a target 5 cm away, joint states stamped 1:1 with the clock."""
    path = NodePath(joints)
    now = src = 100.0
    path.ctrl.set_joint_state(JOINTS, list(HOME.values()), now, src)
    path.ctrl.set_target(CONSTRAINT, "", HAND[:3, 3] + [0.05, 0, 0], [1.0, 0, 0, 0], now)
    out, _ = path.tick(now)
    assert out.status == "active" and np.any(out.qdot)
    return path, now, src


def test_a_stamp_in_the_future_never_locks_the_joint_states_out() -> None:
    path, now, src = started()
    with pytest.raises(InputError, match="in the future"):
        path.ctrl.set_joint_state(JOINTS, list(HOME.values()), now + 0.004, src + 1e6)
    for k in range(1, 200):  # the stream goes on undisturbed
        path.ctrl.set_joint_state(JOINTS, list(HOME.values()), now + 0.004 * k, src + 0.004 * k)
        out, msg = path.tick(now + 0.004 * k)
        assert out.status == "active" and msg is not None


def test_out_of_order_then_re_anchored_after_input_timeout() -> None:
    """A publisher restarted with a clock 50 s behind: rejected as out of order while the last
    accepted state is fresh (input_timeout 0.1 s), then the new stream is the anchor."""
    path, now, src = started()
    rejected = []
    for k in range(1, 60):
        t = now + 0.004 * k
        q = np.array(list(HOME.values())) + 1e-4 * k
        try:
            path.ctrl.set_joint_state(JOINTS, q, t, src - 50.0 + 0.004 * k)
        except InputError as exc:
            assert "out of order" in str(exc)
            rejected.append(k)
        out, msg = path.tick(t)
        # (the state is at most input_timeout old when the re-anchoring message comes)
        assert out.status == "active" and msg is not None
    assert rejected == list(range(1, len(rejected) + 1))
    assert 24 <= len(rejected) <= 26  # 0.1 s of 4 ms messages
    np.testing.assert_array_equal(path.ctrl.q, q)  # accepted since


def test_clock_jumping_back_stops_then_resumes() -> None:
    """use_sim_time with a looping bag: the node clock and the stamps go back 30 s."""
    path, now, src = started()
    now, src = now - 30.0, src - 30.0
    out, msg = path.tick(now)  # the last joint state is now "in the future": unusable
    assert out.status == "stale" and "jumped back" in out.reason
    assert msg is not None and not np.any(msg.data)  # one zero
    path.ctrl.set_joint_state(JOINTS, list(HOME.values()), now + 0.004, src + 0.004)
    out, msg = path.tick(now + 0.004)
    assert out.status == "active" and msg is not None and np.any(msg.data)


def test_old_explicit_twist_is_not_fed_forward_after_the_clock_jumps_back() -> None:
    path, now, _ = started()
    path.ctrl.set_target_twist(CONSTRAINT, "", [0.2, 0, 0, 0, 0, 0], now)
    path.ctrl.step(now)
    assert np.any(path.ctrl.constraint(CONSTRAINT).target_twist)
    now -= 10.0
    path.ctrl.set_joint_state(JOINTS, list(HOME.values()), now)
    path.ctrl.step(now)
    assert not np.any(path.ctrl.constraint(CONSTRAINT).target_twist)


def test_twist_stamps_follow_the_same_rules_as_poses() -> None:
    path, now, _ = started()
    ctrl = path.ctrl
    ctrl.set_target_twist(CONSTRAINT, "", [0.1, 0, 0, 0, 0, 0], now, 50.0)
    with pytest.raises(InputError, match="out of order"):
        ctrl.set_target_twist(CONSTRAINT, "", [0.3, 0, 0, 0, 0, 0], now + 0.01, 49.0)
    with pytest.raises(InputError, match="in the future"):
        ctrl.set_target_twist(CONSTRAINT, "", [0.3, 0, 0, 0, 0, 0], now + 0.01, 5e8)
    ctrl.set_target_twist(CONSTRAINT, "", [0.3, 0, 0, 0, 0, 0], now + 0.5, 49.0)  # re-anchored


@pytest.mark.parametrize("scale", [1e200, 1e308, 1e-5])
def test_huge_or_tiny_quaternions_are_normalised_not_a_crash(scale: float) -> None:
    """Regression: a quaternion of 1e200 overflowed the norm and raised ConfigurationError,
    which the node does not catch (the node died)."""
    path, now, _ = started()
    path.ctrl.set_target(CONSTRAINT, "", HAND[:3, 3], [scale, 0.0, 0.0, 0.0], now)
    _, target = path.ctrl.poses(CONSTRAINT)
    assert target is not None
    np.testing.assert_allclose(target[:3, :3], np.diag([1.0, -1.0, -1.0]), atol=1e-12)


def test_any_exception_of_the_solve_is_a_fault_with_one_zero() -> None:
    """Regression: a non-ItascError from the solve (numba's LinAlgError on a NaN matrix)
    escaped Controller.step and killed the node's timer. The tree is broken for real (a NaN in
    a joint axis of its own copy of the model), nothing is mocked."""
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    ctrl = Controller(tree, CONFIG)
    path = NodePath(JOINTS)
    path.ctrl = ctrl
    ctrl.set_joint_state(JOINTS, list(HOME.values()), 0.0)
    ctrl.set_target(CONSTRAINT, "", HAND[:3, 3] + [0.05, 0, 0], [1.0, 0, 0, 0], 0.0)
    assert path.tick(0.0)[0].status == "active"
    tree._m.axis[2, 0] = math.nan
    outs = [path.tick(0.004 * k) for k in range(1, 4)]
    assert [o.status for o, _ in outs] == ["fault"] * 3
    assert [m is not None for _, m in outs] == [True, False, False]
    assert not np.any(outs[0][1].data)
    # A solver that takes the NaN matrix into an SVD raises (numba's LinAlgError); this one
    # checks the weighted rows first and reports a non-finite solve: both are faults.
    reason = outs[0][0].reason
    assert "solve failed: LinAlgError" in reason or "non-finite joint velocities" in reason, reason
