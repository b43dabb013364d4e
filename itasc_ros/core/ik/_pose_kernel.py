"""Compiled pose solve of one link: start, iterations and result in one call (numba, cached).

Internal: the public API is :func:`itasc_ros.core.ik.solve_ik`, through
:func:`itasc_ros.core.ik.pose_solve.solve_pose`. The chain and its joint box come packed into
two arrays (:func:`pack_chain`) and the solve's changing arrays into one (:func:`mut_size`), so
that a call passes few arguments: Python around the compiled loop (argument checks, unboxing)
costs more than the loop's iterations once other code has run between two solves. The loop
itself is :func:`~itasc_ros.core.ik._ik_kernels.ik_iterate`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kinematics._kernels import is_rigid_transform
from ._ik_kernels import (
    S_BEST,
    S_ITERS,
    S_REF,
    S_RESTARTS,
    S_SIZE,
    errors_at,
    ik_iterate,
    nearest_turns,
    work_size,
)

# What :func:`ik_solve` does (``mode``).
MODE_START = 0  # start from the seed (checked, clipped), then iterate
MODE_GO_ON = 1  # iterate on from where the last call stopped
MODE_BEST = 2  # no iteration: the errors at the best configuration found (the budget ended)

# What :func:`ik_solve` returns besides 1 (converged) and 0 (iterations ran out).
BAD_SEED = -1  # the seed has NaN or Inf values
BAD_TARGET = -2  # the target is not a finite rigid transform with last row (0, 0, 0, 1)
UNREACHABLE = -3  # a selected position beyond the tip's reach


@njit(cache=True, nogil=True)
def _start(seed, lo, hi, tol_p, tol_r, q0, q, best_q, state, rng, rng0, tol):
    """Reset a solve's arrays for a start from ``seed`` (clipped); False when it is not finite."""
    for i in range(seed.shape[0]):
        v = seed[i]
        if not math.isfinite(v):
            return False
        v = min(max(v, lo[i]), hi[i])
        q0[i] = v
        q[i] = v
        best_q[i] = v
    for i in range(3):
        tol[i] = tol_p
        tol[3 + i] = tol_r
    for i in range(state.shape[0]):
        state[i] = 0.0
    state[S_BEST] = math.inf
    state[S_REF] = math.inf
    rng[0] = rng0[0]
    return True


def pack_chain(
    arrays: tuple[np.ndarray, ...],
    box: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    reach: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The chain and its box as :func:`ik_solve` takes them: ``(ints, flts)``.

    Args:
        arrays: ``(jt, col, org, ax, mult, offs, tip)`` (see the module docstring).
        box: ``(lo, hi, samp_lo, samp_hi, turns)``: (n,) limits and restarts' range [rad or
            m], (t,) int64 joints moved by whole turns.
        reach: the largest distance [m] of the tip from the root.

    Returns:
        ``ints`` int64 ``[k, t, jt, col, turns]``; ``flts`` float64 ``[org, ax, mult, offs,
        tip, lo, hi, samp_lo, samp_hi, reach]``, each flattened.
    """
    jt, col, org, ax, mult, offs, tip = arrays
    lo, hi, samp_lo, samp_hi, turns = box
    ints = np.concatenate([[jt.shape[0], turns.shape[0]], jt, col, turns]).astype(np.int64)
    parts = [org, ax, mult, offs, tip, lo, hi, samp_lo, samp_hi, np.array([reach])]
    flts = np.concatenate([np.ravel(x) for x in parts]).astype(np.float64)
    return ints, flts


def mut_size(n: int, k: int) -> int:
    """Length of the ``mut`` array of :func:`ik_solve` for n columns and k chain joints."""
    return 3 * n + S_SIZE + 6 + work_size(n, k)


@njit(cache=True, nogil=True)
def ik_solve(ints, flts, target, sel, tol_p, tol_r, params, seed, mut, rng, max_iters, mode, out):
    """A pose solve's start, iterations and result in one call (the loop: ``ik_iterate``).

    The chain comes packed (:func:`pack_chain`): ``ints`` (int64) and ``flts`` (float64).
    ``mut`` (:func:`mut_size`) holds, in order, ``q0``, ``q``, ``best_q`` (n,) each, the
    loop's ``state`` (S_SIZE,), ``tol`` (6,) and the work array; ``rng`` (2,) uint64 is the
    generator's state and its state at a start. ``seed`` (n,) float64, ``target`` (4, 4).

    ``mode`` :data:`MODE_START` checks ``target``, clips ``seed`` into ``q0``, resets ``q``,
    ``best_q``, ``state``, ``tol`` (``tol_p`` [m], ``tol_r`` [rad]) and the generator, then
    iterates as :data:`MODE_GO_ON` does: up to ``max_iters`` iterations of
    :func:`~itasc_ros.core.ik._ik_kernels.ik_iterate`. A solution is moved by whole turns of
    the joints ``turns`` toward ``q0``. :data:`MODE_BEST` runs no iteration and takes
    ``best_q``'s errors.

    Returns:
        ``(code, iterations, restarts, position_error, rotation_error)``. ``code`` 1: ``q``
        is a solution; 0: the iterations ran out (:data:`MODE_BEST`: always);
        :data:`BAD_SEED`, :data:`BAD_TARGET` or :data:`UNREACHABLE`: nothing was solved.
        With 1, and always with :data:`MODE_BEST`, ``out`` (m,) holds the selected error
        rows, and the errors are the norms of the position rows [m] and of the rotation rows
        [rad] (0.0 otherwise).
    """
    nk = ints[0]
    nt = ints[1]
    n = seed.shape[0]
    jt = ints[2 : 2 + nk]
    col = ints[2 + nk : 2 + 2 * nk]
    turns = ints[2 + 2 * nk : 2 + 2 * nk + nt]
    org = flts[0 : 12 * nk].reshape((nk, 3, 4))
    o = 12 * nk
    ax = flts[o : o + 3 * nk].reshape((nk, 3))
    o += 3 * nk
    mult = flts[o : o + nk]
    offs = flts[o + nk : o + 2 * nk]
    o += 2 * nk
    tip = flts[o : o + 12].reshape((3, 4))
    o += 12
    lo = flts[o : o + n]
    hi = flts[o + n : o + 2 * n]
    samp_lo = flts[o + 2 * n : o + 3 * n]
    samp_hi = flts[o + 3 * n : o + 4 * n]
    reach = flts[o + 4 * n]
    q0 = mut[0:n]
    q = mut[n : 2 * n]
    best_q = mut[2 * n : 3 * n]
    o = 3 * n
    state = mut[o : o + S_SIZE]
    tol = mut[o + S_SIZE : o + S_SIZE + 6]
    work = mut[o + S_SIZE + 6 :]
    gen = rng[0:1]
    if mode == MODE_BEST:
        errors_at(best_q, jt, col, org, ax, mult, offs, tip, target, work)
        return _finish(0, work[45:51], sel, out, state)
    if mode == MODE_START:
        if not is_rigid_transform(target, 1e-6) or not (
            target[3, 0] == 0.0 and target[3, 1] == 0.0 and target[3, 2] == 0.0
            and target[3, 3] == 1.0
        ):  # fmt: skip
            return BAD_TARGET, 0, 0, 0.0, 0.0
        dist = math.sqrt(target[0, 3] ** 2 + target[1, 3] ** 2 + target[2, 3] ** 2)
        if sel[0] < 3 and dist > reach + 1e-9:
            return UNREACHABLE, 0, 0, 0.0, 0.0
        if not _start(seed, lo, hi, tol_p, tol_r, q0, q, best_q, state, gen, rng[1:2], tol):
            return BAD_SEED, 0, 0, 0.0, 0.0
    done = ik_iterate(
        jt, col, org, ax, mult, offs, tip, lo, hi, samp_lo, samp_hi, target, sel, tol, params,
        q, best_q, state, gen, max_iters, work,
    )  # fmt: skip
    if done == 1:
        if nt > 0:
            nearest_turns(q, q0, turns, lo, hi)
            errors_at(q, jt, col, org, ax, mult, offs, tip, target, work)
        return _finish(1, work[45:51], sel, out, state)
    return 0, int(state[S_ITERS]), int(state[S_RESTARTS]), 0.0, 0.0


@njit(cache=True, nogil=True)
def _finish(code, e, sel, out, state):
    """``ik_solve``'s result: the selected rows of ``e`` (6,) into ``out`` (m,), and the tuple."""
    pos = 0.0
    rot = 0.0
    for r in range(sel.shape[0]):
        v = e[sel[r]]
        out[r] = v
        if sel[r] < 3:
            pos += v * v
        else:
            rot += v * v
    return code, int(state[S_ITERS]), int(state[S_RESTARTS]), math.sqrt(pos), math.sqrt(rot)
