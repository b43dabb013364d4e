"""A tiny interactive-marker server process for test_interactive_marker_server.py.

Run as ``python test/im_server_process.py`` with the repository on PYTHONPATH and the local DDS
environment (``itasc_ros.tools.dds_env.local_dds_env``). It serves one 6-DOF marker named
``target`` in frame ``base`` on ``/im_test/target_marker``, echoes each accepted POSE_UPDATE to all
clients (one UPDATE per feedback), moves the marker to :data:`EFFECTOR_XYZ` on the menu entry
"Snap to effector" (id 1), does nothing on "Do nothing" (id 2), prints ``READY`` once serving,
and exits cleanly on SIGINT or SIGTERM.
"""

from __future__ import annotations

import signal
import sys
import threading

from itasc_ros.tools.dds_env import apply_local_dds_env

NODE_NAME = "im_test_server"
NAMESPACE = "target_marker"
NODE_NAMESPACE = "/im_test"
MARKER = "target"
FRAME = "base"
INITIAL_XYZ = (0.4, 0.0, 0.3)
EFFECTOR_XYZ = (0.25, -0.1, 0.6)
BAD_XYZ = (-9.0, -9.0, -9.0)


def main() -> int:
    apply_local_dds_env()  # keeps the domain passed in ITASC_PRIVATE_DOMAIN_ID
    import rclpy
    from geometry_msgs.msg import Pose
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions
    from visualization_msgs.msg import InteractiveMarkerFeedback

    from itasc_ros.ros.executors import spin_until
    from itasc_ros.ros.interactive_marker_server import (
        SNAP_TO_EFFECTOR,
        InteractiveMarkerServer,
        make_6dof_marker,
    )

    # No rclpy signal handlers (they would shut the context down at once): the handlers below
    # end the spin, so the server can still publish its final erase before the context goes.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node(NODE_NAME, namespace=NODE_NAMESPACE)
    server = InteractiveMarkerServer(node, NAMESPACE, keep_alive_period=0.2)

    def on_feedback(feedback: InteractiveMarkerFeedback) -> None:
        if feedback.event_type == InteractiveMarkerFeedback.POSE_UPDATE:
            server.apply_changes()  # the pose is pending in the server: echo it

    def on_menu(entry_id: int, feedback: InteractiveMarkerFeedback) -> None:
        del feedback
        if entry_id == 2:  # "Do nothing"
            return
        # Entry 1 snaps to the effector; any other id (which the server must not pass on) makes
        # the marker jump to BAD_XYZ, where the test would see it.
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (
            EFFECTOR_XYZ if entry_id == 1 else BAD_XYZ
        )
        pose.orientation.w = 1.0
        server.set_pose(MARKER, pose)
        server.apply_changes()

    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = INITIAL_XYZ
    pose.orientation.w = 1.0
    server.insert(
        make_6dof_marker(MARKER, FRAME, pose, scale=0.2, description="target"), on_feedback
    )
    server.set_menu(MARKER, [SNAP_TO_EFFECTOR, "Do nothing"], on_menu)
    server.apply_changes()

    # Not rclpy's MultiThreadedExecutor: its wait loop busy-waits here (a whole core, the
    # callbacks starved of the GIL: 0.4 s per feedback round trip with shared-memory DDS).
    # Concurrent callers of the server are tested in process (test_api_concurrent_apply...).
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    # SIGINT/SIGTERM set an event that the spin loop looks at (as itasc_node does): a
    # KeyboardInterrupt raised inside a running callback left rclpy's executor waiting for that
    # callback for ever in executor.shutdown() (a fresh clone's test run hung here twice).
    stop = threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda signum, frame: stop.set())
    print("READY", flush=True)
    try:
        spin_until(executor, stop)
    except ExternalShutdownException:
        pass
    finally:
        server.shutdown()
        executor.shutdown()
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
