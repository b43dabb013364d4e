"""The collision constraint in the node over real DDS: ``config/panda_self_collision.yaml`` as is.

The node and the simulated robot run as their own processes, the node started with
``--params-file`` on example-robot-data's Panda (meshes and SRDF found through ``package://``).
A pose target inside the robot's own base is sent; every joint state the robot publishes during
the approach is checked independently with Pinocchio + coal on the same pairs: no pair comes
closer than the margin minus 1 mm, and the hand still gets as near the target as that allows.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from procs import RosTestClient, node_command, read_log, ros_client, start_process, stop_processes
from robots import erd_urdf_path
from sensor_msgs.msg import JointState

from itasc_ros.bench.collision import pinocchio_reference
from itasc_ros.core import KinematicTree, Scene
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.tools.dds_env import local_dds_env, private_domain_id

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "panda_self_collision.yaml"
SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"
DOMAIN = private_domain_id(os.getpid() + 73)
TIMEOUT = 30.0  # [s] generous: the machine is shared, the node builds the convex hulls
ARM = [f"panda_joint{i}" for i in range(1, 8)]
HOME = home_of("panda").tolist()
TARGET = np.array([0.05, 0.0, 0.15])  # [m] inside the robot's base (as the demo scenario)
MARGIN = 0.02  # [m] the params file's


@pytest.fixture(scope="module")
def client() -> Iterator[RosTestClient]:
    with ros_client(DOMAIN, "itasc_collision_test_client") as c:
        yield c


def test_the_node_keeps_every_pair_at_the_margin_over_dds(client: RosTestClient) -> None:
    urdf = erd_urdf_path("panda")
    ns = "/coll"
    node = start_process(
        node_command(
            "-r", f"__ns:={ns}", "--params-file", str(PARAMS),
            "-p", f"urdf_file:={urdf}", "-p", "command_out_topic:=commands",
        ),
        local_dds_env(DOMAIN),
        name="itasc_node_coll",
    )  # fmt: skip
    sim = start_process(
        node_command(
            "-r", f"__ns:={ns}", "-p", f"urdf_file:={urdf}", "-p", "rate:=250.0",
            "-p", f"joints:={json.dumps(ARM)}", "-p", f"initial_positions:={json.dumps(HOME)}",
            "-p", "command_topic:=commands",
            module="itasc_ros.tools.sim_robot",
        ),
        local_dds_env(DOMAIN),
        name="sim_coll",
    )  # fmt: skip
    states = client.collect(JointState, f"{ns}/joint_states", 1000)
    target = client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose")
    arm = KinematicTree.from_urdf_file(urdf).select_joints(ARM)
    try:
        client.wait_for_subscribers(target, 1, TIMEOUT)
        client.wait_for(lambda: states, TIMEOUT, "joint states of the simulated robot")
        client.wait_for(lambda: "model 'panda'" in read_log(node), TIMEOUT, "the node's model")
        start = arm.forward_kinematics(np.array(HOME), "panda_hand")
        msg = PoseStamped()
        msg.header.frame_id = "panda_link0"
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, TARGET)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(start))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4.0:  # a target stream at 20 Hz, as a marker sends
            target.publish(msg)
            time.sleep(0.05)
        seen = [m for t, m in list(states) if t >= t0]
    finally:
        stop_processes([sim, node])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    c = Collision("c", srdf_file=SRDF, activation_distance=10.0)
    Scene(arm, [c])
    ref = pinocchio_reference(str(urdf), arm, c)
    qs = [np.array([m.position[list(m.name).index(j)] for j in ARM]) for m in seen]
    assert len(qs) > 400, len(qs)  # ~250 Hz for 4 s
    closest = min(float(ref.distances(ref.q_of(q)).min()) for q in qs[::2])
    hand = [
        float(np.linalg.norm(arm.forward_kinematics(q, "panda_hand")[:3, 3] - TARGET)) for q in qs
    ]
    print(f"\nclosest pair over the run {closest:.4f} m (margin {MARGIN}); hand {hand[0]:.3f} -> "
          f"{hand[-1]:.3f} m from the target; {len(qs)} joint states")  # fmt: skip
    assert closest >= MARGIN - 0.001
    # it went toward the target while its pose task could (scaled along its direction: the
    # collision rows and the joint limits bound it)
    assert hand[-1] < 0.6 * hand[0]
