"""The node's inputs, taken by the tick from where they wait.

Joint states, each target's poses and twists, the jog twists and the base's odometry wait in
their DDS readers (:class:`~itasc_ros.ros.polled_reader.PolledReader`, the latest of each); the
RViz markers' poses are deposited by their callbacks. :meth:`NodeInputs.take`, the tick's
first step, takes them and hands each to the controller (or keeps it for the next model while
there is none); a bad one is counted and warned about, never raised. :class:`NodeInputs` also
serves the RViz target markers (:mod:`~itasc_ros.ros.markers`) of the installed model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from geometry_msgs.msg import PoseStamped, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState

from ..core import Controller, ControllerConfig, InputError, ItascError
from ..core.control.model_manager import ModelManager
from ..params import target_topics
from .conversions import (
    odometry_values,
    pose_stamped_arrays,
)
from .log_throttle import log_throttled
from .markers import TargetMarkers, replace_target_markers
from .node_outputs import read_clock
from .node_reports import Rejections
from .node_robots import RobotSet
from .polled_reader import PolledReader
from .wire import JointStateWire, StampedWire, pose_stamped_wire, twist_stamped_wire


class NodeInputs:
    """The inputs the tick takes, and the RViz target markers (see the module).

    Args:
        node: the node the readers belong to (its logger, its clock).
        config: the configuration of the parameters (the target constraints' topics).
        joint_topic: ``joint_topic``.
        odom_topic: ``odom_topic``, the base's odometry in ``world_frame``.
        models: the installed controller (None: each input is kept for the next model).
        robots: several robots (``robots``): their joint states merged, or None.
        lock: the lock the control tick holds (the markers read the controller under it).
    """

    def __init__(
        self,
        node: Node,
        config: ControllerConfig,
        joint_topic: str,
        odom_topic: str,
        models: ModelManager[PoseStamped],
        robots: RobotSet | None,
        lock: threading.RLock,
    ) -> None:
        self._node = node
        self._models = models
        self._robots = robots
        self._lock = lock
        self._rejections = Rejections()
        # Joint states wait in their DDS reader (best effort takes every publisher) for the
        # control loop's thread, as the other inputs do.
        # Taken serialized, read by JointStateWire (a Python JointState message is costly).
        self._joint_reader: PolledReader[Any] = PolledReader(
            node, JointState, joint_topic, reliable=False, raw=True
        )
        self._joint_wire = JointStateWire()
        self._joint_in: tuple[bytes, float] | None = None  # taken, not yet applied
        # robots: the merged state taken by the joint_states trigger, not yet applied
        self._merged_in: tuple[list[str], Any, float, float | None, Any] | None = None
        # Targets, their twists and jog twists wait in their DDS readers (the latest of each)
        # until the tick takes them: a flood costs the loop nothing (see polled_reader).
        self._readers: list[tuple[str, PolledReader[Any], StampedWire]] = []
        for name, (pose_topic, twist_topic) in target_topics(config).items():
            pose = PolledReader(node, PoseStamped, pose_topic, raw=True)
            twist = PolledReader(node, TwistStamped, twist_topic, raw=True)
            self._readers.append((name, pose, pose_stamped_wire()))
            self._readers.append((name, twist, twist_stamped_wire()))
        self._jog_reader: PolledReader[Any] | None = PolledReader(
            node, TwistStamped, "~/delta_twist_cmds", raw=True
        )
        self._jog_wire = twist_stamped_wire()
        # The base's odometry in world_frame (best effort takes every publisher).
        self._odom_reader: PolledReader[Any] | None = PolledReader(
            node, Odometry, odom_topic, reliable=False
        )
        self._marker_in: dict[str, tuple[PoseStamped, float, bool]] = {}  # RViz, by name
        self._target_markers: TargetMarkers | None = None  # the RViz interactive markers

    @property
    def rejections(self) -> Rejections:
        """The inputs refused so far (counted by :meth:`take`)."""
        return self._rejections

    @property
    def joint_readers(self) -> list[PolledReader[Any]]:
        """The joint state readers: ``joint_topic``'s, or each robot's of ``robots``."""
        return [self._joint_reader] if self._robots is None else self._robots.readers

    def readers(self) -> list[PolledReader[Any]]:
        """The inputs the tick takes from their DDS readers (targets, twists, jog, odometry)."""
        found = [r for _, r, _ in self._readers]
        for extra in (self._jog_reader, self._odom_reader):
            if extra is not None:
                found.append(extra)
        return found

    def destroy(self) -> None:
        """Release the polled readers (the node's own; :class:`RobotSet` releases the robots')."""
        for reader in self.readers():
            reader.destroy()
        self._joint_reader.destroy()
        self._readers, self._jog_reader, self._odom_reader = [], None, None

    # ------------------------------------------------------------------------- markers
    def replace_markers(self, ctrl: Controller | None, enabled: bool) -> None:
        """A new model: the RViz drag-able targets of its pose constraints (none without one).

        Args:
            ctrl: the installed controller (None: the markers are removed).
            enabled: ``interactive_marker``.
        """
        if ctrl is not None:
            self._target_markers = replace_target_markers(  # RViz drag-able targets
                self._node,
                ctrl,
                self._target_markers,
                enabled,
                self._lock,  # the markers read the controller beside the ticks
                on_pose=self.deposit_marker_pose,
                on_snap=self.deposit_marker_snap,
            )
        elif self._target_markers is not None:
            self._target_markers.shutdown()
            self._target_markers = None

    def follow_markers(self, t: float) -> None:
        """Move the markers of the topic targets taken since (after a command, not in a tick).

        Args:
            t: ``time.monotonic()`` [s].
        """
        if self._target_markers is not None:  # the markers of topic targets, once sent
            self._target_markers.follow_marked(t)

    def deposit_marker_pose(
        self, name: str, pose_stamped: PoseStamped, jump: bool = False
    ) -> None:
        """Deposit a target pose of the RViz marker for constraint ``name`` (the tick takes it).

        Also a target held while there was no model. A jump stays a jump until taken, even
        when a newer pose replaces it.

        Args:
            name: the constraint.
            pose_stamped: the target pose.
            jump: a jump (no target velocity estimate).
        """
        held = self._marker_in.get(name)
        now = read_clock(self._node)[0]
        self._marker_in[name] = (pose_stamped, now, jump or (held is not None and held[2]))

    def deposit_marker_snap(self, name: str, pose_stamped: PoseStamped) -> None:
        """The marker snapped back to the effector: a jump, no target velocity estimate."""
        self.deposit_marker_pose(name, pose_stamped, jump=True)

    # ------------------------------------------------------------------------- taking
    def take_joint_state(self) -> bool:
        """``joint_states`` trigger: take the state that woke the loop (True if there was one)."""
        if self._robots is not None:
            merged = self._robots.take(read_clock(self._node)[1], self._reject)
            if merged is not None:
                self._merged_in = merged
            return merged is not None
        got = self._joint_reader.take()
        if got is None:
            return False
        self._joint_in = got  # its reception on the system clock: the tick adds its offset
        return True

    def _reject(self, exc: Exception) -> None:
        if not isinstance(exc, ItascError):  # a bug, not bad input: still never a crash
            exc = InputError(f"{type(exc).__name__} while handling the input: {exc}")
        self._rejections.add(exc)
        text = f"input rejected: {exc}"
        log_throttled(self._node.get_logger(), "warning", "input rejected", text, 1.0)

    def take(self, sim_offset: float) -> None:
        """The tick's first step: take what arrived since the last one, the latest of each.

        The joint state first (targets in link frames are placed with it), then each target's
        pose and twist, the jog twist, and the RViz markers' poses. Each is checked and applied
        by the controller (or kept for the next model while there is none).

        Args:
            sim_offset: ROS time minus system time [s] (:func:`read_clock`'s, read by the tick).
        """
        if self._robots is not None:  # several robots: their joint states merged
            merged = self._robots.take(sim_offset, self._reject) or self._merged_in
            self._merged_in = None
            if merged is not None:
                self._apply_joint_values(*merged)
        else:
            # the joint_states trigger took the state that woke it (a newer one: next tick)
            got = self._joint_reader.take() if self._joint_in is None else self._joint_in
            self._joint_in = None
            if got is not None:
                self.apply_joint_state(got[0], got[1] + sim_offset)
        ctrl = self._models.controller  # odometry only for a world frame (or kept for later)
        odom = self._odom_reader if ctrl is None or ctrl.config.world_frame else None
        got = None if odom is None else odom.take()
        if got is not None:  # before the targets: a world target is placed from it
            self._apply_odometry(got[0], got[1] + sim_offset)
        for name, reader, wire in self._readers:  # serialized: read by their wire readers
            got = reader.take()
            if got is None:
                continue
            raw, received = got
            if wire.msg_type is TwistStamped:
                self._apply_twist(name, wire, raw, received + sim_offset)
            else:
                self._apply_topic_target(name, wire, raw, received + sim_offset)
                if self._target_markers is not None:  # the RViz marker follows topic targets
                    self._target_markers.follow_later(name)  # moved after the command
        got = None if self._jog_reader is None else self._jog_reader.take()
        if got is not None:
            self._apply_jog(got[0], got[1] + sim_offset)
        while self._marker_in:
            name, (pose_stamped, received, jump) = self._marker_in.popitem()
            self._apply_target(name, pose_stamped, received, jump)

    def apply_joint_state(self, raw: bytes, received: float) -> None:
        """A serialized joint state to the controller (a malformed one is rejected).

        Args:
            raw: the serialized ``sensor_msgs/JointState``.
            received: its reception on the controller's clock [s].
        """
        try:
            js = self._joint_wire.read(raw)
        except Exception as exc:  # rclpy's deserializer refused it
            self._reject(InputError(f"joint state not readable: {type(exc).__name__}: {exc}"))
            return
        self._apply_joint_values(js.name, js.position, received, js.stamp)

    def _apply_joint_values(
        self,
        names: Sequence[str],
        pos: Any,
        received: float,
        src: float | None,
        by_robot: Any = None,
    ) -> None:
        """A joint state to the controller (kept for the next model while there is none).

        ``by_robot``: several robots' own reception times (g,) of a merged state, or None.
        """
        ctrl = self._models.controller
        if ctrl is not None:
            try:
                ctrl.set_joint_state(names, pos, received, src, by_robot)
            except Exception as exc:  # InputError; anything else is counted, never a crash
                self._reject(exc)
                return
        if by_robot is not None:  # the next model judges it by its oldest robot's
            received = float(min(by_robot))
        self._models.remember_joint_state(names, pos, src, received)  # for the next model

    def _apply_odometry(self, msg: Odometry, received: float) -> None:
        """The base's odometry to the controller (kept for the next model while there is none)."""
        frame, child, values, stamp = odometry_values(msg)
        self._models.remember_odometry(frame, child, values, stamp, received)
        ctrl = self._models.controller
        if ctrl is None:
            return
        try:
            ctrl.set_odometry(frame, child, values, received, stamp)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _apply_target(
        self, name: str, pose_stamped: PoseStamped, received: float, jump: bool = False
    ) -> None:
        """Feed a target pose to constraint ``name`` (target topics and the RViz marker)."""
        ctrl = self._models.controller
        if ctrl is None:
            self._models.hold_target(name, pose_stamped)  # applied once a model is loaded
            return
        try:
            frame, p, q, src = pose_stamped_arrays(pose_stamped)
            ctrl.set_target(name, frame, p, q, received, src, jump=jump)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _apply_topic_target(
        self, name: str, wire: StampedWire, raw: bytes, received: float
    ) -> None:
        """A serialized target pose of a target topic to constraint ``name``."""
        ctrl = self._models.controller
        try:
            if ctrl is None:  # applied once a model is loaded
                self._models.hold_target(name, deserialize_message(raw, PoseStamped))
                return
            frame, v, src = wire.read(raw)  # position, quaternion x y z w
            ctrl.set_target(name, frame, v[:3], v[3:], received, src)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _apply_twist(self, name: str, wire: StampedWire, raw: bytes, received: float) -> None:
        """A serialized target twist of a target topic to constraint ``name``."""
        ctrl = self._models.controller
        if ctrl is None:
            return
        try:
            frame, tw, src = wire.read(raw)
            ctrl.set_target_twist(name, frame, tw, received, src)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _apply_jog(self, raw: bytes, received: float) -> None:
        """``~/delta_twist_cmds``: jog the effector of the first target constraint (as Servo)."""
        ctrl = self._models.controller
        if ctrl is None or not ctrl.pose_constraints:
            return
        try:
            frame, tw, src = self._jog_wire.read(raw)
            ctrl.set_jog_twist(ctrl.pose_constraints[0], frame, tw, received, src)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)


__all__ = ["NodeInputs"]
