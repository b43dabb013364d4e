"""launch/itasc.launch.py and rviz/itasc.rviz.

``launch``, ``launch_ros`` and ``launch_pytest`` are not installable from PyPI, so two tests always
run (the launch file parsed with ``ast``: its arguments, and every file it refers to exists; the
RViz config parsed as YAML), and one launches the whole description where ROS 2 is installed.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "launch" / "itasc.launch.py"
RVIZ = REPO / "rviz" / "itasc.rviz"


def _launch_arguments() -> dict[str, dict[str, Any]]:
    """name -> keyword arguments (as Python values or source text) of DeclareLaunchArgument."""
    tree = ast.parse(LAUNCH.read_text(), filename=str(LAUNCH))
    constants: dict[str, Any] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            try:
                constants[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except ValueError:
                pass
    args: dict[str, dict[str, Any]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "DeclareLaunchArgument":
            name = ast.literal_eval(node.args[0])
            kw: dict[str, Any] = {}
            for k in node.keywords:
                try:
                    kw[k.arg] = ast.literal_eval(k.value)  # type: ignore[index]
                except ValueError:  # e.g. list(ROBOTS)
                    src = ast.unparse(k.value)
                    if src.startswith("list(") and src[5:-1] in constants:
                        kw[k.arg] = list(constants[src[5:-1]])  # type: ignore[index]
                    else:
                        kw[k.arg] = src  # type: ignore[index]
            args[name] = kw
    return args


def test_launch_file_declares_its_arguments() -> None:
    compile(LAUNCH.read_text(), str(LAUNCH), "exec")  # valid Python
    args = _launch_arguments()
    assert set(args) == {"robot", "use_sim", "rviz"}
    assert args["robot"]["default_value"] == "panda"
    assert args["robot"]["choices"] == ["panda", "ur5"]
    for flag in ("use_sim", "rviz"):
        assert args[flag]["default_value"] in ("true", "false")
        assert args[flag]["choices"] == ["true", "false"]
    for a in args.values():
        assert a["description"]
    # Every robot choice has its URDF and its parameters file; the RViz config exists.
    for robot in args["robot"]["choices"]:
        assert (REPO / "urdf" / f"{robot}.urdf").is_file()
        params = yaml.safe_load((REPO / "config" / f"{robot}.yaml").read_text())
        assert "ros__parameters" in params["/**"]
    assert RVIZ.is_file()
    source = LAUNCH.read_text()
    for executable in ("itasc_node", "itasc_sim_robot", "robot_state_publisher", "rviz2"):
        assert f'executable="{executable}"' in source
    setup = (REPO / "setup.py").read_text()
    assert "itasc_node = itasc_ros.ros.node:main" in setup
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

try:
    import launch_pytest
except ImportError:
    launch_pytest = None


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
    @pytest.mark.launch(fixture=itasc_launch)
    def test_launch_runs_the_node_with_the_simulated_robot() -> None:
        _check_launched_node()

else:

    def test_launch_runs_the_node_with_the_simulated_robot() -> None:
        pytest.importorskip("launch_pytest", reason=SKIP_REASON)
