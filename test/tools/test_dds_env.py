"""DDS stays in shared memory: no UDP or TCP socket in the node, the simulated robot or here.

``local_dds_env`` sets only ``FASTDDS_BUILTIN_TRANSPORTS=SHM`` and a private domain, and removes
``ROS_AUTOMATIC_DISCOVERY_RANGE`` and ``ROS_LOCALHOST_ONLY`` (with ``LOCALHOST`` rmw_fastrtps
adds a UDP transport of its own). The DDS test starts the node and the simulated robot from a
shell environment that has both set, lets them exchange messages with this process, and then
finds no socket of theirs in the kernel's UDP and TCP tables (``/proc/<pid>/fd`` socket inodes
against ``/proc/net/{udp,udp6,tcp,tcp6}``).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from geometry_msgs.msg import PoseStamped
from procs import node_command, ros_client, start_process, stop_processes
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.tools.dds_env import (
    LOCAL_DDS_KEYS,
    apply_local_dds_env,
    local_dds_env,
    private_domain_id,
)

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0  # [s] discovery and start-up on a loaded 2-core machine
SHELL = {  # what a user's shell may have: each of these would open sockets or leave SHM
    "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
    "ROS_LOCALHOST_ONLY": "1",
    "ROS_DOMAIN_ID": "0",
    "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4",
}
NET_TABLES = ("udp", "udp6", "tcp", "tcp6")


def _inet_socket_inodes() -> dict[int, str]:
    """Inode -> table of every UDP and TCP socket on this machine (``/proc/net/*``)."""
    out: dict[int, str] = {}
    for table in NET_TABLES:
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9:
                out[int(fields[9])] = table
    return out


def _socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets among ``pid``'s open files."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def _inet_sockets_of(pid: int) -> list[str]:
    tables = _inet_socket_inodes()
    return [f"{tables[i]} inode {i}" for i in sorted(_socket_inodes(pid)) if i in tables]


def _hand_target(urdf: Path) -> PoseStamped:
    """A pose 5 cm above the hand at the simulated robot's home pose."""
    tree = KinematicTree.from_urdf_file(urdf)
    t = tree.forward_kinematics(home_pose(tree), "panda_hand")
    msg = PoseStamped()
    msg.header.frame_id = tree.root_link
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = float(t[0, 3]), float(t[1, 3]), float(t[2, 3]) + 0.05
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(t[:3, :3]))
    return msg


def test_the_environment_keeps_only_shm_and_a_private_domain(dds_domain: int) -> None:
    env = local_dds_env(dds_domain, base={"PATH": "/usr/bin", **SHELL})
    assert env["FASTDDS_BUILTIN_TRANSPORTS"] == "SHM"
    assert env["ROS_DOMAIN_ID"] == env["ITASC_PRIVATE_DOMAIN_ID"] == str(dds_domain)
    assert all(110 <= private_domain_id(seed) <= 229 for seed in range(300))
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in env and "ROS_LOCALHOST_ONLY" not in env
    assert env["PATH"] == "/usr/bin"


def test_apply_removes_the_socket_variables_from_this_process(
    monkeypatch: pytest.MonkeyPatch, dds_domain: int
) -> None:
    for key in LOCAL_DDS_KEYS:
        monkeypatch.delenv(key, raising=False)
    for key, value in SHELL.items():
        monkeypatch.setenv(key, value)
    assert apply_local_dds_env(dds_domain) == dds_domain
    assert os.environ["FASTDDS_BUILTIN_TRANSPORTS"] == "SHM"
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE" not in os.environ
    assert "ROS_LOCALHOST_ONLY" not in os.environ


def test_the_socket_check_sees_a_loopback_socket() -> None:
    """The detector itself: a UDP socket of this process, bound on loopback, is found."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        assert any(entry.startswith("udp ") for entry in _inet_sockets_of(os.getpid()))


@pytest.mark.dds
def test_node_and_simulated_robot_open_no_inet_socket_while_they_talk(dds_domain: int) -> None:
    env = local_dds_env(dds_domain, base={**os.environ, **SHELL})
    urdf = REPO / "urdf" / "panda.urdf"
    # the test runner's own sockets before this test's DDS participant exists (pytest-xdist's
    # workers talk to their controller over loopback TCP): only sockets opened since count
    harness = set(_inet_sockets_of(os.getpid()))
    sim = start_process(
        node_command(
            "-p", f"urdf_file:={urdf}", "-p", "rate:=100.0", module="itasc_ros.tools.sim_robot"
        ),
        env,
        name="sim_no_socket",
    )
    node = start_process(
        node_command(
            "--params-file", str(REPO / "config" / "panda.yaml"), "-p", f"urdf_file:={urdf}"
        ),
        env,
        name="node_no_socket",
    )
    try:
        with ros_client(dds_domain, "no_socket_client") as client:
            states = client.collect(JointState, "/joint_states")
            cmds = client.collect(Float64MultiArray, "/forward_velocity_controller/commands")
            target = client.publisher(PoseStamped, "/itasc_node/target_pose")
            client.wait_for(lambda: len(states) > 5, TIMEOUT, "the simulated robot's states")
            client.wait_for_subscribers(target, 1, TIMEOUT)
            target.publish(_hand_target(urdf))
            # the node commands once it has the simulated robot's joint states and the target
            client.wait_for(lambda: len(cmds) > 20, TIMEOUT, "the node's commands")
            time.sleep(0.5)  # the transports are all open by now
            found = {
                "node": _inet_sockets_of(node.pid),
                "sim_robot": _inet_sockets_of(sim.pid),
                "test process": sorted(set(_inet_sockets_of(os.getpid())) - harness),
            }
        assert node.poll() is None and sim.poll() is None
        assert found == {"node": [], "sim_robot": [], "test process": []}, found
    finally:
        stop_processes([node, sim])
