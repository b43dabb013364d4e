"""Faults over DDS: publishers that stop and restart, a robot swap, a joint list that does not
fit, a clock that jumps. The node runs as its own process; every command is checked.

Expected behaviour (what each test asserts):

* joint states stop: one zero command after ``input_timeout``, then silence; a restarted
  publisher (a new node, new DDS writer) makes the commands resume.
* the target publisher restarts (new node, same topic, its stamps an hour older): the node
  holds the last target meanwhile and tracks the new publisher's target at once (a stamp older
  than the last accepted one is out of order only while that one is fresh).
* robot_description changes from the Panda to the UR5:
  - with ``joints`` empty (all joints of the URDF) and no effector link set, the node rebuilds
    on the UR5: one zero command on the Panda's joints, the Panda's target is dropped (another
    robot's root frame), and commands on the UR5's 6 joints follow its joint states and target;
  - with ``joints`` naming the Panda's joints, the UR5 does not fit: the Panda model is dropped
    too (one zero command, then none), ~/status ``no_model`` and an ERROR diagnostic naming
    the missing joints; the Panda's URDF brings the node back.
* ``joints`` does not fit the URDF at start-up: no model, no command, ERROR diagnostic, the node
  stays up (as with a hostile URDF at start-up).
* ``use_sim_time`` and a /clock that jumps back (a looping bag) or forward: no crash, at most
  one zero command per jump (the last inputs were received "in the future" or long ago: stale),
  and commands resume on the joint states that follow the jump.

Every command of every node passes :class:`procs.CommandChecker` (length, finite, within the
URDF velocity limits of the robot commanded at that moment).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from procs import (
    PANDA_URDF,
    REPO,
    CommandChecker,
    RosTestClient,
    allocate_domain,
    client_fixture,
    exit_report,
    read_log,
    start_ros,
    stop_processes,
)
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics import home_of, spatial

pytestmark = pytest.mark.dds

UR5_URDF = REPO / "urdf" / "ur5.urdf"
DOMAIN = allocate_domain()  # this module's own, held for the session (used at import)
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
INPUT_TIMEOUT = 0.25  # [s] of the nodes (a busy machine may delay joint states by 0.1 s)
PANDA_HOME = home_of("panda")
UR5_HOME = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])
PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)
_names = itertools.count()


# =========================================================================== helpers
class Stream:
    """A publisher in its own rclpy node (like another process) sending ``make()`` at ``rate``.

    Closing destroys the node (its DDS writer goes away); a new Stream on the same topic is a
    restarted publisher.
    """

    def __init__(
        self, msg_type: Any, topic: str, make: Callable[[], Any], rate: float, qos: Any = 10
    ) -> None:
        self.node = rclpy.create_node(f"fault_stream_{next(_names)}")
        self.pub = self.node.create_publisher(msg_type, topic, qos)
        self.make = make
        self.period = 1.0 / rate
        self.sent = 0
        self._quit = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._quit.is_set():
            self.pub.publish(self.make())
            self.sent += 1
            time.sleep(self.period)

    def close(self) -> None:
        if not self._quit.is_set():
            self._quit.set()
            self._thread.join(2.0)
            self.node.destroy_node()


def stop_all(processes: list[Any], timeout: float = 10.0) -> list[int]:
    """SIGINT each process once, then wait (SIGKILL after ``timeout`` [s]); the exit codes."""
    return stop_processes(processes, timeout=timeout)


def stamp(seconds: float) -> Time:
    t = Time()
    t.sec = int(seconds // 1)
    t.nanosec = round((seconds - t.sec) * 1e9) % 1_000_000_000
    return t


def wall_stamp() -> float:
    return time.time()


def joint_states(
    names: list[str], q: np.ndarray, clock: Callable[[], float] = wall_stamp
) -> Callable[[], JointState]:
    def make() -> JointState:
        msg = JointState()
        msg.header.stamp = stamp(clock())
        msg.name = list(names)
        msg.position = [float(v) for v in q]
        return msg

    return make


def target_poses(
    goal: np.ndarray, frame: str, clock: Callable[[], float] = wall_stamp
) -> Callable[[], PoseStamped]:
    def make() -> PoseStamped:
        m = PoseStamped()
        m.header.frame_id = frame
        m.header.stamp = stamp(clock())
        p = m.pose.position
        p.x, p.y, p.z = (float(v) for v in goal[:3, 3])
        o = m.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(goal))
        return m

    return make


def offset_goal(tree: KinematicTree, q: np.ndarray, link: str, dp: list[float]) -> np.ndarray:
    """The pose of ``link`` at ``q`` moved by ``dp`` [m] (root frame)."""
    t = tree.forward_kinematics(q, link)
    t[:3, 3] += dp
    return t


def commanded_direction(tree: KinematicTree, q: np.ndarray, link: str, qdot: Any) -> np.ndarray:
    """Unit direction of the linear velocity of ``link`` that ``qdot`` makes at ``q``."""
    v = (tree.jacobian(q, link) @ np.asarray(qdot, dtype=float))[:3]
    return v / np.linalg.norm(v)


class SwapChecker(CommandChecker):
    """A CommandChecker for a node whose robot changes: limits chosen by the command length.

    ``lengths`` records the length of every command in order, so a test can check that the
    node never went back to the old robot's commands.
    """

    def __init__(
        self, client: RosTestClient, limits_by_length: dict[int, np.ndarray], topic: str
    ) -> None:
        self.by_length = {n: np.asarray(v, dtype=float) for n, v in limits_by_length.items()}
        self.lengths: list[int] = []
        super().__init__(client, next(iter(self.by_length.values())), topic)

    def _check(self, msg: Any) -> None:
        n = len(msg.data)
        self.lengths.append(n)
        if n in self.by_length:
            self.limits = self.by_length[n]
        super()._check(msg)


def last_json(store: list[tuple[float, String]]) -> dict[str, Any] | None:
    return json.loads(store[-1][1].data) if store else None


def controller_status(store: list[tuple[float, DiagnosticArray]]) -> DiagnosticStatus | None:
    for _, msg in reversed(list(store)):
        for st in msg.status:
            if st.name.endswith(": controller"):
                return st
    return None


def after(store: list[tuple[float, Any]], t0: float) -> list[Any]:
    return [m for t, m in list(store) if t > t0]


def is_zero(msg: Float64MultiArray) -> bool:
    return not np.any(msg.data)


# =========================================================================== the nodes
NODES: dict[str, list[str]] = {
    # namespace: parameters (besides the common ones)
    "/js": [f"urdf_file:={PANDA_URDF}", "constraints.ee.link:=panda_hand"],
    "/swap_all": [],  # URDF from the topic; joints and effector from the URDF
    "/swap_fixed": [f"joints:={json.dumps(PANDA_JOINTS)}"],
    "/mismatch": [
        f"urdf_file:={PANDA_URDF}",
        'joints:=["panda_joint1", "shoulder_pan_joint", "panda_joint3"]',
    ],
    "/clk": [f"urdf_file:={PANDA_URDF}", "constraints.ee.link:=panda_hand", "use_sim_time:=true"],
    "/odo": [
        f"urdf_file:={PANDA_URDF}",
        "constraints.ee.link:=panda_hand",
        "world_frame:=odom",
        "odom_topic:=/odo/odom",
    ],
}


client = client_fixture(DOMAIN, "fault_test_client")


@pytest.fixture(scope="module")
def trees() -> dict[str, KinematicTree]:
    return {
        "panda": KinematicTree.from_urdf_file(PANDA_URDF),
        "ur5": KinematicTree.from_urdf_file(UR5_URDF),
    }


@pytest.fixture(scope="module")
def nodes(client: RosTestClient, trees: dict[str, KinematicTree]) -> Iterator[dict[str, Any]]:
    """All the module's nodes, started at once (each test uses its namespace)."""
    out: dict[str, Any] = {}
    descriptions = {
        ns: client.publisher(String, f"{ns}/robot_description", LATCHED)
        for ns in ("/swap_all", "/swap_fixed")
    }
    for pub in descriptions.values():  # like robot_state_publisher, before the node starts
        pub.publish(String(data=PANDA_URDF.read_text()))
    panda, ur5 = trees["panda"].velocity_limits, trees["ur5"].velocity_limits
    for ns, params in NODES.items():
        common = ("command_out_topic:=commands", "control_rate:=100.0")
        timeout = f"input_timeout:={INPUT_TIMEOUT}"
        remaps = [f"/diagnostics:={ns}/diagnostics"]
        out[ns] = {
            "checker": (
                SwapChecker(client, {7: panda, 6: ur5}, f"{ns}/commands")
                if ns == "/swap_all"  # the only node whose commanded robot changes
                else CommandChecker(client, panda, f"{ns}/commands")
            ),
            "cmds": client.collect(Float64MultiArray, f"{ns}/commands", 1000),
            "status": client.collect(String, f"{ns}/itasc_node/status"),
            "diags": client.collect(DiagnosticArray, f"{ns}/diagnostics"),
            "description": descriptions.get(ns),
            "proc": start_ros(DOMAIN, *common, *params, timeout, ns=ns, remaps=remaps),
        }
    try:
        for ns, n in out.items():
            client.wait_for(partial(len, n["status"]), TIMEOUT, f"the status of {ns}")
        yield out
    finally:
        codes = stop_all([n["proc"] for n in out.values()])
        for ns, n in out.items():
            print(ns, read_log(n["proc"])[-2500:])
        for ns, n in out.items():
            checker: CommandChecker = n["checker"]
            assert checker.bad == [], (ns, checker.bad[:5])  # no bad command, ever
        exited = dict(zip(out, codes, strict=True))  # every node was still up and exited cleanly
        assert set(exited.values()) == {0}, exit_report(
            {ns: n["proc"] for ns, n in out.items()}, codes
        )


def wait_moving(client: RosTestClient, node: dict[str, Any], t0: float, what: str) -> Any:
    """The first non-zero command received after ``t0``."""

    def moving() -> Any:
        return next((m for m in after(node["cmds"], t0) if not is_zero(m)), None)

    return client.wait_for(moving, TIMEOUT, what)


def odometry(
    pose: Callable[[], np.ndarray], frame: str = "odom", clock: Callable[[], float] = wall_stamp
) -> Callable[[], Odometry]:
    """Odometry messages of the base at ``pose()`` (at rest), stamped now."""

    def make() -> Odometry:
        m = Odometry()
        m.header.frame_id, m.child_frame_id = frame, "panda_link0"
        m.header.stamp = stamp(clock())
        t = pose()
        p = m.pose.pose.position
        p.x, p.y, p.z = (float(v) for v in t[:3, 3])
        o = m.pose.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(t))
        return m

    return make


# =========================================================================== tests
def test_joint_state_publisher_stops_and_restarts(
    client: RosTestClient, nodes: dict[str, Any], trees: dict[str, KinematicTree]
) -> None:
    node, tree = nodes["/js"], trees["panda"]
    goal = offset_goal(tree, PANDA_HOME, "panda_hand", [0.05, 0.0, 0.0])
    target = Stream(
        PoseStamped, "/js/itasc_node/target_pose", target_poses(goal, "panda_link0"), 20
    )
    js = Stream(JointState, "/js/joint_states", joint_states(PANDA_JOINTS, PANDA_HOME), 100)
    try:
        wait_moving(client, node, time.monotonic(), "commands")
        js.close()  # the publisher's process dies
        t_stop = time.monotonic()

        def since_stop() -> list[tuple[float, Any]]:
            return [(t, m) for t, m in list(node["cmds"]) if t > t_stop]

        # waited for: this process may take the commands late (starved beside another worker)
        client.wait_for(lambda: since_stop() and is_zero(since_stop()[-1][1]), TIMEOUT, "a zero")
        time.sleep(1.0)
        cmds = since_stop()
        zeros = [i for i, (_, m) in enumerate(cmds) if is_zero(m)]
        assert zeros == [len(cmds) - 1], [list(m.data) for _, m in cmds][-5:]  # one, the last
        # zero soon after the timeout (as this process took it: up to 1.5 s late measured)
        assert cmds[-1][0] - t_stop < INPUT_TIMEOUT + 2.5
        client.wait_for(
            lambda: (st := last_json(node["status"])) is not None and st["status"] == "stale",
            TIMEOUT,
            "the status stale",
        )
        js = Stream(JointState, "/js/joint_states", joint_states(PANDA_JOINTS, PANDA_HOME), 100)
        t_restart = time.monotonic()
        first = wait_moving(client, node, t_restart, "commands from the restarted publisher")
        assert np.abs(first.data).max() > 0.0
        assert all(not is_zero(m) for m in after(node["cmds"], t_restart))
    finally:
        js.close()
        target.close()


def test_target_publisher_restarts_with_older_stamps(
    client: RosTestClient, nodes: dict[str, Any], trees: dict[str, KinematicTree]
) -> None:
    node, tree = nodes["/js"], trees["panda"]
    js = Stream(JointState, "/js/joint_states", joint_states(PANDA_JOINTS, PANDA_HOME), 100)
    goal_a = offset_goal(tree, PANDA_HOME, "panda_hand", [0.05, 0.0, 0.0])
    goal_b = offset_goal(tree, PANDA_HOME, "panda_hand", [0.0, -0.04, 0.03])
    topic = "/js/itasc_node/target_pose"
    target = Stream(PoseStamped, topic, target_poses(goal_a, "panda_link0"), 20)
    try:
        t0 = time.monotonic()
        wait_moving(client, node, t0, "commands")
        time.sleep(0.3)
        direction = commanded_direction(tree, PANDA_HOME, "panda_hand", node["checker"].last)
        assert direction @ np.array([1.0, 0.0, 0.0]) > 0.99  # towards goal A
        target.close()  # the target publisher's process dies: the target is held
        t_gone = time.monotonic()
        time.sleep(0.6)
        client.wait_for(lambda: len(after(node["cmds"], t_gone)) > 20, TIMEOUT, "commands")
        held = after(node["cmds"], t_gone)
        assert not any(is_zero(m) for m in held)
        direction = commanded_direction(tree, PANDA_HOME, "panda_hand", held[-1].data)
        assert direction @ np.array([1.0, 0.0, 0.0]) > 0.99  # still towards goal A
        # The restarted publisher stamps an hour in the past (another clock): accepted anyway.
        old_clock = lambda: time.time() - 3600.0  # noqa: E731
        target = Stream(PoseStamped, topic, target_poses(goal_b, "panda_link0", old_clock), 20)
        want = np.array([0.0, -0.04, 0.03]) / np.linalg.norm([0.0, -0.04, 0.03])

        def towards_b() -> bool:
            last = node["checker"].last
            return commanded_direction(tree, PANDA_HOME, "panda_hand", last) @ want > 0.99

        client.wait_for(towards_b, TIMEOUT, "commands towards the restarted publisher's target")
        st = last_json(node["status"])
        assert st is not None and st["status"] == "active", st
    finally:
        target.close()
        js.close()


def test_robot_description_changes_to_another_robot(
    client: RosTestClient, nodes: dict[str, Any], trees: dict[str, KinematicTree]
) -> None:
    """Panda -> UR5 on two nodes: one follows (joints from the URDF), one goes idle."""
    panda, ur5 = trees["panda"], trees["ur5"]
    flex, fixed = nodes["/swap_all"], nodes["/swap_fixed"]
    panda_goal = offset_goal(panda, PANDA_HOME, "panda_hand", [0.05, 0.0, 0.0])
    ur5_goal = offset_goal(ur5, UR5_HOME, "tool0", [0.0, 0.05, 0.0])
    streams: dict[tuple[str, str], Stream] = {}

    def robot(ns: str, which: str) -> None:
        """(Re)start the joint state and target publishers of ``ns`` for robot ``which``."""
        for kind in ("js", "target"):
            old = streams.pop((ns, kind), None)
            if old is not None:
                old.close()
        if which == "panda":
            js = joint_states(PANDA_JOINTS, PANDA_HOME)
            target = target_poses(panda_goal, "panda_link0")
        else:
            js = joint_states(ur5.joint_names, UR5_HOME)
            target = target_poses(ur5_goal, "base_link")
        streams[ns, "js"] = Stream(JointState, f"{ns}/joint_states", js, 100)
        streams[ns, "target"] = Stream(PoseStamped, f"{ns}/itasc_node/target_pose", target, 20)

    try:
        for ns in ("/swap_all", "/swap_fixed"):
            robot(ns, "panda")
        t0 = time.monotonic()
        for n in (flex, fixed):
            wait_moving(client, n, t0, "Panda commands")
            # the checker's own subscription may get the command a moment after "cmds"
            checker = n["checker"]
            client.wait_for(lambda c=checker: c.last is not None, TIMEOUT, "checked commands")
            last = checker.last
            assert len(last) == 7
        # The description changes to the UR5 (the Panda's inputs keep coming for now).
        t_swap = time.monotonic()
        for n in (flex, fixed):
            n["description"].publish(String(data=UR5_URDF.read_text()))
        client.wait_for(
            lambda: "model 'ur5' from the topic" in read_log(flex["proc"]), TIMEOUT, "UR5 model"
        )
        client.wait_for(
            lambda: (s := last_json(fixed["status"])) and s["status"] == "no_model",
            TIMEOUT,
            "the fixed-joints node idle",
        )
        time.sleep(0.5)
        for n in (flex, fixed):  # one zero command on the Panda's joints, the last one
            cmds = after(n["cmds"], t_swap)  # (motion sent before the swap may still arrive)
            assert {len(m.data) for m in cmds} == {7}, [len(m.data) for m in cmds]
            zeros = [i for i, m in enumerate(cmds) if is_zero(m)]
            assert zeros == [len(cmds) - 1], [list(m.data) for m in cmds]
        st = last_json(flex["status"])
        assert st is not None and st["status"] == "waiting", st  # no UR5 joint state yet
        assert (
            "is not a URDF link" in st["last_rejection"]
            or "lacks joints" in (st["last_rejection"])
        ), st  # the Panda's inputs do not fit the UR5
        # The robot is swapped too: the flexible node commands the UR5's six joints.
        for ns in ("/swap_all", "/swap_fixed"):
            robot(ns, "ur5")
        t_ur5 = time.monotonic()
        first = wait_moving(client, flex, t_ur5, "UR5 commands")
        assert len(first.data) == 6
        time.sleep(0.3)
        direction = commanded_direction(ur5, UR5_HOME, "tool0", flex["checker"].last)
        assert direction @ np.array([0.0, 1.0, 0.0]) > 0.99  # towards the UR5's target
        lengths = list(flex["checker"].lengths)
        assert set(lengths[lengths.index(6) :]) == {6}  # never back to the Panda's commands
        # The node with the Panda's joint list stays idle on the UR5 and says why.
        assert sum(is_zero(m) for m in after(fixed["cmds"], t_swap)) == 1
        assert is_zero(after(fixed["cmds"], t_swap)[-1])
        st = last_json(fixed["status"])
        assert st is not None and st["status"] == "no_model"
        for part in (
            "URDF from the topic rejected (model 'panda' dropped",
            "robot 'ur5' does not fit the configuration",
            "are not movable joints of the URDF; joints are: shoulder_pan_joint",
        ):
            assert part in st["reason"], (part, st["reason"])
        diag = controller_status(fixed["diags"])
        assert diag is not None and diag.level == DiagnosticStatus.ERROR, diag
        assert "robot 'ur5' does not fit" in diag.message
        # The Panda comes back: its description brings the fixed node back to work.
        robot("/swap_fixed", "panda")
        t_back = time.monotonic()
        fixed["description"].publish(String(data=PANDA_URDF.read_text()))
        first = wait_moving(client, fixed, t_back, "Panda commands again")
        assert len(first.data) == 7
        st = client.wait_for(
            lambda: (s := last_json(fixed["status"])) and s["status"] == "active" and s,
            TIMEOUT,
            "status active",
        )
        assert st["urdf_error"] == "" and st["urdf_rejections"] == 1, st
    finally:
        for s in streams.values():
            s.close()
    assert flex["proc"].poll() is None and fixed["proc"].poll() is None


def test_joint_list_that_does_not_fit_the_urdf(
    client: RosTestClient, nodes: dict[str, Any], trees: dict[str, KinematicTree]
) -> None:
    node = nodes["/mismatch"]
    goal = offset_goal(trees["panda"], PANDA_HOME, "panda_hand", [0.05, 0.0, 0.0])
    js = Stream(JointState, "/mismatch/joint_states", joint_states(PANDA_JOINTS, PANDA_HOME), 100)
    target = Stream(PoseStamped, "/mismatch/itasc_node/target_pose", target_poses(goal, ""), 20)
    try:
        time.sleep(1.0)  # inputs flow; nothing may be commanded
        assert node["checker"].snapshot() == (0, 0, 0)
        st = last_json(node["status"])
        assert st is not None and st["status"] == "no_model", st
        for part in (
            "URDF from the file rejected (no model",
            "robot 'panda' does not fit the configuration",
            "joints ['shoulder_pan_joint'] are not movable joints of the URDF",
            "joints are: panda_joint1, panda_joint2",
        ):
            assert part in st["reason"], (part, st["reason"])
        diag = client.wait_for(lambda: controller_status(node["diags"]), TIMEOUT, "diagnostics")
        assert diag.level == DiagnosticStatus.ERROR and "does not fit" in diag.message
        assert "shoulder_pan_joint" in read_log(node["proc"])
        assert node["proc"].poll() is None
    finally:
        target.close()
        js.close()


class SimClock:
    """A simulated time [s] published on /clock at 200 Hz; ``jump`` moves it like a bag."""

    def __init__(self, start: float) -> None:
        self._offset = start - time.monotonic()
        self._lock = threading.Lock()
        self.stream = Stream(Clock, "/clock", self._message, 200)

    def now(self) -> float:
        with self._lock:
            return time.monotonic() + self._offset

    def jump(self, seconds: float) -> None:
        with self._lock:
            self._offset += seconds

    def _message(self) -> Clock:
        return Clock(clock=stamp(self.now()))


def test_sim_clock_jumps_back_and_forward(
    client: RosTestClient, nodes: dict[str, Any], trees: dict[str, KinematicTree]
) -> None:
    node, tree = nodes["/clk"], trees["panda"]
    clock = SimClock(1000.0)
    goal = offset_goal(tree, PANDA_HOME, "panda_hand", [0.05, 0.0, 0.0])
    js = Stream(
        JointState, "/clk/joint_states", joint_states(PANDA_JOINTS, PANDA_HOME, clock.now), 100
    )
    target = Stream(
        PoseStamped, "/clk/itasc_node/target_pose", target_poses(goal, "", clock.now), 20
    )
    try:
        wait_moving(client, node, time.monotonic(), "commands on sim time")
        sim_stamp = client.wait_for(
            lambda: node["diags"] and node["diags"][-1][1].header.stamp.sec, TIMEOUT, "diags"
        )
        assert 900 < sim_stamp < 1100  # the node's clock is the simulated one
        for jump in (-990.0, +500.0, -400.0):  # a bag looping, skipping ahead, looping again
            time.sleep(0.5)
            t_jump = time.monotonic()
            clock.jump(jump)
            time.sleep(1.0)
            cmds = after(node["cmds"], t_jump)
            zeros = [i for i, m in enumerate(cmds) if is_zero(m)]
            assert len(zeros) <= 1, (jump, len(zeros))  # at most one zero per jump
            assert len(cmds) > 50 and not is_zero(cmds[-1]), (jump, len(cmds))  # resumed
            if zeros:  # the zero came first, then motion only
                # near the jump: the /clock message may reach the node a few tens of
                # commands late on a loaded machine (100 Hz here: 0.5 s at most)
                assert zeros[0] < 50, (jump, zeros)
            st = last_json(node["status"])
            assert st is not None and st["status"] == "active", (jump, st)
            assert node["proc"].poll() is None
            print(f"jump {jump:+.0f} s: {len(zeros)} zero command(s), {len(cmds)} commands in 1 s")
        print(f"zero commands at the jumps: {node['checker'].zeros}")
    finally:
        target.close()
        js.close()
        clock.stream.close()


def test_hostile_odometry_never_moves_the_robot_where_good_inputs_do_not(
    client: RosTestClient, nodes: dict[str, Any], trees: dict[str, KinematicTree]
) -> None:
    """A world target held from good odometry; NaN, jumps, a wrong frame, old stamps, a stop.

    Each hostile kind is published alone (the good publisher paused, then resumed): the node
    refuses it, keeps the last good base pose, every command stays finite and within the
    limits and the hand goes nowhere the good inputs do not ask; stale odometry gives one zero
    then silence, and commands resume when it comes back.
    """
    node, tree = nodes["/odo"], trees["panda"]
    base = np.eye(4)
    base[:3, 3] = [1.0, 2.0, 0.0]  # the base at rest somewhere in odom
    goal = base @ offset_goal(tree, PANDA_HOME, "panda_hand", [0.04, 0.0, 0.0])
    js = Stream(JointState, "/odo/joint_states", joint_states(PANDA_JOINTS, PANDA_HOME), 100)
    good = Stream(Odometry, "/odo/odom", odometry(lambda: base), 100)
    target = Stream(PoseStamped, "/odo/itasc_node/target_pose", target_poses(goal, "odom"), 20)
    hostile: list[tuple[str, Callable[[], Odometry]]] = []
    for kind in ("nan", "jump", "frame", "old"):
        moved = base.copy()
        if kind == "nan":
            moved[0, 3] = float("nan")
        elif kind == "jump":
            moved[0, 3] += 3.0
        make = odometry(
            lambda m=moved: m,
            frame="map" if kind == "frame" else "odom",
            clock=(lambda: wall_stamp() - 60.0) if kind == "old" else wall_stamp,
        )
        hostile.append((kind, make))
    try:
        first = wait_moving(client, node, time.monotonic(), "commands toward the world target")
        expected = commanded_direction(tree, PANDA_HOME, "panda_hand", first.data)
        assert expected[0] > 0.9  # toward +x of the base (the target 4 cm ahead)
        for kind, make in hostile:
            good.close()
            bad = Stream(Odometry, "/odo/odom", make, 100)
            t0 = time.monotonic()
            time.sleep(0.15)  # less than input_timeout: the last good odometry still holds
            bad.close()
            for m in after(node["cmds"], t0):  # never a command toward the hostile pose
                if not is_zero(m):
                    d = commanded_direction(tree, PANDA_HOME, "panda_hand", m.data)
                    assert d @ expected > 0.9, (kind, list(m.data))
            good = Stream(Odometry, "/odo/odom", odometry(lambda: base), 100)
            time.sleep(0.2)
        # Odometry stamped 3/4 of input_timeout behind the joint states (a slow source; its
        # first messages, older than the last good one, refused as out of order): taken,
        # fresh by its reception, the base moved on by its twist over input_timeout / 2 of
        # it, and warned about; never a command toward elsewhere.
        good.close()
        lag = 0.75 * INPUT_TIMEOUT
        late = Stream(
            Odometry, "/odo/odom", odometry(lambda: base, clock=lambda: wall_stamp() - lag), 100
        )
        t0 = time.monotonic()
        time.sleep(lag + 0.3)
        late.close()
        for m in after(node["cmds"], t0):
            if not is_zero(m):
                d = commanded_direction(tree, PANDA_HOME, "panda_hand", m.data)
                assert d @ expected > 0.9, ("late", list(m.data))
        good = Stream(Odometry, "/odo/odom", odometry(lambda: base), 100)
        time.sleep(0.2)
        good.close()  # odometry stops: stale, one zero, then silence
        t_stop = time.monotonic()
        time.sleep(INPUT_TIMEOUT + 1.0)
        cmds = [m for m in after(node["cmds"], t_stop)]
        # After the last motion: one zero, then silence. (Odometry the test's stream sent late
        # before it stopped, on a loaded machine, may give a stale zero and a resumption first:
        # each such zero is followed by motion, so it is not in this tail.)
        moving = [i for i, m in enumerate(cmds) if not is_zero(m)]
        tail = cmds[moving[-1] + 1 :] if moving else cmds
        assert len(tail) == 1 and is_zero(tail[0]), (len(cmds), len(tail))
        st = last_json(node["status"])
        assert st is not None and st["status"] == "stale", st
        good = Stream(Odometry, "/odo/odom", odometry(lambda: base), 100)
        wait_moving(client, node, time.monotonic(), "commands once the odometry is back")
    finally:
        for stream in (js, good, target):
            stream.close()
    log = read_log(node["proc"])
    assert "odometry" in log and "Traceback" not in log
    assert "odometry behind: " in log, log[-3000:]  # the late odometry, warned about
