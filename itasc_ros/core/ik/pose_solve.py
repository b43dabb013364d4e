"""One link onto one pose: the Newton loop run by the compiled kernel, chunk by chunk.

The kernel (:func:`~itasc_ros.core.ik._ik_kernels.ik_iterate`) runs up to :data:`CHUNK`
iterations per call -- FK, Jacobian, damped step, limits, stall test, restarts -- and the
loop here looks at the clock and the iteration budget between calls, keeps the solutions and
moves joints by whole turns toward the seed.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numpy.typing import NDArray

from ..errors import UnreachableTargetError
from ..kinematics._kernels import is_rigid_transform
from . import _ik_kernels as K
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
    target = np.eye(4)
    is_rigid_transform(target, 1e-6)
    K.clip_seed(one, one - 1.0, one + 1.0, one.copy())
    K.errors_at(one, *chain, target, work)
    state = np.zeros(K.S_SIZE)
    K.ik_iterate(
        *chain,
        one - 1.0,
        one + 1.0,
        one - 1.0,
        one + 1.0,
        target,
        np.arange(3, dtype=np.int64),
        np.full(6, 1e-5),
        IkOptions().to_array(),
        one.copy(),
        one.copy(),
        state,
        np.zeros(1, dtype=np.uint64),
        1,
        work,
    )
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

    Args:
        ch: the link's chain (its work arrays are used).
        target: (4, 4) checked target pose in the root frame.
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
        ConfigurationError: a seed with NaN or Inf values.
        UnreachableTargetError: a selected position beyond the link's reach.
    """
    q0 = ch.box.clip_seed(seed, ch.q0)
    dist = math.hypot(float(target[0, 3]), float(target[1, 3]), float(target[2, 3]))
    if sel[0] < 3 and dist > ch.reach + 1e-9:
        raise UnreachableTargetError(
            f"the target is {dist:.4g} m from the root; {ch.link!r} reaches "
            f"{ch.reach:.4g} m at most"
        )
    _start(ch, q0, tol_p, tol_r, random_seed)
    params = ch.params if options is None else options.to_array()
    found, message = _iterate(ch, target, sel, q0, budget, params, prefer, t0)
    return _result(ch, target, sel, found, message, prefer, t0)


def _start(ch: PoseChain, q0: Array, tol_p: float, tol_r: float, random_seed: int) -> None:
    """Reset the chain's per-solve arrays for a solve from ``q0``."""
    tol = ch.tol
    tol[:3] = tol_p
    tol[3:] = tol_r
    q, best_q, state = ch.q, ch.best_q, ch.state
    q[:] = q0
    best_q[:] = q0
    state[:] = 0.0
    state[K.S_BEST] = math.inf
    state[K.S_REF] = math.inf
    ch.rng[0] = np.uint64(int(random_seed) & 0xFFFFFFFFFFFFFFFF)


def _iterate(
    ch: PoseChain,
    target: Array,
    sel: NDArray[np.int64],
    q0: Array,
    budget: tuple[float, int | None],
    params: Array,
    prefer: str,
    t0: float,
) -> tuple[Array | None, str]:
    """Run the compiled loop until a solution (``prefer='speed'``) or the budget's end.

    Returns:
        (the solution kept (n,) or None, why the loop stopped).
    """
    timeout, max_iters = budget
    deadline = t0 + timeout
    box, q, best_q, state = ch.box, ch.q, ch.best_q, ch.state
    found: Array | None = None
    found_dist = math.inf
    clock = time.perf_counter
    message = "time budget spent"
    while True:
        chunk = CHUNK
        if max_iters is not None:
            chunk = min(chunk, max_iters - int(state[K.S_ITERS]))
        if K.ik_iterate(
            *ch.arrays,
            box.lo,
            box.hi,
            box.samp_lo,
            box.samp_hi,
            target,
            sel,
            ch.tol,
            params,
            q,
            best_q,
            state,
            ch.rng,
            chunk,
            ch.work,
        ):
            if box.turns:
                box.nearest_turns(q, q0)
            if prefer == "speed":
                return q.copy(), "converged"
            d = float(np.linalg.norm(q - q0))
            if d < found_dist:
                found, found_dist = q.copy(), d
            state[K.S_RESTART_NOW] = 1.0  # look for a nearer one
            state[K.S_BEST] = math.inf
        if max_iters is not None and state[K.S_ITERS] >= max_iters:
            return found, "iteration limit reached"
        if clock() >= deadline:
            return found, message


def _result(
    ch: PoseChain,
    target: Array,
    sel: NDArray[np.int64],
    found: Array | None,
    message: str,
    prefer: str,
    t0: float,
) -> IkResult:
    """The :class:`IkResult` of a solve that kept ``found`` (or none: the best found)."""
    if found is not None:
        q_out = found
        if message != "converged":
            message = "converged (nearest of the solutions found in the budget)"
    else:
        q_out = ch.best_q.copy()
    if found is None or prefer != "speed" or ch.box.turns:
        K.errors_at(q_out, *ch.arrays, target, ch.work)
    e = ch.work[45:51]
    errors = e[sel]
    pos = errors[: int(np.count_nonzero(sel < 3))]
    rot = errors[pos.shape[0] :]
    state = ch.state
    return IkResult(
        q=q_out,
        success=found is not None,
        errors=errors,
        position_error=math.sqrt(float(pos @ pos)),
        rotation_error=math.sqrt(float(rot @ rot)),
        iterations=int(state[K.S_ITERS]),
        restarts=int(state[K.S_RESTARTS]),
        time=time.perf_counter() - t0,
        joint_names=list(ch.joint_names),
        message=message,
    )


__all__ = ["CHUNK", "solve_pose", "warm_up"]
