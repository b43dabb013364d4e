"""The node's fourth layer: the inputs, taken by the tick from where they wait.

Joint states, each target's poses and twists and the jog twists wait in their DDS readers
(:class:`~itasc_ros.ros.polled_reader.PolledReader`, the latest of each); the RViz markers'
poses are deposited by their callbacks. :meth:`InputNode._take_inputs`, the tick's first step,
takes them and hands each to the controller (or keeps it for the next model while there is
none); a bad one is counted and warned about, never raised. The layers below:
:class:`~itasc_ros.ros.node_parameters.ParameterNode` and its own; above:
:class:`~itasc_ros.ros.node.ItascNode` (the tick, the reports, ``main``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from geometry_msgs.msg import PoseStamped, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.serialization import deserialize_message

from ..core import InputError, ItascError
from .conversions import (
    odometry_values,
    pose_stamped_arrays,
)
from .log_throttle import log_throttled
from .node_parameters import ParameterNode
from .node_reports import Rejections
from .polled_reader import PolledReader
from .wire import JointStateWire, StampedWire


class InputNode(ParameterNode):
    """The inputs the tick takes (see the module)."""

    _rejections: Rejections
    _joint_in: tuple[bytes, float] | None  # taken (serialized, system-clock reception)
    _joint_wire: JointStateWire
    _merged_in: tuple[list[str], Any, float, float | None, Any] | None = None  # robots: taken
    _marker_in: dict[str, tuple[PoseStamped, float, bool]]  # the RViz markers', by name
    _readers: list[tuple[str, PolledReader[Any], StampedWire]]  # serialized, and their reader
    _jog_wire: StampedWire

    def _take_joint_state(self) -> bool:
        """``joint_states`` trigger: take the state that woke the loop (True if there was one)."""
        if self._robots is not None:
            merged = self._robots.take(self._read_clock()[1], self._reject)
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
        log_throttled(self.get_logger(), "warning", "input rejected", text, 1.0)

    def _on_marker_pose(self, name: str, pose_stamped: PoseStamped, jump: bool = False) -> None:
        """Deposit a target pose of the RViz marker for constraint ``name`` (the tick takes it).

        A jump stays a jump until taken, even when a newer pose replaces it.
        """
        held = self._marker_in.get(name)
        self._marker_in[name] = (pose_stamped, self._now(), jump or (held is not None and held[2]))

    def _on_marker_snap(self, name: str, pose_stamped: PoseStamped) -> None:
        """The marker snapped back to the effector: a jump, no target velocity estimate."""
        self._on_marker_pose(name, pose_stamped, jump=True)

    def _take_inputs(self, sim_offset: float) -> None:
        """The tick's first step: take what arrived since the last one, the latest of each.

        The joint state first (targets in link frames are placed with it), then each target's
        pose and twist, the jog twist, and the RViz markers' poses. Each is checked and applied
        by the controller (or kept for the next model while there is none).

        Args:
            sim_offset: ROS time minus system time [s] (:meth:`_read_clock`'s, read by the tick).
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
                self._apply_joint_state(got[0], got[1] + sim_offset)
        ctrl = self._controller  # odometry only for a world frame (or kept for the next model)
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

    def _apply_joint_state(self, raw: bytes, received: float) -> None:
        """A serialized joint state to the controller (a malformed one is rejected)."""
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
        ctrl = self._controller
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
        ctrl = self._controller
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
        ctrl = self._controller
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
        ctrl = self._controller
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
        ctrl = self._controller
        if ctrl is None:
            return
        try:
            frame, tw, src = wire.read(raw)
            ctrl.set_target_twist(name, frame, tw, received, src)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)

    def _apply_jog(self, raw: bytes, received: float) -> None:
        """``~/delta_twist_cmds``: jog the effector of the first target constraint (as Servo)."""
        ctrl = self._controller
        if ctrl is None or not ctrl.pose_constraints:
            return
        try:
            frame, tw, src = self._jog_wire.read(raw)
            ctrl.set_jog_twist(ctrl.pose_constraints[0], frame, tw, received, src)
        except Exception as exc:  # InputError; anything else is counted, never a crash
            self._reject(exc)


__all__ = ["InputNode"]
