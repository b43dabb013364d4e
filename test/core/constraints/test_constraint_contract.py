"""The contract every registered constraint type keeps; a new type joins by being registered.

For each type of :data:`itasc_ros.core.constraints.REGISTRY`, each of its
``example_settings`` and two robots (Panda, UR5; example-robot-data's URDFs, with their
inertials, the Panda's arm joints):

* the rows of A and B match finite differences of the outputs y with respect to q and to the
  target's twist (B only for a type that takes a target pose);
* position IK solves it on the rows it declares: one error per row, the orientation rows it
  declares (``orientation_rows``) give the rotation error and the others the position error,
  and a type that declares itself a pose (``pose_goal``) is solved as that pose is;
* its configuration round-trips (``to_dict`` / ``from_dict``) and every setting is checked:
  an unknown setting, a value of the wrong kind, NaN, a number out of range are each a
  :class:`ConfigError` naming the setting;
* a live change of every live setting keeps the target (the rebuilt constraint carries it);
* the node declares exactly the type's settings as ROS parameters (read-only unless live,
  ranges from the fields) and reads the same configuration back (an in-process rclpy node).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import rclpy
from procs import dds_env
from rclpy.parameter import Parameter
from robots import erd_urdf_path
from test_constraints import HOME, TIP, _fd_dy_dq, _fd_dy_dxu, _random_pose

from itasc_ros.core import (
    REGISTRY,
    ConfigError,
    ConstraintConfig,
    Controller,
    ControllerConfig,
    KinematicTree,
    Scene,
    solve_ik,
)
from itasc_ros.core.constraints import Field
from itasc_ros.core.kinematics import spatial
from itasc_ros.ros import parameters as P

ROBOTS = ("panda", "ur5")
TREES = {
    r: (t := KinematicTree.from_urdf_file(erd_urdf_path(r))).select_joints(
        [j for j in t.joint_names if "finger" not in j]
    )
    for r in ROBOTS
}
CASES = [
    (robot, type_name, i)
    for robot in ROBOTS
    for type_name in sorted(REGISTRY)
    for i in range(len(REGISTRY[type_name].example_settings(TREES[robot])))
]
IDS = [f"{t}-{i}-{r}" for r, t, i in CASES]


def test_the_registered_types_are_listed() -> None:
    print("\nregistered constraint types: " + ", ".join(sorted(REGISTRY)))
    assert {"copy_pose", "distance", "joint_value"} <= set(REGISTRY)
    for name, cls in REGISTRY.items():
        assert cls.type_name == name
        assert {"weight", "gain", "priority"} <= {f.name for f in cls.FIELDS}
        assert len({f.name for f in cls.FIELDS}) == len(cls.FIELDS), name


def config_of(robot: str, type_name: str, i: int) -> ConstraintConfig:
    """The validated configuration of example ``i`` (links resolved on the robot)."""
    tree = TREES[robot]
    settings = REGISTRY[type_name].example_settings(tree)[i]
    cfg = ConstraintConfig("c", type_name, **settings).validate()
    cfg.settings = cfg.kind.resolve_settings(cfg.settings, tree)
    return cfg


def target_near_effector(tree: KinematicTree, q: np.ndarray, link: str | None) -> np.ndarray:
    rng = np.random.default_rng(7)
    near = tree.forward_kinematics(q, link or TIP["panda"])
    return _random_pose(rng, near, 0.2, 0.5)


@pytest.mark.parametrize(("robot", "type_name", "i"), CASES, ids=IDS)
def test_rows_match_finite_differences(robot: str, type_name: str, i: int) -> None:
    tree = TREES[robot]
    cfg = config_of(robot, type_name, i)
    c = cfg.build()
    scene = Scene(tree, [c])
    rng = np.random.default_rng(11)
    for _ in range(3):
        q = HOME[robot] + rng.normal(0.0, 0.3, tree.n_joints)
        if cfg.takes_target:
            pose = target_near_effector(tree, q, c.effector_link)
            c.set_target(pose)
        m = scene.matrices(q)
        assert m["A"].shape == (c.n_rows, tree.n_joints) and m["B"].shape == (c.n_rows, 6)
        np.testing.assert_allclose(m["A"], _fd_dy_dq(scene, q), atol=1e-6)
        if cfg.takes_target:
            np.testing.assert_allclose(
                -m["B"], _fd_dy_dxu(scene, q, c.set_target, pose), atol=1e-6
            )
        assert np.all(np.isfinite(m["ydot"])) and np.all(m["wy"] >= 0.0)


@pytest.mark.parametrize(("robot", "type_name", "i"), CASES, ids=IDS)
def test_position_ik_solves_the_rows_the_type_declares(robot: str, type_name: str, i: int) -> None:
    tree = TREES[robot]
    cfg = config_of(robot, type_name, i)
    c = cfg.build()
    q = HOME[robot]
    if cfg.takes_target:
        c.set_target(target_near_effector(tree, q, c.effector_link))
    budget: dict[str, Any] = {"seed": q, "timeout": None, "max_iterations": 5}
    r = solve_ik(tree, constraints=[c], **budget)
    kinds = c.orientation_rows()  # bound to the tree now: the rows of some types depend on it
    assert len(kinds) == c.n_rows and all(isinstance(k, bool) for k in kinds)
    assert r.errors.shape == (c.n_rows,) and np.all(np.isfinite(r.errors))
    assert np.all(r.q >= tree.lower) and np.all(r.q <= tree.upper)
    rot = np.array(kinds, dtype=bool)
    assert r.rotation_error == pytest.approx(np.linalg.norm(r.errors[rot]), rel=1e-12, abs=0.0)
    assert r.position_error == pytest.approx(np.linalg.norm(r.errors[~rot]), rel=1e-12, abs=0.0)
    goal = c.pose_goal()
    if goal is not None:  # the same solve as the pose itself (the compiled loop)
        np.testing.assert_array_equal(goal.pose, c.target_pose(tree, q))
        axes = {"position_axes": goal.position_axes, "rotation_axes": goal.rotation_axes}
        alone = solve_ik(tree, goal.pose, goal.link, **axes, **budget)
        assert np.array_equal(alone.q, r.q) and alone.iterations == r.iterations


def test_a_pose_goal_is_declared_only_for_a_set_pose_on_root_axes_or_all_six() -> None:
    tree = TREES["panda"]
    configs = [config_of("panda", "copy_pose", i) for i in range(4)]
    assert all(cfg.build().pose_goal() is None for cfg in configs)  # no target pose set yet
    pose = tree.forward_kinematics(HOME["panda"], TIP["panda"])
    declared = []
    for cfg in configs:
        c = cfg.build()
        c.set_target(pose)
        declared.append(c.pose_goal())
    full = declared[0]  # all six axes (on the target's axes: the same solutions)
    assert full is not None and full.link == configs[0].settings["link"]
    assert np.array_equal(full.pose, pose)
    assert (full.position_axes, full.rotation_axes) == ("xyz", "xyz")
    assert declared[1] is None and declared[2] is None  # some axes of the target / effector
    assert declared[3] is None  # the target is a link
    others = [t for t in sorted(REGISTRY) if t != "copy_pose"]
    for type_name in others:
        for i in range(len(REGISTRY[type_name].example_settings(tree))):
            assert config_of("panda", type_name, i).build().pose_goal() is None, type_name


def _wrong_values(f: Field) -> list[Any]:
    """Values of the wrong kind or out of range for ``f``."""
    out: list[Any] = [object()]
    if f.kind == "double":
        out += [math.nan, math.inf, "1.0", True]
    elif f.kind == "integer":
        out += [math.nan, 1.5, "1", True, [1]]
        out += [] if f.lo is None else [int(f.lo) - 1]
        return out + ([] if f.hi is None else [int(f.hi) + 1])
    elif f.kind == "double_array":
        out += ["x", [math.nan], 3.0]
    elif f.kind == "bool":
        out += [1, "true"]
    elif f.kind == "string":
        out += [3, None]
    else:
        out += ["x", [3], [""]]
    if f.hi is not None:
        out.append(f.hi * 2 + 1 if f.kind == "double" else [f.hi * 2 + 1])
    if f.lo is not None:
        out.append(f.lo * 2 - 1 if f.kind == "double" else [f.lo * 2 - 1])
    return out


@pytest.mark.parametrize(("robot", "type_name", "i"), [c for c in CASES if c[0] == "panda"])
def test_configuration_round_trips_and_every_setting_is_checked(
    robot: str, type_name: str, i: int
) -> None:
    cfg = config_of(robot, type_name, i)
    again = ConstraintConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.to_dict() == cfg.to_dict()
    with pytest.raises(ConfigError, match="valid settings are: "):
        ConstraintConfig("c", type_name, **{**cfg.settings, "no_such_setting": 1.0}).validate()
    for f in cfg.fields:
        for bad in _wrong_values(f):
            with pytest.raises(ConfigError, match=f.name):
                ConstraintConfig("c", type_name, **{**cfg.settings, f.name: bad}).validate()


@pytest.mark.parametrize(("robot", "type_name", "i"), [c for c in CASES if c[0] == "panda"])
def test_a_live_change_of_every_live_setting_keeps_the_target(
    robot: str, type_name: str, i: int
) -> None:
    tree = TREES[robot]
    cfg = config_of(robot, type_name, i)
    ctrl = Controller(tree, ControllerConfig(constraints=[cfg]))
    ctrl.set_joint_state(tree.joint_names, HOME[robot], 0.0)
    if cfg.takes_target:
        pose = target_near_effector(tree, HOME[robot], ctrl.constraint("c").effector_link)
        ctrl.set_target("c", "", pose[:3, 3], spatial.matrix_to_quat(pose), 0.0)
    assert ctrl.step(0.0).status == "active"
    before = ctrl.poses("c")[1]
    live = [f for f in cfg.fields if f.live]
    assert live, f"{type_name} has no live setting"
    for f in live:
        ctrl.update_parameters(**{f"constraints.c.{f.name}": cfg.settings[f.name]})
        assert ctrl.step(0.0).status == "active", f.name
        after = ctrl.poses("c")[1]
        if before is None:
            assert after is None
        else:
            np.testing.assert_allclose(after, before, atol=1e-12, err_msg=f.name)


@pytest.fixture(scope="module")
def rclpy_context(dds_domain: int) -> Iterator[None]:
    with dds_env(dds_domain):
        rclpy.init()
        try:
            yield
        finally:
            rclpy.shutdown()


@pytest.mark.parametrize(("robot", "type_name", "i"), [c for c in CASES if c[0] == "panda"])
def test_the_node_declares_exactly_the_settings_of_the_type(
    rclpy_context: None, robot: str, type_name: str, i: int
) -> None:
    cfg = config_of(robot, type_name, i)
    overrides = [
        Parameter("constraint_names", value=["c"]),
        Parameter("constraints.c.type", value=type_name),
        *(
            Parameter(f"constraints.c.{k}", value=v)
            for k, v in cfg.settings.items()
            if not (isinstance(v, list) and not v)  # rclpy cannot type an empty list
        ),
    ]
    node = rclpy.create_node(f"contract_{type_name}_{i}", parameter_overrides=overrides)
    try:
        P.declare_parameters(node)
        declared = {n for n in node._parameters if n.startswith("constraints.c.")}
        assert declared == {"constraints.c.type"} | {f"constraints.c.{f.name}" for f in cfg.fields}
        for f in cfg.fields:
            d = node.describe_parameter(f"constraints.c.{f.name}")
            assert d.read_only == (not f.live), f.name
            if f.kind == "double" and f.lo is not None:
                assert d.floating_point_range[0].from_value == f.lo, f.name
                assert d.floating_point_range[0].to_value == f.hi, f.name
            if f.kind == "integer" and f.lo is not None:
                assert d.integer_range[0].from_value == f.lo, f.name
                assert d.integer_range[0].to_value == f.hi, f.name
        assert node.describe_parameter("constraints.c.type").read_only
        assert P.read_config(node).constraint("c") == cfg
    finally:
        node.destroy_node()
