"""The replay's reading of a bag: events of the golden bag, commands as the node reads them.

The replay reads the bag reader's (rosbags typestore) messages, the node reads rclpy's; one
reading (:func:`itasc_ros.command_messages.command_velocities`) turns both kinds of the three
command types into the same joint velocities and the same errors. The replay package names its
modules' objects.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import itasc_ros
from itasc_ros.tools.bagio import default_typestore
from itasc_ros.tools.replay import bag_events, load_setup
from itasc_ros.tools.replay.bag_events import command_velocities, load_events

ROOT = Path(itasc_ros.__file__).resolve().parents[1]
GOLDEN = ROOT / "test" / "data" / "golden" / "panda_circle.mcap"
JOINTS = ["a", "b", "c"]


def _typestore_command(kind: str, names: list[str], vel: list[float]) -> Any:
    """A bag reader's command message of ``kind`` ('array', 'trajectory' or 'state')."""
    t = default_typestore().types
    v = np.array(vel, dtype=float)
    if kind == "array":
        layout = t["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
        return t["std_msgs/msg/Float64MultiArray"](layout=layout, data=v)
    stamp = t["builtin_interfaces/msg/Time"](sec=1, nanosec=2)
    header = t["std_msgs/msg/Header"](stamp=stamp, frame_id="")
    empty = np.zeros(0)
    if kind == "state":
        return t["sensor_msgs/msg/JointState"](
            header=header, name=names, position=empty, velocity=v, effort=empty
        )
    points = []
    if vel:
        duration = t["builtin_interfaces/msg/Duration"](sec=0, nanosec=0)
        points = [
            t["trajectory_msgs/msg/JointTrajectoryPoint"](
                positions=empty,
                velocities=v,
                accelerations=empty,
                effort=empty,
                time_from_start=duration,
            )
        ]
    return t["trajectory_msgs/msg/JointTrajectory"](
        header=header, joint_names=names, points=points
    )


def _rclpy_command(kind: str, names: list[str], vel: list[float]) -> Any:
    """The node's (rclpy) command message with the same contents."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    if kind == "array":
        return Float64MultiArray(data=vel)
    if kind == "state":
        return JointState(name=names, velocity=vel)
    points = [JointTrajectoryPoint(velocities=vel)] if vel else []
    return JointTrajectory(joint_names=names, points=points)


def _outcome(fn: Any, msg: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(msg, JOINTS).tolist()
    except ValueError as exc:
        return "error", str(exc)


CASES = {
    "array in order": ("array", [], [0.1, -0.2, 0.3]),
    "array too short": ("array", [], [0.1, 0.2]),
    "trajectory by name": ("trajectory", ["c", "a", "b", "x"], [3.0, 1.0, 2.0, 9.0]),
    "trajectory without points": ("trajectory", JOINTS, []),
    "trajectory lacking a joint": ("trajectory", ["a", "b"], [1.0, 2.0]),
    "state by name": ("state", ["b", "c", "a"], [2.0, 3.0, 1.0]),
    "state with fewer velocities": ("state", ["a", "b", "c"], [1.0, 2.0]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bag_commands_read_as_the_node_reads_them(case: str) -> None:
    from itasc_ros.ros.conversions import command_velocities as node_command_velocities

    kind, names, vel = CASES[case]
    ours = _outcome(command_velocities, _typestore_command(kind, names, vel))
    node = _outcome(node_command_velocities, _rclpy_command(kind, names, vel))
    assert ours == node
    if case in ("array in order", "trajectory by name", "state by name"):
        assert ours == ("ok", [1.0, 2.0, 3.0] if kind != "array" else [0.1, -0.2, 0.3])


def test_an_unreadable_command_is_an_event_with_its_problem() -> None:
    t = default_typestore().types
    event = bag_events.command_event(2.5, t["std_msgs/msg/String"](data="x"), JOINTS)
    assert (event.t, event.qdot, event.problem) == (
        2.5,
        None,
        "not a command message: std_msgs/msg/String",
    )


def test_golden_bag_events_in_bag_order() -> None:
    setup = load_setup(GOLDEN)
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    events = load_events(GOLDEN, setup, joints)
    kinds = Counter(type(e).__name__ for e in events)
    assert kinds == {
        "JointStateEvent": 260,
        "PoseEvent": 260,
        "CommandEvent": 260,
        "TwistEvent": 90,
        "ParameterChangeEvent": 1,
    }
    times = [e.t for e in events]
    assert times == sorted(times)
    change = next(e for e in events if isinstance(e, bag_events.ParameterChangeEvent))
    assert change.changes == {"constraints.ee.feedforward": False} and change.src is not None
    commands = [e for e in events if isinstance(e, bag_events.CommandEvent)]
    assert all(c.qdot is not None and c.qdot.shape == (7,) for c in commands)
    assert all(isinstance(e.src, float) for e in events if isinstance(e, bag_events.PoseEvent))


def test_the_package_names_its_modules_objects() -> None:
    from itasc_ros.tools import replay
    from itasc_ros.tools.replay import node_setup, online, recorded_parameters

    assert replay.load_setup is node_setup.load_setup
    assert replay.write_parameters_snapshot is recorded_parameters.write_parameters_snapshot
    assert replay.PARAMETER_EVENTS_TOPIC == "/parameter_events"
    assert replay.fetch_node_parameters is online.fetch_node_parameters
    assert replay.header_seconds(0, 0) is None and replay.header_seconds(1, 5) == 1 + 5 * 1e-9


def test_several_robots_have_each_robots_topics_and_no_bag_order_replay() -> None:
    """A setup of ``robots`` lists every robot's joint state and command topics (the online
    replay republishes and records them); the bag-order replay of raw inputs, which takes one
    robot's joint states, says where such a recording replays instead."""
    from itasc_ros.tools.replay.errors import ReplayError

    setup = load_setup(GOLDEN, params_file=ROOT / "config" / "two_pandas.yaml")
    assert setup.joint_topics == ["/a/joint_states", "/b/joint_states"]
    assert setup.command_topics == [
        "/a/forward_velocity_controller/commands",
        "/b/forward_velocity_controller/commands",
    ]
    assert setup.input_topics[:2] == setup.joint_topics
    with pytest.raises(ReplayError, match="--online"):
        load_events(GOLDEN, setup, [])
