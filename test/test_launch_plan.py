"""The launch's decisions (itasc_ros.launch_plan), without the launch libraries.

One test per README recipe ("On a real robot"), the README's commands themselves planned, and
the arguments that must refuse the whole launch before any node starts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from itasc_ros.core import ConfigError
from itasc_ros.launch_plan import (
    ARGUMENTS,
    LaunchPlan,
    LaunchPlanError,
    NodeSpec,
    plan_launch,
    root_link,
)

REPO = Path(__file__).resolve().parents[1]
README = REPO / "doc" / "getting_started.md"  # the real-robot recipes
PANDA_URDF = (REPO / "urdf" / "panda.urdf").read_text()
TWO_LINK_XACRO = """<?xml version="1.0"?>
<robot name="two_link" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="length" value="0.5"/>
  <xacro:macro name="arm_link" params="name">
    <link name="${name}"/>
  </xacro:macro>
  <xacro:arm_link name="base"/>
  <xacro:arm_link name="upper"/>
  <xacro:arm_link name="tool"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="upper"/><child link="tool"/><origin xyz="${length} 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/>
  </joint>
</robot>
"""
MY_PARAMS = {
    "/**": {
        "ros__parameters": {
            "joints": ["j1", "j2"],
            "command_out_topic": "/my_velocity_controller/commands",
            "constraint_names": ["ee"],
            "constraints": {"ee": {"type": "copy_pose", "link": "tool", "rotation_axes": ""}},
        }
    }
}


def everything_installed(package: str, executable: str) -> bool:
    return True


def missing(*executables: str) -> Callable[[str, str], bool]:
    return lambda package, executable: executable not in executables


@pytest.fixture
def my_files(tmp_path: Path) -> dict[str, Path]:
    """A user's robot: a xacro file, the URDF it gives, and a params file."""
    xacro_file = tmp_path / "my_robot.urdf.xacro"
    xacro_file.write_text(TWO_LINK_XACRO)
    urdf_file = tmp_path / "my_robot.urdf"
    urdf_file.write_text(PANDA_URDF)
    params = tmp_path / "my_itasc.yaml"
    params.write_text(yaml.safe_dump(MY_PARAMS))
    return {"xacro": xacro_file, "urdf": urdf_file, "params": params}


def plan(**given: str) -> LaunchPlan:
    return plan_launch(given, REPO, everything_installed)


def node(p: LaunchPlan, name: str) -> NodeSpec:
    (found,) = [n for n in p.nodes if n.name == name]
    return found


def names(p: LaunchPlan) -> list[str]:
    return [n.name for n in p.nodes]


def description_dicts(spec: NodeSpec) -> list[dict[str, Any]]:
    return [d for d in spec.parameters if isinstance(d, dict) and "robot_description" in d]


# --------------------------------------------------------------------------- the arguments
def test_the_arguments_and_their_defaults() -> None:
    args = {a.name: a for a in ARGUMENTS}
    assert list(args) == [
        "robot",
        "description_file",
        "params_file",
        "start_rsp",
        "use_sim",
        "rviz",
    ]
    assert args["robot"].default == "panda" and args["robot"].choices == ("panda", "ur5")
    assert args["rviz"].default == "false"
    assert args["start_rsp"].default == "true" and args["use_sim"].default == "false"
    assert args["description_file"].default == args["params_file"].default == ""
    for flag in ("start_rsp", "use_sim", "rviz"):
        assert args[flag].choices == ("true", "false")
    assert all(a.description for a in ARGUMENTS)


def test_defaults_start_the_panda_with_its_robot_state_publisher_and_no_rviz() -> None:
    p = plan()
    assert names(p) == ["robot_state_publisher", "itasc_node"]
    assert p.urdf == PANDA_URDF
    assert p.params_files == (str(REPO / "config" / "panda.yaml"),)
    assert node(p, "itasc_node").parameters == (
        str(REPO / "config" / "panda.yaml"),
        {"robot_description": PANDA_URDF},
    )
    assert p.warnings == ()


# --------------------------------------------------------------------- the README recipes
def test_recipe_1_your_robot_with_its_robot_state_publisher_running(
    my_files: dict[str, Path],
) -> None:
    """start_rsp:=false params_file:=...: the URDF from the topic, no second publisher."""
    p = plan(start_rsp="false", params_file=str(my_files["params"]))
    assert names(p) == ["itasc_node"]
    assert p.urdf is None and "robot_description topic" in p.urdf_source
    assert node(p, "itasc_node").parameters == (str(my_files["params"]),)


def test_recipe_2_your_xacro_without_a_robot_state_publisher(my_files: dict[str, Path]) -> None:
    """description_file:=...xacro params_file:=...: processed in Python, published by rsp."""
    p = plan(description_file=str(my_files["xacro"]), params_file=str(my_files["params"]))
    assert names(p) == ["robot_state_publisher", "itasc_node"]
    assert p.urdf is not None and '<joint name="j2"' in p.urdf and "xacro:" not in p.urdf
    assert '<origin xyz="0.5 0 0"/>' in p.urdf
    assert root_link(p.urdf, "?") == "base"
    for spec in p.nodes:
        assert description_dicts(spec) == [{"robot_description": p.urdf}]
    assert node(p, "itasc_node").parameters[0] == str(my_files["params"])


def test_recipe_2_with_a_plain_urdf_and_rviz(my_files: dict[str, Path]) -> None:
    p = plan(
        description_file=str(my_files["urdf"]), params_file=str(my_files["params"]), rviz="true"
    )
    assert p.urdf == PANDA_URDF
    assert node(p, "rviz2").arguments[-2:] == ("-f", "panda_link0")


def test_recipe_3_the_bundled_simulation() -> None:
    """robot:=panda use_sim:=true: the simulated robot takes the node's joints and topic."""
    p = plan(robot="panda", use_sim="true")
    assert names(p) == ["robot_state_publisher", "itasc_node", "itasc_sim_robot"]
    (sim_params,) = node(p, "itasc_sim_robot").parameters
    assert isinstance(sim_params, dict)
    assert sim_params["robot_description"] == PANDA_URDF
    assert sim_params["joints"] == [f"panda_joint{i}" for i in range(1, 8)]
    assert sim_params["command_topic"] == "/forward_velocity_controller/commands"
    assert sim_params["command_type"] == "std_msgs/Float64MultiArray"


def test_the_ur5_simulation_with_rviz_on_its_root_link() -> None:
    p = plan(robot="ur5", use_sim="true", rviz="true")
    assert names(p) == ["robot_state_publisher", "itasc_node", "itasc_sim_robot", "rviz2"]
    rviz = node(p, "rviz2")
    assert rviz.arguments == ("-d", str(REPO / "rviz" / "itasc.rviz"), "-f", "base_link")
    assert node(p, "itasc_node").parameters[0] == str(REPO / "config" / "ur5.yaml")


def _readme_commands() -> list[list[str]]:
    """The ``ros2 launch itasc_ros itasc.launch.py ...`` commands of the real-robot recipes."""
    text = README.read_text()
    section = text[text.index("## On a real robot") :]
    end = section.find("\n## ", 1)  # the next section, if the page has one
    section = (section[:end] if end > 0 else section).replace("\\\n", " ")
    return [
        shlex.split(line.split("#")[0])[4:]
        for line in re.findall(r"^\s*(ros2 launch itasc_ros itasc\.launch\.py.*)$", section, re.M)
    ]


def test_every_readme_command_plans(my_files: dict[str, Path]) -> None:
    """The README's commands as written (their files replaced by this test's)."""
    commands = _readme_commands()
    assert len(commands) >= 3
    kinds = set()
    for command in commands:
        given = dict(arg.split(":=", 1) for arg in command)
        if "description_file" in given:
            given["description_file"] = str(my_files["xacro"])
        if "params_file" in given:
            given["params_file"] = str(my_files["params"])
        p = plan_launch(given, REPO, everything_installed)
        kinds.add((p.urdf is None, "itasc_sim_robot" in names(p)))
    assert kinds == {(True, False), (False, False), (False, True)}  # the three recipes


# --------------------------------------------------------------- missing executables
def test_rviz_missing_is_skipped_with_a_warning() -> None:
    p = plan_launch({"rviz": "true", "use_sim": "true"}, REPO, missing("rviz2"))
    assert names(p) == ["robot_state_publisher", "itasc_node", "itasc_sim_robot"]
    assert [n.name for n in p.skipped] == ["rviz2"]
    assert len(p.warnings) == 1 and "rviz2/rviz2 is not installed: rviz2 skipped" in p.warnings[0]


def test_robot_state_publisher_missing_refuses_the_whole_launch() -> None:
    message = r"nothing started: robot_state_publisher/.*start_rsp:=false"
    with pytest.raises(LaunchPlanError, match=message):
        plan_launch({"use_sim": "true"}, REPO, missing("robot_state_publisher"))


def test_robot_state_publisher_missing_does_not_matter_with_start_rsp_false(
    my_files: dict[str, Path],
) -> None:
    given = {"start_rsp": "false", "params_file": str(my_files["params"])}
    p = plan_launch(given, REPO, missing("robot_state_publisher"))
    assert names(p) == ["itasc_node"]


def test_every_missing_required_executable_is_named() -> None:
    with pytest.raises(LaunchPlanError) as info:
        plan_launch({"use_sim": "true"}, REPO, missing("itasc_node", "itasc_sim_robot", "rviz2"))
    assert "itasc_ros/itasc_node" in str(info.value)
    assert "itasc_ros/itasc_sim_robot" in str(info.value)
    assert "colcon build" in str(info.value)


# ----------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"robot": "kuka"}, r"unknown robot 'kuka'; bundled robots are: \['panda', 'ur5'\]"),
        ({"description_file": "/no/such.urdf"}, r"description_file:='/no/such.urdf': no such"),
        ({"params_file": "/no/such.yaml"}, r"params_file:='/no/such.yaml': no such file"),
        ({"rviz": "yes"}, r"rviz:='yes' is not a boolean"),
        ({"robot_description": "<robot/>"}, r"unknown launch arguments \['robot_description'\]"),
        ({"use_sim": "true", "start_rsp": "false"}, r"use_sim:=true needs the URDF"),
    ],
)
def test_bad_arguments_refuse_the_launch(given: dict[str, str], message: str) -> None:
    with pytest.raises(LaunchPlanError, match=message):
        plan(**given)


def test_both_robot_and_description_file_are_refused(my_files: dict[str, Path]) -> None:
    for robot in ("panda", "ur5"):
        with pytest.raises(LaunchPlanError, match=r"either robot:=.* or description_file:="):
            plan(robot=robot, description_file=str(my_files["urdf"]))


def test_description_file_with_start_rsp_false_is_refused(my_files: dict[str, Path]) -> None:
    with pytest.raises(LaunchPlanError, match="start_rsp:=false takes the URDF"):
        plan(start_rsp="false", description_file=str(my_files["urdf"]))


def test_a_params_file_without_a_section_for_the_node_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump({"other_node": {"ros__parameters": {"a": 1}}}))
    with pytest.raises(ConfigError, match="no section for node"):
        plan(params_file=str(path))


def test_a_broken_xacro_or_urdf_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.urdf.xacro"
    bad.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><xacro:nope/></robot>')
    with pytest.raises(LaunchPlanError, match="xacro cannot process"):
        plan(description_file=str(bad))
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot><link name='a'>")
    with pytest.raises(LaunchPlanError, match="not well-formed"):
        plan(description_file=str(broken), rviz="true")


def test_without_params_file_your_urdf_runs_on_the_node_defaults(
    my_files: dict[str, Path],
) -> None:
    p = plan(description_file=str(my_files["xacro"]))
    assert p.params_files == ()
    assert node(p, "itasc_node").parameters == ({"robot_description": p.urdf},)
    assert any("no params_file" in w for w in p.warnings)


def test_a_namespaced_params_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "arm1.yaml"
    path.write_text(yaml.safe_dump({"/arm1/itasc_node": MY_PARAMS["/**"]}))
    p = plan(robot="panda", use_sim="true", params_file=str(path))
    (sim_params,) = node(p, "itasc_sim_robot").parameters
    assert isinstance(sim_params, dict) and sim_params["joints"] == ["j1", "j2"]


def test_the_urdf_is_a_node_parameter_never_a_global_one() -> None:
    p = plan(use_sim="true", rviz="true")
    for spec in p.nodes:
        dicts = [d for d in spec.parameters if isinstance(d, dict)]
        expected = 0 if spec.name == "rviz2" else 1
        assert len(description_dicts(spec)) == expected, spec.name
        assert all(d.get("robot_description") in (None, PANDA_URDF) for d in dicts)
    assert "SetParameter" not in (REPO / "launch" / "itasc.launch.py").read_text()
