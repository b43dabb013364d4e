"""Over DDS: a task the node cannot follow is reported, and a late joint state never speeds the
robot up.

The node (config/panda.yaml: Franka's motion limits) and a simulated Panda run as processes in
this module's domain; the test publishes the targets and listens to the commands, ``~/status``
and ``/diagnostics``:

* the hand turned about the base's axis until joint 1 reaches its upper limit and the arm can no
  longer follow: ``~/status`` and ``/diagnostics`` (WARN) name the task, how much of it is
  followed and why (joint 1 at its upper limit), and the log says so (throttled);
* the simulated robot's joint states stop while it moves at speed (it goes on with its commands,
  as a robot whose driver's state publisher stalled): until the stale stop, no command is larger
  than the last one sent on a fresh state.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped
from procs import (
    PANDA_URDF,
    SIM_ROBOT_MODULE,
    RosTestClient,
    read_log,
    ros_client,
    start_ros,
    stop_processes,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import QoSProfile, ReliabilityPolicy
from robots import erd_urdf_path
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.core import KinematicTree
from itasc_ros.core.control.joint_input import INTERVAL_FILTER
from itasc_ros.core.control.journal import Code, decode
from itasc_ros.core.control.prediction import LATE_AFTER, SNAPSHOT_EXTRA, SNAPSHOT_PER_JOINT
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.paths import path_point
from itasc_ros.core.solve.small_svd import MEMORY_SIZE

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "panda.yaml"
TIMEOUT = 120.0  # [s] start-up and discovery, generous: the machine is shared
ARM = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_tracking_reports_test_client") as c:
        yield c


def _pair(domain: int, ns: str, q0: list[float], lag: float = 0.0) -> tuple[Any, Any]:
    """The node (config/panda.yaml, 250 Hz) and a simulated Panda starting at ``q0``, in ``ns``.

    ``lag`` > 0: the physics robot (MuJoCo, example-robot-data's Panda) with servos that lag
    that much [s], and the node told it.
    """
    told = [f"actuator_lag:={lag}"] if lag else []
    node = start_ros(
        domain, f"urdf_file:={PANDA_URDF}", "command_out_topic:=commands",
        "control_rate:=250.0", *told, params_files=[PARAMS], ns=ns,
        remaps=[f"/diagnostics:={ns}/diagnostics"],
    )  # fmt: skip
    physics = ["physics:=mujoco", f"actuator_lag:={lag}"] if lag else []
    urdf = erd_urdf_path("panda") if lag else PANDA_URDF
    sim = start_ros(
        domain, f"urdf_file:={urdf}", "rate:=250.0", "command_topic:=commands",
        f"initial_positions:={json.dumps(q0)}", f"joints:={json.dumps(ARM)}", *physics, ns=ns,
        module=SIM_ROBOT_MODULE, name=f"sim{ns.replace('/', '_')}",
    )  # fmt: skip
    return node, sim


def _positions(msg: JointState) -> np.ndarray:
    return np.array([msg.position[list(msg.name).index(j)] for j in ARM])


def _target(client: RosTestClient, ns: str) -> tuple[Any, Any]:
    return (
        client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose"),
        client.publisher(TwistStamped, f"{ns}/itasc_node/target_twist"),
    )


def _publish(client: RosTestClient, pubs: tuple[Any, Any], pose: np.ndarray, twist: Any) -> None:
    """The target pose (4, 4) and its twist (6,) in the root frame, stamped now."""
    stamp = client.node.get_clock().now().to_msg()
    msg = PoseStamped()
    msg.header.stamp = stamp
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, pose[:3, 3])
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(pose[:3, :3]))
    tw = TwistStamped()
    tw.header.stamp = stamp
    tw.twist.linear.x, tw.twist.linear.y, tw.twist.linear.z = map(float, twist[:3])
    tw.twist.angular.x, tw.twist.angular.y, tw.twist.angular.z = map(float, twist[3:])
    pubs[1].publish(tw)
    pubs[0].publish(msg)


def _start(
    client: RosTestClient, node: Any, pubs: tuple[Any, Any], states: Any, pose: np.ndarray
) -> None:
    """Until the node commands: its model, the robot's states, the target ``pose`` held."""
    client.wait_for_subscribers(pubs[0], 1, TIMEOUT)
    client.wait_for(lambda: states, TIMEOUT, "the simulated robot's joint states")
    client.wait_for(lambda: "model" in read_log(node), TIMEOUT, "the node's model")
    deadline = time.monotonic() + TIMEOUT
    while "control active" not in read_log(node):
        assert time.monotonic() < deadline, "timed out waiting for the node to command"
        _publish(client, pubs, pose, np.zeros(6))
        time.sleep(0.02)


def test_a_joint_driven_into_its_limit_is_reported_in_the_status_and_the_diagnostics(
    client: RosTestClient, dds_domain: int
) -> None:
    ns = "/limit"
    q0 = [2.3, -0.3, 0.0, -2.0, 0.0, 1.8, 0.785]
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    hand = tree.forward_kinematics(np.array(q0), "panda_hand")
    r, th0, z = np.hypot(*hand[:2, 3]), math.atan2(hand[1, 3], hand[0, 3]), hand[2, 3]
    node, sim = _pair(dds_domain, ns, q0)
    pubs = _target(client, ns)
    states = client.collect(JointState, f"{ns}/joint_states", 20000)
    status = client.collect(String, f"{ns}/itasc_node/status", 2000)
    diags = client.collect(DiagnosticArray, f"{ns}/diagnostics", 2000)
    w = 0.6  # [rad/s] about the base's axis: joint 1 reaches its limit after ~1 s
    try:
        _start(client, node, pubs, states, hand)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 7.0:
            t = time.monotonic() - t0
            c, s = math.cos(w * t), math.sin(w * t)
            pose = hand.copy()
            pose[:3, :3] = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ hand[:3, :3]
            pose[:3, 3] = [r * math.cos(th0 + w * t), r * math.sin(th0 + w * t), z]
            _publish(
                client, pubs, pose, np.r_[w * np.array([-pose[1, 3], pose[0, 3], 0]), 0, 0, w]
            )
            time.sleep(0.02)
    finally:
        stop_processes([node, sim])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    q = _positions(states[-1][1])
    assert abs(q[0] - tree.upper[0]) < 1e-3, q  # joint 1 went to its limit
    reports = [json.loads(m.data) for _, m in list(status)]
    short = [st for st in reports if st.get("shortfall")]
    assert short, [st.get("following") for st in reports[-5:]]
    assert all("following" in st for st in reports if st["status"] == "active")
    last = short[-1]
    assert last["shortfall"].startswith("task 'ee' followed at "), last
    assert "panda_joint1 at its upper limit" in last["shortfall"], last
    assert last["following"]["ee"] < 0.95, last
    warned = [
        s
        for _, arr in list(diags)
        for s in arr.status
        if s.level == DiagnosticStatus.WARN and "task 'ee' followed at" in s.message
    ]
    assert warned, [s.message for _, arr in list(diags)[-3:] for s in arr.status]
    values = {kv.key: kv.value for kv in warned[-1].values}
    assert "panda_joint1 at its upper limit" in values["shortfall"], values
    assert float(values["following.ee"]) < 0.95 and float(values["time_not_followed_s.ee"]) > 0
    assert "task 'ee' followed at" in log  # the node's log says it too (throttled)
    assert log.count("task 'ee' followed at") < 10, log[-2000:]


def _set_bool(client: RosTestClient, service: str, name: str, value: bool) -> None:
    pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    req = SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)])
    res = client.call(SetParameters, service, req)
    assert res.results[0].successful, res.results[0].reason


def _circle_then_mute(
    client: RosTestClient,
    ns: str,
    pubs: tuple[Any, Any],
    home: np.ndarray,
    mute: float,
    seconds: float,
) -> float:
    """The target on a circle (0.1 m at 0.4 m/s) with its twist for ``seconds`` [s]; the
    simulated robot's joint states switched off ``mute`` [s] in. Returns when they were
    (``time.monotonic()``)."""
    t0 = time.monotonic()
    muted = math.inf
    while time.monotonic() - t0 < seconds:
        t = time.monotonic() - t0
        p, v = path_point(t, home[:3, 3], 0.1, 0.4, "circle")
        pose = home.copy()
        pose[:3, 3] = p
        _publish(client, pubs, pose, np.r_[v, 0.0, 0.0, 0.0])
        if t > mute and math.isinf(muted):
            muted = time.monotonic()
            _set_bool(client, f"{ns}/itasc_sim_robot/set_parameters", "publish_states", False)
        time.sleep(0.01)
    return muted


def test_a_late_joint_state_never_speeds_the_robot_up(
    client: RosTestClient, dds_domain: int
) -> None:
    """Judged on the node's own clock: its journal has each joint state's reception and each
    tick's time and command, so which ticks solved on a late state is known exactly (not from
    when this process heard the states: a starved node takes the last one later)."""
    ns = "/late"
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
    home = tree.forward_kinematics(np.array(q0), "panda_hand")
    node, sim = _pair(dds_domain, ns, q0)
    pubs = _target(client, ns)
    states = client.collect(JointState, f"{ns}/joint_states", 20000)
    cmds = client.collect(Float64MultiArray, f"{ns}/commands", 20000)
    reliable = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)
    journal = client.collect(Float64MultiArray, f"{ns}/itasc_node/journal", reliable)
    try:
        _start(client, node, pubs, states, home)
        client.wait_for(lambda: journal, TIMEOUT, "the node's journal")
        _circle_then_mute(client, ns, pubs, home, 3.0, 4.5)  # at speed: the states stop
    finally:
        stop_processes([node, sim])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    assert "control stale" in log
    messages = [decode(m.data) for _, m in list(journal)]
    seq = [m.sequence for m in messages]
    assert seq == list(range(seq[0], seq[0] + len(seq)))  # reliable: none lost
    ticks = _late_ticks(messages, period=1.0 / 250.0, timeout=0.1)
    # every published command while a state was late, against the last one on a fresh state
    late = [(size, fresh) for size, fresh, is_late in ticks if is_late and fresh > 0.0]
    assert late, "no tick on a late joint state"
    ratio = max(size / fresh for size, fresh in late)
    fresh = max(fresh for _, fresh in late)
    print(
        f"\n{len(late)} commands on a late joint state, the largest {ratio:.4f}x the last one "
        f"on a fresh state ({fresh:.4f} rad/s)"
    )
    assert fresh > 0.5, fresh  # at speed when the states stopped
    assert ratio <= 1.0 + 1e-9, ratio  # a frozen state grew them 1.2-1.3x
    # what the node says it published is what the robot heard, and the stale stop ends on a zero
    published = _published(messages)
    assert not any(published[-1]), "the stale stop ends on a zero"
    client.wait_for(
        lambda: set(published) <= {tuple(m.data) for _, m in list(cmds)}, TIMEOUT,
        "every command the journal says the node published",
    )  # fmt: skip


def _published(messages: list[Any]) -> list[tuple[float, ...]]:
    """The commands (7,) the journal's TICK records say the node published."""
    return [
        tuple(r.payload[-len(ARM) :])
        for m in messages
        for r in m.records
        if r.code == Code.TICK and r.payload[2]
    ]


def _late_ticks(
    messages: list[Any], period: float, timeout: float
) -> list[tuple[float, float, bool]]:
    """(norm of the command, norm of the last command published on a fresh state, late) of each
    published tick of a journal of one robot's joints, from its first SNAPSHOT on.

    The rule the node promises, on its own clock: a joint state is late once older than
    :data:`LATE_AFTER` times the larger of the control ``period`` [s] and the states' usual
    interval, a filtered mean of their reception gaps (each at most ``timeout`` [s]), which the
    SNAPSHOT holds and each JOINT_STATE record moves on.
    """
    n = len(ARM)
    # the prediction's state after the interval, then the solve's memory
    tail = SNAPSHOT_PER_JOINT * n + SNAPSHOT_EXTRA + MEMORY_SIZE

    def snapshot(p: np.ndarray) -> tuple[float, float]:
        """(the states' interval [s], the last fresh command's norm) of a SNAPSHOT."""
        return float(p[-tail - 1]), float(p[-3 - MEMORY_SIZE])

    every = [r for m in messages for r in m.records]
    start = next(i for i, r in enumerate(every) if r.code == Code.SNAPSHOT)
    first = every[start]  # the first a new subscriber is sent, or the next second's
    interval, fresh_norm = snapshot(first.payload)
    received = float(first.payload[8]) if first.payload[7] else math.nan  # has a state: its time
    out = []
    for r in every[start:]:
        if r.code == Code.SNAPSHOT:  # one a second: the node's own values, to check these
            held = snapshot(r.payload)
            assert held[0] == interval, (held, interval)
            assert math.isclose(held[1], fresh_norm, rel_tol=1e-12), (held, fresh_norm)
        elif r.code == Code.JOINT_STATE:
            rx = float(r.payload[0])
            if not math.isnan(received):
                gap = min(max(rx - received, 0.0), timeout)
                interval = (
                    gap if interval == 0.0 else interval + INTERVAL_FILTER * (gap - interval)
                )
            received = rx
        elif r.code == Code.TICK and r.payload[2]:
            now, rx = float(r.payload[0]), float(r.payload[4])
            expected = LATE_AFTER * max(period, interval) if interval > 0.0 else math.inf
            is_late = rx < now - expected
            size = float(np.linalg.norm(r.payload[-n:]))
            out.append((size, fresh_norm, is_late))
            if not is_late:
                fresh_norm = size
    return out


def test_a_stale_stop_brings_the_physical_arm_to_rest_and_it_does_not_sag(
    client: RosTestClient, dds_domain: int
) -> None:
    """The physics Panda (MuJoCo, 20 ms servos, gravity compensated by its own controller) on a
    circle at speed; its joint states stop: the node ramps the command down within the
    acceleration limits and ends on a zero, the arm comes to rest within a second of it, and
    holds where it stopped against gravity (the simulator's own report, 1 Hz)."""
    ns = "/late_physics"
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
    home = tree.forward_kinematics(np.array(q0), "panda_hand")
    node, sim = _pair(dds_domain, ns, q0, lag=0.02)
    pubs = _target(client, ns)
    states = client.collect(JointState, f"{ns}/joint_states", 20000)
    cmds = client.collect(Float64MultiArray, f"{ns}/commands", 20000)
    stats = client.collect(String, f"{ns}/itasc_sim_robot/stats", 100)
    try:
        _start(client, node, pubs, states, home)
        muted = _circle_then_mute(client, ns, pubs, home, 2.5, 4.0)  # at speed: states stop

        def at_rest() -> bool:  # two reports 1 s after the last motion, as this process took them
            moving = [t for t, m in list(cmds) if np.any(m.data)]
            since = max(moving, default=muted) + 1.0
            return len([1 for t, _ in list(stats) if t > max(since, muted + 3.5)]) >= 2

        client.wait_for(at_rest, TIMEOUT, "the simulator's reports after the stop")
    finally:
        stop_processes([node, sim])
    log = read_log(node)
    assert "control stale" in log, log[-2000:]
    sent = [(t, np.array(m.data)) for t, m in list(cmds)]
    assert not np.any(sent[-1][1]), "the stop ends on a zero"
    last_motion = max(t for t, c in sent if np.any(c))
    amax = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])  # Franka's, panda.yaml
    ramp = np.array([c for t, c in sent if t > muted])
    assert np.all(np.abs(np.diff(ramp, axis=0)) * 250.0 <= amax * (1 + 1e-6))
    later = [(t, json.loads(m.data)) for t, m in list(stats) if t > last_motion + 1.0]
    assert len(later) >= 2, later
    v = np.array(later[0][1]["velocities"])
    drift = np.abs(np.array(later[-1][1]["positions"]) - np.array(later[0][1]["positions"]))
    print(f"\nat rest: |v| {np.abs(v).max():.2e} rad/s; drift {drift.max():.2e} rad over "
          f"{later[-1][0] - later[0][0]:.1f} s")  # fmt: skip
    assert np.abs(v).max() < 1e-3, v
    assert drift.max() < 1e-4, drift
