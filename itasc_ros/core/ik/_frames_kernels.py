"""Compiled rows of a whole-body IK problem: links on full poses, centre-of-mass bands (numba).

Internal: used by :class:`~itasc_ros.core.ik.frames_problem.FramesProblem`. One call of
:func:`frame_rows` writes, after the tree's forward kinematics, every row of the problem and
its error at once; :func:`frames_newton` runs the damped Newton iterations of one attempt on
them (forward kinematics, rows, convergence and stall tests, the step kept in the limits)
until it meets the tolerances, stalls, or has run its iterations; nothing is allocated.
"""

from __future__ import annotations

import math

from numba import njit

from ..kinematics._kernels import (
    center_of_mass,
    forward_selected,
    jacobian_selected,
    rot_log,
    select_columns,
)
from ._ik_kernels import (
    BOUNDED_ROUNDS,
    P_ACTIVE_SET,
    P_LAMBDA_MIN,
    P_LAMBDA_SCALE,
    P_MAX_STEP,
    P_RESTART_ITERS,
    P_STALL_RATIO,
    P_STALL_WINDOW,
    S_BEST,
    S_ITERS,
    S_LOCAL,
    S_NORM,
    S_REF,
    bounded_step,
)

#: :func:`frames_newton`'s outcomes.
MET, STALLED, RAN_OUT = 1, 2, 0


@njit(cache=True, nogil=True)
def frame_rows(
    ints,
    floats,
    poses,
    jfull,
    sel,
    links,
    targets,
    weights,
    com_sub,
    com_c,
    com_jfull,
    com_jsel,
    com_axes,
    edge_lo,
    edge_hi,
    com_weight,
    rw,
    a,
    ew,
    e,
):
    """Write the rows ``a`` (m, n), weighted errors ``ew`` (m,) and errors ``e`` (m,).

    Args:
        ints: the tree's model, its int buffer (``KinematicTree.kernel_arrays``, as the next
            four).
        floats: its float buffer (the links' inertials included).
        poses: (n_links, 4, 4) the link poses at the configuration (``KinematicTree.compute``).
        jfull: (6, n_full) work array.
        sel: (n,) the active joints' columns.
        links: (k,) int64 the links placed on a pose.
        targets: (k, 4, 4) their target poses in the root frame.
        weights: (k,) their weights (the rows are scaled by the square root).
        com_sub: (n_links, 4) work array.
        com_c: (3,) work array: the centre of mass [m].
        com_jfull: (3, n_full) work array.
        com_jsel: (3, n) work array.
        com_axes: (c,) int64 the centre of mass's root-frame axes with a row (0 x, 1 y, 2 z).
        edge_lo: (c,) where each such row's error starts, below [m]: the error is how far
            the centre of mass is outside ``[edge_lo, edge_hi]`` (a target: both equal).
        edge_hi: (c,) the same, above [m].
        com_weight: (1,) the weight of the centre of mass's rows.
        rw: (3, 3) work array.
        a: (m, n) output: the rows, scaled by the square roots of the weights.
        ew: (m,) output: the weighted errors.
        e: (m,) output: the errors [m or rad].

    Each link has six rows: the Jacobian at its origin and the pose error in the root frame
    (position ``p_t - p``; rotation ``log(R_t R^T)``). A centre-of-mass row whose coordinate
    is inside its edges has a zero error and a zero row.
    """
    r = 0
    for k in range(links.shape[0]):
        link = links[k]
        pose = poses[link]
        tgt = targets[k]
        jacobian_selected(poses, link, ints, floats, pose[:3, 3], jfull, sel, a[r : r + 6])
        for i in range(3):
            e[r + i] = tgt[i, 3] - pose[i, 3]
            for j in range(3):
                rw[i, j] = tgt[i, 0] * pose[j, 0] + tgt[i, 1] * pose[j, 1] + tgt[i, 2] * pose[j, 2]
        rot_log(rw, e[r + 3 : r + 6])
        w = math.sqrt(weights[k])
        for i in range(r, r + 6):
            ew[i] = w * e[i]
            for j in range(a.shape[1]):
                a[i, j] *= w
        r += 6
    if com_axes.shape[0] == 0:
        return
    center_of_mass(poses, ints, floats, com_sub, com_c, com_jfull)
    select_columns(com_jfull, sel, com_jsel)
    w = math.sqrt(com_weight[0])
    for i in range(com_axes.shape[0]):
        ax = com_axes[i]
        c = com_c[ax]
        d = min(max(c, edge_lo[i]), edge_hi[i]) - c
        e[r] = d
        ew[r] = w * d
        for j in range(a.shape[1]):
            a[r, j] = w * com_jsel[ax, j] if d != 0.0 else 0.0
        r += 1


@njit(cache=True, nogil=True)
def frames_newton(q, best_q, lo, hi, tols, params, state, max_iters, fk, rows, steps):
    """Up to ``max_iters`` damped Newton iterations of one attempt from ``q`` (in place).

    Args:
        q: (n,) the iterate [rad or m]; the solution when :data:`MET` is returned.
        best_q: (n,) the iterate with the smallest error norm so far (``state[S_BEST]``).
        lo: (n,) lower joint limits [rad or m].
        hi: (n,) upper joint limits [rad or m].
        tols: (m,) each row's tolerance, in the rows' order [m or rad].
        params: the loop's tuning (``_ik_kernels.P_*``).
        state: the loop's state (``_ik_kernels.S_*``; ``S_LOCAL`` 0 at an attempt's start).
        max_iters: iterations to run at most in this call.
        fk: ``(sel, bound, q_full, ints, floats, poses)``, :func:`forward_selected`'s
            arguments after ``q``.
        rows: :func:`frame_rows`'s arguments.
        steps: ``(mm (m, m), y (m,), dq (n,), locked (n,))``: :func:`bounded_step`'s work.

    Returns:
        :data:`MET`, :data:`STALLED` (the attempt should restart) or :data:`RAN_OUT`.
    """
    sel, bound, q_full, ints, floats, poses = fk
    mm, y, dq, locked = steps
    a, ew, e = rows[17], rows[18], rows[19]
    window = max(int(params[P_STALL_WINDOW]), 1)
    rounds = BOUNDED_ROUNDS if params[P_ACTIVE_SET] != 0.0 else 0
    for _ in range(max_iters):
        if not forward_selected(q, sel, bound, q_full, ints, floats, poses):
            return STALLED
        frame_rows(*rows)
        norm2 = 0.0
        met = True
        for i in range(e.shape[0]):
            norm2 += e[i] * e[i]
            if abs(e[i]) > tols[i]:
                met = False
        norm = math.sqrt(norm2)
        state[S_NORM] = norm
        if norm < state[S_BEST]:
            state[S_BEST] = norm
            best_q[:] = q
        if met:
            return MET
        local = state[S_LOCAL]
        if local % window == 0:
            if local > 0 and not norm <= params[P_STALL_RATIO] * state[S_REF]:
                return STALLED
            state[S_REF] = norm
        if local >= params[P_RESTART_ITERS]:
            return STALLED
        lam = params[P_LAMBDA_MIN] + params[P_LAMBDA_SCALE] * 0.5 * norm2
        if not bounded_step(a, ew, lam, q, lo, hi, params[P_MAX_STEP], rounds, mm, y, dq, locked):
            return STALLED
        state[S_LOCAL] = local + 1
        state[S_ITERS] += 1
    return RAN_OUT
