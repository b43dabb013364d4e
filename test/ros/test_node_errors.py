"""A new user's mistakes with itasc_node, each met by one line that says what is valid.

The node runs as its own process (the console script's entry point) over real DDS.

* Start-up mistakes -- a missing ``--params-file``, a parameter name with a typo (params file or
  ``-p``, node or constraint setting), a value out of range, not one of the choices or of the
  wrong type, a malformed ``-p``, a constraint link the URDF (``urdf_file`` or the
  ``robot_description`` parameter) lacks -- end the process with exit status 2 and exactly one
  line on stderr naming the value and what is valid (the closest name for a typo), no traceback.
* An integer where a double is declared is that double: at start-up (params file and ``-p``)
  and live (``set_parameters``); a string for a double is refused live with one line naming the
  parameter, the type expected and the value, and the node runs on.
* A constraint link that a URDF from the ``robot_description`` topic lacks: the node stays up
  (a later URDF may have it), publishes no command, and says which parameter names which link,
  the closest link and the links in ``~/status`` and /diagnostics -- not that it waits for a
  description; an IK request meanwhile gets its failure on ``~/ik_result``.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from procs import (
    PANDA_URDF,
    RosTestClient,
    allocate_domain,
    client_fixture,
    node_command,
    read_log,
    start_ros,
    stop_process,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, String

from itasc_ros.tools.dds_env import local_dds_env

pytestmark = pytest.mark.dds

DOMAIN = allocate_domain()  # this module's own, held for the session (used at import)
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
START_TIMEOUT = 60.0  # [s] a refused start-up (imports included)
LATCHED = QoSProfile(
    depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)


client = client_fixture(DOMAIN, "itasc_node_errors_client")


def params_file(tmp: Path, params: dict[str, Any]) -> str:
    path = tmp / "params.yaml"
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}))
    return str(path)


def run_refused(*ros_args: str) -> tuple[int, list[str]]:
    """Run the node with ``ros_args``; its exit status and its stderr's lines."""
    run = subprocess.run(
        node_command(*ros_args),
        env=local_dds_env(DOMAIN),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=START_TIMEOUT,
    )
    return run.returncode, run.stderr.decode(errors="replace").splitlines()


URDF = ["-p", f"urdf_file:={PANDA_URDF}"]
# (id, ROS arguments (``{tmp}``: a params file of the case's parameters), params, expected parts)
STARTUP_CASES: list[tuple[str, list[str], dict[str, Any], list[str]]] = [
    (
        "missing-params-file",
        ["--params-file", "no_such_params.yaml"],
        {},
        ["params file 'no_such_params.yaml' does not exist"],
    ),
    (
        "typo-in-params-file",
        [*URDF, "--params-file", "{tmp}"],
        {"contol_rate": 100.0},
        ["unknown parameter 'contol_rate'", "did you mean 'control_rate'?"],
    ),
    (
        "typo-in-constraint-setting",
        [*URDF, "-p", "constraints.ee.gian:=5.0"],
        {},
        ["unknown parameter 'constraints.ee.gian'", "did you mean 'constraints.ee.gain'?"],
    ),
    (
        "rate-out-of-range",
        [*URDF, "-p", "control_rate:=-5"],
        {},
        ["'control_rate' is -5.0, out of range", "valid: [1, 2000]"],
    ),
    (
        "priority-out-of-range",
        [*URDF, "-p", "thread_priority:=120"],
        {},
        ["'thread_priority' is 120, out of range", "valid: [0, 99]"],
    ),
    (
        "unreadable-urdf-file",
        ["-p", "urdf_file:=/no/such/robot.urdf"],
        {},
        ["cannot read urdf_file '/no/such/robot.urdf'", "No such file or directory"],
    ),
    (
        "urdf-file-is-a-directory",
        ["-p", "urdf_file:=/tmp"],
        {},
        ["cannot read urdf_file '/tmp'", "Is a directory"],
    ),
    (
        "unknown-command-type",
        [*URDF, "-p", "command_out_type:=std_msgs/Float64MultiArra"],
        {},
        [
            "'command_out_type': unknown value 'std_msgs/Float64MultiArra'",
            "did you mean 'std_msgs/Float64MultiArray'?",
            "'trajectory_msgs/JointTrajectory'",
        ],
    ),
    (
        "unknown-constraint-type",
        [*URDF, "--params-file", "{tmp}"],
        {"constraints": {"ee": {"type": "copy_pos"}}},
        ["unknown constraint type 'copy_pos'", "did you mean 'copy_pose'?"],
    ),
    (
        "string-for-double",
        [*URDF, "-p", "control_rate:=fast"],
        {},
        ["parameter 'control_rate' must be a number, got a string 'fast'"],
    ),
    (
        "malformed-p",
        [*URDF, "-p", "control_rate=5"],
        {},
        ["control_rate=5", "name:=value"],
    ),
    (
        "link-not-in-urdf-file",
        [*URDF, "-p", "constraints.ee.link:=panda_hnd"],
        {},
        [
            "constraints.ee.link: link 'panda_hnd' is not a link of robot 'panda'",
            "URDF from the file",
            "did you mean 'panda_hand'?",
            "panda_link0, panda_link1",
        ],
    ),
    (
        "link-not-in-robot-description",
        ["--params-file", "{tmp}"],
        {"robot_description": PANDA_URDF.read_text(), "constraints": {"ee": {"link": "hand"}}},
        [
            "constraints.ee.link: link 'hand' is not a link of robot 'panda'",
            "URDF from the parameter",
            "did you mean 'panda_hand'?",
        ],
    ),
]


@pytest.mark.parametrize(
    ("args", "params", "parts"),
    [c[1:] for c in STARTUP_CASES],
    ids=[c[0] for c in STARTUP_CASES],
)
def test_a_start_up_mistake_is_one_line_and_exit_status_2(
    tmp_path: Path, args: list[str], params: dict[str, Any], parts: list[str]
) -> None:
    path = params_file(tmp_path, params)
    code, lines = run_refused(*(path if a == "{tmp}" else a for a in args))
    assert code == 2, (code, lines)  # not 1, not a signal (SIGSEGV once)
    assert len(lines) == 1, lines  # nothing else on stderr: no log line, no traceback
    assert lines[0].startswith("itasc_node: error: "), lines
    for part in parts:
        assert part in lines[0], (part, lines[0])


# --------------------------------------------------------------- integers where doubles are
def _value(kind: int, **field: Any) -> ParameterValue:
    return ParameterValue(type=kind, **field)


def test_an_integer_for_a_double_is_accepted_at_start_up_and_live(
    client: RosTestClient, tmp_path: Path
) -> None:
    ns = "/ints"
    node = f"{ns}/itasc_node"
    path = params_file(tmp_path, {"constraints": {"ee": {"gain": 10, "link": "panda_hand"}}})
    proc = start_ros(
        DOMAIN,
        f"urdf_file:={PANDA_URDF}",
        "control_rate:=100",
        "command_out_topic:=commands",
        ns=ns,
        params_files=[path],
    )
    get: Any = client.node.create_client(GetParameters, f"{node}/get_parameters")
    put: Any = client.node.create_client(SetParameters, f"{node}/set_parameters")

    def call(srv: Any, request: Any) -> Any:
        assert srv.wait_for_service(timeout_sec=TIMEOUT), (srv.srv_name, read_log(proc)[-2000:])
        return client.answer(srv, request, TIMEOUT)

    def read(*names: str) -> list[ParameterValue]:
        return list(call(get, GetParameters.Request(names=list(names))).values)

    def set_one(name: str, value: ParameterValue) -> Any:
        request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=value)])
        (result,) = call(put, request).results
        return result

    try:
        gain, rate = read("constraints.ee.gain", "control_rate")
        assert (gain.type, gain.double_value) == (ParameterType.PARAMETER_DOUBLE, 10.0)
        assert (rate.type, rate.double_value) == (ParameterType.PARAMETER_DOUBLE, 100.0)
        # An empty array among the names: every value is answered, the array typed and empty.
        gain, affinity = read("constraints.ee.gain", "cpu_affinity")
        assert (gain.type, affinity.type) == (
            ParameterType.PARAMETER_DOUBLE,
            ParameterType.PARAMETER_INTEGER_ARRAY,
        )
        assert list(affinity.integer_array_value) == []
        # Live: `ros2 param set /ints/itasc_node constraints.ee.gain 25` sends an INTEGER.
        result = set_one(
            "constraints.ee.gain", _value(ParameterType.PARAMETER_INTEGER, integer_value=25)
        )
        assert result.successful, result.reason
        (gain,) = read("constraints.ee.gain")
        assert (gain.type, gain.double_value) == (ParameterType.PARAMETER_DOUBLE, 25.0)
        # A string for a double: one line naming the parameter, the type and the value.
        result = set_one(
            "constraints.ee.gain", _value(ParameterType.PARAMETER_STRING, string_value="high")
        )
        assert not result.successful
        assert result.reason == (
            "parameter 'constraints.ee.gain' must be a number, got a string 'high'"
        )
        # An integer out of the range: refused with the range, nothing changed.
        result = set_one("control_rate", _value(ParameterType.PARAMETER_INTEGER, integer_value=-5))
        assert not result.successful and "out of range" in result.reason, result.reason
        gain, rate = read("constraints.ee.gain", "control_rate")
        assert (gain.double_value, rate.double_value) == (25.0, 100.0)
        assert proc.poll() is None, read_log(proc)[-3000:]
    finally:
        client.node.destroy_client(get)
        client.node.destroy_client(put)
        code = stop_process(proc)
    log = read_log(proc)
    assert code == 0, log[-3000:]
    assert "Traceback" not in log, log[-3000:]


# ----------------------------------------------------------- a link the topic's URDF lacks
def test_a_link_the_topic_urdf_lacks_is_named_and_the_node_stays_up(
    client: RosTestClient,
) -> None:
    ns = "/nolink"
    client.collect(String, f"{ns}/itasc_node/status")
    client.collect(DiagnosticArray, f"{ns}/diagnostics")
    commands = client.collect(Float64MultiArray, f"{ns}/commands")
    client.collect(DiagnosticStatus, f"{ns}/itasc_node/ik_result")
    description = client.publisher(String, f"{ns}/robot_description", LATCHED)
    proc = start_ros(
        DOMAIN,
        "command_out_topic:=commands",
        "constraints.ee.link:=panda_hnd",
        ns=ns,
        remaps=["/diagnostics:=diagnostics"],
    )
    expected = [
        "constraints.ee.link: link 'panda_hnd' is not a link of robot 'panda'",
        "URDF from the topic",
        "did you mean 'panda_hand'?",
        "panda_link0, panda_link1",
    ]
    try:
        client.wait_for_subscribers(description, 1, TIMEOUT)
        description.publish(String(data=PANDA_URDF.read_text()))

        def status_with_error() -> dict[str, Any] | None:
            for msg in reversed(client.received(f"{ns}/itasc_node/status")):
                info = json.loads(msg.data)
                if info["urdf_error"]:
                    return info
            return None

        info = client.wait_for(status_with_error, TIMEOUT, "a status naming the link")
        assert info["status"] == "no_model"
        for part in expected:
            assert part in info["reason"], (part, info["reason"])
        assert "waiting" not in info["reason"] and "no URDF yet" not in info["reason"]

        def error_diagnostic() -> DiagnosticStatus | None:
            for array in reversed(client.received(f"{ns}/diagnostics")):
                for st in array.status:
                    if st.name.endswith(": controller") and st.level == DiagnosticStatus.ERROR:
                        return st
            return None

        diag = client.wait_for(error_diagnostic, TIMEOUT, "an ERROR diagnostic")
        assert "'panda_hnd' is not a link" in diag.message, diag.message
        assert "waiting" not in diag.message, diag.message
        # An IK request meanwhile gets its failure (there is no model to solve on).
        requests = client.publisher(PoseStamped, f"{ns}/itasc_node/ik_request")
        client.wait_for_subscribers(requests, 1, TIMEOUT)
        request = PoseStamped()
        request.header.stamp.sec, request.header.frame_id = 42, "panda_link0"
        requests.publish(request)
        result = client.wait_for(
            lambda: client.received(f"{ns}/itasc_node/ik_result"), TIMEOUT, "the IK failure"
        )[0]
        values = {kv.key: kv.value for kv in result.values}
        assert result.level == DiagnosticStatus.ERROR
        assert values["request_stamp"] == "42.000000000" and values["frame_id"] == "panda_link0"
        assert values["success"] == "false" and values["reason"] == "no robot model yet"
        assert proc.poll() is None, read_log(proc)[-3000:]
        assert commands == []  # no model, no command
    finally:
        code = stop_process(proc, signal.SIGINT)
    log = read_log(proc)
    assert code == 0, log[-3000:]
    assert "did you mean 'panda_hand'?" in log
    assert "Traceback" not in log


def test_a_missing_mesh_is_reported_in_the_ros_log(tmp_path: Path) -> None:
    """The capsule that replaces a missing collision mesh is a ROS WARN line of the node,
    not Python's own two-line warning text."""
    import time

    from robots import erd_urdf_path

    xml = erd_urdf_path("panda").read_text()
    broken = xml.replace("meshes/collision/link4.stl", "meshes/collision/no_such_link4.stl")
    urdf = tmp_path / "panda_without_link4_mesh.urdf"
    urdf.write_text(broken)
    params = PANDA_URDF.parents[1] / "config" / "panda_self_collision.yaml"
    proc = start_ros(
        DOMAIN,
        f"urdf_file:={urdf}",
        f"constraints.collision.urdf_file:={urdf}",  # the geometry of the URDF with the hole
        ns="/mesh",
        params_files=[params],
    )
    try:
        deadline = time.monotonic() + 60.0
        while "capsule" not in read_log(proc) and time.monotonic() < deadline:
            assert proc.poll() is None, read_log(proc)[-3000:]
            time.sleep(0.2)
    finally:
        stop_process(proc)
    log = read_log(proc)
    lines = [line for line in log.splitlines() if "no_such_link4" in line]
    assert lines, log[-3000:]
    assert all("[WARN]" in line for line in lines), lines
    assert "UserWarning" not in log and "warnings.warn" not in log, log[-3000:]
