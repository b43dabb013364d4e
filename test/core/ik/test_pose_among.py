"""A pose among inequalities: the pose loop's solutions checked against them, else repaired.

The Panda among obstacles of config/panda_obstacles.yaml (see ``test_set_problem``): within the
default 5 ms budget, every solution keeps every pair at its margin (Pinocchio + coal), the
repair by the set loop keeps them too, and the problem kept between solves follows a
constraint bound to another tree since.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_set_problem import _free_targets, check_solutions, panda  # noqa: F401

from itasc_ros.core import CopyPose, solve_ik
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.ik import pose_among


def test_the_pose_loop_solutions_keep_every_pair_at_its_margin(panda: Any) -> None:  # noqa: F811
    tree, coll, ref, aim = panda
    hand = CopyPose("hand", "panda_hand")
    assert not pose_among.among_inequalities([hand, coll])  # no target yet: not a pose
    hand.set_target(tree.forward_kinematics(tree.neutral(), "panda_hand"))
    assert pose_among.among_inequalities([hand, coll])
    check_solutions(tree, coll, ref, aim, dict(timeout=0.005))


def test_a_repair_of_every_broken_pose_keeps_them_too(
    panda: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tree, coll, ref, aim = panda
    monkeypatch.setattr(pose_among, "REPAIR_EVERY", 1)
    check_solutions(tree, coll, ref, aim, dict(timeout=None, max_iterations=3000))


def test_not_a_pose_among_inequalities() -> None:
    hand, elbow = CopyPose("hand", "panda_hand"), CopyPose("elbow", "panda_link4")
    hand.set_target(np.eye(4))
    elbow.set_target(np.eye(4))
    assert not pose_among.among_inequalities([hand])  # nothing beside it: the pose loop
    assert not pose_among.among_inequalities([hand, elbow])  # two poses: the set loop
    assert not pose_among.among_inequalities([Collision("c", geometry="capsules")])


def test_a_constraint_bound_to_another_tree_is_bound_again(panda: Any) -> None:  # noqa: F811
    tree, coll, ref, aim = panda
    other = tree.select_joints(tree.joint_names)  # a view: another tree object
    hand = CopyPose("hand", "panda_hand")
    (target,) = _free_targets(tree, ref, aim + 0.005, 1, seed=5)
    hand.set_target(target)
    for t in (tree, other, tree):  # each solve binds them to its tree
        r = solve_ik(t, constraints=[hand, coll], seed=t.neutral(), timeout=0.05)
        assert r.success and coll.bound_tree is t
        assert float(ref.distances(ref.q_of(r.q)).min()) >= coll.margin - 1e-6
