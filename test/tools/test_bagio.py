"""rosbag2 writing/reading with rosbags (itasc_ros.tools.bagio), both storage formats."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore
from ruamel.yaml import YAML

from itasc_ros.tools import bagio
from itasc_ros.tools.bagio import (
    BagError,
    BagWriter,
    bag_summary,
    float64_multi_array_msg,
    joint_state_msg,
    pose_stamped_msg,
    read_bag,
    twist_stamped_msg,
)

STORAGES = ["mcap", "sqlite3"]
NAMES = ["j1", "j2", "j3"]
T0 = 1_700_000_000_123_456_789  # [ns]
DT = 10_000_000  # [ns]


def _write_sample_bag(path: Path, storage: str, n: int = 25) -> None:
    with BagWriter(path, storage) as bag:  # type: ignore[arg-type]
        bag.add_topic("/joint_states", "sensor_msgs/msg/JointState")
        for i in range(n):
            t = T0 + i * DT
            q = [0.1 * i, -0.2 * i, 0.3]
            dq = [1.0, 2.0, float(i)]
            bag.write("/joint_states", t, joint_state_msg(t, NAMES, q, dq))
            if i % 5 == 0:
                bag.write(
                    "/itasc_node/target_pose",
                    t + 1,
                    pose_stamped_msg(t, "panda_link0", [0.5, 0.0, 0.01 * i], [0, 0, 0.6, 0.8]),
                )
                bag.write(
                    "/itasc_node/target_twist",
                    t + 2,
                    twist_stamped_msg(t, "panda_link0", [0.1, 0.0, 0.0], [0.0, 0.0, 0.2 * i]),
                )
            bag.write(
                "/forward_velocity_controller/commands",
                t + 3,
                float64_multi_array_msg([i, -i, 0.5 * i]),
            )


@pytest.mark.parametrize("storage", STORAGES)
def test_roundtrip_topics_types_counts_values(tmp_path: Path, storage: str) -> None:
    path = tmp_path / "bag"
    _write_sample_bag(path, storage)

    assert bag_summary(path) == {
        "/joint_states": ("sensor_msgs/msg/JointState", 25),
        "/itasc_node/target_pose": ("geometry_msgs/msg/PoseStamped", 5),
        "/itasc_node/target_twist": ("geometry_msgs/msg/TwistStamped", 5),
        "/forward_velocity_controller/commands": ("std_msgs/msg/Float64MultiArray", 25),
    }

    msgs = list(read_bag(path))
    assert len(msgs) == 60
    stamps = [t for _, t, _ in msgs]
    assert stamps == sorted(stamps)  # time order across topics

    js = [(t, m) for topic, t, m in msgs if topic == "/joint_states"]
    for i, (t, m) in enumerate(js):
        assert t == T0 + i * DT
        assert bagio.stamp_to_ns(m.header.stamp) == T0 + i * DT
        assert m.name == NAMES
        assert m.position.dtype == np.float64
        np.testing.assert_array_equal(m.position, [0.1 * i, -0.2 * i, 0.3])
        np.testing.assert_array_equal(m.velocity, [1.0, 2.0, float(i)])
        assert m.effort.size == 0

    poses = [m for topic, _, m in msgs if topic == "/itasc_node/target_pose"]
    assert [p.header.frame_id for p in poses] == ["panda_link0"] * 5
    assert [p.pose.position.z for p in poses] == pytest.approx([0.0, 0.05, 0.1, 0.15, 0.2])
    q = poses[3].pose.orientation
    assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.6, 0.8)

    twists = [m for topic, _, m in msgs if topic == "/itasc_node/target_twist"]
    assert [tw.twist.angular.z for tw in twists] == pytest.approx([0.0, 1.0, 2.0, 3.0, 4.0])
    assert twists[2].twist.linear.x == 0.1

    cmds = [m for topic, _, m in msgs if topic == "/forward_velocity_controller/commands"]
    np.testing.assert_array_equal(cmds[7].data, [7.0, -7.0, 3.5])
    assert cmds[7].layout.dim == []


@pytest.mark.parametrize("storage", STORAGES)
def test_topic_filter(tmp_path: Path, storage: str) -> None:
    path = tmp_path / "bag"
    _write_sample_bag(path, storage, n=10)
    got = list(read_bag(path, topics=["/itasc_node/target_pose", "/not/in/bag"]))
    assert [topic for topic, _, _ in got] == ["/itasc_node/target_pose"] * 2
    assert list(read_bag(path, topics=["/not/in/bag"])) == []


@pytest.mark.parametrize(
    ("storage", "ext", "version"), [("mcap", ".mcap", 9), ("sqlite3", ".db3", 8)]
)
def test_files_and_metadata(tmp_path: Path, storage: str, ext: str, version: int) -> None:
    path = tmp_path / "bag"
    _write_sample_bag(path, storage, n=5)
    meta = YAML(typ="safe").load((path / "metadata.yaml").read_text())[
        "rosbag2_bagfile_information"
    ]
    assert meta["version"] == version
    assert meta["storage_identifier"] == storage
    assert meta["message_count"] == 5 + 1 + 1 + 5
    assert meta["starting_time"]["nanoseconds_since_epoch"] == T0
    files = meta["relative_file_paths"]
    assert len(files) == 1 and files[0].endswith(ext)
    assert (path / files[0]).stat().st_size > 0
    # An independent reader (plain rosbags Reader + typestore) sees the same.
    ts = get_typestore(Stores.ROS2_HUMBLE)
    with Reader(path) as reader:
        conns = [c for c in reader.connections if c.topic == "/joint_states"]
        raws = [raw for _, _, raw in reader.messages(connections=conns)]
    msg: Any = ts.deserialize_cdr(raws[4], "sensor_msgs/msg/JointState")
    np.testing.assert_array_equal(msg.position, [0.4, -0.8, 0.3])


def _installed_type_hash(msgtype: str) -> str:
    pkg, sub, name = msgtype.split("/")
    desc = json.loads((Path(sys.prefix) / "share" / pkg / sub / f"{name}.json").read_text())
    return next(h["hash_string"] for h in desc["type_hashes"] if h["type_name"] == msgtype)


@pytest.mark.parametrize(
    "msgtype",
    [
        "sensor_msgs/msg/JointState",
        "geometry_msgs/msg/PoseStamped",
        "geometry_msgs/msg/TwistStamped",
        "std_msgs/msg/Float64MultiArray",
        "diagnostic_msgs/msg/DiagnosticArray",
        "trajectory_msgs/msg/JointTrajectory",
    ],
)
def test_type_hashes_match_installed_ros_messages(tmp_path: Path, msgtype: str) -> None:
    with BagWriter(tmp_path / "bag", "mcap") as bag:
        conn = bag.add_topic("/t", msgtype)
    assert conn.digest == _installed_type_hash(msgtype)


def test_ensure_type_loads_msg_files_into_empty_typestore() -> None:
    ts = get_typestore(Stores.EMPTY)
    assert "sensor_msgs/msg/JointState" not in ts.fielddefs
    assert bagio.ensure_type("sensor_msgs/JointState", ts) == "sensor_msgs/msg/JointState"
    assert {"std_msgs/msg/Header", "builtin_interfaces/msg/Time"} <= set(ts.fielddefs)
    assert ts.hash_rihs01("sensor_msgs/msg/JointState") == _installed_type_hash(
        "sensor_msgs/msg/JointState"
    )
    # The loaded definition serialises exactly like the built-in Kilted one.
    m = joint_state_msg(T0, NAMES, [1, 2, 3], [4, 5, 6])
    raw = bytes(bagio.default_typestore().serialize_cdr(m, "sensor_msgs/msg/JointState"))
    m2: Any = ts.deserialize_cdr(raw, "sensor_msgs/msg/JointState")
    assert m2.name == NAMES
    np.testing.assert_array_equal(m2.velocity, [4, 5, 6])


@pytest.fixture
def rclpy_serialization() -> Any:
    from itasc_ros.tools.dds_env import apply_local_dds_env

    apply_local_dds_env()  # serialization opens no participant, but keep the rule anyway
    from rclpy import serialization

    return serialization


def test_cdr_interop_with_rclpy(tmp_path: Path, rclpy_serialization: Any) -> None:
    from geometry_msgs.msg import PoseStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    ser = rclpy_serialization

    # rclpy -> typestore
    js = JointState()
    js.header.stamp.sec, js.header.stamp.nanosec = 12, 345
    js.header.frame_id = "base"
    js.name = ["a", "bb", "ccc"]
    js.position = [1.0, 2.0, 3.0]
    js.velocity = [0.1, 0.2, 0.3]
    raw = ser.serialize_message(js)
    m = bagio.deserialize(raw, "sensor_msgs/msg/JointState")
    assert bagio.stamp_to_ns(m.header.stamp) == 12_000_000_345
    assert m.header.frame_id == "base"
    assert m.name == ["a", "bb", "ccc"]
    np.testing.assert_array_equal(m.position, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.velocity, [0.1, 0.2, 0.3])
    assert m.effort.size == 0

    # typestore -> rclpy
    ts = bagio.default_typestore()
    m = joint_state_msg(T0, NAMES, [0.5, -0.5, 1.5], [1, 2, 3], [7, 8, 9], frame_id="f")
    back = ser.deserialize_message(bytes(ts.serialize_cdr(m, m.__msgtype__)), JointState)
    assert back.header.stamp.sec * 10**9 + back.header.stamp.nanosec == T0
    assert back.header.frame_id == "f"
    assert list(back.name) == NAMES
    assert list(back.position) == [0.5, -0.5, 1.5]
    assert list(back.effort) == [7, 8, 9]

    p = pose_stamped_msg(T0, "w", [1, 2, 3], [0, 0.6, 0, 0.8])
    pb = ser.deserialize_message(bytes(ts.serialize_cdr(p, p.__msgtype__)), PoseStamped)
    assert (pb.pose.position.x, pb.pose.position.y, pb.pose.position.z) == (1, 2, 3)
    assert (pb.pose.orientation.y, pb.pose.orientation.w) == (0.6, 0.8)

    f = float64_multi_array_msg([3.0, -1.0])
    fb = ser.deserialize_message(bytes(ts.serialize_cdr(f, f.__msgtype__)), Float64MultiArray)
    assert list(fb.data) == [3.0, -1.0]

    # rclpy bytes written raw into a bag read back through read_bag (trailing padding is fine).
    path = tmp_path / "bag"
    with BagWriter(path, "sqlite3") as bag:
        bag.add_topic("/joint_states", "sensor_msgs/msg/JointState")
        bag.write_raw("/joint_states", 5, raw)
    ((topic, t, m),) = list(read_bag(path))
    assert (topic, t, m.name) == ("/joint_states", 5, ["a", "bb", "ccc"])


@pytest.mark.parametrize("storage", STORAGES)
def test_empty_bag(tmp_path: Path, storage: str) -> None:
    path = tmp_path / "bag"
    with BagWriter(path, storage):  # type: ignore[arg-type]
        pass
    assert bag_summary(path) == {}
    assert list(read_bag(path)) == []


def test_exception_in_with_block_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "bag"
    with pytest.raises(KeyboardInterrupt), BagWriter(path, "mcap") as bag:
        bag.write("/cmd", 1, float64_multi_array_msg([1.0]))
        bag.write("/cmd", 2, float64_multi_array_msg([2.0]))
        raise KeyboardInterrupt
    assert bag_summary(path) == {"/cmd": ("std_msgs/msg/Float64MultiArray", 2)}
    assert [m.data[0] for _, _, m in read_bag(path)] == [1.0, 2.0]


def test_errors(tmp_path: Path) -> None:
    path = tmp_path / "bag"
    with pytest.raises(BagError, match="valid: mcap, sqlite3"):
        BagWriter(path, "rosbag1")  # type: ignore[arg-type]
    with BagWriter(path, "mcap") as bag:
        bag.add_topic("/a", "std_msgs/msg/Float64MultiArray")
        assert bag.add_topic("/a", "std_msgs/Float64MultiArray").topic == "/a"
        with pytest.raises(BagError, match="already in the bag as 'std_msgs/msg/Float64Multi"):
            bag.add_topic("/a", "sensor_msgs/msg/JointState")
        with pytest.raises(BagError, match=r"was not added; added topics: \['/a'\]"):
            bag.write_raw("/b", 1, b"\x00\x01\x00\x00")
        with pytest.raises(BagError, match="negative"):
            bag.write("/a", -1, float64_multi_array_msg([1.0]))
        with pytest.raises(BagError, match=r"no \.msg file was found"):
            bag.add_topic("/c", "no_such_msgs/msg/Thing")
        with pytest.raises(BagError, match="must look like"):
            bag.add_topic("/c", "JointState")
        with pytest.raises(BagError, match="not a rosbags typestore message"):
            bag.write("/a", 1, [1.0])
        with pytest.raises(BagError, match="expected 3"):
            joint_state_msg(0, NAMES, [1.0, 2.0])
        assert bag.counts == {"/a": 0}
    with pytest.raises(BagError, match="exists already"):
        BagWriter(path, "sqlite3")
    with pytest.raises(BagError, match="not open"):
        bag.write_raw("/a", 1, b"\x00\x01\x00\x00")
