"""Compiled feature-coordinate kernels of the constraints (internal).

Notation (all in the root frame): effector pose (R_e, p_e), target pose (R_t, p_t); their
twists (v, w) with v the velocity of the frame origin. ``G_e`` and ``G_t`` (6, 6) map the
effector and target twists to the rate of the six feature coordinates Xf:
``Xf' = G_e t_e + G_t t_t``. In iTaSC terms ``Jf^-1 = -G_e`` (invertible by construction:
block-triangular with rotation / SO(3)-Jacobian blocks) and ``Jf^-1 Ju = -G_t``, so that
``A = Cq - Cf Jf^-1 Jq = Cf G_e Jq`` and ``B = Cf Jf^-1 Ju = -Cf G_t``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kinematics._kernels import (
    center_of_mass,
    jacobian_selected,
    rot_log,
    select_columns,
    view2,
)

FRAME_ROOT = 0
FRAME_TARGET = 1
FRAME_EFFECTOR = 2


@njit(cache=True, nogil=True)
def _inv_left_jacobian(th, out):
    """Inverse left Jacobian of SO(3) at rotation vector th: th' = Jl^-1 w_spatial."""
    a = math.sqrt(th[0] * th[0] + th[1] * th[1] + th[2] * th[2])
    if a < 1e-6:
        c = 1.0 / 12.0 + a * a / 720.0
    else:
        a = min(a, math.pi - 1e-3)  # the rotation vector is ambiguous at pi
        c = 1.0 / (a * a) - (1.0 + math.cos(a)) / (2.0 * a * math.sin(a))
    x, y, z = th[0], th[1], th[2]
    # I - 1/2 [th]x + c [th]x^2, with [th]x^2 = th th^T - |th|^2 I
    n2 = x * x + y * y + z * z
    out[0, 0] = 1.0 + c * (x * x - n2)
    out[1, 1] = 1.0 + c * (y * y - n2)
    out[2, 2] = 1.0 + c * (z * z - n2)
    out[0, 1] = 0.5 * z + c * x * y
    out[1, 0] = -0.5 * z + c * x * y
    out[0, 2] = -0.5 * y + c * x * z
    out[2, 0] = 0.5 * y + c * x * z
    out[1, 2] = 0.5 * x + c * y * z
    out[2, 1] = -0.5 * x + c * y * z


@njit(cache=True, nogil=True)
def copy_pose_features(te, tt, frame, ge, gt, xf, work):
    """Feature coordinates xf (6,) and maps ge, gt (6, 6) of the CopyPose armature.

    xf[0:3]: target position relative to the effector, on the axes of the reference frame;
    xf[3:6]: rotation vector of R_e^T R_t (the same on the target's and the effector's axes),
    or R_e times it on the root axes. ``work`` is (4, 3, 3) scratch.
    """
    d0 = tt[0, 3] - te[0, 3]
    d1 = tt[1, 3] - te[1, 3]
    d2 = tt[2, 3] - te[2, 3]
    rrel = work[0]
    for i in range(3):
        for j in range(3):
            rrel[i, j] = te[0, i] * tt[0, j] + te[1, i] * tt[1, j] + te[2, i] * tt[2, j]
    th = np.empty(3)
    rot_log(rrel, th)
    jli = work[1]
    _inv_left_jacobian(th, jli)
    # m = Re Jli Re^T : maps (w_t - w_e) to the rate of Re th
    m = work[2]
    tmp = work[3]
    for i in range(3):
        for j in range(3):
            tmp[i, j] = te[i, 0] * jli[0, j] + te[i, 1] * jli[1, j] + te[i, 2] * jli[2, j]
    for i in range(3):
        for j in range(3):
            m[i, j] = tmp[i, 0] * te[j, 0] + tmp[i, 1] * te[j, 1] + tmp[i, 2] * te[j, 2]
    ge[:, :] = 0.0
    gt[:, :] = 0.0
    # Position rows: xf_p = R_F^T d ; rate = R_F^T (v_t - v_e) + R_F^T [d]x w_F
    dx = np.array([[0.0, -d2, d1], [d2, 0.0, -d0], [-d1, d0, 0.0]])
    for i in range(3):
        if frame == FRAME_ROOT:
            xf[i] = (d0, d1, d2)[i]
            ge[i, i] = -1.0
            gt[i, i] = 1.0
        else:
            rf = te if frame == FRAME_EFFECTOR else tt
            xf[i] = rf[0, i] * d0 + rf[1, i] * d1 + rf[2, i] * d2
            for j in range(3):
                ge[i, j] = -rf[j, i]
                gt[i, j] = rf[j, i]
            for j in range(3):
                s = rf[0, i] * dx[0, j] + rf[1, i] * dx[1, j] + rf[2, i] * dx[2, j]
                if frame == FRAME_EFFECTOR:
                    ge[i, 3 + j] = s
                else:
                    gt[i, 3 + j] = s
    # Rotation rows
    if frame == FRAME_ROOT:
        # xf_r = Re th ; rate = [w_e]x Re th + M (w_t - w_e) = -[Re th]x w_e + M (w_t - w_e)
        b0 = te[0, 0] * th[0] + te[0, 1] * th[1] + te[0, 2] * th[2]
        b1 = te[1, 0] * th[0] + te[1, 1] * th[1] + te[1, 2] * th[2]
        b2 = te[2, 0] * th[0] + te[2, 1] * th[1] + te[2, 2] * th[2]
        xf[3], xf[4], xf[5] = b0, b1, b2
        bx = np.array([[0.0, -b2, b1], [b2, 0.0, -b0], [-b1, b0, 0.0]])
        for i in range(3):
            for j in range(3):
                ge[3 + i, 3 + j] = -bx[i, j] - m[i, j]
                gt[3 + i, 3 + j] = m[i, j]
    else:
        # xf_r = th ; rate = Jli Re^T (w_t - w_e)
        xf[3], xf[4], xf[5] = th[0], th[1], th[2]
        for i in range(3):
            for j in range(3):
                s = jli[i, 0] * te[j, 0] + jli[i, 1] * te[j, 1] + jli[i, 2] * te[j, 2]
                ge[3 + i, 3 + j] = -s
                gt[3 + i, 3 + j] = s


@njit(cache=True, nogil=True)
def select_rows(g, sel, jac, has_jac, a_out, accumulate):
    """a_out[r, :] (+)= g[sel[r], :] @ jac for each selected row (jac (6, n))."""
    n = a_out.shape[1]
    for r in range(sel.shape[0]):
        k = sel[r]
        for j in range(n):
            s = 0.0
            if has_jac:
                for t in range(6):
                    s += g[k, t] * jac[t, j]
            if accumulate:
                a_out[r, j] += s
            else:
                a_out[r, j] = s


@njit(cache=True, nogil=True)
def copy_pose_rows(ge, gt, xf, sel, jac, tjac, has_tjac, gain, weight, a, b, y, ydot, wy):
    """Write CopyPose's selected rows into a, b, y, ydot, wy.

    A = Cf G_e J (+ Cf G_t J_t), B = -Cf G_t, y = Cf Xf, y'_d = -K y (yd = 0), Wy = weight.
    """
    n = a.shape[1]
    for r in range(sel.shape[0]):
        k = sel[r]
        for j in range(n):
            s = 0.0
            for t in range(6):
                s += ge[k, t] * jac[t, j]
            if has_tjac:
                for t in range(6):
                    s += gt[k, t] * tjac[t, j]
            a[r, j] = s
        for t in range(6):
            b[r, t] = -gt[k, t]
        y[r] = xf[k]
        ydot[r] = -gain * xf[k]
        wy[r] = weight


@njit(cache=True, nogil=True)
def copy_pose_update(
    te, tt, frame, ge, gt, xf, work, sel, jac, tjac, has_tjac, gain, weight, a, b, y, ydot, wy
):  # pragma: no cover - compiled
    """:func:`copy_pose_features` then :func:`copy_pose_rows`: the CopyPose rows in one call."""
    copy_pose_features(te, tt, frame, ge, gt, xf, work)
    copy_pose_rows(ge, gt, xf, sel, jac, tjac, has_tjac, gain, weight, a, b, y, ydot, wy)


#: Values of a CopyPose's tick record before its Jacobian (see :func:`pose_record`).
POSE_RECORD_HEAD = 1 + 16 + 36 + 36 + 6 + 36


def pose_record_size(n: int) -> int:
    """Values of a CopyPose's tick record for ``n`` joints (see :func:`pose_record`)."""
    return POSE_RECORD_HEAD + 6 * n


@njit(cache=True, nogil=True)
def pose_record(rec, n):  # pragma: no cover - compiled
    """The arrays of a CopyPose's tick record ``rec`` (:func:`pose_record_size` values).

    A pose task's tick reads and writes its values in one float64 array (views of it), so that
    a scene's compiled tick finds them in its own buffer: the reference frame's code, the
    target pose, the maps ``G_e`` and ``G_t``, the feature coordinates, the features' work
    array and the effector's Jacobian.

    Returns:
        ``(frame (1,), tt (4, 4), ge (6, 6), gt (6, 6), xf (6,), work (4, 3, 3), jac (6, n))``.
    """
    # reshaped, C-ordered: the types of the constraint's own arrays, which it passes when it
    # updates itself (a strided view would be another layout: a second compiled variant of
    # the whole pose task's call tree)
    frame = rec[0:1]
    tt = rec[1:17].reshape((4, 4))
    ge = rec[17:53].reshape((6, 6))
    gt = rec[53:89].reshape((6, 6))
    xf = rec[89:95]
    work = rec[95:131].reshape((4, 3, 3))
    jac = rec[POSE_RECORD_HEAD : POSE_RECORD_HEAD + 6 * n].reshape((6, n))
    return frame, tt, ge, gt, xf, work, jac


def joint_record_size(k: int) -> int:
    """Values of a JointValue's tick record for ``k`` joints (see :func:`joint_record`)."""
    return 4 * k


@njit(cache=True, nogil=True)
def joint_record(rec):  # pragma: no cover - compiled
    """The arrays of a JointValue's tick record ``rec`` (4 k,): values, rates, vmax, joints.

    Returns:
        ``(values (k,) [rad or m], rates (k,) [/s], vmax (k,) [/s], idx (k,))``: the desired
        positions and rates, the joints' velocity limits and their columns (integers, as
        floats: one float64 record).
    """
    k = rec.shape[0] // 4
    return rec[0:k], rec[k : 2 * k], rec[2 * k : 3 * k], rec[3 * k : 4 * k]


@njit(cache=True)
def joint_value_rows(
    q, idx, values, rates, vmax, gain, weight, resolves, a, b, y, ydot, wy
):  # pragma: no cover - compiled
    """The rows of a JointValue (``y = q_i``, ``A`` a selection, ``B = 0``) in one call.

    ``y'_d = rate + gain (value - q_i)`` for each joint ``idx[r]`` of ``q`` (n,); a term that
    ``resolves`` redundancy asks no faster than the joints go: ``y'_d`` scaled so that no row
    is above its joint's ``vmax``.
    """
    a[:, :] = 0.0
    b[:, :] = 0.0
    for r in range(idx.shape[0]):
        j = int(idx[r])
        a[r, j] = 1.0
        qi = q[j]
        y[r] = qi
        ydot[r] = rates[r] + gain * (values[r] - qi)
        wy[r] = weight
    if resolves:  # a preference asks no faster than the joints go (scaled)
        scale = 1.0
        for r in range(idx.shape[0]):
            if abs(ydot[r]) * scale > vmax[r]:
                scale = vmax[r] / abs(ydot[r])
        if scale < 1.0:
            for r in range(idx.shape[0]):
                ydot[r] *= scale


COM_RECORD_HEAD = 5
"""Values of a CenterOfMass's tick record before its axes (see :func:`com_record`)."""


def com_record_size(k: int, n: int, n_links: int, n_full: int) -> int:
    """Values of a CenterOfMass's tick record (see :func:`com_record`).

    Args:
        k: its axes.
        n: the tree's active joints.
        n_links: the tree's links.
        n_full: the tree's movable joints (its full configuration).
    """
    return COM_RECORD_HEAD + 6 * k + 3 * n + 4 * n_links + 3 * n_full


@njit(cache=True, nogil=True)
def com_record(rec, k, n, n_links, n_full):  # pragma: no cover - compiled
    """The arrays of a CenterOfMass's tick record ``rec`` (:func:`com_record_size` values).

    Returns:
        ``(head (2,): tracking (0/1), k; com (3,) [m]; axes (6, k): the root axes' indices
        (as floats), the target, the band's lower and upper bounds, its inner edges [m];
        jac (3, n); sub (n_links, 4) and jfull (3, n_full): work arrays)``.
    """
    head = rec[0:2]
    com = rec[2:5]
    o = COM_RECORD_HEAD
    axes = view2(rec, o, 6, k)
    o += 6 * k
    jac = view2(rec, o, 3, n)
    o += 3 * n
    sub = view2(rec, o, n_links, 4)
    o += 4 * n_links
    jfull = view2(rec, o, 3, n_full)
    return head, com, axes, jac, sub, jfull


@njit(cache=True, nogil=True)
def smoothstep(h):  # pragma: no cover - compiled
    """``3 h^2 - 2 h^3`` of ``h`` clipped to [0, 1]: 0 -> 0, 1 -> 1, zero slope at both ends."""
    h = min(1.0, max(0.0, h))
    return h * h * (3.0 - 2.0 * h)


@njit(cache=True)
def com_rows(
    ints, floats, poses, cols, rec, gain, weight, a, b, y, ydot, wy
):  # pragma: no cover - compiled
    """The rows of a CenterOfMass on its record ``rec``, from the tree's computed ``poses``.

    Its centre of mass and Jacobian (the tree's model ``ints``, ``floats``, its active columns
    ``cols``), then one row per axis: toward the target (tracking), or, in band mode, from the
    inner edge it is past, weighted by ``smoothstep`` of how far into the margin (0 inside).
    """
    k = a.shape[0]
    n = cols.shape[0]
    n_links = poses.shape[0]
    n_full = (rec.shape[0] - COM_RECORD_HEAD - 6 * k - 3 * n - 4 * n_links) // 3
    head, com, axes, jac, sub, jfull = com_record(rec, k, n, n_links, n_full)
    center_of_mass(poses, ints, floats, sub, com, jfull)
    select_columns(jfull, cols, jac)
    b[:, :] = 0.0
    for r in range(k):
        ax = int(axes[0, r])
        for j in range(n):
            a[r, j] = jac[ax, j]
        c = com[ax]
        y[r] = c
        if head[0] != 0.0:
            ydot[r] = gain * (axes[1, r] - c)
            wy[r] = weight
            continue
        lo, hi = axes[2, r], axes[3, r]
        edge_lo, edge_hi = axes[4, r], axes[5, r]
        if c < edge_lo:
            edge = edge_lo
            h = (edge_lo - c) / (edge_lo - lo) if edge_lo > lo else 1.0
        elif c > edge_hi:
            edge = edge_hi
            h = (c - edge_hi) / (hi - edge_hi) if hi > edge_hi else 1.0
        else:
            ydot[r] = 0.0
            wy[r] = 0.0
            continue
        ydot[r] = gain * (edge - c)
        wy[r] = weight * smoothstep(h)


@njit(cache=True)
def copy_pose_tick(
    link,
    ints,
    floats,
    poses,
    full,
    cols,
    tt,
    frame,
    ge,
    gt,
    xf,
    work,
    sel,
    jac,
    gain,
    weight,
    a,
    b,
    y,
    ydot,
    wy,
):  # pragma: no cover - compiled
    """A CopyPose's tick toward a set target pose in one call: its effector's Jacobian, rows.

    The Jacobian of link ``link`` at its origin from the computed ``poses`` (the tree's model
    ``ints``, ``floats``, its work array ``full`` and active columns ``cols``:
    :meth:`~itasc_ros.core.kinematics.tree.KinematicTree.kernel_arrays`) into ``jac`` (6, n),
    then :func:`copy_pose_update` of that link's pose and the target ``tt`` (4, 4).
    """
    jacobian_selected(poses, link, ints, floats, poses[link, :3, 3], full, cols, jac)
    copy_pose_update(
        poses[link], tt, frame, ge, gt, xf, work, sel, jac, jac, False, gain, weight, a, b, y,
        ydot, wy,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def clamp_pose_feedback(  # pragma: no cover - compiled
    ydot, orient, linear, angular, twist, gain, lin_acc, ang_acc, fed
):
    """Clamp a pose error's feedback: each part's norm at most its speed, direction kept.

    The position rows of ``ydot`` (the feedback ``K e``) to at most ``max(linear, |v|)``
    [m/s], the orientation rows (``orient``) to at most ``max(angular, |w|)`` [rad/s],
    ``(v, w) = twist`` the target's own twist: the feedback can always pull back as fast as
    the target moves. With accelerations (``lin_acc`` [m/s^2], ``ang_acc`` [rad/s^2], ``inf``:
    none) and ``gain`` K > 0, also at most the braking curve ``sqrt(acc |e|)`` of the error
    ``|e| = |K e| / K`` (braking at half of ``acc``: room for the joints' own limits), plus the
    target's speed when its twist is not fed forward (``fed`` False: the feedback carries
    it): the error then closes no faster than it can stop, and an acceleration-limited
    feedback stops at the target instead of overshooting it.
    """
    v2 = twist[0] * twist[0] + twist[1] * twist[1] + twist[2] * twist[2]
    w2 = twist[3] * twist[3] + twist[4] * twist[4] + twist[5] * twist[5]
    lin2 = 0.0
    ang2 = 0.0
    for r in range(ydot.shape[0]):
        if orient[r]:
            ang2 += ydot[r] * ydot[r]
        else:
            lin2 += ydot[r] * ydot[r]
    v, w = math.sqrt(v2), math.sqrt(w2)
    linear = max(linear, v)
    angular = max(angular, w)
    if gain > 0.0:  # the part that closes the error brakes in time; without feed-forward the
        # feedback also carries the target's own speed
        linear = min(linear, math.sqrt(lin_acc * math.sqrt(lin2) / gain) + (0.0 if fed else v))
        angular = min(angular, math.sqrt(ang_acc * math.sqrt(ang2) / gain) + (0.0 if fed else w))
    fl = linear / math.sqrt(lin2) if lin2 > linear * linear else 1.0
    fa = angular / math.sqrt(ang2) if ang2 > angular * angular else 1.0
    for r in range(ydot.shape[0]):
        ydot[r] *= fa if orient[r] else fl


@njit(cache=True, nogil=True)
def limit_pose_demand(rhs, a, u, b, dtw, orient, linear, angular):  # pragma: no cover - compiled
    """Keep a pose task's demanded velocity near what the last command gives the task.

    ``expected = A u + B dtw``: the task velocity of the last command ``u`` (n,) at this
    tick's ``A``, plus the change of the target's twist since the last solve (``dtw`` (6,):
    the target's own acceleration is not limited). The rest of the change,
    ``rhs - expected``, is kept at most ``linear`` [m/s] in norm over the position rows and
    ``angular`` [rad/s] over the orientation rows (``orient``), its direction kept; ``rhs``
    (m,) is written in place.
    """
    m = rhs.shape[0]
    lin2 = 0.0
    ang2 = 0.0
    for r in range(m):
        d = rhs[r] - _expected(a, u, b, dtw, r)
        if orient[r]:
            ang2 += d * d
        else:
            lin2 += d * d
    fl = linear / math.sqrt(lin2) if lin2 > linear * linear else 1.0
    fa = angular / math.sqrt(ang2) if ang2 > angular * angular else 1.0
    if fl == 1.0 and fa == 1.0:
        return
    for r in range(m):
        f = fa if orient[r] else fl
        if f < 1.0:
            e = _expected(a, u, b, dtw, r)
            rhs[r] = e + (rhs[r] - e) * f


@njit(cache=True, nogil=True)
def limit_pose_demand_seen(
    rhs, a, u, b, twist, seen, dtw, orient, linear, angular
):  # pragma: no cover - compiled
    """:func:`limit_pose_demand` with ``dtw = twist - seen`` (6,); then ``seen`` = ``twist``."""
    for j in range(6):
        dtw[j] = twist[j] - seen[j]
    limit_pose_demand(rhs, a, u, b, dtw, orient, linear, angular)
    for j in range(6):
        seen[j] = twist[j]


@njit(cache=True, nogil=True)
def _expected(a, u, b, dtw, r):  # pragma: no cover - compiled
    """Row r of ``A u + B dtw``."""
    e = 0.0
    for j in range(u.shape[0]):
        e += a[r, j] * u[j]
    for j in range(6):
        e += b[r, j] * dtw[j]
    return e
