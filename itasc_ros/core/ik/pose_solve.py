"""One link onto one pose: the Newton loop run by the compiled kernel, chunk by chunk.

The kernel (:func:`~itasc_ros.core.ik._pose_kernel.ik_solve`) checks the target, clips the
seed, runs up to :data:`CHUNK` iterations per call -- FK, Jacobian, damped step, limits,
stall test, restarts --, moves a solution's joints by whole turns toward the seed and writes
its errors; the loop here looks at the clock and the iteration budget between calls and keeps
the solutions (``prefer='distance'``).
"""

from __future__ import annotations

import math
import time

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, UnreachableTargetError
from . import _ik_kernels as K
from . import _pose_kernel as P
from .inputs import check_pose
from .options import IkOptions
from .pose_chain import PoseChain
from .result import IkResult

Array = NDArray[np.float64]

#: Iterations per compiled call between two looks at the clock (an arm's iteration is short
#: next to the budget).
CHUNK = 64

_WARM = False


def warm_up() -> None:
    """Load (or compile) the compiled IK loop once, so that no budget pays for it.

    :func:`~itasc_ros.core.ik.solve_ik` calls it before starting its clock; a thread may call
    it ahead of time. Returns at once when done already.
    """
    global _WARM
    if _WARM:
        return
    one = np.zeros(1)
    chain = (
        np.ones(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros((1, 3, 4)),
        np.array([[0.0, 0.0, 1.0]]),
        one.copy(),
        one.copy(),
        np.zeros((3, 4)),
    )
    box = (one - 1.0, one + 1.0, one - 1.0, one + 1.0, np.zeros(0, dtype=np.int64))
    ints, flts = P.pack_chain(chain, box, 1.0)
    mut = np.zeros(P.mut_size(1, 1))
    sel = np.arange(3, dtype=np.int64)
    out = np.zeros(sel.shape[0])
    rng = np.zeros(2, dtype=np.uint64)
    for mode in (P.MODE_START, P.MODE_GO_ON, P.MODE_BEST):
        P.ik_solve(
            ints, flts, np.eye(4), sel, 1e-5, 1e-5, IkOptions().to_array(), one.copy(), mut,
            rng, 1, mode, out,
        )  # fmt: skip
    K.clip_seed(one, one - 1.0, one + 1.0, one.copy())  # the constraint-set loops'
    _WARM = True


def solve_pose(
    ch: PoseChain,
    target: ArrayLike,
    sel: NDArray[np.int64],
    seed: ArrayLike | None,
    budget: tuple[float, int | None],
    tol_p: float,
    tol_r: float,
    random_seed: int,
    prefer: str,
    options: IkOptions | None,
    t0: float,
) -> IkResult:
    """Joint positions that put ``ch.link`` on ``target`` on the rows ``sel``, within limits.

    The common solve (``prefer='speed'``, converged within :data:`CHUNK` iterations) is one
    compiled call from the seed to the result's errors (:func:`~itasc_ros.core.ik.
    _pose_kernel.ik_solve`), with as little Python around it as can be: once other code has
    run between two solves, each Python step costs several microseconds (cold caches).

    Args:
        ch: the link's chain (its work arrays are used).
        target: (4, 4) target pose in the root frame; checked by the compiled loop, as
            :func:`~itasc_ros.core.ik.inputs.check_pose` does.
        sel: (k,) the selected pose rows (:meth:`PoseChain.selection`).
        seed: (n,) start configuration [rad or m], clipped into the limits; None: mid-range.
        budget: (time budget [s], iterations at most or None).
        tol_p: tolerance of each position row [m].
        tol_r: tolerance of each rotation row [rad].
        random_seed: seed of the restarts' generator.
        prefer: one of :data:`~itasc_ros.core.ik.options.PREFER`.
        options: tuning of the loop (None: the defaults).
        t0: the clock [s] the budget counts from.

    Returns:
        The :class:`IkResult` (see :func:`~itasc_ros.core.ik.solve_ik`).

    Raises:
        ConfigurationError: a seed of the wrong length or with NaN or Inf values, a target
            that is not a finite rigid (4, 4) transform.
        UnreachableTargetError: a selected position beyond the link's reach.
    """
    try:
        ch.target_in[:] = target
    except (TypeError, ValueError):
        check_pose(target)  # raises, saying what is wrong with it
        raise
    try:
        ch.seed_in[:] = ch.mid if seed is None else seed
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"the seed must be {ch.n} numbers: {exc}") from None
    ch.seed_restarts(random_seed)  # a change of seed only
    params = ch.params if options is None else options.to_array()
    out = np.empty(sel.shape[0])
    timeout, max_iters = budget
    deadline = t0 + timeout
    found: tuple[Array, Array, float, float] | None = None
    found_dist = math.inf
    message = "time budget spent"
    mode = P.MODE_START
    while True:
        chunk = CHUNK
        if max_iters is not None:
            done = 0 if mode == P.MODE_START else int(ch.state[K.S_ITERS])
            chunk = min(chunk, max_iters - done)
        code, iters, restarts, p_err, r_err = P.ik_solve(
            ch.ints, ch.flts, ch.target_in, sel, tol_p, tol_r, params, ch.seed_in, ch.mut,
            ch.rng, chunk, mode, out,
        )  # fmt: skip
        mode = P.MODE_GO_ON
        if code == 1:
            if prefer == "speed":
                errors = (p_err, r_err)
                return _result(
                    ch, ch.q.copy(), out, errors, True, "converged", iters, restarts, t0
                )
            d = float(np.linalg.norm(ch.q - ch.q0))
            if d < found_dist:
                found, found_dist = (ch.q.copy(), out.copy(), p_err, r_err), d
            ch.state[K.S_RESTART_NOW] = 1.0  # look for a nearer one
            ch.state[K.S_BEST] = math.inf
        elif code < 0:
            _refuse(ch, code, seed, target)
        if max_iters is not None and iters >= max_iters:
            message = "iteration limit reached"
            break
        if time.perf_counter() >= deadline:
            break
    if found is not None:
        message = "converged (nearest of the solutions found in the budget)"
        errors = found[2:]
        return _result(ch, found[0], found[1], errors, True, message, iters, restarts, t0)
    _, _, _, p_err, r_err = P.ik_solve(
        ch.ints, ch.flts, ch.target_in, sel, tol_p, tol_r, params, ch.seed_in, ch.mut, ch.rng,
        0, P.MODE_BEST, out,
    )  # fmt: skip
    return _result(ch, ch.best_q.copy(), out, (p_err, r_err), False, message, iters, restarts, t0)


def _refuse(ch: PoseChain, code: int, seed: ArrayLike | None, target: ArrayLike) -> None:
    """Raise what a refused start (:data:`~itasc_ros.core.ik._pose_kernel.BAD_SEED`, ...) means.

    Raises:
        ConfigurationError: a bad target or seed.
        UnreachableTargetError: the target beyond the reach.
    """
    if code == P.BAD_TARGET:
        check_pose(target)  # raises, saying what is wrong with it
    if code == P.UNREACHABLE:
        dist = math.hypot(*ch.target_in[:3, 3].tolist())
        raise UnreachableTargetError(
            f"the target is {dist:.4g} m from the root; {ch.link!r} "
            f"reaches {ch.reach:.4g} m at most"
        )
    raise ConfigurationError(f"the seed has NaN or Inf values: {ch.seed_in.tolist()}")


def _result(
    ch: PoseChain,
    q: Array,
    out: Array,
    norms: tuple[float, float],
    success: bool,
    message: str,
    iterations: int,
    restarts: int,
    t0: float,
) -> IkResult:
    """The :class:`IkResult` of ``q`` (n,): errors ``out`` (k,) and ``norms`` [m, rad]."""
    return IkResult(
        q=q,
        success=success,
        errors=out,
        position_error=norms[0],
        rotation_error=norms[1],
        iterations=iterations,
        restarts=restarts,
        time=time.perf_counter() - t0,
        joint_names=list(ch.joint_names),
        message=message,
    )


__all__ = ["CHUNK", "solve_pose", "warm_up"]
