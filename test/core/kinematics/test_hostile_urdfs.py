"""Hostile URDFs: a named error within 2 s in the core; at the node, no crash and no bad command.

The corpus is ``test/data/hostile_urdfs/make_hostile.py`` (huge, deep, entity bombs, external
entities, cycles, NaN/Inf, duplicate and over-long names, garbage, the empty string). Three
levels:

* core: each document raises the expected :class:`ItascError` subclass with a message naming
  what is wrong, as str, bytes and file, in under 2 s; the few accepted ones are inert;
* node start-up: a node whose ``urdf_file`` or ``robot_description`` parameter is hostile stays
  up with no model, publishes no command, says why in its log, ``~/status`` and
  ``/diagnostics`` (ERROR), and takes a good URDF from the ``robot_description`` topic;
* run time: a node tracking a target with the Panda gets every hostile document on the
  ``robot_description`` topic; it keeps the Panda model and keeps commanding (no gap, no zero,
  every command checked by :class:`procs.CommandChecker`), and reports each rejection.
"""

from __future__ import annotations

import functools
import json
import struct
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from procs import (
    CommandChecker,
    RosTestClient,
    exit_report,
    node_command,
    read_log,
    ros_client,
    start_process,
    stop_processes,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.core import ItascError, KinematicTree, errors
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.tools.dds_env import local_dds_env

HOSTILE_DIR = Path(__file__).resolve().parents[2] / "data" / "hostile_urdfs"
sys.path.insert(0, str(HOSTILE_DIR))
import make_hostile  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
PANDA = REPO / "urdf" / "panda.urdf"
PARSE_BOUND = 2.0  # [s] the most CPU time a hostile document may take to be rejected
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
HOME = home_of("panda")
LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)

REJECTED = sorted(n for n, c in make_hostile.CASES.items() if c.error)
ACCEPTED = sorted(n for n, c in make_hostile.CASES.items() if not c.error)


def through_the_topic(data: bytes) -> str:
    """What a node receives when ``data`` is published as a std_msgs/String.

    rclpy decodes the received bytes up to the first NUL as UTF-8 with errors replaced by
    U+FFFD (std_msgs/msg/_string_s.c): invalid UTF-8 cannot reach the node as such.
    """
    return data.split(b"\x00")[0].decode("utf-8", errors="replace")


def _rejected_through_the_topic(name: str) -> bool:
    try:
        KinematicTree.from_urdf(through_the_topic(make_hostile.CASES[name].make()))
    except ItascError:
        return True
    return False


# Every rejected case, unless the topic turns it into a valid URDF (non_utf8_link_name: the
# bad bytes become U+FFFD and the name is then valid; that robot would simply not fit).
RUN_TIME = [n for n in REJECTED if _rejected_through_the_topic(n)]


@functools.cache
def document(name: str) -> bytes:
    """The bytes of a case (built once per test session: the large ones take ~0.3 s)."""
    return make_hostile.CASES[name].make()


def as_text(data: bytes) -> str | None:
    """The document as str when it is UTF-8 (what a std_msgs/String can carry), else None."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# =========================================================================== core level
def test_stored_files_match_the_generator() -> None:
    stored = {p.name for p in HOSTILE_DIR.glob("*.urdf")}
    expected = {f"{n}.urdf" for n, c in make_hostile.CASES.items() if c.stored}
    assert stored == expected, "run python test/data/hostile_urdfs/make_hostile.py"
    for name in expected:
        assert (HOSTILE_DIR / name).read_bytes() == document(name[: -len(".urdf")]), name
    assert len(REJECTED) >= 35 and len(ACCEPTED) >= 3 and len(RUN_TIME) >= len(REJECTED) - 1
    assert max((HOSTILE_DIR / n).stat().st_size for n in expected) <= 8192


def timed_error(fn: Any, arg: Any) -> tuple[ItascError, float]:
    """``fn(arg)``'s error and the CPU time [s] the calling thread spent on it.

    The parser's own work, not the wall time: on a loaded host the wall time is the host's.
    """
    t0 = time.thread_time()
    with pytest.raises(ItascError) as info:
        fn(arg)
    return info.value, time.thread_time() - t0


@pytest.mark.parametrize("name", REJECTED)
def test_core_rejects_hostile_urdf_quickly_with_a_named_error(
    name: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    case = make_hostile.CASES[name]
    data = document(name)
    cls = getattr(errors, case.error)
    path = tmp_path / f"{name}.urdf"
    path.write_bytes(data)
    inputs: list[tuple[str, Any, Any]] = [
        ("bytes", KinematicTree.from_urdf, data),
        ("file", KinematicTree.from_urdf_file, path),
    ]
    text = as_text(data)
    if text is not None:
        inputs.append(("str", KinematicTree.from_urdf, text))
    for kind, fn, arg in inputs:
        err, seconds = timed_error(fn, arg)
        assert type(err) is cls, f"{kind}: {type(err).__name__}: {err}"
        for part in case.parts:
            assert part in str(err), f"{kind}: {part!r} not in {str(err)[:300]!r}"
        assert seconds < PARSE_BOUND, f"{kind}: {seconds:.2f} s"
        assert len(str(err)) < 2000, f"{kind}: a {len(str(err))}-character message"
    out, err_text = capfd.readouterr()
    assert out == "" and err_text == ""  # no parser noise on stdout/stderr


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_hostile_urdfs_are_inert_and_quick(name: str) -> None:
    case = make_hostile.CASES[name]
    t0 = time.thread_time()  # the parser's CPU time, as timed_error's: not the host's load
    tree = KinematicTree.from_urdf(document(name))
    seconds = time.thread_time() - t0
    assert seconds < PARSE_BOUND, f"{seconds:.2f} s"
    assert sorted(tree.link_names) == sorted(case.links)  # nothing included, nothing lost
    q = np.full(tree.n_joints, 0.3)
    for link in (tree.link_names[-1], tree.root_link):
        assert np.all(np.isfinite(tree.forward_kinematics(q, link)))
        assert np.all(np.isfinite(tree.jacobian(q, link)))


def test_str_with_lone_surrogates_is_a_syntax_error() -> None:
    """A Python str that is not Unicode text (cannot be encoded): a named error, not a crash."""
    with pytest.raises(errors.UrdfSyntaxError, match="not valid Unicode text"):
        KinematicTree.from_urdf('<robot name="r"><link name="b\udc80"/></robot>')


def test_long_mimic_chain_folds_into_its_leader() -> None:
    """998 mimic joints resolve to one active joint with the product of the multipliers."""
    tree = KinematicTree.from_urdf(document("long_mimic_chain"))
    assert tree.joint_names == ["j1"]
    n = make_hostile._limits.MAX_LINKS - 1
    mult = np.array([1.0001**k for k in range(n)])  # joint j(k+1) = 1.0001^k * q
    # The tip's z axis turns by the sum of all joint angles (every axis is z).
    q = 1e-4
    tip = tree.forward_kinematics([q], f"l{n}")
    expected = float(np.sum(mult) * q)
    assert np.arctan2(tip[1, 0], tip[0, 0]) == pytest.approx(
        np.arctan2(np.sin(expected), np.cos(expected)), abs=1e-9
    )


# =========================================================================== node level
@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "hostile_urdf_test_client") as c:
        yield c


@pytest.fixture(scope="module")
def panda() -> KinematicTree:
    return KinematicTree.from_urdf_file(PANDA)


def start_node(domain: int, ns: str, *params: str, params_file: Path | None = None) -> Any:
    """itasc_node of ``domain`` in ``ns`` at 100 Hz with its /diagnostics remapped into ``ns``.

    ``input_timeout`` is 0.5 s so that a busy machine delaying joint states does not make a
    zero command: here every zero command would mean that a URDF stopped the robot.
    """
    args = ["-r", f"__ns:={ns}", "-r", f"/diagnostics:={ns}/diagnostics"]
    args += ["-p", "command_out_topic:=commands", "-p", "control_rate:=100.0"]
    args += ["-p", "input_timeout:=0.5"]
    for p in ("constraints.ee.link:=panda_hand", *params):
        args += ["-p", p]
    if params_file is not None:
        args += ["--params-file", str(params_file)]
    return start_process(
        node_command(*args), local_dds_env(domain), name=f"itasc_node{ns.replace('/', '_')}"
    )


def stop_all(processes: list[Any], timeout: float = 10.0) -> list[int]:
    """SIGINT each process once, then wait (SIGKILL after ``timeout`` [s]); the exit codes."""
    return stop_processes(processes, timeout=timeout)


class Robots:
    """The test process as the robots of several namespaces: joint states at 100 Hz each."""

    def __init__(self, client: RosTestClient, tree: KinematicTree, namespaces: list[str]):
        self.client = client
        self.names = list(tree.joint_names)
        self.positions = [float(v) for v in HOME]
        self.pubs = [client.publisher(JointState, f"{ns}/joint_states", 10) for ns in namespaces]
        self._quit = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._quit.is_set():
            msg = JointState()
            msg.header.stamp = self.client.node.get_clock().now().to_msg()
            msg.name, msg.position = self.names, self.positions
            for pub in self.pubs:
                pub.publish(msg)
            time.sleep(0.01)

    def close(self) -> None:
        self._quit.set()
        self._thread.join(2.0)


def goal_msg(tree: KinematicTree, dx: float = 0.05) -> PoseStamped:
    """A target 5 cm from the hand at HOME: the static robot keeps being commanded."""
    t = tree.forward_kinematics(HOME, "panda_hand")
    m = PoseStamped()
    m.header.frame_id = "panda_link0"
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (
        float(t[0, 3] + dx),
        float(t[1, 3]),
        float(t[2, 3]),
    )
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in spatial.matrix_to_quat(t))
    return m


def last_status(store: list[tuple[float, String]]) -> dict[str, Any] | None:
    return json.loads(store[-1][1].data) if store else None


def status_is(store: list[tuple[float, String]], value: str) -> bool:
    st = last_status(store)
    return st is not None and st["status"] == value


def commanded(checker: CommandChecker, count: int) -> bool:
    return checker.total > count


def latest_controller_status(
    store: list[tuple[float, DiagnosticArray]],
) -> DiagnosticStatus | None:
    return controller_status(store[-1][1]) if store else None


def controller_status(msg: DiagnosticArray) -> DiagnosticStatus | None:
    for st in msg.status:
        if st.name.endswith(": controller"):
            return st
    return None


def raw_string_message(data: bytes) -> bytes:
    """A serialized std_msgs/String whose bytes are ``data`` (not necessarily UTF-8).

    CDR little endian: encapsulation header, uint32 length including the NUL, bytes, NUL.
    """
    return b"\x00\x01\x00\x00" + struct.pack("<I", len(data) + 1) + data + b"\x00"


def set_string_params(client: RosTestClient, node: str, urdf: bytes) -> list[Any]:
    """Set the ``robot_description`` parameter of ``node``; the SetParametersResult list."""
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=urdf.decode())
    req = SetParameters.Request(parameters=[ParameterMsg(name="robot_description", value=value)])
    return list(client.call(SetParameters, f"{node}/set_parameters", req, timeout=10.0).results)


def publish_document(pub: Any, data: bytes) -> None:
    text = as_text(data)
    pub.publish(String(data=text) if text is not None else raw_string_message(data))


STARTUP_CASES = {
    # namespace: (how the hostile URDF is given, the case, what the node must say)
    "/su_file_over_cap": ("file", "over_size_cap", "larger than the 16777216 bytes accepted"),
    "/su_file_garbage": ("file", "random_bytes", "not well-formed XML"),
    "/su_param_laughs": ("param", "laughs_in_attribute", "<!DOCTYPE>"),
    "/su_param_huge_origin": ("param", "huge_origin", "more than 1e+06 m"),
    "/su_param_cycle": ("param", "long_cycle", "the joints form a cycle"),
}


@pytest.mark.dds
def test_node_started_with_a_hostile_urdf_stays_idle_then_takes_a_good_one(
    client: RosTestClient, dds_domain: int, panda: KinematicTree, tmp_path: Path
) -> None:
    """Five nodes at once: hostile urdf_file or robot_description parameter at start-up.

    Before the fixes, the non-UTF-8 file crashed the node (UnicodeDecodeError) and the huge
    origin crashed it while building the model (LinAlgError from the warm-up solve).
    """
    nodes: dict[str, Any] = {}
    checkers: dict[str, CommandChecker] = {}
    status: dict[str, list[tuple[float, String]]] = {}
    diags: dict[str, list[tuple[float, DiagnosticArray]]] = {}
    for ns, (how, name, _) in STARTUP_CASES.items():
        checkers[ns] = CommandChecker(client, panda.velocity_limits, f"{ns}/commands")
        status[ns] = client.collect(String, f"{ns}/itasc_node/status")
        diags[ns] = client.collect(DiagnosticArray, f"{ns}/diagnostics")
        path = tmp_path / f"{name}.urdf"
        path.write_bytes(document(name))
        if how == "file":
            nodes[ns] = start_node(dds_domain, ns, f"urdf_file:={path}")
        else:
            params = tmp_path / f"{name}.yaml"
            text = document(name).decode("utf-8")
            params.write_text(
                yaml.safe_dump({"/**": {"ros__parameters": {"robot_description": text}}})
            )
            nodes[ns] = start_node(dds_domain, ns, params_file=params)
    robots = Robots(client, panda, list(STARTUP_CASES))
    targets = {ns: client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose") for ns in nodes}
    descriptions = {
        ns: client.publisher(String, f"{ns}/robot_description", LATCHED) for ns in nodes
    }
    try:
        # 1. Idle with a clear reason; joint states and a target flow but no command comes.
        for ns in STARTUP_CASES:
            client.wait_for(partial(last_status, status[ns]), TIMEOUT, f"status of {ns}")
            client.wait_for_subscribers(targets[ns], 1, TIMEOUT)
            targets[ns].publish(goal_msg(panda))
        for ns, (how, _, part) in STARTUP_CASES.items():
            st = last_status(status[ns])
            assert st is not None and st["status"] == "no_model", (ns, st)
            source = "file" if how == "file" else "parameter"
            assert f"URDF from the {source} rejected (no model" in st["reason"], (ns, st)
            assert part in st["reason"], (ns, st["reason"])
            diag = client.wait_for(partial(latest_controller_status, diags[ns]), TIMEOUT, ns)
            assert diag.level == DiagnosticStatus.ERROR and part in diag.message, (ns, diag)
            assert part in read_log(nodes[ns]), ns
        time.sleep(1.0)  # inputs keep flowing: still nothing may be commanded
        for ns, node in nodes.items():
            assert node.poll() is None, (ns, read_log(node)[-3000:])
            assert checkers[ns].snapshot() == (0, 0, 0), ns
        # 2. A good URDF on the topic: each node installs it and starts commanding.
        for ns in nodes:
            descriptions[ns].publish(String(data=PANDA.read_text()))
        for ns in nodes:
            client.wait_for(
                partial(status_is, status[ns], "active"),
                TIMEOUT,
                f"{ns} active on the topic's URDF",
            )
            client.wait_for(partial(commanded, checkers[ns], 10), TIMEOUT, f"commands of {ns}")
            st = last_status(status[ns])
            assert st is not None and st["urdf_error"] == "" and st["urdf_rejections"] == 1
            assert "model 'panda' from the topic" in read_log(nodes[ns])
        for ns, checker in checkers.items():
            assert checker.bad == [], (ns, checker.bad[:3])
            assert checker.zeros == 0 and np.abs(checker.last).max() > 0.0, ns
    finally:
        robots.close()
        codes = stop_all(list(nodes.values()))
        for ns, node in nodes.items():
            print(ns, read_log(node)[-1500:])
    exited = dict(zip(nodes, codes, strict=True))
    assert set(exited.values()) == {0}, exit_report(nodes, codes)


@pytest.mark.dds
def test_hostile_urdfs_at_run_time_keep_the_last_good_model(
    client: RosTestClient, dds_domain: int, panda: KinematicTree
) -> None:
    """Every rejected document of the corpus, one after the other, on robot_description."""
    ns = "/rt"
    checker = CommandChecker(client, panda.velocity_limits, f"{ns}/commands")
    cmds = client.collect(Float64MultiArray, f"{ns}/commands")
    status = client.collect(String, f"{ns}/itasc_node/status")
    diags = client.collect(DiagnosticArray, f"{ns}/diagnostics")
    node = start_node(dds_domain, ns, f"urdf_file:={PANDA}")
    robots = Robots(client, panda, [ns])
    target = client.publisher(PoseStamped, f"{ns}/itasc_node/target_pose")
    description = client.publisher(String, f"{ns}/robot_description", LATCHED)
    timings: dict[str, float] = {}
    sent_at: dict[str, float] = {}
    try:
        client.wait_for_subscribers(target, 1, TIMEOUT)
        target.publish(goal_msg(panda))
        client.wait_for(lambda: checker.total > 20, TIMEOUT, "commands on the Panda")
        client.wait_for_subscribers(description, 1, TIMEOUT)
        t_start = time.monotonic()
        for count, name in enumerate(RUN_TIME, start=1):
            data = document(name)
            t0 = time.monotonic()
            publish_document(description, data)

            def rejected(count: int = count) -> dict[str, Any] | None:
                st = last_status(status)
                return st if st is not None and st["urdf_rejections"] >= count else None

            st = client.wait_for(rejected, TIMEOUT, f"the rejection of {name}")
            timings[name] = time.monotonic() - t0
            sent_at[name] = t0
            assert st["urdf_rejections"] == count, (name, st)  # one rejection per document
            reason = st["urdf_error"]
            assert reason.startswith("URDF from the topic rejected (keeping model 'panda')"), (
                name,
                reason,
            )
            if through_the_topic(data).encode() == data:  # the topic carried it unchanged
                for part in make_hostile.CASES[name].parts:
                    assert part in reason or len(reason) > 1000, (name, part, reason)
            assert st["status"] == "active", (name, st)  # still tracking on the Panda
            assert node.poll() is None, (name, read_log(node)[-3000:])
        t_end = time.monotonic()
        # Commands never stopped: checked, non-zero, and without a gap while parsing.
        during = [t for t, _ in list(cmds) if t_start <= t <= t_end]
        gaps = np.diff(during)
        assert len(during) > 50 and gaps.max() < 0.5, f"longest gap {gaps.max():.3f} s"
        diag = controller_status(diags[-1][1])
        assert diag is not None and diag.level == DiagnosticStatus.WARN
        assert "keeping model 'panda'" in diag.message, diag.message
        log = read_log(node)
        assert log.count("URDF from the topic rejected (keeping model 'panda')") == len(RUN_TIME)
        # The good URDF again: the warning clears, the model is not rebuilt.
        description.publish(String(data=PANDA.read_text()))
        client.wait_for(
            lambda: (s := last_status(status)) and s["urdf_error"] == "", TIMEOUT, "cleared"
        )
        assert "URDF from the topic is the current model's again" in read_log(node)
        # Through the robot_description parameter: a hostile value is refused (the parameter
        # keeps its value) and the model stays; a good one is taken and then wins over the
        # topic, whose hostile documents are ignored from then on.
        (refused,) = set_string_params(client, f"{ns}/itasc_node", document("quadratic_blowup"))
        assert not refused.successful and "<!DOCTYPE>" in refused.reason, refused.reason
        assert "URDF from the parameter refused, nothing changed" in refused.reason
        (taken,) = set_string_params(client, f"{ns}/itasc_node", PANDA.read_bytes())
        assert taken.successful, taken.reason
        client.wait_for(
            lambda: "model 'panda' from the parameter" in read_log(node),
            TIMEOUT,
            "the parameter's model (an explicit reload, even of the same URDF)",
        )
        client.clear(f"{ns}/itasc_node/status")
        rejections = client.wait_for(lambda: last_status(status), TIMEOUT, "status")[
            "urdf_rejections"
        ]
        publish_document(description, document("long_cycle"))
        client.wait_for(
            lambda: "robot_description topic ignored" in read_log(node), TIMEOUT, "ignored"
        )
        time.sleep(0.3)
        st = last_status(status)
        assert st is not None and st["urdf_rejections"] == rejections and st["urdf_error"] == ""
        assert st["status"] == "active"
        total, zeros, bad = checker.snapshot()
        assert bad == 0 and checker.bad == [] and total > 100
        assert zeros <= 2  # the reload through the parameter: one zero, +1 if parsing is slow
        t_gap = during[int(np.argmax(gaps))]
        at = max((n for n in sent_at if sent_at[n] <= t_gap), key=lambda n: sent_at[n])
        print(
            f"{len(RUN_TIME)} hostile URDFs in {t_end - t_start:.1f} s, {len(during)} commands, "
            f"longest gap {1e3 * gaps.max():.0f} ms (after sending {at}), slowest rejection "
            f"{max(timings, key=lambda k: timings[k])} {max(timings.values()):.2f} s"
        )
    finally:
        robots.close()
        code = stop_all([node])
        print(read_log(node)[-2000:])
    assert code == [0]
