"""joint_limit_avoidance: joints kept out of a margin at their limits, smoothly.

* a row is off far from the limits, its weight ramps continuously from 0 at the margin's inner
  edge to full at the limit, and its desired rate points back to the edge;
* closed loop on the Panda, a hand target behind the robot (170 degrees around the base):
  without the constraint panda_joint6 turns into its limit and is locked there (q' stops it in
  one tick); with it the joints stay off their limits and none is locked, both beside the hand
  (weights blend: q' changes smoothly) and at priority 1 above it (strict: with the default
  weight q' changes sharply as a fast joint enters the margin; a weight of 0.01 spreads the
  hand-over over the margin);
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
from itasc_ros.core.constraints.joint_limit_avoidance import JointLimitAvoidance, smoothstep
from itasc_ros.tools.resources import robot_urdf

TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
DT = 0.004
J4 = 3  # panda_joint4: limits [-3.0718, -0.0698]


def test_the_row_ramps_from_off_to_full_without_a_jump() -> None:
    c = JointLimitAvoidance("jla", ["panda_joint4"], margin=0.2, weight=2.0, gain=10.0)
    scene = Scene(TREE, [c])
    lo, hi = TREE.lower[J4], TREE.upper[J4]
    q = HOME["panda"].copy()
    weights, rates = [], []
    sweep = np.linspace(hi - 0.5, hi, 2001)
    for v in sweep:
        q[J4] = v
        m = scene.matrices(q)
        weights.append(m["wy"][0])
        rates.append(m["ydot"][0])
        assert m["A"][0, J4] == 1.0 and np.count_nonzero(m["A"]) == 1
    w, r = np.array(weights), np.array(rates)
    far = sweep < hi - 0.2
    assert np.all(w[far] == 0.0) and np.all(r[far] == 0.0)
    assert w[-1] == pytest.approx(2.0) and np.all(np.diff(w) >= -1e-15)
    assert np.max(np.abs(np.diff(w))) < 0.01  # continuous (smoothstep, zero slope at 0)
    assert np.all(r[~far] <= 0.0)  # back toward the edge hi - 0.2
    assert r[-1] == pytest.approx(10.0 * -0.2)
    q[J4] = lo + 0.05  # the lower side, mirrored
    m = scene.matrices(q)
    assert m["wy"][0] == pytest.approx(2.0 * smoothstep(0.75)) and m["ydot"][0] > 0.0
    assert c.error(np.array([lo + 0.05])) == pytest.approx(0.15)
    assert c.error(np.array([0.5 * (lo + hi)])) == 0.0


def _reach_behind(mode: str, weight: float = 1.0) -> dict[str, float]:
    """Reach for a target behind the robot; returns the locks, the closest approach, jumps.

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
        locked += bool(res.locked.any())
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
    for r in (level, strict):
        assert r["locked_ticks"] == 0 and r["closest"] > 0.2
    for r in (level, strict, gentle):
        assert r["error"] < 0.02  # the hand still gets there, another way
    # strict with a small weight: the hand-over spreads over the margin (rows of a higher
    # level act fully from about damping_epsilon^2 = 0.0036 of weight)
    assert gentle["locked_ticks"] == 0 and gentle["closest"] > 0.1
    assert gentle["max_jump"] < 0.5 * plain["max_jump"]
    # blended: the joint slows down as it enters the margin (q' changes by < 1/5 of the
    # change that the lock makes in one tick)
    assert level["max_jump"] < 0.2 * plain["max_jump"]


def test_bad_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="margin"):
        ConstraintConfig("j", "joint_limit_avoidance", margin=0.0).validate()
    with pytest.raises(UnknownJointError, match="panda_joint1"):
        Scene(TREE, [JointLimitAvoidance("j", ["no_such_joint"])])
    cfg = ConstraintConfig("j", "joint_limit_avoidance").validate()
    c = cfg.build()
    Scene(TREE, [c])
    assert c.n_rows == TREE.n_joints and c.bound_joints == TREE.joint_names
