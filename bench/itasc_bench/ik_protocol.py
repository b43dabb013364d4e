"""The TRAC-IK benchmark protocol's parts that every ``itasc-bench ik`` row shares.

The 5 ms budget, the 1e-5 tolerance on every component of the pose error, the test of a
returned configuration (:func:`solved`) and the chain solvers beside ours (:func:`chain_peers`:
TRAC-IK and KDL's ``ChainIkSolverPos_NR_JL``, each left out with the reason when not installed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import KinematicTree

from .peers import KdlNrJlPeer, PeerUnavailable, TracIkPeer, pose_error

Array = NDArray[np.float64]

SEEDS = ("mid", "random")
TIMEOUT = 0.005  # [s]
EPS = 1e-5  # [m] and [rad], each component


@dataclass
class Solver:
    """A solver of a row: its name and ``(seed, target) -> q`` (tree order) or None."""

    name: str
    solve: Callable[[Array, Array], Array | None]  # (seed, target) -> q in tree order or None


def chain_peers(xml: str, root: str, tip: str, names: list[str], notes: list[str]) -> list[Solver]:
    """The peers that can run here, their joint order mapped to ``names``."""
    out: list[Solver] = []
    makers: list[tuple[str, Callable[[], Any]]] = [
        ("trac_ik", lambda: TracIkPeer(xml, root, tip, timeout=TIMEOUT, eps=EPS)),
        ("kdl_nr_jl", lambda: KdlNrJlPeer(xml, root, tip, timeout=TIMEOUT, eps=EPS)),
    ]
    for name, make in makers:
        try:
            peer = make()
        except PeerUnavailable as exc:
            notes.append(f"{name} unavailable: {exc}")
            continue
        if list(peer.joint_names) != names:
            notes.append(f"{name}: joint order {peer.joint_names} differs from {names}")
            continue

        def solve(seed: Array, target: Array, peer: Any = peer) -> Array | None:
            return peer.ik(seed, target)

        out.append(Solver(name, solve))
    return out


def result_row(
    solver: str, robot: str, seed: str, samples: int, ok: int, times: list[float]
) -> dict[str, Any]:
    """One row of ``itasc-bench ik``: success rate and times [ms] of a solver on ``samples``.

    Args:
        solver: the solver's name.
        robot: the row's robot name.
        seed: the kind of seed.
        samples: targets tried.
        ok: targets solved.
        times: each call's time [s].
    """
    t = np.array(times) * 1e3
    return {
        "solver": solver,
        "robot": robot,
        "seed": seed,
        "samples": samples,
        "success_rate": ok / samples if samples else float("nan"),
        "mean_ms": float(t.mean()) if samples else float("nan"),
        "median_ms": float(np.median(t)) if samples else float("nan"),
        "max_ms": float(t.max()) if samples else float("nan"),
    }


def pose_error_max(tree: KinematicTree, link: str, q: Array, target: Array) -> float:
    """Largest component of the pose error [m or rad], in the frame where it is smallest.

    KDL's ``diff(FK(q), target)`` gives the error's components in the base frame; TRAC-IK
    tests its own solutions in the target's frame (``diffRelative``), where the same error has
    other components (up to sqrt(3) apart). A solution counts when every component is within
    the tolerance in either frame, for every solver alike.
    """
    e = pose_error(tree.forward_kinematics(q, link), target)
    rt = target[:3, :3].T
    in_target = np.concatenate([rt @ e[:3], rt @ e[3:]])
    return float(min(np.max(np.abs(e)), np.max(np.abs(in_target))))


def solved(
    tree: KinematicTree, tip: str, q: Array | None, target: Array, lo: Array, hi: Array
) -> bool:
    """Whether ``q`` is finite, within ``[lo, hi]`` and within :data:`EPS` of ``target``."""
    return bool(
        q is not None
        and np.all(np.isfinite(q))
        and np.all(q >= lo - 1e-9)
        and np.all(q <= hi + 1e-9)
        and pose_error_max(tree, tip, q, target) <= EPS
    )


__all__ = [
    "EPS",
    "SEEDS",
    "TIMEOUT",
    "Solver",
    "chain_peers",
    "pose_error_max",
    "result_row",
    "solved",
]
