"""itasc-replay: bags recorded over real DDS replayed offline and online.

The DDS fixture runs the node and the simulated robot as processes (shared memory, private
domain), moves a target on a small circle for a few seconds with a live gain change, a stale
period (the simulated robot's joint states paused) and a disable/enable, and records
everything, the node's journal included, with the project's Recorder into an MCAP and a
sqlite3 bag at once. Offline, ``itasc-replay --compare`` must recompute every recorded
command from the journal within 1e-12 rad/s and must fail with a modified gain. Online, the
bag is republished into a fresh node and the new recording is compared the same way.

The golden bag (made offline, no DDS) is replayed in ``test_replay_golden.py``, beside the
other tests.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from procs import run_replay

import itasc_ros
from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.tools import replay
from itasc_ros.tools.bagio import BagWriter, bag_summary
from itasc_ros.tools.dds_env import apply_local_dds_env, local_dds_env

pytestmark = pytest.mark.dds

#: [mm] RMS of the tracking, the recording against the online replay (each a DDS run; quiet:
#: well under itasc-replay's default 2 mm): a stale stop of either on a loaded machine adds a
#: few mm; a node tracking another link is > 50 mm apart (the test below).
ONLINE_TRACKING_TOLERANCE_MM = 10.0

ROOT = Path(itasc_ros.__file__).resolve().parents[1]
URDF = ROOT / "urdf" / "panda.urdf"
PARAMS = ROOT / "config" / "panda.yaml"

JS = "/joint_states"
POSE = "/itasc_node/target_pose"
TWIST = "/itasc_node/target_twist"
CMD = "/forward_velocity_controller/commands"
JOURNAL = "/itasc_node/journal"
NODE_PARAMS = "/itasc_node/parameters"
TOPICS = {
    JOURNAL: "std_msgs/msg/Float64MultiArray",
    NODE_PARAMS: "std_msgs/msg/String",
    JS: "sensor_msgs/msg/JointState",
    POSE: "geometry_msgs/msg/PoseStamped",
    TWIST: "geometry_msgs/msg/TwistStamped",
    CMD: "std_msgs/msg/Float64MultiArray",
    "/parameter_events": "rcl_interfaces/msg/ParameterEvent",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
}
CONTROL_RATE = 100.0  # [Hz] node
SIM_RATE = 250.0  # [Hz]
TARGET_RATE = 50.0  # [Hz]
MOTION = 3.0  # [s] target motion
GAIN_CHANGE_AT = 2.0  # [s] constraints.ee.gain 20 -> 30
STALE_AT = 1.0  # [s] the simulated robot's joint states paused for STALE_FOR: stale
STALE_FOR = 0.3  # [s] (input_timeout 0.1 s)
STALE_WAIT = 3.0  # [s] the longest the pause goes on for the node to say 'stale'
DISABLE_AT, ENABLE_AT = 1.6, 1.8  # [s] ~/enable false, then true
RADIUS, SPEED = 0.05, 0.1  # [m], [m/s]
STARTUP = 60.0  # [s]


def _env(domain: int) -> dict[str, str]:
    env = local_dds_env(domain)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as fh:
        return subprocess.Popen(
            args, env=env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )


def _stop(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(10.0)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5.0)


def _node_args() -> list[str]:
    return [
        sys.executable,
        "-m",
        "itasc_ros.ros.itasc_node",
        "--ros-args",
        "--params-file",
        str(PARAMS),
        "-p",
        f"urdf_file:={URDF}",
        "-p",
        f"control_rate:={CONTROL_RATE}",
    ]


class _Client:
    """An rclpy node spun in a thread: target publishers, parameter calls, recorders.

    rosbags' sqlite3 storage may only be used by the thread that opened it, so the bags are
    opened, written (by the recorders' callbacks) and closed in the spin thread: :meth:`call`.
    """

    def __init__(self, name: str) -> None:
        import rclpy
        from geometry_msgs.msg import PoseStamped, TwistStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.pose_pub = self.node.create_publisher(PoseStamped, POSE, qos)
        self.twist_pub = self.node.create_publisher(TwistStamped, TWIST, qos)
        self.status = ""  # the node's last control status (~/status)
        self.reason = ""  # and its reason
        self.node.create_subscription(String, "/itasc_node/status", self._on_status, 10)
        self._stop = threading.Event()
        self._jobs: queue.Queue[tuple[Any, queue.Queue[Any]]] = queue.Queue()
        self._clients: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _on_status(self, msg: Any) -> None:
        status = json.loads(msg.data)
        self.status = str(status.get("status", ""))
        self.reason = str(status.get("reason", ""))

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.01)
            while not self._jobs.empty():
                fn, result = self._jobs.get()
                try:
                    result.put((True, fn()))
                except Exception as exc:  # handed to the caller
                    result.put((False, exc))

    def call(self, fn: Any) -> Any:
        """Run ``fn()`` in the spin thread and return its result."""
        result: queue.Queue[Any] = queue.Queue()
        self._jobs.put((fn, result))
        ok, value = result.get(timeout=30.0)
        if not ok:
            raise value
        return value

    def _service(self, srv_type: Any, name: str) -> Any:
        """One client per service, made and discovered once (not in the timed part)."""
        if name not in self._clients:
            self._clients[name] = self.node.create_client(srv_type, name)
            assert self._clients[name].wait_for_service(timeout_sec=STARTUP)
        return self._clients[name]

    def prepare_services(self) -> None:
        """Discover the node's and the simulated robot's services before the timed part."""
        from rcl_interfaces.srv import SetParameters
        from std_srvs.srv import SetBool

        self._service(SetParameters, "/itasc_node/set_parameters")
        self._service(SetParameters, "/itasc_sim_robot/set_parameters")
        self._service(SetBool, "/itasc_node/enable")

    def set_parameter(self, name: str, value: Any, node: str = "/itasc_node") -> None:
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        client = self._service(SetParameters, f"{node}/set_parameters")
        fut = client.call_async(
            SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        )
        deadline = time.monotonic() + 60.0  # a hang's bound
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fut.done() and fut.result().results[0].successful

    def enable(self, flag: bool) -> None:
        from std_srvs.srv import SetBool

        client = self._service(SetBool, "/itasc_node/enable")
        fut = client.call_async(SetBool.Request(data=flag))
        deadline = time.monotonic() + 60.0  # a hang's bound
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert fut.done() and fut.result().success

    def publish_target(self, t_ns: int, p: np.ndarray, quat: np.ndarray, v: np.ndarray) -> None:
        from geometry_msgs.msg import PoseStamped, TwistStamped

        sec, nsec = divmod(t_ns, 1_000_000_000)
        pose = PoseStamped()
        pose.header.stamp.sec, pose.header.stamp.nanosec = int(sec), int(nsec)
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = map(float, p)
        o = pose.pose.orientation
        o.x, o.y, o.z, o.w = map(float, quat)
        twist = TwistStamped()
        twist.header.stamp = pose.header.stamp
        twist.twist.linear.x, twist.twist.linear.y, twist.twist.linear.z = map(float, v)
        self.pose_pub.publish(pose)
        self.twist_pub.publish(twist)

    def close(self) -> None:
        import rclpy

        self._stop.set()
        self._thread.join(timeout=2.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


@pytest.fixture(scope="module")
def domain() -> int:
    return apply_local_dds_env()


@pytest.fixture(scope="module")
def recorded(domain: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Node + simulated robot over DDS, a target circle, recorded into MCAP and sqlite3."""
    from itasc_ros.tools.record import Recorder

    tmp = tmp_path_factory.mktemp("replay_dds")
    env = _env(domain)
    sim = _start(
        [
            sys.executable,
            "-m",
            "itasc_ros.tools.sim_robot",
            "--ros-args",
            "-p",
            f"urdf_file:={URDF}",
            "-p",
            f"rate:={SIM_RATE}",
        ],
        env,
        tmp / "sim.log",
    )
    node = _start(_node_args(), env, tmp / "node.log")
    client = _Client("test_replay_client")
    bags = {"mcap": tmp / "bag_mcap", "sqlite3": tmp / "bag_sqlite3"}
    writers = {k: BagWriter(p, k) for k, p in bags.items()}  # type: ignore[arg-type]
    recorders: list[Recorder] = []
    try:
        for w in writers.values():
            client.call(w.open)
            recorders.append(client.call(lambda w=w: Recorder(client.node, w, TOPICS)))
        deadline = time.monotonic() + STARTUP
        while not (
            client.pose_pub.get_subscription_count() >= 3
            and all({JS, CMD} <= set(r.subscribed) for r in recorders)
            and all(w.counts.get(JS, 0) > 0 for w in writers.values())
            and all(w.counts.get(JOURNAL, 0) > 0 for w in writers.values())
            # the node has the robot's joint states too (a reader of a participant that starts
            # beside others can stay without a sample for seconds: doc/replay.md)
            and client.status in ("waiting", "active")
            and "joint state" not in client.reason
        ):
            for p, log in ((sim, "sim.log"), (node, "node.log")):
                assert p.poll() is None, (tmp / log).read_text()
            assert time.monotonic() < deadline, (
                "start-up timed out:\n" + (tmp / "node.log").read_text()
            )
            time.sleep(0.05)
        tree = KinematicTree.from_urdf(URDF.read_text())
        home = tree.forward_kinematics(home_pose(tree), "panda_hand")
        quat = spatial.matrix_to_quat(home[:3, :3])
        from itasc_ros.core.paths import path_point

        client.prepare_services()

        def pause_robot() -> None:
            """No joint states for STALE_FOR, and on until the node has said 'stale'.

            The robot's driver stops publishing them (the robot goes on following its
            commands, as a robot does, until the node's stale stop reaches it). A node starved
            of the CPU may not tick during the pause; the states stay paused until it has (at
            most STALE_WAIT more), so that the stale period is recorded. Then on until the
            node is active again and has moved for 0.1 s (at most STALE_WAIT), so that the
            disable that follows stops a moving robot (a 'stopping' ramp), however late the
            'stale' status came.
            """
            sim_robot = "/itasc_sim_robot"
            client.set_parameter("publish_states", False, node=sim_robot)
            time.sleep(STALE_FOR)
            deadline = time.monotonic() + STALE_WAIT
            while client.status != "stale" and time.monotonic() < deadline:
                time.sleep(0.01)
            client.set_parameter("publish_states", True, node=sim_robot)
            deadline = time.monotonic() + STALE_WAIT
            while client.status != "active" and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)

        # In the target's time, in this order, however late a loaded machine is. The target's
        # time stands still while an event blocks (the robot's pause lasts until the node has
        # said 'stale' and is active again): every run publishes MOTION s of the circle.
        events = [
            (STALE_AT, pause_robot),
            (DISABLE_AT, lambda: client.enable(False)),
            (ENABLE_AT, lambda: client.enable(True)),
            (GAIN_CHANGE_AT, lambda: client.set_parameter("constraints.ee.gain", 30.0)),
        ]
        started = due = time.monotonic()
        k = 0
        while True:
            tau = k / TARGET_RATE  # [s] the target's time
            if tau >= MOTION and not events:
                break
            if events and tau >= events[0][0]:
                before = time.monotonic()
                events.pop(0)[1]()
                due += time.monotonic() - before
            p, v = path_point(tau, home[:3, 3], RADIUS, SPEED, "circle")
            client.publish_target(client.node.get_clock().now().nanoseconds, p, quat, v)
            k += 1
            due += 1.0 / TARGET_RATE
            time.sleep(max(0.0, due - time.monotonic()))
        time.sleep(0.3)
        duration = time.monotonic() - started
    finally:
        _stop(node)  # first, as a user would: its zero command and last journal are recorded
        time.sleep(0.3)
        for r in recorders:
            client.call(r.close)
        for w in writers.values():
            client.call(w.close)
        client.close()
        _stop(sim)
    yield {"bags": bags, "domain": domain, "tmp": tmp, "duration": duration}


def test_bags_list_the_expected_topics_and_counts(recorded: dict[str, Any]) -> None:
    summaries = {k: bag_summary(p) for k, p in recorded["bags"].items()}
    for storage, summary in summaries.items():
        for topic, msgtype in TOPICS.items():
            assert summary[topic][0] == msgtype, (storage, topic, summary)
            assert summary[topic][1] > 0, (storage, topic, summary)
        assert summary[NODE_PARAMS][1] == 2  # revision 0 and the gain change
        assert summary[JOURNAL][1] >= 0.3 * summary[CMD][1]  # 10 ms of ticks a message
        # commands at CONTROL_RATE over the run (its pause included; a node starved beside
        # another test worker ticks at a quarter of it: the lower bound says it ran), MOTION s
        # of targets at TARGET_RATE, joint states faster
        most = 2.0 * (recorded["duration"] + 1.0) * CONTROL_RATE
        assert 0.1 * MOTION * CONTROL_RATE < summary[CMD][1] < most, (summary[CMD][1], most)
        assert 0.9 * MOTION * TARGET_RATE < summary[POSE][1] <= MOTION * TARGET_RATE
        assert summary[TWIST][1] == summary[POSE][1]
        assert summary[JS][1] > summary[CMD][1]
    # both recorders saw the same messages (same node, same subscriptions)
    mcap, sqlite = summaries["mcap"], summaries["sqlite3"]
    for topic in (POSE, TWIST):
        assert mcap[topic][1] == sqlite[topic][1]
    assert abs(mcap[CMD][1] - sqlite[CMD][1]) <= 0.05 * mcap[CMD][1]


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_offline_compare_reproduces_every_command(recorded: dict[str, Any], storage: str) -> None:
    bag = recorded["bags"][storage]
    rc, out, res = run_replay(str(bag), "--compare", "--out", str(recorded["tmp"] / storage))
    assert rc == 0, out
    assert res["exact"] and res["commands"] > 100 and res["compared"] == res["commands"], out
    # recorded and replayed by the same build on the same machine: bit-exact, not a tolerance
    assert res["max_abs_diff"] == 0.0 and res["mismatches"] == 0, out
    assert res["compare"]["status_differences"] == 0 and res["compare"]["state_mismatches"] == 0
    assert res["parameter_changes"] == 1  # the live gain change was replayed
    assert "parameter change" in out and "constraints.ee.gain" in out
    counts = res["status_counts"]  # the stale period and the disable/enable were replayed
    assert counts["active"] > 20 and counts["stale"] >= 1 and counts["disabled"] >= 1, counts
    assert counts["stopping"] >= 1, counts  # disabled while moving: a controlled stop
    for png in res["plots"]:
        assert Path(png).stat().st_size > 1000
    # the tracking error of both runs: offline, the replay sees the recorded joint positions
    tr = res["tracking"]
    assert tr["ok"] and tr["tolerance_mm"] == replay.DEFAULT_TRACKING_TOLERANCE_MM
    assert tr["recorded"]["ticks"] == counts["active"] == tr["replayed"]["ticks"], tr
    assert 0.0 < tr["recorded"]["rms_mm"] == tr["replayed"]["rms_mm"] < 20.0, tr
    assert tr["rms_difference_mm"] == 0.0 and res["ok"]
    assert "tracking error" in out and "RMS difference 0.000 mm (threshold 2 mm" in out
    assert "itasc-replay: compare: OK" in out


def test_offline_compare_fails_with_a_modified_gain(recorded: dict[str, Any]) -> None:
    bag = str(recorded["bags"]["mcap"])
    rc, out, res = run_replay(bag, "--compare", "--set", "constraints.ee.gain=21")
    assert rc == 1, out
    assert not res["compare"]["ok"] and res["mismatches"] > 10 and res["max_abs_diff"] > 1e-6
    assert "MISMATCH" in out and "recomputed" in out


def test_online_replay_into_a_fresh_node(recorded: dict[str, Any]) -> None:
    tmp: Path = recorded["tmp"]
    env = _env(recorded["domain"])
    node = _start(_node_args(), env, tmp / "node_online.log")
    try:
        out_bag = tmp / "online_bag"
        rc, out, res = run_replay(
            str(recorded["bags"]["mcap"]),
            "--online",
            "--online-out",
            str(out_bag),
            "--compare",
            "--wait",
            "60",  # a hang's bound: a node starting beside another worker takes > 15 s
            "--tracking-tolerance",
            f"{ONLINE_TRACKING_TOLERANCE_MM:g}",
            env=env,
        )
    finally:
        _stop(node)
    assert rc == 0, out + "\n" + (tmp / "node_online.log").read_text()
    original = bag_summary(recorded["bags"]["mcap"])
    online = bag_summary(out_bag)
    for topic in (POSE, TWIST):
        assert online[topic][1] == original[topic][1]  # every input republished, recorded
    assert online[JS][1] == original[JS][1]
    assert online[CMD][1] > 0.1 * original[CMD][1]  # it ran (a starved node ticks less)
    # the new recording, compared offline: every command, exactly
    assert res["compared"] == res["commands"] == online[CMD][1], out
    assert res["max_abs_diff"] == 0.0, out  # the same build on the same machine: bit-exact
    assert res["parameter_changes"] == 1  # the gain change was made again on the fresh node
    # the tracking error of the recording and of the online run, side by side, alike
    tr = res["tracking"]
    print(f"\nonline replay: tracking {tr}")
    assert tr["ok"] and res["ok"], out
    assert tr["recorded"]["ticks"] > 20 and tr["replayed"]["ticks"] > 20, tr
    assert tr["rms_difference_mm"] <= tr["tolerance_mm"] == ONLINE_TRACKING_TOLERANCE_MM
    assert "recorded (the recording" in out and "replayed (the online run" in out


def test_online_replay_into_a_node_tracking_another_link_fails(recorded: dict[str, Any]) -> None:
    """A node controlling another link reproduces its own commands but tracks ~0.1 m off."""
    tmp: Path = recorded["tmp"]
    env = _env(recorded["domain"])
    node = _start(
        [*_node_args(), "-p", "constraints.ee.link:=panda_link7"], env, tmp / "node_link7.log"
    )
    try:
        rc, out, res = run_replay(
            str(recorded["bags"]["mcap"]),
            *("--online", "--online-out", str(tmp / "online_link7"), "--compare"),
            *("--wait", "60"),
            env=env,
        )
    finally:
        _stop(node)
    assert rc == 1, out + "\n" + (tmp / "node_link7.log").read_text()
    assert res["compare"]["ok"] and res["max_abs_diff"] == 0.0, out  # its own commands: exact
    tr = res["tracking"]
    assert not tr["ok"] and not res["ok"], tr
    assert tr["replayed"]["rms_mm"] > tr["recorded"]["rms_mm"] + 50.0, tr  # link7 vs the hand
    assert "FAILED: the runs do not track alike" in out
    assert "itasc-replay: compare: FAILED (tracking)" in out


def test_a_parameter_request_lost_on_the_way_is_sent_again(dds_domain: int) -> None:
    """A request whose answer never comes is sent again by ``call_with_resends``.

    As a request sent after ``wait_for_service`` but before the server's answer writer matched
    the client (a ROS 2 service is two topics: its answer goes into the void): a real
    ``ListParameters`` server over DDS whose first request is never answered in time (its
    callback is held until the test ends), the next ones at once.
    """
    import rclpy
    from procs import ros_context
    from rcl_interfaces.srv import ListParameters
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    resend = 0.5  # [s]
    release, requests = threading.Event(), []

    def serve(request: Any, response: Any) -> Any:
        requests.append(time.monotonic())
        if len(requests) == 1:
            release.wait(30.0)  # the first answer is lost: it comes after the test
        response.result.names = ["served"]
        return response

    with ros_context(dds_domain) as (context, executor):
        server = rclpy.create_node("answerer", context=context)
        server.create_service(
            ListParameters, "/answerer/list", serve, callback_group=ReentrantCallbackGroup()
        )
        serving = MultiThreadedExecutor(num_threads=2, context=context)
        serving.add_node(server)
        spin = threading.Thread(target=serving.spin, daemon=True)
        spin.start()
        asker = rclpy.create_node("asker", context=context)
        executor.add_node(asker)
        client = asker.create_client(ListParameters, "/answerer/list")
        try:
            assert client.wait_for_service(timeout_sec=20.0)
            t0 = time.monotonic()
            answer = replay.call_with_resends(
                client, ListParameters.Request(depth=0), t0 + 20.0, resend=resend
            )
            elapsed = time.monotonic() - t0
        finally:
            release.set()
            serving.shutdown(timeout_sec=2.0)
            spin.join(timeout=2.0)
    assert answer is not None and list(answer.result.names) == ["served"]
    assert len(requests) >= 2 and elapsed >= resend  # answered when sent again
