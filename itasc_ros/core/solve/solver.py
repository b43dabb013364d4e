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
  lets a near-singular direction of a higher level go to the lower ones smoothly. Within a
  lower level each singular direction is damped by its own ``lambda(s)``. When no bound
  binds, one level is the plain weighted damped solve.
* undamped (``damping_max`` 0, or a direction at or above ``epsilon``): a singular value at or
  below :data:`~itasc_ros.core.solve.damped_inverse.RCOND` times the largest is rounding noise
  (an exact singularity), and its direction is neither inverted nor projected out, as a
  truncated pseudo-inverse does. Inverting it would give a command of full speed whose
  direction is that of the rounding (the order in which the joints are listed decided it).

The kernel runs compiled (numba) on preallocated work arrays; a level that saturates joints
makes its small hold and reduced arrays (as its SVDs do).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..errors import SolverError
from .damped_inverse import (
    RCOND,
    _apply,
    _projector,
    _rank,
    _solve_once,
)

Array = NDArray[np.float64]

SOLVERS = ("dls", "sdls")
"""Names accepted by :func:`solver_code`."""
#: A saturated joint whose row of the free space has a singular value at or below this cannot
#: be held by the level [-].
HOLD_TOL = 1e-10
#: A level stops saturating (keeping its best scale) when its reduced task's smallest singular
#: value falls below this fraction of the unsaturated one's: the reduced task would need far
#: more damping, which bends its direction [-].
STOP_SIGMA = 1.0
#: An increment this small (in x) does not move a joint toward a bound [rad/s].
BOUND_TOL = 1e-12

# Indices into the info array written by solve_limited.
INFO_SIGMA_MIN = 0
INFO_DAMPING = 1
INFO_SCALE = 2
INFO_ITERATIONS = 3
INFO_FINITE = 4
INFO_SIZE = 5


def solver_code(name: str) -> int:
    """Numeric code of a solver name.

    Raises:
        SolverError: naming the valid solvers.
    """
    try:
        return SOLVERS.index(name)
    except ValueError:
        raise SolverError(f"unknown solver {name!r}; solvers are: {', '.join(SOLVERS)}") from None


@njit(cache=True, nogil=True)
def _times(ak, nmat, ident):
    """The product ``ak @ nmat`` (nmat is the identity when ``ident``).

    Summed term by term in the order the unbounded prioritised solve has always used.
    """
    if ident:
        return ak.copy()
    mk, n = ak.shape
    out = np.empty((mk, n))
    for r in range(mk):
        for j in range(n):
            s_ = 0.0
            for t in range(n):
                s_ += ak[r, t] * nmat[t, j]
            out[r, j] = s_
    return out


@njit(cache=True, nogil=True)
def _scale_bounds(a, bb, lo, hi, sat, cw, cl):
    """Over the free joints and rows, the s range with ``s a + bb`` inside, and its critical one.

    The joints: ``lo <= x <= hi``; the inequality rows: ``cw x >= cl``. Returns (s_up,
    s_down, the joint or row (n + i) to saturate, or -1): the one that bounds s_up, or, when
    no s in [0, 1] is inside (a box that excludes zero, e.g. while decelerating, or a row
    already violated), the one that needs the largest s to come inside.
    """
    n = a.shape[0]
    smax = np.inf
    smin = -np.inf
    jcrit = -1
    jlow = -1
    for j in range(n + cw.shape[0]):
        if sat[j]:
            continue
        if j < n:
            aj, bj, lj, hj = a[j], bb[j], lo[j], hi[j]
        else:
            i = j - n
            aj = 0.0
            bj = 0.0
            for t in range(n):
                aj += cw[i, t] * a[t]
                bj += cw[i, t] * bb[t]
            lj, hj = cl[i], np.inf
        if aj > BOUND_TOL:
            up = (hj - bj) / aj
            dn = (lj - bj) / aj
        elif aj < -BOUND_TOL:
            up = (lj - bj) / aj
            dn = (hj - bj) / aj
        elif bj > hj + BOUND_TOL or bj < lj - BOUND_TOL:
            up = -np.inf  # s cannot fix this one: it must be saturated
            dn = np.inf
        else:
            continue
        if up < smax:
            smax = up
            jcrit = j
        if dn > smin:
            smin = dn
            jlow = j
    if smin > 1.0 and jlow >= 0:
        jcrit = jlow
    return smax, smin, jcrit


@njit(cache=True, nogil=True)
def _held_increment(
    ak, r, xprev, nmat, ident, sat, satval, rank0, smin0, stop, method, lam, a, bb, cw
):
    """The level's increment with the saturated joints and rows held: x = s a + bb.

    ``x = xprev + N z0 + N Z M# (s r - ak N z0)``, ``M = ak N Z``: z0 holds the saturated
    joints at their values (and the saturated inequality rows of ``cw`` at their bounds),
    Z spans what leaves them there. False if the holds cannot all be
    kept; with ``stop`` (a scale > 0 was found), also if the task loses rank or needs damping
    (or more of it) that it did not need with every joint free: the damped solution would
    then leave the task's direction. Without a scale > 0 the level goes on, as a joint lock
    does (else a joint at its position limit would stop the whole level).
    ``lam``: (lam_max, eps, gamma_max).
    """
    n = xprev.shape[0]
    idx = np.flatnonzero(sat)
    ns = idx.shape[0]
    e_rows = np.zeros((ns, n))
    e = np.empty(ns)
    for t in range(ns):
        j = idx[t]
        if j >= n:  # an inequality row held at its bound: cw x = cl
            row = cw[j - n]
            e_rows[t] = row if ident else row @ nmat
            e[t] = satval[j] - row @ xprev
        elif ident:
            e_rows[t, j] = 1.0
            e[t] = satval[j] - xprev[j]
        else:
            e_rows[t] = nmat[j]
            e[t] = satval[j] - xprev[j]
    ue, se, vte = np.linalg.svd(e_rows, full_matrices=True)
    re = 0
    for v in se:
        if v > HOLD_TOL:
            re += 1
    if re < ns or re >= n:
        return False
    z0 = np.ascontiguousarray(vte[:re].T) @ (np.ascontiguousarray(ue[:, :re].T) @ e / se[:re])
    nz = np.ascontiguousarray(vte[re:].T)
    if not ident:
        nz = nmat @ nz
        z0 = nmat @ z0
    if ak.shape[0] == 0:
        a[:] = 0.0
        bb[:] = xprev + z0
        return True
    mz = ak @ nz
    u, s, vt = np.linalg.svd(mz, full_matrices=False)
    sr = s[rank0 - 1] if rank0 > 0 else 1.0
    if stop and (_rank(s) < rank0 or (sr < lam[1] and sr < STOP_SIGMA * smin0)):
        return False
    w = np.empty(nz.shape[1])
    _apply(u, s, vt, mz, r, method, False, lam[0], lam[1], lam[2], w)
    a[:] = nz @ w
    _apply(u, s, vt, mz, ak @ z0, method, False, lam[0], lam[1], lam[2], w)
    bb[:] = xprev + z0 - nz @ w
    return True


@njit(cache=True, nogil=True)
def _keep(x, s, a, bb, sat, satval, held):
    """Set ``x = s a + bb``, the saturated joints exactly at their values; held = sat."""
    for j in range(held.shape[0]):
        x[j] = satval[j] if sat[j] else s * a[j] + bb[j]
        held[j] = sat[j]


@njit(cache=True, nogil=True)
def _saturate(j, a, bb, lo, hi, sat, satval, cl):
    """Saturate joint j (or inequality row j - n) at its bound.

    A joint: the bound it is outside of at s = 1, else the one it runs into.
    """
    sat[j] = True
    n = a.shape[0]
    if j >= n:
        satval[j] = cl[j - n]
        return
    v1 = a[j] + bb[j]
    if v1 > hi[j]:
        satval[j] = hi[j]
    elif v1 < lo[j]:
        satval[j] = lo[j]
    elif a[j] > BOUND_TOL:
        satval[j] = hi[j]
    elif a[j] < -BOUND_TOL:
        satval[j] = lo[j]
    else:
        satval[j] = min(max(bb[j], lo[j]), hi[j])


@njit(cache=True, nogil=True)
def _brake_along(x, lo, hi, cw, cl):
    """When no motion of the level keeps the box and the rows together: brake along a row.

    The box wins (the motion limits), and within it every joint of the most violated row goes
    the way that row asks, as far as its box lets it (the hardest braking toward its bound).
    """
    worst = -1
    gap = BOUND_TOL
    for i in range(cw.shape[0]):
        v = cl[i]
        for t in range(x.shape[0]):
            v -= cw[i, t] * min(max(x[t], lo[t]), hi[t])
        if v > gap:
            gap = v
            worst = i
    for t in range(x.shape[0]):
        if worst >= 0 and cw[worst, t] > BOUND_TOL:
            x[t] = hi[t]
        elif worst >= 0 and cw[worst, t] < -BOUND_TOL:
            x[t] = lo[t]
        else:
            x[t] = min(max(x[t], lo[t]), hi[t])


@njit(cache=True, nogil=True)
def _sns_level(ak, r, nmat, top, lo, hi, method, lam, x, held, cw, cl):
    """One level by saturation in the null space: x (in: the levels above; out: with this one).

    The joints keep ``lo <= x <= hi`` and the inequality rows ``cw x >= cl`` (collision
    rows): a row is saturated (held at its bound) as a joint is.

    The increment ``N M# r`` (``M = ak N``) is taken whole if every joint stays in [lo, hi];
    else the joint that bounds its scale is saturated at its bound and the rest solved again,
    keeping the largest scale s in [0, 1] found (Flacco, De Luca, Khatib 2015, Alg. 1). Stops
    when a hold cannot be kept, the task loses rank, or needs more damping than unsaturated
    (see :func:`_held_increment`). ``top``: the highest level (N is the identity).

    Returns:
        (scale, iterations, sigma_min, lambda, singular values and V^T of M).
    """
    n = x.shape[0]
    xprev = x.copy()
    sat = np.zeros(n + cw.shape[0], dtype=np.bool_)
    satval = np.zeros(n + cw.shape[0])
    held[:] = False
    g = np.zeros(n)
    if ak.shape[0] > 0:
        m0 = _times(ak, nmat, top)
        u, s0, vt0 = np.linalg.svd(m0, full_matrices=False)
        smin, lm = _apply(u, s0, vt0, m0, r, method, top, lam[0], lam[1], lam[2], g)
        rank0 = _rank(s0)
    else:  # no task: only the rows to keep
        s0 = np.zeros(0)
        vt0 = np.zeros((0, n))
        smin, lm = 0.0, 0.0
        rank0 = 0
    a = g.copy() if top else nmat @ g
    bb = xprev.copy()
    if rank0 == 0 and cw.shape[0] == 0:
        _keep(x, 1.0, a, bb, sat, satval, held)
        return 1.0, 1, smin, lm, s0, vt0
    best = 0.0
    found = False
    it = 0
    for it in range(1, n + cw.shape[0] + 2):
        if it > 1 and not _held_increment(
            ak,
            r,
            xprev,
            nmat,
            top,
            sat,
            satval,
            rank0,
            s0[rank0 - 1] if rank0 > 0 else 0.0,
            best > 0.0,
            method,
            lam,
            a,
            bb,
            cw,
        ):
            break
        smax, sdown, jcrit = _scale_bounds(a, bb, lo, hi, sat, cw, cl)
        if smax >= 1.0 and sdown <= 1.0:
            _keep(x, 1.0, a, bb, sat, satval, held)
            return 1.0, it, smin, lm, s0, vt0
        st = min(smax, 1.0)
        if st >= 0.0 and sdown <= st and (st > best or not found):
            best = st
            found = True
            _keep(x, st, a, bb, sat, satval, held)
        if jcrit < 0:
            break
        _saturate(jcrit, a, bb, lo, hi, sat, satval, cl)
    if not found and cw.shape[0] > 0:
        _brake_along(x, lo, hi, cw, cl)
    return best, it, smin, lm, s0, vt0


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
def _solve_levels(aw, bw, levels, nlev, lo, hi, method, lam, x, locked, proj, at, rk, ineq):
    """Prioritised SNS solve of aw x = bw into x.

    Returns (level 1's scale, most iterations of a level, sigma_min, lambda).

    Level k acts along the projector of the levels above (``proj``), saturating within its
    level. Rows that are zero (weight 0) are left out; sigma_min and lambda are those of the
    first level with a non-zero row. ``locked`` (out): joints some level held at a bound.
    The inequality rows (``ineq``, non-zero) are no level's task: every level keeps
    ``aw[r] x >= bw[r]`` as it keeps the joints' box (they are taken out of ``aw``).
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
    x[:] = 0.0
    locked[:] = False
    held = np.zeros(n, dtype=np.bool_)
    scale = 1.0
    iters = 1
    smin = 0.0
    lm = 0.0
    first = True
    for lev in range(nlev):
        r1 = levels[lev + 1]
        mk = _residual(aw, bw, levels[lev], r1, x, at, rk, ineq)
        projected = False
        if mk > 0 or (lev == 0 and p > 0):
            sk, it, s0, l0, sv, vt = _sns_level(
                at[:mk], rk[:mk], proj, lev == 0, lo, hi, method, lam, x, held, cw, cl
            )
            for j in range(n):
                locked[j] = locked[j] or held[j]
            iters = max(iters, it)
            if lev == 0:
                scale = sk
            if first:
                smin, lm = s0, l0
                first = False
            if lev == 0 and method == 0 and lev + 1 < nlev:
                _projector(sv, vt, lam[0], lam[1], proj)  # level 1's SVD gives it
                projected = True
        if lev + 1 < nlev and r1 > 0 and not projected:
            # Null space of levels 0..lev: P = I - V diag(f) V^T of their stacked rows.
            _, sv, vt = np.linalg.svd(aw[:r1], full_matrices=False)
            _projector(sv, vt, lam[0], lam[1], proj)
    return scale, iters, smin, lm


@njit(cache=True, nogil=True)
def _weigh(a, b, wy, wq, q, lower, upper, vmax, dt, blo, bhi, ineq, aw, bw, lo, hi):
    """Weighted rows into aw, bw; the box of x = Wq^-1/2 q' into lo, hi; False if not finite.

    ``hi = min(vmax, max(0, (upper - q) / dt), bhi) / sqrt(wq)``, lo likewise (0 for wq = 0);
    where that is empty (the motion limits' box excludes what the velocity and position
    bounds allow), the motion limits' box ``[blo, bhi]`` alone. An inequality row (``ineq``)
    is a bound, not a weighted task: its weight only switches it on (> 0) or off.
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
    for j in range(n):
        sq = math.sqrt(wq[j])
        up = min(vmax[j], max(0.0, (upper[j] - q[j]) / dt), bhi[j])
        dn = max(-vmax[j], min(0.0, (lower[j] - q[j]) / dt), blo[j])
        if dn > up:
            dn = blo[j]
            up = bhi[j]
        hi[j] = up / sq if sq > 0.0 else 0.0
        lo[j] = dn / sq if sq > 0.0 else 0.0
    return finite


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
    """
    n = a.shape[1]
    finite = _weigh(a, b, wy, wq, q, lower, upper, vmax, dt, blo, bhi, ineq, aw, bw, fixed, zw)
    scale, it, smin, lam = 1.0, 1, 0.0, 0.0
    xw[:] = 0.0
    locked[:] = False
    if finite:
        lams = (lam_max, eps, gamma_max)
        scale, it, smin, lam = _solve_levels(
            aw, bw, levels, max(nlev, 1), fixed, zw, method, lams, xw, locked, proj, at, rk, ineq
        )
    for j in range(n):
        x = min(max(xw[j], fixed[j]), zw[j])
        qdot[j] = math.sqrt(wq[j]) * x
        finite = finite and math.isfinite(qdot[j])
        # a joint a higher level saturated that a lower one moved off its bound is free again
        locked[j] = locked[j] and (x >= zw[j] - BOUND_TOL or x <= fixed[j] + BOUND_TOL)
    if not finite:
        qdot[:] = 0.0
    info[0] = smin
    info[1] = lam
    info[2] = scale
    info[3] = it
    info[4] = 1.0 if finite else 0.0


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
    "SOLVERS",
    "damped_pinv_solve",
    "solve_limited",
    "solve_prioritized",
    "solver_code",
]
