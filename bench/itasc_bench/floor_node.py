"""The floor of the control-loop benchmark: an rclpy node that does no kinematics at all.

It takes the same parameters file as ``itasc_node`` (reads ``command_out_topic``,
``joint_topic``, ``control_rate``, ``control_trigger``, ``thread_priority`` and
``cpu_affinity``; ignores the rest), takes the joint states the same way (a
:class:`~itasc_ros.ros.polled_reader.PolledReader` the tick takes from) and publishes a zero
``Float64MultiArray`` (one value per joint of the last joint state) with the same reliable QoS
from the same control loop (:class:`~itasc_ros.ros.control_loop.ControlLoop`: its own thread,
on a timer or on each joint state) beside the same executor, with the same garbage collection
(right after each publish, see :mod:`itasc_ros.ros.slack_gc`). ``itasc-bench loop --floor``
runs it as the peer of the node: it measures what rclpy and DDS alone cost on a machine, so
that the node's figures can be read against it. ``--core-floor`` runs it with the core's work
added to each tick (:mod:`itasc_bench.loop.core_floor`).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from itasc_ros.ros.control_loop import ControlLoop, shorten_switch_interval
from itasc_ros.ros.executors import make_executor, spin_until
from itasc_ros.ros.polled_reader import PolledReader
from itasc_ros.ros.realtime import apply_realtime
from itasc_ros.ros.slack_gc import SlackCollector

#: What a tick computes from the joint state it took, before its publish: the values to publish
#: (one per joint), or None for the floor's zeros (see :mod:`itasc_bench.loop.core_floor`).
Work = Callable[[JointState], Any]


def main(
    args: list[str] | None = None, make_work: Callable[[Any, float], Work] | None = None
) -> int:
    """Run the floor node until SIGINT/SIGTERM; returns the exit status.

    Args:
        args: the command line (``--ros-args`` and the parameters).
        make_work: given the rclpy node and ``control_rate`` [Hz], the :data:`Work` each tick
            does after its take (the floor: none).
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node(
        "itasc_node",
        allow_undeclared_parameters=True,
        automatically_declare_parameters_from_overrides=True,
    )

    def param(name: str, default: Any) -> Any:
        return node.get_parameter(name).value if node.has_parameter(name) else default

    topic = str(param("command_out_topic", "/forward_velocity_controller/commands"))
    rate = float(param("control_rate", 250.0))
    on_state = str(param("control_trigger", "timer")) == "joint_states"
    pub = node.create_publisher(
        Float64MultiArray, topic, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    )
    msg = Float64MultiArray()
    reader = PolledReader(node, JointState, str(param("joint_topic", "joint_states")), False)
    taken: list[JointState] = []  # the joint state the tick takes
    collector = SlackCollector()
    work = make_work(node, rate) if make_work is not None else None

    def take() -> bool:
        got = reader.take()
        if got is not None:
            taken[:] = [got[0]]
        return got is not None

    def tick() -> None:
        if not on_state:
            take()
        if not taken:
            return
        values = work(taken[0]) if work is not None else None
        if values is not None:
            msg.data = values
        elif len(taken[0].position) != len(msg.data):
            msg.data = [0.0] * len(taken[0].position)
        pub.publish(msg)
        collector.collect()  # as the node: a due collection right after the publish

    priority = int(param("thread_priority", 0))
    joint_states = (reader, take) if on_state else None
    loop = ControlLoop(node.context, tick, 1.0 / rate, joint_states, priority=priority)
    for why in apply_realtime(priority, [int(c) for c in param("cpu_affinity", []) or []]):
        node.get_logger().warning(f"real-time scheduling not applied: {why}")
    executor = make_executor()  # the node's executor and spin loop (itasc_ros.ros.node.main)
    executor.add_node(node)
    collector.start()  # as the node does after start-up
    stop = threading.Event()
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, lambda signum, frame: stop.set())
    shorten_switch_interval()  # as the node
    loop.start()  # the node's control loop, on its own thread
    try:
        spin_until(executor, stop)  # the node's spin loop
    finally:
        loop.stop()
        reader.destroy()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
