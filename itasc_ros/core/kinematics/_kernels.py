"""Compiled kernels of the kinematic tree and the control tick (numba, cached on disk).

Internal: the public API is :class:`itasc_ros.core.kinematics.KinematicTree`. The kernels write
into preallocated arrays and allocate nothing.

Joint arrays (one entry per URDF joint, parents before children; joint k moves link k + 1,
link 0 is the root):
    parent (nj,) int64: parent link index.
    origin (nj, 4, 4): joint frame in the parent link frame.
    jtype (nj,) int64: 0 fixed, 1 revolute/continuous, 2 prismatic.
    axis (nj, 3): unit axis in the joint frame.
    qidx (nj,) int64: index into the full active joint vector (-1 for fixed).
    mult, offs (nj,): value = mult * q[qidx] + offs (1, 0 unless mimic).

Link arrays: ``chain`` (nl, width) int64, the joints from the root down to each link, the first
``chain_len`` (nl,) of each row; ``mass`` (nl,) [kg] and ``com`` (nl, 3) [m, link frame], the
links' inertials.

These constant arrays are the tree's *model* (Pinocchio's Model / Data split: the link poses and
work arrays are its data), packed in two buffers (:func:`model_arrays` slices them back): a
compiled call pays for each array it is given, so the kernels called from Python take the two
buffers, not eleven arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numpy.lib.stride_tricks import as_strided

INPUT_VECTOR = types.Array(types.float64, 1, "A", readonly=True, aligned=False)
"""The type of an input's values in the kernels that check them (any (m,) float64 array): one
compiled variant takes what callers give (a message's read-only buffer, a column of a matrix, a
slice, a plain vector), so a node's first message of a new kind never compiles in its callback
and ``python -m itasc_ros.tools.warm_cache`` covers them all."""
_VECTOR = types.Array(types.float64, 1, "C")
_INDICES = types.Array(types.int64, 1, "C")


@njit(cache=True, nogil=True, inline="always")  # inlined: no variant per constant shape
def view2(buf, start, rows, cols):  # pragma: no cover - compiled
    """The (rows, cols) row-major view of ``buf[start:start + rows * cols]`` (1-D, contiguous).

    What ``reshape`` gives, without its run-time call (a packed buffer's views are made in
    every tick).
    """
    s = buf.itemsize
    return as_strided(buf[start : start + rows * cols], (rows, cols), (cols * s, s))


@njit(cache=True, nogil=True, inline="always")
def view3(buf, start, d0, d1, d2):  # pragma: no cover - compiled
    """The (d0, d1, d2) row-major view of ``buf[start:]`` (1-D, contiguous): see :func:`view2`."""
    s = buf.itemsize
    return as_strided(buf[start : start + d0 * d1 * d2], (d0, d1, d2), (d1 * d2 * s, d2 * s, s))


#: Values of the int buffer before its arrays: nj, nl, width (see :func:`model_arrays`).
MODEL_HEAD = 3


def model_sizes(nj: int, nl: int, width: int) -> tuple[int, int]:
    """The lengths of the model's int and float buffers for ``nj`` joints and ``nl`` links."""
    return MODEL_HEAD + 3 * nj + nl + nl * width, 21 * nj + 4 * nl


@njit(cache=True, nogil=True)
def model_arrays(ints, floats):  # pragma: no cover - compiled
    """The model's arrays, views of its packed buffers ``ints`` (int64) and ``floats``.

    ``ints`` holds nj, nl and width, then parent, jtype, qidx (nj,), chain_len (nl,) and chain
    (nl, width); ``floats`` holds origin (nj, 4, 4), axis (nj, 3), mult, offs (nj,), mass (nl,)
    and com (nl, 3), each after the other (lengths: :func:`model_sizes`).

    Returns:
        ``(parent, origin, jtype, axis, qidx, mult, offs, chain, chain_len, mass, com)``.
    """
    nj, nl, w = ints[0], ints[1], ints[2]
    i = MODEL_HEAD
    parent = ints[i : i + nj]
    jtype = ints[i + nj : i + 2 * nj]
    qidx = ints[i + 2 * nj : i + 3 * nj]
    i += 3 * nj
    chain_len = ints[i : i + nl]
    chain = view2(ints, i + nl, nl, w)
    origin = view3(floats, 0, nj, 4, 4)
    f = 16 * nj
    axis = view2(floats, f, nj, 3)
    f += 3 * nj
    mult = floats[f : f + nj]
    offs = floats[f + nj : f + 2 * nj]
    f += 2 * nj
    mass = floats[f : f + nl]
    com = view2(floats, f + nl, nl, 3)
    return parent, origin, jtype, axis, qidx, mult, offs, chain, chain_len, mass, com


@njit(cache=True, fastmath=False, nogil=True)
def forward_all(q, parent, origin, jtype, axis, qidx, mult, offs, out):
    """Poses (n_links, 4, 4) of every link in the root frame, written into ``out``."""
    for i in range(4):
        for j in range(4):
            out[0, i, j] = 1.0 if i == j else 0.0
    nj = parent.shape[0]
    m = np.empty((4, 4))
    r = np.empty((3, 3))
    for k in range(nj):
        p = parent[k]
        # m = out[p] @ origin[k]
        for i in range(3):
            for j in range(4):
                s = 0.0
                for t in range(4):
                    s += out[p, i, t] * origin[k, t, j]
                m[i, j] = s
        c = k + 1
        jt = jtype[k]
        if jt == 0:
            for i in range(3):
                for j in range(4):
                    out[c, i, j] = m[i, j]
        else:
            val = mult[k] * q[qidx[k]] + offs[k]
            ax, ay, az = axis[k, 0], axis[k, 1], axis[k, 2]
            if jt == 1:
                ca = math.cos(val)
                sa = math.sin(val)
                v = 1.0 - ca
                r[0, 0] = ca + ax * ax * v
                r[0, 1] = ax * ay * v - az * sa
                r[0, 2] = ax * az * v + ay * sa
                r[1, 0] = ay * ax * v + az * sa
                r[1, 1] = ca + ay * ay * v
                r[1, 2] = ay * az * v - ax * sa
                r[2, 0] = az * ax * v - ay * sa
                r[2, 1] = az * ay * v + ax * sa
                r[2, 2] = ca + az * az * v
                for i in range(3):
                    for j in range(3):
                        out[c, i, j] = m[i, 0] * r[0, j] + m[i, 1] * r[1, j] + m[i, 2] * r[2, j]
                    out[c, i, 3] = m[i, 3]
            else:
                for i in range(3):
                    for j in range(3):
                        out[c, i, j] = m[i, j]
                    out[c, i, 3] = m[i, 3] + val * (m[i, 0] * ax + m[i, 1] * ay + m[i, 2] * az)
        out[c, 3, 0] = 0.0
        out[c, 3, 1] = 0.0
        out[c, 3, 2] = 0.0
        out[c, 3, 3] = 1.0


@njit(cache=True, fastmath=False, nogil=True)
def jacobian_full(poses, link, chain, chain_len, jtype, axis, qidx, mult, point, out):
    """Geometric Jacobian (6, n_full) of ``link`` at ``point`` (root frame), into ``out``.

    Rows 0-2: linear velocity of the point [m/s per unit]; rows 3-5: angular velocity
    [rad/s per unit]; both in the root frame. ``chain[link, :chain_len[link]]`` lists the
    joints between the root and the link.
    """
    out[:, :] = 0.0
    px, py, pz = point[0], point[1], point[2]
    for i in range(chain_len[link]):
        k = chain[link, i]
        jt = jtype[k]
        if jt == 0:
            continue
        c = k + 1
        ax, ay, az = axis[k, 0], axis[k, 1], axis[k, 2]
        zx = poses[c, 0, 0] * ax + poses[c, 0, 1] * ay + poses[c, 0, 2] * az
        zy = poses[c, 1, 0] * ax + poses[c, 1, 1] * ay + poses[c, 1, 2] * az
        zz = poses[c, 2, 0] * ax + poses[c, 2, 1] * ay + poses[c, 2, 2] * az
        col = qidx[k]
        g = mult[k]
        if jt == 1:
            dx = px - poses[c, 0, 3]
            dy = py - poses[c, 1, 3]
            dz = pz - poses[c, 2, 3]
            out[0, col] += g * (zy * dz - zz * dy)
            out[1, col] += g * (zz * dx - zx * dz)
            out[2, col] += g * (zx * dy - zy * dx)
            out[3, col] += g * zx
            out[4, col] += g * zy
            out[5, col] += g * zz
        else:
            out[0, col] += g * zx
            out[1, col] += g * zy
            out[2, col] += g * zz


@njit(cache=True, fastmath=False, nogil=True)
def com_full(poses, mass, com, parent, jtype, axis, qidx, mult, sub, out_c, out_j):
    """Centre of mass (3,) and its Jacobian (3, n_full) in the root frame; returns the mass.

    ``mass`` (n_links,) [kg] and ``com`` (n_links, 3) [m, link frame] are the links'
    inertials; ``sub`` (n_links, 4) is a work array: each link's subtree mass-weighted
    position sum and mass. A column is the velocity of the centre of mass per unit joint
    velocity: ``z x (s - m p) / M`` (revolute; subtree sum s and mass m below the joint at p
    with axis z) or ``z m / M`` (prismatic).
    """
    nl = poses.shape[0]
    for lk in range(nl):
        mk = mass[lk]
        for i in range(3):
            w = poses[lk, i, 3]
            for t in range(3):
                w += poses[lk, i, t] * com[lk, t]
            sub[lk, i] = mk * w
        sub[lk, 3] = mk
    out_j[:, :] = 0.0
    nj = parent.shape[0]
    for k in range(nj - 1, -1, -1):
        c = k + 1
        jt = jtype[k]
        if jt != 0:
            ax, ay, az = axis[k, 0], axis[k, 1], axis[k, 2]
            zx = poses[c, 0, 0] * ax + poses[c, 0, 1] * ay + poses[c, 0, 2] * az
            zy = poses[c, 1, 0] * ax + poses[c, 1, 1] * ay + poses[c, 1, 2] * az
            zz = poses[c, 2, 0] * ax + poses[c, 2, 1] * ay + poses[c, 2, 2] * az
            col = qidx[k]
            g = mult[k]
            ms = sub[c, 3]
            if jt == 1:
                dx = sub[c, 0] - ms * poses[c, 0, 3]
                dy = sub[c, 1] - ms * poses[c, 1, 3]
                dz = sub[c, 2] - ms * poses[c, 2, 3]
                out_j[0, col] += g * (zy * dz - zz * dy)
                out_j[1, col] += g * (zz * dx - zx * dz)
                out_j[2, col] += g * (zx * dy - zy * dx)
            else:
                out_j[0, col] += g * zx * ms
                out_j[1, col] += g * zy * ms
                out_j[2, col] += g * zz * ms
        p = parent[k]
        for i in range(4):
            sub[p, i] += sub[c, i]
    total = sub[0, 3]
    if total > 0.0:
        for i in range(3):
            out_c[i] = sub[0, i] / total
        for i in range(3):
            for j in range(out_j.shape[1]):
                out_j[i, j] /= total
    else:
        out_c[:] = 0.0
    return total


@njit(cache=True, nogil=True)
def select_columns(full, sel, out):
    """out[:, i] = full[:, sel[i]] for a (6, n_full) Jacobian; no allocation."""
    for i in range(sel.shape[0]):
        s = sel[i]
        for r in range(full.shape[0]):
            out[r, i] = full[r, s]


@njit(cache=True, nogil=True)
def jacobian_selected(poses, link, ints, floats, point, full, sel, out):  # pragma: no cover
    """The Jacobian of ``link`` at ``point`` into ``out`` (6, n): the active columns ``sel``.

    :func:`jacobian_full` of the model ``ints``, ``floats`` into ``full`` (6, n_full), then
    its columns ``sel`` into ``out``.
    """
    _, _, jtype, axis, qidx, mult, _, chain, chain_len, _, _ = model_arrays(ints, floats)
    jacobian_full(poses, link, chain, chain_len, jtype, axis, qidx, mult, point, full)
    select_columns(full, sel, out)


@njit(cache=True, fastmath=False)
def forward_selected(q, sel, bound, q_full, ints, floats, out):  # pragma: no cover - compiled
    """Every link's pose into ``out`` for the active joints' positions ``q`` (n,).

    :func:`forward_all` of the model ``ints``, ``floats``, with ``q`` at ``sel`` of ``q_full``.

    Returns:
        False (nothing written) when a value of ``q`` is NaN, Inf or above ``bound``.
    """
    for i in range(q.shape[0]):
        if not (abs(q[i]) <= bound):  # False for NaN too
            return False
    for i in range(q.shape[0]):
        q_full[sel[i]] = q[i]
    parent, origin, jtype, axis, qidx, mult, offs, _, _, _, _ = model_arrays(ints, floats)
    forward_all(q_full, parent, origin, jtype, axis, qidx, mult, offs, out)
    return True


@njit(cache=True, nogil=True)
def center_of_mass(poses, ints, floats, sub, out_c, out_j):  # pragma: no cover - compiled
    """:func:`com_full` of the model ``ints``, ``floats``; returns the mass [kg]."""
    parent, _, jtype, axis, qidx, mult, _, _, _, mass, com = model_arrays(ints, floats)
    return com_full(poses, mass, com, parent, jtype, axis, qidx, mult, sub, out_c, out_j)


@njit(types.boolean(INPUT_VECTOR, _INDICES, types.float64, _VECTOR), cache=True)
def gather_within(values, idx, bound, out):
    """``out[i] = values[idx[i]]``; False when one of them is NaN, Inf or above ``bound``."""
    ok = True
    for i in range(idx.shape[0]):
        v = values[idx[i]]
        out[i] = v
        if not (abs(v) <= bound):  # False for NaN too
            ok = False
    return ok


@njit(types.boolean(INPUT_VECTOR, types.float64), cache=True, nogil=True)
def all_finite(q, bound):
    """True when every value is finite and |value| <= bound."""
    for x in q:
        if not (abs(x) <= bound):  # False for NaN too
            return False
    return True


@njit(cache=True)
def any_nonzero(a):
    """Whether the (n,) array ``a`` has an element other than 0.

    ``a.any()`` without numpy's reduction machinery (its dispatch costs more than the loop on
    a short array), in every control tick.
    """
    for i in range(a.shape[0]):
        if a[i] != 0.0:
            return True
    return False


@njit(cache=True, nogil=True)
def rot_log(r, out):
    """Rotation vector of a (3, 3) rotation (angle in [0, pi]) into out (3,)."""
    t = r[0, 0] + r[1, 1] + r[2, 2]
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        qx = (r[2, 1] - r[1, 2]) / s
        qy = (r[0, 2] - r[2, 0]) / s
        qz = (r[1, 0] - r[0, 1]) / s
        qw = 0.25 * s
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2]) * 2.0
        qx = 0.25 * s
        qy = (r[0, 1] + r[1, 0]) / s
        qz = (r[0, 2] + r[2, 0]) / s
        qw = (r[2, 1] - r[1, 2]) / s
    elif r[1, 1] > r[2, 2]:
        s = math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2]) * 2.0
        qx = (r[0, 1] + r[1, 0]) / s
        qy = 0.25 * s
        qz = (r[1, 2] + r[2, 1]) / s
        qw = (r[0, 2] - r[2, 0]) / s
    else:
        s = math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1]) * 2.0
        qx = (r[0, 2] + r[2, 0]) / s
        qy = (r[1, 2] + r[2, 1]) / s
        qz = 0.25 * s
        qw = (r[1, 0] - r[0, 1]) / s
    if qw < 0.0:
        qx, qy, qz, qw = -qx, -qy, -qz, -qw
    vn = math.sqrt(qx * qx + qy * qy + qz * qz)
    if vn < 1e-15:
        out[0] = 2.0 * qx
        out[1] = 2.0 * qy
        out[2] = 2.0 * qz
        return
    ang = 2.0 * math.atan2(vn, qw)
    f = ang / vn
    out[0] = qx * f
    out[1] = qy * f
    out[2] = qz * f


@njit(cache=True, nogil=True)
def is_rigid_transform(p, tol):
    """True when ``p`` (4, 4) is finite, its rotation orthonormal within ``tol`` and proper.

    The checks of a target pose set through the API, without numpy's small-array calls
    (``R^T R - I``, ``det R``), whose dispatch dominates at this size.
    """
    for i in range(4):
        for j in range(4):
            if not math.isfinite(p[i, j]):
                return False
    for i in range(3):
        for j in range(3):
            d = p[0, i] * p[0, j] + p[1, i] * p[1, j] + p[2, i] * p[2, j]
            if abs(d - (1.0 if i == j else 0.0)) > tol:
                return False
    det = (
        p[0, 0] * (p[1, 1] * p[2, 2] - p[1, 2] * p[2, 1])
        - p[0, 1] * (p[1, 0] * p[2, 2] - p[1, 2] * p[2, 0])
        + p[0, 2] * (p[1, 0] * p[2, 1] - p[1, 1] * p[2, 0])
    )
    return det > 0.0


@njit(cache=True, nogil=True)
def start_active_set(wy, wcand, ineq):
    """Keep each row's weight in ``wcand`` and switch the inequality rows off (wy = 0)."""
    for r in range(wy.shape[0]):
        wcand[r] = wy[r]
        if ineq[r]:
            wy[r] = 0.0


@njit(cache=True, nogil=True)
def update_active_set(a, rhs, wy, wcand, ineq, qdot, scale, tol):
    """One step of a primal active set for the inequality rows, given the solution ``qdot``.

    An inequality row r (``ineq[r]``) is ``A[r] q' >= rhs[r]`` with candidate weight
    ``wcand[r]``; while off its ``wy[r]`` is 0. The rows are checked on the solution before
    the velocity scaling (``qdot / scale``: the scaling slows every row alike and would make
    rows that hold look violated). If a row that is off is violated
    (``A[r] q' < rhs[r] - tol``), the most violated one is switched on (solved as an equality
    with its weight). Otherwise, if a row that is on holds with room
    (``A[r] q' > rhs[r] + tol``: it pulls the solution back toward its bound, which an
    inequality must not do), the one that pulls most is switched off. One change per step, as
    a primal active-set method does. Returns True when a row changed.
    """
    add = -1
    add_gap = tol
    drop = -1
    drop_gap = -tol
    for r in range(a.shape[0]):
        if not ineq[r] or wcand[r] <= 0.0:
            continue
        s = 0.0
        for j in range(a.shape[1]):
            s += a[r, j] * qdot[j]
        gap = rhs[r] - s / scale
        if wy[r] > 0.0:
            if gap < drop_gap:
                drop_gap = gap
                drop = r
        elif gap > add_gap:
            add_gap = gap
            add = r
    if add >= 0:
        wy[add] = wcand[add]
        return True
    if drop >= 0:
        wy[drop] = 0.0
        return True
    return False
