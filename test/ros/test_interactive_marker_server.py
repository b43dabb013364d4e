"""The interactive-marker server against a client that behaves like RViz's.

Oracle: the protocol of ros-visualization/interactive_markers (InteractiveMarkerClient in
src/interactive_marker_client.cpp, as used by RViz): the client subscribes to ``update``, asks
``get_interactive_markers`` for the full state, drops updates with ``seq_num <=`` the service's
``sequence_number`` and treats any ``seq_num != last + 1`` as a gap (RViz resets on it). The
server runs in its own process (test/im_server_process.py) over shared-memory DDS in a private
domain; this process is the client. The 6-DOF marker layout is checked against
visualization_tutorials ``make6DofMarker`` (box + rotate/move about x, z, y).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import Pose
from im_server_process import (
    EFFECTOR_XYZ,
    FRAME,
    INITIAL_XYZ,
    MARKER,
    NAMESPACE,
    NODE_NAMESPACE,
)
from procs import REPO, read_log, reliable, ros_context, start_process, stop_process, wait_until
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rviz_client import RvizLikeClient
from visualization_msgs.msg import (
    InteractiveMarker,
    InteractiveMarkerControl,
    InteractiveMarkerFeedback,
    InteractiveMarkerUpdate,
)

from itasc_ros.core.kinematics.spatial import quat_to_matrix
from itasc_ros.ros.interactive_marker_server import (
    CLIENT_LOCK_TIMEOUT,
    SNAP_TO_EFFECTOR,
    InteractiveMarkerServer,
    make_6dof_marker,
)
from itasc_ros.tools.dds_env import local_dds_env

pytestmark = pytest.mark.dds

NS = f"{NODE_NAMESPACE}/{NAMESPACE}"  # '/im_test/target_marker'
N_EVENTS = 1000
WINDOW = 32  # feedback messages in flight at once [-]
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
_LOCAL_IDS = itertools.count()

# (name, interaction mode, axis of the control in the marker frame), as in make6DofMarker.
EXPECTED_CONTROLS = [
    ("move_rotate_3d", InteractiveMarkerControl.MOVE_ROTATE_3D, None),
    ("rotate_x", InteractiveMarkerControl.ROTATE_AXIS, (1.0, 0.0, 0.0)),
    ("move_x", InteractiveMarkerControl.MOVE_AXIS, (1.0, 0.0, 0.0)),
    ("rotate_z", InteractiveMarkerControl.ROTATE_AXIS, (0.0, 0.0, 1.0)),
    ("move_z", InteractiveMarkerControl.MOVE_AXIS, (0.0, 0.0, 1.0)),
    ("rotate_y", InteractiveMarkerControl.ROTATE_AXIS, (0.0, 1.0, 0.0)),
    ("move_y", InteractiveMarkerControl.MOVE_AXIS, (0.0, 1.0, 0.0)),
]


def make_pose(x: float, y: float, z: float, yaw: float = 0.0) -> Pose:
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2.0), math.cos(yaw / 2.0)
    return pose


def random_pose(rng: np.random.Generator) -> Pose:
    x, y, z = (float(v) for v in rng.uniform(-1.0, 1.0, 3))
    return make_pose(x, y, z, yaw=float(rng.uniform(-3.0, 3.0)))


def xyz(pose: Pose) -> tuple[float, float, float]:
    return (pose.position.x, pose.position.y, pose.position.z)


def same_pose(a: Pose, b: Pose) -> bool:
    pa = (*xyz(a), a.orientation.x, a.orientation.y, a.orientation.z, a.orientation.w)
    pb = (*xyz(b), b.orientation.x, b.orientation.y, b.orientation.z, b.orientation.w)
    return all(u == v for u, v in zip(pa, pb, strict=True))  # bit-exact over CDR


def must_get(server: InteractiveMarkerServer, name: str) -> InteractiveMarker:
    marker = server.get(name)
    assert marker is not None
    return marker


# --------------------------------------------------------------------------- 6-DOF marker layout
def check_6dof_layout(marker: InteractiveMarker) -> None:
    assert [c.name for c in marker.controls] == [n for n, _, _ in EXPECTED_CONTROLS]
    for control, (_, mode, axis) in zip(marker.controls, EXPECTED_CONTROLS, strict=True):
        assert control.interaction_mode == mode
        assert control.orientation_mode == InteractiveMarkerControl.INHERIT
        q = control.orientation
        assert math.isclose(q.x**2 + q.y**2 + q.z**2 + q.w**2, 1.0, abs_tol=1e-12)
        if axis is not None:  # a control acts along the x axis of its orientation
            x_axis = quat_to_matrix((q.x, q.y, q.z, q.w))[:, 0]  # (3,)
            assert np.allclose(np.abs(x_axis), axis, atol=1e-12)
    box = marker.controls[0]
    assert box.always_visible
    assert len(box.markers) == 1 and box.markers[0].scale.x == pytest.approx(0.45 * marker.scale)


def test_make_6dof_marker_layout() -> None:
    pose = make_pose(0.1, 0.2, 0.3, yaw=0.5)
    marker = make_6dof_marker("goal", "world", pose, scale=0.3, description="Goal")
    assert (marker.name, marker.header.frame_id, marker.description) == ("goal", "world", "Goal")
    assert marker.header.stamp.sec == 0 and marker.header.stamp.nanosec == 0
    assert marker.scale == pytest.approx(0.3)
    assert same_pose(marker.pose, pose) and marker.pose is not pose
    check_6dof_layout(marker)
    assert [(e.id, e.parent_id, e.title) for e in marker.menu_entries] == [
        (1, 0, SNAP_TO_EFFECTOR)
    ]
    assert make_6dof_marker("goal", "world", pose, menu=False).menu_entries == []
    with pytest.raises(ValueError, match="scale"):
        make_6dof_marker("goal", "world", pose, scale=0.0)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def server_process(dds_domain: int) -> Iterator[subprocess.Popen[bytes]]:
    env = local_dds_env(dds_domain)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    script = str(REPO / "test" / "im_server_process.py")
    proc = start_process([sys.executable, script], env, name="im_server")
    try:
        yield proc
    finally:
        if stop_process(proc, signal.SIGINT, 5.0) not in (0, -signal.SIGINT, -signal.SIGKILL):
            print(read_log(proc))


@pytest.fixture(scope="module")
def ros(dds_domain: int) -> Iterator[tuple[Context, SingleThreadedExecutor]]:
    with ros_context(dds_domain) as ros_:
        yield ros_


def rviz_client(ros: tuple[Context, SingleThreadedExecutor], name: str) -> RvizLikeClient:
    """A client of the server process, stamping its feedback (as RViz does)."""
    return RvizLikeClient(
        *ros, name, ns=NS, marker=MARKER, frame=FRAME, stamped=True, timeout=TIMEOUT
    )


@pytest.fixture(scope="module")
def client_a(
    server_process: subprocess.Popen[bytes], ros: tuple[Context, SingleThreadedExecutor]
) -> RvizLikeClient:
    assert server_process.poll() is None
    client = rviz_client(ros, "rviz_a")
    client.connect()
    return client


# --------------------------------------------------------------------------- protocol tests
def test_service_gives_full_state(client_a: RvizLikeClient) -> None:
    response = client_a.initial  # asked right after the update topic flowed, as RViz does
    assert response is not None
    assert response.sequence_number == 1  # insert + set_menu applied as one batch
    assert [m.name for m in response.markers] == [MARKER]
    marker = response.markers[0]
    assert marker.header.frame_id == FRAME
    assert xyz(marker.pose) == INITIAL_XYZ
    check_6dof_layout(marker)
    assert [(e.id, e.title) for e in marker.menu_entries] == [
        (1, SNAP_TO_EFFECTOR),
        (2, "Do nothing"),
    ]
    # KEEP_ALIVE carries the current seq_num.
    assert client_a.keep_alive_seqs[0] == 1


def test_pose_update_is_echoed_with_next_seq_num(client_a: RvizLikeClient) -> None:
    n0, seq0 = client_a.n_updates(), client_a.current_seq()
    pose = make_pose(0.5, 0.1, 0.2, yaw=0.3)
    client_a.send(pose)
    update = client_a.wait_updates(n0 + 1)[n0]
    assert update.seq_num == seq0 + 1
    assert update.type == InteractiveMarkerUpdate.UPDATE
    assert update.server_id == NS
    assert (len(update.markers), len(update.erases), len(update.poses)) == (0, 0, 1)
    echoed = update.poses[0]
    assert echoed.name == MARKER and same_pose(echoed.pose, pose)
    # The marker's header has a zero stamp (latest TF), so it is kept, not the feedback's.
    assert echoed.header.frame_id == FRAME
    assert (echoed.header.stamp.sec, echoed.header.stamp.nanosec) == (0, 0)
    assert client_a.gaps == []


def test_1000_feedback_events_gap_free(client_a: RvizLikeClient) -> None:
    n0 = client_a.n_updates()
    rng = np.random.default_rng(7)
    poses = [random_pose(rng) for _ in range(N_EVENTS)]
    t0 = time.monotonic()
    for i, pose in enumerate(poses):
        if i >= WINDOW:  # pace: at most WINDOW feedback messages in flight
            client_a.wait_updates(n0 + i - WINDOW + 1)
        client_a.send(pose)
    updates = client_a.wait_updates(n0 + N_EVENTS)[n0:]
    elapsed = time.monotonic() - t0
    print(f"{N_EVENTS} feedback round trips in {elapsed:.2f} s")
    assert client_a.gaps == []
    seqs = [u.seq_num for u in updates]
    assert seqs == list(range(seqs[0], seqs[0] + N_EVENTS))
    # One UPDATE per feedback, each echoing that feedback's pose, in order.
    assert all(
        len(u.poses) == 1 and same_pose(u.poses[0].pose, p)
        for u, p in zip(updates, poses, strict=True)
    )


def test_late_client_gets_current_pose_and_seq_num(
    client_a: RvizLikeClient, ros: tuple[Context, SingleThreadedExecutor]
) -> None:
    last = client_a.wait_updates(client_a.n_updates())[-1]
    late = rviz_client(ros, "rviz_late")
    response = late.connect()
    assert response.sequence_number == last.seq_num
    assert same_pose(response.markers[0].pose, last.poses[0].pose)
    check_6dof_layout(response.markers[0])
    # Both clients see the next change with the same, next seq_num.
    n_a = client_a.n_updates()
    pose = make_pose(0.3, 0.3, 0.3)
    client_a.send(pose)
    upd_a = client_a.wait_updates(n_a + 1)[n_a]
    upd_late = late.wait_updates(1)[0]
    assert upd_a.seq_num == upd_late.seq_num == last.seq_num + 1
    assert same_pose(upd_late.poses[0].pose, pose)
    assert client_a.gaps == [] and late.gaps == []
    late.node.destroy_node()


def test_other_client_ignored_within_lock_timeout(client_a: RvizLikeClient) -> None:
    n0 = client_a.n_updates()
    mine = make_pose(0.1, 0.0, 0.5)
    client_a.send(mine)
    client_a.wait_updates(n0 + 1)
    t_accepted = time.monotonic()
    # Another RViz grabs the marker right away: ignored. The next feedback from the owner is
    # the next UPDATE (feedback is handled in order), so the intruder produced none.
    intruder = make_pose(-0.7, -0.7, -0.7)
    client_a.send(intruder, client_id="/rviz_b")
    owner = make_pose(0.2, 0.0, 0.5)
    client_a.send(owner)
    update = client_a.wait_updates(n0 + 2)[n0 + 1]
    assert same_pose(update.poses[0].pose, owner)
    assert time.monotonic() - t_accepted < CLIENT_LOCK_TIMEOUT
    assert same_pose(client_a.get_state().markers[0].pose, owner)
    # After the lock timeout the other client may take over.
    time.sleep(CLIENT_LOCK_TIMEOUT + 0.1)
    taker = make_pose(-0.2, 0.4, 0.1)
    client_a.send(taker, client_id="/rviz_b")
    update = client_a.wait_updates(n0 + 3)[n0 + 2]
    assert same_pose(update.poses[0].pose, taker)
    # ... and now the first client is the one locked out.
    client_a.send(make_pose(0.9, 0.9, 0.9))
    client_a.send(taker, client_id="/rviz_b", event=InteractiveMarkerFeedback.MOUSE_UP)
    back = make_pose(0.0, 0.1, 0.2)
    client_a.send(back, client_id="/rviz_b")
    update = client_a.wait_updates(n0 + 4)[n0 + 3]
    assert same_pose(update.poses[0].pose, back)
    assert client_a.gaps == []
    time.sleep(CLIENT_LOCK_TIMEOUT + 0.1)  # release the lock for the tests below


def test_unknown_marker_ignored(client_a: RvizLikeClient) -> None:
    n0 = client_a.n_updates()
    client_a.send(make_pose(5.0, 5.0, 5.0), marker="no_such_marker")
    valid = make_pose(0.0, 0.0, 0.4)
    client_a.send(valid)
    updates = client_a.wait_updates(n0 + 1)
    time.sleep(0.05)
    assert client_a.n_updates() == n0 + 1
    assert same_pose(updates[n0].poses[0].pose, valid) and updates[n0].poses[0].name == MARKER
    state = client_a.get_state()
    assert [m.name for m in state.markers] == [MARKER]
    assert client_a.gaps == []


def test_menu_select_dispatches_by_entry_id(client_a: RvizLikeClient) -> None:
    n0 = client_a.n_updates()
    here = client_a.get_state().markers[0].pose
    # Entry 2 does nothing and entry 99 does not exist: no UPDATE; entry 1 snaps the marker.
    for entry in (2, 99, 1):
        client_a.send(here, event=InteractiveMarkerFeedback.MENU_SELECT, menu_entry_id=entry)
    update = client_a.wait_updates(n0 + 1)[n0]
    time.sleep(0.05)
    assert client_a.n_updates() == n0 + 1
    assert xyz(update.poses[0].pose) == EFFECTOR_XYZ
    assert client_a.gaps == []


def test_server_process_exits_cleanly_and_erases(
    client_a: RvizLikeClient, server_process: subprocess.Popen[bytes]
) -> None:
    n0 = client_a.n_updates()
    server_process.send_signal(signal.SIGINT)
    # clean, not fast: the erase is acknowledged, then DDS is torn down (5 s was once too short
    # beside another test worker compiling a fresh clone's kernels)
    assert server_process.wait(timeout=30.0) == 0
    update = client_a.wait_updates(n0 + 1)[n0]
    assert list(update.erases) == [MARKER]
    assert client_a.gaps == []


# --------------------------------------------------------------------------- in-process API
@pytest.fixture
def local_server(
    ros: tuple[Context, SingleThreadedExecutor],
) -> Iterator[tuple[InteractiveMarkerServer, list[InteractiveMarkerUpdate]]]:
    context, executor = ros
    node = rclpy.create_node(
        f"im_local_{next(_LOCAL_IDS)}", namespace="/im_local", context=context
    )
    server = InteractiveMarkerServer(node, "~/marker", keep_alive_period=0.0)
    received: list[InteractiveMarkerUpdate] = []
    listener = rclpy.create_node(f"im_local_listener_{next(_LOCAL_IDS)}", context=context)
    sub = listener.create_subscription(
        InteractiveMarkerUpdate,
        f"{node.get_fully_qualified_name()}/marker/update",
        received.append,
        reliable(1000),
    )
    executor.add_node(listener)
    executor.add_node(node)
    wait_until(lambda: sub.get_publisher_count() >= 1, what="local update matched")
    try:
        yield server, received
    finally:
        server.shutdown()
        executor.remove_node(node)
        executor.remove_node(listener)
        node.destroy_node()
        listener.destroy_node()


def test_api_pending_changes_and_seq_num(
    local_server: tuple[InteractiveMarkerServer, list[InteractiveMarkerUpdate]],
) -> None:
    server, received = local_server
    assert re.fullmatch(r"/im_local/im_local_\d+/marker", server.server_id)
    assert server.seq_num == 0 and not server.apply_changes()  # nothing pending: no UPDATE
    a = make_6dof_marker("a", "base", make_pose(1.0, 0.0, 0.0), menu=False)
    server.insert(a)
    a.pose.position.x = 9.0  # the server holds a copy
    assert must_get(server, "a").pose.position.x == 1.0
    assert server.names() == []  # pending until applied
    assert not server.set_pose("nope", make_pose(0.0, 0.0, 0.0))
    assert server.set_pose("a", make_pose(2.0, 0.0, 0.0))  # folds into the pending insert
    server.insert(make_6dof_marker("b", "base", make_pose(0.0, 1.0, 0.0)))
    assert server.erase("b")  # never published: simply dropped
    assert server.apply_changes() and server.seq_num == 1
    wait_until(lambda: len(received) == 1, what="UPDATE 1")
    assert [m.name for m in received[0].markers] == ["a"] and received[0].seq_num == 1
    assert received[0].markers[0].pose.position.x == 2.0

    # Pose-only change: goes out in `poses`, keeps the header unless a frame is given.
    server.set_pose("a", make_pose(3.0, 0.0, 0.0))
    assert must_get(server, "a").pose.position.x == 3.0 and server.names() == ["a"]
    server.apply_changes()
    header = received[0].markers[0].header
    header.frame_id = "world"
    server.set_pose("a", make_pose(4.0, 0.0, 0.0), header)
    server.apply_changes()
    wait_until(lambda: len(received) == 3, what="UPDATE 3")
    assert [(u.seq_num, len(u.markers), len(u.poses)) for u in received[1:]] == [
        (2, 0, 1),
        (3, 0, 1),
    ]
    assert received[1].poses[0].header.frame_id == "base"
    assert received[2].poses[0].header.frame_id == "world"

    calls: list[int] = []
    assert server.set_menu("a", ["one", "two"], lambda i, fb: calls.append(i))
    assert not server.set_menu("nope", ["x"], None)
    assert [e.id for e in must_get(server, "a").menu_entries] == [1, 2]
    assert must_get(server, "a").pose.position.x == 4.0
    server.apply_changes()
    assert not server.erase("nope")
    server.clear()
    assert server.get("a") is None
    server.apply_changes()
    wait_until(lambda: len(received) == 5, what="UPDATE 5")
    assert [m.name for m in received[3].markers] == ["a"]
    assert len(received[3].markers[0].menu_entries) == 2
    assert list(received[4].erases) == ["a"] and server.names() == []
    assert [u.seq_num for u in received] == [1, 2, 3, 4, 5]


def test_api_concurrent_apply_keeps_seq_order(
    local_server: tuple[InteractiveMarkerServer, list[InteractiveMarkerUpdate]],
) -> None:
    server, received = local_server
    server.insert(make_6dof_marker("a", "base", make_pose(0.0, 0.0, 0.0)))
    server.apply_changes()
    n_threads, n_each = 4, 100

    def worker(k: int) -> None:
        for i in range(n_each):
            server.set_pose("a", make_pose(float(k), float(i), 0.0))
            server.apply_changes()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    n = server.seq_num
    assert n_each < n <= 1 + n_threads * n_each  # concurrent set_pose may share one batch
    wait_until(lambda: len(received) == n, what=f"{n} UPDATEs")
    assert [u.seq_num for u in received] == list(range(1, n + 1))  # published in seq order
