"""Weighted, damped pseudo-inverse solvers with joint limits: pure linear algebra.

Solves ``q' = A# b`` for a stacked task matrix ``A`` (m, n) and right-hand side ``b`` (m,):

* weights: ``A_w = Wy^1/2 A Wq^1/2``, ``b_w = Wy^1/2 b``, ``q' = Wq^1/2 A_w# b_w``;
* damping (``dls``): ``A_w# = V diag(s_i / (s_i^2 + lambda_i^2)) U^T`` with
  ``lambda_i^2 = (1 - (s_i / epsilon)^2) * damping_max^2`` when ``s_i < epsilon``, else 0
  (Maciejewski / Blender iTaSC WDLS's damping law, applied per singular direction): no
  velocity spike at or near a singularity, only the near-singular directions damped, and a
  continuous solution when a row's weight rises from 0;
* ``sdls``: selectively damped least squares (Buss & Kim 2005), per singular direction;
* joint position limits: a joint whose next position ``q + q' dt`` would pass a limit is
  locked at the velocity that reaches the limit exactly (zero if it is there already) and the
  rest is solved again, until no new joint locks (Blender iTaSC's lock-and-re-solve);
* velocity limits: the whole ``q'`` is scaled by one factor so the direction is kept;
* strict priorities (:func:`solve_prioritized`): rows grouped in levels, highest first. Level
  1 is solved as above; each lower level k is solved, damped, for what is left of its task in
  the null space of the levels above: ``x += P (A_k P)# (b_k - A_k x)``, with the projector
  ``P = I - V diag(f(s)) V^T`` from the SVD of the stacked weighted rows of levels 1..k-1 and
  ``f(s) = s^2 / (s^2 + lambda(s)^2)``, ``lambda(s)^2 = (1 - (s / epsilon)^2) damping_max^2``
  below ``epsilon`` (else f = 1): an exact null-space projector away from singularities that
  lets a near-singular direction of a higher level go to the lower ones smoothly. Within a
  lower level each singular direction is damped by its own ``lambda(s)``. One level is the
  plain solve above, bit for bit.
* undamped (``damping_max`` 0, or a direction at or above ``epsilon``): a singular value at or
  below :data:`RCOND` times the largest is rounding noise (an exact singularity), and its
  direction is neither inverted nor projected out, as a truncated pseudo-inverse does.
  Inverting it would give a command of full speed whose direction is that of the rounding
  (the order in which the joints are listed decided it).

The kernel runs compiled (numba) on preallocated work arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..errors import SolverError

Array = NDArray[np.float64]

SOLVERS = ("dls", "sdls")
#: Undamped directions with a singular value at or below RCOND times the largest are rounding
#: noise and are not inverted [-].
RCOND = 1e-12
"""Names accepted by :func:`solver_code`."""

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
def _clamp_max_abs(v, limit):
    m = 0.0
    for x in v:
        ax = abs(x)
        if ax > m:
            m = ax
    if m > limit and m > 0.0:
        v *= limit / m


@njit(cache=True, nogil=True)
def _acting(aw, k):
    """How many of the ``k`` singular values of ``aw`` the rows that act can make non-zero.

    Rows switched off (weight 0: an inactive inequality, a distance inside its band) add
    zero singular values; sigma_min is taken over the others, so that they do not damp a
    task far from singular. At least 1 (an all-zero ``aw`` has sigma_min 0).
    """
    m, n = aw.shape
    rows = 0
    for r in range(m):
        for j in range(n):
            if aw[r, j] != 0.0:
                rows += 1
                break
    return max(1, min(rows, k))


@njit(cache=True, nogil=True)
def _numerical_floor(s):
    """Singular values at or below this are rounding noise: :data:`RCOND` times the largest."""
    return RCOND * s[0] if s.shape[0] > 0 else 0.0


@njit(cache=True, nogil=True)
def _dls(u, s, vt, bw, lam_max, eps, out, kk):
    """DLS from the SVD ``u s vt`` of the task matrix: out += A# bw; returns (s_min, lambda).

    Each singular direction is damped by its own singular value,
    ``lambda_i^2 = (1 - (s_i / eps)^2) lambda_max^2`` below ``eps`` (else 0): the gain
    ``s_i / (s_i^2 + lambda_i^2)`` is a continuous function of ``s_i`` that is 0 at 0, so a row
    whose weight rises from 0 (a band, a limit's margin) enters the solve smoothly instead of
    switching the damping of every other direction on at once. ``kk``: sigma_min is
    ``s[kk - 1]`` (see :func:`_acting`); the lambda returned is that direction's.
    """
    m = u.shape[0]
    n = vt.shape[1]
    k = s.shape[0]
    smin = s[kk - 1]
    lam_max2 = lam_max * lam_max
    floor = _numerical_floor(s)
    for i in range(k):
        lam2 = 0.0
        if s[i] < eps:
            r = s[i] / eps
            lam2 = (1.0 - r * r) * lam_max2
        if lam2 == 0.0 and s[i] <= floor:
            continue  # undamped: a direction that is rounding noise is not inverted
        den = s[i] * s[i] + lam2
        if den <= 0.0:
            continue
        alpha = 0.0
        for r_ in range(m):
            alpha += u[r_, i] * bw[r_]
        f = s[i] / den
        for j in range(n):
            out[j] += f * alpha * vt[i, j]
    lam = 0.0
    if smin < eps:
        r = smin / eps
        lam = math.sqrt((1.0 - r * r) * lam_max2)
    return smin, lam


@njit(cache=True, nogil=True)
def _projector(sv, vt, lam_max, eps, proj):
    """P = I - V diag(f(s)) V^T into proj (n, n): the null space of rows with SVD (sv, vt)."""
    n = proj.shape[0]
    lam_max2 = lam_max * lam_max
    floor = _numerical_floor(sv)
    for i in range(n):
        for j in range(n):
            proj[i, j] = 1.0 if i == j else 0.0
    for k in range(sv.shape[0]):
        s2 = sv[k] * sv[k]
        if sv[k] >= eps:
            f = 1.0
        else:
            rr = sv[k] / eps
            lam2 = (1.0 - rr * rr) * lam_max2
            den = s2 + lam2
            f = s2 / den if den > 0.0 and not (lam2 == 0.0 and sv[k] <= floor) else 0.0
        if f == 0.0:
            continue
        for i in range(n):
            vi = f * vt[k, i]
            for j in range(n):
                proj[i, j] -= vi * vt[k, j]


@njit(cache=True, nogil=True)
def _solve_once(aw, bw, method, lam_max, eps, gamma_max, out):
    """One damped solve of aw x = bw into out; returns (sigma_min, lambda)."""
    m, n = aw.shape
    out[:] = 0.0
    if m == 0 or n == 0:
        return 0.0, 0.0
    u, s, vt = np.linalg.svd(aw, full_matrices=False)
    if method == 0:
        return _dls(u, s, vt, bw, lam_max, eps, out, _acting(aw, s.shape[0]))
    k = s.shape[0]
    smin = s[_acting(aw, k) - 1] if k > 0 else 0.0
    # SDLS (Buss & Kim): damp each singular direction by how far a unit task step moves joints.
    rho = np.zeros(n)
    for j in range(n):
        for r_ in range(m):
            rho[j] += abs(aw[r_, j])
    phi = np.empty(n)
    for i in range(k):
        if s[i] <= 1e-12:
            continue
        alpha = 0.0
        ni = 0.0
        for r_ in range(m):
            alpha += u[r_, i] * bw[r_]
            ni += abs(u[r_, i])
        mi = 0.0
        for j in range(n):
            mi += abs(vt[i, j]) * rho[j]
        mi /= s[i]
        gamma = gamma_max * (min(1.0, ni / mi) if mi > 0.0 else 1.0)
        for j in range(n):
            phi[j] = alpha / s[i] * vt[i, j]
        _clamp_max_abs(phi, gamma)
        out += phi
    _clamp_max_abs(out, gamma_max)
    return smin, 0.0


@njit(cache=True, nogil=True)
def _solve_levels(aw, bw, levels, nlev, method, lam_max, eps, gamma_max, out, proj, at, rk, zw):
    """Prioritised damped solve of aw x = bw into out; returns (sigma_min, lambda).

    Rows ``levels[k]:levels[k + 1]`` are level k (0 highest). Rows that are zero (weight 0,
    e.g. a band's inactive rows) are left out of each level's solve, so that they do not read
    as a singularity; sigma_min and lambda are those of the first level with a non-zero row.
    ``proj`` (n, n), ``at`` (m, n), ``rk`` (m,) and ``zw`` (n,) are work arrays.
    """
    n = aw.shape[1]
    out[:] = 0.0
    for i in range(n):
        for j in range(n):
            proj[i, j] = 1.0 if i == j else 0.0
    smin = 0.0
    lam = 0.0
    first = True
    lam_max2 = lam_max * lam_max
    for lev in range(nlev):
        r0 = levels[lev]
        r1 = levels[lev + 1]
        # What is left of this level's task, with its rows restricted to the null space.
        mk = 0
        for r in range(r0, r1):
            nonzero = False
            for j in range(n):
                if aw[r, j] != 0.0:
                    nonzero = True
                    break
            if not nonzero:
                continue
            acc = bw[r]
            for j in range(n):
                acc -= aw[r, j] * out[j]
                s_ = 0.0
                for t in range(n):
                    s_ += aw[r, t] * proj[t, j]
                at[mk, j] = s_
            rk[mk] = acc
            mk += 1
        projected = False
        if mk > 0:
            if lev == 0 and method == 0:
                # level 1 as _solve_once computes it; its SVD gives the projector too
                zw[:] = 0.0
                u, sv, vt = np.linalg.svd(at[:mk], full_matrices=False)
                s0, l0 = _dls(u, sv, vt, rk[:mk], lam_max, eps, zw, sv.shape[0])
                if nlev > 1:
                    _projector(sv, vt, lam_max, eps, proj)
                    projected = True
            elif lev == 0:
                s0, l0 = _solve_once(at[:mk], rk[:mk], method, lam_max, eps, gamma_max, zw)
            elif method == 0:
                s0 = 1e300
                l0 = 0.0
                zw[:] = 0.0
                u, sv, vt = np.linalg.svd(at[:mk], full_matrices=False)
                floor = _numerical_floor(sv)
                for i in range(sv.shape[0]):
                    lam2 = 0.0
                    if sv[i] < eps:
                        rr = sv[i] / eps
                        lam2 = (1.0 - rr * rr) * lam_max2
                    if sv[i] > 0.0 and sv[i] < s0:
                        s0 = sv[i]
                        l0 = math.sqrt(lam2)
                    den = sv[i] * sv[i] + lam2
                    if den <= 0.0 or (lam2 == 0.0 and sv[i] <= floor):
                        continue
                    alpha = 0.0
                    for r in range(mk):
                        alpha += u[r, i] * rk[r]
                    f = alpha * sv[i] / den
                    for j in range(n):
                        zw[j] += f * vt[i, j]
            else:
                s0, l0 = _solve_once(at[:mk], rk[:mk], method, lam_max, eps, gamma_max, zw)
            if first:
                smin, lam = (s0, l0) if s0 < 1e300 else (0.0, 0.0)
                first = False
            if lev == 0:
                for j in range(n):
                    out[j] += zw[j]
            else:  # out += P zw: a direction the roll-off half frees gets half its share again
                for i in range(n):
                    acc = 0.0
                    for j in range(n):
                        acc += proj[i, j] * zw[j]
                    out[i] += acc
        if lev + 1 < nlev and r1 > 0 and not projected:
            # Null space of levels 0..lev: P = I - V diag(f) V^T of their stacked rows.
            u, sv, vt = np.linalg.svd(aw[:r1], full_matrices=False)
            _projector(sv, vt, lam_max, eps, proj)
    return smin, lam


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
):
    """Weighted damped solve with strict priorities, joint-limit locking and velocity scaling.

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
        locked: (n,) bool output: joints held at a limit.
        aw: (m, n) work array.
        bw: (m,) work array.
        xw: (n,) work array.
        fixed: (n,) work array: velocities of the locked joints.
        info: (INFO_SIZE,) output: sigma_min, damping (with several levels: of the first level
            with a non-zero row, zero rows left out), scale, iterations, finite flag.
        levels: (nlev + 1,) int64: level k is rows ``levels[k]:levels[k + 1]``.
        nlev: number of levels (1: the plain weighted solve, bit for bit).
        proj: (n, n) work array (used with several levels only, as the next three).
        at: (m, n) work array.
        rk: (m,) work array.
        zw: (n,) work array.
    """
    m, n = a.shape
    for j in range(n):
        locked[j] = wq[j] <= 0.0
        fixed[j] = 0.0
    smin = 0.0
    lam = 0.0
    it = 0
    while True:
        it += 1
        for r in range(m):
            sw = math.sqrt(wy[r])
            acc = b[r]
            for j in range(n):
                if locked[j]:
                    acc -= a[r, j] * fixed[j]
                    aw[r, j] = 0.0
                else:
                    aw[r, j] = sw * a[r, j] * math.sqrt(wq[j])
            bw[r] = sw * acc
        if nlev <= 1:
            smin, lam = _solve_once(aw, bw, method, lam_max, eps, gamma_max, xw)
        else:
            smin, lam = _solve_levels(
                aw, bw, levels, nlev, method, lam_max, eps, gamma_max, xw, proj, at, rk, zw
            )
        # Velocity scale of this candidate: a joint is locked only if the step it will
        # really take (after the scaling below) crosses a limit. Testing the unscaled step
        # locked joints far from their limits (e.g. 1 rad away when the unscaled q' is
        # 500 rad/s toward an unreachable target), which bent the direction of q' and made
        # it jump when the lock was released.
        scale = 1.0
        for j in range(n):
            v = fixed[j] if locked[j] else math.sqrt(wq[j]) * xw[j]
            qdot[j] = v
            av = abs(v)
            if av > vmax[j]:
                scale = min(scale, vmax[j] / av)
        new_lock = False
        for j in range(n):
            if locked[j]:
                continue
            v = qdot[j]
            nxt = q[j] + scale * v * dt
            if v > 0.0 and nxt > upper[j]:
                locked[j] = True  # reach the limit at most (never faster than vmax)
                fixed[j] = min(vmax[j], max(0.0, (upper[j] - q[j]) / dt))
                new_lock = True
            elif v < 0.0 and nxt < lower[j]:
                locked[j] = True
                fixed[j] = max(-vmax[j], min(0.0, (lower[j] - q[j]) / dt))
                new_lock = True
        if not new_lock or it > n:
            break
    scale = 1.0
    for j in range(n):
        if locked[j]:
            qdot[j] = fixed[j]
        av = abs(qdot[j])
        if av > vmax[j] and av > 0.0:
            scale = min(scale, vmax[j] / av)
    finite = True
    for j in range(n):
        qdot[j] *= scale
        if not math.isfinite(qdot[j]):
            finite = False
    if not finite:
        qdot[:] = 0.0
    for j in range(n):  # a joint frozen by its weight is not "locked by a limit"
        if wq[j] <= 0.0:
            locked[j] = False
    info[0] = smin
    info[1] = lam
    info[2] = scale
    info[3] = it
    info[4] = 1.0 if finite else 0.0


@njit(cache=True, nogil=True)
def solve_limited(*args):
    """Weighted damped solve with joint-limit locking and velocity scaling (one level).

    ``solve_limited(a, b, wy, wq, q, lower, upper, vmax, dt, method, lam_max, eps, gamma_max,
    qdot, locked, aw, bw, xw, fixed, info)``: the first twenty arguments of
    :func:`solve_prioritized`, whose one level is then all the rows (its work arrays for
    several levels are not used). The control tick calls :func:`solve_prioritized`; this is the
    same solve, bit for bit.
    """
    aw, bw, xw = args[15], args[16], args[17]
    levels = np.zeros(2, dtype=np.int64)
    levels[1] = args[0].shape[0]
    one_level = (levels, 1, aw, aw, bw, xw)  # levels, nlev, proj, at, rk, zw
    solve_prioritized(*(args + one_level))


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
    "SOLVERS",
    "damped_pinv_solve",
    "solve_limited",
    "solve_prioritized",
    "solver_code",
]
