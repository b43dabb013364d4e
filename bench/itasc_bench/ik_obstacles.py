"""``itasc-bench ik``'s collision-free row: the Panda among obstacles, beside the chain solvers.

The Panda of config/panda_obstacles.yaml: the pairs its SRDF leaves in (meshes as convex
hulls) and two obstacles, a plate and a ball. Each sample is a configuration drawn within the
limits whose every pair is at least ``margin + buffer + 5 mm`` apart; its hand pose is the
target. A returned configuration counts when it passes the TRAC-IK protocol's test
(:func:`~itasc_bench.ik_protocol.solved`) **and** keeps every pair at least ``margin``
apart, checked with Pinocchio + coal on the same pairs (:mod:`~itasc_bench.peers.
pinocchio_collision`). Solvers, in turns on each sample:

* ``itasc_ros``: :func:`~itasc_ros.core.solve_ik` on the constraint set (the pose and the
  collision constraint, its rows inequalities);
* ``itasc_ros_pose_only``: the same solver on the pose alone (its compiled chain loop);
* the chain solvers (TRAC-IK, KDL), on the pose alone;
* ``pink`` (:mod:`~itasc_bench.peers.pink_arm`): a frame task on the hand, a
  self-collision barrier on the same pairs at the margin;
* ``mink`` (:mod:`~itasc_bench.peers.mink_arm`): a frame task on the hand, a collision
  avoidance limit on the same pairs at the margin (MuJoCo's model of the same meshes).

A solver that ignores the obstacles fails a sample only when its solution collides: the row
says how often that is, and what keeping the margin costs.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import CopyPose, KinematicTree, Scene, solve_ik
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics.collision_geometry import resolve_file
from itasc_ros.params import load_config
from itasc_ros.tools.resources import share_file

from .ik_protocol import EPS, TIMEOUT, Solver, chain_peers, result_row, solved
from .ik_rows import OBSTACLES
from .peers import PeerUnavailable, PinocchioReference, pinocchio_reference
from .peers.mink_arm import MinkArm
from .peers.pink_arm import PinkArm
from .peers.urdf_chain import urdf_chain

Array = NDArray[np.float64]

NAME = OBSTACLES
"""The row's robot name in ``itasc-bench ik --robots``."""
ROOT, TIP = "panda_link0", "panda_hand"
CLEARANCE = 0.005  # [m] beyond margin + buffer at the sampled configurations


def obstacle_rows(
    samples: int, seeds: Sequence[str], rng_seed: int, notes: list[str]
) -> list[dict[str, Any]]:
    """The row's results, one per (solver, seed kind); why not, in ``notes``.

    Args:
        samples: targets per seed kind.
        seeds: 'mid' and/or 'random' (as the chain rows).
        rng_seed: seed of the targets' and seeds' generator.
        notes: where a missing piece (example-robot-data, Pinocchio, a peer) is said.
    """
    try:
        tree, coll, ref, xml = _scene()
    except (PeerUnavailable, FileNotFoundError, ImportError) as exc:
        notes.append(f"{NAME}: {exc}")
        return []

    def check(q: Array) -> float:  # the closest pair's distance [m], Pinocchio + coal's
        return float(ref.distances(ref.q_of(q)).min())

    names = [j.name for j in urdf_chain(xml, ROOT, TIP) if j.movable]
    hand = CopyPose("hand", TIP)
    solvers = [
        Solver("itasc_ros", functools.partial(_with_collision, tree, hand, coll)),
        Solver("itasc_ros_pose_only", functools.partial(_pose_only, tree)),
        *chain_peers(xml, ROOT, TIP, names, notes),
    ]
    try:
        pink = PinkArm(ref, TIP, coll.margin, EPS, TIMEOUT)
        solvers.append(Solver("pink", pink.solve))
    except PeerUnavailable as exc:
        notes.append(f"{NAME}: pink unavailable: {exc}")
    try:
        urdf = resolve_file(str(coll.urdf_file), coll.package_path, "Panda URDF")
        mink = MinkArm(str(urdf), tree, coll, TIP, EPS, TIMEOUT)
        solvers.append(Solver("mink", mink.solve))
    except (PeerUnavailable, FileNotFoundError) as exc:
        notes.append(f"{NAME}: mink unavailable: {exc}")
    margin, aim = coll.margin, coll.margin + coll.buffer + CLEARANCE
    for s in solvers:  # warm-up: compilation, caches
        s.solve(tree.neutral(), tree.forward_kinematics(tree.neutral() + 0.1, TIP))
    rows = []
    for kind in seeds:
        rng = np.random.default_rng(rng_seed)
        times: dict[str, list[float]] = {s.name: [] for s in solvers}
        ok = dict.fromkeys(times, 0)
        for i in range(samples):
            target = tree.forward_kinematics(_free_configuration(tree, check, aim, rng), TIP)
            seed = tree.neutral() if kind == "mid" else rng.uniform(tree.lower, tree.upper)
            for s in solvers[i % len(solvers) :] + solvers[: i % len(solvers)]:
                t0 = time.perf_counter()
                q = s.solve(seed.copy(), target)
                times[s.name].append(time.perf_counter() - t0)
                if solved(tree, TIP, q, target, tree.lower, tree.upper) and q is not None:
                    ok[s.name] += check(q) >= margin - 1e-6
        rows += [
            result_row(s.name, NAME, kind, samples, ok[s.name], times[s.name]) for s in solvers
        ]
    return rows


def _scene() -> tuple[KinematicTree, Collision, PinocchioReference, str]:
    """The arm's tree, its collision constraint, Pinocchio + coal on its pairs, its URDF."""
    cfg = load_config(share_file("config", "panda_obstacles.yaml"))
    (spec,) = [c for c in cfg.constraints if c.type == "collision"]
    urdf = resolve_file(spec.settings["urdf_file"], (), "Panda URDF of example-robot-data")
    tree = KinematicTree.from_urdf_file(urdf).select_joints(cfg.joints)
    coll = spec.build()
    assert isinstance(coll, Collision)
    Scene(tree, [coll])  # binds it to the tree
    return tree, coll, pinocchio_reference(str(urdf), tree, coll), urdf.read_text()


def _free_configuration(
    tree: KinematicTree, closest: Any, clearance: float, rng: np.random.Generator
) -> Array:
    """A configuration within the limits whose every pair is ``clearance`` [m] apart."""
    while True:
        q = rng.uniform(tree.lower, tree.upper)
        if closest(q) >= clearance:
            return q


def _with_collision(
    tree: KinematicTree, hand: CopyPose, coll: Collision, seed: Array, target: Array
) -> Array | None:
    hand.set_target(target)
    r = solve_ik(tree, constraints=[hand, coll], seed=seed, timeout=TIMEOUT, tolerance=EPS)
    return r.q if r.success else None


def _pose_only(tree: KinematicTree, seed: Array, target: Array) -> Array | None:
    r = solve_ik(tree, target, TIP, seed=seed, timeout=TIMEOUT, tolerance=EPS)
    return r.q if r.success else None


__all__ = ["CLEARANCE", "NAME", "obstacle_rows"]
