"""Two robots, one node, over real DDS: two Pandas carry a box along a figure-eight.

Two simulated Pandas run as their own processes, each with its own joint state and command
topics and its own joint names; one node (``robots: [a, b]``, b's base 1 m from a's, facing it)
solves both as one tree, each robot within ``config/panda.yaml``'s joint limits. Robot b's hand
holds the box's other side (``closure``: ``copy_pose`` of ``a_panda_hand`` at the grasp's
``target_offset``, priority 1) while robot a's hand carries the box along a figure-eight 0.2 m
across at up to 0.2 m/s (``box``, priority 2), no link of one robot nearer one of the other than
5 cm (``apart``: ``collision`` ``between`` them, checked with coal). Each robot's joint states
are interpolated to the other's stamps, so that the grasp is measured at one instant,
independently of the node. Then robot b's joint states stop: both robots stop. The recording
(the commands and the node's journal) replays exactly.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from procs import (
    SIM_ROBOT_MODULE,
    RosTestClient,
    read_log,
    replay_compare,
    replay_online,
    ros_client,
    start_recorder,
    start_ros,
    stop_processes,
    stop_recorded,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.core import KinematicTree
from itasc_ros.core.control.journal import Code, decode
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.robots import Mounted, compose_robots
from itasc_ros.ros.conversions import stamp_or_none
from itasc_ros.tools.bagio import read_bag
from itasc_ros.tools.scenarios.two_pandas import closest_between

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
URDF = REPO / "urdf" / "panda.urdf"
TIMEOUT = 120.0  # [s] start-up and discovery, generous: the machine is shared
#: [mm] RMS of a's tracking, the recording against the online replay (each a DDS run on a loaded
#: machine): one stale stop of either for 0.2 s is ~6 mm RMS apart (6.6 mm measured once); a
#: node tracking another link or robot is 50 mm and more apart.
ONLINE_TRACKING_TOLERANCE_MM = 15.0
HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
ARM = [f"panda_joint{i}" for i in range(1, 8)]
FACING = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]  # b's base: 1 m along x, turned 180 deg about z
MARGIN = 0.05  # [m] between any link of a and any link of b (capsules along the links)


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_two_robots_test_client") as c:
        yield c


def _tree() -> tuple[KinematicTree, np.ndarray]:
    facing = spatial.pose_from_xyz_quat(np.array(FACING[:3]), np.array(FACING[3:]))
    xml = URDF.read_text()
    return compose_robots([Mounted("a", xml), Mounted("b", xml, facing)]), np.r_[HOME, HOME]


#: The node's parameters of the two robots: their URDFs, topics, and b's base.
ROBOTS = (
    'robots:=["a", "b"]', f"robots.a.urdf_file:={URDF}", f"robots.b.urdf_file:={URDF}",
    "robots.a.joint_topic:=/a/joint_states", "robots.b.joint_topic:=/b/joint_states",
    "robots.a.command_out_topic:=/a/commands", "robots.b.command_out_topic:=/b/commands",
    f"robots.b.base_pose:={json.dumps(FACING)}",
)  # fmt: skip


def _limits(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A params file of panda.yaml's joint limits for each robot; and the Panda's own."""
    limits = tmp_path / "two_pandas_limits.yaml"
    panda = yaml.safe_load((REPO / "config" / "panda.yaml").read_text())
    own = panda["/**"]["ros__parameters"]["joint_limits"]
    both = {f"{r}_{j}": dict(v) for r in ("a", "b") for j, v in own.items()}  # no YAML anchors
    limits.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"joint_limits": both}}}))
    return limits, own


def _sim(domain: int, robot: str, ns: str = "") -> Any:
    """A simulated Panda on ``<ns>/<robot>/joint_states`` and ``<ns>/<robot>/commands``."""
    return start_ros(
        domain, f"urdf_file:={URDF}", "rate:=250.0", f"joints:={json.dumps(ARM)}",
        f"initial_positions:={json.dumps(HOME)}", f"command_topic:={ns}/{robot}/commands",
        f"command_gap:={STARVED}",
        remaps=[f"joint_states:={ns}/{robot}/joint_states", f"__node:=sim_{robot}"],
        module=SIM_ROBOT_MODULE,
        name=f"sim_{robot}",
    )  # fmt: skip


def _positions(msg: JointState) -> np.ndarray:
    return np.array([msg.position[list(msg.name).index(j)] for j in ARM])


def _went_on(
    cmds: list[tuple[float, Any]], window: tuple[float, float], before: tuple[float, float]
) -> tuple[bool, str]:
    """Robot a commanded through ``window`` while b was stopped or lost: at a quarter of the
    nominal 250 Hz at least, or at half the rate a was commanded at over ``before`` (times [s]
    of this process's clock): a node starved beside other tests ticks slower all along
    (measured: 80 Hz of 250), which says nothing of a going on without b.

    Returns:
        (went on, the figures).
    """

    times = np.array([t for t, _ in list(cmds)])  # [s] this process's reception times

    def rate(span: tuple[float, float]) -> float:
        inside = np.count_nonzero((times > span[0]) & (times < span[1]))
        return float(inside) / max(span[1] - span[0], 1e-9)

    after, earlier = rate(window), rate(before)
    ok = after > 0.25 * 250.0 or after > 0.5 * earlier
    return ok, f"a commanded at {after:.0f} Hz, {earlier:.0f} Hz before"


def _publish_targets(
    client: RosTestClient, pubs: dict[str, Any], hands: dict[str, np.ndarray], dy: float, dz: float
) -> None:
    """Each robot's hand target (world frame): its home pose moved by ``dy``, ``dz`` [m]."""
    msg = PoseStamped()
    msg.header.frame_id = "world"
    for r, pub in pubs.items():
        p = hands[r][:3, 3] + [0.0, dy, dz]
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(hands[r]))
        msg.header.stamp = client.node.get_clock().now().to_msg()
        pub.publish(msg)


def _grasp_errors(
    tree: KinematicTree, a: list[Any], b: list[Any], grasp: np.ndarray, t0: float
) -> list[tuple[float, float, float]]:
    """(position [m], angle [rad], a's stamp [s]) of the grasp at each of a's states after ``t0``.

    b's joint positions are interpolated linearly to each of a's header stamps.
    """
    tb = _stamps(b)
    qb = np.array([_positions(m) for _, m in b])
    out = []
    for t, m in a:
        ta = stamp_or_none(m.header.stamp) or 0.0
        if t < t0 or not tb[0] <= ta <= tb[-1]:
            continue
        q_b = np.array([np.interp(ta, tb, qb[:, j]) for j in range(7)])
        q = np.r_[_positions(m), q_b]
        rel = np.linalg.inv(tree.forward_kinematics(q, "a_panda_hand")) @ (
            tree.forward_kinematics(q, "b_panda_hand")
        )
        d = np.linalg.inv(grasp) @ rel
        out.append(
            (
                float(np.linalg.norm(d[:3, 3])),
                float(np.linalg.norm(spatial.so3_log(d[:3, :3]))),
                ta,
            )
        )
    return out


# Tests marked `alone`: the grasp's millimetres, a robot's command rate and windows of commands
# by the time this process received them are judged on a real-time run of three processes at
# 250 Hz. Beside another test worker on a 2-CPU machine (six nodes starting at once) the node
# ticked at 50 Hz of 250 and a robot's driver starved for 100 ms: the grasp or the rate measured
# the machine. They run with the machine to themselves (`make test`'s `alone` run); the
# starvation left is left out of the judgement.

#: [s] A gap in a simulated robot's joint states longer than this (6 periods at 250 Hz): its
#: process was starved, and took the commands sent meanwhile late.
STARVED = 0.025

#: [s] A gap in the node's ticks longer than this (12 periods at 250 Hz): the node's process
#: stood still (starved, or paused), and both robots went on with the commands they had: at
#: these speeds the grasp drifts by ~0.1 m/s^2 times the gap squared (2 mm after 150 ms, a
#: 150 ms SIGSTOP of the node measured), which no command can prevent while the node is not
#: running.
NODE_STALLED = 0.05


def _node_stalls(journal: Path | list[Any]) -> list[tuple[float, float]]:
    """(start, end) ROS times [s] of the gaps longer than :data:`NODE_STALLED` between the
    node's ticks (their own times, on the node's clock), from the node's journal: a
    recording's, or the ``Float64MultiArray`` messages a client collected."""
    if isinstance(journal, Path):
        data = [m.data for _, _, m in read_bag(journal, topics=["/itasc_node/journal"])]
    else:
        data = [m.data for _, m in journal]
    ticks = [
        float(r.payload[0])
        for d in data
        for r in decode(np.asarray(d)).records
        if r.code == Code.TICK
    ]
    assert len(ticks) > 100, f"{len(ticks)} ticks in the journal"
    t = np.array(ticks)
    return [(float(t[k]), float(t[k + 1])) for k in np.flatnonzero(np.diff(t) > NODE_STALLED)]


def _last_tick(msg: Float64MultiArray) -> float:
    """The time [s, ROS time] of the last tick a journal message records (-inf: none)."""
    ticks = [r.payload[0] for r in decode(np.asarray(msg.data)).records if r.code == Code.TICK]
    return float(ticks[-1]) if ticks else -math.inf


def _stamps(states: Any) -> np.ndarray:
    """(k,) the header stamps [s] of collected joint states: increasing, as a robot stamps them.

    (Interpolating between them needs it: states collected twice, or out of order, would
    interpolate a robot's positions to the wrong instants.)
    """
    ts = np.array([stamp_or_none(m.header.stamp) or 0.0 for _, m in list(states)])
    assert np.all(np.diff(ts) > 0.0), "joint states' stamps do not increase"
    return ts


def _stale_times(log: str) -> list[float]:
    """ROS times [s] of the node's log lines that say a robot's joint states went stale."""
    return [
        float(m.group(1))
        for m in re.finditer(r"^\[WARN\] \[(\d+\.\d+)\] .*stale", log, re.MULTILINE)
    ]


def _command_gaps(stats: list[tuple[float, Any]]) -> list[tuple[float, float]]:
    """(start, end) stamps [s] of a simulated driver's gaps between commands taking effect
    longer than its ``command_gap`` (:data:`STARVED` here), from its ``~/stats`` messages."""
    return [(a, b) for _, m in list(stats) for a, b in json.loads(m.data)["command_gaps"]]


def _longest_command_gap(stats: list[tuple[float, Any]]) -> float:
    """The longest gap [ms] between a simulated driver's commands taking effect over its
    ``command_gap`` (0: none), from its ``~/stats`` messages."""
    return round(1e3 * max((b - a for a, b in _command_gaps(stats)), default=0.0), 1)


def _node_view(bag: Path, tree: KinematicTree, grasp: np.ndarray, at: float) -> str:
    """What the node took within 0.5 s before and after ``at`` [s, ROS time], from its
    journal: the grasp's position error [mm] in the joint states it took (each robot's as it
    came), each robot's state's age at its ticks [ms] and the longest gap between its ticks
    [ms] — a grasp lost where the node saw it held is the robots' or the measurement's, one
    it saw is the node's."""
    records = [
        r
        for _, _, m in read_bag(bag, topics=["/itasc_node/journal"])
        for r in decode(np.asarray(m.data)).records
        if r.code in (Code.JOINT_STATE, Code.TICK)
    ]
    seen, ages, ticks, last = [], [], [], None
    for r in records:
        p = np.asarray(r.payload)
        if r.code == Code.JOINT_STATE:
            last = p[-2:]  # each robot's reception time
            if abs(p[0] - at) <= 0.5:
                q = p[2:16]
                rel = np.linalg.inv(tree.forward_kinematics(q, "a_panda_hand")) @ (
                    tree.forward_kinematics(q, "b_panda_hand")
                )
                seen.append(np.linalg.norm((np.linalg.inv(grasp) @ rel)[:3, 3]))
        elif abs(p[0] - at) <= 0.5 and last is not None:
            ticks.append(p[0])
            ages.append(p[0] - last)
    if not seen or not ticks:
        return "nothing in the node's journal"
    age = np.max(ages, axis=0) * 1e3
    return (
        f"the node saw the grasp at most {max(seen) * 1e3:.3f} mm, the robots' states at most "
        f"{age[0]:.1f} / {age[1]:.1f} ms old, its ticks at most "
        f"{np.max(np.diff(ticks), initial=0.0) * 1e3:.1f} ms apart"
    )


def _box_node(dds_domain: int, tmp_path: Path) -> tuple[Any, np.ndarray]:
    """The node of two Pandas holding a box: b's hand held at its grasp of a's (priority 1),
    the links of a and b apart, a's hand on the box's pose from ``/box`` (priority 2).

    Returns:
        The node's process and the grasp (4, 4): b's hand in a's at the start.
    """
    tree, q0 = _tree()
    hand_a = tree.forward_kinematics(q0, "a_panda_hand")
    grasp = np.linalg.inv(hand_a) @ tree.forward_kinematics(q0, "b_panda_hand")
    offset = [*grasp[:3, 3], *spatial.matrix_to_quat(grasp)]
    limits, _ = _limits(tmp_path)
    node = start_ros(
        dds_domain, *ROBOTS, 'constraint_names:=["closure", "apart", "box"]',
        "constraints.apart.type:=collision",
        "constraints.apart.geometry:=capsules", 'constraints.apart.between:=["a_", "b_"]',
        f"constraints.apart.margin:={MARGIN}", "constraints.closure.type:=copy_pose",
        "constraints.closure.link:=b_panda_hand", "constraints.closure.target_link:=a_panda_hand",
        f"constraints.closure.target_offset:={json.dumps(offset)}",
        "constraints.closure.priority:=1", "constraints.closure.gain:=60.0",
        "constraints.box.type:=copy_pose",
        "constraints.box.link:=a_panda_hand", "constraints.box.priority:=2",
        "constraints.box.target_topic:=/box", "control_rate:=250.0", params_files=[limits],
    )  # fmt: skip
    return node, grasp


def _box_ready(
    client: RosTestClient, node: Any, box: Any, states: dict[str, Any], quat: np.ndarray
) -> PoseStamped:
    """Until the node commands both robots; the box's pose message (world frame, ``quat``)."""
    client.wait_for_subscribers(box, 1, TIMEOUT)
    client.wait_for(lambda: states["a"] and states["b"], TIMEOUT, "both robots' states")
    client.wait_for(lambda: "model" in read_log(node), TIMEOUT, "the node's model")
    client.wait_for(
        lambda: "control active" in read_log(node), TIMEOUT, "both robots' states at the node"
    )
    msg = PoseStamped()
    msg.header.frame_id = "world"
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in quat)
    return msg


@pytest.mark.alone  # a real-time run's timing judged: see the note on `alone` above
def test_two_robots_carry_a_box_and_stop_together(
    client: RosTestClient, dds_domain: int, tmp_path: Path
) -> None:
    tree, q0 = _tree()
    hand_a = tree.forward_kinematics(q0, "a_panda_hand")
    node, grasp = _box_node(dds_domain, tmp_path)
    sims = [_sim(dds_domain, r) for r in ("a", "b")]
    bag = tmp_path / "two_robots_bag"
    # The journal holds every input the node took: with the commands, the replay's proof.
    topics = ["/a/commands", "/b/commands", "/itasc_node/journal", "/itasc_node/parameters"]
    recorder = start_recorder(dds_domain, bag, topics)
    states = {r: client.collect(JointState, f"/{r}/joint_states", 10000) for r in ("a", "b")}
    cmds = {r: client.collect(Float64MultiArray, f"/{r}/commands", 10000) for r in ("a", "b")}
    sim_stats = {r: client.collect(String, f"/sim_{r}/stats") for r in ("a", "b")}
    box = client.publisher(PoseStamped, "/box")
    quat = spatial.matrix_to_quat(hand_a)
    try:
        msg = _box_ready(client, node, box, states, quat)
        t0 = time.monotonic()
        w = 2.0 * np.pi / 6.0  # 0.2 m across in 6 s: up to ~0.2 m/s
        while time.monotonic() - t0 < 8.0:
            t = time.monotonic() - t0
            p = hand_a[:3, 3] + [0.0, 0.1 * np.sin(w * t), 0.05 * np.sin(2.0 * w * t)]
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
            msg.header.stamp = client.node.get_clock().now().to_msg()
            box.publish(msg)
            time.sleep(0.02)
        end = client.node.get_clock().now().nanoseconds * 1e-9
        client.wait_until_heard([states["a"], states["b"]], end, TIMEOUT)  # the client may lag
        errors = _grasp_errors(tree, list(states["a"]), list(states["b"]), grasp, t0 + 1.0)
        # each driver's ~/stats (once a second) of a window that ends after the motion's end
        heard = time.monotonic()
        client.wait_for(
            lambda: all(sim_stats[r] and sim_stats[r][-1][0] > heard for r in sim_stats),
            TIMEOUT, "the drivers' stats after the motion",
        )  # fmt: skip
        moving = {r: len(cmds[r]) for r in ("a", "b")}
        stop_processes([sims[1]])  # robot b's joint states stop
        # both robots brought to a zero (stale, then the ramp): waited for, not a fixed time
        client.wait_for(
            lambda: all(len(cmds[r]) > moving[r] and not any(cmds[r][-1][1].data) for r in cmds),
            TIMEOUT, "both robots' commands at zero",
        )  # fmt: skip
        after = {r: [m for _, m in list(cmds[r])[moving[r] :]] for r in ("a", "b")}
    finally:
        stop_recorded([node, *sims], recorder)
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    e = np.array(errors)[:, :2]  # (k, 2) position [m], angle [rad]
    stamps = np.array(errors)[:, 2]
    # Two simulated robots stamp their states on their own schedules: a state stamped a
    # scheduling hiccup away from its instant shows as a one-sample spike of the measured grasp
    # (0.2 mm at 0.2 m/s for 1 ms). The median of three consecutive states removes them.
    steady = np.median(np.stack([e[:-2], e[1:-1], e[2:]]), axis=0)
    pos, ang = steady[:, 0].max(), steady[:, 1].max()
    print(
        f"\ntwo Pandas carry a box: the grasp held to {pos * 1e3:.3f} mm / {np.degrees(ang):.4f} "
        f"deg (median of 3; p99 {np.percentile(e[:, 0], 99) * 1e3:.3f} mm, raw max "
        f"{e[:, 0].max() * 1e3:.3f} mm) over {len(e)} joint states"
    )
    # The goal is 0.1 mm. With the closure's gain 60 (config/two_pandas.yaml) measured here at
    # 0.037-0.050 mm (p99) and 0.076-0.164 mm (max) on a quiet machine, but 0.18 mm (p99) and
    # 0.47 mm (max) beside other tests (p50 0.116 mm on a machine half as fast): each robot's
    # states are stamped by its own process, and a starved one stamps late. So the closure is
    # judged by most of the states (the median within twice the goal) and the tail within
    # 1 mm; a box not held is centimetres off (it moves 0.2 m). The exact replay below is the
    # timing-free check of every command.
    # A robot whose joint states the node saw stale (a starved simulated robot, or a DDS
    # delivery pause) is stopped on its own ramp, as the node promises, and the closure is not
    # held meanwhile: the states from 0.2 s before to 1.5 s after such a stop are left out.
    # A simulated robot starved for less than that (a gap of more than STARVED in its states'
    # stamps) takes the commands sent meanwhile only when it runs again, and moves on the old
    # one until then (a robot whose driver is late: the command's change times the delay,
    # millimetres at these speeds): the states from 0.2 s before to 0.5 s after such a gap
    # are left out too.
    # The node itself standing still (a gap of more than NODE_STALLED in its ticks, from its
    # journal) lets the grasp drift as the robots go on with their last commands: the states
    # from the gap's start to 0.5 s after it are left out.
    stale = _stale_times(log)
    starved = [
        float(ts[1:][k])
        for ts in (_stamps(states["a"]), _stamps(states["b"]))
        for k in np.flatnonzero(np.diff(ts) > STARVED)
    ]
    # A robot's driver that took its commands late (their delivery, or its command thread,
    # paused) moves on the one before meanwhile, as a starved one does: each such gap between
    # commands taking effect, from its ~/stats, is left out as one.
    gaps = {r: _command_gaps(sim_stats[r]) for r in ("a", "b")}
    starved += [end for r in ("a", "b") for _, end in gaps[r]]
    stalls = _node_stalls(bag)
    held = np.array(
        [
            not any(t - 0.2 <= ts <= t + 1.5 for t in stale)
            and not any(t - 0.2 <= ts <= t + 0.5 for t in starved)
            and not any(t0 <= ts <= t1 + 0.5 for t0, t1 in stalls)
            for ts in stamps[1:-1]
        ],
        dtype=bool,
    )
    kept = steady[held]
    p50, p99 = np.percentile(kept[:, 0], 50), np.percentile(kept[:, 0], 99)
    ang99 = np.degrees(np.percentile(kept[:, 1], 99))
    worst = stamps[1:-1][held][np.argsort(kept[:, 0])[-5:]]  # where a failure looks first
    print(
        f"held: {len(kept)} of {len(steady)} states (stale stops at {stale}; a robot's driver "
        f"starved at {starved}; the node stalled {[(a, round(b - a, 3)) for a, b in stalls]}); "
        f"the worst kept at {worst.round(3).tolist()}; around the worst, "
        f"{_node_view(bag, tree, grasp, float(worst[-1]))}; the drivers' longest command gaps "
        f"{[_longest_command_gap(sim_stats[r]) for r in ('a', 'b')]} ms"
    )
    assert len(kept) > 0.7 * len(steady) and len(e) > 1000, (len(kept), len(e), stale, stalls)
    assert p50 < 2e-4 and p99 < 1e-3 and ang99 < 0.5, (p50, p99, ang99, stale, starved, stalls)
    qs = [np.r_[_positions(m), _positions(mb)] for (_, m), (_, mb) in
          zip(list(states["a"])[::10], list(states["b"])[::10], strict=False)]  # fmt: skip
    closest = closest_between(tree, qs)  # coal, pair by pair, on the node's capsules
    print(f"closest pair of a link of a and one of b: {closest * 1e3:.1f} mm (margin {MARGIN})")
    assert closest >= MARGIN - 1e-3
    limits = KinematicTree.from_urdf_file(URDF).velocity_limits
    for r in ("a", "b"):
        data = np.array([m.data for _, m in cmds[r]])
        assert data.shape[1] == 7 and np.all(np.abs(data) <= limits * (1 + 1e-9))
        assert after[r] and not np.any(after[r][-1].data), r  # both stopped: a zero last
    assert "stale" in log
    res, out = replay_compare(bag)  # each robot's commands recomputed exactly from the journal
    assert res["exact"] and res["max_abs_diff"] == 0.0, out
    # every command recomputed (but those before or after the journal's recording, or
    # delivered twice: the report's ok); counted against the node's own ticks, not a rate:
    # starved beside other tests it ticked at 80 Hz of 250 (927 ticks in 11.5 s, 1850
    # commands of both robots), where 2000 had been asked
    assert res["compare"]["ok"] and res["compared"] > 2 * 400, out  # both robots, 8 s


def _grasp_at_b(
    tree: KinematicTree, a: list[Any], b: list[Any], grasp: np.ndarray
) -> list[tuple[float, float]]:
    """(b's stamp [s], grasp position error [m]) at each of b's states, a interpolated to it."""
    ta = _stamps(a)
    qa = np.array([_positions(m) for _, m in a])
    out = []
    for _, m in b:
        tb = stamp_or_none(m.header.stamp) or 0.0
        if not ta[0] <= tb <= ta[-1]:
            continue
        q = np.r_[[np.interp(tb, ta, qa[:, j]) for j in range(7)], _positions(m)]
        rel = np.linalg.inv(tree.forward_kinematics(q, "a_panda_hand")) @ (
            tree.forward_kinematics(q, "b_panda_hand")
        )
        out.append((tb, float(np.linalg.norm((np.linalg.inv(grasp) @ rel)[:3, 3]))))
    return out


@pytest.mark.alone  # a real-time run's timing judged: see the note on `alone` above
def test_linked_robots_keep_their_grasp_while_one_robots_states_pause(
    client: RosTestClient, dds_domain: int, tmp_path: Path
) -> None:
    """Robot b's driver stops publishing its joint states for 0.4 s while the box moves (b goes
    on following its commands, as a robot does): until b is stale the node predicts it from
    the commands it sent, then both robots stop on one common ramp, and they go on when b's
    states return. The grasp is measured at b's states (a's interpolated to them), the first
    after the pause included: within 4 mm. (Before the prediction and the common stop ramp,
    17 mm.) Quiet, it holds to 0.07-0.15 mm; what is left over DDS is the delivery of the
    commands: while b's states pause the node predicts b from the commands as it sends them,
    and a command that reaches b's driver late (a loaded machine: ~10 ms) moves b by the
    change of the command times that delay (the stop ramp from ~0.1 m/s: ~1 mm, 1.26 mm
    measured with a busy loop beside the suite, 2.11 mm on a loaded 2-CPU machine, at the
    restart). The model's own error is bounded at 0.2 mm
    in process, where nothing is delivered late (``test_loop_closure.py``): b's state taken as
    fresh when it was older was 1.4 mm there, 1.1-2.1 mm here. A simulated robot's process
    starved beside other tests takes the commands late by the starvation itself: as in the
    carry test, the states around it are left out (beside another test worker, where this test
    no longer runs, 7.3 mm was measured once at the restart)."""
    tree, q0 = _tree()
    hand_a = tree.forward_kinematics(q0, "a_panda_hand")
    node, grasp = _box_node(dds_domain, tmp_path)
    sims = [_sim(dds_domain, r) for r in ("a", "b")]
    states = {r: client.collect(JointState, f"/{r}/joint_states", 20000) for r in ("a", "b")}
    reliable = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)
    journal = client.collect(Float64MultiArray, "/itasc_node/journal", reliable)
    box = client.publisher(PoseStamped, "/box")
    quat = spatial.matrix_to_quat(hand_a)
    pause = (math.inf, math.inf)
    try:
        msg = _box_ready(client, node, box, states, quat)
        client.wait_for(lambda: journal, TIMEOUT, "the node's journal")
        t0 = time.monotonic()
        w = 2.0 * np.pi / 6.0
        service = "/sim_b/set_parameters"  # robot b's simulated driver
        while time.monotonic() - t0 < 6.0:
            t = time.monotonic() - t0
            p = hand_a[:3, 3] + [0.0, 0.1 * np.sin(w * t), 0.05 * np.sin(2.0 * w * t)]
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
            msg.header.stamp = client.node.get_clock().now().to_msg()
            box.publish(msg)
            if t > 2.5 and math.isinf(pause[0]):  # b's states stop, mid-motion
                _set_bool(client, service, "publish_states", False)
                pause = (time.monotonic(), math.inf)
            elif t > 2.9 and math.isinf(pause[1]):
                _set_bool(client, service, "publish_states", True)
                pause = (pause[0], time.monotonic())
            time.sleep(0.02)
        # every state and tick until the motion's end taken by this client (it may lag)
        end = client.node.get_clock().now().nanoseconds * 1e-9
        client.wait_until_heard([states["a"], states["b"]], end, TIMEOUT)
        client.wait_until_heard([journal], end, TIMEOUT, stamp=_last_tick)
    finally:
        stop_processes([node, *sims])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    assert "robot b" in log and "stale" in log, log[-3000:]  # the pause stopped the robots
    errors = _grasp_at_b(tree, list(states["a"]), list(states["b"]), grasp)
    now_ros = client.node.get_clock().now().nanoseconds * 1e-9
    start = now_ros - (time.monotonic() - pause[0]) - 1.0  # [s] ROS time: 1 s before it
    around = np.array([e for t, e in errors if t >= start])
    gap = max(np.diff([t for t, _ in errors if t >= start]))
    assert gap > 0.3, gap  # the pause is in the window (no state of b during it)
    steady = np.median(np.stack([around[:-2], around[1:-1], around[2:]]), axis=0)
    ts = np.array([t for t, _ in errors if t >= start])
    paused_at = ts[int(np.argmax(np.diff(ts)))]  # b's last state before the pause
    # The node's own stalls (its ticks more than NODE_STALLED apart: both robots go on with
    # their last commands, the grasp drifts whatever the node does) are left out, with 0.5 s
    # after them, as in the carry test; the pause and the restart after it must be judged.
    stalls = _node_stalls(list(journal))
    # A simulated robot's process starved (a gap of more than STARVED in its states' stamps,
    # b's pause aside) takes the commands sent meanwhile late and moves on the old one until
    # then: the grasp is off by the command's change times the delay, whatever the node
    # commands. As in the carry test, the states from 0.2 s before to 0.5 s after are left out.
    starved = [
        float(st[1:][k])
        for st in (_stamps(states["a"]), _stamps(states["b"]))
        for k in np.flatnonzero(np.diff(st) > STARVED)
        if st[k] != paused_at
    ]
    kept = np.array(
        [
            not any(t0 <= t <= t1 + 0.5 for t0, t1 in stalls)
            and not any(s - 0.2 <= t <= s + 0.5 for s in starved)
            for t in ts[1:-1]
        ],
        dtype=bool,
    )
    judged = ts[1:-1][kept] - paused_at  # [s] from the pause
    assert np.count_nonzero((judged > 0.3) & (judged < 1.3)) > 50, (stalls, starved, paused_at)
    worst_at = judged[int(np.argmax(steady[kept]))]
    print(
        f"\nb's states paused 0.4 s: the grasp held to {1e3 * steady[kept].max():.3f} mm "
        f"(median of 3; raw max {1e3 * around.max():.3f} mm; at {worst_at:+.3f} s from the "
        f"pause) over {np.count_nonzero(kept)} of {len(around)} states of b (the node stalled "
        f"{[(a, round(b - a, 3)) for a, b in stalls]}; a robot's driver starved at "
        f"{[round(s - paused_at, 3) for s in starved]} s from the pause)"
    )
    # 4 mm: the delivery of the commands on a loaded 2-CPU machine (2.11 mm measured, 0.77 s
    # after the pause began: the robots' restart from the common stop), far from the 17 mm
    # without the prediction and the common stop ramp.
    assert steady[kept].max() < 4e-3, (steady[kept].max(), worst_at, stalls, starved)


def _set_bool(client: RosTestClient, service: str, name: str, value: bool) -> None:
    pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    req = SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)])
    res = client.call(SetParameters, service, req)
    assert res.results[0].successful, res.results[0].reason


@pytest.mark.alone  # a real-time run's timing judged: see the note on `alone` above
def test_an_unlinked_robot_goes_on_when_the_other_goes_stale(
    client: RosTestClient, dds_domain: int, tmp_path: Path
) -> None:
    """Each robot's hand follows its own target (no constraint links them); robot b's joint
    states stop: b ramps down to zero within its limits, a keeps following its target. The
    raw inputs (each robot's joint states, the targets) recorded, then republished from the
    bag into a fresh node (``itasc-replay --online``): it commands both robots again, and its
    recording replays exactly."""
    tree, q0 = _tree()
    limits, own = _limits(tmp_path)
    args = (
        *ROBOTS, 'constraint_names:=["hand_a", "hand_b"]', "constraints.hand_a.type:=copy_pose",
        "constraints.hand_a.link:=a_panda_hand", "constraints.hand_a.target_topic:=/target_a",
        "constraints.hand_b.type:=copy_pose", "constraints.hand_b.link:=b_panda_hand",
        "constraints.hand_b.target_topic:=/target_b", "control_rate:=250.0",
    )  # fmt: skip
    node = start_ros(dds_domain, *args, params_files=[limits])
    sims = [_sim(dds_domain, r) for r in ("a", "b")]
    bag = tmp_path / "unlinked_bag"
    inputs = ["/a/joint_states", "/b/joint_states", "/target_a", "/target_b"]
    outputs = ["/a/commands", "/b/commands", "/itasc_node/journal", "/itasc_node/parameters"]
    recorder: Any = None
    states = {r: client.collect(JointState, f"/{r}/joint_states", 10000) for r in ("a", "b")}
    cmds = {r: client.collect(Float64MultiArray, f"/{r}/commands", 10000) for r in ("a", "b")}
    pubs = {r: client.publisher(PoseStamped, f"/target_{r}") for r in ("a", "b")}
    hands = {r: tree.forward_kinematics(q0, f"{r}_panda_hand") for r in ("a", "b")}
    stopped_at = 0.0
    try:
        for pub in pubs.values():
            client.wait_for_subscribers(pub, 1, TIMEOUT)
        client.wait_for(lambda: states["a"] and states["b"], TIMEOUT, "both robots' states")
        client.wait_for(lambda: "model" in read_log(node), TIMEOUT, "the node's model")

        def publish(t: float) -> None:  # each hand's target at time t [s] of the motion
            dy, dz = 0.08 * np.sin(1.5 * t), 0.05 * (np.cos(1.5 * t) - 1)
            _publish_targets(client, pubs, hands, dy, dz)

        def publish_until(done: Callable[[], bool], what: str) -> None:  # the start, held
            deadline = time.monotonic() + TIMEOUT
            while not done():
                assert time.monotonic() < deadline, f"timed out waiting for {what}"
                publish(0.0)
                time.sleep(0.02)

        publish_until(lambda: "control active" in read_log(node), "the node commanding")
        # Recorded from here on: started beside the node and the simulated robots, a recorder's
        # participant was seen to leave the node's joint-state readers without a sample
        # (doc/replay.md, "Start the recorder once the node runs").
        recorder = start_recorder(dds_domain, bag, [*inputs, *outputs])
        # and matched by the targets' writers (node and recorder): subscribed is not matched
        # (measured: a loaded machine's recorder took the targets 2.1 s after it subscribed,
        # the online node then waited those 2.1 s for a target the bag did not have)
        publish_until(
            lambda: (
                "recording /itasc_node/journal" in read_log(recorder)
                and all(p.get_subscription_count() >= 2 for p in pubs.values())
            ),
            "the recorder",
        )
        t0 = time.monotonic()
        while time.monotonic() - t0 < 6.0:
            t = time.monotonic() - t0
            if t > 3.0 and not stopped_at:
                stop_processes([sims[1]])  # robot b's joint states stop, mid-motion
                stopped_at = time.monotonic()
            publish(t)
            time.sleep(0.02)
    finally:
        ended = time.monotonic()
        if recorder is None:
            stop_processes([node, *sims])
        else:
            stop_recorded([node, *sims], recorder)  # b's too, had the test failed before it
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    assert "robot b" in log and "stale" in log and "the others go on" in log, log[-3000:]
    vmax = KinematicTree.from_urdf_file(URDF).velocity_limits
    amax = np.array([own[j]["max_acceleration"] for j in ARM])
    late = {r: [(t, np.array(m.data)) for t, m in cmds[r] if t > stopped_at + 0.5] for r in cmds}
    for r in ("a", "b"):
        data = np.array([m.data for _, m in cmds[r]])
        assert data.shape[1] == 7 and np.all(np.abs(data) <= vmax * (1 + 1e-9)), r
        assert np.all(np.abs(np.diff(data, axis=0)) * 250.0 <= amax * (1 + 1e-6)), r
    assert late["b"] and not np.any(late["b"][-1][1]), "b ended on a zero"
    # b's ramp ends within 0.1 s (input_timeout) + 0.5 s of the node's ticks, counted in ticks
    # (one command of b a tick at 250 Hz), not in this process's wall-clock seconds (a starved
    # node ticks late, and its commands arrive late), from b's last state as this process took
    # it: this process takes b's states and b's commands in turn, so a backlog of both (a
    # loaded machine: b's last moving command 188 commands after the stop's return, where 7
    # after b's last state and none after the stop's return are usual) delays both alike.
    # Then only zeros.
    last_b = states["b"][-1][0]  # [s] this process's clock: b's sim is stopped
    b_after = [v for _, v in cmds_b_after(cmds["b"], last_b)]
    moving_b = [i for i, v in enumerate(b_after) if np.any(v)]
    since_stop = [i for i, (_, v) in enumerate(cmds_b_after(cmds["b"], stopped_at)) if np.any(v)]
    print(
        f"\nb's last moving command: {moving_b[-1] if moving_b else None} after b's last state, "
        f"{since_stop[-1] if since_stop else None} after the stop returned"
    )
    assert not moving_b or moving_b[-1] < (0.1 + 0.5) * 250.0, (moving_b[-1], len(b_after))
    a_late = np.array([v for _, v in late["a"]])
    # a went on: moving, and commanded through the window (~625 ticks at 250 Hz; 195 on a
    # machine half as fast beside another worker)
    went_on, figures = _went_on(cmds["a"], (stopped_at + 0.5, ended), (t0, stopped_at))
    assert went_on, f"a went on: {figures}"
    assert np.abs(a_late).max() > 0.02, "a went on following its target"
    fresh = start_ros(dds_domain, *args, params_files=[limits], name="itasc_node_online")
    try:
        rc, res, out = replay_online(
            bag, tmp_path / "online_bag", dds_domain,
            "--tracking-tolerance", f"{ONLINE_TRACKING_TOLERANCE_MM:g}",
        )  # fmt: skip
    finally:
        stop_processes([fresh])
    assert rc == 0 and res["exact"] and res["max_abs_diff"] == 0.0, out + read_log(fresh)
    # every command of both robots recomputed from its journal; each robot commanded (a node
    # starved beside other tests ticks at 150 Hz of 250: counts, not a rate)
    counts = res["online_counts"]
    assert res["compare"]["ok"], out
    assert res["commands"] == counts["/a/commands"] + counts["/b/commands"], out
    assert min(counts["/a/commands"], counts["/b/commands"]) > 100, out
    tr = res["tracking"]  # a's hand to its target, the recording beside the online run
    print(f"\nonline replay of two robots: tracking {tr}")
    assert tr["ok"] and tr["recorded"]["ticks"] > 100 and tr["replayed"]["ticks"] > 100, tr
    assert tr["tolerance_mm"] == ONLINE_TRACKING_TOLERANCE_MM, tr
    assert "robot b" in read_log(fresh) and "stale" in read_log(fresh)  # b stopped again


@pytest.mark.alone  # windows of commands judged by their reception times: see above
def test_a_robots_urdf_comes_from_its_description_topic(
    client: RosTestClient, dds_domain: int
) -> None:
    """Robot b has no URDF file, only ``robots.b.description_topic``: the node waits without a
    model (no command), then composes b's URDF from the topic (latched, as a
    robot_state_publisher publishes it) with a's file, and commands both robots, each hand
    following its own target. Then b's description is lost twice, by a URDF that does not
    parse and by one that does not fit (a UR5: no ``panda_hand``): each time b ramps down to a
    zero within its limits while a goes on, and b's URDF again brings b back. a's URDF
    (file, and its own topic) republished while b is lost is composed with b's last good one:
    a goes on, b stays stopped."""
    ns = "/described"  # topics of this test's own: the client keeps each topic's messages
    own = [
        a.replace(":=/", f":={ns}/") if "_topic:=" in a else a
        for a in ROBOTS
        if not a.startswith("robots.b.urdf_file")
    ]  # fmt: skip
    node = start_ros(
        dds_domain, *own, "robots.b.description_topic:=/b/robot_description",
        "robots.a.description_topic:=/a/robot_description",
        'constraint_names:=["hand_a", "hand_b"]', "constraints.hand_a.type:=copy_pose",
        "constraints.hand_a.link:=a_panda_hand", f"constraints.hand_a.target_topic:={ns}/ta",
        "constraints.hand_b.type:=copy_pose", "constraints.hand_b.link:=b_panda_hand",
        f"constraints.hand_b.target_topic:={ns}/tb", "control_rate:=250.0",
    )  # fmt: skip
    sims = [_sim(dds_domain, r, ns) for r in ("a", "b")]
    cmds = {r: client.collect(Float64MultiArray, f"{ns}/{r}/commands", 10000) for r in ("a", "b")}
    latched = QoSProfile(
        depth=1,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
        reliability=ReliabilityPolicy.RELIABLE,
    )
    targets = {r: client.publisher(PoseStamped, f"{ns}/t{r}") for r in ("a", "b")}
    tree, q0 = _tree()
    hands = {r: tree.forward_kinematics(q0, f"{r}_panda_hand") for r in ("a", "b")}
    phases: list[tuple[str, float]] = []  # (what b's description became, when)

    def follow(seconds: float) -> None:  # both targets on circles of their own
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            t = time.monotonic()
            _publish_targets(
                client, targets, hands, 0.06 * np.sin(2 * t), 0.04 * (np.cos(2 * t) - 1)
            )
            time.sleep(0.02)

    try:
        client.wait_for(
            lambda: "wait for their URDF" in read_log(node), TIMEOUT, "the node waiting for b"
        )
        time.sleep(1.0)
        assert not cmds["a"] and not cmds["b"], "no model, no command"
        description = client.publisher(String, "/b/robot_description", latched)
        description.publish(String(data=URDF.read_text()))
        client.wait_for(
            lambda: "from the description topic of robot 'b'" in read_log(node),
            TIMEOUT,
            "the model of the composed URDFs",
        )
        for pub in targets.values():
            client.wait_for_subscribers(pub, 1, TIMEOUT)
        deadline = time.monotonic() + TIMEOUT  # both robots' states can take seconds to match
        while "control active" not in read_log(node):
            assert time.monotonic() < deadline, "the node never commanded"
            follow(0.2)
        a_description = client.publisher(String, "/a/robot_description", latched)
        started = time.monotonic()  # both robots commanded: a's rate before b is lost
        follow(1.5)
        for what, xml in (
            ("unparsable", "<robot name='broken'><link name="),
            ("panda", URDF.read_text()),
            ("ur5", (REPO / "urdf" / "ur5.urdf").read_text()),
            ("panda", URDF.read_text()),
        ):
            phases.append((what, time.monotonic()))
            description.publish(String(data=xml))
            if what == "unparsable":  # a's URDF again meanwhile: composed with b's last good
                follow(0.7)
                a_description.publish(String(data=URDF.read_text()))
                follow(0.8)
            else:
                follow(1.5)
    finally:
        stopped = time.monotonic()
        stop_processes([node, *sims])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    assert "b_panda_joint1" in log  # the model's joints: b's from its topic's URDF
    assert log.count("robot 'b': description lost") == 2, log[-3000:]
    assert log.count("description back") == 2, log[-3000:]
    assert "robot 'a': description lost" not in log, log[-3000:]  # b's bad URDF is b's alone
    vmax = KinematicTree.from_urdf_file(URDF).velocity_limits
    for r in ("a", "b"):
        data = np.array([m.data for _, m in cmds[r]])
        assert data.shape[1] == 7 and np.all(np.abs(data) <= vmax * (1 + 1e-9)), r
    ends = [t for _, t in phases[1:]] + [stopped]
    for (what, t_lost), t_end in zip(phases, ends, strict=True):
        late = {r: [m.data for t, m in list(cmds[r]) if t_lost + 0.8 < t < t_end] for r in cmds}
        # a went on: moving, and commanded through the window (~175 ticks at 250 Hz; 67 when a
        # model was built beside the loop on a machine half as fast, beside another worker)
        went_on, figures = _went_on(cmds["a"], (t_lost + 0.8, t_end), (started, phases[0][1]))
        assert went_on, f"a went on ({what}): {figures}"
        assert np.abs(late["a"]).max() > 0.02, f"a moved on ({what})"
        if what == "panda":  # b back: following its target again
            assert np.abs(late["b"]).max() > 0.02, "b moves again"
        else:  # b stopped within input_timeout and its ramp: nothing but zeros after
            assert late["b"] and not np.any(late["b"]), f"b stopped ({what})"


def cmds_b_after(cmds: list[tuple[float, Any]], t: float) -> list[tuple[float, np.ndarray]]:
    """The commands received after ``t`` (this process's clock [s]), as arrays."""
    return [(tc, np.array(m.data)) for tc, m in list(cmds) if tc > t]


@pytest.mark.alone  # windows of commands judged by their reception times: see above
def test_a_robots_refused_state_names_it_and_the_other_robot_goes_on(
    client: RosTestClient, dds_domain: int
) -> None:
    """Each hand follows its own moving target (no constraint links them); then robot b's
    driver publishes states with a NaN: each is refused naming robot b, b alone ages and ramps
    down to a zero, and robot a goes on following its target."""
    ns = "/refused"
    own = [a.replace(":=/", f":={ns}/") if "_topic:=" in a else a for a in ROBOTS]
    node = start_ros(
        dds_domain, *own, 'constraint_names:=["hand_a", "hand_b"]',
        "constraints.hand_a.type:=copy_pose", "constraints.hand_a.link:=a_panda_hand",
        f"constraints.hand_a.target_topic:={ns}/ta", "constraints.hand_b.type:=copy_pose",
        "constraints.hand_b.link:=b_panda_hand", f"constraints.hand_b.target_topic:={ns}/tb",
        "control_rate:=250.0",
    )  # fmt: skip
    sims = [_sim(dds_domain, r, ns) for r in ("a", "b")]
    cmds = {r: client.collect(Float64MultiArray, f"{ns}/{r}/commands", 10000) for r in ("a", "b")}
    targets = {r: client.publisher(PoseStamped, f"{ns}/t{r}") for r in ("a", "b")}
    bad = client.publisher(JointState, f"{ns}/b/joint_states")
    tree, q0 = _tree()
    hands = {r: tree.forward_kinematics(q0, f"{r}_panda_hand") for r in ("a", "b")}
    refused_at = math.inf
    try:
        for pub in targets.values():
            client.wait_for_subscribers(pub, 1, TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while "control active" not in read_log(node):
            assert time.monotonic() < deadline, "timed out waiting for the node commanding"
            _publish_targets(client, targets, hands, 0.0, 0.0)
            time.sleep(0.02)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4.0:
            t = time.monotonic() - t0
            if t > 1.5 and math.isinf(refused_at):  # b's driver: its own states stop, ...
                _set_bool(client, "/sim_b/set_parameters", "publish_states", False)
                refused_at = time.monotonic()
            if not math.isinf(refused_at):  # ... and states with a NaN come instead
                msg = JointState(name=ARM, position=[*HOME[:2], math.nan, *HOME[3:]])
                msg.header.stamp = client.node.get_clock().now().to_msg()
                bad.publish(msg)
            _publish_targets(client, targets, hands, 0.06 * np.sin(2 * t), 0.0)
            time.sleep(0.01)
    finally:
        ended = time.monotonic()
        stop_processes([node, *sims])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    assert "robot 'b': joint state refused: panda_joint3 at nan" in log, log[-3000:]
    assert "joint states of robot b (" in log and "the others go on" in log, log[-3000:]
    # The controller as a whole is never stale once commanding (the claim: b's refused states
    # hold b alone). Before its first command, a simulated robot's start-up on a loaded machine
    # may leave a joint state older than input_timeout (fc152: "control stale: joint states are
    # 0.103 s old" 0.8 s after start-up, while waiting for a target), which is rightly reported.
    commanding = log[log.index("control active") :]
    assert "control stale" not in commanding, log[-3000:]
    assert "task 'hand_b' followed at" in log and "robot b held" in log, log[-3000:]
    assert "task 'hand_a' followed" not in log, log[-3000:]
    late = {r: [np.array(m.data) for t, m in cmds[r] if t > refused_at + 0.6] for r in cmds}
    assert late["b"] and not np.any(late["b"][-1]), "b ended on a zero"
    a_late = np.array(late["a"])
    # a went on: moving, and commanded through the window (~475 ticks at 250 Hz; 186 on a
    # machine half as fast beside another worker, the node taking b's refused states too)
    went_on, figures = _went_on(cmds["a"], (refused_at + 0.6, ended), (t0, refused_at))
    assert went_on, f"a went on: {figures}"
    assert np.abs(a_late).max() > 0.02, "a went on following its target"
