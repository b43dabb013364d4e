"""Tests of the iTaSC constraints: their rows of ``A q' = y' + B Xu'`` against finite differences.

Sign convention (seed eq. 7, ``A q' = y' + B Xu'``): the output moves as
``y' = A q' - B Xu'``, so

* ``A = dy/dq`` (every joint that moves either end of the virtual armature, so for a target
  that is a link of the tree both the effector's and the target's joints), and
* ``-B = dy/dXu``, the derivative of ``y`` with respect to the target's motion.

The target twist ``Xu' = (v, w)`` (6,) is expressed in the root frame, ``v`` being the velocity
of the target ORIGIN and ``w`` its angular velocity. The finite difference therefore moves the
target pose ``T_t = (R_t, p_t)`` by ``h`` along a twist as
``p_t <- p_t + v h`` and ``R_t <- exp([w] h) R_t`` (a left multiplication of the rotation; the
origin is translated, not swung about the root origin), with central differences
``(y(+h) - y(-h)) / 2h``. Both checks use h = 1e-6 and agree to ~1e-9; the tolerance is 1e-6.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import numpy as np
import pytest
from robots import bundled_urdf_path, erd_urdf_path

from itasc_ros.core import (
    ConfigurationError,
    ConstraintError,
    CopyPose,
    Distance,
    JointValue,
    KinematicTree,
    Scene,
    UnknownJointError,
    UnknownLinkError,
)
from itasc_ros.core.constraints import REFERENCE_FRAMES
from itasc_ros.core.kinematics import home_of
from itasc_ros.core.kinematics.spatial import make_pose, so3_exp, so3_log

H = 1e-6
TOL = 1e-6
HOME = {robot: home_of(robot) for robot in ("panda", "ur5")}
TIP = {"panda": "panda_hand", "ur5": "tool0"}
BAXTER_ARMS = [
    f"{s}_{j}" for s in ("left", "right") for j in ("s0", "s1", "e0", "e1", "w0", "w1", "w2")
]


# --------------------------------------------------------------------------- helpers
def _tree(robot: str) -> KinematicTree:
    return KinematicTree.from_urdf_file(bundled_urdf_path(robot))


def _baxter_arms() -> KinematicTree:
    return KinematicTree.from_urdf_file(erd_urdf_path("baxter")).select_joints(BAXTER_ARMS)


def _fd_dy_dq(scene: Scene, q: np.ndarray) -> np.ndarray:
    """(m, n) central-difference derivative of the scene's y with respect to q."""
    cols = []
    for j in range(q.shape[0]):
        e = np.zeros_like(q)
        e[j] = H
        cols.append((scene.matrices(q + e)["y"] - scene.matrices(q - e)["y"]) / (2 * H))
    return np.stack(cols, axis=1)


def _moved(pose: np.ndarray, twist: np.ndarray, h: float) -> np.ndarray:
    """Target pose moved by ``twist * h``: p += v h, R = exp([w] h) R (root frame)."""
    out = pose.copy()
    out[:3, 3] += twist[:3] * h
    out[:3, :3] = so3_exp(twist[3:] * h) @ pose[:3, :3]
    return out


def _fd_dy_dxu(
    scene: Scene, q: np.ndarray, set_target: Callable[[np.ndarray], None], pose: np.ndarray
) -> np.ndarray:
    """(m, 6) central-difference derivative of y with respect to the target twist."""
    cols = []
    for k in range(6):
        tw = np.zeros(6)
        tw[k] = 1.0
        set_target(_moved(pose, tw, H))
        yp = scene.matrices(q)["y"]
        set_target(_moved(pose, tw, -H))
        ym = scene.matrices(q)["y"]
        cols.append((yp - ym) / (2 * H))
    set_target(pose)
    return np.stack(cols, axis=1)


def _random_pose(
    rng: np.random.Generator, near: np.ndarray, dist: float, angle: float
) -> np.ndarray:
    """A pose ``dist`` [m] and ``angle`` [rad] away from ``near`` in random directions."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    d = rng.normal(size=3)
    d *= dist / np.linalg.norm(d)
    return make_pose(so3_exp(axis * angle) @ near[:3, :3], near[:3, 3] + d)


# --------------------------------------------------------------------------- CopyPose
AXES = [("xyz", "xyz"), ("xyz", ""), ("", "xyz"), ("z", ""), ("xy", "z"), ("y", "xz")]


@pytest.mark.parametrize("robot", ["panda", "ur5"])
@pytest.mark.parametrize("reference", ["target", "effector", "root"])
@pytest.mark.parametrize(("position_axes", "rotation_axes"), AXES)
def test_copy_pose_rows_match_finite_differences(
    robot: str, reference: str, position_axes: str, rotation_axes: str
) -> None:
    tree = _tree(robot)
    rng = np.random.default_rng(
        zlib.crc32(f"{robot}{reference}{position_axes}/{rotation_axes}".encode())
    )
    c = CopyPose("c", TIP[robot], position_axes, rotation_axes, reference=reference, gain=7.0)
    scene = Scene(tree, [c])
    # Relative rotations from 0 (on the target) to 3 rad (close to the pi ambiguity).
    for dist, angle in [(0.0, 0.0), (0.05, 0.1), (0.4, 1.2), (0.8, 2.5), (0.3, 3.0)]:
        q = HOME[robot] + rng.normal(0.0, 0.3, tree.n_joints)
        pose = _random_pose(rng, tree.forward_kinematics(q, TIP[robot]), dist, angle)
        c.set_target(pose)
        m = scene.matrices(q)
        n_rows = len(position_axes) + len(rotation_axes)
        assert m["A"].shape == (n_rows, tree.n_joints) and m["B"].shape == (n_rows, 6)
        np.testing.assert_allclose(m["A"], _fd_dy_dq(scene, q), atol=TOL)
        np.testing.assert_allclose(-m["B"], _fd_dy_dxu(scene, q, c.set_target, pose), atol=TOL)
        # yd = yd' = 0: y'_d = -K y; every row weighted.
        np.testing.assert_allclose(m["ydot"], -7.0 * m["y"], atol=1e-12)
        np.testing.assert_allclose(m["wy"], 1.0)


def test_copy_pose_outputs_are_the_selected_feature_coordinates() -> None:
    """y = target position relative to the effector on the reference axes, then the rotation."""
    tree = _tree("panda")
    q = HOME["panda"]
    te = tree.forward_kinematics(q, "panda_hand")
    rng = np.random.default_rng(7)
    tt = _random_pose(rng, te, 0.3, 0.8)
    d = tt[:3, 3] - te[:3, 3]
    so3_log_rel = so3_log(te[:3, :3].T @ tt[:3, :3])
    for reference, pos, rot in [
        ("root", d, te[:3, :3] @ so3_log_rel),
        ("effector", te[:3, :3].T @ d, so3_log_rel),
        ("target", tt[:3, :3].T @ d, so3_log_rel),
    ]:
        c = CopyPose("c", "panda_hand", "xz", "y", reference=reference)
        c.set_target(tt)
        y = Scene(tree, [c]).matrices(q)["y"]
        np.testing.assert_allclose(y, [pos[0], pos[2], rot[1]], atol=1e-12)
        pe, re = c.pose_errors()
        assert pe == pytest.approx(np.linalg.norm(d), abs=1e-12)
        assert re == pytest.approx(np.linalg.norm(so3_log_rel), abs=1e-12)


def test_copy_pose_feedforward_switch_enters_the_right_hand_side() -> None:
    tree = _tree("panda")
    q = HOME["panda"]
    twist = np.array([0.1, -0.2, 0.05, 0.3, 0.0, -0.1])
    pose = _random_pose(
        np.random.default_rng(8), tree.forward_kinematics(q, "panda_hand"), 0.1, 0.2
    )
    for ff in (True, False):
        c = CopyPose("c", "panda_hand", feedforward=ff)
        c.set_target(pose, twist)
        np.testing.assert_array_equal(c.target_twist, twist)
        m = Scene(tree, [c]).matrices(q)
        expected = m["ydot"] + (m["B"] @ twist if ff else 0.0)
        np.testing.assert_allclose(m["rhs"], expected, atol=1e-15)


def test_copy_pose_link_target_on_baxter_matches_finite_differences() -> None:
    """Left gripper onto the right gripper (times an offset): A includes both arms' joints."""
    tree = _baxter_arms()
    rng = np.random.default_rng(9)
    offset = make_pose(so3_exp(np.array([0.0, math.pi / 2, 0.3])), np.array([0.0, 0.0, 0.15]))
    for reference in REFERENCE_FRAMES:
        for position_axes, rotation_axes in [("xyz", "xyz"), ("xy", "z"), ("", "xyz")]:
            c = CopyPose(
                "hands",
                "left_gripper",
                position_axes,
                rotation_axes,
                reference=reference,
                target_link="right_gripper",
                target_offset=offset,
            )
            scene = Scene(tree, [c])
            assert c.has_target  # a link target needs no set_target
            q = tree.random_configuration(rng)
            m = scene.matrices(q)
            fd = _fd_dy_dq(scene, q)
            np.testing.assert_allclose(m["A"], fd, atol=TOL)
            # Both ends move with joints: left-arm and right-arm columns are non-zero.
            assert np.abs(fd[:, :7]).max() > 1e-3 and np.abs(fd[:, 7:]).max() > 1e-3


# --------------------------------------------------------------------------- Distance
@pytest.mark.parametrize("robot", ["panda", "ur5"])
@pytest.mark.parametrize(
    ("band", "active"),
    [((None, None), True), ((0.05, 0.5), False), ((0.5, 0.9), True), ((0.01, 0.1), True)],
    ids=["no-band", "inside-band", "below-band", "above-band"],
)
def test_distance_rows_match_finite_differences(
    robot: str, band: tuple[float | None, float | None], active: bool
) -> None:
    tree = _tree(robot)
    rng = np.random.default_rng(10)
    q = HOME[robot] + rng.normal(0.0, 0.2, tree.n_joints)
    te = tree.forward_kinematics(q, TIP[robot])
    pose = _random_pose(rng, te, 0.3, 1.0)
    c = Distance(
        "d",
        TIP[robot],
        distance=0.2,
        min_distance=band[0],
        max_distance=band[1],
        gain=5.0,
        weight=2.0,
    )
    c.set_target(pose)
    scene = Scene(tree, [c])
    m = scene.matrices(q)
    assert c.active is active
    np.testing.assert_allclose(m["y"], [0.3], atol=1e-12)
    np.testing.assert_allclose(m["A"], _fd_dy_dq(scene, q), atol=TOL)
    np.testing.assert_allclose(-m["B"], _fd_dy_dxu(scene, q, c.set_target, pose), atol=TOL)
    # Only the prismatic feature joint is controlled: rotating the target does not change y.
    np.testing.assert_allclose(m["B"][:, 3:], 0.0)
    yd = 0.2 if band == (None, None) else float(np.clip(0.3, band[0], band[1]))
    np.testing.assert_allclose(m["ydot"], [5.0 * (yd - 0.3)], atol=1e-12)
    assert m["wy"][0] == (2.0 if active else 0.0)
    result = scene.solve(q, 0.002)
    assert result.errors[0] == pytest.approx(abs(yd - 0.3), abs=1e-12)
    if not active:
        assert np.all(result.qdot == 0.0)


def test_distance_rate_is_fed_forward() -> None:
    tree = _tree("panda")
    c = Distance("d", "panda_hand", distance=0.2, gain=5.0)
    c.set_distance(0.2, rate=0.05)
    c.set_target(make_pose(None, np.array([0.8, 0.0, 0.4])))
    m = Scene(tree, [c]).matrices(HOME["panda"])
    assert m["ydot"][0] == pytest.approx(0.05 + 5.0 * (0.2 - m["y"][0]), abs=1e-12)


def test_distance_link_target_on_baxter_matches_finite_differences() -> None:
    tree = _baxter_arms()
    rng = np.random.default_rng(11)
    offset = make_pose(None, np.array([0.02, -0.03, 0.1]))
    c = Distance(
        "grippers", "left_gripper", distance=0.3, target_link="right_gripper", target_offset=offset
    )
    scene = Scene(tree, [c])
    for _ in range(5):
        q = tree.random_configuration(rng)
        m = scene.matrices(q)
        pl = tree.forward_kinematics(q, "left_gripper")[:3, 3]
        pr = (tree.forward_kinematics(q, "right_gripper") @ offset)[:3, 3]
        assert m["y"][0] == pytest.approx(np.linalg.norm(pr - pl), abs=1e-12)
        fd = _fd_dy_dq(scene, q)
        np.testing.assert_allclose(m["A"], fd, atol=TOL)
        assert np.abs(fd[:, :7]).max() > 1e-3 and np.abs(fd[:, 7:]).max() > 1e-3


# --------------------------------------------------------------------------- JointValue
def test_joint_value_rows_match_finite_differences() -> None:
    tree = _tree("ur5")
    c = JointValue("posture", ["elbow_joint", "shoulder_pan_joint"], [1.0, -0.5], gain=3.0)
    c.set_values([1.0, -0.5], rates=[0.1, 0.0])
    scene = Scene(tree, [c])
    q = HOME["ur5"] + 0.1
    m = scene.matrices(q)
    np.testing.assert_allclose(m["A"], _fd_dy_dq(scene, q), atol=TOL)
    expected = np.zeros((2, 6))
    expected[0, 2] = expected[1, 0] = 1.0
    np.testing.assert_array_equal(m["A"], expected)
    np.testing.assert_array_equal(m["B"], 0.0)
    np.testing.assert_allclose(m["y"], [q[2], q[0]])
    np.testing.assert_allclose(m["ydot"], [0.1 + 3.0 * (1.0 - q[2]), 3.0 * (-0.5 - q[0])])


def test_joint_value_without_joints_or_values_is_every_joint_to_mid_range() -> None:
    """Robot-independent posture: empty joints are every active joint, empty values the
    middle of each joint's range; the same constraint binds to another robot."""
    for robot in ("ur5", "panda"):
        tree = _tree(robot)
        c = JointValue("posture", [], [], gain=2.0)
        scene = Scene(tree, [c])
        q = HOME[robot] + 0.1
        m = scene.matrices(q)
        n = tree.n_joints
        np.testing.assert_array_equal(m["A"], np.eye(n))
        np.testing.assert_allclose(m["ydot"], 2.0 * (tree.neutral() - q))
        assert c.bound_joints == tree.joint_names
    tree = _tree("ur5")
    only = JointValue("elbow", ["elbow_joint"], [])  # one joint to the middle of its range
    Scene(tree, [only])
    np.testing.assert_allclose(only.values, tree.neutral()[[tree.joint_index("elbow_joint")]])
    with pytest.raises(ConstraintError, match="values must be 6 finite numbers"):
        Scene(tree, [JointValue("p", [], [0.0, 1.0])])  # values for every joint: 6 of them


# --------------------------------------------------------------------------- bad arguments
def test_unknown_axis_letter_names_the_choices() -> None:
    for pos, rot in [("xw", ""), ("", "rx"), ("xx", ""), ("a", "z")]:
        with pytest.raises(ConstraintError, match=r"'x', 'y', 'z'"):
            CopyPose("c", "panda_hand", pos, rot)
    with pytest.raises(ConstraintError, match="at least one"):
        CopyPose("c", "panda_hand", "", "")
    c = CopyPose("c", "panda_hand")
    with pytest.raises(ConstraintError, match=r"'x', 'y', 'z'"):
        c.set_axes("q", "")
    assert (c.position_axes, c.rotation_axes) == ("xyz", "xyz")  # unchanged
    c.set_axes("ZX", "y")  # case-insensitive, stored sorted
    assert (c.position_axes, c.rotation_axes, c.n_rows) == ("xz", "y", 3)


def test_unknown_reference_names_the_choices() -> None:
    with pytest.raises(ConstraintError, match="'world'") as exc:
        CopyPose("c", "panda_hand", reference="world")
    for choice in ("target", "effector", "root"):
        assert choice in str(exc.value)
    c = CopyPose("c", "panda_hand")
    with pytest.raises(ConstraintError, match="choices are") as exc:
        c.set_reference("base")
    assert all(choice in str(exc.value) for choice in REFERENCE_FRAMES)
    assert c.reference == "target"  # unchanged


@pytest.mark.parametrize(
    "make",
    [
        lambda: CopyPose("c", "panda_hand", gain=-1.0),
        lambda: CopyPose("c", "panda_hand", weight=float("nan")),
        lambda: CopyPose("c", "panda_hand", gain=float("inf")),
        lambda: Distance("d", "panda_hand", weight=-0.1),
        lambda: Distance("d", "panda_hand", distance=-0.2),
        lambda: Distance("d", "panda_hand", min_distance=0.5, max_distance=0.1),
        lambda: Distance("d", "panda_hand", gain=float("nan")),
        lambda: JointValue("j", ["panda_joint1"], [0.0], gain=-3.0),
        lambda: JointValue("j", ["panda_joint1"], [float("nan")]),
        lambda: JointValue("j", ["panda_joint1", "panda_joint2"], [0.0]),
        lambda: CopyPose("", "panda_hand"),
    ],
)
def test_bad_numbers_raise_constraint_error(make: Callable[[], object]) -> None:
    with pytest.raises(ConstraintError):
        make()


def test_setters_reject_bad_numbers_and_keep_the_old_value() -> None:
    c = CopyPose("c", "panda_hand", gain=5.0, weight=2.0)
    with pytest.raises(ConstraintError, match=">= 0"):
        c.set_gain(-1.0)
    with pytest.raises(ConstraintError, match="finite"):
        c.set_weight(float("nan"))
    assert (c.gain, c.weight) == (5.0, 2.0)
    with pytest.raises(ConfigurationError):
        c.set_target_twist([0.0, 0.0, float("nan"), 0.0, 0.0, 0.0])
    with pytest.raises(ConfigurationError):
        c.set_target_twist([0.0] * 5)
    with pytest.raises(ConfigurationError, match="orthonormal"):
        c.set_target(np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(ConfigurationError, match=r"\(4, 4\)"):
        c.set_target(np.eye(3))


def test_a_twist_set_without_checks_is_set_as_with_them() -> None:
    """set_target_twist(check=False) (the controller's own twists) sets what the checks pass."""
    a, b = CopyPose("a", "panda_hand"), CopyPose("b", "panda_hand")
    twist = np.array([0.1, -0.2, 0.3, 0.01, 0.0, -0.5])
    a.set_target_twist(twist)
    b.set_target_twist(twist, check=False)
    assert np.array_equal(a.target_twist, b.target_twist)
    twist[0] = 9.0  # copied, not kept
    assert b.target_twist[0] == 0.1
    b.set_target_twist(None, check=False)
    assert not b.target_twist.any()


def test_unknown_names_raise_at_scene_add() -> None:
    tree = _tree("panda")
    scene = Scene(tree)
    with pytest.raises(UnknownLinkError, match="panda_hand") as exc:
        scene.add(CopyPose("c", "panda_hnd"))
    assert "panda_hand" in exc.value.valid
    assert "c" not in scene and scene.constraints == []
    with pytest.raises(UnknownLinkError, match="panda_link0"):
        scene.add(CopyPose("c", "panda_hand", target_link="table"))
    with pytest.raises(UnknownLinkError):
        scene.add(Distance("d", "hand"))
    with pytest.raises(UnknownJointError, match="panda_joint1"):
        scene.add(JointValue("j", ["elbow_joint"], [0.0]))
    assert scene.constraints == []
    scene.add(CopyPose("c", "panda_hand"))
    with pytest.raises(ConstraintError, match="'c'"):
        scene.add(CopyPose("c", "panda_link7"))


def test_a_constraint_updated_with_a_tree_reads_that_tree_not_its_last_bound_one() -> None:
    """Bound last to tree b, a constraint updated with tree a writes a's rows (not b's poses)."""
    target = np.eye(4)
    target[:3, 3] = [0.4, 0.1, 0.5]
    c = CopyPose("c", "panda_hand")
    c.set_target(target)
    tree_a, tree_b = _tree("panda"), _tree("panda")
    q = tree_a.neutral()
    n = tree_a.n_joints

    def rows(tree: KinematicTree) -> tuple[np.ndarray, np.ndarray]:
        tree.compute(q)
        a, b, y, ydot, wy = np.zeros((6, n)), np.zeros((6, 6)), *np.zeros((3, 6))
        c.update(tree, q, a, b, y, ydot, wy)
        return a, y

    c.bind(tree_a)
    a0, y0 = rows(tree_a)
    c.bind(tree_b)
    tree_b.compute(q + 0.3)  # b elsewhere
    a1, y1 = rows(tree_a)
    assert np.array_equal(a0, a1) and np.array_equal(y0, y1)
