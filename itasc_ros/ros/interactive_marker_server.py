"""RViz interactive-marker server in pure rclpy (the ``interactive_markers`` protocol).

The ``interactive_markers`` package is not on PyPI, so this module serves its protocol directly
on ``visualization_msgs``, wire-compatible with the RViz client:

* service ``<ns>/get_interactive_markers`` (``GetInteractiveMarkers``): the current
  ``sequence_number`` and all markers;
* topic ``<ns>/update`` (``InteractiveMarkerUpdate``, reliable, depth 100): one ``UPDATE`` per
  :meth:`InteractiveMarkerServer.apply_changes` with ``seq_num`` one higher than the last, plus a
  periodic ``KEEP_ALIVE`` carrying the current ``seq_num`` (the ROS 2 RViz client ignores it and
  logs that once; pass ``keep_alive_period=0`` to switch it off);
* topic ``<ns>/feedback`` (``InteractiveMarkerFeedback``, reliable): poses dragged in RViz.

The client (RViz) subscribes to ``update``, asks the service for the full state, drops queued
updates with ``seq_num <=`` the service's ``sequence_number`` and re-requests everything when an
update arrives with ``seq_num != last + 1``. The server therefore publishes under its lock, so
that sequence numbers leave in order even from a ``MultiThreadedExecutor``.

Changes made with ``insert``, ``set_pose``, ``erase``, ``set_menu`` and feedback poses are
pending until :meth:`InteractiveMarkerServer.apply_changes`; feedback callbacks usually end with
``server.apply_changes()`` so that every client (RViz window) sees the pose.
"""

from __future__ import annotations

import copy
import enum
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from geometry_msgs.msg import Pose, Quaternion
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import (
    InteractiveMarker,
    InteractiveMarkerControl,
    InteractiveMarkerFeedback,
    InteractiveMarkerPose,
    InteractiveMarkerUpdate,
    Marker,
    MenuEntry,
)
from visualization_msgs.srv import GetInteractiveMarkers

#: Called with every accepted feedback message of a marker (all event types).
FeedbackCallback = Callable[[InteractiveMarkerFeedback], None]
#: Called on MENU_SELECT with the menu entry id (1-based index into the entries) and the feedback.
MenuCallback = Callable[[int, InteractiveMarkerFeedback], None]

#: Feedback from another client within this time of the last accepted one is ignored [s].
CLIENT_LOCK_TIMEOUT = 1.0
#: Depth of the update topic, as in interactive_markers and the RViz client.
UPDATE_QUEUE_DEPTH = 100
#: shutdown() waits at most this long for the clients to acknowledge the erase [s].
SHUTDOWN_ACK_TIMEOUT = 0.5

#: Title of the menu entry added by :func:`make_6dof_marker`.
SNAP_TO_EFFECTOR = "Snap to effector"


class _Kind(enum.Enum):
    FULL = 0  # insert or replace the whole marker
    POSE = 1  # pose (and header) only
    ERASE = 2


def copy_pose(pose: Pose) -> Pose:
    """A copy of a Pose, field by field (``copy.deepcopy`` of a message is far slower)."""
    p, o = pose.position, pose.orientation
    out = Pose()
    out.position.x, out.position.y, out.position.z = p.x, p.y, p.z
    out.orientation.x, out.orientation.y = o.x, o.y
    out.orientation.z, out.orientation.w = o.z, o.w
    return out


def copy_header(header: Header) -> Header:
    """A copy of a Header (field by field, see :func:`copy_pose`)."""
    out = Header(frame_id=header.frame_id)
    out.stamp.sec, out.stamp.nanosec = header.stamp.sec, header.stamp.nanosec
    return out


@dataclass
class _Pending:
    kind: _Kind
    marker: InteractiveMarker | None = None  # FULL
    pose: Pose | None = None  # POSE
    header: Header | None = None  # POSE


def _reliable(depth: int) -> QoSProfile:
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


def _stamp_is_zero(header: Header) -> bool:
    return header.stamp.sec == 0 and header.stamp.nanosec == 0


class InteractiveMarkerServer:
    """A server of interactive markers to any number of clients (RViz windows).

    Thread-safe: all state is guarded by one lock, and the server's own service, subscription
    and timer share a mutually exclusive callback group, so feedback is handled in arrival order
    even under a ``MultiThreadedExecutor``. User callbacks run outside the lock and may call any
    method of the server (typically :meth:`apply_changes`).

    Args:
        node: The node that owns the service, topics and timer.
        namespace: Relative topic namespace, e.g. ``'~/target_marker'`` or ``'target_marker'``
            (a leading ``/`` makes it absolute, which defeats remapping; avoid it).
        keep_alive_period: Period of the KEEP_ALIVE message [s]; 0 disables it.
        feedback_depth: Depth of the reliable feedback subscription (RViz publishes reliable
            with depth 100; 100 keeps a MOUSE_UP from pushing out the last POSE_UPDATE).

    Raises:
        ValueError: empty namespace, negative keep-alive period or depth < 1.
    """

    def __init__(
        self,
        node: Node,
        namespace: str,
        *,
        keep_alive_period: float = 0.5,
        feedback_depth: int = UPDATE_QUEUE_DEPTH,
    ) -> None:
        ns = namespace.rstrip("/")
        if not ns:
            raise ValueError(
                f"namespace {namespace!r} is empty; use e.g. '~/target_marker' or 'target_marker'"
            )
        if not (keep_alive_period >= 0.0 and math.isfinite(keep_alive_period)):
            raise ValueError(f"keep_alive_period={keep_alive_period} must be >= 0 [s] (0: off)")
        if feedback_depth < 1:
            raise ValueError(f"feedback_depth={feedback_depth} must be >= 1")
        self._node = node
        self._namespace = ns
        self._lock = threading.Lock()
        self._seq_num = 0
        self._markers: dict[str, InteractiveMarker] = {}  # state as of seq_num
        self._pending: dict[str, _Pending] = {}
        self._callbacks: dict[str, FeedbackCallback] = {}
        self._menu_callbacks: dict[str, MenuCallback] = {}
        self._last_client: dict[str, tuple[str, float]] = {}  # name -> (client_id, monotonic [s])
        self._group = MutuallyExclusiveCallbackGroup()
        self._update_pub = node.create_publisher(
            InteractiveMarkerUpdate,
            f"{ns}/update",
            _reliable(UPDATE_QUEUE_DEPTH),
            callback_group=self._group,
        )
        # Resolved namespace (e.g. '/itasc/target_marker') identifies this server to clients.
        topic = getattr(self._update_pub, "topic_name", "")
        self._server_id = (
            topic[: -len("/update")]
            if topic.endswith("/update")
            else f"{node.get_fully_qualified_name()}/{ns}"
        )
        self._feedback_sub = node.create_subscription(
            InteractiveMarkerFeedback,
            f"{ns}/feedback",
            self._on_feedback,
            _reliable(feedback_depth),
            callback_group=self._group,
        )
        self._service = node.create_service(
            GetInteractiveMarkers,
            f"{ns}/get_interactive_markers",
            self._on_get_markers,
            callback_group=self._group,
        )
        self._timer = (
            node.create_timer(keep_alive_period, self._on_keep_alive, callback_group=self._group)
            if keep_alive_period > 0.0
            else None
        )
        self._shut_down = False

    # ------------------------------------------------------------------ properties
    @property
    def seq_num(self) -> int:
        """Sequence number of the last published UPDATE (0 before the first one)."""
        with self._lock:
            return self._seq_num

    @property
    def server_id(self) -> str:
        """The ``server_id`` field of every update: the resolved namespace."""
        return self._server_id

    # ------------------------------------------------------------------ changes
    def insert(
        self, marker: InteractiveMarker, feedback_callback: FeedbackCallback | None = None
    ) -> None:
        """Add or replace a marker (pending until :meth:`apply_changes`).

        Args:
            marker: The marker; copied, so later changes to the object have no effect.
            feedback_callback: Called with each accepted feedback of this marker (every event
                type; check ``feedback.event_type``). Takes effect at once. ``None`` keeps the
                current callback, if any.
        """
        with self._lock:
            self._pending[marker.name] = _Pending(_Kind.FULL, marker=copy.deepcopy(marker))
            if feedback_callback is not None:
                self._callbacks[marker.name] = feedback_callback

    def set_callback(self, name: str, feedback_callback: FeedbackCallback | None) -> None:
        """Set (``None``: remove) the feedback callback of a marker; takes effect at once."""
        with self._lock:
            if feedback_callback is None:
                self._callbacks.pop(name, None)
            else:
                self._callbacks[name] = feedback_callback

    def set_pose(self, name: str, pose: Pose, header: Header | None = None) -> bool:
        """Move a marker (pending until :meth:`apply_changes`).

        Args:
            name: Marker name.
            pose: New pose of the marker in ``header.frame_id``.
            header: New header; ``None`` or an empty ``frame_id`` keeps the current one.

        Returns:
            False if there is no such marker (or it is about to be erased), else True.
        """
        with self._lock:
            return self._set_pose_locked(name, pose, header)

    def erase(self, name: str) -> bool:
        """Remove a marker (pending until :meth:`apply_changes`).

        Returns:
            False if there is no such marker, else True.
        """
        with self._lock:
            if name in self._markers:
                self._pending[name] = _Pending(_Kind.ERASE)
                return True
            # Inserted but never published: clients have never seen it.
            pending = self._pending.pop(name, None)
            self._callbacks.pop(name, None)
            self._menu_callbacks.pop(name, None)
            return pending is not None and pending.kind is _Kind.FULL

    def clear(self) -> None:
        """Erase all markers (pending until :meth:`apply_changes`)."""
        with self._lock:
            for name in list(self._pending):
                if name not in self._markers:
                    del self._pending[name]
            for name in self._markers:
                self._pending[name] = _Pending(_Kind.ERASE)

    def set_menu(self, name: str, entries: list[str], callback: MenuCallback | None) -> bool:
        """Give a marker a flat context menu (right-click in RViz); pending until applied.

        Args:
            name: Marker name.
            entries: Menu titles; entry ``i`` gets the MenuEntry id ``i + 1``.
            callback: Called as ``callback(entry_id, feedback)`` on MENU_SELECT with a valid id.
                Takes effect at once; ``None`` removes it.

        Returns:
            False if there is no such marker, else True.
        """
        with self._lock:
            marker = self._current_locked(name)
            if marker is None:
                return False
            marker.menu_entries = [
                MenuEntry(
                    id=i + 1, parent_id=0, title=title, command="", command_type=MenuEntry.FEEDBACK
                )
                for i, title in enumerate(entries)
            ]
            self._pending[name] = _Pending(_Kind.FULL, marker=marker)
            if callback is None:
                self._menu_callbacks.pop(name, None)
            else:
                self._menu_callbacks[name] = callback
            return True

    def get(self, name: str) -> InteractiveMarker | None:
        """The marker as it will be after the next :meth:`apply_changes` (a copy), or None."""
        with self._lock:
            return self._current_locked(name)

    def names(self) -> list[str]:
        """Names of the published markers (as a client sees them now)."""
        with self._lock:
            return list(self._markers)

    def apply_changes(self) -> bool:
        """Publish all pending changes as one UPDATE with ``seq_num`` one higher than the last.

        Returns:
            True if an UPDATE was published, False if nothing was pending (or after
            :meth:`shutdown`).
        """
        with self._lock:
            if not self._pending or self._update_pub is None:
                return False
            msg = InteractiveMarkerUpdate(
                server_id=self._server_id, type=InteractiveMarkerUpdate.UPDATE
            )
            for name, change in self._pending.items():
                if change.kind is _Kind.FULL:
                    assert change.marker is not None
                    self._markers[name] = change.marker
                    msg.markers.append(change.marker)
                elif change.kind is _Kind.POSE:
                    assert change.pose is not None and change.header is not None
                    marker = self._markers[name]  # POSE is only queued for published markers
                    marker.pose = change.pose
                    marker.header = change.header
                    msg.poses.append(
                        InteractiveMarkerPose(header=change.header, pose=change.pose, name=name)
                    )
                else:
                    del self._markers[name]
                    self._callbacks.pop(name, None)
                    self._menu_callbacks.pop(name, None)
                    self._last_client.pop(name, None)
                    msg.erases.append(name)
            self._pending = {}
            self._seq_num += 1
            msg.seq_num = self._seq_num
            # Published under the lock: updates leave in seq_num order.
            self._update_pub.publish(msg)
            return True

    def shutdown(self) -> None:
        """Erase all markers on the clients and destroy the service, topics and timer.

        Call before destroying the node. Idempotent.
        """
        if self._shut_down:
            return
        self.clear()
        self.apply_changes()
        try:  # the erase reaches the clients before the process may exit (reliable topic)
            self._update_pub.wait_for_all_acked(Duration(seconds=SHUTDOWN_ACK_TIMEOUT))
        except Exception:  # a context already shut down: nothing more to deliver
            pass
        with self._lock:
            self._shut_down = True
            if self._timer is not None:
                self._node.destroy_timer(self._timer)
                self._timer = None
            self._node.destroy_service(self._service)
            self._node.destroy_subscription(self._feedback_sub)
            self._node.destroy_publisher(self._update_pub)
            self._update_pub = None  # type: ignore[assignment]

    # ------------------------------------------------------------------ internals
    def _current_locked(self, name: str) -> InteractiveMarker | None:
        change = self._pending.get(name)
        if change is not None and change.kind is _Kind.ERASE:
            return None
        if change is not None and change.kind is _Kind.FULL:
            return copy.deepcopy(change.marker)
        published = self._markers.get(name)
        if published is None:
            return None
        marker = copy.deepcopy(published)
        if change is not None:  # POSE
            marker.pose = copy_pose(change.pose)
            marker.header = copy_header(change.header)
        return marker

    def _set_pose_locked(self, name: str, pose: Pose, header: Header | None) -> bool:
        keep_header = header is None or not header.frame_id
        change = self._pending.get(name)
        if change is not None and change.kind is _Kind.ERASE:
            return False
        if change is not None and change.kind is _Kind.FULL:
            assert change.marker is not None
            change.marker.pose = copy_pose(pose)
            if not keep_header:
                change.marker.header = copy_header(header)
            return True
        published = self._markers.get(name)
        if published is None:
            return False
        if keep_header:
            header = change.header if change is not None else published.header
        self._pending[name] = _Pending(
            _Kind.POSE, pose=copy_pose(pose), header=copy_header(header)
        )
        return True

    def _on_feedback(self, feedback: InteractiveMarkerFeedback) -> None:
        name = feedback.marker_name
        with self._lock:
            marker = self._markers.get(name)
            if marker is None:
                return  # unknown (or not yet published) marker
            now = time.monotonic()
            last = self._last_client.get(name)
            if (
                last is not None
                and last[0] != feedback.client_id
                and now - last[1] < CLIENT_LOCK_TIMEOUT
            ):
                self._node.get_logger().debug(
                    f"ignoring feedback for {name!r} from {feedback.client_id!r}: "
                    f"{last[0]!r} moved it less than {CLIENT_LOCK_TIMEOUT} s ago"
                )
                return
            self._last_client[name] = (feedback.client_id, now)
            if feedback.event_type == InteractiveMarkerFeedback.POSE_UPDATE:
                # A marker with a zero stamp follows the latest TF: keep its header.
                header = marker.header if _stamp_is_zero(marker.header) else feedback.header
                self._set_pose_locked(name, feedback.pose, header)
            callback = self._callbacks.get(name)
            menu_callback = None
            if feedback.event_type == InteractiveMarkerFeedback.MENU_SELECT:
                ids = {entry.id for entry in marker.menu_entries}
                if feedback.menu_entry_id in ids:
                    menu_callback = self._menu_callbacks.get(name)
        if callback is not None:
            callback(feedback)
        if menu_callback is not None:
            menu_callback(int(feedback.menu_entry_id), feedback)

    def _on_get_markers(
        self,
        request: GetInteractiveMarkers.Request,
        response: GetInteractiveMarkers.Response,
    ) -> GetInteractiveMarkers.Response:
        del request  # empty
        with self._lock:
            response.sequence_number = self._seq_num
            # Copies: the response is serialised after the lock is released.
            response.markers = [copy.deepcopy(m) for m in self._markers.values()]
        return response

    def _on_keep_alive(self) -> None:
        with self._lock:
            if self._update_pub is None:
                return
            self._update_pub.publish(
                InteractiveMarkerUpdate(
                    server_id=self._server_id,
                    seq_num=self._seq_num,
                    type=InteractiveMarkerUpdate.KEEP_ALIVE,
                )
            )


def _axis_quaternion(x: float, y: float, z: float) -> Quaternion:
    """Normalised quaternion (w=1, x, y, z): its x axis is the control's axis."""
    n = math.sqrt(1.0 + x * x + y * y + z * z)
    return Quaternion(x=x / n, y=y / n, z=z / n, w=1.0 / n)


def make_6dof_marker(
    name: str,
    frame_id: str,
    pose: Pose,
    scale: float = 0.2,
    description: str = "",
    menu: bool = True,
) -> InteractiveMarker:
    """A 6-DOF interactive marker like ``make6DofMarker`` of visualization_tutorials.

    Controls, in order: a grey box (``always_visible``, MOVE_ROTATE_3D: drag to move, Ctrl-drag
    to rotate), then rotate_x / move_x, rotate_z / move_z, rotate_y / move_y (ROTATE_AXIS and
    MOVE_AXIS rings and arrows, drawn by RViz). With ``menu``, the marker gets the context-menu
    entry :data:`SNAP_TO_EFFECTOR` (id 1); RViz opens a marker's menu on a right-click on any of
    its controls, so no extra MENU control is needed. Register its callback with
    :meth:`InteractiveMarkerServer.set_menu`.

    Args:
        name: Marker name (unique per server).
        frame_id: Frame of ``pose``; the header stamp is zero (RViz uses the latest TF).
        pose: Initial pose (copied).
        scale: Size of the marker [m].
        description: Text shown above the marker.
        menu: Add the "Snap to effector" menu entry.

    Returns:
        The marker, ready for :meth:`InteractiveMarkerServer.insert`.

    Raises:
        ValueError: non-positive or non-finite scale.
    """
    if not (scale > 0.0 and math.isfinite(scale)):
        raise ValueError(f"scale={scale} must be a positive size [m]")
    marker = InteractiveMarker()
    marker.header.frame_id = frame_id
    marker.pose = copy.deepcopy(pose)
    marker.name = name
    marker.description = description
    marker.scale = float(scale)

    box = Marker(type=Marker.CUBE, color=ColorRGBA(r=0.5, g=0.5, b=0.5, a=1.0))
    box.scale.x = box.scale.y = box.scale.z = 0.45 * float(scale)
    box.pose.orientation.w = 1.0
    box_control = InteractiveMarkerControl(
        name="move_rotate_3d",
        always_visible=True,
        interaction_mode=InteractiveMarkerControl.MOVE_ROTATE_3D,
        markers=[box],
    )
    box_control.orientation.w = 1.0
    marker.controls.append(box_control)

    for axis, (x, y, z) in (
        ("x", (1.0, 0.0, 0.0)),
        ("z", (0.0, 1.0, 0.0)),
        ("y", (0.0, 0.0, 1.0)),
    ):
        for prefix, mode in (
            ("rotate", InteractiveMarkerControl.ROTATE_AXIS),
            ("move", InteractiveMarkerControl.MOVE_AXIS),
        ):
            marker.controls.append(
                InteractiveMarkerControl(
                    name=f"{prefix}_{axis}",
                    orientation=_axis_quaternion(x, y, z),
                    interaction_mode=mode,
                )
            )
    if menu:
        marker.menu_entries = [
            MenuEntry(
                id=1,
                parent_id=0,
                title=SNAP_TO_EFFECTOR,
                command="",
                command_type=MenuEntry.FEEDBACK,
            )
        ]
    return marker


__all__ = [
    "CLIENT_LOCK_TIMEOUT",
    "SNAP_TO_EFFECTOR",
    "FeedbackCallback",
    "InteractiveMarkerServer",
    "MenuCallback",
    "make_6dof_marker",
]
