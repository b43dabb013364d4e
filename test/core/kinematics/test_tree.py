"""KinematicTree FK and Jacobians against Pinocchio on real robots, and finite differences."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from robots import erd_urdf_path

from itasc_ros.core import KinematicTree
from itasc_ros.core.errors import ConfigurationError
from itasc_ros.core.kinematics import spatial

ROBOTS = ["panda", "ur3", "ur5", "ur10", "z1", "so100", "baxter", "tiago", "talos"]
N_CONFIGS = 300
"""Random configurations per robot: a frame, axis or sign convention that differs shows in the
first few; 1000 took 18 s each on Tiago and Talos (every link, beside Pinocchio)."""


class PinMap:
    """Maps an itasc q (tree.joint_names order) onto Pinocchio's q and v."""

    def __init__(self, tree: KinematicTree, model: pin.Model) -> None:
        self.model = model
        names = tree.joint_names
        by_name = {j.name: j for j in tree.joints}
        self.entries = []  # (idx_q, nq, idx_v, itasc index, mult, offs)
        for jid in range(1, model.njoints):
            jname = model.names[jid]
            spec = by_name[jname]
            mult, offs, lead = 1.0, 0.0, spec
            while lead.mimic is not None:
                offs += mult * lead.mimic.offset
                mult *= lead.mimic.multiplier
                lead = by_name[lead.mimic.joint]
            jm = model.joints[jid]
            self.entries.append((jm.idx_q, jm.nq, jm.idx_v, names.index(lead.name), mult, offs))

    def q(self, q: np.ndarray) -> np.ndarray:
        out = pin.neutral(self.model)
        for iq, nq, _, k, mult, offs in self.entries:
            v = mult * q[k] + offs
            if nq == 2:  # continuous joint: (cos, sin)
                out[iq : iq + 2] = (np.cos(v), np.sin(v))
            else:
                out[iq] = v
        return out

    def jac(self, jp: np.ndarray, n: int) -> np.ndarray:
        out = np.zeros((6, n))
        for _, _, iv, k, mult, _ in self.entries:
            out[:, k] += mult * jp[:, iv]
        return out


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    path = erd_urdf_path(request.param)
    tree = KinematicTree.from_urdf_file(path)
    model = pin.buildModelFromUrdf(str(path))
    return request.param, tree, model


def test_fk_and_jacobian_match_pinocchio(robot):
    name, tree, model = robot
    data = model.createData()
    pm = PinMap(tree, model)
    frames = {}
    for link in tree.link_names:
        if link == tree.root_link and not model.existFrame(link):
            continue
        frames[link] = model.getFrameId(link, pin.BODY)
    assert len(frames) >= len(tree.link_names) - 1
    rng = np.random.default_rng(7)
    n = tree.n_joints
    jac = np.empty((6, n))
    max_pos = max_rot = max_jac = 0.0
    for _ in range(N_CONFIGS):
        q = tree.random_configuration(rng)
        qp = pm.q(q)
        pin.computeJointJacobians(model, data, qp)
        pin.updateFramePlacements(model, data)
        tree.compute(q)
        for link, fid in frames.items():
            ref = data.oMf[fid]
            ours = tree.pose_ref(tree.link_index(link))
            max_pos = max(max_pos, float(np.abs(ours[:3, 3] - ref.translation).max()))
            dr = spatial.so3_log(ref.rotation.T @ ours[:3, :3])
            max_rot = max(max_rot, float(np.linalg.norm(dr)))
            jp = pin.getFrameJacobian(model, data, fid, pin.LOCAL_WORLD_ALIGNED)
            tree.jacobian_into(tree.link_index(link), jac)
            max_jac = max(max_jac, float(np.abs(jac - pm.jac(jp, n)).max()))
    print(
        f"{name}: {len(frames)} links, max pos {max_pos:.2e} m, rot {max_rot:.2e} rad, "
        f"jac {max_jac:.2e}"
    )
    assert max_pos < 1e-9
    assert max_rot < 1e-9
    assert max_jac < 1e-9


def test_jacobian_matches_finite_differences(robot):
    _, tree, _ = robot
    rng = np.random.default_rng(11)
    eps = 1e-6
    links = tree.link_names[1:]
    for _ in range(20):
        q = tree.random_configuration(rng)
        for link in links:
            j = tree.jacobian(q, link)
            t0 = tree.forward_kinematics(q, link)
            fd = np.zeros_like(j)
            for k in range(tree.n_joints):
                dq = np.zeros(tree.n_joints)
                dq[k] = eps
                tp = tree.forward_kinematics(q + dq, link)
                tm = tree.forward_kinematics(q - dq, link)
                fd[:3, k] = (tp[:3, 3] - tm[:3, 3]) / (2 * eps)
                fd[3:, k] = spatial.so3_log(tp[:3, :3] @ tm[:3, :3].T) / (2 * eps)
            assert np.abs(j - fd).max() < 1e-6, (link, np.abs(j - fd).max())
            assert np.allclose(t0, tree.forward_kinematics(q, link))


def test_relative_transform_and_restricted_view():
    tree = KinematicTree.from_urdf_file(erd_urdf_path("baxter"))
    rng = np.random.default_rng(3)
    q = tree.random_configuration(rng)
    t_l = tree.forward_kinematics(q, "left_gripper")
    t_r = tree.forward_kinematics(q, "right_gripper")
    rel = tree.relative_transform(q, "left_gripper", "right_gripper")
    assert np.allclose(spatial.pose_inverse(t_l) @ t_r, rel, atol=1e-12)
    # One arm of the two-armed robot: the other joints are held at their positions.
    left = [n for n in tree.joint_names if n.startswith("left_") and "gripper" not in n]
    assert len(left) == 7
    arm = tree.select_joints(left, q_fixed=q)
    q_arm = q[[tree.joint_index(n) for n in left]]
    assert arm.joint_names == left
    assert np.allclose(arm.forward_kinematics(q_arm, "left_gripper"), t_l, atol=1e-12)
    assert np.allclose(arm.forward_kinematics(q_arm, "right_gripper"), t_r, atol=1e-12)
    j_full = tree.jacobian(q, "left_gripper")
    j_arm = arm.jacobian(q_arm, "left_gripper")
    assert j_arm.shape == (6, 7)
    assert np.allclose(j_arm, j_full[:, [tree.joint_index(n) for n in left]], atol=1e-12)
    # The right arm does not move the left gripper.
    right = [n for n in tree.joint_names if n.startswith("right_") and "gripper" not in n]
    assert (
        np.abs(
            tree.select_joints(right, q).jacobian(
                q[[tree.joint_index(n) for n in right]], "left_gripper"
            )
        ).max()
        == 0.0
    )


def test_limits_kept():
    tree = KinematicTree.from_urdf_file(erd_urdf_path("panda"))
    i = tree.joint_index("panda_joint4")
    assert tree.lower[i] == pytest.approx(-3.0718)
    assert tree.upper[i] == pytest.approx(-0.0698)
    assert tree.velocity_limits[i] == pytest.approx(2.175)
    assert tree.root_link == "panda_link0"


def test_quaternion_roundtrip():
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        r = spatial.quat_to_matrix(q)
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-12)
        q2 = spatial.matrix_to_quat(r)
        assert np.allclose(q2, q if q[3] >= 0 else -q, atol=1e-9)
        w = spatial.so3_log(r)
        assert np.allclose(spatial.so3_exp(w), r, atol=1e-9)
    # Against Pinocchio's quaternion (x, y, z, w coefficients).
    quat = pin.Quaternion(np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm([0.1, -0.2, 0.3, 0.9]))
    assert np.allclose(spatial.quat_to_matrix(quat.coeffs()), quat.matrix(), atol=1e-12)


def test_a_quaternion_is_read_whatever_its_scale() -> None:
    """Scaled by 1e200 or 1e-5 it is the same rotation; below 1e-6, NaN or inf it is refused."""
    q = np.array([0.1, -0.2, 0.3, 0.9])
    r = spatial.quat_to_matrix(q)
    for scale in (1e200, 1e-5, 1e100, -3.0):
        np.testing.assert_allclose(spatial.quat_to_matrix(q * scale), r, atol=1e-12)
    for bad in (q * 1e-7, np.zeros(4), [np.nan, 0, 0, 1], [np.inf, 0, 0, 1]):
        with pytest.raises(ConfigurationError, match="has no rotation"):
            spatial.quat_to_matrix(bad)
