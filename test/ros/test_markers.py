"""The RViz 6-DOF target marker of itasc_node, closed-loop with the simulated robot.

Processes: ``itasc_node`` (config/panda.yaml, urdf/panda.urdf) and ``itasc_sim_robot`` run as
their console scripts over shared-memory DDS in a private domain; this process is an RViz-like
interactive-marker client. Oracles: the ``interactive_markers`` protocol as the RViz client uses
it (service first, then updates with ``seq_num == last + 1``, anything else is a gap), and the
robot's forward kinematics computed here with the core tree from the simulator's own
``joint_states`` (the effector must reach the dragged pose).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
import rclpy
from procs import (
    PANDA_URDF,
    REPO,
    SIM_ROBOT_MODULE,
    read_log,
    ros_context,
    start_ros,
    stop_process,
)
from procs import wait_until as wait_at_most
from rclpy.client import Client
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rviz_client import RvizLikeClient
from sensor_msgs.msg import JointState
from visualization_msgs.msg import InteractiveMarkerFeedback

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.ros.conversions import matrix_to_pose, pose_to_matrix
from itasc_ros.ros.interactive_marker_server import SNAP_TO_EFFECTOR
from itasc_ros.ros.markers import FOLLOW_PERIOD, PLACE_PERIOD, TargetMarkers
from itasc_ros.tools.dds_env import local_dds_env

pytestmark = pytest.mark.dds

NS = "/itasc_node/target_marker"
MARKER = "ee"  # the pose constraint of config/panda.yaml
EFFECTOR = "panda_hand"
ROOT = "panda_link0"
CLIENT_ID = "/rviz_like_client"
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
REACH_TOL = 0.002  # [m]
ROT_TOL = 0.005  # [rad]


wait_until = partial(wait_at_most, timeout=TIMEOUT)


def pose_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(position error [m], rotation angle [rad]) between two (4, 4) poses."""
    rot = float(np.linalg.norm(spatial.so3_log(a[:3, :3] @ b[:3, :3].T)))
    return float(np.linalg.norm(a[:3, 3] - b[:3, 3])), rot


def offset_pose(base: np.ndarray, dxyz: tuple[float, float, float], yaw: float) -> np.ndarray:
    """(4, 4) ``base`` moved by ``dxyz`` [m] (root frame) and turned by ``yaw`` [rad] about z."""
    c, s = math.cos(yaw), math.sin(yaw)
    out = base.copy()
    out[:3, :3] = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ base[:3, :3]
    out[:3, 3] += dxyz
    return out


@dataclass
class System:
    context: Context
    executor: SingleThreadedExecutor
    tree: KinematicTree
    q_lock: threading.Lock
    q: list[np.ndarray]  # latest simulator positions, tree joint order (one slot)

    def effector(self) -> np.ndarray:
        """(4, 4) effector pose in the root frame from the simulator's latest joint state."""
        with self.q_lock:
            q = self.q[0].copy()
        return self.tree.forward_kinematics(q, EFFECTOR)


def rviz_client(system: System, name: str) -> RvizLikeClient:
    """An RViz-like client of the node's marker (feedback in the root frame, zero stamp)."""
    return RvizLikeClient(
        system.context,
        system.executor,
        name,
        ns=NS,
        marker=MARKER,
        frame=ROOT,  # RViz: the marker's frame, zero stamp (frame-locked marker)
        client_id=CLIENT_ID,
        timeout=TIMEOUT,
    )


def wait_reached(system: System, target: np.ndarray, what: str) -> None:
    def reached() -> bool:
        dp, dr = pose_error(system.effector(), target)
        return dp < REACH_TOL and dr < ROT_TOL

    try:
        wait_until(reached, what=what)
    except AssertionError:
        dp, dr = pose_error(system.effector(), target)
        raise AssertionError(f"{what}: effector {dp * 1e3:.2f} mm / {dr:.4f} rad away") from None


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def system(dds_domain: int) -> Iterator[System]:
    env = local_dds_env(dds_domain)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    tree = KinematicTree.from_urdf(PANDA_URDF.read_text())
    with ros_context(dds_domain) as (context, executor):
        sys_ = System(context, executor, tree, threading.Lock(), [])
        probe = rclpy.create_node("marker_test_probe", context=context)

        def on_js(msg: JointState) -> None:
            index = {n: i for i, n in enumerate(msg.name)}
            q = np.array([msg.position[index[n]] for n in tree.joint_names])  # (n,)
            with sys_.q_lock:
                sys_.q[:] = [q]

        probe.create_subscription(JointState, "/joint_states", on_js, 10)
        executor.add_node(probe)
        urdf = f"urdf_file:={PANDA_URDF}"
        config = REPO / "config" / "panda.yaml"
        node = start_ros(
            dds_domain,
            urdf,
            "control_rate:=200.0",
            params_files=[config],
            name="marker_itasc_node",
            env=env,
        )
        sim = None
        try:
            # The node is up before the robot: no marker until the first joint state (below).
            client = rviz_client(sys_, "rviz_before_robot")
            try:
                response = client.connect()
                assert response.markers == []
                sim = start_ros(
                    dds_domain,
                    urdf,
                    "rate:=250.0",
                    module=SIM_ROBOT_MODULE,
                    name="marker_sim_robot",
                    env=env,
                )
                wait_until(lambda: bool(sys_.q), what="the simulator's joint_states")
                update = client.wait_updates(1)[0]
                assert [m.name for m in update.markers] == [MARKER]
                assert client.gaps == []
            finally:
                client.close()
            yield sys_
        except BaseException:
            print(read_log(node))
            if sim is not None:
                print(read_log(sim))
            raise
        finally:
            code = stop_process(node)
            if sim is not None:
                stop_process(sim)
            executor.remove_node(probe)
            probe.destroy_node()
        assert code == 0, read_log(node)


@pytest.fixture
def client(system: System) -> Iterator[RvizLikeClient]:
    c = rviz_client(system, f"rviz_like_{time.monotonic_ns()}")
    try:
        yield c
    finally:
        c.close()


# --------------------------------------------------------------------------- tests
def test_marker_served_at_effector_in_root_frame(system: System, client: RvizLikeClient) -> None:
    response = client.connect()
    (marker,) = response.markers
    assert marker.name == MARKER and marker.header.frame_id == ROOT
    assert [e.title for e in marker.menu_entries] == [SNAP_TO_EFFECTOR]
    assert {c.name for c in marker.controls} >= {"move_rotate_3d", "move_x", "rotate_z"}
    dp, dr = pose_error(pose_to_matrix(marker.pose), system.effector())
    assert dp < 1e-3 and dr < 1e-3  # the robot holds still: no target yet


def test_marker_follows_topic_targets(system: System, client: RvizLikeClient) -> None:
    """A target from ``~/target_pose`` moves the RViz marker there (throttled to 10 Hz)."""
    from geometry_msgs.msg import PoseStamped

    client.connect()
    n0 = client.n_updates()
    goal = offset_pose(system.effector(), (0.0, 0.05, -0.05), yaw=0.2)
    pub = client.node.create_publisher(PoseStamped, "/itasc_node/target_pose", 10)
    wait_until(lambda: pub.get_subscription_count() > 0, what="the target subscription")
    msg = PoseStamped()
    msg.header.frame_id = ROOT
    msg.pose = matrix_to_pose(goal)
    t_end = time.monotonic() + 0.5
    while time.monotonic() < t_end:  # a 100 Hz stream of the same target for 0.5 s
        pub.publish(msg)
        time.sleep(0.01)
    wait_until(lambda: client.n_updates() > n0, what="the marker's pose update")
    moved = [p for u in client.updates[n0:] for p in u.poses if p.name == MARKER]
    assert moved and len(moved) <= 8  # followed, but throttled (50 targets in 0.5 s)
    dp, dr = pose_error(pose_to_matrix(moved[-1].pose), goal)
    assert dp < 1e-6 and dr < 1e-6
    wait_reached(system, goal, "the topic target")
    client.node.destroy_publisher(pub)
    assert client.gaps == []


def test_marker_ends_on_the_last_topic_target_however_fast_they_come(
    system: System, client: RvizLikeClient
) -> None:
    """A second target within the marker's throttle period is not lost: the marker moves there.

    The tick only marks the marker; it moves after the command is sent, once its period passed.
    """
    from geometry_msgs.msg import PoseStamped

    client.connect()
    pub = client.node.create_publisher(PoseStamped, "/itasc_node/target_pose", 10)
    wait_until(lambda: pub.get_subscription_count() > 0, what="the target subscription")
    time.sleep(FOLLOW_PERIOD)  # the marker's last move (an earlier test's) is a period ago
    goals = [offset_pose(system.effector(), (0.0, dy, -0.03), yaw=0.1) for dy in (0.02, -0.02)]
    n0 = client.n_updates()
    for goal in goals:  # 20 ms apart: the second within the first's throttle period
        msg = PoseStamped()
        msg.header.frame_id = ROOT
        msg.pose = matrix_to_pose(goal)
        pub.publish(msg)
        time.sleep(0.02)

    def on_last() -> bool:
        moved = [p for u in client.updates[n0:] for p in u.poses if p.name == MARKER]
        return bool(moved) and pose_error(pose_to_matrix(moved[-1].pose), goals[-1])[0] < 1e-6

    wait_until(on_last, timeout=TIMEOUT, what="the marker on the second target")
    wait_reached(system, goals[-1], "the second target")
    client.node.destroy_publisher(pub)
    assert client.gaps == []


def test_drag_moves_the_robot_to_the_marker(system: System, client: RvizLikeClient) -> None:
    client.connect()
    assert client.init_seq is not None
    target = offset_pose(system.effector(), (0.05, -0.04, 0.03), yaw=0.2)  # 7.1 cm away
    client.send(event=InteractiveMarkerFeedback.MOUSE_DOWN)
    client.send(matrix_to_pose(target))
    client.send(event=InteractiveMarkerFeedback.MOUSE_UP)
    (echo,) = client.wait_updates(1)
    assert echo.seq_num == client.init_seq + 1
    (pose,) = echo.poses
    assert pose.name == MARKER and pose.header.frame_id == ROOT
    assert np.array_equal(pose_to_matrix(pose.pose), pose_to_matrix(matrix_to_pose(target)))
    wait_reached(system, target, "the dragged pose")
    time.sleep(0.3)
    assert client.n_updates() == 1 and client.gaps == []  # MOUSE_DOWN/UP change nothing


def test_many_drags_gap_free_and_late_client(system: System, client: RvizLikeClient) -> None:
    client.connect()
    assert client.init_seq is not None
    start = system.effector()
    n = 300
    poses = []
    for i in range(n):  # a 6 cm circle in the horizontal plane, turning 0.15 rad, ~3 s
        a = 2.0 * math.pi * (i + 1) / n
        d = (0.03 * (math.cos(a) - 1.0) + 0.03, 0.03 * math.sin(a), 0.02 * math.sin(a))
        poses.append(offset_pose(start, d, 0.15 * math.sin(a)))
    t0 = time.monotonic()
    for i, target in enumerate(poses):
        client.send(matrix_to_pose(target))
        time.sleep(max(0.0, t0 + 0.01 * (i + 1) - time.monotonic()))  # RViz-like 100 Hz
    updates = client.wait_updates(n)
    assert client.gaps == []
    assert [u.seq_num for u in updates] == list(
        range(client.init_seq + 1, client.init_seq + n + 1)
    )
    for u, target in zip(updates, poses, strict=True):
        assert np.array_equal(
            pose_to_matrix(u.poses[0].pose), pose_to_matrix(matrix_to_pose(target))
        )
    wait_reached(system, poses[-1], "the last dragged pose")

    late = rviz_client(system, "rviz_late")
    try:
        response = late.connect()
        assert response.sequence_number == client.init_seq + n
        (marker,) = response.markers
        assert np.array_equal(
            pose_to_matrix(marker.pose), pose_to_matrix(matrix_to_pose(poses[-1]))
        )
    finally:
        late.close()


def test_snap_to_effector(system: System, client: RvizLikeClient) -> None:
    client.connect()
    start = system.effector()
    target = offset_pose(start, (0.0, 0.0, 0.0), yaw=0.0)
    target[:3, 3] = (1.3, 0.2, 0.5)  # out of the Panda's reach (0.86 m): the robot stretches
    client.send(matrix_to_pose(target))
    client.wait_updates(1)
    wait_until(lambda: pose_error(system.effector(), start)[0] > 0.2, what="the stretch")
    time.sleep(0.7)  # a user's right-click: longer than the twist estimate's gap (no spike)
    client.send(event=InteractiveMarkerFeedback.MENU_SELECT, menu_entry_id=1)
    snap = client.wait_updates(2)[1]
    (pose,) = snap.poses
    assert pose.name == MARKER and pose.header.frame_id == ROOT
    snapped = pose_to_matrix(pose.pose)
    assert pose_error(snapped, target)[0] > 0.2  # to the effector, not the target
    dp, dr = pose_error(system.effector(), snapped)
    assert dp < 0.01 and dr < 0.02  # the arm decelerates within its joint limits after it
    time.sleep(0.3)  # the snapped pose is the new target: the robot holds still there
    wait_reached(system, snapped, "the snapped pose")

    def converged() -> bool:  # the reach tolerance leaves mrad to go: the last of it, then still
        dp, dr = pose_error(system.effector(), snapped)
        return dp < 5e-4 and dr < 1e-3

    wait_until(converged, what="the arm converged on the snapped pose (0.5 mm, 1 mrad)")
    time.sleep(0.3)
    dp, dr = pose_error(system.effector(), snapped)
    assert dp < 5e-4 and dr < 1e-3, (dp, dr)  # converged on it (within the limits), no drift
    assert client.gaps == []


def test_snap_right_after_a_drag_does_not_kick(system: System, client: RvizLikeClient) -> None:
    """A snap within one 10 Hz drag period: no velocity estimate from the drag is fed forward."""
    client.connect()
    start = system.effector()
    for k in range(1, 11):  # a quick drag: 5 cm in 0.1 s (0.5 m/s), then snap at once
        client.send(matrix_to_pose(offset_pose(start, (0.005 * k, 0.0, 0.0), yaw=0.0)))
        time.sleep(0.01)
    client.send(event=InteractiveMarkerFeedback.MENU_SELECT, menu_entry_id=1)
    wait_until(lambda: client.n_updates() >= 11, what="the snap's update")
    snapped = pose_to_matrix(client.updates[-1].poses[0].pose)
    # The robot stops at the snapped pose: it only coasts by its reaction time (measured
    # 4.5 mm; 9 mm when the snap was fed to the twist estimate as a motion). The estimate
    # reset itself is shown exactly in test_controller.py::test_a_jump_resets_the_twist_estimate.
    path = []
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        path.append(pose_error(system.effector(), snapped)[0])
        time.sleep(0.005)
    print(f"\nafter the snap: max distance from the snapped pose {max(path) * 1e3:.1f} mm")
    assert max(path) < 0.015, f"max distance from the snapped pose {max(path) * 1e3:.1f} mm"
    wait_reached(system, snapped, "the snapped pose")
    assert client.gaps == []


def test_urdf_reload_recreates_the_marker(system: System, client: RvizLikeClient) -> None:
    from rcl_interfaces.msg import Parameter as ParamMsg
    from rcl_interfaces.msg import ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    before = client.connect().sequence_number  # > 300 after the drags above
    drags = 0
    while before + drags < 10:  # run alone: raised here, so that a restarted server shows
        client.send(matrix_to_pose(system.effector()))  # a drag onto where the hand is
        drags += 1
    if drags:
        before = client.wait_updates(drags)[-1].seq_num
        assert before >= 10, before
    cli: Client = client.node.create_client(SetParameters, "/itasc_node/set_parameters")
    assert cli.wait_for_service(timeout_sec=TIMEOUT)
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=str(PANDA_URDF))
    future = cli.call_async(
        SetParameters.Request(parameters=[ParamMsg(name="urdf_file", value=value)])
    )
    wait_until(future.done, what="set_parameters")
    result = future.result()
    assert result is not None and result.results[0].successful

    # A fresh client sees the new server (its sequence restarts) with the marker at the effector.
    def served() -> bool:
        late = rviz_client(system, f"rviz_reload_{time.monotonic_ns()}")
        try:
            response = late.connect()
        finally:
            late.close()
        if len(response.markers) != 1 or response.sequence_number >= before:
            return False
        dp, dr = pose_error(pose_to_matrix(response.markers[0].pose), system.effector())
        # at the effector when the model was installed; the arm may still settle (within its
        # joint limits) toward the target of the previous test by a millimetre or so
        return dp < 2e-3 and dr < 2e-3

    wait_until(served, what="the marker of the reloaded model")


# --------------------------------------------------------------------------- the tick's lock
def test_markers_read_the_controller_only_under_the_ticks_lock(dds_domain: int) -> None:
    """The markers' effector poses are computed on the executor's thread (the placement timer,
    "Snap to effector"); the controller's kinematics share one workspace with the control tick,
    which runs on a thread of its own. While the tick's lock is held, neither the placement nor
    a snap computes anything: each waits for the lock, then goes on."""
    tree = KinematicTree.from_urdf(PANDA_URDF.read_text())
    cons = [ConstraintConfig(MARKER, "copy_pose", link=EFFECTOR)]
    ctrl = Controller(tree, ControllerConfig(constraints=cons))
    lock = threading.RLock()
    snapped: list[str] = []
    with ros_context(dds_domain) as (context, executor):
        node = rclpy.create_node("marker_lock_probe", context=context)
        executor.add_node(node)
        markers = TargetMarkers(
            node, ctrl, [MARKER], on_pose=lambda *_: None,
            on_snap=lambda name, _msg: snapped.append(name), lock=lock,
        )  # fmt: skip
        try:
            assert not markers.placed  # no joint state yet: the placement timer runs
            with lock:  # a tick: the joint state arrives, the placement timer must wait
                ctrl.set_joint_state(tree.joint_names, tree.neutral(), 0.0)
                time.sleep(3 * PLACE_PERIOD)
                assert not markers.placed, "placed while the tick held the lock"
            wait_until(lambda: markers.placed, what="the markers placed after the tick")
            done = threading.Event()

            def snap() -> None:
                markers.snap_to_effector(MARKER)
                done.set()

            with lock:
                threading.Thread(target=snap, daemon=True).start()
                assert not done.wait(3 * PLACE_PERIOD), "snapped while the tick held the lock"
            assert done.wait(TIMEOUT) and snapped == [MARKER]
        finally:
            markers.shutdown()
            executor.remove_node(node)
            node.destroy_node()
