"""RViz 6-DOF interactive markers that drag the targets of the pose constraints.

One marker per pose constraint (``copy_pose``/``distance`` without ``target_link``), served on
``~/target_marker`` by :class:`~itasc_ros.ros.interactive_marker_server.InteractiveMarkerServer`.
Each marker appears at its effector's pose once the first joint state has arrived, in the root
link's frame (the frame the controller keeps targets in). Dragging it in RViz feeds every
``POSE_UPDATE`` to its pose sink ``on_pose(name, PoseStamped)`` (itasc_node's
:meth:`NodeInputs.deposit_marker_pose <itasc_ros.ros.node_inputs.NodeInputs>`), so the
constraint's target (and the target-twist estimate used for feed-forward) follows the drag.
The context-menu entry "Snap to effector" moves the marker back to the effector and makes that
the target (the robot holds still).

In RViz: add an *InteractiveMarkers* display with the topic ``/itasc_node/target_marker``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np
from geometry_msgs.msg import Pose, PoseStamped
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from visualization_msgs.msg import InteractiveMarkerFeedback

from ..core.errors import ItascError
from .conversions import matrix_to_pose
from .interactive_marker_server import (
    SNAP_TO_EFFECTOR,
    InteractiveMarkerServer,
    make_6dof_marker,
)
from .log_throttle import log_throttled

if TYPE_CHECKING:
    from ..core.control.controller import Controller

#: Namespace of the server, relative to the node (``/itasc_node/target_marker``).
NAMESPACE = "~/target_marker"
#: Period of the check for the first joint state, which places the markers [s].
PLACE_PERIOD = 0.1
#: Shortest time between two moves of a marker that follows topic targets [s] (10 Hz).
FOLLOW_PERIOD = 0.1
#: Menu entry id of "Snap to effector" (the first entry).
SNAP_ID = 1

#: The effector pose (4, 4) of a constraint in the root frame, or None (no joint state yet).
EffectorPose = Callable[[str], "np.ndarray | None"]
#: Where dragged poses go: ``(constraint name, PoseStamped)``.
PoseSink = Callable[[str, PoseStamped], None]


def controller_effector_pose(controller: Controller) -> EffectorPose:
    """The :data:`EffectorPose` of a controller: None until its first joint state."""

    def pose(name: str) -> np.ndarray | None:
        if not controller.has_joint_state:
            return None
        return controller.poses(name)[0]  # (4, 4) root frame

    return pose


class TargetMarkers:
    """The 6-DOF target markers of a set of pose constraints (one server per instance).

    Args:
        node: The node serving the markers; unless ``on_pose`` is given it must have the
            method ``_on_marker_pose(name, PoseStamped)`` (itasc_node passes ``on_pose``).
        effector: A :class:`~itasc_ros.core.control.Controller`, or a callable giving the
            effector pose (4, 4) of a constraint in the root frame (None before the first joint
            state).
        constraints: Names of the pose constraints that get a marker.
        frame_id: Frame of the markers; default: the controller's root link (required with a
            callable ``effector``).
        on_pose: Receives the dragged poses; default: ``node._on_marker_pose``.
        on_snap: Receives the pose of a "Snap to effector" (a jump: no velocity estimate);
            default: ``node._on_marker_snap``, else ``on_pose``.
        scale: Marker size [m].
        namespace: Server namespace relative to the node.
        lock: Held around every read of the controller (default: none). The node's lock: the
            controller's kinematics share one workspace with the control tick, which runs on
            a thread of its own; a pose computed on the executor's thread beside a tick would
            overwrite the link poses that tick is solving with.

    Raises:
        ValueError: no frame, or no pose sink.
    """

    def __init__(
        self,
        node: Node,
        effector: Controller | EffectorPose,
        constraints: Sequence[str],
        *,
        frame_id: str = "",
        on_pose: PoseSink | None = None,
        on_snap: PoseSink | None = None,
        scale: float = 0.2,
        namespace: str = NAMESPACE,
        lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        self._lock = lock if lock is not None else nullcontext()
        if callable(effector):
            self._effector: EffectorPose = effector
        else:
            self._effector = controller_effector_pose(effector)
            frame_id = frame_id or effector.tree.root_link
        if not frame_id:
            raise ValueError("frame_id is required with a callable effector (the root link)")
        sink = on_pose if on_pose is not None else getattr(node, "_on_marker_pose", None)
        snap = on_snap if on_snap is not None else getattr(node, "_on_marker_snap", None)
        if sink is None:
            raise ValueError(
                f"node {node.get_name()!r} has no _on_marker_pose(name, PoseStamped); pass on_pose"
            )
        self._node = node
        self._on_pose: PoseSink = sink
        self._on_snap: PoseSink = snap if snap is not None else sink
        self._controller = None if callable(effector) else effector
        self._followed: dict[str, float] = {}  # marker -> steady time of its last follow [s]
        self._to_follow: set[str] = set()  # markers with a new topic target, not yet moved
        self._frame = frame_id
        self._scale = float(scale)
        self._names = list(constraints)
        self._placed: set[str] = set()
        self.server = InteractiveMarkerServer(node, namespace)
        self._timer: Any = None
        if self._names and not self._place():
            self._timer = node.create_timer(
                PLACE_PERIOD, self._on_place_timer, clock=Clock(clock_type=ClockType.STEADY_TIME)
            )

    # ------------------------------------------------------------------ properties
    @property
    def names(self) -> list[str]:
        """The constraints with a marker (marker name = constraint name)."""
        return list(self._names)

    @property
    def frame_id(self) -> str:
        """Frame of the markers and of the poses sent to the node."""
        return self._frame

    @property
    def placed(self) -> bool:
        """True once every marker is served (after the first joint state)."""
        return self._placed.issuperset(self._names)

    # ------------------------------------------------------------------ placement
    def _effector_pose(self, name: str) -> np.ndarray | None:
        try:
            with self._lock:
                return self._effector(name)
        except ItascError as exc:  # e.g. a constraint the new model does not have
            log_throttled(
                self._node.get_logger(),
                "warning",
                "no marker",
                f"no target marker for {name!r}: {exc}",
                5.0,
            )
            return None

    def _place(self) -> bool:
        """Insert the markers whose effector pose is known; True when all are placed."""
        changed = False
        for name in self._names:
            if name in self._placed:
                continue
            pose = self._effector_pose(name)
            if pose is None:
                continue
            marker = make_6dof_marker(
                name,
                self._frame,
                matrix_to_pose(pose),
                scale=self._scale,
                description=f"{name} target",
            )
            self.server.insert(marker, self._feedback_cb(name))
            self.server.set_menu(name, [SNAP_TO_EFFECTOR], self._menu_cb(name))
            self._placed.add(name)
            changed = True
        if changed:
            self.server.apply_changes()
        return self.placed

    def _on_place_timer(self) -> None:
        if self._place() and self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None

    # ------------------------------------------------------------------ feedback
    def _feedback_cb(self, name: str) -> Callable[[InteractiveMarkerFeedback], None]:
        def cb(feedback: InteractiveMarkerFeedback) -> None:
            if feedback.event_type != InteractiveMarkerFeedback.POSE_UPDATE:
                return
            self.server.apply_changes()  # echo the pose to every client (RViz window)
            msg = PoseStamped()
            msg.header = feedback.header  # RViz: the marker's frame, zero stamp
            if not msg.header.frame_id:
                msg.header.frame_id = self._frame
            msg.pose = feedback.pose
            self._on_pose(name, msg)

        return cb

    def _menu_cb(self, name: str) -> Callable[[int, InteractiveMarkerFeedback], None]:
        def cb(entry_id: int, feedback: InteractiveMarkerFeedback) -> None:
            del feedback
            if entry_id == SNAP_ID:
                self.snap_to_effector(name)

        return cb

    def snap_to_effector(self, name: str) -> bool:
        """Move marker ``name`` to its effector and make that the target.

        Returns:
            False if the marker is not served or the effector pose is unknown.
        """
        pose = self._effector_pose(name) if name in self._placed else None
        if pose is None:
            return False
        msg = PoseStamped()
        msg.header.frame_id = self._frame  # zero stamp: the node stamps on reception
        matrix_to_pose(pose, msg.pose)
        if not self.server.set_pose(name, msg.pose):
            return False
        self.server.apply_changes()
        self._on_snap(name, msg)
        return True

    def follow(self, name: str, now: float | None = None) -> bool:
        """Move marker ``name`` to its constraint's current target (a target from a topic).

        Throttled to :data:`FOLLOW_PERIOD` per marker so a 1 kHz target stream does not flood
        the clients; needs a controller (not a callable effector).

        Args:
            name: the marker (constraint) name.
            now: steady time [s] (default ``time.monotonic()``).

        Returns:
            True if the marker moved.
        """
        if self._controller is None or name not in self._placed:
            return False
        now = time.monotonic() if now is None else now
        if now - self._followed.get(name, -math.inf) < FOLLOW_PERIOD:
            return False
        try:
            with self._lock:
                _, target = self._controller.poses(name)
        except ItascError:
            return False
        if target is None:
            return False
        pose = Pose()
        matrix_to_pose(target, pose)
        if not self.server.set_pose(name, pose):
            return False
        self.server.apply_changes()
        self._followed[name] = now
        return True

    def follow_later(self, name: str) -> None:
        """Mark marker ``name`` to follow its constraint's new target (:meth:`follow_marked`).

        The tick marks; the marker moves after the command is sent, not before it.
        """
        self._to_follow.add(name)

    def follow_marked(self, now: float | None = None) -> None:
        """Move each marked marker whose :data:`FOLLOW_PERIOD` has passed (see :meth:`follow`).

        A marker marked within its period stays marked: it ends on the last target that came,
        however fast they came.

        Args:
            now: steady time [s] (default ``time.monotonic()``).
        """
        if not self._to_follow:
            return
        now = time.monotonic() if now is None else now
        for name in list(self._to_follow):
            if now - self._followed.get(name, -math.inf) >= FOLLOW_PERIOD:
                self._to_follow.discard(name)
                self.follow(name, now)

    def shutdown(self) -> None:
        """Erase the markers on every client and release the server (idempotent)."""
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None
        self.server.shutdown()


def replace_target_markers(
    node: Node,
    controller: Controller,
    old: TargetMarkers | None,
    enabled: bool = True,
    lock: AbstractContextManager[Any] | None = None,
    on_pose: PoseSink | None = None,
    on_snap: PoseSink | None = None,
) -> TargetMarkers | None:
    """Shut ``old`` down and serve markers for ``controller``'s pose constraints (if enabled).

    The one call itasc_node makes when it installs a controller (start-up and URDF reload);
    ``lock``: the lock the control tick holds; ``on_pose``, ``on_snap``: where the dragged
    and snapped poses go (see :class:`TargetMarkers`).
    """
    if old is not None:
        old.shutdown()
    if not enabled:
        return None
    return TargetMarkers(
        node, controller, controller.pose_constraints, on_pose=on_pose, on_snap=on_snap, lock=lock
    )


__all__ = [
    "NAMESPACE",
    "SNAP_ID",
    "TargetMarkers",
    "controller_effector_pose",
    "replace_target_markers",
]
