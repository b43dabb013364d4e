"""The thin SVD of the solve's small matrices: one-sided Jacobi, LAPACK beyond.

``np.linalg.svd`` in compiled code calls LAPACK's ``gesdd``: a workspace query, workspace and
output allocations and a bidiagonalisation: for an arm's task the largest single item of a
control tick. One-sided Jacobi (Hestenes) rotates the rows of the
matrix until they are orthogonal; their norms are the singular values and the normalised rows
the right singular vectors, with the relative accuracy Jacobi is known for. It is cheaper for
the matrices of one arm's tasks (up to :data:`JACOBI_MAX_ROWS` rows after transposing, and
:data:`JACOBI_MAX_ENTRIES` entries) and used there; a larger matrix (a humanoid's stacked
tasks) goes to LAPACK, as does a matrix Jacobi does not converge on or a non-finite one.

Rank-deficient matrices are the common case below the first priority level (a posture
projected into the null space of a pose task has rank 1 of 7). Jacobi's convergence test is
relative to each pair's own norms, so a row left with a rounding-size norm is still
orthogonal to the others and its direction is kept; a row of norm zero (or below
:data:`ZERO` of the largest, where squares underflow) has none, and gets the unit vector of
the standard basis farthest from the rows before it, orthogonalised against them: the
singular vectors stay orthonormal, with a zero singular value, as LAPACK's. The result has
``np.linalg.svd(a, full_matrices=False)``'s shapes and order (singular values descending);
the signs of paired singular vectors, and the directions of (numerically) zero singular
values, may differ, which no consumer depends on (each weighs a direction by its singular
value, or skips it below a floor).

A control tick takes the SVD of nearly the same matrix tick after tick (a Jacobian moves little
in one period). :func:`thin_svd_from` keeps the rotation that made the last one's rows
orthogonal in a caller's memory (:data:`MEMORY_SIZE`) and starts the next one from it: the
rows it starts from are then nearly orthogonal, and the sweeps that remain are one or two
(from five or six from the matrix itself, measured on an arm's Jacobians). The result is the
SVD of the same matrix to the same convergence test; starting from a product with an
orthogonal matrix, its accuracy is a backward-stable SVD's (LAPACK's: errors relative to the
largest singular value) rather than relative to each one.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: At most this many rows (of ``a`` or of its transpose, the shorter side) go to Jacobi.
JACOBI_MAX_ROWS = 8
#: At most this many entries go to Jacobi.
JACOBI_MAX_ENTRIES = 96
#: Sweeps before giving up on convergence (then LAPACK); 6 x 7 converges in 4 to 6.
MAX_SWEEPS = 30
#: A row norm below this fraction of the largest has no direction (its square underflows).
ZERO = 1e-100
#: The size of a :func:`thin_svd_from` memory: the shape (m, n) of its last matrix, then the
#: (k, k) rotation that made its rows orthogonal (k <= :data:`JACOBI_MAX_ROWS`), row-major.
MEMORY_SIZE = 2 + JACOBI_MAX_ROWS * JACOBI_MAX_ROWS


@njit(cache=True, nogil=True)
def _orthogonalise_rows(b, g):
    """Rotate the rows of ``b`` (k, n) until orthogonal; the rotations accumulated in ``g``.

    Returns:
        True if the rows converged within :data:`MAX_SWEEPS` sweeps.
    """
    k, n = b.shape
    for _ in range(MAX_SWEEPS):
        rotated = False
        for i in range(k - 1):
            for j in range(i + 1, k):
                al = 0.0
                be = 0.0
                ga = 0.0
                for t in range(n):
                    al += b[i, t] * b[i, t]
                    be += b[j, t] * b[j, t]
                    ga += b[i, t] * b[j, t]
                if ga == 0.0 or abs(ga) <= 1e-15 * math.sqrt(al * be):
                    continue
                rotated = True
                zeta = (be - al) / (2.0 * ga)
                tt = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                c = 1.0 / math.sqrt(1.0 + tt * tt)
                s = c * tt
                for t in range(n):
                    x = b[i, t]
                    y = b[j, t]
                    b[i, t] = c * x - s * y
                    b[j, t] = s * x + c * y
                for t in range(k):
                    x = g[i, t]
                    y = g[j, t]
                    g[i, t] = c * x - s * y
                    g[j, t] = s * x + c * y
        if not rotated:
            return True
    return False


@njit(cache=True, nogil=True)
def _remembered(memory, m, n, k, g):
    """The rotation ``memory`` holds for a matrix of shape (m, n), orthonormalised into ``g``.

    Returns:
        False (``g`` undefined) when it holds none for that shape, or one that is not nearly
        orthogonal.
    """
    if memory.shape[0] < 2 + k * k or memory[0] != m or memory[1] != n:
        return False
    for i in range(k):
        for t in range(k):
            g[i, t] = memory[2 + i * k + t]
    for i in range(k):  # Gram-Schmidt: the rounding of the ticks before does not add up
        nrm = _off_rows_before(g, i)
        if not 0.25 < nrm < 4.0:  # not a rotation (or not finite): start from the matrix
            return False
        nrm = 1.0 / math.sqrt(nrm)
        for t in range(k):
            g[i, t] *= nrm
    return True


@njit(cache=True, nogil=True)
def _jacobi(a, tr, memory):
    """Jacobi on the rows of ``a`` (``tr``: of ``a.T``); (ok, u, s, vt), ok False: use LAPACK.

    ``memory``: :func:`thin_svd_from`'s (empty: none).
    """
    m, n = a.shape
    k, nn = (n, m) if tr else (m, n)
    b = np.empty((k, nn))  # rotated in place (never a view of the caller's matrix)
    g = np.empty((k, k))
    if _remembered(memory, m, n, k, g):  # b = g a: the last rotation applied
        for i in range(k):
            for t in range(nn):
                acc = 0.0
                for p in range(k):
                    acc += g[i, p] * (a[t, p] if tr else a[p, t])
                b[i, t] = acc
    else:
        for i in range(k):
            for t in range(nn):
                b[i, t] = a[t, i] if tr else a[i, t]
        g[:] = 0.0
        for i in range(k):
            g[i, i] = 1.0
    ok = _orthogonalise_rows(b, g)
    norms = np.empty(k)
    for i in range(k):
        acc = 0.0
        for t in range(nn):
            acc += b[i, t] * b[i, t]
        norms[i] = math.sqrt(acc)
    order = np.arange(k)
    for i in range(k):  # selection sort, descending: k <= JACOBI_MAX_ROWS
        best = i
        for j in range(i + 1, k):
            if norms[order[j]] > norms[order[best]]:
                best = j
        order[i], order[best] = order[best], order[i]
    top = norms[order[0]] if k > 0 else 0.0
    ok = ok and k > 0 and top > 0.0 and math.isfinite(top)
    if ok and memory.shape[0] >= 2 + k * k:
        memory[0] = m
        memory[1] = n
        for i in range(k):
            for t in range(k):
                memory[2 + i * k + t] = g[i, t]
    s = np.empty(k)
    w = np.empty((k, nn))  # the unit rows: right singular vectors of b
    left = np.empty((k, k))  # rows: the left singular vectors of b (g's rows, in order)
    for r in range(k):
        i = order[r]
        for t in range(k):
            left[r, t] = g[i, t]
        if norms[i] > ZERO * top:
            s[r] = norms[i]
            for t in range(nn):
                w[r, t] = b[i, t] / norms[i]
        else:  # no direction of its own: the rows after are zero too (descending)
            s[r] = 0.0
            _complete(w, r)
    if tr:  # a = b^T = w^T diag(s) left
        return ok, np.ascontiguousarray(w.T), s, left
    return ok, np.ascontiguousarray(left.T), s, w


@njit(cache=True, nogil=True)
def _off_rows_before(w, r):
    """Row ``r`` of ``w`` less its projections on rows ``0..r-1`` (orthonormal), in place.

    Returns:
        Its squared norm after.
    """
    nn = w.shape[1]
    for p in range(r):
        d = 0.0
        for t in range(nn):
            d += w[r, t] * w[p, t]
        for t in range(nn):
            w[r, t] -= d * w[p, t]
    nrm = 0.0
    for t in range(nn):
        nrm += w[r, t] * w[r, t]
    return nrm


@njit(cache=True, nogil=True)
def _complete(w, r):
    """Row ``r`` of ``w`` (k, nn): a unit vector orthogonal to its rows ``0..r-1`` (orthonormal).

    The standard basis vector with the largest part outside their span (at least
    ``sqrt((nn - r) / nn)``), orthogonalised against them twice (Gram-Schmidt, re-orthogonalised).
    """
    nn = w.shape[1]
    best = -1.0
    pick = 0
    for t in range(nn):
        part = 1.0  # |e_t|^2 minus its squared projections on the rows before
        for p in range(r):
            part -= w[p, t] * w[p, t]
        if part > best:
            best = part
            pick = t
    for t in range(nn):
        w[r, t] = 1.0 if t == pick else 0.0
    _off_rows_before(w, r)
    nrm = math.sqrt(_off_rows_before(w, r))
    for t in range(nn):
        w[r, t] /= nrm


@njit(cache=True, nogil=True)
def thin_svd(a):
    """``np.linalg.svd(a, full_matrices=False)`` of a small matrix ``a`` (m, n).

    Args:
        a: (m, n) finite matrix.

    Returns:
        ``(u, s, vt)``: u (m, k), s (k,) descending, vt (k, n), k = min(m, n).
    """
    return thin_svd_from(a, np.empty(0))


@njit(cache=True, nogil=True)
def thin_svd_from(a, memory):
    """:func:`thin_svd` of ``a``, started from the rotation of the last one ``memory`` holds.

    When ``memory`` holds the rotation of a matrix of ``a``'s shape (the last call's), Jacobi
    starts from it (see the module docstring) and ``memory`` keeps this one's: a caller that
    takes the SVD of a slowly changing matrix keeps one memory per matrix it follows.

    Args:
        a: (m, n) finite matrix.
        memory: (:data:`MEMORY_SIZE`,) in/out: the last rotation (zeros: none yet); an empty
            array: none kept (:func:`thin_svd`).

    Returns:
        ``(u, s, vt)``: u (m, k), s (k,) descending, vt (k, n), k = min(m, n).
    """
    m, n = a.shape
    k = min(m, n)
    if 0 < k <= JACOBI_MAX_ROWS and m * n <= JACOBI_MAX_ENTRIES:
        ok, u, s, vt = _jacobi(a, m > n, memory)
        if ok:
            return u, s, vt
    if memory.shape[0] > 0:
        memory[0] = -1.0  # LAPACK's: nothing to start the next one from
    return np.linalg.svd(a, full_matrices=False)
