"""The one reader of the node's parameters outside ROS (itasc_ros.params)."""

from __future__ import annotations

from pathlib import Path

import pytest

from itasc_ros.core import ConfigError
from itasc_ros.params import (
    config_from_parameters,
    config_from_params_data,
    load_config,
    nest_parameters,
    node_section,
    read_params_file,
    robots_urdf,
    target_topics,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("robot", ["panda", "ur5"])
def test_the_bundled_params_files_read(robot: str) -> None:
    flat = read_params_file(REPO / "config" / f"{robot}.yaml")
    assert flat["constraints.ee.type"] == "copy_pose"
    config = load_config(REPO / "config" / f"{robot}.yaml")
    assert config.constraint("ee").gain == flat["constraints.ee.gain"]
    assert config.control_rate == flat["control_rate"]


@pytest.mark.parametrize("path", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_params_file_builds_its_controller(path: Path) -> None:
    """Each file of config/ (one robot each) reads and fits its robot's URDF unchanged."""
    from itasc_ros.core import Controller, KinematicTree

    config = load_config(path)
    if path.stem.startswith("talos") or "collision" in path.stem or "obstacles" in path.stem:
        return  # example-robot-data's URDFs and meshes: their scenarios and tests build them
    flat = read_params_file(path)
    robots = flat.get("robots") or []
    if robots:  # several robots: their files (relative to the repository) composed
        for r in robots:
            flat[f"robots.{r}.urdf_file"] = str(REPO / flat[f"robots.{r}.urdf_file"])
        xml, why = robots_urdf(flat, robots)
        assert xml is not None, why
        tree = KinematicTree.from_urdf(xml)
    else:
        robot = "ur5" if path.stem.startswith("ur5") else "panda"
        tree = KinematicTree.from_urdf_file(REPO / "urdf" / f"{robot}.urdf")
    ctrl = Controller(tree, config)
    assert [c.name for c in ctrl.config.constraints] == [c.name for c in config.constraints]


def test_a_robots_urdf_from_its_description_topic_comes_before_its_file() -> None:
    from itasc_ros.core import KinematicTree

    panda = str(REPO / "urdf" / "panda.urdf")
    ur5 = (REPO / "urdf" / "ur5.urdf").read_text()
    flat = {"robots.a.urdf_file": panda, "robots.b.description_topic": "/b/robot_description"}
    xml, why = robots_urdf(flat, ["a", "b"])  # b has no file: it waits for its topic
    assert xml is None and why == "robot 'b': waiting for its URDF on '/b/robot_description'"
    xml, why = robots_urdf(flat, ["a", "b"], {"b": ur5})
    assert xml is not None, why
    names = KinematicTree.from_urdf(xml).joint_names
    assert "a_panda_joint1" in names and "b_shoulder_pan_joint" in names
    flat["robots.b.urdf_file"] = panda  # a file: used until the topic brings one
    assert (
        "b_panda_joint1" in KinematicTree.from_urdf(robots_urdf(flat, ["a", "b"])[0]).joint_names
    )
    xml, _ = robots_urdf(flat, ["a", "b"], {"b": ur5})
    assert "b_shoulder_pan_joint" in KinematicTree.from_urdf(xml).joint_names


def test_a_typo_is_named_not_ignored() -> None:
    with pytest.raises(ConfigError, match=r"unknown parameters \['damping_mx'\]"):
        config_from_parameters({"damping_mx": 0.2})
    with pytest.raises(ConfigError, match=r"unknown settings \['gian'\]"):
        config_from_parameters({"constraints.ee.type": "copy_pose", "constraints.ee.gian": 1.0})


def test_node_only_parameters_are_skipped() -> None:
    config = config_from_parameters(
        {"command_out_type": "x", "use_sim_time": True, "qos_overrides./a.depth": 3}
    )
    assert config.constraints == []


@pytest.mark.parametrize(
    "section", ["itasc_node", "/itasc_node", "/**", "/**/itasc_node", "/arm1/itasc_node", "/*"]
)
def test_every_section_name_of_ros_params_files(section: str) -> None:
    data = {section: {"ros__parameters": {"control_rate": 100.0}}}
    assert config_from_params_data(data).control_rate == 100.0


@pytest.mark.parametrize(
    ("section", "fqn", "applies"),
    [
        ("/**", "/arm1/itasc_node", True),
        ("/**/itasc_node", "/arm1/itasc_node", True),
        ("/**/itasc_node", "/itasc_node", True),
        ("/arm1/itasc_node", "/arm1/itasc_node", True),
        ("/arm1/*", "/arm1/itasc_node", True),
        ("itasc_node", "/arm1/itasc_node", False),
        ("/itasc_node", "/arm1/itasc_node", False),
        ("/arm2/itasc_node", "/arm1/itasc_node", False),
        ("/**/other", "/arm1/itasc_node", False),
        ("/*", "/arm1/itasc_node", False),
    ],
)
def test_a_fully_qualified_name_reads_the_sections_ros_applies(
    section: str, fqn: str, applies: bool
) -> None:
    data = {section: {"ros__parameters": {"control_rate": 100.0}}}
    if applies:
        assert node_section(data, fqn) == {"control_rate": 100.0}
    else:
        with pytest.raises(ConfigError, match="no section for node"):
            node_section(data, fqn)


def test_wildcard_then_specific_sections_merge() -> None:
    """``/**`` first, then the node's own sections: the node's values win, the rest stays."""
    data = {
        "/**": {"ros__parameters": {"control_rate": 50.0, "solver": "sdls", "joints": ["a"]}},
        "/**/itasc_node": {"ros__parameters": {"control_rate": 60.0, "damping_max": 0.2}},
        "itasc_node": {"ros__parameters": {"control_rate": 70.0}},
        "/arm1/itasc_node": {"ros__parameters": {"damping_max": 0.3}},
        "/arm2/other": {"ros__parameters": {"solver": "dls"}},
    }
    root = node_section(data, "/itasc_node")
    assert root == {"control_rate": 70.0, "solver": "sdls", "joints": ["a"], "damping_max": 0.2}
    arm1 = node_section(data, "/arm1/itasc_node")
    assert arm1 == {"control_rate": 60.0, "solver": "sdls", "joints": ["a"], "damping_max": 0.3}


def test_sections_merge_in_the_file_order_as_rclpy_does() -> None:
    """What rclpy gives a node ``n`` for this file (checked with rclpy from PyPI, Kilted):
    /arm1/n -> a=2, b=1, c=3; /n -> a=2, c=3 (a later section replaces an earlier value)."""
    data = {
        "/arm1/n": {"ros__parameters": {"a": 1, "b": 1}},
        "/**": {"ros__parameters": {"a": 2, "c": 2}},
        "/**/n": {"ros__parameters": {"c": 3}},
    }
    assert node_section(data, "/arm1/n") == {"a": 2, "b": 1, "c": 3}
    assert node_section(data, "/n") == {"a": 2, "c": 3}


def test_a_bare_name_takes_the_namespace_the_file_gives() -> None:
    data = {
        "/**": {"ros__parameters": {"control_rate": 50.0}},
        "/arm1/itasc_node": {"ros__parameters": {"damping_max": 0.3}},
    }
    assert node_section(data, "itasc_node") == {"control_rate": 50.0, "damping_max": 0.3}
    data["/arm2/itasc_node"] = {"ros__parameters": {"damping_max": 0.4}}
    with pytest.raises(ConfigError, match=r"several nodes named 'itasc_node'.*'/arm1/itasc_node'"):
        node_section(data, "itasc_node")
    assert node_section(data, "/arm2/itasc_node")["damping_max"] == 0.4


def test_a_matching_section_without_ros_parameters_is_refused() -> None:
    with pytest.raises(ConfigError, match="section '/\\*\\*' has no 'ros__parameters:'"):
        node_section({"/**": {"joints": []}})


def test_the_bundled_params_files_apply_under_any_namespace() -> None:
    for robot in ("panda", "ur5"):
        path = REPO / "config" / f"{robot}.yaml"
        assert read_params_file(path, "/arm1/itasc_node") == read_params_file(path)
        assert read_params_file(path, "/a/b/itasc_node")["joints"]


def test_a_missing_section_names_the_sections() -> None:
    with pytest.raises(ConfigError, match=r"sections: \['other'\]"):
        config_from_params_data({"other": {"ros__parameters": {}}})
    with pytest.raises(ConfigError, match="cannot read params file"):
        read_params_file(REPO / "no_such.yaml")


def test_a_name_that_is_a_value_and_a_group_clashes() -> None:
    with pytest.raises(ConfigError, match="clashes"):
        nest_parameters({"a": 1, "a.b": 2})


def test_node_only_keys_are_the_node_parameters_that_are_not_controller_settings() -> None:
    from itasc_ros.core.control.config import NODE_ONLY_KEYS
    from itasc_ros.params import CONTROLLER_KEYS
    from itasc_ros.ros.parameters import NODE_PARAMS

    declared = {s.name for s in NODE_PARAMS}
    rclpy_own = {"use_sim_time", "start_type_description_service"}
    assert declared - CONTROLLER_KEYS == NODE_ONLY_KEYS - rclpy_own
    assert CONTROLLER_KEYS <= declared


def test_target_topics_of_several_constraints() -> None:
    config = config_from_parameters(
        {
            "constraints.a.type": "copy_pose",
            "constraints.j.type": "joint_value",
            "constraints.j.joints": ["x"],
            "constraints.j.values": [0.0],
            "constraints.b.type": "distance",
            "constraints.c.type": "copy_pose",
            "constraints.c.target_topic": "/vision/pose",
            "constraints.d.type": "copy_pose",
            "constraints.d.target_link": "other",
        }
    )
    assert target_topics(config) == {
        "a": ("~/target_pose", "~/target_twist"),
        "b": ("~/b/target_pose", "~/b/target_twist"),
        "c": ("/vision/pose", "~/c/target_twist"),
    }
