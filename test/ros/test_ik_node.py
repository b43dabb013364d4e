"""itasc_node's ``~/ik_request`` -> ``~/ik_solution`` and ``~/ik_result`` over real DDS.

The node runs in its own process. Oracle: the Panda's forward kinematics (the published joint
positions put the hand on the requested pose); with config/panda_obstacles.yaml, Pinocchio +
coal (the solution keeps every pair of the node's collision constraint at its margin). Every
request gets one ``~/ik_result`` that a client matches by its stamp and frame: a refused one
(NaN, a frame that is not a link) an ERROR naming why, a solved one OK; the solution carries the
request's header. Bad requests first must leave the node running and answering.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from procs import RosTestClient, node_command, read_log, ros_client, start_process, stop_process
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_bench.peers.pinocchio_collision import pinocchio_reference
from itasc_ros.core import KinematicTree, Scene, solve_ik
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.collision_geometry import resolve_file
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config
from itasc_ros.tools.dds_env import local_dds_env
from itasc_ros.tools.resources import share_file

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
PANDA = REPO / "urdf" / "panda.urdf"
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
FIRST_SOLVE_TIMEOUT = 120.0  # [s] the first solve compiles the IK loop on a fresh machine
HOME = home_of("panda")


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_ik_test_client") as c:
        yield c


def pose_msg(t: np.ndarray, frame: str) -> PoseStamped:
    m = PoseStamped()
    m.header.frame_id = frame
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in t[:3, 3])
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(t[:3, :3]))
    return m


def stamped(msg: PoseStamped, sec: int, nanosec: int) -> PoseStamped:
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    return msg


def result_of(client: RosTestClient, stamp: str) -> dict[str, Any] | None:
    """The values of the ``~/ik_result`` whose request_stamp is ``stamp``, and its level."""
    for st in client.received("/ik/itasc_node/ik_result"):
        values: dict[str, Any] = {kv.key: kv.value for kv in st.values}
        if values["request_stamp"] == stamp:
            return values | {"level": st.level}
    return None


def test_ik_request_answers_with_a_joint_state_and_survives_bad_requests(
    client: RosTestClient, dds_domain: int
) -> None:
    tree = KinematicTree.from_urdf_file(PANDA)
    solutions = client.collect(JointState, "/ik/itasc_node/ik_solution")
    client.collect(DiagnosticStatus, "/ik/itasc_node/ik_result")
    client.collect(Float64MultiArray, "/ik/commands")
    client.collect(String, "/ik/itasc_node/status")
    proc = start_process(
        node_command(
            "-r",
            "__ns:=/ik",
            "-p",
            f"urdf_file:={PANDA}",
            "-p",
            "command_out_topic:=commands",
            "-p",
            "constraints.ee.link:=panda_hand",
        ),
        local_dds_env(dds_domain),
        name="itasc_node_ik",
    )
    try:
        states = client.publisher(JointState, "/ik/joint_states", 10)
        requests = client.publisher(PoseStamped, "/ik/itasc_node/ik_request", 10)
        client.wait_for_subscribers(requests, 1, TIMEOUT)
        # the seed reaches the node (its reader matched); a request taken while the node
        # still loads its URDF waits for the model (more than 2 s on a loaded machine)
        client.wait_for_subscribers(states, 1, TIMEOUT)
        js = JointState(name=tree.joint_names, position=[float(v) for v in HOME])
        for _ in range(20):  # the seed: the arm at home
            states.publish(js)
            time.sleep(0.01)
        # Bad requests (NaN position, a frame that is not a link), each answered with its
        # failure; then a good one, far from home, in panda_link0.
        bad = stamped(pose_msg(np.eye(4), "panda_link0"), 7, 5)
        bad.pose.position.x = math.nan
        requests.publish(bad)
        nan = client.wait_for(lambda: result_of(client, "7.000000005"), FIRST_SOLVE_TIMEOUT, "NaN")
        assert nan["level"] == DiagnosticStatus.ERROR, nan
        assert (nan["success"], nan["frame_id"], nan["link"]) == (
            "false",
            "panda_link0",
            "panda_hand",
        )
        assert "refused" in nan["reason"] and "finite" in nan["reason"], nan
        requests.publish(stamped(pose_msg(np.eye(4), "panda_lnk0"), 8, 0))
        frame = client.wait_for(lambda: result_of(client, "8.000000000"), TIMEOUT, "bad frame")
        assert frame["success"] == "false" and frame["frame_id"] == "panda_lnk0", frame
        assert "unknown link 'panda_lnk0'" in frame["reason"], frame
        goal = tree.forward_kinematics(
            HOME + np.array([0.6, 0.3, -0.4, 0.5, 0.3, -0.4, 0.2]), "panda_hand"
        )
        requests.publish(stamped(pose_msg(goal, "panda_link0"), 1234, 567890123))
        client.wait_for(
            lambda: client.received("/ik/itasc_node/ik_solution"),
            FIRST_SOLVE_TIMEOUT,
            "a solution",
        )
        msg = client.received("/ik/itasc_node/ik_solution")[0]
        # The solution carries its request's header; its result says OK, after the solution.
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1234, 567890123)
        assert msg.header.frame_id == "panda_link0"
        ok = client.wait_for(lambda: result_of(client, "1234.567890123"), TIMEOUT, "the result")
        assert ok["level"] == DiagnosticStatus.OK, ok
        assert (ok["success"], ok["reason"], ok["frame_id"]) == ("true", "", "panda_link0"), ok
        assert float(ok["position_error_m"]) <= 1e-5 and int(ok["iterations"]) >= 1, ok
        q = np.array([msg.position[list(msg.name).index(n)] for n in tree.joint_names])
        assert np.all(q >= tree.lower) and np.all(q <= tree.upper)
        t = tree.forward_kinematics(q, "panda_hand")
        assert np.abs(t[:3, 3] - goal[:3, 3]).max() <= 1e-5
        assert np.abs(spatial.so3_log(goal[:3, :3] @ t[:3, :3].T)).max() <= 1e-5
        assert len(solutions) == 1  # the bad request had no solution
        # Unreachable: refused, naming the reach.
        far = np.eye(4)
        far[0, 3] = 5.0
        requests.publish(stamped(pose_msg(far, "panda_link0"), 9, 0))
        unreachable = client.wait_for(lambda: result_of(client, "9.000000000"), TIMEOUT, "far")
        assert unreachable["success"] == "false" and "reaches" in unreachable["reason"]
        # A burst (within the topics' depth of 10): each request gets exactly one result,
        # solved or superseded while waiting.
        burst = [f"100.{i:09d}" for i in range(8)]
        for i in range(8):
            requests.publish(stamped(pose_msg(goal, "panda_link0"), 100, i))
        results = client.wait_for(
            lambda: (
                all(result_of(client, s) for s in burst) and [result_of(client, s) for s in burst]
            ),
            TIMEOUT,
            "a result for each request of the burst",
        )
        time.sleep(0.5)  # a second result of any of them would arrive meanwhile
        stamps = [
            kv.value
            for st in client.received("/ik/itasc_node/ik_result")
            for kv in st.values
            if kv.key == "request_stamp" and kv.value.startswith("100.")
        ]
        assert sorted(stamps) == burst  # one each
        for r in results:
            assert r["success"] == "true" or "superseded" in r["reason"], r
        assert results[-1]["success"] == "true"  # the latest one is always solved
        solved = [s for s in client.received("/ik/itasc_node/ik_solution")]
        assert len(solved) == 1 + sum(r["success"] == "true" for r in results)
        # The node goes on: it follows a target (commands) and reports its status.
        targets = client.publisher(PoseStamped, "/ik/itasc_node/target_pose", 10)
        client.wait_for_subscribers(targets, 1, TIMEOUT)
        client.clear("/ik/itasc_node/status")
        near = tree.forward_kinematics(HOME, "panda_hand")
        near[2, 3] += 0.02
        for _ in range(50):
            states.publish(js)
            targets.publish(pose_msg(near, "panda_link0"))
            time.sleep(0.01)
        client.wait_for(lambda: client.received("/ik/commands"), TIMEOUT, "commands")
        client.wait_for(lambda: client.received("/ik/itasc_node/status"), TIMEOUT, "a status")
        assert proc.poll() is None
    finally:
        stop_process(proc)
        log = read_log(proc)
        print(log[-3000:])
    assert "IK request for 'panda_hand' solved" in log
    assert "refused" in log


def test_an_ik_solution_keeps_the_node_collision_constraint(
    client: RosTestClient, dds_domain: int
) -> None:
    """With config/panda_obstacles.yaml, a target whose pose-only solution from the arm's
    configuration collides is answered with a solution that keeps every pair at its margin
    (checked with Pinocchio + coal on the constraint's pairs)."""
    params = share_file("config", "panda_obstacles.yaml")
    cfg = load_config(params)
    (spec,) = [c for c in cfg.constraints if c.type == "collision"]
    urdf = resolve_file(spec.settings["urdf_file"], (), "Panda URDF")
    tree = KinematicTree.from_urdf_file(urdf).select_joints(cfg.joints)
    coll = spec.build()
    Scene(tree, [coll])
    ref = pinocchio_reference(str(urdf), tree, coll)

    def closest(q: np.ndarray) -> float:
        return float(ref.distances(ref.q_of(q)).min())

    rng = np.random.default_rng(4)
    while True:  # a target reachable apart, whose pose-only solution from home collides
        q = rng.uniform(tree.lower, tree.upper)
        if closest(q) < coll.margin + coll.buffer + 0.01:
            continue
        goal = tree.forward_kinematics(q, "panda_hand")
        plain = solve_ik(tree, goal, "panda_hand", seed=HOME)
        if plain.success and closest(plain.q) < coll.margin:
            break
    client.collect(JointState, "/obst/itasc_node/ik_solution")
    client.collect(DiagnosticStatus, "/obst/itasc_node/ik_result")
    proc = start_process(
        node_command(
            "-r", "__ns:=/obst", "--params-file", str(params), "-p", f"urdf_file:={urdf}",
            "-p", "command_out_topic:=commands",
        ),
        local_dds_env(dds_domain),
        name="itasc_node_ik_obstacles",
    )  # fmt: skip
    try:
        states = client.publisher(JointState, "/obst/joint_states", 10)
        requests = client.publisher(PoseStamped, "/obst/itasc_node/ik_request", 10)
        client.wait_for_subscribers(requests, 1, TIMEOUT)
        # the seed reaches the node (its reader matched); a request taken while the node
        # still loads its URDF waits for the model (more than 2 s on a loaded machine)
        client.wait_for_subscribers(states, 1, TIMEOUT)
        js = JointState(name=tree.joint_names, position=[float(v) for v in HOME])
        for _ in range(20):
            states.publish(js)
            time.sleep(0.01)
        requests.publish(stamped(pose_msg(goal, "panda_link0"), 3, 0))
        client.wait_for(
            lambda: client.received("/obst/itasc_node/ik_solution"),
            FIRST_SOLVE_TIMEOUT,
            "a solution",
        )
    finally:
        stop_process(proc)
    msg = client.received("/obst/itasc_node/ik_solution")[0]
    q = np.array([msg.position[list(msg.name).index(n)] for n in tree.joint_names])
    t = tree.forward_kinematics(q, "panda_hand")
    assert np.abs(t[:3, 3] - goal[:3, 3]).max() <= 1e-5
    assert closest(q) >= coll.margin - 1e-6, (closest(q), closest(plain.q))


def test_a_request_before_the_model_is_solved_once_the_urdf_arrives(
    client: RosTestClient, dds_domain: int
) -> None:
    """A request that comes before the node has a model waits for it (``MODEL_WAIT``), and
    beyond while a URDF that arrived is made a model: the URDF here comes 1.5 s after the
    request (a loaded machine built its model in 1.7 s: the request was refused, 58 ms before
    the model came, when only ``MODEL_WAIT`` counted)."""
    ns = "/ikwait"
    tree = KinematicTree.from_urdf_file(PANDA)
    client.collect(DiagnosticStatus, f"{ns}/itasc_node/ik_result")
    client.collect(JointState, f"{ns}/itasc_node/ik_solution")
    latched = QoSProfile(
        depth=1,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    description = client.publisher(String, f"{ns}/robot_description", latched)
    proc = start_process(
        node_command("-r", f"__ns:={ns}", "-p", "constraints.ee.link:=panda_hand"),
        local_dds_env(dds_domain),
        name="itasc_node_ik_wait",
    )
    try:
        requests = client.publisher(PoseStamped, f"{ns}/itasc_node/ik_request", 10)
        client.wait_for_subscribers(requests, 1, TIMEOUT)
        goal = tree.forward_kinematics(HOME + 0.2, "panda_hand")
        requests.publish(stamped(pose_msg(goal, "panda_link0"), 77, 0))
        time.sleep(1.5)  # the request waits in the node, without a model
        assert not client.received(f"{ns}/itasc_node/ik_result")
        client.wait_for_subscribers(description, 1, TIMEOUT)
        description.publish(String(data=PANDA.read_text()))
        msg = client.wait_for(
            lambda: client.received(f"{ns}/itasc_node/ik_solution"),
            FIRST_SOLVE_TIMEOUT,
            "the waiting request's solution",
        )[0]
        assert (msg.header.stamp.sec, msg.header.frame_id) == (77, "panda_link0")
        q = np.array([msg.position[list(msg.name).index(n)] for n in tree.joint_names])
        assert np.abs(tree.forward_kinematics(q, "panda_hand")[:3, 3] - goal[:3, 3]).max() <= 1e-5
        results = client.wait_for(
            lambda: client.received(f"{ns}/itasc_node/ik_result"), TIMEOUT, "its result"
        )
        time.sleep(0.3)  # a second result would arrive meanwhile
        results = client.received(f"{ns}/itasc_node/ik_result")
        assert len(results) == 1 and results[0].level == DiagnosticStatus.OK, results
    finally:
        stop_process(proc)
        print(read_log(proc)[-3000:])
