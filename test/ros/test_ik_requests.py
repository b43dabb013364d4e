"""The node's IK requests (:class:`~itasc_ros.ros.ik_requests.IkRequests`) over real DDS.

In this process: the requests' reader and answers on a node of their own, the model given by
the callables the node gives them (its installed controller, whether a model is coming), so
that a test decides when the model comes. A request published by the test client is answered
on ``~/ik_solution`` / ``~/ik_result``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from procs import RosTestClient, ros_client
from sensor_msgs.msg import JointState

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.ros.ik_requests import MODEL_WAIT, IkRequests

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
PANDA = REPO / "urdf" / "panda.urdf"
NS = "/ikrace"
FIRST_SOLVE_TIMEOUT = 120.0  # [s] the first solve compiles the IK loop on a fresh machine


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_ik_requests_test_client") as c:
        yield c


def test_a_request_is_solved_by_a_model_installed_between_its_two_looks(
    client: RosTestClient,
) -> None:
    """A request waiting for a model finds it when the model's install ends between the
    request's look at the installed controller (none yet) and at whether one is coming (no
    longer): it is solved, not refused (a node refused one 7 ms before its model came)."""
    tree = KinematicTree.from_urdf_file(PANDA)
    pose = ConstraintConfig("ee", "copy_pose", link="panda_hand")
    ctrl = Controller(tree, ControllerConfig(constraints=[pose]))
    installed: list[Controller] = []
    t0 = time.monotonic()

    def coming() -> bool:
        """Coming for MODEL_WAIT + 0.5 s; then installed as this look finds it no longer coming."""
        if time.monotonic() - t0 < MODEL_WAIT + 0.5:
            return True
        if not installed:
            installed.append(ctrl)
        return False

    solutions = client.collect(JointState, f"{NS}/itasc_node/ik_solution")
    results = client.collect(DiagnosticStatus, f"{NS}/itasc_node/ik_result")
    node = rclpy.create_node("itasc_node", namespace=NS)
    ik = IkRequests(node, lambda: installed[0] if installed else None, model_coming=coming)
    try:
        requests = client.publisher(PoseStamped, f"{NS}/itasc_node/ik_request", 10)
        client.wait_for_subscribers(requests, 1, 60.0)
        goal = tree.forward_kinematics(home_of("panda") + 0.2, "panda_hand")
        msg = PoseStamped()
        msg.header.frame_id = "panda_link0"
        msg.header.stamp.sec = 7
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, goal[:3, 3])
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = map(float, spatial.matrix_to_quat(goal[:3, :3]))
        requests.publish(msg)
        client.wait_for(lambda: results, FIRST_SOLVE_TIMEOUT, "the request's result")
        ((_, status),) = results
        assert status.level == DiagnosticStatus.OK, status.message
        ((_, solution),) = solutions
        assert solution.header.stamp.sec == 7
        q = np.array(solution.position)
        assert np.allclose(tree.forward_kinematics(q, "panda_hand"), goal, atol=1e-4)
    finally:
        ik.close()
        node.destroy_node()
