"""The node's parameters are declared once (``core/control/settings.py``); all else follows.

* The controller's configuration, the node's ROS declarations, the choices it checks and the
  README's tables agree with the one declaration (a new parameter shows everywhere by being
  declared there, or a test here fails).
* Every default passes its own checks; a value out of range or not one of the choices is
  refused naming what is valid (the closest choice for a typo).
* ``ros2 param set`` of an undeclared name is refused with the closest declared name, nothing
  changes and the node runs on (the node as its own process over DDS).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from procs import RosTestClient, node_command, read_log, ros_client, start_process, stop_process
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters

from itasc_ros.core.control.config import ControllerConfig
from itasc_ros.core.control.settings import (
    BY_NAME,
    COMMAND_OUT_TYPES,
    CONTROLLER,
    CONTROLLER_SETTINGS,
    LIVE_KEYS,
    NODE_ONLY_KEYS,
    SETTINGS,
)
from itasc_ros.core.errors import ConfigError
from itasc_ros.params import CONTROLLER_KEYS
from itasc_ros.ros.conversions import COMMAND_TYPES
from itasc_ros.ros.parameter_docs import markdown
from itasc_ros.ros.parameters import CHOICES, NODE_PARAMS
from itasc_ros.tools.dds_env import local_dds_env
from itasc_ros.tools.resources import robot_urdf

STRUCTURE = ("joints", "constraint_names")  # controller settings that are not live attributes


def test_the_controller_configuration_is_the_declared_controller_settings() -> None:
    attributes = {f.name: f for f in dataclasses.fields(ControllerConfig)}
    declared = {s.name for s in CONTROLLER_SETTINGS} - {"constraint_names"}
    assert set(attributes) - {"constraints", "joint_limits"} == declared
    config = ControllerConfig()
    for s in CONTROLLER_SETTINGS:
        if s.name != "constraint_names":
            assert getattr(config, s.name) == s.default, s.name
    assert LIVE_KEYS == {s.name for s in CONTROLLER_SETTINGS if s.live}
    assert CONTROLLER_KEYS == {s.name for s in CONTROLLER_SETTINGS}
    assert NODE_ONLY_KEYS >= {s.name for s in SETTINGS if s.scope != CONTROLLER}


def test_every_default_passes_its_own_checks() -> None:
    for s in SETTINGS:
        assert s.check("", s.default) == s.default, s.name
        assert s.description and s.description[-1] in ".)", s.name


@pytest.mark.parametrize("name", [s.name for s in SETTINGS if s.lo is not None])
def test_a_number_out_of_range_is_refused_with_the_range(name: str) -> None:
    s = BY_NAME[name]
    assert s.hi is not None
    with pytest.raises(ConfigError, match=f"{name} must be <= "):
        s.check("", s.hi + 1)


def test_a_choice_typo_names_the_closest_choice() -> None:
    with pytest.raises(ConfigError, match="unknown solver 'dsl'; did you mean 'dls'"):
        BY_NAME["solver"].check("", "dsl")
    with pytest.raises(ConfigError, match="did you mean 'joint_states'"):
        BY_NAME["control_trigger"].check("", "joint_state")
    with pytest.raises(ConfigError, match="solvers are: dls, sdls"):
        ControllerConfig(solver="svd").validate()


def test_the_ros_declarations_follow_the_settings() -> None:
    assert [p.name for p in NODE_PARAMS] == [s.name for s in SETTINGS]
    for p, s in zip(NODE_PARAMS, SETTINGS, strict=True):
        d = p.descriptor()
        assert d.read_only == (not s.live), s.name
        if s.kind in ("double", "integer") and s.lo is not None:
            r = d.floating_point_range or d.integer_range
            assert (r[0].from_value, r[0].to_value) == (s.lo, s.hi), s.name
        if s.unit:
            assert d.description.endswith(f"[{s.unit}]"), s.name
    assert CHOICES == {s.name: s.options for s in SETTINGS if s.options}
    assert tuple(COMMAND_TYPES) == COMMAND_OUT_TYPES  # a message class for each choice


def test_the_readme_tables_show_every_setting() -> None:
    table = markdown()
    for s in SETTINGS:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{s.name}` |"))
        assert ("live" if s.live else "read-only") in row and s.description in row, s.name
        assert not s.unit or f"| {s.unit} |" in row, s.name


# ------------------------------------------------------------------ live, over DDS
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s


@pytest.fixture(scope="module")
def client(dds_domain: int) -> Iterator[RosTestClient]:
    with ros_client(dds_domain, "itasc_declarations_client") as c:
        yield c


@pytest.mark.dds
def test_setting_an_undeclared_name_is_refused_with_the_closest_name(
    client: RosTestClient, dds_domain: int
) -> None:
    node = "/decl/itasc_node"
    urdf = f"urdf_file:={robot_urdf('panda')}"
    proc = start_process(
        node_command("-r", "__ns:=/decl", "-p", urdf, "-p", "command_out_topic:=commands"),
        local_dds_env(dds_domain),
        name="itasc_node_declarations",
    )
    put: Any = client.node.create_client(SetParameters, f"{node}/set_parameters")
    get: Any = client.node.create_client(GetParameters, f"{node}/get_parameters")

    def call(srv: Any, request: Any) -> Any:
        assert srv.wait_for_service(timeout_sec=TIMEOUT), read_log(proc)[-2000:]
        return client.answer(srv, request, TIMEOUT)

    def set_one(name: str, value: ParameterValue) -> Any:
        request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=value)])
        (result,) = call(put, request).results
        return result

    double = ParameterType.PARAMETER_DOUBLE
    try:
        for name, closest in (("solvr", "solver"), ("constraints.ee.gian", "constraints.ee.gain")):
            value = ParameterValue(type=double, double_value=5.0)
            result = set_one(name, value)
            assert not result.successful, name
            assert f"unknown parameter {name!r}" in result.reason, result.reason
            assert f"did you mean {closest!r}?" in result.reason, result.reason
        # A request mixing a good value and an undeclared name changes nothing.
        mixed = SetParameters.Request(
            parameters=[
                ParameterMsg(
                    name="damping_max", value=ParameterValue(type=double, double_value=0.2)
                ),
                ParameterMsg(
                    name="dampng_max", value=ParameterValue(type=double, double_value=0.2)
                ),
            ]
        )
        results = call(put, mixed).results
        assert results[0].successful and not results[1].successful  # one by one, as rclpy
        (damping,) = call(get, GetParameters.Request(names=["damping_max"])).values
        assert damping.double_value == 0.2
        assert proc.poll() is None, read_log(proc)[-3000:]
    finally:
        client.node.destroy_client(put)
        client.node.destroy_client(get)
        code = stop_process(proc)
    assert code == 0, read_log(proc)[-3000:]
