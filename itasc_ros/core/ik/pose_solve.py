"""One link onto one pose: the Newton loop run by the compiled kernel, chunk by chunk.

The kernel (:func:`~itasc_ros.core.ik._ik_kernels.ik_solve`) checks the target, clips the
seed, runs up to :data:`CHUNK` iterations per call -- FK, Jacobian, damped step, limits,
stall test, restarts --, moves a solution's joints by whole turns toward the seed and writes
its errors; the loop here looks at the clock and the iteration budget between calls and keeps
the solutions (``prefer='distance'``).
"""

from __future__ import annotations

import math
import time

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigurationError, UnreachableTargetError
from . import _ik_kernels as K
from .inputs import check_pose
from .options import IkOptions
from .pose_chain import PoseChain
from .result import IkResult

Array = NDArray[np.float64]

#: Iterations per compiled call between two looks at the clock.
CHUNK = 24

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
    work = np.zeros(K.work_size(1, 1))
    sel = np.arange(3, dtype=np.int64)
    out = np.zeros(sel.shape[0] + 2)
    for mode in (K.MODE_START, K.MODE_GO_ON, K.MODE_BEST):
        K.ik_solve(
            *chain, one - 1.0, one + 1.0, one - 1.0, one + 1.0, np.zeros(0, dtype=np.int64),
            np.eye(4), sel, 1e-5, 1e-5, IkOptions().to_array(), one.copy(), one.copy(),
            one.copy(), one.copy(), np.zeros(K.S_SIZE), np.zeros(1, dtype=np.uint64),
            np.zeros(1, dtype=np.uint64), np.zeros(6), 1, mode, work, out,
        )  # fmt: skip
    K.clip_seed(one, one - 1.0, one + 1.0, one.copy())  # the constraint-set loops'
    _WARM = True


def solve_pose(
    ch: PoseChain,
    target: Array,
    sel: NDArray[np.int64],
    seed: Array,
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
    _ik_kernels.ik_solve`): Python code around a compiled loop costs more than the loop itself
    once other code has run between two solves (cold caches).

    Args:
        ch: the link's chain (its work arrays are used).
        target: (4, 4) float64 C-contiguous target pose in the root frame; checked here (a
            finite rigid transform), as :func:`~itasc_ros.core.ik.inputs.check_pose` does.
        sel: (k,) the selected pose rows (:meth:`PoseChain.selection`).
        seed: (n,) start configuration [rad or m], clipped into the limits.
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
        ConfigurationError: a seed with NaN or Inf values, a target that is not a finite
            rigid transform.
        UnreachableTargetError: a selected position beyond the link's reach.
    """
    dist = math.hypot(float(target[0, 3]), float(target[1, 3]), float(target[2, 3]))
    if sel[0] < 3 and dist > ch.reach + 1e-9:
        check_pose(target)  # a bad pose says so first
        raise UnreachableTargetError(
            f"the target is {dist:.4g} m from the root; {ch.link!r} reaches "
            f"{ch.reach:.4g} m at most"
        )
    if not (seed.flags.c_contiguous and seed.flags.writeable):  # the compiled signature's
        seed = np.array(seed)
    ch.seed_restarts(random_seed)
    params = ch.params if options is None else options.to_array()
    out = np.empty(sel.shape[0] + 2)
    timeout, max_iters = budget
    deadline = t0 + timeout
    box, state = ch.box, ch.state
    found: tuple[Array, Array] | None = None
    found_dist = math.inf
    clock = time.perf_counter
    message = "time budget spent"
    mode = K.MODE_START
    while True:
        chunk = CHUNK
        if max_iters is not None:
            done = 0 if mode == K.MODE_START else int(state[K.S_ITERS])
            chunk = min(chunk, max_iters - done)
        code = K.ik_solve(
            *ch.arrays, box.lo, box.hi, box.samp_lo, box.samp_hi, box.turn_cols, target, sel,
            float(tol_p), float(tol_r), params, seed, ch.q0, ch.q, ch.best_q, state, ch.rng,
            ch.rng0, ch.tol, chunk, mode, ch.work, out,
        )  # fmt: skip
        mode = K.MODE_GO_ON
        if code == 1:
            if prefer == "speed":
                return _result(ch, ch.q.copy(), out, True, "converged", t0)
            d = float(np.linalg.norm(ch.q - ch.q0))
            if d < found_dist:
                found, found_dist = (ch.q.copy(), out.copy()), d
            state[K.S_RESTART_NOW] = 1.0  # look for a nearer one
            state[K.S_BEST] = math.inf
        elif code < 0:
            _refuse(code, seed, target)
        if max_iters is not None and state[K.S_ITERS] >= max_iters:
            message = "iteration limit reached"
            break
        if clock() >= deadline:
            break
    if found is not None:
        return _result(ch, found[0], found[1], True,
                       "converged (nearest of the solutions found in the budget)", t0)  # fmt: skip
    K.ik_solve(
        *ch.arrays, box.lo, box.hi, box.samp_lo, box.samp_hi, box.turn_cols, target, sel,
        float(tol_p), float(tol_r), params, seed, ch.q0, ch.q, ch.best_q, state, ch.rng,
        ch.rng0, ch.tol, 0, K.MODE_BEST, ch.work, out,
    )  # fmt: skip
    return _result(ch, ch.best_q.copy(), out, False, message, t0)


def _refuse(code: int, seed: Array, target: Array) -> None:
    """Raise what a refused start (:data:`~itasc_ros.core.ik._ik_kernels.BAD_SEED`, ...) means.

    Raises:
        ConfigurationError: always.
    """
    if code == K.BAD_TARGET:
        check_pose(target)  # raises, saying what is wrong with it
    raise ConfigurationError(f"the seed has NaN or Inf values: {seed.tolist()}")


def _result(
    ch: PoseChain, q: Array, out: Array, success: bool, message: str, t0: float
) -> IkResult:
    """The :class:`IkResult` of ``q`` (n,) whose errors ``out`` (k + 2,) the kernel wrote."""
    k = out.shape[0] - 2
    state = ch.state
    return IkResult(
        q=q,
        success=success,
        errors=out[:k],
        position_error=float(out[k]),
        rotation_error=float(out[k + 1]),
        iterations=int(state[K.S_ITERS]),
        restarts=int(state[K.S_RESTARTS]),
        time=time.perf_counter() - t0,
        joint_names=list(ch.joint_names),
        message=message,
    )


__all__ = ["CHUNK", "solve_pose", "warm_up"]
