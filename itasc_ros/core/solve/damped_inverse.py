"""Weighted damped pseudo-inverses of one level: DLS, SDLS and the roll-off projector (compiled).

The linear algebra under :mod:`~itasc_ros.core.solve.solver`: the damped least-squares
inverse of a weighted task with its damping law per singular direction
(``lambda_i^2 = (1 - (s_i / epsilon)^2) damping_max^2`` below ``epsilon``), the selectively
damped inverse (Buss & Kim 2005), the null-space projector that lets a near-singular
direction go to the lower levels smoothly, and the rank of a set of singular values and the
directions an undamped inverse leaves out (:data:`RCOND`, :data:`UNDAMPED_RCOND`). numba kernels
on caller-provided arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .small_svd import thin_svd

#: Directions with a singular value at or below RCOND times the largest are rounding noise (an
#: exact singularity): undamped, they are not inverted [-].
RCOND = 1e-12

#: Without damping (``damping_max`` 0), a direction below ``epsilon`` whose singular value is at
#: or below UNDAMPED_RCOND times the largest is not inverted either [-]: its gain (over 1e9)
#: would let the rounding of its inputs (1e-16 of the largest) decide the command at the 1e-7
#: level, and with it which joint saturates first: the order in which the joints are listed
#: then decided the command (measured 1 % apart, 1e-10 rad from the Panda's wrist singularity).
#: Directions at or above ``epsilon`` are always inverted (a gain of at most 1 / epsilon).
UNDAMPED_RCOND = 1e-9


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
def _scale(ak):
    """The scale of a level's task matrix ``ak`` (m, n) that rounding is judged against.

    Its Frobenius norm: at least its largest singular value, at most sqrt(min(m, n)) times it.
    """
    acc = 0.0
    for i in range(ak.shape[0]):
        for j in range(ak.shape[1]):
            acc += ak[i, j] * ak[i, j]
    return math.sqrt(acc)


@njit(cache=True, nogil=True)
def _floors(s, scale):
    """(:data:`RCOND`, :data:`UNDAMPED_RCOND`) times ``max(s[0], scale)``: see :func:`_skipped`.

    ``scale``: the level's own task matrix's scale (:func:`_scale`) when ``s`` are the singular
    values of what is left of it in the null space of the levels above or of held joints, 0
    for the task matrix itself. A projection that leaves the task (almost) nothing leaves a
    matrix of rounding, whose singular values are all far below the task's own: relative to
    their own largest they would look like a full rank to invert, with gains of 1e15.
    """
    top = s[0] if s.shape[0] > 0 else 0.0
    top = max(top, scale)
    return RCOND * top, UNDAMPED_RCOND * top


@njit(cache=True, nogil=True)
def _skipped(si, eps, floors):
    """Whether an undamped direction of singular value ``si`` is left out (not inverted)."""
    return si <= floors[0] or (si < eps and si <= floors[1])


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
    floors = _floors(s, 0.0)
    for i in range(k):
        lam2 = 0.0
        if s[i] < eps:
            r = s[i] / eps
            lam2 = (1.0 - r * r) * lam_max2
        if lam2 == 0.0 and _skipped(s[i], eps, floors):
            continue  # undamped: rounding noise, or within rounding of a singularity
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
    floors = _floors(sv, 0.0)
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
            skip = lam2 == 0.0 and _skipped(sv[k], eps, floors)
            f = s2 / den if den > 0.0 and not skip else 0.0
        if f == 0.0:
            continue
        for i in range(n):
            vi = f * vt[k, i]
            for j in range(n):
                proj[i, j] -= vi * vt[k, j]


@njit(cache=True, nogil=True)
def _sdls(u, s, vt, aw, bw, gamma_max, out):
    """SDLS (Buss & Kim) from the SVD ``u s vt`` of aw: out += aw# bw.

    Each singular direction is damped by how far a unit task step moves the joints.
    """
    m, n = aw.shape
    rho = np.zeros(n)
    for j in range(n):
        for r_ in range(m):
            rho[j] += abs(aw[r_, j])
    phi = np.empty(n)
    for i in range(s.shape[0]):
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


@njit(cache=True, nogil=True)
def _solve_once(aw, bw, method, lam_max, eps, gamma_max, out):
    """One damped solve of aw x = bw into out; returns (sigma_min, lambda)."""
    m, n = aw.shape
    out[:] = 0.0
    if m == 0 or n == 0:
        return 0.0, 0.0
    u, s, vt = thin_svd(aw)
    kk = _acting(aw, s.shape[0])
    if method == 0:
        return _dls(u, s, vt, bw, lam_max, eps, out, kk)
    _sdls(u, s, vt, aw, bw, gamma_max, out)
    return (s[kk - 1] if s.shape[0] > 0 else 0.0), 0.0


@njit(cache=True, nogil=True)
def _dls_lower(u, sv, vt, rk, lam_max, eps, zw, scale):
    """DLS of a lower level: zw += A# rk (``scale``: see :func:`_floors`).

    Returns (sigma_min, lambda) of its smallest non-zero singular value (0, 0 if none).
    """
    mk = u.shape[0]
    n = vt.shape[1]
    lam_max2 = lam_max * lam_max
    s0 = 1e300
    l0 = 0.0
    floors = _floors(sv, scale)
    for i in range(sv.shape[0]):
        lam2 = 0.0
        if sv[i] < eps:
            rr = sv[i] / eps
            lam2 = (1.0 - rr * rr) * lam_max2
        if sv[i] > 0.0 and sv[i] < s0:
            s0 = sv[i]
            l0 = math.sqrt(lam2)
        den = sv[i] * sv[i] + lam2
        if den <= 0.0 or (lam2 == 0.0 and _skipped(sv[i], eps, floors)):
            continue
        alpha = 0.0
        for r in range(mk):
            alpha += u[r, i] * rk[r]
        f = alpha * sv[i] / den
        for j in range(n):
            zw[j] += f * vt[i, j]
    return (s0, l0) if s0 < 1e300 else (0.0, 0.0)


@njit(cache=True, nogil=True)
def _apply(u, s, vt, mat, rhs, method, top, lam_max, eps, gamma_max, out, scale):
    """Damped ``out = mat# rhs``, from the SVD ``u s vt`` of mat; returns (sigma_min, lambda).

    ``top``: the highest level (DLS as the one-level solve computes it). ``scale``: the scale
    of the level's task matrix when ``mat`` is what is left of it (see :func:`_floors`), else 0.
    """
    out[:] = 0.0
    if method != 0:
        _sdls(u, s, vt, mat, rhs, gamma_max, out)
        kk = _acting(mat, s.shape[0])
        return (s[kk - 1] if s.shape[0] > 0 else 0.0), 0.0
    if top:
        return _dls(u, s, vt, rhs, lam_max, eps, out, _acting(mat, s.shape[0]))
    return _dls_lower(u, s, vt, rhs, lam_max, eps, out, scale)


@njit(cache=True, nogil=True)
def _rank(s):
    """Singular values above :data:`RCOND` times the largest."""
    if s.shape[0] == 0 or s[0] <= 0.0:
        return 0
    k = 0
    for v in s:
        if v > RCOND * s[0]:
            k += 1
    return k


__all__ = ["RCOND", "UNDAMPED_RCOND"]
