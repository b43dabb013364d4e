"""``itasc-replay --online``: a bag's inputs republished into a running node, recorded anew.

The bag's joint states (each robot's, with ``robots``) and targets are republished over DDS
with the recorded timing (at the times they were made: :func:`_scheduled`; header stamps
shifted to now, intervals kept) while the node's commands
(on every robot's command topic) and journal are recorded into a new bag, which ``--compare``
then checks offline like any other bag. rclpy is imported only
when :func:`replay_online` or :func:`fetch_node_parameters` runs; setting a local DDS
environment is the caller's job (the tests and the demo do).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from itasc_ros.tools.bagio import BagWriter, Storage, default_typestore, read_bag
from itasc_ros.tools.collector import no_collector_pauses
from itasc_ros.tools.replay.errors import ReplayError
from itasc_ros.tools.replay.node_setup import NodeSetup
from itasc_ros.tools.replay.recorded_parameters import (
    PARAMETER_EVENTS_TOPIC,
    is_live_parameter,
    parameter_value,
    write_parameters_snapshot,
)


def fetch_node_parameters(
    node: Any, target: str = "/itasc_node", timeout: float = 5.0
) -> dict[str, Any]:
    """All parameters of a running node, flat (``constraints.ee.gain``), via its services.

    Args:
        node: an rclpy node that is being spun by an executor in another thread.
        target: fully qualified name of the node.
        timeout: seconds to wait for the services [s].

    Raises:
        ReplayError: the services do not answer.
    """
    from rcl_interfaces.srv import GetParameters, ListParameters

    target = "/" + target.lstrip("/")
    lst = node.create_client(ListParameters, f"{target}/list_parameters")
    get = node.create_client(GetParameters, f"{target}/get_parameters")
    try:
        if not (
            lst.wait_for_service(timeout_sec=timeout) and get.wait_for_service(timeout_sec=timeout)
        ):
            raise ReplayError(f"the parameter services of {target} do not answer")
        deadline = time.monotonic() + timeout
        listed = call_with_resends(lst, ListParameters.Request(depth=0), deadline)
        if listed is None:
            raise ReplayError(f"{target}/list_parameters timed out")
        names = list(listed.result.names)

        def call(request_names: list[str]) -> list[Any]:
            got = call_with_resends(get, GetParameters.Request(names=request_names), deadline)
            if got is None:
                raise ReplayError(f"{target}/get_parameters timed out")
            return [parameter_value(v) for v in got.values]

        return _all_values(names, call)
    finally:
        node.destroy_client(lst)
        node.destroy_client(get)


def call_with_resends(client: Any, request: Any, deadline: float, resend: float = 1.0) -> Any:
    """The answer of a service ``client`` to an idempotent ``request``, or None by ``deadline``.

    The request is sent again every ``resend`` [s] until an answer comes or ``deadline``
    (``time.monotonic()``) [s] passes. A ROS 2 service is two topics: a client sees the service
    (``wait_for_service``) once the server's request reader has matched, possibly before the
    server's answer writer has matched the client's reader, and a request sent in between is
    answered into the void (rmw_fastrtps). Only for requests that may be served twice (a list,
    a get, a set to the same value). The caller's executor spins the client's node.
    """
    while True:
        future = client.call_async(request)
        until = min(deadline, time.monotonic() + resend)
        while not future.done() and time.monotonic() < until:
            time.sleep(0.005)
        if future.done() and future.result() is not None:
            return future.result()
        if time.monotonic() >= deadline:
            return None


def _all_values(names: list[str], call: Callable[[list[str]], list[Any]]) -> dict[str, Any]:
    """Name -> value of every parameter that has one (``call`` asks the node for values)."""
    values = call(names)
    if len(values) == len(names):
        return dict(zip(names, values, strict=True))
    # rclpy answers nothing at all when one parameter is uninitialised (an empty array
    # declared by type): ask one by one and leave those out.
    out: dict[str, Any] = {}
    for name in names:
        one = call([name])
        if one:
            out[name] = one[0]
    return out


def _restamp(msg: Any, offset_ns: int) -> None:
    """Shift a typestore message's header stamp by ``offset_ns`` (zero stamps stay zero)."""
    h = getattr(msg, "header", None)
    if h is None or (h.stamp.sec == 0 and h.stamp.nanosec == 0):
        return
    t = h.stamp.sec * 1_000_000_000 + h.stamp.nanosec + offset_ns
    h.stamp.sec, h.stamp.nanosec = divmod(max(t, 0), 1_000_000_000)


def _messages(bag: str | Path, setup: NodeSetup) -> list[tuple[str, int, Any]]:
    """The bag's inputs and the node's live parameter changes, in bag order."""
    fq = "/" + setup.node_name.lstrip("/")
    topics = setup.input_topics
    messages = [
        m
        for m in read_bag(bag, [*topics, PARAMETER_EVENTS_TOPIC])
        if m[0] != PARAMETER_EVENTS_TOPIC
        or (m[2].node == fq and any(is_live_parameter(p.name) for p in m[2].changed_parameters))
    ]
    if not messages:
        raise ReplayError(f"bag {str(bag)!r} has no messages on {topics}")
    return _scheduled(messages)


def _stamp_ns(msg: Any) -> int:
    """A typestore message's header stamp [ns] (0: no header, or a zero stamp)."""
    h = getattr(msg, "header", None)
    return 0 if h is None else int(h.stamp.sec) * 1_000_000_000 + int(h.stamp.nanosec)


def _scheduled(messages: list[tuple[str, int, Any]]) -> list[tuple[str, int, Any]]:
    """The messages at the times they were made: (topic, time [ns], message), in that order.

    A bag's time is when its recorder took a message. A recorder that fell behind (a loaded
    machine: 2.6 s behind a 250 Hz joint-state stream while it took the targets at once) wrote
    them later than the node had them: republished at those times, the joint states reached
    the online node seconds after the targets that came with them. A stamped message's time is
    its stamp plus its topic's least latency (bag time minus stamp: a constant offset between
    the two clocks is kept; the third smallest of a topic of 30 messages or more, so that two
    stamps far ahead do not move it), never later than its bag time and never before the last
    of its topic (its order kept: a stamp out of order, or leaping ahead, is republished as it
    came); a message without a stamp (or a zero stamp) keeps its bag time.
    """
    lags: dict[str, list[int]] = {}
    stamps = [_stamp_ns(msg) for _, _, msg in messages]
    for (topic, t, _), stamp in zip(messages, stamps, strict=True):
        if stamp:
            lags.setdefault(topic, []).append(t - stamp)
    least = {topic: sorted(v)[min(2, len(v) // 10)] for topic, v in lags.items()}
    last: dict[str, int] = {}
    out = []
    for (topic, t, msg), stamp in zip(messages, stamps, strict=True):
        made = t if not stamp else min(stamp + least[topic], t)
        made = max(made, last.get(topic, made))
        last[topic] = made
        out.append((topic, made, msg))
    out.sort(key=lambda m: m[1])  # stable: each topic's order is kept
    return out


def _recorded_topics(setup: NodeSetup) -> dict[str, str | None]:
    """Topic -> type (None: the type found on the graph) of what the new bag records."""
    record: dict[str, str | None] = {t: None for t in setup.input_topics}
    record.update({t: None for t in setup.command_topics})
    record[setup.journal_topic] = "std_msgs/msg/Float64MultiArray"
    record[setup.parameters_topic] = "std_msgs/msg/String"
    record[PARAMETER_EVENTS_TOPIC] = "rcl_interfaces/msg/ParameterEvent"
    return record


@dataclass
class _Link:
    """The replay's rclpy node, its publishers (topic -> publisher), the node's SetParameters."""

    node: Any
    pubs: dict[str, Any]
    set_params: Any
    fq: str


def _publishers(node: Any, setup: NodeSetup) -> dict[str, Any]:
    """Topic -> a reliable publisher (depth 10) of its input, joint states and targets."""
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    classes: dict[str, Any] = {t: JointState for t in setup.joint_topics}
    classes.update({t: PoseStamped for t in setup.pose_topics.values()})
    classes.update({t: TwistStamped for t in setup.twist_topics.values()})
    qos = QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE
    )
    return {t: node.create_publisher(classes[t], t, qos) for t in setup.input_topics}


def _wait_for_node(link: _Link, recorder: Any, setup: NodeSetup, wait: float) -> None:
    """Wait until the node subscribes to the inputs and publishes commands.

    Raises:
        ReplayError: it does not within ``wait`` [s].
    """
    pubs = link.pubs
    deadline = time.monotonic() + wait
    needed = [*setup.joint_topics, *setup.pose_topics.values()]
    while any(pubs[t].get_subscription_count() < 2 for t in needed) or any(
        t not in recorder.subscribed for t in setup.command_topics
    ):
        if time.monotonic() > deadline:
            counts = {t: pubs[t].get_subscription_count() for t in setup.joint_topics}
            raise ReplayError(
                f"node {link.fq} did not appear within {wait} s (subscribed: "
                f"{sorted(recorder.subscribed)}; subscribers of the joint states: {counts})"
            )
        time.sleep(0.05)


def _republish(
    link: _Link, messages: list[tuple[str, int, Any]], speed: float, log: Any
) -> list[Any]:
    """Publish the messages with the bag's timing; returns the parameter calls made."""
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    ts = default_typestore()
    calls: list[Any] = []
    t_bag0 = messages[0][1]
    now0 = link.node.get_clock().now().nanoseconds
    wall0 = time.monotonic()
    offset = now0 - t_bag0
    log(
        f"itasc-replay --online: {len(messages)} messages into {link.fq} over "
        f"{(messages[-1][1] - t_bag0) * 1e-9 / speed:.2f} s"
    )
    for topic, t_ns, msg in messages:
        due = wall0 + (t_ns - t_bag0) * 1e-9 / speed
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if topic == PARAMETER_EVENTS_TOPIC:
            live = [
                Parameter(p.name, value=parameter_value(p.value)).to_parameter_msg()
                for p in msg.changed_parameters
                if is_live_parameter(p.name)
            ]
            calls.append(link.set_params.call_async(SetParameters.Request(parameters=live)))
            continue
        _restamp(msg, offset)
        link.pubs[topic].publish(ts.serialize_cdr(msg, msg.__msgtype__).tobytes())
    return calls


def _refused(calls: list[Any]) -> list[str] | None:
    """The reasons of refused parameter changes; None when all were answered and accepted."""
    refused = [
        r.reason
        for c in calls
        if c.done() and c.result() is not None
        for r in c.result().results
        if not r.successful
    ]
    if refused or not all(c.done() for c in calls):
        return refused
    return None


def replay_online(
    bag: str | Path,
    out_bag: str | Path,
    setup: NodeSetup,
    storage: Storage = "mcap",
    speed: float = 1.0,
    wait: float = 15.0,
    drain: float = 0.5,
    log: Any = print,
) -> dict[str, int]:
    """Republish a bag's joint states and targets into a running node; record its commands.

    The node's live parameter changes recorded in the bag (``/parameter_events``) are made
    again with its SetParameters service at the same times.

    Args:
        bag: input bag.
        out_bag: the new bag (inputs as republished, the node's commands, parameter events and
            a snapshot of the node's parameters).
        setup: topics and types (:func:`~itasc_ros.tools.replay.node_setup.load_setup`).
        storage: 'mcap' or 'sqlite3' for ``out_bag``.
        speed: playback rate factor (1 = the bag's timing).
        wait: seconds to wait for the node to subscribe and publish [s].
        drain: seconds to keep recording after the last message [s].
        log: where progress lines go.

    Returns:
        Topic -> messages written to ``out_bag``.

    Raises:
        ReplayError: the node does not appear within ``wait``.
    """
    import threading

    import rclpy
    from rcl_interfaces.srv import SetParameters
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from itasc_ros.tools.record import Recorder

    if speed <= 0.0:
        raise ReplayError(f"speed must be > 0, got {speed}")
    messages = _messages(bag, setup)
    fq = "/" + setup.node_name.lstrip("/")
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("itasc_replay", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set() and context.ok():
            executor.spin_once(timeout_sec=0.02)

    thread = threading.Thread(target=spin, daemon=True)
    link = _Link(
        node,
        _publishers(node, setup),
        node.create_client(SetParameters, f"{fq}/set_parameters"),
        fq,
    )
    try:
        with BagWriter(out_bag, storage) as writer:
            recorder = Recorder(node, writer, _recorded_topics(setup))
            thread.start()
            _wait_for_node(link, recorder, setup, wait)
            params = fetch_node_parameters(node, fq, timeout=wait)
            write_parameters_snapshot(writer, node.get_clock().now().nanoseconds, params, fq)
            with no_collector_pauses():  # keeps the bag's timing (see the module)
                calls = _republish(link, messages, speed, log)
            time.sleep(drain)
            refused = _refused(calls)
            if refused is not None:
                log(f"itasc-replay --online: parameter changes refused or unanswered: {refused}")
            recorder.close()
            counts = writer.counts
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=2.0)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    return counts


__all__ = ["fetch_node_parameters", "replay_online"]
