"""itasc_node over real DDS, run as its own process with the console script's entry point.

Oracles: the panda's forward kinematics and Jacobian (the target is reached; a command maps to
the Cartesian velocity the constraint asks for, which a wrong joint order would break), the
simulated robot (``python -m itasc_ros.tools.sim_robot``) closing the loop for each command type,
and the node's own ROS interfaces (/diagnostics, ~/status, the parameter services).

Every process runs shared-memory DDS in this module's private domain; each test uses its own
namespace so that the processes of different tests never see each other's topics.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from procs import (
    PANDA_URDF,
    SIM_ROBOT_MODULE,
    RosTestClient,
    StaticRobot,
    allocate_domain,
    client_fixture,
    fifo_permitted,
    read_log,
    running,
    start_panda_node,
    start_ros,
    stop_process,
    stop_processes,
    thread_policies,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from itasc_ros.core import KinematicTree
from itasc_ros.core.control.settings import default
from itasc_ros.core.kinematics import home_of, spatial
from itasc_ros.ros.conversions import command_velocities

pytestmark = pytest.mark.dds

DOMAIN = allocate_domain()  # this module's own, held for the session (used at import)
HOME = home_of("panda")
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
INPUT_TIMEOUT = default("input_timeout")  # [s] the node's, as every node here runs it
# The module node commands the joints in this order (not the URDF's) ...
JOINT_ORDER = [
    "panda_joint7",
    "panda_joint2",
    "panda_joint5",
    "panda_joint1",
    "panda_joint4",
    "panda_joint6",
    "panda_joint3",
]
# ... and the fake robot publishes them in yet another order, with extra joints.
JS_ORDER = [
    "panda_finger_joint1",
    "panda_joint3",
    "panda_joint1",
    "panda_joint2",
    "panda_joint6",
    "panda_finger_joint2",
    "panda_joint4",
    "panda_joint7",
    "panda_joint5",
]


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(PANDA_URDF)


client = client_fixture(DOMAIN, "itasc_node_test_client")


def start_node(ns: str, *params: str, urdf: bool = True) -> Any:
    return start_panda_node(DOMAIN, ns, *params, urdf=urdf)


def pose_msg(t: np.ndarray, frame: str = "panda_link0") -> PoseStamped:
    m = PoseStamped()
    m.header.frame_id = frame
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in t[:3, 3])
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(t))
    return m


def goal_pose(tree: KinematicTree, q: np.ndarray, dp: list[float], dw: list[float]) -> np.ndarray:
    t = tree.forward_kinematics(q, "panda_hand")
    t[:3, 3] += dp
    t[:3, :3] = spatial.so3_exp(np.array(dw)) @ t[:3, :3]
    return t


def hand_errors(tree: KinematicTree, q: np.ndarray, goal: np.ndarray) -> tuple[float, float]:
    t = tree.forward_kinematics(q, "panda_hand")
    return (
        float(np.linalg.norm(t[:3, 3] - goal[:3, 3])),
        float(np.linalg.norm(spatial.so3_log(goal[:3, :3] @ t[:3, :3].T))),
    )


def home_by_name() -> dict[str, float]:
    return {f"panda_joint{i + 1}": float(v) for i, v in enumerate(HOME)} | {
        "panda_finger_joint1": 0.02,
        "panda_finger_joint2": 0.02,
    }


def latest_diagnostic(client: RosTestClient, name: str = "itasc_node: controller") -> Any:
    for msg in reversed(client.received("/diagnostics")):
        for status in msg.status:
            if status.name == name:
                return status
    return None


def wait_diagnostic(client: RosTestClient, text: str, timeout: float = TIMEOUT) -> Any:
    """The first /diagnostics status (WARN or worse) whose message contains ``text``."""

    def find() -> Any:
        for msg in client.received("/diagnostics"):
            for st in msg.status:
                if (
                    st.name == "itasc_node: controller"
                    and text in st.message
                    and st.level >= b"\x01"
                ):
                    return st
        return None

    return client.wait_for(find, timeout, f"a diagnostic with {text!r}")


def set_params(client: RosTestClient, node: str, **values: Any) -> list[Any]:
    req = SetParameters.Request()
    for name, v in values.items():
        pv = ParameterValue()
        if isinstance(v, float):
            pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, v
        else:
            pv.type, pv.string_value = ParameterType.PARAMETER_STRING, str(v)
        req.parameters.append(ParameterMsg(name=name.replace("__", "."), value=pv))
    return list(client.call(SetParameters, f"{node}/set_parameters", req).results)


# =========================================================================== the module node
@pytest.fixture(scope="module")
def module_node(client: RosTestClient) -> Iterator[dict[str, Any]]:
    """A node in /m commanding JOINT_ORDER, with this process as a static robot."""
    client.collect(DiagnosticArray, "/diagnostics")
    cmds = client.collect(Float64MultiArray, "/m/commands")
    params = ("control_rate:=200.0", f"joints:={json.dumps(JOINT_ORDER)}")
    with running(start_node("/m", *params)) as proc:
        robot = StaticRobot(client, "/m/joint_states", JS_ORDER, home_by_name()).start()
        target = client.publisher(PoseStamped, "/m/itasc_node/target_pose")
        try:
            client.wait_for_subscribers(target, 1, TIMEOUT)
            yield {"proc": proc, "robot": robot, "target": target, "cmds": cmds}
        finally:
            robot.close()


def fresh_commands(client: RosTestClient, count: int = 5, timeout: float = TIMEOUT) -> list[Any]:
    client.clear("/m/commands")
    return client.wait_for(
        lambda: (lambda r: r if len(r) >= count else None)(client.received("/m/commands")),
        timeout,
        f"{count} commands",
    )


def zero_then_silence(client: RosTestClient, since: float, quiet: float = 0.5) -> list[Any]:
    """The commands received after ``since`` [s, monotonic], once the last is a zero and
    ``quiet`` [s] more passed without another: waited for, as this process may take them late
    (starved beside another test worker)."""

    def after() -> list[Any]:
        return [m for t, m in list(client.messages["/m/commands"]) if t > since]

    client.wait_for(lambda: after() and not np.any(after()[-1].data), TIMEOUT, "a zero command")
    time.sleep(quiet)
    return after()


def settled_speed(client: RosTestClient, expected: float | None = None) -> float:
    """The largest joint speed [rad/s] of the commands once 20 in a row are within 2 % of
    ``expected`` (None: of each other): the command after a change, whenever this process
    receives it (the robot is static, so the command settles)."""

    def speeds() -> list[float] | None:
        s = [float(np.abs(m.data).max()) for m in client.received("/m/commands")[-20:]]
        at = s[-1] if expected is None and s else expected
        near = len(s) == 20 and all(v == pytest.approx(at, rel=0.02) for v in s)
        return s if near else None

    client.clear("/m/commands")
    try:
        return float(RosTestClient.wait_for(speeds, TIMEOUT, "the speed")[-1])
    except TimeoutError:
        last = [float(np.abs(m.data).max()) for m in client.received("/m/commands")[-5:]]
        raise AssertionError(f"the command's speed did not settle at {expected}: {last}") from None


def send_goal(m: dict[str, Any], goal: np.ndarray, frame: str = "panda_link0") -> None:
    m["target"].publish(pose_msg(goal, frame))
    time.sleep(0.1)  # let the node take it before the commands are looked at


def test_command_order_follows_joints_with_extra_and_reordered_joint_states(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    dx = np.array([0.01, -0.005, 0.004])
    send_goal(module_node, goal_pose(tree, HOME, list(dx), [0, 0, 0]))
    jac = tree.jacobian(HOME, "panda_hand")

    def moves_at_k_dx() -> tuple[np.ndarray] | None:
        """The last command, once read back in the URDF order by name it moves the hand at
        K * dx (K = 20, no rotation): the step's straight-line reference has arrived (waited
        for: beside another test worker the 80th command once did not move it so yet)."""
        cmds = client.received("/m/commands")
        if not cmds:
            return None
        data = np.asarray(cmds[-1].data)
        if data.shape != (7,) or not np.all(np.isfinite(data)):
            return (data,)  # judged below
        twist = jac @ np.array([data[JOINT_ORDER.index(n)] for n in tree.joint_names])
        near = np.allclose(twist[:3], 20.0 * dx, atol=2e-3) and np.allclose(
            twist[3:], 0.0, atol=2e-3
        )
        return (data,) if near else None

    fresh_commands(client, 5)
    (qdot_cmd,) = client.wait_for(moves_at_k_dx, TIMEOUT, "a command moving the hand at K dx")
    assert qdot_cmd.shape == (7,) and np.all(np.isfinite(qdot_cmd))
    # The same command read in the URDF order would move the hand elsewhere.
    wrong = tree.jacobian(HOME, "panda_hand") @ qdot_cmd
    assert np.linalg.norm(wrong[:3] - 20.0 * dx) > 0.05


def test_stale_joint_states_one_zero_then_silence(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    robot = module_node["robot"]
    send_goal(module_node, goal_pose(tree, HOME, [0.02, 0, 0], [0, 0, 0]))
    assert np.abs(fresh_commands(client)[-1].data).max() > 0.0
    try:
        robot.stop()
        stopped = time.monotonic()
        after = zero_then_silence(client, stopped)  # input_timeout 0.1 s, then 0.5 s more
        zeros = [i for i, m in enumerate(after) if not np.any(m.data)]
        assert len(zeros) == 1, [list(m.data) for m in after]
        assert zeros[0] == len(after) - 1  # the zero is the last command: then silence
    finally:
        robot.start()
    assert np.abs(fresh_commands(client)[-1].data).max() > 0.0  # fresh input: moving again
    # The transitions are logged once each: stale (with the zero), then active again.
    RosTestClient.wait_for(
        lambda: "control active" in read_log(module_node["proc"]).split("control stale")[-1],
        5.0,
        "the log line of the recovery",
    )
    log = read_log(module_node["proc"])
    assert "control stale: " in log and "(zero command sent)" in log


def test_enable_false_publishes_zeros_then_silence(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    send_goal(module_node, goal_pose(tree, HOME, [0.0, 0.02, 0], [0, 0, 0]))
    assert np.abs(fresh_commands(client)[-1].data).max() > 0.0
    try:
        t_off = time.monotonic()
        res = client.call(SetBool, "/m/itasc_node/enable", SetBool.Request(data=False))
        assert res.success and res.message == "disabled: one zero command, then silence"
        after = zero_then_silence(client, t_off, 0.4)
        assert after and not np.any(after[-1].data)
        assert sum(1 for m in after if not np.any(m.data)) == 1
        client.clear("/m/commands")
        time.sleep(0.3)
        assert client.received("/m/commands") == []
    finally:
        assert client.call(SetBool, "/m/itasc_node/enable", SetBool.Request(data=True)).success
    assert np.abs(fresh_commands(client)[-1].data).max() > 0.0


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("nan_target", "position must be 3 finite values"),
        ("unknown_frame", "is not a URDF link"),
        ("nan_joint", "non-finite positions for ['panda_joint3']"),
        ("missing_joint", "lacks joints ['panda_joint5']"),
    ],
)
def test_bad_input_rejected_with_a_diagnostic_and_no_nan(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree, case: str, reason: str
) -> None:
    robot = module_node["robot"]
    good = goal_pose(tree, HOME, [0.0, 0.0, 0.02], [0, 0, 0])
    send_goal(module_node, good)
    fresh_commands(client)
    client.clear("/diagnostics")
    t0 = time.monotonic()
    try:
        if case == "nan_target":
            bad = good.copy()
            bad[1, 3] = math.nan
            send_goal(module_node, bad)
        elif case == "unknown_frame":
            send_goal(module_node, good, frame="panda_gripper")
        elif case == "nan_joint":
            robot.positions["panda_joint3"] = math.nan
        else:
            robot.names = [n for n in JS_ORDER if n != "panda_joint5"]
        status = wait_diagnostic(client, reason)
        assert reason in dict((kv.key, kv.value) for kv in status.values)["last_rejection"]
        if case in ("nan_joint", "missing_joint"):  # joint states rejected: stale, one zero
            cmds = zero_then_silence(client, t0, 0.3)
        else:
            time.sleep(0.3)
            cmds = [m for t, m in list(client.messages["/m/commands"]) if t > t0]
        assert module_node["proc"].poll() is None  # still up
    finally:
        robot.positions = home_by_name()
        robot.names = list(JS_ORDER)
    assert cmds and all(np.all(np.isfinite(m.data)) for m in cmds)
    if case in ("nan_joint", "missing_joint"):  # joint states rejected: stale, one zero
        assert not np.any(cmds[-1].data)
        assert sum(1 for m in cmds if not np.any(m.data)) == 1
    # The node keeps working on good input.
    send_goal(module_node, good)
    last = fresh_commands(client)[-1]
    assert np.abs(last.data).max() > 0.0


def test_live_gain_change_and_rejected_values(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    send_goal(module_node, goal_pose(tree, HOME, [0.01, 0.0, 0.0], [0, 0, 0]))
    speed_20 = settled_speed(client)  # past the step's reference
    try:
        assert [
            r.successful for r in set_params(client, "/m/itasc_node", constraints__ee__gain=5.0)
        ] == [True]
        # The robot is static, so the command is the convergence speed: 4x slower (once the
        # command has decelerated within the joints' limits).
        settled_speed(client, speed_20 / 4.0)
        (out_of_range,) = set_params(client, "/m/itasc_node", control_rate=5000.0)
        assert not out_of_range.successful and "control_rate" in out_of_range.reason
        (negative,) = set_params(client, "/m/itasc_node", constraints__ee__gain=-1.0)
        assert not negative.successful and negative.reason
        (solver,) = set_params(client, "/m/itasc_node", solver="svd")
        assert not solver.successful and "solvers are: dls, sdls" in solver.reason
        (joints,) = set_params(client, "/m/itasc_node", command_out_type="x")
        assert not joints.successful and "read-only" in joints.reason.lower()
    finally:
        set_params(client, "/m/itasc_node", constraints__ee__gain=20.0)
    settled_speed(client, speed_20)


def test_structural_changes_are_built_beside_the_loop(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    """A new scene (another solver, other axes) is built while the loop ticks; only the swap
    holds a tick, and the node reports both (``longest_build_ms``, ``longest_swap_ms``).

    How long a swap takes is the machine's (a loaded one preempts it): the test checks that
    the loop ticks through the changes and that no swap is as long as the longest build (the
    start-up's model), not a number of milliseconds.
    """
    send_goal(module_node, goal_pose(tree, HOME, [0.01, 0.0, 0.0], [0, 0, 0]))
    fresh_commands(client, 20)
    changes = [
        {"solver": "sdls"},
        {"constraints__ee__position_axes": "xy"},
        {"solver": "dls"},
        {"constraints__ee__position_axes": "xyz"},
    ]
    client.clear("/m/commands")
    t0 = time.monotonic()
    for change in changes:
        assert [r.successful for r in set_params(client, "/m/itasc_node", **change)] == [True]

    def swaps() -> dict[str, float] | None:
        st = latest_diagnostic(client)
        values = {kv.key: kv.value for kv in st.values} if st is not None else {}
        return values if int(values.get("structural_changes", "0")) >= len(changes) else None

    values = client.wait_for(swaps, TIMEOUT, "the structural changes in /diagnostics")
    elapsed = time.monotonic() - t0
    sent = len(client.received("/m/commands"))
    # the loop ticked while the changes were set, built and swapped in: 200 Hz asked; a node
    # starved beside another test worker ticks at a quarter of it, and this client, starved
    # too, takes its messages late: the count says the loop ran through them, not at which
    # rate (an eighth of the rate asked over the whole window, at least two commands)
    assert sent >= max(2, int(elapsed * 200.0 / 8.0)), (sent, elapsed)
    build, swap = float(values["longest_build_ms"]), float(values["longest_swap_ms"])
    assert 0.0 < swap < build, values  # a tick waited for a swap, never for a build


def test_journal_records_each_tick_while_subscribed(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    from itasc_ros.core.control.journal import Code, decode

    # deep enough for a client starved for seconds beside another test worker (100 a second)
    reliable = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)
    latched = QoSProfile(
        depth=20,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
    client.collect(Float64MultiArray, "/m/itasc_node/journal", reliable)
    client.collect(String, "/m/itasc_node/parameters", latched)
    client.wait_for(lambda: client.received("/m/itasc_node/journal"), TIMEOUT, "journal")
    send_goal(module_node, goal_pose(tree, HOME, [0.01, 0.0, 0.0], [0, 0, 0]))
    client.wait_for(lambda: len(client.received("/m/itasc_node/journal")) >= 40, TIMEOUT, "ticks")
    revision = json.loads(client.received("/m/itasc_node/parameters")[-1].data)["revision"]
    (ok,) = set_params(client, "/m/itasc_node", constraints__ee__gain=21.0)
    set_params(client, "/m/itasc_node", constraints__ee__gain=20.0)
    assert ok.successful
    client.wait_for(
        lambda: len(client.received("/m/itasc_node/parameters")) >= 3, TIMEOUT, "revisions"
    )
    params = [json.loads(m.data) for m in client.received("/m/itasc_node/parameters")]
    assert [p["revision"] for p in params[-3:]] == [revision, revision + 1, revision + 2]
    assert params[-2]["parameters"]["constraints.ee.gain"] == 21.0
    time.sleep(0.2)
    messages = [decode(m.data) for m in client.received("/m/itasc_node/journal")]
    seq = [m.sequence for m in messages]
    assert seq == list(range(seq[0], seq[0] + len(seq)))  # reliable: none lost
    codes = [r.code for m in messages for r in m.records]
    assert codes[0] == Code.SNAPSHOT  # a new subscriber's first record
    assert len(messages) <= codes.count(Code.TICK) <= 3 * len(messages)  # 10 ms of ticks each
    assert {Code.JOINT_STATE, Code.TARGET, Code.PARAMETERS} <= set(codes)
    revisions = [r.payload[0] for m in messages for r in m.records if r.code == Code.PARAMETERS]
    assert revisions[-2:] == [revision + 1, revision + 2]
    # the commands a tick says it published are the node's commands, value for value
    n = len(JOINT_ORDER)
    published = [
        tuple(r.payload[-n:])
        for m in messages
        for r in m.records
        if r.code == Code.TICK and r.payload[2]
    ]
    commands = {tuple(c.data) for c in client.received("/m/commands")}
    assert len(published) > 30 and set(published[-20:]) <= commands
    diag = latest_diagnostic(client)
    assert {kv.key: kv.value for kv in diag.values}["journal_subscribers"] != "0"


def test_live_control_rate_change(
    client: RosTestClient, module_node: dict[str, Any], tree: KinematicTree
) -> None:
    from itasc_ros.core.control.journal import Code, decode

    journal = client.collect(
        Float64MultiArray,
        "/m/itasc_node/journal",
        QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE),
    )

    def command_interval(seconds: float = 1.0) -> float:
        """The median interval between the node's ticks that published [s], by the ticks' own
        times in its journal: this process taking its messages late (starved beside another
        test worker) changes nothing; a stall of the node lengthens a few intervals, not the
        median."""
        time.sleep(0.2)  # the change applied
        with client.lock:
            journal.clear()

        def ticks() -> list[float]:
            with client.lock:
                messages = [decode(m.data) for _, m in journal]
            return [
                r.payload[0]
                for m in messages
                for r in m.records
                if r.code == Code.TICK and r.payload[2]
            ]

        time.sleep(seconds)
        client.wait_for(lambda: len(ticks()) > 20, TIMEOUT, "the node's ticks in its journal")
        return float(np.median(np.diff(ticks())))

    # a target of its own: the test runs alone too (pytest -k)
    send_goal(module_node, goal_pose(tree, HOME, [0.01, 0.0, 0.0], [0, 0, 0]))
    fresh_commands(client)  # moving: one command per tick
    try:
        assert [r.successful for r in set_params(client, "/m/itasc_node", control_rate=50.0)]
        assert 1.0 / 65.0 < command_interval() < 1.0 / 38.0  # 50 Hz
    finally:
        set_params(client, "/m/itasc_node", control_rate=200.0)
    assert command_interval() < 1.0 / 100.0  # 200 Hz again (5 ms; 50 Hz's is 20 ms)


# =========================================================================== own processes
def last_command_moves(cmds: list[tuple[float, Float64MultiArray]]) -> bool:
    return bool(cmds) and bool(np.any(cmds[-1][1].data))


def last_command_is_zero(cmds: list[tuple[float, Float64MultiArray]]) -> bool:
    return bool(cmds) and not np.any(cmds[-1][1].data)


def test_signals_publish_a_zero_command_before_exit(
    client: RosTestClient, tree: KinematicTree
) -> None:
    """Two nodes (started together to save time): one gets SIGINT, the other SIGTERM.

    The first gets SIGUSR1 before: its threads' stacks go to its log and it goes on commanding.
    """
    runs = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        ns = f"/sig{int(sig)}"
        runs.append(
            {
                "sig": sig,
                "ns": ns,
                "cmds": client.collect(Float64MultiArray, f"{ns}/commands"),
                "node": start_node(ns, "control_rate:=100.0"),
                "robot": StaticRobot(
                    client, f"{ns}/joint_states", list(tree.joint_names), home_by_name()
                ).start(),
                "target": client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose"),
            }
        )
    try:
        for r in runs:
            client.wait_for_subscribers(r["target"], 1, TIMEOUT)
            r["target"].publish(pose_msg(goal_pose(tree, HOME, [0.05, 0, 0], [0, 0, 0])))
        # SIGUSR1 first: every thread's stack in the log, and the node goes on commanding. Sent
        # once its executor answers (the loop ticks from its own thread before the main thread
        # has come back from starting it and spins: a signal in between dumps no executor).
        first = runs[0]
        client.wait_for(partial(last_command_moves, first["cmds"]), TIMEOUT, "motion commands")
        request = GetParameters.Request(names=["control_rate"])
        client.call(GetParameters, f"{first['ns']}/itasc_node/get_parameters", request, TIMEOUT)
        first["node"].send_signal(signal.SIGUSR1)
        # faulthandler writes one thread after another: wait for the executor's (spin_until)
        dumped = partial(lambda p: "spin_until" in read_log(p), first["node"])
        client.wait_for(dumped, TIMEOUT, "the executor thread's stack in the log")
        assert "(most recent call first)" in read_log(first["node"])
        before = len(first["cmds"])
        client.wait_for(lambda: len(first["cmds"]) > before + 10, TIMEOUT, "commands after it")
        assert first["node"].poll() is None
        for r in runs:
            cmds: list[tuple[float, Float64MultiArray]] = r["cmds"]
            moving = partial(last_command_moves, cmds)
            client.wait_for(moving, TIMEOUT, "motion commands")
            assert stop_process(r["node"], r["sig"]) == 0
            t_exit = time.monotonic()
            client.wait_for(partial(last_command_is_zero, cmds), 2.0, "the zero command")
            assert all(t < t_exit + 0.5 for t, _ in cmds)
            assert "shutdown: zero command sent" in read_log(r["node"])
    finally:
        for r in runs:
            r["robot"].close()
            stop_process(r["node"], signal.SIGKILL)


def test_robot_description_from_the_transient_local_topic_only(
    client: RosTestClient, tree: KinematicTree
) -> None:
    ns = "/rd"
    latched = QoSProfile(
        depth=1,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
        reliability=ReliabilityPolicy.RELIABLE,
    )
    description = client.publisher(String, f"{ns}/robot_description", latched)
    description.publish(String(data=PANDA_URDF.read_text()))  # before the node exists
    status = client.collect(String, f"{ns}/itasc_node/status")
    cmds = client.collect(Float64MultiArray, f"{ns}/commands")
    node = start_node(ns, "control_rate:=100.0", urdf=False)
    robot = StaticRobot(client, f"{ns}/joint_states", list(tree.joint_names), home_by_name())
    target = client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose")
    try:
        robot.start()
        client.wait_for_subscribers(target, 1, TIMEOUT)
        target.publish(pose_msg(goal_pose(tree, HOME, [0.0, 0.03, 0], [0, 0, 0])))
        client.wait_for(lambda: cmds and np.any(cmds[-1][1].data), TIMEOUT, "motion commands")
        client.wait_for(
            lambda: status and json.loads(status[-1][1].data)["status"] == "active",
            TIMEOUT,
            "status active",
        )
        # the log and ~/status are two channels: no order between them
        client.wait_for(
            lambda: "model 'panda' from the topic" in read_log(node), TIMEOUT, "the model's line"
        )
        # A broken URDF on the topic is refused; the node keeps its model and keeps going.
        description.publish(String(data="<robot name='broken'><link name='a'/>"))
        client.wait_for(
            lambda: "URDF from the topic rejected" in read_log(node),
            TIMEOUT,
            "the rejection in the log",
        )
        client.clear(f"{ns}/commands")
        client.wait_for(lambda: len(cmds) > 5, TIMEOUT, "commands after the bad URDF")
        assert node.poll() is None
    finally:
        robot.close()
        stop_process(node)
        client.node.destroy_publisher(description)


KINDS = {
    "std_msgs/Float64MultiArray": Float64MultiArray,
    "trajectory_msgs/JointTrajectory": JointTrajectory,
    "sensor_msgs/JointState": JointState,
}


@pytest.fixture(scope="class")
def closed_loop_pairs(client: RosTestClient) -> Iterator[dict[str, dict[str, Any]]]:
    """One node + simulated robot pair per command type, each in its namespace, started at once."""
    pairs: dict[str, dict[str, Any]] = {}
    try:
        for kind, msg_type in KINDS.items():
            ns = "/cl_" + kind.split("/")[1].lower()
            pairs[kind] = {
                "node": start_node(ns, f"command_out_type:={kind}"),
                "sim": start_ros(
                    DOMAIN,
                    f"urdf_file:={PANDA_URDF}",
                    "rate:=250.0",
                    f"command_type:={kind}",
                    "command_topic:=commands",
                    ns=ns,
                    module=SIM_ROBOT_MODULE,
                    name=f"sim{ns.replace('/', '_')}",
                ),
                "js": client.collect(JointState, f"{ns}/joint_states"),
                "cmds": client.collect(msg_type, f"{ns}/commands", 1000),  # none dropped
                "target": client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose"),
            }
        yield pairs
    finally:
        stop_processes([p[k] for p in pairs.values() for k in ("sim", "node")])


class TestClosedLoop:
    """A PoseStamped target is reached with each command_out_type (the sim closes the loop)."""

    @pytest.mark.parametrize("kind", list(KINDS))
    def test_pose_target_reached(
        self,
        client: RosTestClient,
        tree: KinematicTree,
        closed_loop_pairs: dict[str, Any],
        kind: str,
    ) -> None:
        p = closed_loop_pairs[kind]
        client.wait_for_subscribers(p["target"], 1, TIMEOUT)
        client.wait_for(lambda: p["js"], TIMEOUT, "joint states of the simulated robot")
        # the node's command publisher matched before the target: the whole motion is heard
        topic = p["target"].topic_name.replace("itasc_node/target_pose", "commands")
        client.wait_for_publishers(topic, 1, TIMEOUT)
        goal = goal_pose(tree, HOME, [0.1, -0.08, 0.06], [0.2, -0.15, 0.25])
        p["target"].publish(pose_msg(goal))

        def reached() -> bool:
            msg = p["js"][-1][1]
            q = np.array([msg.position[list(msg.name).index(n)] for n in tree.joint_names])
            pos, rot = hand_errors(tree, q, goal)
            return pos < 1e-3 and rot < 0.01

        client.wait_for(reached, TIMEOUT, f"the target, with {kind}")

        def speeds() -> list[float]:
            return [
                np.abs(command_velocities(m, tree.joint_names)).max() for _, m in list(p["cmds"])
            ]

        assert len(speeds()) > 10 and all(math.isfinite(v) for v in speeds())
        # slowing down onto the target (within the joints' deceleration limits)
        client.wait_for(lambda: speeds()[-1] < 0.1 * max(speeds()), TIMEOUT, "slowing down")

    def test_jogging_moves_v_t_and_stops_smoothly(
        self, client: RosTestClient, tree: KinematicTree, closed_loop_pairs: dict[str, Any]
    ) -> None:
        """~/delta_twist_cmds as Servo: a 2 s twist moves the hand v t within 2 %; it stops
        smoothly when the twists stop; a stream the node had to stop (twists late, or a pause
        of the sender) moves it along v no further than v t."""
        kind = "std_msgs/Float64MultiArray"
        p = closed_loop_pairs[kind]
        ns = "/cl_float64multiarray"
        jog = client.publisher(TwistStamped, f"{ns}/itasc_node/delta_twist_cmds")
        late: list[tuple[float, int]] = []  # (reception time, jog_late_twists of the node)

        def on_diagnostics(msg: DiagnosticArray) -> None:
            for status in msg.status:  # the nodes of the other pairs, never jogged, report 0
                for kv in status.values:
                    if kv.key.startswith("jog_late_twists."):
                        late.append((time.monotonic(), int(kv.value)))

        client.node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
        client.wait_for_subscribers(jog, 1, TIMEOUT)
        client.wait_for(lambda: p["js"], TIMEOUT, "joint states of the simulated robot")

        def late_twists() -> int:
            """The jogged node's count: the largest of the counts of the last second."""
            asked = time.monotonic()
            time.sleep(1.0)  # diagnostics at 2 Hz from each node
            client.wait_for(lambda: late and late[-1][0] > asked, TIMEOUT, "diagnostics")
            return max(n for t, n in list(late) if t > asked)

        def hand() -> np.ndarray:
            msg = p["js"][-1][1]
            q = np.array([msg.position[list(msg.name).index(n)] for n in tree.joint_names])
            return tree.forward_kinematics(q, "panda_hand")[:3, 3]

        def still() -> bool:
            last = [
                np.abs(command_velocities(m, tree.joint_names)).max() for _, m in p["cmds"][-5:]
            ]
            return not last or max(last) < 1e-3

        v = np.array([0.0, 0.04, -0.02])
        msg = TwistStamped()
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = map(float, v)
        clock = client.node.get_clock()

        def jog_once() -> tuple[float, float, float, int, float]:
            """2 s of twists at 100 Hz, as a joystick sends.

            Returns:
                (moved [m], moved by the last twist [m], v t [m], commands before the stop,
                this process's longest pause between two twists [s]).
            """
            client.wait_for(still, TIMEOUT, "the arm at rest before jogging")
            time.sleep(0.2)  # the joint states of the rest
            start, stamps, t0 = hand(), [], time.monotonic()
            while time.monotonic() - t0 < 2.0:
                now = clock.now()
                msg.header.stamp = now.to_msg()
                jog.publish(msg)
                stamps.append(now.nanoseconds * 1e-9)
                time.sleep(0.01)
            by_now, n_before = float(np.linalg.norm(hand() - start)), len(p["cmds"])
            time.sleep(0.5)  # the twists stopped: the reference decelerates, the arm follows
            client.wait_for(still, TIMEOUT, "the arm at rest after the jog")
            time.sleep(0.2)
            moved = hand() - start
            direction = moved / np.linalg.norm(moved)
            np.testing.assert_allclose(direction, v / np.linalg.norm(v), atol=0.02)
            # Each twist pays the time since the previous one by its header stamp, the first
            # one control period (4 ms): v t for t the stream's length, whatever the delivery.
            t = stamps[-1] - stamps[0] + 0.004
            gap = float(np.diff(stamps).max())  # [s] this process's own longest pause
            vt = float(np.linalg.norm(v)) * t
            return float(np.linalg.norm(moved)), by_now, vt, n_before, gap

        # One jog, judged by what the node was given. A delivery that stalls for longer than
        # input_timeout (0.1 s) stops the jog, as Servo does, and the node counts the twists
        # that came too late (diagnostic jog_late_twists); a stream this process itself paused
        # for longer than input_timeout while sending (starved of the CPU, a garbage
        # collection) is two streams for the node, which stops the jog in between. Each is the
        # stop the node promises, not a fault of the jog: the hand then moved along v no
        # further than the stream asked, without a jump. (A pause after the last twist, 1.65 s
        # once beside another test worker, only makes the stream shorter: t is its length.)
        before = late_twists()
        moved, by_now, vt, n_before, gap = jog_once()
        cut = late_twists() - before
        whole = not cut and gap < INPUT_TIMEOUT
        print(
            f"\njog: moved {moved * 1e3:.2f} mm, v t {vt * 1e3:.2f} mm (a stream of "
            f"{vt / float(np.linalg.norm(v)):.3f} s), late twists {cut}, this process's longest "
            f"pause {gap * 1e3:.0f} ms: "
            + ("the whole stream" if whole else "a stream the node stopped")
        )
        if whole:
            assert abs(moved - vt) <= 0.02 * vt, (moved, vt)  # v t, whatever the delivery
            assert by_now > 0.5 * vt
        else:
            assert 0.0 < moved <= 1.02 * vt, (moved, vt, cut, gap)
        speeds = [
            command_velocities(m, tree.joint_names) for _, m in list(p["cmds"])[n_before - 1 :]
        ]
        steps = np.abs(np.diff(speeds, axis=0)).max(axis=0)
        assert np.all(steps <= 20.0 * 2.0 / 250.0)  # no jump: within two ticks of the largest


@contextmanager
def moving_node(
    client: RosTestClient, tree: KinematicTree, ns: str, *params: str, robot_rate: float = 100.0
) -> Iterator[tuple[Any, StaticRobot, list[tuple[float, Float64MultiArray]]]]:
    """A node in ``ns`` already moving a fake robot (at home) towards a goal 3 cm away.

    Yields:
        ``(node process, robot, commands received)``; the robot is closed and the node stopped
        (SIGINT) at the end.
    """
    cmds = client.collect(Float64MultiArray, f"{ns}/commands")
    node = start_node(ns, *params)
    names = list(tree.joint_names)
    robot = StaticRobot(client, f"{ns}/joint_states", names, home_by_name(), rate=robot_rate)
    target = client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose")
    try:
        client.wait_for_subscribers(target, 1, TIMEOUT)
        robot.start()
        target.publish(pose_msg(goal_pose(tree, HOME, [0.03, 0, 0], [0, 0, 0])))
        client.wait_for(partial(last_command_moves, cmds), TIMEOUT, "motion commands")
        yield node, robot, cmds
    finally:
        robot.close()
        stop_process(node)


# ----------------------------------------------------------------- control_trigger joint_states
def test_joint_states_trigger_one_command_per_state_then_one_zero(
    client: RosTestClient, tree: KinematicTree
) -> None:
    """Each joint state ticks (fake robot at 100 Hz, control_rate 1 kHz): one command per
    state, published right after it; when the states stop, the watchdog sends one zero."""
    ns = "/trig"
    params = ("control_rate:=1000.0", "control_trigger:=joint_states")
    with moving_node(client, tree, ns, *params) as (node, robot, cmds):
        states = client.collect(JointState, f"{ns}/joint_states")
        time.sleep(0.3)
        t0 = time.monotonic()
        time.sleep(2.0)
        n = sum(1 for t, _ in list(cmds) if t0 <= t <= t0 + 2.0)
        n_states = sum(1 for t, _ in list(states) if t0 <= t <= t0 + 2.0)
        # The timer trigger would send ~2000 commands in 2 s; one per state is as many as the
        # states this process published (~200 asked; fewer on a loaded machine, and a state
        # that comes while the node still ticks the last one is taken by the next tick: a node
        # starved beside another test worker takes several at once).
        assert n_states > 50 and 10 < n <= n_states + 5, (n, n_states)
        robot.stop()
        stopped = time.monotonic()
        time.sleep(0.6)  # input_timeout 0.1 s, then 0.5 s of silence
        after = [m for t, m in list(cmds) if t > stopped]
        zeros = [i for i, m in enumerate(after) if not np.any(m.data)]
        assert zeros == [len(after) - 1], [list(m.data) for m in after]
        assert "control stale: " in read_log(node)
        robot.start()  # fresh states: moving again
        client.wait_for(partial(last_command_moves, cmds), TIMEOUT, "motion after the restart")
    assert node.returncode == 0
    log = read_log(node)
    assert "shutdown: zero command sent" in log


def test_joint_states_trigger_keeps_to_control_rate(
    client: RosTestClient, tree: KinematicTree
) -> None:
    """States faster than control_rate (500 Hz asked, 50 Hz): ticks at control_rate on average."""
    ns = "/trigfast"
    params = ("control_rate:=50.0", "control_trigger:=joint_states")
    with moving_node(client, tree, ns, *params, robot_rate=500.0) as (_, _, cmds):
        states = client.collect(JointState, f"{ns}/joint_states")
        time.sleep(0.3)
        t0 = time.monotonic()
        time.sleep(2.0)
        n = sum(1 for t, _ in list(cmds) if t0 <= t <= t0 + 2.0)
        n_states = sum(1 for t, _ in list(states) if t0 <= t <= t0 + 2.0)
        # The fake robot (this process: 500 Hz asked, 121-145 Hz measured beside another
        # worker) is faster than control_rate by far, so one command per state would be more
        # than 110: the premise, with the window's edges.
        assert n_states > 115, n_states
        # Not one command per state (> 110), and ticking: the rate itself, exactly control_rate
        # on average for any faster state rate, is checked on exact times in
        # test_tick_spacing.py; here a loaded machine may starve the node's process.
        assert 50 <= n <= 110, (n, n_states)


def test_unknown_control_trigger_is_refused_at_start_up() -> None:
    node = start_node("/trigbad", "control_trigger:=on_demand")
    assert node.wait(timeout=TIMEOUT) == 2  # a usage error
    log = read_log(node)
    assert "cannot start" in log and "valid: 'joint_states', 'timer'" in log


# ----------------------------------------------------------------- thread_priority, cpu_affinity
def test_thread_priority_and_cpu_affinity_apply_to_the_node(
    client: RosTestClient, tree: KinematicTree
) -> None:
    """With CAP_SYS_NICE the executor's and the control loop's threads run SCHED_FIFO, DDS's
    on the normal scheduler, all on the CPU asked for; without it the node warns and runs on
    (and still controls the robot)."""
    params = ("control_rate:=200.0", "thread_priority:=10", "cpu_affinity:=[0]")
    with moving_node(client, tree, "/rt", *params) as (node, _, _):
        log = read_log(node)
        if fifo_permitted():
            assert "scheduling: SCHED_FIFO 10 on CPUs [0]" in log
            threads = thread_policies(node.pid)
            assert threads[node.pid][:2] == (os.SCHED_FIFO, {0})
            fifo = [tid for tid, (pol, _, _) in threads.items() if pol == os.SCHED_FIFO]
            assert len(fifo) == 2, threads  # the executor's (main) and the control loop's
            dds = [pol for pol, _, name in threads.values() if name.startswith("dds.")]
            assert dds and set(dds) == {os.SCHED_OTHER}, threads
            assert all(cpus == {0} for _, cpus, _ in threads.values())
        else:
            assert "real-time scheduling not applied: SCHED_FIFO priority 10" in log


@pytest.mark.parametrize(
    ("param", "reason"),
    [("thread_priority:=120", "thread_priority"), ("cpu_affinity:=[4096]", "no CPU [4096]")],
)
def test_bad_scheduling_parameters_are_refused_at_start_up(param: str, reason: str) -> None:
    node = start_node("/rtbad", param)
    assert node.wait(timeout=TIMEOUT) == 2  # a usage error
    log = read_log(node)
    assert "cannot start" in log and reason in log, log[-2000:]
