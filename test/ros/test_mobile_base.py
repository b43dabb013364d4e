"""Mobile bases over real DDS: the hand held fixed in the world, a commanded base reaching.

The node (``config/panda_mobile.yaml``: the hand's pose at priority 1, a posture at 2) and the
simulated robot run as their own processes. First the simulated base follows a circle 0.5 m
across at 0.3 m/s on its own (``base_kind:=none``) and publishes its odometry with each joint
state; a target fixed in ``odom`` (the hand's home pose seen from the circle's centre: the base
is never more than the radius from it) is streamed at 50 Hz. Each joint state is paired with
the odometry of the same stamp: the hand's pose in the world is measured independently of the
node, with the base's twist fed forward, then without (``feed_base_twist`` set false live);
then the odometry turns hostile and the node must stay safe, and the recording replays
exactly. Second, the base is commanded (holonomic, ``cmd_vel``) and carries the hand to a
target 1.5 m beyond the arm's reach, every command within the limits.
"""

from __future__ import annotations

import copy
import json
import math
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from procs import (
    SIM_ROBOT_MODULE,
    CommandChecker,
    RosTestClient,
    read_log,
    replay_compare,
    ros_client,
    start_recorder,
    start_ros,
    stop_processes,
    stop_recorded,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.ros.conversions import pose_to_matrix, stamp_or_none

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
URDF = REPO / "urdf" / "panda.urdf"
PARAMS = REPO / "config" / "panda_mobile.yaml"  # the hand's pose at priority 1, a posture at 2
TOPICS = [
    "/joint_states", "/odom", "/itasc_node/target_pose", "/commands", "/itasc_node/journal",
    "/itasc_node/parameters", "/parameter_events",
]  # fmt: skip
TIMEOUT = 120.0  # [s] start-up and discovery, generous: the machine is shared
REACH_TIMEOUT = 60.0  # [s] the reach beyond the arm: within 1 mm after 9-11 s on a quiet machine
HELD = 1e-3  # [m] the hand held in the world: most joint states within this (see _held)
ARM = [f"panda_joint{i}" for i in range(1, 8)]
HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
RADIUS = 0.25  # [m] of the base's circle: the hand's target is held over its centre


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_mobile_test_client") as c:
        yield c


def _set_bool(client: RosTestClient, name: str, value: bool) -> None:
    pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    req = SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)])
    res = client.call(SetParameters, "/itasc_node/set_parameters", req)
    assert res.results[0].successful, res.results[0].reason


@dataclass
class Hand:
    """The hand of a robot in the world, measured from its joint states and odometry.

    Attributes:
        arm: the robot's tree restricted to ``joints``.
        states: the joint states received, ``(time, message)``.
        odoms: the odometry received, ``(time, message)``.
        joints: the joints that move the hand.
        link: the hand's link.
    """

    arm: KinematicTree
    states: list[Any]
    odoms: list[Any]
    joints: list[str] = field(default_factory=lambda: list(ARM))
    link: str = "panda_hand"

    def errors(
        self,
        target: np.ndarray,
        t0: float,
        last: int = 0,
        t1: float = math.inf,
        skip: Sequence[tuple[float, float]] = (),
    ) -> list[float]:
        """World distances [m] from ``target`` at each joint state received after ``t0``.

        Each joint state is paired with the odometry of its stamp (``last``: only the last so
        many joint states; ``t1``: received before it; ``skip``: stamps in these windows of
        ROS time [s] left out).
        """
        odoms = list(self.odoms)
        bases = {stamp_or_none(m.header.stamp): pose_to_matrix(m.pose.pose) for _, m in odoms}
        out = []
        for t, m in list(self.states)[-last:]:
            base = bases.get(stamp_or_none(m.header.stamp))
            stamp = stamp_or_none(m.header.stamp) or 0.0
            if t < t0 or t > t1 or base is None or any(a <= stamp <= b for a, b in skip):
                continue
            q = np.array([m.position[list(m.name).index(j)] for j in self.joints])
            hand = base @ self.arm.forward_kinematics(q, self.link)
            out.append(float(np.linalg.norm(hand[:3, 3] - target[:3, 3])))
        return out

    def hold(self, pub: Any, msg: PoseStamped, target: np.ndarray, timeout: float) -> float:
        """Stream ``msg`` until the hand stays within 1 mm for 0.5 s; how long it took [s]."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            _stream(pub, msg, 0.25)
            recent = self.errors(target, time.monotonic() - 0.5)
            if len(recent) > 50 and max(recent) < 1e-3:
                return time.monotonic() - t0
        raise AssertionError(f"the hand did not reach its world target in {timeout} s")


#: How long [s] after an upset (below) the hand may take to catch the moving base up again.
RECOVERY = 2.0


def _upsets(log: str, stats: Sequence[tuple[float, Any]]) -> list[tuple[float, float]]:
    """Windows of ROS time [s] in which the hand may fall behind the base, for no fault of the
    control law: each (start, end) of an upset (up to :data:`RECOVERY` after it).

    The node's warnings that it stopped (stale inputs, a fault, a hold) or that its odometry
    came too late to place the base by its twist (``odometry behind``), from 0.2 s before
    each; and the simulated robot's gaps between its commands taking effect over its
    ``command_gap`` (its ``~/stats``: commands delivered late, the last one integrated
    meanwhile).
    """
    warned = r"^\[WARN\] \[(\d+\.\d+)\] \[[^]]*\]: (control |odometry behind)"
    out = [
        (float(m.group(1)) - 0.2, float(m.group(1)) + RECOVERY)
        for m in re.finditer(warned, log, re.MULTILINE)
    ]
    for _, msg in stats:
        out += [(a, b + RECOVERY) for a, b in json.loads(msg.data)["command_gaps"]]
    return out


def _held(errors: list[float], what: str) -> None:
    """The hand held within :data:`HELD` in the world: its median, and its 90th percentile
    within twice that.

    Not its maximum: the base moves on its own (its own process) while the node's inputs come
    over DDS; a starved node, or a DDS delivery pause to it (the node then stops, stale, as it
    promises), leaves the hand behind the moving base for that long (0.3 m/s: 20 mm after
    66 ms), which says nothing of the control law; a slower machine's later ticks add a
    fraction of a millimetre to every joint state (Talos swaying: p50 0.55 mm, p90 1.0 mm on a
    machine half as fast, beside another test worker). A hand not held (no feed-forward of
    the base, a wrong frame) is off in most of its joint states by the base's speed over the
    pose task's gain (0.1 m/s at a gain of 20: 5 mm) or more.
    """
    p50, p90 = np.percentile(errors, 50), np.percentile(errors, 90)
    assert p50 < HELD and p90 < 2.0 * HELD, (
        f"{what}: p50 {p50 * 1e3:.3f} mm, p90 {p90 * 1e3:.3f} mm, max {max(errors) * 1e3:.3f} mm"
    )


def _world_target(pose: np.ndarray) -> PoseStamped:
    """A target pose (4, 4) in ``odom`` as a message."""
    msg = PoseStamped()
    msg.header.frame_id = "odom"
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, pose[:3, 3])
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(pose))
    return msg


def _stream(pub: Any, msg: PoseStamped, seconds: float) -> float:
    """Publish ``msg`` at 50 Hz for ``seconds``; returns when it began (monotonic [s])."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        pub.publish(msg)
        time.sleep(0.02)
    return t0


def test_a_world_fixed_hand_target_is_held_while_the_base_drives_a_circle(
    client: RosTestClient, dds_domain: int, tmp_path: Path
) -> None:
    node = start_ros(
        dds_domain, f"urdf_file:={URDF}", "command_out_topic:=commands", "world_frame:=odom",
        "odom_topic:=odom", "base_kind:=none", params_files=[PARAMS],
    )  # fmt: skip
    sim = start_ros(
        dds_domain, f"urdf_file:={URDF}", "rate:=250.0", f"joints:={json.dumps(ARM)}",
        f"initial_positions:={json.dumps(HOME)}", "command_topic:=commands",
        "base_motion:=circle", f"base_radius:={RADIUS}", "base_speed:=0.3",
        module=SIM_ROBOT_MODULE,
    )  # fmt: skip
    bag = tmp_path / "mobile_bag"
    recorder = start_recorder(dds_domain, bag, TOPICS)
    states = client.collect(JointState, "/joint_states")
    odoms = client.collect(Odometry, "/odom")
    sim_stats = client.collect(String, "/itasc_sim_robot/stats")
    arm = KinematicTree.from_urdf_file(URDF).select_joints(ARM)
    checker = CommandChecker(client, arm.velocity_limits, "/commands")
    target_pub = client.publisher(PoseStamped, "/itasc_node/target_pose")
    odom_pub = client.publisher(Odometry, "/odom")
    try:
        client.wait_for_subscribers(target_pub, 1, TIMEOUT)
        client.wait_for(lambda: odoms and states, TIMEOUT, "joint states and odometry")
        client.wait_for(lambda: "model 'panda'" in read_log(node), TIMEOUT, "the node's model")
        centre = np.eye(4)  # the base's circle starts at the origin heading along x
        centre[1, 3] = RADIUS
        target = centre @ arm.forward_kinematics(np.array(HOME), "panda_hand")
        msg = _world_target(target)
        hand = Hand(arm, states, odoms)
        t_reached = hand.hold(target_pub, msg, target, REACH_TIMEOUT)
        t_fed = _stream(target_pub, msg, 3.0)
        t_fed_end = time.monotonic()
        fed = hand.errors(target, t_fed)
        _set_bool(client, "feed_base_twist", False)
        t_unfed = _stream(target_pub, msg, 4.0) + 1.5
        unfed = hand.errors(target, t_unfed)
        # Hostile odometry beside the good one: each kind refused, nothing unsafe published.
        _set_bool(client, "feed_base_twist", True)
        client.wait_for_subscribers(odom_pub, 1, TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while True:  # until the node's log shows them refused (not a fixed sleep)
            for bad in _hostile(odoms[-1][1]):
                for _ in range(25):  # the simulated robot's odometry replaces it within 2 ms
                    odom_pub.publish(bad)
                    target_pub.publish(msg)
                    time.sleep(0.004)
            log = read_log(node)
            if "odometry" in log and "rejected" in log:
                break
            assert time.monotonic() < deadline, "no hostile odometry refused: " + log[-3000:]
    finally:
        stop_recorded([node, sim], recorder)
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    rms = lambda e: float(np.sqrt(np.mean(np.square(e))))  # noqa: E731
    print(
        f"\nbase circle 0.25 m at 0.3 m/s: hand held in the world to {rms(fed) * 1e3:.3f} mm RMS "
        f"({max(fed) * 1e3:.3f} max) with the base's twist fed forward, {rms(unfed) * 1e3:.3f} "
        f"mm RMS ({max(unfed) * 1e3:.3f} max) without; {len(fed)} + {len(unfed)} joint states; "
        f"reached in {t_reached:.2f} s"
    )
    # 3 s and 2.5 s of joint states at 250 Hz asked (375 of the 2.5 s's on a machine half as
    # fast, beside another worker: the simulated robot skips the ticks it is late for); the
    # count says both runs ran, not at which rate (a node starved beside another worker: 68 Hz)
    assert len(fed) > 100 and len(unfed) > 100
    # A stop the node made as it promises (its joint states stale: a starved simulated robot
    # or node, measured once beside a CPU burner: 148 mm behind the base), odometry it warned
    # was too late to place the base, or commands the simulated robot received late leave the
    # hand behind the moving base until it has caught up: those joint states say nothing of
    # the feed-forward. Left out up to RECOVERY after each such upset; most remain.
    upsets = _upsets(log, sim_stats)
    if upsets:
        kept = hand.errors(target, t_fed, t1=t_fed_end, skip=upsets)
        print(f"upsets {upsets}: {len(kept)} of {len(fed)} fed joint states kept")
        assert len(kept) > 0.3 * len(fed), (len(kept), len(fed), upsets)
        fed = kept
    _held(fed, "the base's twist fed forward")
    # Without the base's twist the hand lags the moving base: most joint states further off
    # (medians: a stall of either run moves its median little).
    assert np.median(unfed) > 3.0 * np.median(fed), (np.median(unfed), np.median(fed))
    assert "odometry" in log and "rejected" in log  # the hostile ones, warned about
    # Every command finite and within limits; the count says the 7 s ran, not at which rate
    # (1750 at 250 Hz; a node starved beside another test worker sent 954).
    assert checker.total > 500 and checker.bad == [], checker.bad[:3]
    # The recording replays exactly: every command recomputed from its odometry and targets.
    res, out = replay_compare(bag)
    assert res["exact"] and res["max_abs_diff"] == 0.0 and res["commands"] > 500, out
    assert res["compare"]["state_mismatches"] == 0, out


def _hostile(good: Odometry) -> list[Odometry]:
    """Odometry messages the node must refuse: NaN, a jump, a wrong frame, out of order."""
    out = []
    for change in ("nan", "jump", "frame", "child", "old"):
        m = copy.deepcopy(good)
        if change == "nan":
            m.pose.pose.position.x = float("nan")
        elif change == "jump":
            m.pose.pose.position.x += 3.0
        elif change == "frame":
            m.header.frame_id = "map"
        elif change == "child":
            m.child_frame_id = "panda_hand"
        else:
            m.header.stamp.sec -= 5
        out.append(m)
    return out


def test_a_commanded_holonomic_base_reaches_a_target_beyond_the_arms_reach(
    client: RosTestClient, dds_domain: int, tmp_path: Path
) -> None:
    """Base and arm share the reaching (cmd_vel and the arm's command), within their limits."""
    node = start_ros(
        dds_domain, f"urdf_file:={URDF}", "command_out_topic:=/reach/commands",
        "world_frame:=odom", "odom_topic:=/reach/odom", "base_kind:=holonomic",
        "base_cmd_topic:=/reach/cmd_vel", "max_cartesian_speed:=0.5", params_files=[PARAMS],
        name="itasc_node_reach",
    )  # fmt: skip
    sim = start_ros(
        dds_domain, f"urdf_file:={URDF}", "rate:=500.0", f"joints:={json.dumps(ARM)}",
        f"initial_positions:={json.dumps(HOME)}", "command_topic:=/reach/commands",
        "base_motion:=holonomic", "base_cmd_topic:=/reach/cmd_vel", "odom_topic:=/reach/odom",
        module=SIM_ROBOT_MODULE,
        name="sim_reach",
    )  # fmt: skip
    client.clear("/joint_states")
    bag = tmp_path / "reach_bag"
    topics = ["/joint_states", "/reach/odom", "/itasc_node/target_pose", "/reach/commands",
              "/reach/cmd_vel", "/itasc_node/journal", "/itasc_node/parameters"]  # fmt: skip
    recorder = start_recorder(dds_domain, bag, topics)
    states = client.collect(JointState, "/joint_states")
    odoms = client.collect(Odometry, "/reach/odom")
    arm_cmds = client.collect(Float64MultiArray, "/reach/commands", 10000)  # every one
    base_cmds = client.collect(Twist, "/reach/cmd_vel", 10000)
    target_pub = client.publisher(PoseStamped, "/itasc_node/target_pose")
    arm = KinematicTree.from_urdf_file(URDF).select_joints(ARM)
    home = arm.forward_kinematics(np.array(HOME), "panda_hand")
    target = home.copy()
    target[:3, 3] += [arm.reach("panda_hand") + 1.5, 0.4, 0.0]  # 1.5 m beyond the arm's reach
    try:
        client.wait_for_subscribers(target_pub, 1, TIMEOUT)
        client.wait_for(lambda: odoms and states, TIMEOUT, "joint states and odometry")
        client.wait_for(lambda: "model 'panda'" in read_log(node), TIMEOUT, "the node's model")
        msg = _world_target(target)
        # The stream counts from the node's first command, not from its model: its target
        # reader may match this process's writer seconds after the writer matched it (a
        # discovery announcement lost, doc/replay.md "Start the recorder once the node runs"),
        # and the targets sent before are lost. Then until the hand is within 1 mm (9-11 s
        # on a quiet machine; one run in 3-6 was 0.17-0.25 m short at 9 s when the stream
        # counted from the model, and 19.8 mm short at a fixed 15 s).
        deadline = time.monotonic() + TIMEOUT
        while "control active" not in read_log(node):
            assert time.monotonic() < deadline, "the node never commanded: " + read_log(node)
            _stream(target_pub, msg, 0.2)
        t0 = time.monotonic()
        hand = Hand(arm, states, odoms)
        while max(hand.errors(target, t0, 250), default=1.0) >= 1e-3:
            assert time.monotonic() - t0 < REACH_TIMEOUT, (
                f"the hand is {max(hand.errors(target, t0, 250), default=1.0) * 1e3:.1f} mm "
                f"from the target after {REACH_TIMEOUT:g} s"
            )
            _stream(target_pub, msg, 1.0)
        last = hand.errors(target, t0, last=250)
        print(f"\nholonomic base: streamed {time.monotonic() - t0:.1f} s")
    finally:
        stop_recorded([node, sim], recorder)
    # The node's last commands (its zeros at SIGINT) reach this process: waited for, not slept.
    client.wait_for(
        lambda: base_cmds and arm_cmds and not base_cmds[-1][1].linear.x
        and not base_cmds[-1][1].linear.y and not base_cmds[-1][1].angular.z
        and not any(arm_cmds[-1][1].data),
        TIMEOUT, "the node's last commands, zeros",
    )  # fmt: skip
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    assert "control active" in log, log[-2000:]
    travelled = float(np.linalg.norm(pose_to_matrix(odoms[-1][1].pose.pose)[:3, 3]))
    print(
        f"\nholonomic base: hand {max(last) * 1e3:.3f} mm from a target "
        f"{np.linalg.norm(target[:3, 3]):.2f} m away; the base travelled {travelled:.2f} m"
    )
    assert len(last) > 50 and max(last) < 1e-3
    # every command within the limits: the base's (config) and the arm's (panda.yaml)
    base = np.array([[m.linear.x, m.linear.y, m.angular.z] for _, m in base_cmds])
    joints = np.array([m.data for _, m in arm_cmds])
    # one command of each per tick; this process's two subscriptions may match a tick apart
    # (discovery), so one topic's first command may be missing here (the recording below is
    # compared command by command). The count says the run ran, not at which rate (3500 in
    # 14 s at 250 Hz; a node starved beside another test worker sent 958).
    assert min(len(base), len(joints)) > 200 and abs(len(base) - len(joints)) <= 1
    assert np.all(np.abs(base[:, :2]) <= 0.5 + 1e-9) and np.all(np.abs(base[:, 2]) <= 1.0 + 1e-9)
    assert np.all(np.abs(joints) <= arm.velocity_limits * (1.0 + 1e-9))
    dt = 1.0 / 250.0  # the nominal period: every change within the limits over it
    assert np.all(np.abs(np.diff(base[:, :2], axis=0)) <= 1.0 * dt * (1.0 + 1e-6) + 1e-12)
    assert np.all(np.abs(np.diff(base[:, 2])) <= 2.0 * dt * (1.0 + 1e-6) + 1e-12)
    acc = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    assert np.all(np.abs(np.diff(joints, axis=0)) <= acc * dt * (1.0 + 1e-6) + 1e-12)
    assert not base[-1].any() and not joints[-1].any()  # the final zero reached both
    res, out = replay_compare(bag)  # every command, the base's included, recomputed exactly
    assert res["exact"] and res["max_abs_diff"] == 0.0 and res["commands"] > 200, out


TALOS_ARM = ["torso_1_joint", "torso_2_joint", *(f"arm_left_{i}_joint" for i in range(1, 8))]


def test_a_floating_base_humanoid_holds_its_hand_in_the_world_while_its_trunk_sways(
    client: RosTestClient, dds_domain: int
) -> None:
    """Talos (example-robot-data): the trunk's pose on odometry (a gait's sway, bob and rock)."""
    from robots import erd_urdf_path

    urdf = erd_urdf_path("talos")
    q0 = [0.0, 0.0, 0.4, 0.3, 0.0, -1.2, 0.0, 0.0, 0.0]  # the left elbow bent forward
    node = start_ros(
        dds_domain, f"urdf_file:={urdf}", f"joints:={json.dumps(TALOS_ARM)}",
        "constraints.ee.link:=arm_left_7_link", "command_out_topic:=/talos/commands",
        "joint_topic:=/talos/joint_states", "world_frame:=odom", "odom_topic:=/talos/odom",
        name="itasc_node_talos",
    )  # fmt: skip
    sim = start_ros(
        dds_domain, f"urdf_file:={urdf}", "rate:=250.0", f"joints:={json.dumps(TALOS_ARM)}",
        f"initial_positions:={json.dumps(q0)}", "command_topic:=/talos/commands",
        "base_motion:=sway", "base_speed:=0.0", "base_height:=1.0",
        "odom_topic:=/talos/odom", module=SIM_ROBOT_MODULE, name="sim_talos",
        remaps=["joint_states:=/talos/joint_states"],
    )  # fmt: skip
    states = client.collect(JointState, "/talos/joint_states")
    odoms = client.collect(Odometry, "/talos/odom")
    target_pub = client.publisher(PoseStamped, "/itasc_node/target_pose")
    arm = KinematicTree.from_urdf_file(urdf).select_joints(TALOS_ARM)
    trunk = np.eye(4)
    trunk[2, 3] = 1.0  # the trunk's mean pose: it sways, bobs and rocks about it
    target = trunk @ arm.forward_kinematics(np.array(q0), "arm_left_7_link")
    try:
        client.wait_for_subscribers(target_pub, 1, TIMEOUT)
        client.wait_for(lambda: odoms and states, TIMEOUT, "joint states and odometry")
        msg = _world_target(target)
        hand = Hand(arm, states, odoms, TALOS_ARM, "arm_left_7_link")
        held = hand.hold(target_pub, msg, target, REACH_TIMEOUT)
        errors = hand.errors(target, _stream(target_pub, msg, 3.0))
    finally:
        stop_processes([node, sim])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    print(
        f"\nTalos, trunk swaying: hand held to {max(errors) * 1e3:.3f} mm (max; p50 "
        f"{np.median(errors) * 1e3:.3f}, p99 {np.percentile(errors, 99) * 1e3:.3f}) in the world "
        f"over {len(errors)} joint states; reached in {held:.2f} s"
    )
    assert len(errors) > 100  # 3 s of joint states at 250 Hz asked: it ran (not at which rate)
    _held(errors, "Talos's hand, its trunk swaying")
