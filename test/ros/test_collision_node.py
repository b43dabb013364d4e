"""The collision constraint in the node over real DDS: the shipped params files as they are.

The node and the simulated robot run as their own processes, the node started with
``--params-file`` on example-robot-data's Panda (meshes and SRDF found through ``package://``).
A pose target the margin forbids is sent (inside the robot's own base with
``config/panda_self_collision.yaml``; the ball's centre with ``config/panda_obstacles.yaml``,
from home and from the hand low over the plate); every joint state the robot publishes during
the approach is checked independently with Pinocchio + coal on the same pairs: no pair comes
closer than the margin minus 1 mm, and the hand still gets nearer the target. On the physics
robot (``physics:=mujoco``, servos with a 20 ms lag, the node told it, the obstacles placed in
MuJoCo's world) MuJoCo referees too: no contact, and its own distance to the obstacles at least
the margin minus 1 mm.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from procs import RosTestClient, node_command, read_log, ros_client, start_process, stop_processes
from robots import erd_urdf_path
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from itasc_bench.collision import pinocchio_reference
from itasc_ros.core import KinematicTree, Scene
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.tools.dds_env import local_dds_env

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "panda_self_collision.yaml"
SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"
TIMEOUT = 30.0  # [s] generous: the machine is shared, the node builds the convex hulls
ARM = [f"panda_joint{i}" for i in range(1, 8)]
HOME = home_of("panda").tolist()
TARGET = np.array([0.05, 0.0, 0.15])  # [m] inside the robot's base (as the demo scenario)
OBSTACLES = REPO / "config" / "panda_obstacles.yaml"
BALL = np.array([0.4, 0.3, 0.5])  # [m] the ball's centre in panda_obstacles.yaml
MARGIN = 0.02  # [m] the params file's


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_collision_test_client") as c:
        yield c


def _low_start() -> list[float]:
    """A configuration with the hand low over the plate, at (0.45, 0, 0.30) [m]."""
    from itasc_ros.core import solve_ik

    arm = KinematicTree.from_urdf_file(erd_urdf_path("panda")).select_joints(ARM)
    pose = arm.forward_kinematics(np.array(HOME), "panda_hand")
    pose[:3, 3] = [0.45, 0.0, 0.30]
    res = solve_ik(arm, pose, "panda_hand", seed=np.array(HOME), timeout=1.0)
    assert res.success, res
    return [float(x) for x in res.q]


CASES = {
    "inside the base, from home": (PARAMS, None, TARGET, "/coll"),
    "the ball's centre, from home": (OBSTACLES, None, BALL, "/coll_ball"),
    "the ball's centre, from low over the plate": (OBSTACLES, "low", BALL, "/coll_low"),
    "physics: the ball's centre, from low over the plate": (OBSTACLES, "low", BALL, "/coll_phys"),
}
PLATE_AND_BALL = ["box 0.5 0.0 0.0 0.4 0.6 0.02", "sphere 0.4 0.3 0.5 0.05"]  # the file's
LAG = 0.02  # [s] the physics robot's servos


@pytest.mark.parametrize("case", list(CASES))
def test_the_node_keeps_every_pair_at_the_margin_over_dds(
    client: RosTestClient, dds_domain: int, case: str
) -> None:
    params, start_kind, goal, ns = CASES[case]
    physics = case.startswith("physics")
    told = ["-p", f"actuator_lag:={LAG}"] if physics else []
    world = ["-p", "physics:=mujoco", "-p", f"actuator_lag:={LAG}"] if physics else []
    world += ["-p", f"obstacles:={json.dumps(PLATE_AND_BALL)}"] if physics else []
    start = HOME if start_kind is None else _low_start()
    urdf = erd_urdf_path("panda")
    node = start_process(
        node_command(
            "-r", f"__ns:={ns}", "--params-file", str(params),
            "-p", f"urdf_file:={urdf}", "-p", "command_out_topic:=commands", *told,
        ),
        local_dds_env(dds_domain),
        name="itasc_node_" + ns.strip("/"),
    )  # fmt: skip
    sim = start_process(
        node_command(
            "-r", f"__ns:={ns}", "-p", f"urdf_file:={urdf}", "-p", "rate:=250.0",
            "-p", f"joints:={json.dumps(ARM)}", "-p", f"initial_positions:={json.dumps(start)}",
            "-p", "command_topic:=commands", *world,
            module="itasc_ros.tools.sim_robot",
        ),
        local_dds_env(dds_domain),
        name="sim_" + ns.strip("/"),
    )  # fmt: skip
    states = client.collect(JointState, f"{ns}/joint_states", 1000)
    stats = client.collect(String, f"{ns}/itasc_sim_robot/stats", 100)
    target = client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose")
    arm = KinematicTree.from_urdf_file(urdf).select_joints(ARM)
    try:
        client.wait_for_subscribers(target, 1, TIMEOUT)
        client.wait_for(lambda: states, TIMEOUT, "joint states of the simulated robot")
        client.wait_for(lambda: "model 'panda'" in read_log(node), TIMEOUT, "the node's model")
        pose0 = arm.forward_kinematics(np.array(start), "panda_hand")
        msg = PoseStamped()
        msg.header.frame_id = "panda_link0"
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, goal)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(pose0))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4.0:  # a target stream at 20 Hz, as a marker sends
            target.publish(msg)
            time.sleep(0.05)
        # the states up to the stream's end (ROS time: the system clock), however late this
        # process takes them
        client.wait_until_heard([states], time.time(), TIMEOUT)
        seen = [m for t, m in list(states) if t >= t0]
        if physics:  # a report after the approach
            client.wait_for(
                lambda: any(t > time.monotonic() - 0.5 for t, _ in stats), TIMEOUT, "a report"
            )
    finally:
        stop_processes([sim, node])
    log = read_log(node)
    assert "Traceback" not in log, log[-3000:]
    c = Collision("c", srdf_file=SRDF, activation_distance=10.0)
    if params == OBSTACLES:
        c = Collision(
            "c",
            srdf_file=SRDF,
            activation_distance=10.0,
            obstacles=["box 0.5 0.0 0.0 0.4 0.6 0.02", "sphere 0.4 0.3 0.5 0.05"],
        )
    Scene(arm, [c])
    ref = pinocchio_reference(str(urdf), arm, c)
    qs = [np.array([m.position[list(m.name).index(j)] for j in ARM]) for m in seen]
    # ~1000 at 250 Hz for 4 s: the count says the stream ran, not at which rate (a robot and
    # node starved beside another test worker run at a quarter of it)
    assert len(qs) > 100, len(qs)
    closest = min(float(ref.distances(ref.q_of(q)).min()) for q in qs)
    hand = [
        float(np.linalg.norm(arm.forward_kinematics(q, "panda_hand")[:3, 3] - goal)) for q in qs
    ]
    print(
        f"\n{case}: closest pair {closest * 1e3:.2f} mm (margin {MARGIN}); hand "
        f"{hand[0]:.3f} -> {hand[-1]:.3f} m from the target; {len(qs)} joint states"
    )
    assert closest >= MARGIN - 0.001
    if physics:  # MuJoCo's referee: no contact, its own distance at least margin - 1 mm
        last = json.loads(list(stats)[-1][1].data)
        print(
            f"MuJoCo: {last['contact_steps']} contact steps, clearance "
            f"{last['obstacle_clearance_m'] * 1e3:.2f} mm, real time x{last['real_time_factor']}"
        )
        assert last["contact_steps"] == 0, last["contact_pairs"]
        assert last["obstacle_clearance_m"] >= MARGIN - 0.001
    # it went toward the target while its pose task could (scaled along its direction: the
    # collision rows and the joint limits bound it)
    assert hand[-1] < 0.8 * hand[0]
