"""Any constraint set: the damped Newton loop on the rows of the constraints (numpy).

Each iteration reads the primary constraints' rows at ``q`` (:class:`SetProblem`), tests
every row against its tolerance (rotation rows against the rotation tolerance, as the
constraints declare them), takes a damped step plus the secondary constraints' step in the
null space, and clips it into the joint box; a stalled or too long attempt restarts, drawn by
a seeded generator: when the seed already meets some rows (a humanoid's planted feet), the seed
with the joints that only its unmet rows use drawn over their range (:func:`_restart`), else a
configuration drawn near the seed (:meth:`JointBox.near`). Without
secondary constraints the step is one compiled call that stops a joint at a limit and solves
the error it leaves with the other joints (``IkOptions.resolve_at_limits``): a whole body with
tight joint limits (a humanoid's legs) does not stall against them. A set of full poses and a
centre-of-mass band (:class:`FramesProblem`) runs its attempts compiled, eight iterations a
call, its solution checked on the constraints' own rows.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..constraints.base import Constraint
from ..errors import ConfigurationError, TargetNotSet
from ..kinematics.tree import KinematicTree
from ..solve.scene import layout_signature
from . import _ik_kernels as K
from ._frames_kernels import MET, RAN_OUT
from .frames_problem import FramesProblem
from .joint_box import JointBox, unmet_only
from .null_space import damped_step, null_space_step, polish
from .options import IkOptions
from .result import IkResult
from .set_problem import SetProblem

Array = NDArray[np.float64]


@dataclass
class _Run:
    """What the loop found: the solution kept (or None), the best configuration and errors."""

    found: Array | None
    best_q: Array
    e_best: Array
    iterations: int
    restarts: int
    message: str


def solve_set(
    tree: KinematicTree,
    constraints: Sequence[Constraint],
    secondary: Sequence[Constraint],
    seed: Array,
    budget: tuple[float, int | None],
    tol: float,
    tol_r: float,
    random_seed: int,
    prefer: str,
    opts: IkOptions,
) -> IkResult:
    """Joint positions that meet ``constraints`` (and ``secondary`` as well as possible).

    The constraints' gains and feed-forward are set to 1 and off for the solve and restored
    after it. The budget's clock starts after a first evaluation of the rows (compiled code
    loaded).

    Args:
        tree: the kinematic tree the constraints are bound to.
        constraints: the primary constraints (they decide success).
        secondary: constraints solved in the null space of the primary ones.
        seed: (n,) start configuration [rad or m], clipped into the limits.
        budget: (time budget [s], iterations at most or None).
        tol: tolerance of each row that is not an orientation [m, rad or m].
        tol_r: tolerance of each orientation row [rad].
        random_seed: seed of the restarts' generator.
        prefer: one of :data:`~itasc_ros.core.ik.options.PREFER`.
        opts: tuning of the loop.

    Returns:
        The :class:`IkResult` (see :func:`~itasc_ros.core.ik.solve_ik`).

    Raises:
        ConfigurationError: constraint names repeat, or a seed with NaN or Inf values.
        TargetNotSet: a constraint without its target.
    """
    names = [c.name for c in [*constraints, *secondary]]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"constraint names repeat: {names}")
    saved = [(c, c.gain, c.feedforward) for c in [*constraints, *secondary]]
    try:
        for c, _, _ in saved:
            c.gain, c.feedforward = 1.0, False
        probs = _problems(tree, constraints, secondary)
        box, primary, posture, fast = probs.box, probs.primary, probs.posture, probs.fast
        q0 = box.clip_seed(seed, np.zeros(tree.n_joints))
        rotation = probs.rotation
        tols = np.where(rotation, tol_r, tol)
        if not probs.warm:
            # The budget is for solving: the scene's compiled kernels are loaded (or compiled,
            # on the first call in a process) by a first evaluation before the clock starts.
            a0, ew0, _ = primary.rows(q0)
            if posture is not None:
                posture.rows(q0)
            else:  # the Newton loop's bounded step too, on copies (nothing moves)
                m0, n0 = ew0.shape[0], q0.shape[0]
                K.bounded_step(a0.copy(), ew0.copy(), opts.lambda_min, q0.copy(), box.lo,
                               box.hi, opts.max_step, K.BOUNDED_ROUNDS, np.zeros((m0, m0)),
                               np.zeros(m0), np.zeros(n0), np.zeros(n0))  # fmt: skip
            if fast is not None:  # and the compiled loop (no iteration)
                fast.newton(q0.copy(), q0.copy(), (box.lo, box.hi), tols, opts.to_array(),
                            np.zeros(K.S_SIZE), 0)  # fmt: skip
            probs.warm = True
        t0 = time.perf_counter()
        start = None
        if fast is not None:  # the compiled loop; a solution checked on the constraints' rows
            run = _compiled(fast, box, q0, tols, budget, random_seed, prefer, opts, t0)
            start = _unmet(run, primary, tols)
        if fast is None or start is not None:
            run = _newton(primary, posture, box, q0, tols, budget, random_seed, prefer, opts, t0,
                          start)  # fmt: skip
    finally:
        for c, gain, ff in saved:
            c.gain, c.feedforward = gain, ff
    return _result(run, rotation, tree, t0)


@dataclass
class _Problems:
    """A constraint set's problems, kept for the next solve of the same set on the same tree.

    Attributes:
        constraints: the primary constraints, then the secondary ones (the objects).
        n_primary: how many of them are primary.
        signature: each constraint's layout signature when the problems were built.
        box: the tree's joint box.
        primary: the primary constraints' rows; ``posture`` the secondary ones' (or None).
        fast: the compiled rows of a set of poses and a centre of mass (or None).
        rotation: (m,) bool, the primary rows that measure an orientation.
        warm: whether a first evaluation loaded the compiled code.
    """

    constraints: tuple[Constraint, ...]
    n_primary: int
    signature: tuple[int, ...]
    box: JointBox
    primary: SetProblem
    posture: SetProblem | None
    fast: FramesProblem | None
    rotation: NDArray[np.bool_]
    warm: bool = False

    def fits(self, tree: KinematicTree, cons: Sequence[Constraint], n_primary: int) -> bool:
        """True when these problems are those of ``cons`` on ``tree``, as they are now."""
        return (
            n_primary == self.n_primary
            and len(cons) == len(self.constraints)
            and all(a is b for a, b in zip(cons, self.constraints, strict=True))
            and all(c.bound_tree is tree for c in cons)
            and self.signature == tuple(layout_signature(c) for c in cons)
        )


#: The key of the problems of the last constraint set solved on a tree, in its
#: ``solver_work``: a set solved again (new targets, same constraints) is not built again (a
#: scene of four poses and a centre of mass: ~0.3 ms, a sixth of a humanoid's solve). Kept on
#: the tree, not in a table keyed by it: its scene refers to the tree, which a weak key would
#: then never let go.
KEPT = "ik_set_problems"


def _problems(
    tree: KinematicTree, constraints: Sequence[Constraint], secondary: Sequence[Constraint]
) -> _Problems:
    """The problems of the set on ``tree``: those of the last solve when it is the same set.

    Its targets, weights and bands are read again (:meth:`FramesProblem.refresh`).

    Raises:
        TargetNotSet: a constraint without its target.
    """
    cons = (*constraints, *secondary)
    kept = tree.solver_work.get(KEPT)
    if isinstance(kept, _Problems) and kept.fits(tree, cons, len(constraints)):
        for c in cons:
            if not c.has_target:
                raise TargetNotSet(f"{c.name}: the constraint has no target; set it first")
        if kept.fast is not None:
            kept.fast.refresh(constraints)
        return kept
    primary = SetProblem(tree, constraints)
    posture = SetProblem(tree, secondary) if secondary else None
    fast = FramesProblem(tree, constraints) if not secondary and FramesProblem.fits(
        constraints) else None  # fmt: skip
    probs = _Problems(
        cons, len(constraints), tuple(layout_signature(c) for c in cons), JointBox(tree), primary,
        posture, fast, primary.orientation_rows(),
    )  # fmt: skip
    tree.solver_work[KEPT] = probs
    return probs


def _newton(
    primary: SetProblem,
    posture: SetProblem | None,
    box: JointBox,
    q0: Array,
    tols: Array,
    budget: tuple[float, int | None],
    random_seed: int,
    prefer: str,
    opts: IkOptions,
    t0: float,
    start: Array | None = None,
) -> _Run:
    """The loop: damped steps, stall test, restarts, until a solution or the budget's end.

    The loop starts at ``start`` (default the seed ``q0``); solutions are ranked by their
    distance to ``q0``.
    """
    lo, hi = box.lo, box.hi
    rng = np.random.default_rng(int(random_seed))
    timeout, max_iters = budget
    deadline = t0 + timeout
    q = (q0 if start is None else start).copy()
    best_q, best = q.copy(), math.inf
    found: Array | None = None
    found_dist = math.inf
    iters = restarts = local = 0
    ref = math.inf
    message = "time budget spent"
    m, n = tols.shape[0], q0.shape[0]
    e_best = np.zeros(m)
    work = (np.zeros((m, m)), np.zeros(m), np.zeros(n), np.zeros(n))  # bounded_step's
    free: NDArray[np.bool_] | bool | None = False  # what restarts redraw: known at the first
    while True:
        a, ew, e = primary.rows(q)
        norm = float(np.linalg.norm(e))
        if norm < best:
            best, best_q[:], e_best = norm, q, e
        restart = False
        if np.all(np.abs(e) <= tols):
            sol = q.copy()
            if posture is not None:
                sol, e = polish(primary, posture, sol, tols, lo, hi, opts)
                e_best = e
            d = float(np.linalg.norm(sol - q0))
            if d < found_dist:
                found, found_dist, e_best = sol, d, e
            if prefer == "speed":
                message = "converged"
                break
            restart = True
        elif local % opts.stall_window == 0:
            if local > 0 and not norm <= opts.stall_ratio * ref:
                restart = True
            ref = norm
        if local >= opts.restart_iterations or not math.isfinite(norm):
            restart = True
        if max_iters is not None and iters >= max_iters:
            message = "iteration limit reached"
            break
        if time.perf_counter() >= deadline:
            break
        iters += 1
        if restart:
            if free is False:
                a0, _, e0 = primary.rows(q0)
                free = unmet_only(a0, e0, tols, primary.free_rows)
            q = _restart(box, q0, free, rng)
            restarts += 1
            local, ref = 0, math.inf
            continue
        local += 1
        lam = opts.lambda_min + opts.lambda_scale * 0.5 * norm * norm
        if posture is None:  # compiled; at the limits re-solved by the other joints
            rounds = K.BOUNDED_ROUNDS if opts.resolve_at_limits else 0
            if not K.bounded_step(a, ew, lam, q, lo, hi, opts.max_step, rounds, *work):
                local = opts.restart_iterations  # not positive definite: the next one restarts
            continue
        dq = damped_step(a, ew, lam)
        dq += null_space_step(a, dq, posture, q, lam)
        big = float(np.max(np.abs(dq))) if dq.size else 0.0
        if big > opts.max_step:
            dq *= opts.max_step / big
        q = np.clip(q + dq, lo, hi)
    return _Run(found, best_q, e_best, iters, restarts, message)


def _restart(
    box: JointBox, q0: Array, free: NDArray[np.bool_] | bool | None, rng: np.random.Generator
) -> Array:
    """A new attempt's start (n,): what the seed ``q0`` meets is kept, the rest drawn anew.

    When the seed meets some rows, the joints that only its unmet rows use (``free``, from
    :func:`~itasc_ros.core.ik.joint_box.unmet_only`) are drawn over their whole range and the
    others keep the seed's values: a humanoid's planted feet keep its legs and floating base
    where they are, its arms are drawn anew for the hands' targets. Otherwise (nothing met,
    or no joint used by the unmet rows alone) every joint is drawn near the seed
    (:meth:`JointBox.near`).
    """
    if isinstance(free, np.ndarray) and free.any():
        return box.redraw(q0, free, rng)
    return box.near(q0, rng)


#: Iterations of one call of the compiled loop (a humanoid's iteration is short next to the
#: budget): the clock is read between calls.
BATCH = 8


def _compiled(
    fast: FramesProblem,
    box: JointBox,
    q0: Array,
    tols: Array,
    budget: tuple[float, int | None],
    random_seed: int,
    prefer: str,
    opts: IkOptions,
    t0: float,
) -> _Run:
    """:func:`_newton` on a :class:`FramesProblem`, its attempts' iterations compiled."""
    rng = np.random.default_rng(int(random_seed))
    timeout, max_iters = budget
    deadline = t0 + timeout
    params, state = opts.to_array(), np.zeros(K.S_SIZE)
    state[K.S_BEST], state[K.S_REF] = math.inf, math.inf
    q, best_q = q0.copy(), q0.copy()
    found: Array | None = None
    found_dist = math.inf
    found_e = np.zeros(0)
    restarts = 0
    message = "time budget spent"
    free: NDArray[np.bool_] | bool | None = False  # what restarts redraw: known at the first
    while True:
        left = BATCH if max_iters is None else min(BATCH, max_iters - int(state[K.S_ITERS]))
        out = fast.newton(q, best_q, (box.lo, box.hi), tols, params, state, max(left, 0))
        if out == MET:
            d = float(np.linalg.norm(q - q0))
            if d < found_dist:  # its errors: the loop's last rows
                found, found_dist, found_e = q.copy(), d, fast.errors()
            if prefer == "speed":
                message = "converged"
                break
        if max_iters is not None and state[K.S_ITERS] >= max_iters:
            message = "iteration limit reached"
            break
        if time.perf_counter() >= deadline:
            break
        if out != RAN_OUT:  # met (searching on for a nearer one) or stalled: start again
            if free is False:
                free = fast.unmet_only_joints(q0, tols)
            q = _restart(box, q0, free, rng)
            restarts += 1
            state[K.S_LOCAL], state[K.S_REF] = 0.0, math.inf
    e = found_e if found is not None else fast.rows(best_q)[2]
    return _Run(found, best_q, e, int(state[K.S_ITERS]) + restarts, restarts, message)


def _unmet(run: _Run, primary: SetProblem, tols: Array) -> Array | None:
    """None when ``run``'s solution (if any) meets the constraints' own rows; else it (n,).

    A solution of the compiled rows (:class:`FramesProblem`, rotation errors in the root
    frame) is checked on the rows of the constraints (a rotation error may be measured in the
    target's frame there); one that misses them is where the loop on those rows goes on.
    """
    if run.found is None:
        return None
    _, _, e = primary.rows(run.found)
    if np.all(np.abs(e) <= tols):
        run.e_best = e
        return None
    return run.found


def _result(run: _Run, rotation: NDArray[np.bool_], tree: KinematicTree, t0: float) -> IkResult:
    """The :class:`IkResult` of a run; ``rotation`` (m,) marks the orientation rows."""
    message = run.message
    if run.found is not None and message != "converged":
        message = "converged (nearest of the solutions found in the budget)"
    errors = np.asarray(run.e_best, dtype=float).copy()
    pos, rot = errors[~rotation], errors[rotation]
    return IkResult(
        q=run.found if run.found is not None else run.best_q,
        success=run.found is not None,
        errors=errors,
        position_error=math.sqrt(float(pos @ pos)),
        rotation_error=math.sqrt(float(rot @ rot)),
        iterations=run.iterations,
        restarts=run.restarts,
        time=time.perf_counter() - t0,
        joint_names=tree.joint_names,
        message=message,
    )


__all__ = ["solve_set"]
