"""Weighted, damped pseudo-inverse solvers with joint limits: pure linear algebra.

Solves ``q' = A# b`` for a stacked task matrix ``A`` (m, n) and right-hand side ``b`` (m,):

* weights: ``A_w = Wy^1/2 A Wq^1/2``, ``b_w = Wy^1/2 b``, ``q' = Wq^1/2 A_w# b_w``;
* damping (``dls``): ``A_w# = V diag(s_i / (s_i^2 + lambda_i^2)) U^T`` with
  ``lambda_i^2 = (1 - (s_i / epsilon)^2) * damping_max^2`` when ``s_i < epsilon``, else 0
  (Maciejewski / Blender iTaSC WDLS's damping law, applied per singular direction): no
  velocity spike at or near a singularity, only the near-singular directions damped, and a
  continuous solution when a row's weight rises from 0;
* ``sdls``: selectively damped least squares (Buss & Kim 2005), per singular direction;
* hard joint bounds ``lo <= q' <= hi``, ``hi = min(vmax, max(0, (upper - q) / dt))`` (lo
  alike: the velocity limit and the position limit of the next step), per priority level by
  saturation in the null space (Flacco, De Luca, Khatib, 2012 / 2015): a joint that the
  level's increment would take out of its box is saturated at its bound and the level solved
  again with the others; the level's increment is scaled by the largest s in [0, 1] that
  stays inside, its direction kept. It stops saturating (keeping the best s so far) when the
  reduced task loses rank or would need more damping than the full one, whose damped
  solution would bend the direction. Lower levels start from the levels above and act
  through their projector, so they do not change those levels' task velocity;
* strict priorities (:func:`solve_prioritized`): rows grouped in levels, highest first. Level
  1 is solved as above; each lower level k is solved, damped, for what is left of its task in
  the null space of the levels above: ``x += P (A_k P)# (b_k - A_k x)``, with the projector
  ``P = I - V diag(f(s)) V^T`` from the SVD of the stacked weighted rows of levels 1..k-1 and
  ``f(s) = s^2 / (s^2 + lambda(s)^2)``, ``lambda(s)^2 = (1 - (s / epsilon)^2) damping_max^2``
  below ``epsilon`` (else f = 1): an exact null-space projector away from singularities that
  lets a near-singular direction of a higher level go to the lower ones smoothly. A level
  whose rows only resolve redundancy (a posture) acts in the exact null space instead
  (``lambda`` 0): it never changes the task velocity of a level above, near a singularity
  neither. Within a lower level each singular direction is damped by its own ``lambda(s)``.
  When no bound binds, one level is the plain weighted damped solve.
* undamped (``damping_max`` 0, or a direction at or above ``epsilon``): a singular value at or
  below :data:`~itasc_ros.core.solve.damped_inverse.RCOND` (1e-12) times the largest is
  rounding noise (an exact singularity), and with ``damping_max`` 0 one below ``epsilon`` and at
  or below :data:`~itasc_ros.core.solve.damped_inverse.UNDAMPED_RCOND` (1e-9) times the largest
  is within rounding of one: such a direction is neither inverted nor projected out, as a
  truncated pseudo-inverse does. Inverting it would give a command of full speed whose
  direction is that of the rounding (the order in which the joints are listed decided it).

The kernel runs compiled (numba) on preallocated work arrays; a level that saturates joints
makes its small hold and reduced arrays (as its SVDs do). :func:`solve_prioritized` takes
every array as an argument and makes the box from the limits it is given; a scene's tick runs
the same solve through :func:`~itasc_ros.core.solve.workspace.scene_solve`, on its packed
workspace and on the box ``[box_lo, box_hi]`` its limits made (:func:`_scaled_box`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..kinematics._kernels import view2
from .damped_inverse import RCOND, UNDAMPED_RCOND, _projector, _solve_once
from .saturation import BOUND_TOL, STILL_TOL, _scale_bounds, _sns_level
from .small_svd import thin_svd
from .solvers import solver_code

Array = NDArray[np.float64]

# Indices into the info array written by solve_limited.
INFO_SIGMA_MIN = 0
INFO_DAMPING = 1
INFO_SCALE = 2
INFO_ITERATIONS = 3
INFO_FINITE = 4
INFO_SIZE = 5


@njit(cache=True, nogil=True)
def _residual(aw, bw, r0, r1, x, at, rk, ineq):
    """Level rows r0:r1 that are not zero (nor inequalities) into at, what is left into rk."""
    n = aw.shape[1]
    mk = 0
    for r in range(r0, r1):
        if ineq[r]:
            continue
        nonzero = False
        for j in range(n):
            if aw[r, j] != 0.0:
                nonzero = True
                break
        if not nonzero:
            continue
        acc = bw[r]
        for j in range(n):
            acc -= aw[r, j] * x[j]
            at[mk, j] = aw[r, j]
        rk[mk] = acc
        mk += 1
    return mk


@njit(cache=True, nogil=True)
def _fade_soft(bw, r1, soft, smin, eps):  # pragma: no cover - compiled
    """Scale the ``soft`` rows of ``bw`` from row ``r1`` on by the first level's conditioning.

    The share kept is ``smin / eps - 1`` within [0, 1]: all of it while the first level's
    smallest singular value ``smin`` is at least 2 ``eps``, none from ``eps`` down (where
    damping starts): in a damped null space a term that only resolves redundancy (a posture)
    would pull the tasks above it off their targets.
    """
    if eps <= 0.0:
        return
    f = min(max(smin / eps - 1.0, 0.0), 1.0)
    if f < 1.0:
        for r in range(r1, bw.shape[0]):
            if soft[r]:
                bw[r] *= f


@njit(cache=True, nogil=True)
def _redundant_level(soft, r0, r1):  # pragma: no cover - compiled
    """True when rows ``r0:r1`` (a level) are all ``soft``: terms that only resolve redundancy.

    Such a level acts in the exact null space of the levels above it (a projector without
    damping): it never moves a task above it. Through the damped projector a near-singular
    direction of a task above is partly the lower level's, and a posture there, faded to ask
    for no motion (:func:`_fade_soft`), would hold the task still along that direction: the
    hand stopped millimetres off its target, followed at 0 %.
    """
    if r1 <= r0:
        return False
    for r in range(r0, r1):
        if not soft[r]:
            return False
    return True


@njit(cache=True, nogil=True)
def _solve_levels(
    aw, bw, levels, nlev, lo, hi, method, lam, x, locked, proj, at, rk, ineq, side, soft, memory
):
    """Prioritised SNS solve of aw x = bw into x.

    Returns (level 1's scale, most iterations of a level, sigma_min, lambda).

    x starts at the box's point nearest zero (zero unless the box excludes it: the motion
    limits decelerating a joint). Level k acts along the projector of the levels above
    (``proj``), saturating within its level. A last level ``q' = 0`` in the exact null space
    of them all then takes out the motion no level asks for, as far as the box allows
    (:func:`_least_motion`): each tick's solution is the least motion that meets the levels
    inside the box, and spare motion decays at the deceleration bound instead of lasting.
    Rows that are zero (weight 0) are left out; sigma_min and lambda are those of the first
    level with a non-zero row. ``locked`` (out): joints some level held at a bound.
    ``memory``: the first level's SVD's, kept from one solve to the next
    (:func:`~.small_svd.thin_svd_from`; empty: none).
    The inequality rows (``ineq``, non-zero) are no level's task: every level keeps
    ``aw[r] x >= bw[r]`` as it keeps the joints' box (they are taken out of ``aw``).
    The rows below the first level that are ``soft`` (a term that resolves redundancy) fade
    out as that level nears a singularity (:func:`_fade_soft`).
    """
    n = aw.shape[1]
    p = 0
    for r in range(aw.shape[0]):
        if ineq[r] and np.any(aw[r] != 0.0):
            p += 1
    cw = np.empty((p, n))
    cl = np.empty(p)
    i = 0
    for r in range(aw.shape[0]):
        if ineq[r]:
            if np.any(aw[r] != 0.0):
                cw[i] = aw[r]
                cl[i] = bw[r]
                i += 1
            aw[r] = 0.0  # not in any level's projector
    moving = False
    for j in range(n):  # the box's point nearest zero: what no task asks for
        x[j] = min(max(0.0, lo[j]), hi[j])
        moving = moving or x[j] != 0.0
    locked[:] = False
    held = np.zeros(n, dtype=np.bool_)
    scale = 1.0
    iters = 1
    smin = 0.0
    lm = 0.0
    first = True
    sv1 = np.zeros(0)  # one level: its SVD, whose null space the least motion acts in
    # a strided (0, n) view, the layout of the SVD's vt: one variant of _least_motion, not two
    # (numba's inference compiles the call for each layout it meets on the way)
    vt1 = view2(sv1, 0, 0, n)
    for lev in range(nlev):
        r1 = levels[lev + 1]
        mk = _residual(aw, bw, levels[lev], r1, x, at, rk, ineq)
        projected = False
        if mk > 0 or (lev == 0 and p > 0):
            sk, it, s0, l0, sv, vt = _sns_level(
                at[:mk],
                rk[:mk],
                proj,
                lev == 0,
                lo,
                hi,
                method,
                lam,
                x,
                held,
                cw,
                cl,
                side,
                memory if lev == 0 else memory[:0],
            )
            if nlev == 1:
                sv1, vt1 = sv, vt
            for j in range(n):
                locked[j] = locked[j] or held[j]
            iters = max(iters, it)
            if lev == 0:
                scale = sk
            if first:
                smin, lm = s0, l0
                first = False
                _fade_soft(bw, r1, soft, s0, lam[1])
            if lev == 0 and method == 0 and lev + 1 < nlev:
                plam = 0.0 if _redundant_level(soft, r1, levels[lev + 2]) else lam[0]
                _projector(sv, vt, plam, lam[1], proj)  # level 1's SVD gives it
                projected = True
        if lev + 1 < nlev and r1 > 0 and not projected:
            # Null space of levels 0..lev: P = I - V diag(f) V^T of their stacked rows.
            _, sv, vt = thin_svd(aw[:r1])
            plam = 0.0 if _redundant_level(soft, r1, levels[lev + 2]) else lam[0]
            _projector(sv, vt, plam, lam[1], proj)
    if moving:
        _least_motion(aw, levels[nlev], lo, hi, lam, x, held, proj, cw, cl, side, sv1, vt1)
    return scale, iters, smin, lm


@njit(cache=True, nogil=True)
def _least_motion(aw, rows, lo, hi, lam, x, held, proj, cw, cl, side, sv1, vt1):
    """The levels' solution x with its motion in their common null space toward zero, in the box.

    The levels start from the box's point nearest zero, which is not zero when the box
    excludes it (a joint moving faster than one tick of its acceleration): each level's
    increment keeps that point's share in its null space, a share of the last command that
    no task asks for, tick after tick. A last level ``q' = 0`` in the exact null space of
    every level (no damping: the levels' task velocities are unchanged) takes it out as far
    as the box and the inequality rows allow (saturation in the null space, as a level).
    Nothing is done when x is not inside them (no level found a motion that is).
    ``sv1``, ``vt1``: the SVD of the one level's rows (its non-zero rows of ``aw[:rows]``,
    the same null space), or empty: the rows' SVD is taken here.
    """
    n = x.shape[0]
    # a level leaves a joint or row whose increment is still (STILL_TOL) up to that far out
    for j in range(n):
        if x[j] < lo[j] - STILL_TOL or x[j] > hi[j] + STILL_TOL:
            return
    for i in range(cw.shape[0]):
        if cw[i] @ x < cl[i] - STILL_TOL:
            return
    if sv1.shape[0] > 0:
        _projector(sv1, vt1, 0.0, lam[1], proj)  # lambda 0: the exact null space
    elif rows > 0:
        _, sv, vt = thin_svd(aw[:rows])
        _projector(sv, vt, 0.0, lam[1], proj)
    else:
        proj[:] = np.eye(n)
    # The level's first step is -P x (P is a projector: its own pseudo-inverse, no damping);
    # taken whole when it stays inside the box and the rows, else saturated as a level.
    a = np.empty(n)
    for i in range(n):
        acc = 0.0
        for j in range(n):
            acc -= proj[i, j] * x[j]
        a[i] = acc
    sat = np.zeros(n + cw.shape[0], dtype=np.bool_)
    s_up, s_down, _ = _scale_bounds(a, x, lo, hi, sat, cw, cl)
    if s_up >= 1.0 and s_down <= 1.0:
        for j in range(n):
            x[j] += a[j]
            held[j] = False
        return
    # typed, not literal (np.bool_, np.int64): numba would compile a variant of the level's
    # whole call tree for the constants False and 0
    top, method = np.bool_(False), np.int64(0)
    _sns_level(np.eye(n), -x, proj, top, lo, hi, method, lam, x, held, cw, cl, side, x[:0])


@njit(cache=True, nogil=True)
def _weigh_rows(a, b, wy, wq, ineq, aw, bw):  # pragma: no cover - compiled
    """Weighted rows ``aw = Wy^1/2 A Wq^1/2`` (m, n), ``bw = Wy^1/2 b`` (m,); False if not finite.

    An inequality row (``ineq``) is a bound, not a weighted task: its weight only switches it
    on (> 0) or off.
    """
    m, n = a.shape
    finite = True
    for r in range(m):
        sw = math.sqrt(wy[r]) if not ineq[r] else (1.0 if wy[r] > 0.0 else 0.0)
        for j in range(n):
            aw[r, j] = sw * a[r, j] * math.sqrt(wq[j])
            finite = finite and math.isfinite(aw[r, j])
        bw[r] = sw * b[r]
        finite = finite and math.isfinite(bw[r])
    return finite


@njit(cache=True, nogil=True)
def _limits_box(q, lower, upper, vmax, dt, blo, bhi, wq, side, lo, hi):  # pragma: no cover
    """The box of ``x = Wq^-1/2 q'`` (n,) into ``lo``, ``hi`` from the joints' limits.

    ``hi = min(vmax, max(0, (upper - q) / dt), bhi) / sqrt(wq)``, lo likewise (0 for wq = 0);
    where that is empty (the motion limits' box excludes what the velocity and position
    bounds allow), the motion limits' box ``[blo, bhi]`` alone. ``side`` (n,) in: the motion
    limits' position sides (+1 upper, -1 lower, 0 none); out: also the sides the position
    limit within the step ``dt`` sets.
    """
    for j in range(q.shape[0]):
        sq = math.sqrt(wq[j])
        pu = max(0.0, (upper[j] - q[j]) / dt)
        pd = min(0.0, (lower[j] - q[j]) / dt)
        up = min(vmax[j], pu, bhi[j])
        dn = max(-vmax[j], pd, blo[j])
        if dn > up:
            dn = blo[j]
            up = bhi[j]
        elif side[j] != 0.0:
            pass
        elif up == pu and not math.isinf(upper[j]):
            side[j] = 1.0
        elif dn == pd and not math.isinf(lower[j]):
            side[j] = -1.0
        hi[j] = up / sq if sq > 0.0 else 0.0
        lo[j] = dn / sq if sq > 0.0 else 0.0


@njit(cache=True, nogil=True)
def _scaled_box(blo, bhi, wq, lo, hi):  # pragma: no cover - compiled
    """The box ``[blo, bhi]`` (n,) on q' as the box of ``x = Wq^-1/2 q'`` into ``lo``, ``hi``.

    0 for a joint of weight 0. A NaN side is no bound (inf), as :func:`_limits_box` takes it.
    """
    for j in range(blo.shape[0]):
        sq = math.sqrt(wq[j])
        up = bhi[j] if not math.isnan(bhi[j]) else math.inf
        dn = blo[j] if not math.isnan(blo[j]) else -math.inf
        hi[j] = up / sq if sq > 0.0 else 0.0
        lo[j] = dn / sq if sq > 0.0 else 0.0


@njit(cache=True, nogil=True)
def _solve_weighted(  # pragma: no cover - compiled
    finite,
    wq,
    aw,
    bw,
    lo,
    hi,
    levels,
    nlev,
    method,
    lams,
    qdot,
    locked,
    xw,
    info,
    proj,
    at,
    rk,
    ineq,
    side,
    soft,
    memory,
):
    """The levels' solve of the weighted rows ``aw``, ``bw`` in the box ``[lo, hi]`` of x.

    The part of :func:`solve_prioritized` after the weighing (``finite``: the weighed rows are
    finite); ``lams`` is ``(lam_max, eps, gamma_max)``. Writes ``qdot``, ``locked``, ``info``.
    ``memory``: the first level's SVD's (:func:`~.small_svd.thin_svd_from`; empty: none).
    """
    n = aw.shape[1]
    scale, it, smin, lam = 1.0, 1, 0.0, 0.0
    xw[:] = 0.0
    locked[:] = False
    if finite:
        scale, it, smin, lam = _solve_levels(
            aw, bw, levels, max(nlev, 1), lo, hi, method, lams, xw, locked, proj, at, rk,
            ineq, side, soft, memory,
        )  # fmt: skip
    for j in range(n):
        x = min(max(xw[j], lo[j]), hi[j])
        qdot[j] = math.sqrt(wq[j]) * x
        finite = finite and math.isfinite(qdot[j])
        # a joint a higher level saturated that a lower one moved off its bound is free again
        locked[j] = locked[j] and (x >= hi[j] - BOUND_TOL or x <= lo[j] + BOUND_TOL)
    if not finite:
        qdot[:] = 0.0
    info[0] = smin
    info[1] = lam
    info[2] = scale
    info[3] = it
    info[4] = 1.0 if finite else 0.0


@njit(cache=True, nogil=True)
def solve_prioritized(
    a,
    b,
    wy,
    wq,
    q,
    lower,
    upper,
    vmax,
    dt,
    method,
    lam_max,
    eps,
    gamma_max,
    qdot,
    locked,
    aw,
    bw,
    xw,
    fixed,
    info,
    levels,
    nlev,
    proj,
    at,
    rk,
    zw,
    blo,
    bhi,
    ineq,
    side,
    soft,
):
    """Weighted damped solve with strict priorities and hard joint bounds (SNS).

    Every joint keeps ``lo <= q' <= hi``, ``hi = min(vmax, max(0, (upper - q) / dt))`` (lo
    likewise): its velocity limit and the position limit of the next step. Each level is
    solved by saturation in the null space (Flacco, De Luca, Khatib): when its damped
    increment would leave the box, the joint that bounds it is saturated at its bound and the
    level solved again with the others, and the increment is scaled by the largest s in
    [0, 1] that stays inside (direction kept). A lower level acts in what the levels above
    leave (today's projector), so it never changes their task velocity, and joints it does
    not saturate keep the bounds too. When no bound binds, this is the plain prioritised
    damped solve.

    Args:
        a: (m, n) task matrix, rows grouped by level (highest first).
        b: (m,) right-hand side [task units/s].
        wy: (m,) task weights (>= 0).
        wq: (n,) joint weights (>= 0; 0 freezes a joint).
        q: (n,) joint positions.
        lower: (n,) lower position limits.
        upper: (n,) upper position limits.
        vmax: (n,) velocity limits.
        dt: control period [s].
        method: 0 dls, 1 sdls.
        lam_max: largest damping lambda.
        eps: singular value below which damping starts.
        gamma_max: SDLS joint velocity bound per singular direction [rad/s].
        qdot: (n,) output [rad/s].
        locked: (n,) bool output: joints saturated (held at a velocity or position bound by
            some level and still at it).
        aw: (m, n) work array.
        bw: (m,) work array.
        xw: (n,) work array.
        fixed: (n,) work array (the box's lower side).
        info: (INFO_SIZE,) output: sigma_min, damping (of the first level with a non-zero
            row, zero rows left out), level 1's task scale s (1: not scaled), the most
            saturate-and-solve iterations of a level, finite flag.
        levels: (nlev + 1,) int64: level k is rows ``levels[k]:levels[k + 1]``.
        nlev: number of levels.
        proj: (n, n) work array.
        at: (m, n) work array.
        rk: (m,) work array.
        zw: (n,) work array (the box's upper side).
        blo: (n,) the motion limits' lower bound on q' this tick (-inf: none) [rad/s].
        bhi: (n,) the motion limits' upper bound on q' this tick (inf: none) [rad/s]: a
            box from the last command, its acceleration and jerk limits
            (:func:`~itasc_ros.core.solve.motion_limits.motion_box`); it may exclude zero.
        ineq: (m,) bool: rows that are inequalities ``a[r] q' >= b[r]`` (collision rows; on
            while ``wy[r] > 0``): bounds of every level, as the joints' box, not tasks.
        side: (n,) in/out: +1 where a joint's upper bound ``bhi`` is a position limit's (the
            braking curve before it: :meth:`~itasc_ros.core.solve.motion_limits.MotionLimiter.
            braking_sides`), -1 its lower, 0 neither; the solve adds the sides the position
            limit within ``dt`` sets. A joint held at such a side does not scale its level down:
            the level goes on with the other joints (damped as they need).
        soft: (m,) bool: rows of terms that only resolve redundancy (below the first level):
            they fade out as the first level nears a singularity (:func:`_fade_soft`).
    """
    finite = _weigh_rows(a, b, wy, wq, ineq, aw, bw)
    _limits_box(q, lower, upper, vmax, dt, blo, bhi, wq, side, fixed, zw)
    lams = (lam_max, eps, gamma_max)
    _solve_weighted(
        finite,
        wq,
        aw,
        bw,
        fixed,
        zw,
        levels,
        nlev,
        method,
        lams,
        qdot,
        locked,
        xw,
        info,
        proj,
        at,
        rk,
        ineq,
        side,
        soft,
        xw[:0],  # no memory: each call a solve of its own
    )


@njit(cache=True, nogil=True)
def solve_limited(*args):
    """Weighted damped solve with hard joint bounds (one level).

    ``solve_limited(a, b, wy, wq, q, lower, upper, vmax, dt, method, lam_max, eps, gamma_max,
    qdot, locked, aw, bw, xw, fixed, info)``: the first twenty arguments of
    :func:`solve_prioritized`, whose one level is then all the rows (its other work arrays are
    made here, and no motion-limit box). The control tick calls :func:`solve_prioritized`; this
    is the same solve, bit for bit.
    """
    m, n = args[0].shape
    levels = np.zeros(2, dtype=np.int64)
    levels[1] = m
    work = (
        np.zeros((n, n)),
        np.zeros((m, n)),
        np.zeros(m),
        np.zeros(n),
        np.full(n, -np.inf),
        np.full(n, np.inf),
        np.zeros(m, dtype=np.bool_),
        np.zeros(n),
        np.zeros(m, dtype=np.bool_),
    )
    solve_prioritized(*(args + (levels, 1) + work))  # noqa: RUF005 (numba: one tuple)


def damped_pinv_solve(
    a: Array,
    b: Array,
    damping_max: float = 0.5,
    damping_epsilon: float = 0.1,
    solver: str = "dls",
    gamma_max: float = math.pi,
) -> tuple[Array, float, float]:
    """Convenience: ``x = A# b`` with automatic damping, no weights or limits.

    Returns:
        (x (n,), sigma_min, damping lambda).
    """
    a = np.ascontiguousarray(a, dtype=float)
    out = np.zeros(a.shape[1])
    smin, lam = _solve_once(
        a.copy(),
        np.ascontiguousarray(b, dtype=float),
        solver_code(solver),
        damping_max,
        damping_epsilon,
        gamma_max,
        out,
    )
    return out, float(smin), float(lam)


__all__ = [
    "INFO_DAMPING",
    "INFO_FINITE",
    "INFO_ITERATIONS",
    "INFO_SCALE",
    "INFO_SIGMA_MIN",
    "INFO_SIZE",
    "RCOND",
    "UNDAMPED_RCOND",
    "damped_pinv_solve",
    "solve_limited",
    "solve_prioritized",
]
