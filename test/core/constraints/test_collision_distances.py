"""The collision constraint's distance accessors: measured, never a placeholder.

Before any solve there is no distance to report: ``min_distance()`` and ``distances()`` raise a
named error instead of answering 0 m (which reads as "in contact"). Given ``q`` they measure at
that configuration; after a solve they report that solve's distances.
"""

from __future__ import annotations

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_ros.core import ConstraintError, CopyPose, KinematicTree, Scene
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics.home_poses import home_of

SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"
ARM = [f"panda_joint{i}" for i in range(1, 8)]
HOME = home_of("panda")
FOLDED = np.array([0.0, 0.6, 0.0, -2.9, 0.0, 1.2, 0.785])  # the hand near the base


def _scene() -> tuple[Scene, CopyPose, Collision]:
    arm = KinematicTree.from_urdf_file(erd_urdf_path("panda")).select_joints(ARM)
    coll = Collision("coll", srdf_file=SRDF, obstacles=["sphere 0.4 0.0 0.5 0.05"])
    ee = CopyPose("ee", "panda_hand")
    return Scene(arm, [ee, coll]), ee, coll


def test_no_distance_before_it_is_measured() -> None:
    unbound = Collision("coll", srdf_file=SRDF)
    with pytest.raises(ConstraintError, match="not bound to a robot"):
        unbound.min_distance()
    _, _, coll = _scene()
    assert coll.n_pairs == 44 + 16  # the SRDF's pairs + the sphere with each moving shape
    with pytest.raises(ConstraintError, match=r"no distances yet.*solve first, or pass q"):
        coll.min_distance()
    with pytest.raises(ConstraintError, match="no distances yet"):
        coll.distances()


def test_distances_at_q_equal_those_of_a_solve_there() -> None:
    scene, ee, coll = _scene()
    at_home = coll.distances(HOME)
    assert coll.min_distance(HOME) == min(at_home.values()) > 0.0
    folded = coll.min_distance(FOLDED)
    assert folded != pytest.approx(min(at_home.values()))  # measured where asked
    ee.set_target(scene.tree.forward_kinematics(HOME, "panda_hand"))
    scene.solve(HOME, dt=0.002)
    assert coll.distances() == at_home  # the solve's, bit for bit
    assert coll.min_distance() == min(at_home.values())
    sphere = at_home[("panda_hand", "")]
    hand = scene.tree.forward_kinematics(HOME, "panda_hand")[:3, 3]
    # the hand's shapes are outside the sphere and nearer than its centre less the radius
    assert 0.0 < sphere < np.linalg.norm(hand - [0.4, 0.0, 0.5]) - 0.05 + 1e-9


def test_broad_phase_never_skips_a_pair_within_reach() -> None:
    """Along a random walk (small steps and jumps), the pairs the broad phase does not query
    get a lower bound of their distance, and every pair within reach is queried exactly."""
    arm = KinematicTree.from_urdf_file(erd_urdf_path("panda")).select_joints(ARM)
    culled = Collision("coll", srdf_file=SRDF, obstacles=["sphere 0.4 0.0 0.5 0.05"])
    every = Collision(
        "every", srdf_file=SRDF, obstacles=["sphere 0.4 0.0 0.5 0.05"], activation_distance=10
    )
    Scene(arm, [culled])
    Scene(arm, [every])
    reach = culled.margin + culled.activation_distance
    rng = np.random.default_rng(3)
    q = FOLDED.copy()
    skipped = 0
    for k in range(600):
        step = 0.3 if k % 97 == 0 else 0.004  # mostly a 1 kHz walk, now and then a jump
        q = np.clip(q + rng.normal(0.0, step, 7), arm.lower, arm.upper)
        every.min_distance(q)
        culled.min_distance(q)
        truth, got = every._dist, culled._dist  # per shape pair, the same pair order
        assert np.all(got <= truth + 1e-9)  # never above the true distance
        near = truth < reach
        assert np.allclose(got[near], truth[near], atol=1e-9)  # queried where it may act
        skipped += int((~culled._queried).sum())
    assert skipped > 0  # the broad phase did skip pairs
