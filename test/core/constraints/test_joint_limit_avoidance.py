"""joint_limit_avoidance: joints kept a margin away from their limits, smoothly.

* one one-sided row per joint, a velocity damper toward the nearer limit:
  ``d' >= K (margin - d)``; a joint clear of its margin costs nothing;
* closed loop on the Panda, a hand target behind the robot (170 degrees around the base):
  without the constraint panda_joint6 turns into its limit and is locked there (q' stops it in
  one tick); with it the joints stop at the margin and none is locked, beside the hand and at
  priority 1 above it, and q' changes by a quarter of what the lock makes it;
* bad settings are named errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_constraints import HOME

from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    KinematicTree,
    Scene,
    UnknownJointError,
)
from itasc_ros.core.constraints import CopyPose
from itasc_ros.core.constraints.joint_limit_avoidance import JointLimitAvoidance
from itasc_ros.tools.resources import robot_urdf

TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
DT = 0.004
J4 = 3  # panda_joint4: limits [-3.0718, -0.0698]


def test_the_row_is_a_velocity_damper_toward_the_nearer_limit() -> None:
    """y = distance to the nearer limit, A = +-1 on the joint, y'_d = K (margin - d): the
    approach speed allowed falls linearly to 0 at the margin; the row is one-sided."""
    c = JointLimitAvoidance("jla", ["panda_joint4"], margin=0.2, weight=2.0, gain=10.0)
    assert c.one_sided
    scene = Scene(TREE, [c])
    lo, hi = TREE.lower[J4], TREE.upper[J4]
    q = HOME["panda"].copy()
    for v, sign, d in ((hi - 0.5, -1.0, 0.5), (hi - 0.05, -1.0, 0.05), (lo + 0.1, 1.0, 0.1)):
        q[J4] = v
        m = scene.matrices(q)
        assert m["A"][0, J4] == sign and np.count_nonzero(m["A"]) == 1
        assert m["y"][0] == pytest.approx(d) and m["wy"][0] == 2.0
        assert m["ydot"][0] == pytest.approx(10.0 * (0.2 - d))
    assert c.error(np.array([0.05])) == pytest.approx(0.15) and c.error(np.array([0.3])) == 0.0


def test_a_joint_clear_of_its_margin_costs_nothing() -> None:
    """The active set leaves a row off while the motion keeps it: q' is the other tasks'."""
    ee = CopyPose("ee", "panda_hand")
    target = TREE.forward_kinematics(HOME["panda"], "panda_hand")
    target[:3, 3] += [0.02, 0.0, 0.0]
    ee.set_target(target)
    alone = Scene(TREE, [ee]).solve(HOME["panda"], DT).qdot.copy()
    ee2 = CopyPose("ee", "panda_hand")
    ee2.set_target(target)
    both = Scene(TREE, [ee2, JointLimitAvoidance("jla", margin=0.05)]).solve(HOME["panda"], DT)
    np.testing.assert_allclose(both.qdot, alone, atol=1e-12)


def _reach_behind(mode: str, weight: float = 1.0) -> dict[str, float]:
    """Reach for a target behind the robot; returns the position locks, closest approach, jumps.

    ``mode``: 'none' (the hand alone), 'level' (joint_limit_avoidance beside the hand, weights
    blend) or 'priority' (joint_limit_avoidance at priority 1, the hand at priority 2).
    """
    ee = CopyPose("ee", "panda_hand", rotation_axes="", gain=1.0)
    target = np.eye(4)
    angle = np.radians(170.0)
    target[:3, 3] = [0.45 * np.cos(angle), 0.45 * np.sin(angle), 0.5]
    ee.set_target(target)
    cons: list[CopyPose | JointLimitAvoidance] = [ee]
    if mode != "none":
        cons.append(JointLimitAvoidance("jla", margin=0.3, weight=weight, gain=10.0))
    if mode == "priority":
        ee.set_priority(2)
    scene = Scene(TREE, cons)
    q = HOME["panda"].copy()
    prev = None
    jumps, closest, locked = [], np.inf, 0
    for _ in range(1500):
        res = scene.solve(q, DT)
        assert res.ok
        nxt = q + DT * res.qdot  # a joint saturated at a position limit (not a velocity one)
        at_limit = np.minimum(np.abs(nxt - TREE.lower), np.abs(TREE.upper - nxt)) < 1e-9
        locked += bool((res.locked & at_limit).any())
        if prev is not None:
            jumps.append(float(np.abs(res.qdot - prev).max()))
        prev = res.qdot.copy()
        q = q + DT * res.qdot
        closest = min(closest, float(np.min(np.minimum(q - TREE.lower, TREE.upper - q))))
    return {
        "locked_ticks": locked,
        "closest": closest,
        "max_jump": max(jumps),
        "error": float(res.errors[0]),
    }


def test_motion_stays_off_the_limits_instead_of_locking_at_them() -> None:
    plain, level, strict = (_reach_behind(m) for m in ("none", "level", "priority"))
    gentle = _reach_behind("priority", weight=0.01)
    print(
        f"\nhand alone: {plain}\nwith joint_limit_avoidance (margin 0.3 rad), same level: "
        f"{level}\n... at priority 1 (hand at 2): {strict}\n... at priority 1, weight 0.01: "
        f"{gentle}"
    )
    assert plain["locked_ticks"] > 0 and plain["closest"] < 1e-9  # stopped at the limit
    for r in (level, strict, gentle):
        assert r["locked_ticks"] == 0
        assert r["closest"] > 0.3 - 0.002  # the margin kept (the damper's K (d - margin))
        assert r["error"] < 0.02  # the hand still gets there, another way
        # a joint slows down as it comes (the damper's bound is continuous); what is left is
        # the damping of the direction the row takes away from the hand: q' changes by at
        # most a quarter of the change that the lock makes in one tick (measured 0.40 / 1.59)
        assert r["max_jump"] < 0.3 * plain["max_jump"]


def test_bad_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="margin"):
        ConstraintConfig("j", "joint_limit_avoidance", margin=0.0).validate()
    with pytest.raises(UnknownJointError, match="panda_joint1"):
        Scene(TREE, [JointLimitAvoidance("j", ["no_such_joint"])])
    cfg = ConstraintConfig("j", "joint_limit_avoidance").validate()
    c = cfg.build()
    Scene(TREE, [c])
    assert c.n_rows == TREE.n_joints and c.bound_joints == TREE.joint_names
