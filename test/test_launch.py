"""launch/itasc.launch.py and rviz/itasc.rviz.

``launch``, ``launch_ros`` and ``launch_pytest`` are not installable from PyPI, so two tests always
run (the launch file parsed with ``ast``: the adapter of ``itasc_ros.launch_plan``, whose
decisions test_launch_plan.py tests; the RViz config parsed as YAML), and one launches the whole
description where ROS 2 is installed: skipped without robot_state_publisher, and failed, never
hung, after ``HARD_TIMEOUT``.
"""

from __future__ import annotations

import ast
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "launch" / "itasc.launch.py"
RVIZ = REPO / "rviz" / "itasc.rviz"


def test_launch_file_declares_the_plan_arguments_and_starts_the_plan() -> None:
    """The launch file is the thin adapter of itasc_ros.launch_plan (its decisions are tested
    in test_launch_plan.py): it declares every argument of the plan and starts its nodes."""
    from itasc_ros.launch_plan import ARGUMENTS, ROBOTS

    source = LAUNCH.read_text()
    tree = ast.parse(source, filename=str(LAUNCH))  # valid Python
    calls = {getattr(n.func, "id", "") for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert {"DeclareLaunchArgument", "OpaqueFunction", "plan_launch", "Node"} <= calls
    assert "for a in ARGUMENTS" in source
    assert "SetParameter" not in source  # the URDF is a node parameter, never a global one
    assert [a.name for a in ARGUMENTS] == [
        "robot",
        "description_file",
        "params_file",
        "start_rsp",
        "use_sim",
        "rviz",
    ]
    # Every robot choice has its URDF and its parameters file; the RViz config exists.
    for robot in ROBOTS:
        assert (REPO / "urdf" / f"{robot}.urdf").is_file()
        params = yaml.safe_load((REPO / "config" / f"{robot}.yaml").read_text())
        assert "ros__parameters" in params["/**"]
    assert RVIZ.is_file()
    setup = (REPO / "setup.py").read_text()
    assert "itasc_node = itasc_ros.ros.itasc_node:main" in setup
    assert "itasc_sim_robot = itasc_ros.tools.sim_robot:main" in setup


def test_rviz_config_shows_robot_markers_and_target() -> None:
    config = yaml.safe_load(RVIZ.read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "panda_link0"
    displays = {d["Class"]: d for d in manager["Displays"]}
    robot = displays["rviz_default_plugins/RobotModel"]
    assert robot["Description Source"] == "Topic"
    assert robot["Description Topic"]["Value"] == "/robot_description"
    assert robot["Description Topic"]["Durability Policy"] == "Transient Local"
    assert displays["rviz_default_plugins/MarkerArray"]["Topic"]["Value"] == "/itasc_node/markers"
    im = displays["rviz_default_plugins/InteractiveMarkers"]
    assert im["Interactive Markers Namespace"] == "/itasc_node/target_marker"
    assert "rviz_default_plugins/TF" in displays
    assert all(d["Enabled"] for d in manager["Displays"])


# ------------------------------------------------------------------------- with ROS 2 only
SKIP_REASON = (
    "launch_pytest (and launch, launch_ros) are not on PyPI; this test runs where "
    "ROS 2 is installed and itasc_ros is built with colcon"
)

HARD_TIMEOUT = 120  # [s] the launch, the checks and the shutdown together, never more

try:
    import launch_pytest
except ImportError:
    launch_pytest = None


def _rsp_missing() -> bool:
    from itasc_ros.launch_plan import executable_exists

    return not executable_exists("robot_state_publisher", "robot_state_publisher")


def _check_launched_node() -> None:
    import rclpy
    from std_msgs.msg import String

    rclpy.init()  # Humble-compatible: no `with rclpy.init()`
    try:
        node = rclpy.create_node("itasc_launch_test")
        statuses: list[dict[str, Any]] = []
        node.create_subscription(
            String, "/itasc_node/status", lambda m: statuses.append(json.loads(m.data)), 10
        )
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and not statuses:
            rclpy.spin_once(node, timeout_sec=0.1)
        assert statuses, "no status from /itasc_node/status"
        # The simulated robot publishes joint states: the node waits only for a target.
        while time.monotonic() < deadline and "target" not in statuses[-1]["reason"]:
            rclpy.spin_once(node, timeout_sec=0.1)
        assert statuses[-1]["status"] == "waiting" and "target" in statuses[-1]["reason"]
        node.destroy_node()
    finally:
        rclpy.shutdown()


if launch_pytest is not None:

    @pytest.fixture(autouse=True)
    def hard_timeout() -> Iterator[None]:
        """Fail, never hang, when the launch does not reach ReadyToTest (it refused to start)."""

        def expire(signum: int, frame: object) -> None:
            raise TimeoutError(f"the launch test did not finish within {HARD_TIMEOUT} s")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.alarm(HARD_TIMEOUT)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    @launch_pytest.fixture
    def itasc_launch() -> Any:
        from launch.actions import IncludeLaunchDescription
        from launch.launch_description_sources import PythonLaunchDescriptionSource

        from launch import LaunchDescription  # type: ignore[attr-defined,unused-ignore]

        return LaunchDescription(
            [
                IncludeLaunchDescription(
                    PythonLaunchDescriptionSource(str(LAUNCH)),
                    launch_arguments={
                        "robot": "panda",
                        "use_sim": "true",
                        "rviz": "false",
                    }.items(),
                ),
                launch_pytest.actions.ReadyToTest(),
            ]
        )

    @pytest.mark.dds
    @pytest.mark.skipif(
        _rsp_missing(),
        reason="robot_state_publisher is not installed (apt install "
        "ros-$ROS_DISTRO-robot-state-publisher); the launch refuses to start without it",
    )
    @pytest.mark.launch(fixture=itasc_launch)
    def test_launch_runs_the_node_with_the_simulated_robot() -> None:
        _check_launched_node()

else:

    def test_launch_runs_the_node_with_the_simulated_robot() -> None:
        pytest.importorskip("launch_pytest", reason=SKIP_REASON)
