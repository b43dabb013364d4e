"""SetProblem: a constraint set's rows for position IK; an inequality row acts only while broken.

Collision-free IK on the Panda of config/panda_obstacles.yaml (the pairs its SRDF leaves in,
meshes as convex hulls, a plate and a ball as obstacles): every solution keeps every pair at
least its margin apart, checked with Pinocchio + coal on the same pairs (an independent
implementation of the distances), and it meets the pose as the chain solver does.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from itasc_bench.peers.pinocchio_collision import pinocchio_reference
from itasc_ros.core import CopyPose, KinematicTree, solve_ik
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.ik.set_problem import SetProblem
from itasc_ros.core.kinematics.collision_geometry import resolve_file
from itasc_ros.params import load_config
from itasc_ros.tools.resources import share_file

SAMPLES = 16


@pytest.fixture(scope="module")
def panda() -> tuple[KinematicTree, Collision, Any, float]:
    """The tree, the collision constraint of config/panda_obstacles.yaml, its Pinocchio peer,
    and margin + buffer [m]."""
    cfg = load_config(share_file("config", "panda_obstacles.yaml"))
    (spec,) = [c for c in cfg.constraints if c.type == "collision"]
    urdf = resolve_file(spec.settings["urdf_file"], (), "Panda URDF")
    tree = KinematicTree.from_urdf_file(urdf).select_joints(cfg.joints)
    coll = spec.build()
    SetProblem(tree, [coll])  # binds it to the tree
    ref = pinocchio_reference(str(urdf), tree, coll)
    return tree, coll, ref, spec.settings["margin"] + spec.settings["buffer"]


def _closest(ref: Any, q: np.ndarray) -> float:
    return float(ref.distances(ref.q_of(q)).min())


def _free_targets(
    tree: KinematicTree, ref: Any, clearance: float, n: int, seed: int
) -> list[np.ndarray]:
    """Poses of the hand at random configurations whose every pair is ``clearance`` apart."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        q = rng.uniform(tree.lower, tree.upper)
        if _closest(ref, q) >= clearance:
            out.append(tree.forward_kinematics(q, "panda_hand"))
    return out


def test_an_inequality_row_acts_only_while_it_is_broken(panda: Any) -> None:
    tree, coll, ref, aim = panda
    problem = SetProblem(tree, [coll])
    rng = np.random.default_rng(3)
    free = near = None
    while free is None or near is None:
        q = rng.uniform(tree.lower, tree.upper)
        d = _closest(ref, q)
        if d > aim + 0.02 and free is None:
            free = q
        elif 0.0 < d < aim - 0.005 and near is None:
            near = q
    a, ew, e = problem.rows(free)
    assert not a.any() and not ew.any() and not e.any()  # every pair holds: nothing asked
    gain, coll.gain = coll.gain, 1.0  # as the solve reads the rows
    try:
        a, ew, e = problem.rows(near)
    finally:
        coll.gain = gain
    broken = e > 0.0
    assert broken.any() and np.all(e >= 0.0)  # the pairs inside margin + buffer push out
    assert np.all(a[broken].any(axis=1)) and not a[~broken].any()
    i = int(np.argmax(e))
    assert e[i] == pytest.approx(aim - _closest(ref, near), abs=2e-3)  # gain 1: what is missing


def test_the_set_loop_keeps_every_pair_at_its_margin(panda: Any) -> None:
    """The loop on the whole set (``prefer='distance'`` takes it), inequality rows inside."""
    tree, coll, ref, aim = panda
    check_solutions(
        tree, coll, ref, aim, dict(prefer="distance", timeout=None, max_iterations=600)
    )


def check_solutions(
    tree: KinematicTree, coll: Collision, ref: Any, aim: float, kw: dict[str, Any]
) -> None:
    """Solve :data:`SAMPLES` collision-free targets with ``kw``; each solution is checked."""
    hand = CopyPose("hand", "panda_hand")
    solved = 0
    for target in _free_targets(tree, ref, aim + 0.005, SAMPLES, seed=11):
        hand.set_target(target)
        r = solve_ik(tree, constraints=[hand, coll], seed=tree.neutral(), random_seed=1, **kw)
        if not r.success:
            continue
        solved += 1
        assert np.all(r.q >= tree.lower) and np.all(r.q <= tree.upper)
        assert _closest(ref, r.q) >= coll.margin - 1e-6  # Pinocchio + coal: no pair inside
        err = np.linalg.inv(target) @ tree.forward_kinematics(r.q, "panda_hand")
        assert np.abs(err[:3, 3]).max() <= 2e-5
    assert solved >= SAMPLES - 1, f"{solved} of {SAMPLES} collision-free targets solved"
