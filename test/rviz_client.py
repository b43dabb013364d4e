"""Test helper: the client side of the interactive-markers protocol, as RViz uses it.

Oracle: ros-visualization/interactive_markers (InteractiveMarkerClient in
src/interactive_marker_client.cpp, as used by RViz): the client subscribes to ``update`` first,
then asks ``get_interactive_markers`` for the full state; queued updates with ``seq_num <=``
the service's ``sequence_number`` are dropped, and every later UPDATE must carry exactly the
next ``seq_num`` (anything else is a gap: RViz would reset; recorded in
:attr:`RvizLikeClient.gaps`). Feedback goes to ``feedback`` with the client's id.

Tests import this module as ``from rviz_client import RvizLikeClient`` (the test directory is
on ``sys.path``).
"""

from __future__ import annotations

import threading

import rclpy
from geometry_msgs.msg import Pose
from procs import reliable, wait_until
from rclpy.client import Client
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from visualization_msgs.msg import InteractiveMarkerFeedback, InteractiveMarkerUpdate
from visualization_msgs.srv import GetInteractiveMarkers


class RvizLikeClient:
    """One RViz-like client of the marker server at ``ns`` (a node in ``context``).

    Args:
        context: the rclpy context of the node.
        executor: spins the node (in a thread, see :func:`procs.ros_context`).
        name: the node's name; the client id is ``/<name>`` unless ``client_id`` is given.
        ns: the server's topic namespace (``<ns>/update``, ``<ns>/feedback``...).
        marker: the marker the feedback is about (by default).
        frame: the feedback's ``header.frame_id``.
        stamped: stamp the feedback with the node's clock (else a zero stamp, as RViz does for
            a frame-locked marker).
        timeout: of every wait [s].
    """

    def __init__(
        self,
        context: Context,
        executor: SingleThreadedExecutor,
        name: str,
        *,
        ns: str,
        marker: str,
        frame: str,
        client_id: str | None = None,
        stamped: bool = False,
        timeout: float = 10.0,
    ) -> None:
        self.node = rclpy.create_node(name, context=context)
        self.client_id = client_id if client_id is not None else f"/{name}"
        self.marker, self.frame, self.stamped, self.timeout = marker, frame, stamped, timeout
        self.cond = threading.Condition()
        self.queued: list[InteractiveMarkerUpdate] = []  # before the service answered
        self.updates: list[InteractiveMarkerUpdate] = []  # accepted UPDATEs, in order
        self.gaps: list[tuple[int, int]] = []  # (expected, received)
        self.keep_alive_seqs: list[int] = []
        self.init_seq: int | None = None
        self.initial: GetInteractiveMarkers.Response | None = None
        self.last_seq: int | None = None
        self.node.create_subscription(
            InteractiveMarkerUpdate, f"{ns}/update", self._on_update, reliable(100)
        )
        self.pub = self.node.create_publisher(
            InteractiveMarkerFeedback, f"{ns}/feedback", reliable(100)
        )
        self.cli: Client = self.node.create_client(
            GetInteractiveMarkers, f"{ns}/get_interactive_markers"
        )
        self.executor = executor
        executor.add_node(self.node)

    def close(self) -> None:
        """Take the node out of the executor and destroy it."""
        self.executor.remove_node(self.node)
        self.node.destroy_node()

    def _accept(self, msg: InteractiveMarkerUpdate) -> None:
        assert self.init_seq is not None
        last = self.last_seq if self.last_seq is not None else self.init_seq
        if msg.seq_num <= last:
            return  # already contained in the service's answer
        if msg.seq_num != last + 1:
            self.gaps.append((last + 1, msg.seq_num))
        self.last_seq = msg.seq_num
        self.updates.append(msg)

    def _on_update(self, msg: InteractiveMarkerUpdate) -> None:
        with self.cond:
            if msg.type == InteractiveMarkerUpdate.KEEP_ALIVE:
                self.keep_alive_seqs.append(msg.seq_num)
            elif self.init_seq is None:
                self.queued.append(msg)
            else:
                self._accept(msg)
            self.cond.notify_all()

    def connect(self) -> GetInteractiveMarkers.Response:
        """Wait until the update topic flows, then get the full state (as RViz does).

        Returns:
            The service's answer (also kept in :attr:`initial`).
        """
        wait_until(lambda: bool(self.keep_alive_seqs), self.timeout, "a KEEP_ALIVE (matched)")
        assert self.cli.wait_for_service(timeout_sec=self.timeout)
        wait_until(lambda: self.pub.get_subscription_count() > 0, self.timeout, "feedback")
        response = self.get_state()
        with self.cond:
            self.init_seq = response.sequence_number
            for msg in self.queued:
                self._accept(msg)
            self.queued = []
        self.initial = response
        return response

    def get_state(self) -> GetInteractiveMarkers.Response:
        """The server's full state, from ``get_interactive_markers``."""
        future = self.cli.call_async(GetInteractiveMarkers.Request())
        wait_until(future.done, self.timeout, "the get_interactive_markers answer")
        response = future.result()
        assert response is not None
        return response

    def current_seq(self) -> int:
        """The seq_num this client's state is at."""
        with self.cond:
            assert self.init_seq is not None
            return self.last_seq if self.last_seq is not None else self.init_seq

    def n_updates(self) -> int:
        """How many UPDATEs were accepted so far."""
        with self.cond:
            return len(self.updates)

    def wait_updates(self, n: int, timeout: float | None = None) -> list[InteractiveMarkerUpdate]:
        """Wait until at least ``n`` UPDATEs were accepted; returns a copy of the list."""
        limit = self.timeout if timeout is None else timeout
        with self.cond:
            ok = self.cond.wait_for(lambda: len(self.updates) >= n, timeout=limit)
            assert ok, f"{len(self.updates)} of {n} UPDATEs after {limit} s; gaps {self.gaps}"
            return list(self.updates)

    def send(
        self,
        pose: Pose | None = None,
        *,
        event: int = InteractiveMarkerFeedback.POSE_UPDATE,
        menu_entry_id: int = 0,
        client_id: str | None = None,
        marker: str | None = None,
    ) -> None:
        """Publish one feedback message (``pose`` None: the message's default pose)."""
        fb = InteractiveMarkerFeedback(
            client_id=self.client_id if client_id is None else client_id,
            marker_name=self.marker if marker is None else marker,
            control_name="move_rotate_3d",
            event_type=event,
            menu_entry_id=menu_entry_id,
        )
        fb.header.frame_id = self.frame
        if self.stamped:
            fb.header.stamp = self.node.get_clock().now().to_msg()
        if pose is not None:
            fb.pose = pose
        self.pub.publish(fb)
