"""Weighted, damped pseudo-inverse solvers with joint limits: pure linear algebra.

Solves ``q' = A# b`` for a stacked task matrix ``A`` (m, n) and right-hand side ``b`` (m,):

* weights: ``A_w = Wy^1/2 A Wq^1/2``, ``b_w = Wy^1/2 b``, ``q' = Wq^1/2 A_w# b_w``;
* damping (``dls``): ``A_w# = V diag(s / (s^2 + lambda^2)) U^T`` with
  ``lambda^2 = (1 - (s_min / epsilon)^2) * damping_max^2`` when ``s_min < epsilon``, else 0
  (Maciejewski / Blender iTaSC WDLS): no velocity spike at or near a singularity;
* ``sdls``: selectively damped least squares (Buss & Kim 2005), per singular direction;
* joint position limits: a joint whose next position ``q + q' dt`` would pass a limit is
  locked at the velocity that reaches the limit exactly (zero if it is there already) and the
  rest is solved again, until no new joint locks (Blender iTaSC's lock-and-re-solve);
* velocity limits: the whole ``q'`` is scaled by one factor so the direction is kept.

The kernel runs compiled (numba) on preallocated work arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from .errors import SolverError

Array = NDArray[np.float64]

SOLVERS = ("dls", "sdls")
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
def _solve_once(aw, bw, method, lam_max, eps, gamma_max, out):
    """One damped solve of aw x = bw into out; returns (sigma_min, lambda)."""
    m, n = aw.shape
    out[:] = 0.0
    if m == 0 or n == 0:
        return 0.0, 0.0
    u, s, vt = np.linalg.svd(aw, full_matrices=False)
    k = s.shape[0]
    # sigma_min of the rows that act: rows switched off (weight 0, e.g. an inactive
    # inequality or a distance inside its band) would add zero singular values and damp a
    # task that is far from singular.
    rows = 0
    for r_ in range(m):
        for j in range(n):
            if aw[r_, j] != 0.0:
                rows += 1
                break
    kk = min(rows, k)
    smin = s[kk - 1] if kk > 0 else 0.0
    lam2 = 0.0
    if method == 0:
        if smin < eps:
            r = smin / eps
            lam2 = (1.0 - r * r) * lam_max * lam_max
        for i in range(k):
            alpha = 0.0
            for r_ in range(m):
                alpha += u[r_, i] * bw[r_]
            f = s[i] / (s[i] * s[i] + lam2) if s[i] * s[i] + lam2 > 0.0 else 0.0
            for j in range(n):
                out[j] += f * alpha * vt[i, j]
        return smin, math.sqrt(lam2)
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
def solve_limited(
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
):
    """Weighted damped solve with joint-limit locking and velocity scaling.

    Args:
        a: (m, n) task matrix.
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
        info: (INFO_SIZE,) output: sigma_min, damping, scale, iterations, finite flag.
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
        smin, lam = _solve_once(aw, bw, method, lam_max, eps, gamma_max, xw)
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
    "solver_code",
]
