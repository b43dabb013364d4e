"""The node's commands: the command publishers, and the commands sent outside a tick.

:class:`NodeOutputs` owns the command topic's publisher (each robot's of ``robots``, through
:class:`~itasc_ros.ros.node_robots.RobotSet`), the commanded base's ``Twist`` and the installed
controller's command message. Every command goes through :meth:`NodeOutputs.send`: a tick's,
and those that are not a tick's: a zero command (a model change, a tick's error, shutdown),
the open-loop ramp to zero and the controlled stop at shutdown. :func:`read_clock` is the
node's ROS time as every part of the node reads it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped, Twist
from numpy.typing import NDArray
from rclpy.clock import ROSClock
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from ..core import Controller
from ..core.control.journal import ZeroReason
from ..core.control.model_manager import ModelManager
from .conversions import COMMAND_TYPES, JOINT_TRAJECTORY, CommandMessage
from .journal_publisher import JournalPublisher
from .node_robots import RobotSet

Array = NDArray[np.float64]

STOP_TIMEOUT = 2.0  # [s] longest controlled stop at shutdown before the zero command


def read_clock(node: Node) -> tuple[float, float]:
    """The node's ROS time [s] and its offset [s] from the system clock, read once.

    DDS stamps a message's reception with the system clock; adding the offset puts it on
    the controller's clock (0 unless ``use_sim_time`` is active).

    Args:
        node: the node whose clock this is.
    """
    clock = node.get_clock()
    wall = time.time()  # what the ROS clock reads then, without two Time objects
    if isinstance(clock, ROSClock) and clock.ros_time_is_active:  # /clock drives it
        now = clock.now().nanoseconds * 1e-9
        return now, now - wall
    return wall, 0.0


class NodeOutputs:
    """The node's command publishers and the commands it sends outside a tick (see the module).

    Args:
        node: the node the publishers belong to (its logger, its clock).
        kind: ``command_out_type``.
        command_topic: ``command_out_topic`` (unused with ``robots``: each robot has its own).
        base_topic: ``base_cmd_topic``, a commanded base's ``Twist`` (``base_kind``).
        models: the installed controller (and ``~/enable``).
        journal: the journal every zero command outside a tick is recorded in.
        robots: several robots (``robots``): each one's share of every command, or None.
        lock: the lock the control tick holds (the controlled stop disables under it).
    """

    def __init__(
        self,
        node: Node,
        kind: str,
        command_topic: str,
        base_topic: str,
        models: ModelManager[PoseStamped],
        journal: JournalPublisher,
        robots: RobotSet | None,
        lock: threading.RLock,
    ) -> None:
        self._node = node
        self._kind = kind
        self._models = models
        self._journal = journal
        self._robots = robots
        self._lock = lock
        self._cmd_pub = node.create_publisher(
            COMMAND_TYPES[kind],
            command_topic,
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        self._base_pub = node.create_publisher(  # a commanded base's velocity (base_kind)
            Twist,
            base_topic,
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        self._base_msg = Twist()
        self._command: CommandMessage | None = None  # the installed controller's message

    @property
    def command(self) -> CommandMessage | None:
        """The installed controller's command message (None: no model, no command)."""
        return self._command

    def fit(self, ctrl: Controller | None) -> None:
        """A new model is installed (between two ticks): its command message, each robot's share.

        Args:
            ctrl: the installed controller (None: no model, no command).
        """
        self._command = (  # the arm's joints (a commanded base's go to base_cmd_topic)
            None
            if ctrl is None
            else CommandMessage(self._kind, ctrl.joint_names[len(ctrl.base_joints) :])
        )
        if ctrl is not None and self._robots is not None:
            self._robots.fit(ctrl)  # each robot's share of the commands

    def publish_zero(
        self, ctrl: Controller, wait: float = 0.5, reason: ZeroReason = ZeroReason.SHUTDOWN
    ) -> bool:
        """Publish a zero command (JointTrajectory needs a joint state); wait for delivery.

        The zero is journaled (outside a tick) with ``reason``.

        Args:
            ctrl: the controller commanding (its joints, its positions).
            wait: longest wait [s] for the subscribers' acknowledgement (0: none).
            reason: why, as the journal records it.

        Returns:
            True when a zero was published.
        """
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        zeros = np.zeros(ctrl.n_joints)
        now = read_clock(self._node)[0]
        self.send(ctrl, cmd, ctrl.q, zeros, now)
        self._journal.zero(now, reason)  # the journal is still the one of ``ctrl``
        self._wait_delivered(self._cmd_pub, wait)
        if ctrl.base_joints:
            self._wait_delivered(self._base_pub, wait)
        return True

    def publish_ramp(self, ctrl: Controller, reason: ZeroReason) -> bool:
        """Publish the next step of ``ctrl``'s open-loop ramp to zero, outside a tick.

        Within the motion limits (each joint at its deceleration limit over the nominal
        period); the ramp's last command is zero, journaled with ``reason``.

        Args:
            ctrl: the controller commanding.
            reason: why, as the journal records the ramp's last (zero) command.

        Returns:
            True while something was published.
        """
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        out = ctrl.ramp_down()
        if not out.publish:
            return False
        now = read_clock(self._node)[0]
        self.send(ctrl, cmd, ctrl.q, out.qdot, now)
        if not out.qdot.any():
            self._journal.zero(now, reason)
        return True

    def send(
        self, ctrl: Controller, cmd: CommandMessage, q: Array, qdot: Array, now: float
    ) -> None:
        """Publish a command: the arm's joints on the command topic, a commanded base's twist.

        Every command goes through here (a tick, a ramp to zero, a zero), so that the base
        gets each one the arm gets, the final zero included. The base's virtual joints come
        first in ``q'``: ``base_x`` [m/s], ``base_y`` [m/s] (holonomic), ``base_yaw``
        [rad/s], in the base's own axes (``cmd_vel``'s ``linear.x``, ``linear.y``,
        ``angular.z``).

        Args:
            ctrl: the controller commanding.
            cmd: its command message (:attr:`command`).
            q: the joint positions (n,) [rad or m].
            qdot: the commanded joint velocities (n,) [rad/s or m/s].
            now: the node's ROS time [s].
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

    def stop_smoothly(self, executor: Any, timeout: float = STOP_TIMEOUT) -> bool:
        """Shutdown while commanding: decelerate within the joint limits (stop category 1).

        The node is disabled and the control loop goes on ticking (with fresh joint states the
        controller decelerates, then sends its zero; with stale ones the zero comes at once)
        for at most ``timeout`` seconds; the executor goes on serving meanwhile.

        Args:
            executor: the node's executor (spun meanwhile).
            timeout: longest stop [s].

        Returns:
            True when the robot was brought to rest this way.
        """
        ctrl = self._models.controller
        if ctrl is None or not ctrl.commanding:
            return False
        with self._lock:
            self._models.set_enabled(False)
        self._node.get_logger().info("shutdown: decelerating within the joint limits")
        deadline = time.monotonic() + timeout
        while ctrl.commanding and time.monotonic() < deadline and rclpy.ok():
            executor.spin_once(timeout_sec=0.01)
        return not ctrl.commanding

    def shutdown_zero(self, wait: float = 1.0, already_stopped: bool = False) -> bool:
        """Publish a zero command before exit (ros2_control holds the last command).

        Args:
            wait: longest wait [s] for each delivery (the command's, the journal's).
            already_stopped: the controlled stop ended with its zero command a moment ago; a
                second zero right after it would only be a jerk at the ticks' times.

        Returns:
            True when a zero command was sent (now, or as the controlled stop's last).
        """
        ctrl = self._models.controller
        if ctrl is None:
            return False
        logger = self._node.get_logger()
        if already_stopped:
            self._journal.flush(read_clock(self._node)[0], force=True)
            self._wait_delivered(self._cmd_pub, wait)  # the stop's last zero reaches the robot
            if ctrl.base_joints:
                self._wait_delivered(self._base_pub, wait)
            self._journal.wait_delivered(wait)
            logger.info("shutdown: zero command sent (the controlled stop's last)")
            return True
        self._journal.flush(read_clock(self._node)[0], force=True)
        sent = self.publish_zero(ctrl, wait)
        self._journal.flush(read_clock(self._node)[0], force=True)  # the zero's record
        self._journal.wait_delivered(wait)
        if sent:
            logger.info("shutdown: zero command sent")
        return sent


__all__ = ["STOP_TIMEOUT", "NodeOutputs", "read_clock"]
