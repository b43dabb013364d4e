"""Saturation in the null space: one priority level solved inside hard bounds (SNS).

Flacco, De Luca, Khatib, "Control of redundant robots under hard joint constraints:
saturation in the null space" (2012 / 2015), Algorithm 1, with inequality rows beside the
joints' box. A level's damped increment ``N M# r`` (``M = A_k N``, ``N`` the projector of the
levels above) is taken whole when every joint stays in its box ``lo <= x <= hi`` and every
inequality row keeps ``cw x >= cl``; else the joint or row that bounds the increment's scale
is *saturated*, held at its bound while the rest is solved again, and the increment is scaled
by the largest ``s`` in [0, 1] found (its direction kept; the first level's increment starts
from the box's point nearest zero). The caller
(:func:`~itasc_ros.core.solve.solver.solve_prioritized`) stacks the levels.

Compiled (numba); the hold and reduced arrays of a level that saturates are made here, as
its SVDs are.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .damped_inverse import _apply, _rank, _scale
from .small_svd import thin_svd, thin_svd_from

#: A saturated joint whose row of the free space has a singular value at or below this cannot
#: be held by the level [-].
HOLD_TOL = 1e-10
#: A level stops saturating (keeping its best scale) when its reduced task's smallest singular
#: value falls below this fraction of the unsaturated one's: the reduced task would need far
#: more damping, which bends its direction [-].
STOP_SIGMA = 1.0
#: A joint or row this close outside its bound is taken as at it (in x) [rad/s].
BOUND_TOL = 1e-12
#: An increment this small (in x) does not move a joint or row toward a bound [rad/s]. Well
#: above round-off (the increments' errors are ~1e-15 of the task's scale): an increment at
#: round-off would decide saturation by the joints' order. Whatever it leaves behind is far
#: below any limit's resolution and the command's clip to the limits takes it out.
STILL_TOL = 1e-9
#: Scales this close bind together: the joint or row leaving fastest is saturated first [-].
TIE_TOL = 1e-12


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
    acrit = -1.0
    alow = -1.0
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
        if aj > STILL_TOL:
            up = (hj - bj) / aj
            dn = (lj - bj) / aj
        elif aj < -STILL_TOL:
            up = (lj - bj) / aj
            dn = (hj - bj) / aj
        elif bj > hj + BOUND_TOL or bj < lj - BOUND_TOL:
            up = -np.inf  # s cannot fix this one: it must be saturated
            dn = np.inf
        else:
            continue
        # ties (e.g. two joints at a bound of 0 that the level leaves at once) go to the one
        # leaving fastest, not to the first listed: the result does not depend on joint order
        if up < smax - TIE_TOL or (up <= smax + TIE_TOL and abs(aj) > acrit):
            smax = min(smax, up)
            jcrit = j
            acrit = abs(aj)
        if dn > smin + TIE_TOL or (dn >= smin - TIE_TOL and abs(aj) > alow):
            smin = max(smin, dn)
            jlow = j
            alow = abs(aj)
    if smin > 1.0 and jlow >= 0:
        jcrit = jlow
    return smax, smin, jcrit


@njit(cache=True, nogil=True)
def _held_too_hard(s, rank0, smin0, eps):
    """The reduced task (singular values ``s``) lost rank, or needs damping it did not need free.

    ``rank0``, ``smin0``: the task's rank and smallest kept singular value with every joint
    free; ``eps``: the damping's threshold (:func:`_held_increment` stops the level then).
    """
    if rank0 == 0:
        sr = 1.0
    elif rank0 <= s.shape[0]:
        sr = s[rank0 - 1]
    else:  # fewer free directions than the task's rank: it lost rank
        sr = 0.0
    return _rank(s) < rank0 or (sr < eps and sr < STOP_SIGMA * smin0)


@njit(cache=True, nogil=True)
def _too_hard(s, ref, stop, eps):
    """With ``stop``: the reduced task (singular values ``s``) is held too hard (``ref``).

    ``ref`` (3,): the reference task's rank and smallest kept singular value, and a flag. With
    the flag set, ``s`` becomes the reference (the flag is cleared) and it is not too hard.
    """
    if ref[2] != 0.0:
        rank = _rank(s)
        ref[0] = rank
        ref[1] = s[rank - 1] if rank > 0 else 0.0
        ref[2] = 0.0
        return False
    return stop and _held_too_hard(s, int(ref[0]), ref[1], eps)


@njit(cache=True, nogil=True)
def _held_increment(ak, r, xprev, nmat, ident, sat, satval, ref, stop, method, lam, a, bb, cw):
    """The level's increment with the saturated joints and rows held: x = s a + bb.

    ``x = xprev + N z0 + N Z M# (s r - ak N z0)``, ``M = ak N Z``: z0 holds the saturated
    joints at their values (and the saturated inequality rows of ``cw`` at their bounds),
    Z spans what leaves them there. False if the holds cannot all be
    kept; with ``stop`` (a scale > 0 was found), also if the task loses rank or needs damping
    (or more of it) than the reference task ``ref`` (rank, smallest kept singular value, and
    a flag) needed: the damped solution would then leave the task's direction. The reference
    is the task with every joint free, or, once the flag is set (a joint was held at a position
    limit's side), this reduced task, which ``ref`` then becomes (and no stop): a joint at a
    position limit stays there, so the level goes on without it, as a joint lock does.
    ``lam``: (lam_max, eps, gamma_max). At the top level with only joints held, the same
    increment without an SVD of the held rows (:func:`_held_joints_top`).
    """
    n = xprev.shape[0]
    idx = np.flatnonzero(sat)
    ns = idx.shape[0]
    if ident and (ns == 0 or idx[ns - 1] < n):  # the top level, joints held: no SVD needed
        return _held_joints_top(ak, r, xprev, sat, satval, ref, stop, method, lam, a, bb)
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
    u, s, vt = thin_svd(mz)
    if s.shape[0] == 0 or s[0] <= HOLD_TOL:  # the holds leave the task no motion at all: what
        a[:] = 0.0  # is left of ``mz`` is rounding, which an undamped solve would amplify
        bb[:] = xprev + z0
        return True
    sc = _scale(ak)
    if _too_hard(s, ref, stop, lam[1]):
        return False
    w = np.empty(nz.shape[1])
    top = np.bool_(False)  # typed, not literal: the level's own variant of _apply
    _apply(u, s, vt, mz, r, method, top, lam[0], lam[1], lam[2], w, sc)
    a[:] = nz @ w
    _apply(u, s, vt, mz, ak @ z0, method, top, lam[0], lam[1], lam[2], w, sc)
    bb[:] = xprev + z0 - nz @ w
    return True


@njit(cache=True, nogil=True)
def _held_joints_top(ak, r, xprev, sat, satval, ref, stop, method, lam, a, bb):
    """:func:`_held_increment` at the top level (N = I) with only joints held.

    The held rows are rows of the identity: ``z0`` puts each held joint at its value, and the
    free joints span what leaves them there, so ``M = ak`` restricted to the free joints'
    columns; no SVD of the held rows.
    """
    n = xprev.shape[0]
    free = np.flatnonzero(~sat[:n])
    nf = free.shape[0]
    if nf == 0:
        return False
    z0 = np.zeros(n)
    for j in range(n):
        if sat[j]:
            z0[j] = satval[j] - xprev[j]
    if ak.shape[0] == 0:
        a[:] = 0.0
        bb[:] = xprev + z0
        return True
    m = ak.shape[0]
    mz = np.empty((m, nf))
    for i in range(m):
        for k in range(nf):
            mz[i, k] = ak[i, free[k]]
    u, s, vt = thin_svd(mz)
    sc = _scale(ak)
    if _too_hard(s, ref, stop, lam[1]):
        return False
    w = np.empty(nf)
    top = np.bool_(False)  # typed, not literal: the level's own variant of _apply
    _apply(u, s, vt, mz, r, method, top, lam[0], lam[1], lam[2], w, sc)
    a[:] = 0.0
    for k in range(nf):
        a[free[k]] = w[k]
    _apply(u, s, vt, mz, ak @ z0, method, top, lam[0], lam[1], lam[2], w, sc)
    for j in range(n):
        bb[j] = xprev[j] + z0[j]
    for k in range(nf):
        bb[free[k]] -= w[k]
    return True


@njit(cache=True, nogil=True)
def _keep(x, s, a, bb, sat, satval, held):
    """Set ``x = s a + bb``, the saturated joints exactly at their values; held = sat."""
    for j in range(held.shape[0]):
        x[j] = satval[j] if sat[j] else s * a[j] + bb[j]
        held[j] = sat[j]


@njit(cache=True, nogil=True)
def _hold_ties(x, a, lo, hi, held):
    """Hold every free joint that the scaled level brings to a bound, at that bound.

    Such a joint ties with the one that bounds the scale (within :data:`TIE_TOL`): which of
    the tied joints the iterations saturated depends on the joints' order; what the lower
    levels may move must not.
    """
    for j in range(held.shape[0]):
        if held[j] or abs(a[j]) <= STILL_TOL:
            continue
        tol = TIE_TOL * abs(a[j]) + BOUND_TOL
        if a[j] > 0.0 and x[j] >= hi[j] - tol:
            x[j] = hi[j]
            held[j] = True
        elif a[j] < 0.0 and x[j] <= lo[j] + tol:
            x[j] = lo[j]
            held[j] = True


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
    elif a[j] > STILL_TOL:
        satval[j] = hi[j]
    elif a[j] < -STILL_TOL:
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
def _sns_level(ak, r, nmat, top, lo, hi, method, lam, x, held, cw, cl, side, memory):
    """One level by saturation in the null space: x (in: the levels above; out: with this one).

    The joints keep ``lo <= x <= hi`` and the inequality rows ``cw x >= cl`` (collision
    rows): a row is saturated (held at its bound) as a joint is.

    ``side`` (n,): +1 where a joint's upper side ``hi`` is a position limit's (the braking
    curve before it, or the limit within the step), -1 where its lower side is, 0 neither. A
    joint saturated at such a side stays there tick after tick, and scaling the level to it
    would scale the task toward zero as the joint closes in: once one is held, the level goes
    on with the other joints, damped as they need (a joint lock), and is scaled only as far
    as they cannot follow.

    The increment ``N M# r`` (``M = ak N``) is taken whole if every joint stays in [lo, hi];
    else the joint that bounds its scale is saturated at its bound and the rest solved again,
    keeping the largest scale s in [0, 1] found (Flacco, De Luca, Khatib 2015, Alg. 1). Stops
    when a hold cannot be kept, the task loses rank, or needs more damping than unsaturated
    (see :func:`_held_increment`). ``top``: the highest level (N is the identity).
    ``memory``: the SVD of ``M``'s (:func:`~.small_svd.thin_svd_from`; empty: none).

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
        u, s0, vt0 = thin_svd_from(m0, memory)
        sc = 0.0 if top else _scale(ak)  # a lower level: what the levels above leave of it
        smin, lm = _apply(u, s0, vt0, m0, r, method, top, lam[0], lam[1], lam[2], g, sc)
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
    # the task that held joints are compared with: free, until a joint is held at a position
    # limit's side (the reduced task then, see _held_increment)
    ref = np.array([rank0, s0[rank0 - 1] if rank0 > 0 else 0.0, 0.0])
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
            ref,
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
            _hold_ties(x, a, lo, hi, held)
        if jcrit < 0:
            break
        _saturate(jcrit, a, bb, lo, hi, sat, satval, cl)
        if jcrit < n and side[jcrit] != 0.0:
            if satval[jcrit] == (hi[jcrit] if side[jcrit] > 0.0 else lo[jcrit]):
                ref[2] = 1.0
    if not found and cw.shape[0] > 0:
        _brake_along(x, lo, hi, cw, cl)
    return best, it, smin, lm, s0, vt0


__all__ = ["BOUND_TOL", "HOLD_TOL", "STILL_TOL", "STOP_SIGMA", "TIE_TOL"]
