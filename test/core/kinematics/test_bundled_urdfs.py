"""The bundled kinematics-only URDFs (urdf/panda.urdf, urdf/ur5.urdf) against example-robot-data.

Oracle: Pinocchio forward kinematics on the example-robot-data URDFs (written by Franka / the
ROS-Industrial UR maintainers, not by us). Joints are matched by name; joints the reference has
and the bundled file leaves out (the Panda fingers) are held at mid-range.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest
from robots import bundled_urdf_path, erd_urdf_path
from urdf_parser_py.urdf import URDF

N_CONFIGS = 1000
SEED = 20240607
TOL_POS = 1e-6  # [m]
TOL_ROT = 1e-6  # [rad]


@dataclass(frozen=True)
class Case:
    robot: str
    root: str
    n_arm: int
    tips_required: tuple[str, ...]  # tip frames both files must have
    tips_optional: tuple[str, ...]  # compared when both files have them
    ref_only_joints: frozenset[str]  # reference joints the bundled file may leave out


CASES = [
    Case(
        robot="panda",
        root="panda_link0",
        n_arm=7,
        tips_required=("panda_link8", "panda_hand"),
        tips_optional=("panda_hand_tcp",),
        ref_only_joints=frozenset({"panda_finger_joint1", "panda_finger_joint2"}),
    ),
    Case(
        robot="ur5",
        root="base_link",
        n_arm=6,
        tips_required=("wrist_3_link", "tool0"),
        tips_optional=("ee_link",),
        ref_only_joints=frozenset(),
    ),
]


@dataclass
class Pair:
    case: Case
    bundled: pin.Model
    ref: pin.Model
    arm_joints: list[str]  # bundled joint names, in model order


def _load_pair(case: Case) -> Pair:
    xml = bundled_urdf_path(case.robot).read_text()
    bundled = pin.buildModelFromXML(xml)
    ref = pin.buildModelFromUrdf(str(erd_urdf_path(case.robot)))
    return Pair(case, bundled, ref, [str(n) for n in list(bundled.names)[1:]])


@pytest.fixture(scope="module", params=CASES, ids=[c.robot for c in CASES])
def pair(request: pytest.FixtureRequest) -> Pair:
    return _load_pair(request.param)


def _ref_q(pair: Pair, q_bundled: np.ndarray) -> np.ndarray:
    """Reference configuration with the bundled joints copied by name, others mid-range."""
    ref = pair.ref
    lo, hi = ref.lowerPositionLimit, ref.upperPositionLimit
    q = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), pin.neutral(ref))  # (nq,)
    for name in pair.arm_joints:
        jb = pair.bundled.joints[pair.bundled.getJointId(name)]
        jr = ref.joints[ref.getJointId(name)]
        q[jr.idx_q] = q_bundled[jb.idx_q]
    return q


def _configs(model: pin.Model) -> np.ndarray:
    """N_CONFIGS uniform samples within the limits, plus both limits and mid-range."""
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit  # (nq,)
    rng = np.random.default_rng(SEED)
    q = rng.uniform(lo, hi, size=(N_CONFIGS, model.nq))  # (N, nq)
    return np.vstack([q, lo, hi, 0.5 * (lo + hi)])  # (N + 3, nq)


def _pose_errors(pair: Pair, frames: list[str]) -> tuple[float, float]:
    """Max position [m] and rotation [rad] error over all configurations and ``frames``."""
    b, r = pair.bundled, pair.ref
    bd, rd = b.createData(), r.createData()
    fb = [b.getFrameId(f) for f in frames]
    fr = [r.getFrameId(f) for f in frames]
    max_pos = max_rot = 0.0
    for qb in _configs(b):
        pin.framesForwardKinematics(b, bd, qb)
        pin.framesForwardKinematics(r, rd, _ref_q(pair, qb))
        for ib, ir in zip(fb, fr, strict=True):
            mb, mr = bd.oMf[ib], rd.oMf[ir]
            max_pos = max(max_pos, float(np.linalg.norm(mb.translation - mr.translation)))
            max_rot = max(max_rot, float(np.linalg.norm(pin.log3(mb.rotation.T @ mr.rotation))))
    return max_pos, max_rot


def _frame_names(model: pin.Model) -> set[str]:
    return {f.name for f in model.frames if f.type == pin.FrameType.BODY}


def test_joint_names_match_reference(pair: Pair) -> None:
    case, ref = pair.case, pair.ref
    ref_names = [str(n) for n in list(ref.names)[1:]]
    assert len(pair.arm_joints) == case.n_arm
    assert pair.bundled.nq == pair.bundled.nv == case.n_arm
    # Same joints in the same tree order, except the ones the bundled file may leave out.
    assert pair.arm_joints == [n for n in ref_names if n not in case.ref_only_joints]


def test_joint_limits_and_axes_match_reference(pair: Pair) -> None:
    b, r = pair.bundled, pair.ref
    for name in pair.arm_joints:
        jb = b.joints[b.getJointId(name)]
        jr = r.joints[r.getJointId(name)]
        assert jb.nq == jr.nq == 1, name
        # Same joint type means the same (axis-aligned) rotation axis.
        assert jb.shortname() == jr.shortname(), name
        ib, ir = jb.idx_q, jr.idx_q
        assert b.lowerPositionLimit[ib] == r.lowerPositionLimit[ir], name
        assert b.upperPositionLimit[ib] == r.upperPositionLimit[ir], name
        assert b.velocityLimit[jb.idx_v] == r.velocityLimit[jr.idx_v], name
        assert b.effortLimit[jb.idx_v] == r.effortLimit[jr.idx_v], name
        assert b.lowerPositionLimit[ib] < b.upperPositionLimit[ib], name
        assert b.velocityLimit[jb.idx_v] > 0.0, name


def test_tip_poses_match_reference(pair: Pair) -> None:
    case = pair.case
    bf, rf = _frame_names(pair.bundled), _frame_names(pair.ref)
    for tip in case.tips_required:
        assert tip in bf and tip in rf, tip
    tips = list(case.tips_required) + [t for t in case.tips_optional if t in bf and t in rf]
    max_pos, max_rot = _pose_errors(pair, tips)
    assert max_pos < TOL_POS, f"{case.robot} tips {tips}: max position error {max_pos:.3e} m"
    assert max_rot < TOL_ROT, f"{case.robot} tips {tips}: max rotation error {max_rot:.3e} rad"


def test_every_common_link_matches_reference(pair: Pair) -> None:
    """Intermediate link frames agree too, so the two files are interchangeable frame by frame."""
    common = sorted(_frame_names(pair.bundled) & _frame_names(pair.ref))
    # Every bundled link exists in the reference.
    assert set(common) == _frame_names(pair.bundled)
    max_pos, max_rot = _pose_errors(pair, common)
    assert max_pos < TOL_POS, f"max position error {max_pos:.3e} m over {common}"
    assert max_rot < TOL_ROT, f"max rotation error {max_rot:.3e} rad over {common}"


def test_forward_kinematics_is_not_trivially_equal(pair: Pair) -> None:
    """Guard against a vacuous comparison: perturbing one joint moves the tip."""
    b = pair.bundled
    data = b.createData()
    tip = b.getFrameId(pair.case.tips_required[-1])
    q0 = 0.5 * (b.lowerPositionLimit + b.upperPositionLimit)  # (nq,)
    pin.framesForwardKinematics(b, data, q0)
    p0 = data.oMf[tip].copy()
    for i in range(b.nq):
        q = q0.copy()
        q[i] += 0.1
        pin.framesForwardKinematics(b, data, q)
        moved = np.linalg.norm(data.oMf[tip].translation - p0.translation) + np.linalg.norm(
            pin.log3(p0.rotation.T @ data.oMf[tip].rotation)
        )
        assert moved > 1e-3, f"joint {pair.arm_joints[i]} does not move the tip"


@pytest.mark.parametrize("case", CASES, ids=[c.robot for c in CASES])
def test_bundled_urdf_is_kinematics_only(case: Case) -> None:
    text = bundled_urdf_path(case.robot).read_text()
    assert text.lstrip().startswith("<?xml")
    assert "<!--" in text.split("<robot", 1)[0], "provenance comment missing"
    robot = URDF.from_xml_string(text)
    assert robot.get_root() == case.root
    for link in robot.links:
        assert not link.visuals and not link.collisions, link.name
    ref = URDF.from_xml_string(erd_urdf_path(case.robot).read_bytes())
    ref_root = ref.get_root()
    # The reference's root is either the same link or an identity 'world' link above it.
    if ref_root != case.root:
        ((jname, _child),) = ref.child_map[ref_root]
        joint = ref.joint_map[jname]
        assert joint.type == "fixed" and joint.child == case.root
        assert np.allclose(joint.origin.xyz, 0.0) and np.allclose(joint.origin.rpy, 0.0)
    for joint in robot.joints:
        if joint.type != "fixed":
            assert joint.type == "revolute", joint.name
            assert joint.limit is not None and joint.limit.velocity > 0, joint.name
