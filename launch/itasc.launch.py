"""Launch itasc_node on your robot or a bundled demo robot.

    ros2 launch itasc_ros itasc.launch.py start_rsp:=false params_file:=my_itasc.yaml
    ros2 launch itasc_ros itasc.launch.py description_file:=my_robot.urdf.xacro \\
        params_file:=my_itasc.yaml
    ros2 launch itasc_ros itasc.launch.py robot:=panda use_sim:=true rviz:=true

Arguments (``ros2 launch itasc_ros itasc.launch.py --show-args``): robot, description_file,
params_file, start_rsp, use_sim, rviz. Every decision (which URDF, which parameters, which
nodes, which executables are missing) is made by ``itasc_ros.launch_plan.plan_launch`` before
any node starts; this file only declares the arguments and turns the plan into nodes.
"""

from __future__ import annotations

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.logging import get_logger
from launch_ros.actions import Node

from itasc_ros.launch_plan import ARGUMENTS, PACKAGE, NodeSpec, executable_exists, plan_launch
from launch import LaunchContext, LaunchDescription


def _node(spec: NodeSpec) -> Node:
    """A launch_ros node from the plan's node."""
    return Node(
        package=spec.package,
        executable=spec.executable,
        name=spec.name,
        parameters=list(spec.parameters),
        arguments=list(spec.arguments),
        output="screen",
        emulate_tty=True,
    )


def _record_given(context: LaunchContext, given: dict[str, str]) -> None:
    """Before the declarations set their defaults: the arguments the user gave."""
    for a in ARGUMENTS:
        if a.name in context.launch_configurations:
            given[a.name] = context.launch_configurations[a.name]


def _launch(context: LaunchContext, given: dict[str, str]) -> list[Node]:
    """Plan first (raising before any node starts), then start the planned nodes."""
    share = Path(get_package_share_directory(PACKAGE))
    plan = plan_launch(given, share, executable_exists)
    logger = get_logger("itasc.launch")
    for warning in plan.warnings:
        logger.warning(warning)
    logger.info(plan.summary())
    return [_node(spec) for spec in plan.nodes]


def generate_launch_description() -> LaunchDescription:
    given: dict[str, str] = {}
    declarations = [
        DeclareLaunchArgument(
            a.name,
            default_value=a.default,
            description=a.description,
            choices=list(a.choices) or None,
        )
        for a in ARGUMENTS
    ]
    return LaunchDescription(
        [
            OpaqueFunction(function=_record_given, kwargs={"given": given}),
            *declarations,
            OpaqueFunction(function=_launch, kwargs={"given": given}),
        ]
    )
