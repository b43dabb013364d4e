"""``itasc-bench ik``'s whole-body row: Talos standing on both feet reaches two hand poses.

Talos (example-robot-data's ``talos_full_v2.urdf``, 32 joints) behind a free-floating base
(:func:`~itasc_ros.core.kinematics.mobile_base.with_floating_base`: 38 joints). The problem:

* both soles (``left_sole_link``, ``right_sole_link``) on their poses in the SRDF's
  half-sitting stance (6-D each);
* both hands (``gripper_left_base_link``, ``gripper_right_base_link``) on target poses (6-D
  each);
* the centre of mass's x, y within :data:`BAND` (the support region over the feet, as in
  config/talos_com.yaml).

Each sample draws the torso's and both arms' joints uniformly within their limits, the rest
of the body in half-sitting, until the centre of mass is :data:`CLEARANCE` inside the band:
its hand poses are the targets (reachable by construction). Every solver starts from
half-sitting with the 5 ms budget; a sample is a success when the returned configuration is
within the limits, every component of every frame's pose error is at most 1e-5 (as
:func:`~itasc_bench.ik_protocol.pose_error_max` measures it) and the centre of mass is in
the band, all checked here with our forward kinematics. Solvers, in turns on each sample:

* ``itasc_ros``: :func:`~itasc_ros.core.solve_ik` on the constraint set (four
  :class:`~itasc_ros.core.CopyPose`, a :class:`~itasc_ros.core.constraints.com.CenterOfMass`
  band);
* ``pinocchio_clik``, ``pink`` and ``mink`` (:mod:`~itasc_bench.peers.whole_body`), each
  left out with the reason when not installed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import CopyPose, KinematicTree, solve_ik
from itasc_ros.core.constraints.com import CenterOfMass
from itasc_ros.core.kinematics.mobile_base import with_floating_base
from itasc_ros.tools.resources import example_robot_data_file
from itasc_ros.tools.scenarios.talos_com import half_sitting

from .ik_protocol import EPS, TIMEOUT, pose_error_max, result_row
from .ik_rows import WHOLE_BODY
from .peers import PeerUnavailable
from .peers.whole_body import FreeFlyerMap, MinkIk, PinkIk, PinocchioClik

Array = NDArray[np.float64]

NAME = WHOLE_BODY
"""The row's robot name in ``itasc-bench ik --robots``."""
URDF = "talos_data/robots/talos_full_v2.urdf"
FEET = ("left_sole_link", "right_sole_link")
HANDS = ("gripper_left_base_link", "gripper_right_base_link")
#: The CoM's support band: (lower, upper) x, y [m], in the world (the feet's frame at rest).
BAND = (np.array([-0.05, -0.08]), np.array([0.05, 0.08]))
#: The band's ramp in our CenterOfMass constraint [m] (rows act within it of an edge).
RAMP = 0.005
#: How far inside the band the sampled configurations' CoM is [m].
CLEARANCE = 0.01
SEED_KIND = "half_sitting"


def whole_body_rows(samples: int, rng_seed: int, notes: list[str]) -> list[dict[str, Any]]:
    """The row's results, one per solver; why a solver or the robot is missing, in ``notes``.

    Args:
        samples: targets.
        rng_seed: seed of the targets' generator.
        notes: where a missing piece (example-robot-data, Pinocchio, pink) is said.
    """
    try:
        path = example_robot_data_file(URDF)
    except FileNotFoundError as exc:
        notes.append(f"{NAME}: {exc}")
        return []
    tree = with_floating_base(KinematicTree.from_urdf(path.read_text()))
    q0 = half_sitting(tree)
    feet = [tree.forward_kinematics(q0, f) for f in FEET]
    solvers = {"itasc_ros": functools.partial(_ours, _constraints(tree), tree, feet)}
    solvers.update(_peers(str(path), tree, feet, notes))
    rng = np.random.default_rng(rng_seed)
    warm = _sample(tree, q0, rng)
    for solve in solvers.values():  # warm-up: compilation, caches
        solve(q0.copy(), warm)
    times: dict[str, list[float]] = {s: [] for s in solvers}
    ok = dict.fromkeys(solvers, 0)
    names = list(solvers)
    for i in range(samples):
        hands = _sample(tree, q0, rng)
        for s in names[i % len(names) :] + names[: i % len(names)]:
            t0 = time.perf_counter()
            q = solvers[s](q0.copy(), hands)
            times[s].append(time.perf_counter() - t0)
            ok[s] += q is not None and _solved(tree, q, [*feet, *hands])
    return [result_row(s, NAME, SEED_KIND, samples, ok[s], times[s]) for s in names]


def _constraints(tree: KinematicTree) -> list[Any]:
    """Our problem: a CopyPose per foot and hand, the CoM band (targets set per sample)."""
    cons: list[Any] = [CopyPose(link, link) for link in (*FEET, *HANDS)]
    cons.append(CenterOfMass("com", "xy", BAND[0].tolist(), BAND[1].tolist(), margin=RAMP))
    return cons


def _ours(
    cons: list[Any], tree: KinematicTree, feet: list[Array], seed: Array, hands: list[Array]
) -> Array | None:
    for c, pose in zip(cons, [*feet, *hands], strict=False):
        c.set_target(pose)
    r = solve_ik(tree, constraints=cons, seed=seed, timeout=TIMEOUT, tolerance=EPS)
    return r.q if r.success else None


def _peers(path: str, tree: KinematicTree, feet: list[Array], notes: list[str]) -> dict[str, Any]:
    """The peers that run here, as ``(seed, hands) -> q or None``."""
    out: dict[str, Any] = {}
    links = (*FEET, *HANDS)
    makers: dict[str, Any] = {
        "mink": lambda: MinkIk(path, tree.joint_names, links, BAND, EPS, TIMEOUT),
    }
    try:
        fmap = FreeFlyerMap(path, tree.joint_names)
        makers["pinocchio_clik"] = lambda: PinocchioClik(fmap, links, BAND, EPS, TIMEOUT)
        makers["pink"] = lambda: PinkIk(fmap, links, BAND, EPS, TIMEOUT)
    except PeerUnavailable as exc:
        notes.append(f"{NAME}: pinocchio_clik and pink unavailable: {exc}")
    for name, make in makers.items():
        try:
            peer = make()
        except PeerUnavailable as exc:
            notes.append(f"{NAME}: {name} unavailable: {exc}")
            continue

        def solve(seed: Array, hands: list[Array], peer: Any = peer) -> Array | None:
            return peer.solve(seed, [*feet, *hands])

        out[name] = solve
    return out


def _sample(tree: KinematicTree, q0: Array, rng: np.random.Generator) -> list[Array]:
    """Hand poses of a random upper body whose CoM is :data:`CLEARANCE` inside the band."""
    upper = [i for i, n in enumerate(tree.joint_names) if n.startswith(("torso_", "arm_"))]
    lo, hi = BAND[0] + CLEARANCE, BAND[1] - CLEARANCE
    while True:
        q = q0.copy()
        q[upper] = rng.uniform(tree.lower[upper], tree.upper[upper])
        com = tree.center_of_mass(q)[0][:2]
        if np.all(com >= lo) and np.all(com <= hi):
            return [tree.forward_kinematics(q, h) for h in HANDS]


def _solved(tree: KinematicTree, q: Array, poses: Sequence[Array]) -> bool:
    """Within the limits, every frame within :data:`EPS` of its pose, the CoM in the band."""
    if not (np.all(np.isfinite(q)) and q.shape == tree.lower.shape):
        return False
    if np.any(q < tree.lower - 1e-9) or np.any(q > tree.upper + 1e-9):
        return False
    if any(
        pose_error_max(tree, link, q, pose) > EPS
        for link, pose in zip((*FEET, *HANDS), poses, strict=True)
    ):
        return False
    com = tree.center_of_mass(q)[0][:2]
    return bool(np.all(com >= BAND[0] - 1e-9) and np.all(com <= BAND[1] + 1e-9))


__all__ = ["BAND", "NAME", "whole_body_rows"]
