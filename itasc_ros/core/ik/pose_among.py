"""A pose among inequalities: the compiled pose loop, its solutions checked, else repaired.

A pose target with one-sided constraints beside it (collision pairs at their margin, joints
kept from their limits) is most often solved by a pose solution that already keeps them: the
compiled pose loop (:mod:`~itasc_ros.core.ik.pose_solve`, ~0.1 ms) finds one, the inequality
rows are read at it (:class:`~itasc_ros.core.ik.set_problem.SetProblem`, gains 1), and a
solution where none is broken is the answer. A solution that breaks one is dropped and the
pose loop tries again from a random configuration; every :data:`REPAIR_EVERY`-th one is handed,
as the seed, to the loop on the whole constraint set (:mod:`~itasc_ros.core.ik.set_solve`),
which moves it until both hold, for a share of the budget (a target whose pose solutions
nearly all break an inequality). The answer keeps every inequality either way.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..constraints.base import Constraint
from ..kinematics.tree import KinematicTree
from .inputs import check_pose
from .options import IkOptions
from .pose_chain import chain_of
from .pose_solve import solve_pose
from .result import IkResult
from .set_problem import SetProblem
from .set_solve import solve_set

Array = NDArray[np.float64]

REPAIR_SHARE = 0.25
"""The share of the budget left that one repair by the set loop may take."""
REPAIR_EVERY = 16
"""The set loop repairs every this many-th pose solution that breaks an inequality: a new pose
solution from a random configuration is far cheaper than an iteration of a repair, and keeps
the inequalities more often than a repair finishes within the budget (the choice is measured
by ``itasc-bench ik``'s ``panda_obstacles`` row)."""
KEPT_PROBLEMS = 8
"""Inequality problems kept per tree for the next solves with the same constraints."""

_problems: weakref.WeakKeyDictionary[KinematicTree, dict[tuple[int, ...], SetProblem]]
_problems = weakref.WeakKeyDictionary()


def among_inequalities(constraints: Sequence[Constraint]) -> bool:
    """True when ``constraints`` are one pose (:meth:`Constraint.pose_goal`) and inequalities."""
    equal = [c for c in constraints if not c.one_sided]
    return len(equal) == 1 and len(equal) < len(constraints) and equal[0].pose_goal() is not None


def solve_pose_among(
    tree: KinematicTree,
    constraints: Sequence[Constraint],
    seed: Array,
    budget: tuple[float, int | None],
    tol: float,
    tol_r: float,
    random_seed: int,
    opts: IkOptions,
) -> IkResult:
    """Joint positions that put the pose on its target and keep every inequality.

    Args:
        tree: the kinematic tree the constraints are bound to.
        constraints: one pose constraint and one-sided ones (:func:`among_inequalities`).
        seed: (n,) start configuration [rad or m].
        budget: (time budget [s], iterations at most or None).
        tol: tolerance of the position rows [m] and of the inequality rows.
        tol_r: tolerance of the rotation rows [rad].
        random_seed: seed of the restarts (same seed, same answer).
        opts: tuning of the loops.

    Returns:
        The :class:`IkResult`: with the pose loop's solution, the errors of the pose's
        selected rows (every inequality holds there); with the set loop's, every row's.
    """
    (pose,) = [c for c in constraints if not c.one_sided]
    goal = pose.pose_goal()
    assert goal is not None
    link, target, position_axes, rotation_axes = goal
    ch, _ = chain_of(tree, link)
    sel = ch.selection(position_axes, rotation_axes)
    target = check_pose(target)
    inequalities = _problem(tree, [c for c in constraints if c.one_sided], seed)
    rng = np.random.default_rng(int(random_seed))
    timeout, max_iters = budget
    t0 = time.perf_counter()
    q, iterations, restarts, last, broken = seed, 0, 0, None, 0
    while True:
        left = t0 + timeout - time.perf_counter()
        its = None if max_iters is None else max(max_iters - iterations, 1)
        r = solve_pose(
            ch, target, sel, q, (max(left, 0.0), its), tol, tol_r,
            int(rng.integers(2**31)), "speed", opts, time.perf_counter(),
        )  # fmt: skip
        iterations += r.iterations
        restarts += r.restarts
        last = r
        if r.success and _kept(inequalities, r.q, tol):
            return _done(tree, constraints, r, iterations, restarts, t0, "converged")
        left = t0 + timeout - time.perf_counter()
        broken += r.success
        if r.success and left > 0.0 and broken % REPAIR_EVERY == 0:  # move it until both hold
            share = left * REPAIR_SHARE if math.isfinite(left) else left
            s = solve_set(
                tree, constraints, (), r.q, (share, its), tol, tol_r,
                int(rng.integers(2**31)), "speed", opts,
            )  # fmt: skip
            iterations += s.iterations
            restarts += s.restarts
            if s.success:
                return _done(tree, constraints, s, iterations, restarts, t0, "converged")
            last = s
        out_of_iterations = max_iters is not None and iterations >= max_iters
        if t0 + timeout - time.perf_counter() <= 0.0 or out_of_iterations:
            message = "iteration limit reached" if out_of_iterations else "time budget spent"
            return _done(tree, constraints, last, iterations, restarts, t0, message, False)
        q = rng.uniform(tree.lower, tree.upper)  # the next attempt from elsewhere
        restarts += 1


def _problem(tree: KinematicTree, constraints: list[Constraint], q: Array) -> SetProblem:
    """The inequalities' problem on ``tree``: kept from a solve with the same objects before.

    Building one binds the constraints (a collision model's pairs) and reads its rows once at
    ``q`` (the first query of a collision model loads its code), before the budget's clock
    starts: neither is the solve's time. The problem holds the constraints, so an id in the key
    is never another object's while it is kept. A constraint bound to another tree since is
    bound again.
    """
    kept = _problems.setdefault(tree, {})
    key = tuple(id(c) for c in constraints)
    problem = kept.pop(key, None)
    if problem is None or any(c.bound_tree is not tree for c in constraints):
        problem = SetProblem(tree, constraints)
        problem.rows(tree.clamp(q))
    kept[key] = problem  # the most recent last
    while len(kept) > KEPT_PROBLEMS:
        del kept[next(iter(kept))]
    return problem


def _kept(inequalities: SetProblem, q: Array, tol: float) -> bool:
    """True when no inequality row is broken at ``q`` by more than ``tol``."""
    saved = [(c, c.gain) for c in inequalities.scene.constraints]
    try:
        for c, _ in saved:
            c.gain = 1.0
        _, _, e = inequalities.rows(q)
    finally:
        for c, gain in saved:
            c.gain = gain
    return bool(np.all(e <= tol))


def _done(
    tree: KinematicTree,
    constraints: Sequence[Constraint],
    r: IkResult,
    iterations: int,
    restarts: int,
    t0: float,
    message: str,
    success: bool = True,
) -> IkResult:
    """The result of ``r``'s configuration, with the totals of every attempt."""
    return IkResult(
        q=r.q,
        success=success and r.success,
        errors=r.errors,
        position_error=r.position_error,
        rotation_error=r.rotation_error,
        iterations=iterations,
        restarts=restarts,
        time=time.perf_counter() - t0,
        joint_names=tree.joint_names,
        message=message,
    )


__all__ = [
    "KEPT_PROBLEMS",
    "REPAIR_EVERY",
    "REPAIR_SHARE",
    "among_inequalities",
    "solve_pose_among",
]
