"""The node's first layer: its state, and the commands it sends outside a tick.

:class:`OutputNode` declares what every layer of ``itasc_node`` shares (the installed
controller, the publishers, the journal, the counters) and sends the commands that are not a
tick's: a zero command (a model change, a slow parse, a tick's error, shutdown) and the
controlled stop at shutdown. The layers above it: :class:`~itasc_ros.ros.node_models.ModelNode`
(where the URDF comes from), :class:`~itasc_ros.ros.node_parameters.ParameterNode` (live
parameter changes), :class:`~itasc_ros.ros.node.ItascNode` (the tick, the inputs, the reports).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped, Twist
from numpy.typing import NDArray
from rclpy.clock import Clock, ROSClock
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.publisher import Publisher

from ..core import Controller, ControllerConfig, StepOutput
from ..core.control.journal import ZeroReason
from ..core.control.model_manager import ModelManager
from .control_loop import ControlLoop
from .conversions import JOINT_TRAJECTORY, CommandMessage
from .ik_requests import IkRequests
from .journal_publisher import JournalPublisher
from .markers import TargetMarkers
from .node_reports import LoopStats, Rejections
from .node_robots import RobotSet
from .polled_reader import PolledReader
from .swap_times import SwapTimes
from .urdf_sources import UrdfWorker

Array = NDArray[np.float64]

STOP_TIMEOUT = 2.0  # [s] longest controlled stop at shutdown before the zero command


class OutputNode(Node):
    """The node's shared state and its commands outside a tick (see the module).

    Attributes are set by :meth:`ItascNode._build <itasc_ros.ros.node.ItascNode>`.
    """

    _worker: UrdfWorker | None  # parses the topic's URDFs off the loop
    _ik: IkRequests | None  # position IK requests, in a thread of their own
    _starting: bool  # in the constructor: a static URDF lacking a link is fatal
    _kind: str  # command_out_type
    _trigger: str  # control_trigger
    _config: ControllerConfig  # the configuration of the parameters
    _models: ModelManager[PoseStamped]  # the installed controller, its URDF, ~/enable
    _command: CommandMessage | None  # the installed controller's command message
    _tick_error: str  # an unexpected exception in the control tick
    _last_out: StepOutput | None  # the last tick's output
    _target_markers: TargetMarkers | None  # the RViz interactive markers
    _publish_markers: bool
    _rejections: Rejections
    _stats: LoopStats
    _wall: Clock  # steady clock of the timers
    _cmd_pub: Publisher
    _base_pub: Publisher  # a commanded base's twist (base_kind)
    _base_msg: Twist
    _journal: JournalPublisher
    _loop: ControlLoop | None  # the control loop's thread, once started
    _lock: threading.RLock  # held by a tick; the executor's changes take it between ticks
    _joint_reader: PolledReader[Any]  # joint states
    _swaps: SwapTimes  # structural changes: the longest build and swap
    _type_errors: dict[str, str]  # the set-parameters request's refusals, by name
    _readers: list[tuple[str, PolledReader[Any], Any]]  # (constraint, reader, wire reader)
    _jog_reader: PolledReader[Any] | None  # ~/delta_twist_cmds
    _odom_reader: PolledReader[Any] | None  # the base's odometry (odom_topic)
    _robots: RobotSet | None  # several robots (robots): joint states merged, commands split

    def readers(self) -> list[PolledReader[Any]]:
        """The inputs the tick takes from their DDS readers (targets, twists, jog, odometry)."""
        found = [r for _, r, _ in getattr(self, "_readers", [])]
        for extra in (getattr(self, "_jog_reader", None), getattr(self, "_odom_reader", None)):
            if extra is not None:
                found.append(extra)
        return found

    @property
    def _controller(self) -> Controller | None:
        """The installed controller (None: no model, no command)."""
        return self._models.controller

    @property
    def _urdf_source(self) -> str:
        """Where the installed model's URDF came from ('' for none)."""
        return self._models.source

    def _now(self) -> float:
        """The node's ROS time [s]: the system clock unless ``use_sim_time`` is active."""
        return self._read_clock()[0]

    def _read_clock(self) -> tuple[float, float]:
        """The node's ROS time [s] and its offset [s] from the system clock, read once.

        DDS stamps a message's reception with the system clock; adding the offset puts it on
        the controller's clock (0 unless ``use_sim_time`` is active).
        """
        clock = self.get_clock()
        wall = time.time()  # what the ROS clock reads then, without two Time objects
        if isinstance(clock, ROSClock) and clock.ros_time_is_active:  # /clock drives it
            now = clock.now().nanoseconds * 1e-9
            return now, now - wall
        return wall, 0.0

    # ------------------------------------------------------------------------- outputs
    def _publish_zero(
        self, ctrl: Controller, wait: float = 0.5, reason: ZeroReason = ZeroReason.SHUTDOWN
    ) -> bool:
        """Publish a zero command (JointTrajectory needs a joint state); wait for delivery.

        The zero is journaled (outside a tick) with ``reason``.
        """
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        zeros = np.zeros(ctrl.n_joints)
        now = self._now()
        self._send(ctrl, cmd, ctrl.q, zeros, now)
        self._journal.zero(now, reason)  # the journal is still the one of ``ctrl``
        self._wait_delivered(self._cmd_pub, wait)
        if ctrl.base_joints:
            self._wait_delivered(self._base_pub, wait)
        return True

    def _publish_ramp(self, ctrl: Controller, reason: ZeroReason) -> bool:
        """Publish the next step of ``ctrl``'s open-loop ramp to zero, outside a tick.

        Within the motion limits (each joint at its deceleration limit over the nominal
        period); the ramp's last command is zero, journaled with ``reason``. Returns True while
        something was published.
        """
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        out = ctrl.ramp_down()
        if not out.publish:
            return False
        now = self._now()
        self._send(ctrl, cmd, ctrl.q, out.qdot, now)
        if not out.qdot.any():
            self._journal.zero(now, reason)
        return True

    def _send(
        self, ctrl: Controller, cmd: CommandMessage, q: Array, qdot: Array, now: float
    ) -> None:
        """Publish a command: the arm's joints on the command topic, a commanded base's twist.

        Every command goes through here (a tick, a ramp to zero, a zero), so that the base
        gets each one the arm gets, the final zero included. The base's virtual joints come
        first in ``q'``: ``base_x`` [m/s], ``base_y`` [m/s] (holonomic), ``base_yaw``
        [rad/s], in the base's own axes (``cmd_vel``'s ``linear.x``, ``linear.y``,
        ``angular.z``).
        """
        nb = len(ctrl.base_joints)
        if self._robots is not None:  # each robot's share on its own topic
            self._robots.send(q, qdot, ctrl.period, now)
        elif nb:
            self._cmd_pub.publish(cmd.wire(q[nb:], qdot[nb:], ctrl.period, now))
        else:  # the arm's joints are all of them: no views made
            self._cmd_pub.publish(cmd.wire(q, qdot, ctrl.period, now))
        if nb:
            msg = self._base_msg
            msg.linear.x = float(qdot[0])
            msg.linear.y = float(qdot[1]) if nb == 3 else 0.0
            msg.angular.z = float(qdot[nb - 1])
            self._base_pub.publish(msg)

    def _wait_delivered(self, pub: Any, wait: float) -> None:
        """Wait at most ``wait`` [s] until the subscribers of ``pub`` acknowledged its messages.

        The command publisher stands for every command topic (each robot's of ``robots``).
        """
        if wait <= 0.0:
            return
        pubs = [pub]
        if pub is self._cmd_pub and self._robots is not None:
            pubs = list(self._robots.publishers)
        for p in pubs:
            try:
                p.wait_for_all_acked(Duration(seconds=wait))
            except Exception:  # older rmw: give DDS a moment instead
                time.sleep(min(wait, 0.2))

    def destroy_node(self) -> None:
        """Stop the URDF parser and IK threads, release the polled readers, destroy the node."""
        if self._worker is not None:
            self._worker.close()
        if self._ik is not None:
            self._ik.close()
        loop = getattr(self, "_loop", None)
        if loop is not None and loop.running:
            loop.stop()
        for reader in self.readers():
            reader.destroy()
        joint = getattr(self, "_joint_reader", None)
        if joint is not None:
            joint.destroy()
        robots = getattr(self, "_robots", None)
        if robots is not None:
            robots.destroy()
        self._readers, self._jog_reader, self._odom_reader = [], None, None
        super().destroy_node()

    def stop_smoothly(self, executor: Any, timeout: float = STOP_TIMEOUT) -> bool:
        """Shutdown while commanding: decelerate within the joint limits (stop category 1).

        The node is disabled and the control loop goes on ticking (with fresh joint states the
        controller decelerates, then sends its zero; with stale ones the zero comes at once)
        for at most ``timeout`` seconds; the executor goes on serving meanwhile. Returns True
        when the robot was brought to rest this way.
        """
        ctrl = self._controller
        if ctrl is None or not ctrl.commanding:
            return False
        with self._lock:
            self._models.set_enabled(False)
        self.get_logger().info("shutdown: decelerating within the joint limits")
        deadline = time.monotonic() + timeout
        while ctrl.commanding and time.monotonic() < deadline and rclpy.ok():
            executor.spin_once(timeout_sec=0.01)
        return not ctrl.commanding

    def shutdown_zero(self, wait: float = 1.0, already_stopped: bool = False) -> bool:
        """Publish a zero command before exit (ros2_control holds the last command).

        ``already_stopped``: the controlled stop ended with its zero command a moment ago; a
        second zero right after it would only be a jerk at the ticks' times.
        """
        if self._controller is None:
            return False
        if already_stopped:
            self._journal.flush(self._now(), force=True)
            self._wait_delivered(self._cmd_pub, wait)  # the stop's last zero reaches the robot
            if self._controller.base_joints:
                self._wait_delivered(self._base_pub, wait)
            self._journal.wait_delivered(wait)
            self.get_logger().info("shutdown: zero command sent (the controlled stop's last)")
            return True
        self._journal.flush(self._now(), force=True)
        sent = self._publish_zero(self._controller, wait)
        self._journal.flush(self._now(), force=True)  # the zero's record
        self._journal.wait_delivered(wait)
        if sent:
            self.get_logger().info("shutdown: zero command sent")
        return sent


__all__ = ["STOP_TIMEOUT", "OutputNode"]
