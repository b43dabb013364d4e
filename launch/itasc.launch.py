"""Launch itasc_node for a bundled robot, with robot_state_publisher, a simulated robot and RViz.

    ros2 launch itasc_ros itasc.launch.py robot:=panda use_sim:=true rviz:=true

Arguments:
    robot: bundled robot ('panda' or 'ur5'): urdf/<robot>.urdf and config/<robot>.yaml.
    use_sim: also start itasc_sim_robot (integrates the commands, publishes joint_states);
        false on a real robot whose ros2_control runs a JointGroupVelocityController.
    rviz: start rviz2 with rviz/itasc.rviz (robot model, markers, interactive target).
"""

from __future__ import annotations

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchContext, LaunchDescription

PACKAGE = "itasc_ros"
ROBOTS = {"panda": "panda_link0", "ur5": "base_link"}  # robot -> root link (RViz fixed frame)


def _nodes(context: LaunchContext) -> list[Node]:
    robot = LaunchConfiguration("robot").perform(context)
    if robot not in ROBOTS:
        raise ValueError(f"unknown robot {robot!r}; bundled robots are: {', '.join(ROBOTS)}")
    share = Path(get_package_share_directory(PACKAGE))
    description = (share / "urdf" / f"{robot}.urdf").read_text(encoding="utf-8")
    config = str(share / "config" / f"{robot}.yaml")
    return [
        Node(
            package="robot_state_publisher",
            executable="robot_state_publisher",
            parameters=[{"robot_description": description}],
            output="screen",
        ),
        Node(
            package=PACKAGE,
            executable="itasc_node",
            name="itasc_node",
            parameters=[config, {"robot_description": description}],
            output="screen",
            emulate_tty=True,
        ),
        Node(
            package=PACKAGE,
            executable="itasc_sim_robot",
            name="itasc_sim_robot",
            parameters=[{"robot_description": description}],
            output="screen",
            condition=IfCondition(LaunchConfiguration("use_sim")),
        ),
        Node(
            package="rviz2",
            executable="rviz2",
            arguments=["-d", str(share / "rviz" / "itasc.rviz"), "-f", ROBOTS[robot]],
            output="screen",
            condition=IfCondition(LaunchConfiguration("rviz")),
        ),
    ]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "robot",
                default_value="panda",
                choices=list(ROBOTS),
                description="bundled robot: urdf/<robot>.urdf and config/<robot>.yaml",
            ),
            DeclareLaunchArgument(
                "use_sim",
                default_value="false",
                choices=["true", "false"],
                description="start itasc_sim_robot instead of a real robot's ros2_control",
            ),
            DeclareLaunchArgument(
                "rviz",
                default_value="true",
                choices=["true", "false"],
                description="start rviz2 with rviz/itasc.rviz",
            ),
            OpaqueFunction(function=_nodes),
        ]
    )
