"""itasc_node's ``~/ik_request`` -> ``~/ik_solution`` over real DDS (node in its own process).

Oracle: the Panda's forward kinematics (the published joint positions put the hand on the
requested pose); a bad request first must leave the node running and answering.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from procs import RosTestClient, node_command, read_log, ros_client, start_process, stop_process
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.core import KinematicTree, spatial
from itasc_ros.tools.dds_env import local_dds_env, private_domain_id

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[1]
PANDA = REPO / "urdf" / "panda.urdf"
DOMAIN = private_domain_id(os.getpid() + 61)
TIMEOUT = 20.0  # [s] generous: the machine is shared
FIRST_SOLVE_TIMEOUT = 120.0  # [s] the first solve compiles the IK loop on a fresh machine
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.fixture(scope="module")
def client() -> Iterator[RosTestClient]:
    with ros_client(DOMAIN, "itasc_ik_test_client") as c:
        yield c


def pose_msg(t: np.ndarray, frame: str) -> PoseStamped:
    m = PoseStamped()
    m.header.frame_id = frame
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in t[:3, 3])
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(t[:3, :3]))
    return m


def test_ik_request_answers_with_a_joint_state_and_survives_bad_requests(
    client: RosTestClient,
) -> None:
    tree = KinematicTree.from_urdf_file(PANDA)
    solutions = client.collect(JointState, "/ik/itasc_node/ik_solution")
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
        local_dds_env(DOMAIN),
        name="itasc_node_ik",
    )
    try:
        states = client.publisher(JointState, "/ik/joint_states", 10)
        requests = client.publisher(PoseStamped, "/ik/itasc_node/ik_request", 10)
        client.wait_for_subscribers(requests, 1, TIMEOUT)
        js = JointState(name=tree.joint_names, position=[float(v) for v in HOME])
        for _ in range(20):  # the seed: the arm at home
            states.publish(js)
            time.sleep(0.01)
        # A bad request (NaN position), then a good one, far from home, in panda_link0.
        bad = pose_msg(np.eye(4), "panda_link0")
        bad.pose.position.x = math.nan
        requests.publish(bad)
        client.wait_for(lambda: "refused" in read_log(proc), TIMEOUT, "the refusal in the log")
        goal = tree.forward_kinematics(
            HOME + np.array([0.6, 0.3, -0.4, 0.5, 0.3, -0.4, 0.2]), "panda_hand"
        )
        requests.publish(pose_msg(goal, "panda_link0"))
        client.wait_for(
            lambda: client.received("/ik/itasc_node/ik_solution"),
            FIRST_SOLVE_TIMEOUT,
            "a solution",
        )
        msg = client.received("/ik/itasc_node/ik_solution")[0]
        q = np.array([msg.position[list(msg.name).index(n)] for n in tree.joint_names])
        assert np.all(q >= tree.lower) and np.all(q <= tree.upper)
        t = tree.forward_kinematics(q, "panda_hand")
        assert np.abs(t[:3, 3] - goal[:3, 3]).max() <= 1e-5
        assert np.abs(spatial.so3_log(goal[:3, :3] @ t[:3, :3].T)).max() <= 1e-5
        assert len(solutions) == 1  # the bad request had no solution
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
