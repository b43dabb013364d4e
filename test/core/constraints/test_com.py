"""The centre of mass: URDF inertials, the tree's CoM and Jacobian, and the ``com`` constraint.

* masses and inertial origins from the URDF: the CoM and its Jacobian equal Pinocchio's
  ``centerOfMass`` / ``jacobianCenterOfMass`` on Talos and Panda (example-robot-data), mimic
  joints folded in, a restricted joint set's columns too;
* the ``com`` band: rows off inside, a smooth ramp within ``margin`` of an edge, a pull back
  outside; a target drives the CoM there (closed loop);
* URDFs without masses or with unreadable inertials are refused by name.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from robots import erd_urdf_path

from itasc_ros.core import ConfigError, ConstraintConfig, ConstraintError, KinematicTree, Scene
from itasc_ros.core.constraints.com import CenterOfMass
from itasc_ros.tools.resources import robot_urdf

TALOS = KinematicTree.from_urdf_file(erd_urdf_path("talos"))


def _pinocchio_com(tree: KinematicTree, path: str, q: np.ndarray) -> tuple[np.ndarray, ...]:
    """Pinocchio's CoM and Jacobian at the tree's ``q`` (every active joint), same convention.

    Pinocchio leaves out the mass fixed to the universe (the root link and what is welded to
    it); it is added back here, as the tree counts every link.
    """
    model = pin.buildModelFromUrdf(path)
    data = model.createData()
    qp = pin.neutral(model)
    full = tree.select_joints(tree.all_joint_names)
    joints = full.joints
    m = full._m
    for k, j in enumerate(joints):
        if j.type == "fixed":
            continue
        jid = model.getJointId(j.name)
        qp[model.joints[jid].idx_q] = m.mult[k] * q[m.qidx[k]] + m.offs[k]
    c = pin.centerOfMass(model, data, qp)
    jac = pin.jacobianCenterOfMass(model, data, qp)
    cols = np.zeros((3, len(tree.all_joint_names)))
    for k, j in enumerate(joints):
        if j.type != "fixed":
            jid = model.getJointId(j.name)
            cols[:, m.qidx[k]] += m.mult[k] * jac[:, model.joints[jid].idx_v]
    moving, fixed = data.mass[0], model.inertias[0].mass
    total = moving + fixed
    return (moving * c + fixed * model.inertias[0].lever) / total, cols * moving / total, total


@pytest.mark.parametrize("robot", ["talos", "panda"])
def test_com_and_jacobian_match_pinocchio(robot: str) -> None:
    path = str(erd_urdf_path(robot))
    tree = KinematicTree.from_urdf_file(path)
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = tree.random_configuration(rng)
        com, jac = tree.center_of_mass(q)
        ref_c, ref_j, mass = _pinocchio_com(tree, path, q)
        assert tree.mass == pytest.approx(mass, rel=1e-12)
        np.testing.assert_allclose(com, ref_c, atol=1e-12)
        np.testing.assert_allclose(jac, ref_j, atol=1e-12)
    print(f"\n{robot}: {tree.mass:.3f} kg, CoM and Jacobian equal Pinocchio's to 1e-12")


def test_a_restricted_joint_set_gives_its_columns() -> None:
    arms = [j for j in TALOS.joint_names if j.startswith(("arm_", "torso_"))]
    view = TALOS.select_joints(arms)
    q_full = TALOS.random_configuration(np.random.default_rng(2))
    view.set_fixed_positions(q_full)
    com, jac = view.center_of_mass(q_full[[TALOS.joint_index(j) for j in arms]])
    ref_c, ref_j = TALOS.center_of_mass(q_full)
    np.testing.assert_allclose(com, ref_c, atol=1e-14)
    np.testing.assert_allclose(jac, ref_j[:, [TALOS.joint_index(j) for j in arms]], atol=1e-14)


def _band_scene(lo: list[float], hi: list[float], margin: float) -> tuple[Scene, CenterOfMass]:
    c = CenterOfMass("com", "xy", lo, hi, margin=margin, weight=2.0, gain=10.0)
    return Scene(TALOS, [c]), c


def test_the_band_is_off_inside_ramps_and_pulls_back_outside() -> None:
    q = TALOS.neutral()
    com = TALOS.center_of_mass(q)[0]
    # the CoM deep inside: both rows off
    scene, c = _band_scene([com[0] - 0.1, com[1] - 0.1], [com[0] + 0.1, com[1] + 0.1], 0.02)
    m = scene.matrices(q)
    assert np.all(m["wy"] == 0.0) and np.all(m["ydot"] == 0.0)
    np.testing.assert_allclose(m["y"], com[:2], atol=1e-15)
    assert c.error(m["y"]) == 0.0
    # x within the ramp (1 cm inside an edge, margin 2 cm): half-way weight, pulled inward
    scene, c = _band_scene([com[0] - 0.1, com[1] - 0.1], [com[0] + 0.01, com[1] + 0.1], 0.02)
    m = scene.matrices(q)
    assert m["wy"][0] == pytest.approx(2.0 * 0.5) and m["wy"][1] == 0.0
    assert m["ydot"][0] == pytest.approx(10.0 * -0.01)
    # x 3 cm outside the band: full weight, pulled back to the ramp's inner edge
    scene, c = _band_scene([com[0] - 0.1, com[1] - 0.1], [com[0] - 0.03, com[1] + 0.1], 0.02)
    m = scene.matrices(q)
    assert m["wy"][0] == 2.0 and m["ydot"][0] == pytest.approx(10.0 * -0.05)
    assert c.error(m["y"]) == pytest.approx(0.03)


def test_the_weight_is_continuous_across_the_edges() -> None:
    q = TALOS.neutral()
    x = TALOS.center_of_mass(q)[0][0]
    weights = []
    for hi in np.linspace(x + 0.05, x - 0.05, 1001):
        scene, _ = _band_scene([x - 1.0, -1.0], [hi, 1.0], 0.02)
        weights.append(scene.matrices(q)["wy"][0])
    assert weights[0] == 0.0 and weights[-1] == 2.0
    assert np.max(np.abs(np.diff(weights))) < 0.02


def test_a_target_drives_the_com_there() -> None:
    arms = [j for j in TALOS.joint_names if j.startswith(("arm_", "torso_"))]
    tree = TALOS.select_joints(arms)
    q = tree.neutral()
    start = tree.center_of_mass(q)[0]
    goal = start[:2] + np.array([0.03, -0.02])
    c = CenterOfMass("com", "xy", target=goal, gain=5.0)
    scene = Scene(tree, [c])
    for _ in range(500):
        q = q + 0.004 * scene.solve(q, 0.004).qdot
    np.testing.assert_allclose(tree.center_of_mass(q)[0][:2], goal, atol=1e-4)
    c.set_com_target(start[:2])
    assert c.com_target is not None and np.allclose(c.com_target, start[:2])


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ConstraintError, match="no <inertial> masses"):
        Scene(
            KinematicTree.from_urdf_file(robot_urdf("panda")),
            [CenterOfMass("c", "xy", [0, 0], [1, 1])],
        )
    bad = """<robot name="r"><link name="a"><inertial><mass value="-1"/></inertial></link>
      <link name="b"><inertial><mass value="2"/><origin xyz="0 0 x"/></inertial></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
      <limit lower="-1" upper="1" velocity="1" effort="1"/></joint></robot>"""
    tree = KinematicTree.from_urdf(bad)
    assert set(tree.bad_inertials) == {"a", "b"}
    with pytest.raises(ConstraintError, match=r"unreadable <inertial>.*a: mass"):
        Scene(tree, [CenterOfMass("c", "z", [0], [1])])
    for settings, what in (
        ({"axes": "xq", "support_min": [0, 0], "support_max": [1, 1]}, "axes"),
        ({"axes": "xx", "support_min": [0, 0], "support_max": [1, 1]}, "axes"),
        ({"axes": "xy"}, "support_min"),
        ({"axes": "xy", "support_min": [0.0], "support_max": [1.0]}, "support_min"),
        ({"axes": "xy", "support_min": [1, 0], "support_max": [0, 1]}, "support_min"),
        ({"axes": "xy", "target": [0.0]}, "target"),
    ):
        with pytest.raises(ConfigError, match=what):
            ConstraintConfig("c", "com", **settings).validate()
