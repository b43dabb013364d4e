"""itasc_ros.ros.polled_reader: readers the tick takes from, and the watch over their matching.

Real rclpy over DDS in this process: a reader takes what a publisher sent; a reader the graph
says has a publisher it never matched (here: a publisher of another message type, which DDS
never matches) is renewed after the grace period, once per period, and takes messages again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import rclpy
from procs import dds_env
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from itasc_ros.ros.polled_reader import MatchWatch, PolledReader, Waiter, replaced_count

pytestmark = pytest.mark.dds

TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
BEST_EFFORT = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)


@pytest.fixture
def node(dds_domain: int) -> Iterator[Any]:
    with dds_env(dds_domain):
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            n = rclpy.create_node("polled_reader_test", context=context)
            yield n
            n.destroy_node()
        finally:
            rclpy.shutdown(context=context)


def _wait(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_reader_takes_what_a_publisher_sent(node: Any) -> None:
    reader = PolledReader(node, String, "polled_topic")
    waiter = Waiter(node.context, reader)
    pub = node.create_publisher(String, "polled_topic", QoSProfile(depth=1))
    assert reader.topic == "/polled_topic" and reader.numbered is None
    got = None
    deadline = time.monotonic() + TIMEOUT
    while got is None and time.monotonic() < deadline:
        pub.publish(String(data="hello"))
        with node.context.handle:
            waiter.wait(0.1)
        got = reader.take()
    assert got is not None, "nothing taken"
    msg, received = got
    assert msg.data == "hello" and abs(received - time.time()) < TIMEOUT
    assert reader.numbered is not None  # known once a message was taken
    assert replaced_count([reader]).split()[0] in {"0", "unknown"}
    waiter.wake()  # the guard condition ends the next wait at once
    t = time.monotonic()
    with node.context.handle:
        waiter.wait(5.0)
    assert time.monotonic() - t < 4.0
    reader.destroy()


def test_a_reader_the_graph_disagrees_with_is_renewed_and_takes_again(node: Any) -> None:
    reader = PolledReader(node, JointState, "watched_states", reliable=False)
    if reader.matched_publishers() is None:
        pytest.skip("this rclpy cannot count a subscription's matched publishers (Humble)")
    watch = MatchWatch(node, reader, grace=0.5)
    # A publisher of another message type on the topic (another participant's: DDS refuses two
    # types on one topic within a participant): in the graph, never matched.
    other = rclpy.Context()
    rclpy.init(context=other)
    stranger = rclpy.create_node("stranger", context=other)
    stranger.create_publisher(String, "watched_states", BEST_EFFORT)
    _wait(lambda: node.count_publishers("/watched_states") == 1, "the graph's publisher")
    warnings: list[str] = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.2:  # about four grace periods, checked every 0.1 s
        warning = watch.check(time.monotonic())
        if warning:
            warnings.append(warning)
        time.sleep(0.1)
    assert 1 <= len(warnings) <= 4 and watch.renewals == len(warnings), warnings
    assert "1 publisher(s) in the ROS graph, 0 matched" in warnings[0], warnings[0]
    assert "another message type than JointState" in warnings[0]
    # The renewed reader is a working reader: a joint state publisher is matched and taken.
    pub = node.create_publisher(JointState, "watched_states", BEST_EFFORT)
    _wait(lambda: reader.matched_publishers() == 1, "the renewed reader's match")
    got = None
    deadline = time.monotonic() + TIMEOUT
    while got is None and time.monotonic() < deadline:
        pub.publish(JointState(name=["j"], position=[0.5]))
        time.sleep(0.02)
        got = reader.take()
    assert got is not None and list(got[0].position) == [0.5]
    reader.destroy()
    stranger.destroy_node()
    rclpy.shutdown(context=other)


def test_a_matched_reader_is_left_alone(node: Any) -> None:
    reader = PolledReader(node, JointState, "quiet_states", reliable=False)
    if reader.matched_publishers() is None:
        pytest.skip("this rclpy cannot count a subscription's matched publishers (Humble)")
    watch = MatchWatch(node, reader, grace=0.2)
    node.create_publisher(JointState, "quiet_states", BEST_EFFORT)  # matched, publishes nothing
    _wait(lambda: reader.matched_publishers() == 1, "the match")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:
        assert watch.check(time.monotonic()) == ""
        time.sleep(0.05)
    assert watch.renewals == 0
    reader.destroy()
