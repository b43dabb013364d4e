"""itasc_ros.ros.rclpy_compat: each distribution's path, on the installed wheels and on Humble's.

The installed wheels (Kilted's by default, Jazzy's with ``make test ROS_DISTRO=jazzy``) take
their own paths, checked against what the installed rclpy really has. Humble's paths are taken
under :mod:`humble_surface` (what Humble's rclpy lacks, absent): in this process for the
module's functions, and end to end for a node started as its own process, commanding a robot,
taking parameter requests (an integer for a double converted, a wrong type refused with the
node's own reason) and publishing its journal to a subscriber, all over DDS.
"""

from __future__ import annotations

import importlib
import importlib.util
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import humble_surface
import numpy as np
import pytest
import rclpy
import rclpy.node
from geometry_msgs.msg import PoseStamped
from procs import (
    PANDA_URDF,
    CommandChecker,
    RosTestClient,
    StaticRobot,
    allocate_domain,
    client_fixture,
    dds_env,
    read_log,
    running,
    start_process,
    stop_process,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters, SetParametersAtomically
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_msgs.msg import Float64MultiArray
from test_node import HOME, goal_pose, home_by_name, pose_msg

from itasc_ros.core import KinematicTree
from itasc_ros.ros import rclpy_compat
from itasc_ros.tools.dds_env import local_dds_env

pytestmark = pytest.mark.dds

DOMAIN = allocate_domain()
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
NS = "/humble"
NODE = f"{NS}/itasc_node"
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
GAIN = "constraints.ee.gain"


# ------------------------------------------------------------------ the installed wheels' paths


def test_the_features_are_those_of_the_installed_rclpy() -> None:
    has = rclpy_compat.features()
    assert has["matched_events"] == (importlib.util.find_spec("rclpy.event_handler") is not None)
    assert has["events_executor"] == (importlib.util.find_spec("rclpy.experimental") is not None)
    assert has["pre_set_parameters_callbacks"] == hasattr(
        rclpy.node.Node, "add_pre_set_parameters_callback"
    )
    # The wheels on PyPI (Jazzy's rclpy 7.1, Kilted's 9.x) have all three: their paths run here.
    assert all(has.values()), has


# ------------------------------------------------------------------ Humble's paths, in process


@pytest.fixture
def humble(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """rclpy_compat as imported under Humble's API surface; the real one restored after."""
    humble_surface.apply(monkeypatch)
    yield importlib.reload(rclpy_compat)
    monkeypatch.undo()
    importlib.reload(rclpy_compat)


def test_humble_has_none_of_the_newer_features(humble: object) -> None:
    compat = rclpy_compat
    assert compat.features() == {
        "matched_events": False,
        "pre_set_parameters_callbacks": False,
        "events_executor": False,
    }
    assert compat.matched_callbacks(lambda info: None) is None
    assert compat.matched_publishers(object()) is None
    assert compat.events_executor(rclpy.get_default_context()) is None


def test_humble_pre_set_callback_sees_every_request_once(humble: object, dds_domain: int) -> None:
    seen: list[list[str]] = []

    def before(params: list[Parameter]) -> list[Parameter]:
        seen.append([p.name for p in params])
        return [
            Parameter(p.name, value=float(p.value)) if p.type_ == Parameter.Type.INTEGER else p
            for p in params
        ]

    with dds_env(dds_domain):
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            node = rclpy.create_node("compat_params", context=context)
            node.declare_parameter("gain", 1.0)
            rclpy_compat.add_pre_set_parameters_callback(node, before)
            assert node.set_parameters([Parameter("gain", value=3)])[0].successful
            assert node.get_parameter("gain").value == 3.0
            result = node.set_parameters_atomically([Parameter("gain", value=4)])
            assert result.successful and node.get_parameter("gain").value == 4.0
            assert seen == [["gain"], ["gain"]]
            node.destroy_node()
        finally:
            rclpy.shutdown(context=context)


# ------------------------------------------------------------------ Humble's paths, a node


client = client_fixture(DOMAIN, "itasc_humble_test_client")


def _param_value(value: float | int | str) -> ParameterValue:
    if isinstance(value, str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    if isinstance(value, int):
        return ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)


def _call(client: RosTestClient, srv_type: type, name: str, request: object) -> object:
    srv = client.node.create_client(srv_type, name)
    assert srv.wait_for_service(timeout_sec=TIMEOUT), name
    future = srv.call_async(request)
    RosTestClient.wait_for(future.done, TIMEOUT, f"the answer of {name}", 0.001)
    return future.result()


def _gain(client: RosTestClient) -> ParameterValue:
    answer = _call(
        client, GetParameters, f"{NODE}/get_parameters", GetParameters.Request(names=[GAIN])
    )
    return answer.values[0]  # type: ignore[attr-defined]


def test_a_node_on_humbles_rclpy_commands_takes_parameters_and_journals(
    client: RosTestClient,
) -> None:
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    limits = [tree.velocity_limits[tree.joint_names.index(j)] for j in JOINTS]
    commands = f"{NS}/commands"
    checker = CommandChecker(client, limits, commands)
    script = Path(humble_surface.__file__)
    args = [sys.executable, str(script), "--ros-args", "-r", f"__ns:={NS}"]
    args += ["-p", f"urdf_file:={PANDA_URDF}", "-p", "command_out_topic:=commands"]
    args += ["-p", "constraints.ee.link:=panda_hand"]
    proc = start_process(args, local_dds_env(DOMAIN), "itasc_node_humble")
    with running(proc, signal.SIGKILL):
        robot = StaticRobot(client, f"{NS}/joint_states", list(home_by_name()), home_by_name())
        target = client.publisher(PoseStamped, f"{NODE}/target_pose")
        journal = client.collect(Float64MultiArray, f"{NODE}/journal", QoSProfile(depth=1000))
        try:
            robot.start()
            client.wait_for_subscribers(target, 1, TIMEOUT)
            target.publish(pose_msg(goal_pose(tree, HOME, [0.02, -0.01, 0.015], [0.0] * 3)))
            client.wait_for(
                lambda: checker.last is not None and np.abs(checker.last).max() > 0.01,
                TIMEOUT,
                "motion commands",
            )
            # set_parameters_atomically and set_parameters: an integer for a double, converted.
            for srv_type, service, value in (
                (SetParametersAtomically, "set_parameters_atomically", 3),
                (SetParameters, "set_parameters", 4),
            ):
                msg = ParameterMsg(name=GAIN, value=_param_value(value))
                answer = _call(
                    client, srv_type, f"{NODE}/{service}", srv_type.Request(parameters=[msg])
                )
                result = (
                    answer.result if srv_type is SetParametersAtomically else answer.results[0]
                )  # type: ignore[attr-defined]
                assert result.successful, (service, result.reason)
                got = _gain(client)
                assert got.type == ParameterType.PARAMETER_DOUBLE and got.double_value == value
            # A string for a double: refused with the node's own one-line reason.
            msg = ParameterMsg(name=GAIN, value=_param_value("fast"))
            answer = _call(
                client,
                SetParametersAtomically,
                f"{NODE}/set_parameters_atomically",
                SetParametersAtomically.Request(parameters=[msg]),
            )
            assert not answer.result.successful  # type: ignore[attr-defined]
            assert GAIN in answer.result.reason, answer.result.reason  # type: ignore[attr-defined]
            assert _gain(client).double_value == 4.0
            # The journal's subscriber is found by polling: its ticks come.
            client.wait_for(
                lambda: len(client.received(f"{NODE}/journal")) > 5, TIMEOUT, "journal"
            )
            assert journal is not None
            client.wait_for(lambda: checker.total > 50, TIMEOUT, "50 commands")
        finally:
            robot.close()
        assert stop_process(proc, signal.SIGINT) == 0
    log = read_log(proc)
    assert "SingleThreadedExecutor" in log and "matched events: no" in log, log[-3000:]
    assert "pre set parameters callbacks: no" in log, log[-3000:]
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
    assert "shutdown: zero command sent" in log, log[-3000:]
    assert checker.bad == [] and checker.bad_count == 0
