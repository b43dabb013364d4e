"""Compiled kernel of the position IK of one effector (numba, cached on disk).

Internal: the public API is :func:`itasc_ros.core.ik.solve_ik`. One call of :func:`ik_iterate`
runs up to ``max_iters`` iterations of the whole loop -- FK of the chain, tip Jacobian, pose
error, convergence test, damped Levenberg-Marquardt step, projection onto the joint limits,
stall detection and random restarts -- on flat arrays prepared once per chain; the caller
checks the clock between calls. Nothing is allocated.

Chain arrays (one entry per movable joint between the root and the tip, root first; fixed
joints are folded into the next entry's origin):
    jt (k,) int64: 1 revolute/continuous, 2 prismatic.
    col (k,) int64: column of the joint in ``q`` (-1: held at ``offs``).
    org (k, 3, 4): joint frame in the frame after the previous movable joint (rows 0-2).
    ax (k, 3): unit axis in the joint frame.
    mult, offs (k,): joint value = mult * q[col] + offs (1, 0 unless mimic; 0, value if held).
    tip (3, 4): tip link frame in the frame after the last movable joint.

State (``state``, float64) indices are the ``S_*`` constants; ``rng`` (1,) uint64 is a
splitmix64 generator state, so restarts are reproducible from a seed.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kinematics._kernels import rot_log

# Parameters (``params``).
P_LAMBDA_MIN = 0
P_LAMBDA_SCALE = 1
P_MAX_STEP = 2
P_STALL_RATIO = 3
P_STALL_WINDOW = 4
P_RESTART_ITERS = 5
P_ACTIVE_SET = 6
P_SIZE = 7

# State (``state``).
S_ITERS = 0  # iterations run in total
S_LOCAL = 1  # iterations since the last (re)start
S_RESTARTS = 2  # restarts made
S_REF = 3  # error norm at the start of the current stall window
S_BEST = 4  # smallest error norm seen (of ``best_q``)
S_NORM = 5  # error norm at the last evaluation
S_RESTART_NOW = 6  # 1: restart before the next iteration
S_SIZE = 7

#: Rounds of re-solving a step with the joints it pushed to a limit held there
#: (:func:`bounded_step` in the constraint-set loops).
BOUNDED_ROUNDS = 1

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)


@njit(cache=True, nogil=True)
def uniform(rng):
    """A float in [0, 1) from the splitmix64 state ``rng`` (1,) uint64 (advanced)."""
    rng[0] = rng[0] + _GOLDEN
    z = rng[0]
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def chain_fk_jac(q, jt, col, org, ax, mult, offs, tip, pose, jac, zs, ps, cur, tmp):
    """Tip pose (3, 4) into ``pose`` and tip Jacobian (6, n) into ``jac`` (root frame).

    ``zs``, ``ps`` (k, 3) receive each joint's axis and origin in the root frame; ``cur``,
    ``tmp`` (3, 4) are work arrays.
    """
    nk = jt.shape[0]
    for i in range(3):
        for j in range(4):
            cur[i, j] = 1.0 if i == j else 0.0
    for k in range(nk):
        # tmp = cur @ org[k]  (3x4 affine product)
        for i in range(3):
            for j in range(4):
                s = cur[i, 0] * org[k, 0, j] + cur[i, 1] * org[k, 1, j] + cur[i, 2] * org[k, 2, j]
                if j == 3:
                    s += cur[i, 3]
                tmp[i, j] = s
        c = col[k]
        val = offs[k] if c < 0 else mult[k] * q[c] + offs[k]
        ax0, ax1, ax2 = ax[k, 0], ax[k, 1], ax[k, 2]
        zx = tmp[0, 0] * ax0 + tmp[0, 1] * ax1 + tmp[0, 2] * ax2
        zy = tmp[1, 0] * ax0 + tmp[1, 1] * ax1 + tmp[1, 2] * ax2
        zz = tmp[2, 0] * ax0 + tmp[2, 1] * ax1 + tmp[2, 2] * ax2
        zs[k, 0], zs[k, 1], zs[k, 2] = zx, zy, zz
        ps[k, 0], ps[k, 1], ps[k, 2] = tmp[0, 3], tmp[1, 3], tmp[2, 3]
        if jt[k] == 1:
            ca = math.cos(val)
            sa = math.sin(val)
            v = 1.0 - ca
            r00 = ca + ax0 * ax0 * v
            r01 = ax0 * ax1 * v - ax2 * sa
            r02 = ax0 * ax2 * v + ax1 * sa
            r10 = ax1 * ax0 * v + ax2 * sa
            r11 = ca + ax1 * ax1 * v
            r12 = ax1 * ax2 * v - ax0 * sa
            r20 = ax2 * ax0 * v - ax1 * sa
            r21 = ax2 * ax1 * v + ax0 * sa
            r22 = ca + ax2 * ax2 * v
            for i in range(3):
                t0, t1, t2 = tmp[i, 0], tmp[i, 1], tmp[i, 2]
                cur[i, 0] = t0 * r00 + t1 * r10 + t2 * r20
                cur[i, 1] = t0 * r01 + t1 * r11 + t2 * r21
                cur[i, 2] = t0 * r02 + t1 * r12 + t2 * r22
                cur[i, 3] = tmp[i, 3]
        else:
            for i in range(3):
                cur[i, 0], cur[i, 1], cur[i, 2] = tmp[i, 0], tmp[i, 1], tmp[i, 2]
            cur[0, 3] = tmp[0, 3] + val * zx
            cur[1, 3] = tmp[1, 3] + val * zy
            cur[2, 3] = tmp[2, 3] + val * zz
    for i in range(3):
        for j in range(4):
            s = cur[i, 0] * tip[0, j] + cur[i, 1] * tip[1, j] + cur[i, 2] * tip[2, j]
            if j == 3:
                s += cur[i, 3]
            pose[i, j] = s
    jac[:, :] = 0.0
    px, py, pz = pose[0, 3], pose[1, 3], pose[2, 3]
    for k in range(nk):
        c = col[k]
        if c < 0:
            continue
        g = mult[k]
        zx, zy, zz = zs[k, 0], zs[k, 1], zs[k, 2]
        if jt[k] == 1:
            dx, dy, dz = px - ps[k, 0], py - ps[k, 1], pz - ps[k, 2]
            jac[0, c] += g * (zy * dz - zz * dy)
            jac[1, c] += g * (zz * dx - zx * dz)
            jac[2, c] += g * (zx * dy - zy * dx)
            jac[3, c] += g * zx
            jac[4, c] += g * zy
            jac[5, c] += g * zz
        else:
            jac[0, c] += g * zx
            jac[1, c] += g * zy
            jac[2, c] += g * zz


@njit(cache=True, nogil=True)
def pose_error(pose, target, rw, e):
    """Error twist (6,) from ``pose`` (3, 4) to ``target`` (4, 4) into ``e``, root frame.

    Rows 0-2: target position minus pose position [m]; rows 3-5: rotation vector of
    ``R_target R_pose^T`` [rad] (KDL's ``diff(pose, target)``). ``rw`` (3, 3) is work.
    """
    for i in range(3):
        e[i] = target[i, 3] - pose[i, 3]
        for j in range(3):
            rw[i, j] = (
                target[i, 0] * pose[j, 0] + target[i, 1] * pose[j, 1] + target[i, 2] * pose[j, 2]
            )
    rot_log(rw, e[3:])


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _dls_step(a, es, lam, mm, y, dq):
    """Write ``a^T (a a^T + lam I)^-1 es`` into ``dq`` (Cholesky); False if not positive."""
    m = es.shape[0]
    n = dq.shape[0]
    for r in range(m):
        for c in range(r + 1):
            s = 0.0
            for j in range(n):
                s += a[r, j] * a[c, j]
            mm[r, c] = s
        mm[r, r] += lam
    for j in range(m):
        s = mm[j, j]
        for t in range(j):
            s -= mm[j, t] * mm[j, t]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        mm[j, j] = d
        for i in range(j + 1, m):
            s2 = mm[i, j]
            for t in range(j):
                s2 -= mm[i, t] * mm[j, t]
            mm[i, j] = s2 / d
    for i in range(m):
        s = es[i]
        for t in range(i):
            s -= mm[i, t] * y[t]
        y[i] = s / mm[i, i]
    for i in range(m - 1, -1, -1):
        s = y[i]
        for t in range(i + 1, m):
            s -= mm[t, i] * y[t]
        y[i] = s / mm[i, i]
    for j in range(n):
        s = 0.0
        for r in range(m):
            s += a[r, j] * y[r]
        dq[j] = s
    return True


@njit(cache=True, nogil=True)
def _step_scale(dq, max_step):
    """Factor (<= 1) that brings the largest joint change of ``dq`` to ``max_step``."""
    big = 0.0
    for j in range(dq.shape[0]):
        big = max(big, abs(dq[j]))
    return 1.0 if big <= max_step else max_step / big


@njit(cache=True, nogil=True, inline="always")  # inlined in ik_iterate: no call per iteration
def bounded_step(a, es, lam, q, lo, hi, max_step, rounds, mm, y, dq, locked):
    """Move ``q`` by the damped step of rows ``a`` (m, n) and error ``es`` (m,), in the box.

    A joint the step (scaled to at most ``max_step`` per joint) pushes past a limit stops
    there, its column leaves ``a`` and the error it leaves in ``es`` is solved again by the
    other joints, for at most ``rounds`` rounds. ``a`` and ``es`` are changed; ``mm`` (m, m),
    ``y`` (m,), ``dq`` (n,) and ``locked`` (n,) are work arrays. Returns False (``q``
    unchanged) when the damped system is not positive definite.
    """
    n = q.shape[0]
    m = es.shape[0]
    for j in range(n):
        locked[j] = 0.0
    scale = 1.0
    for _ in range(rounds + 1):
        if not _dls_step(a, es, lam, mm, y, dq):
            return False
        scale = _step_scale(dq, max_step)
        over = False
        for j in range(n):
            if locked[j] == 0.0:
                v = q[j] + scale * dq[j]
                if v < lo[j] or v > hi[j]:
                    over = True
        if not over:
            break
        for j in range(n):
            if locked[j] == 0.0:
                v = q[j] + scale * dq[j]
                if v < lo[j] or v > hi[j]:
                    v = min(max(v, lo[j]), hi[j])
                    d = v - q[j]
                    for r in range(m):
                        es[r] -= a[r, j] * d
                        a[r, j] = 0.0
                    q[j] = v
                    locked[j] = 1.0
    for j in range(n):
        if locked[j] == 0.0:
            q[j] = min(max(q[j] + scale * dq[j], lo[j]), hi[j])
    return True


@njit(cache=True, nogil=True)
def _restart(q, lo, hi, samp_lo, samp_hi, rng):
    for i in range(q.shape[0]):
        v = samp_lo[i] + (samp_hi[i] - samp_lo[i]) * uniform(rng)
        q[i] = min(max(v, lo[i]), hi[i])


@njit(cache=True, nogil=True)
def clip_seed(seed, lo, hi, out):
    """Clip ``seed`` (n,) into [lo, hi] into ``out``; False when it has NaN or Inf."""
    for i in range(seed.shape[0]):
        v = seed[i]
        if not math.isfinite(v):
            return False
        out[i] = min(max(v, lo[i]), hi[i])
    return True


@njit(cache=True, nogil=True)
def errors_at(q, jt, col, org, ax, mult, offs, tip, target, work):
    """Error twist (6,) of the tip at ``q`` into ``work[45:51]`` (see :func:`ik_iterate`)."""
    n = q.shape[0]
    nk = jt.shape[0]
    o = 99 + n
    jac = work[o : o + 6 * n].reshape((6, n))
    o += 12 * n
    zs = work[o : o + 3 * nk].reshape((nk, 3))
    o += 3 * nk
    ps = work[o : o + 3 * nk].reshape((nk, 3))
    pose = work[0:12].reshape((3, 4))
    chain_fk_jac(
        q,
        jt,
        col,
        org,
        ax,
        mult,
        offs,
        tip,
        pose,
        jac,
        zs,
        ps,
        work[12:24].reshape((3, 4)),
        work[24:36].reshape((3, 4)),
    )
    pose_error(pose, target, work[36:45].reshape((3, 3)), work[45:51])


def work_size(n: int, k: int) -> int:
    """Length of the ``work`` array of :func:`ik_iterate` for n columns and k chain joints."""
    return 12 * 3 + 9 + 6 + 36 + 6 + 6 + 2 * n + 12 * n + 6 * k


@njit(cache=True, nogil=True)
def ik_iterate(
    jt,
    col,
    org,
    ax,
    mult,
    offs,
    tip,
    lo,
    hi,
    samp_lo,
    samp_hi,
    target,
    sel,
    tol,
    params,
    q,
    best_q,
    state,
    rng,
    max_iters,
    work,
):
    """Run up to ``max_iters`` IK iterations from ``q`` (n,) (updated in place).

    Args:
        jt: (k,) joint types of the chain (see the module docstring).
        col: (k,) columns in q.
        org: (k, 3, 4) joint frames.
        ax: (k, 3) joint axes.
        mult: (k,) mimic multipliers.
        offs: (k,) mimic offsets or held values.
        tip: (3, 4) tip frame.
        lo: (n,) lower position limits [rad or m] (finite: continuous joints get -1e9).
        hi: (n,) upper position limits [rad or m].
        samp_lo: (n,) lower end of the random restarts' range.
        samp_hi: (n,) upper end of the random restarts' range.
        target: (4, 4) target pose of the tip in the root frame.
        sel: (m,) int64 rows of the error twist that are constrained (0-2 position, 3-5
            rotation, root frame).
        tol: (6,) tolerance of each error component [m, rad].
        params: (P_SIZE,) float64, see ``P_*``.
        q: (n,) current iterate; the solution when 1 is returned.
        best_q: (n,) the iterate with the smallest error norm so far.
        state: (S_SIZE,) float64, see ``S_*`` (carried over between calls).
        rng: (1,) uint64 splitmix64 state.
        max_iters: iterations to run at most in this call.
        work: (work_size(n, k),) float64 scratch.

    Returns:
        1 when ``q`` meets every tolerance (within limits), 0 when the iterations ran out.
    """
    n = q.shape[0]
    nk = jt.shape[0]
    m = sel.shape[0]
    pose = work[0:12].reshape((3, 4))
    cur = work[12:24].reshape((3, 4))
    tmp = work[24:36].reshape((3, 4))
    rw = work[36:45].reshape((3, 3))
    e = work[45:51]
    mm = work[51:87].reshape((6, 6))
    y = work[87:93]
    es = work[93:99]
    o = 99
    dq = work[o : o + n]
    o += n
    jac = work[o : o + 6 * n].reshape((6, n))
    o += 6 * n
    a = work[o : o + 6 * n].reshape((6, n))
    o += 6 * n
    zs = work[o : o + 3 * nk].reshape((nk, 3))
    o += 3 * nk
    ps = work[o : o + 3 * nk].reshape((nk, 3))
    o += 3 * nk
    qc = work[o : o + n]
    es = es[:m]
    y = y[:m]
    a = a[:m]
    active_set = params[P_ACTIVE_SET] != 0.0
    lam_min = params[P_LAMBDA_MIN]
    lam_scale = params[P_LAMBDA_SCALE]
    max_step = params[P_MAX_STEP]
    stall_ratio = params[P_STALL_RATIO]
    window = int(params[P_STALL_WINDOW])
    restart_iters = int(params[P_RESTART_ITERS])
    for _ in range(max_iters):
        if state[S_RESTART_NOW] != 0.0:
            _restart(q, lo, hi, samp_lo, samp_hi, rng)
            state[S_RESTART_NOW] = 0.0
            state[S_LOCAL] = 0.0
            state[S_RESTARTS] += 1.0
        chain_fk_jac(q, jt, col, org, ax, mult, offs, tip, pose, jac, zs, ps, cur, tmp)
        pose_error(pose, target, rw, e)
        done = True
        norm2 = 0.0
        for r in range(m):
            v = e[sel[r]]
            es[r] = v
            norm2 += v * v
            if not abs(v) <= tol[sel[r]]:  # NaN: not done
                done = False
        norm = math.sqrt(norm2)
        state[S_NORM] = norm
        if norm < state[S_BEST]:
            state[S_BEST] = norm
            for i in range(n):
                best_q[i] = q[i]
        if done:
            return 1
        local = int(state[S_LOCAL])
        if local % window == 0:
            if local > 0 and not norm <= stall_ratio * state[S_REF]:
                state[S_RESTART_NOW] = 1.0
            state[S_REF] = norm
        if local >= restart_iters or not math.isfinite(norm):
            state[S_RESTART_NOW] = 1.0
        state[S_ITERS] += 1.0
        state[S_LOCAL] = local + 1.0
        if state[S_RESTART_NOW] != 0.0:
            continue
        # Damped least squares on the selected rows: (A A^T + lam I) y = e, dq = A^T y.
        lam = lam_min + lam_scale * 0.5 * norm2
        for r in range(m):
            sr = sel[r]
            for j in range(n):
                a[r, j] = jac[sr, j]
        # The step projected onto the box of the limits: a joint the step pushes past a limit
        # stops at it, and the rest of the error is solved again by the other joints in the
        # same iteration (its column out); the next iteration frees every joint again.
        rounds = BOUNDED_ROUNDS if active_set else 0
        if not bounded_step(a, es, lam, q, lo, hi, max_step, rounds, mm, y, dq, qc):
            state[S_RESTART_NOW] = 1.0
            continue
    return 0


@njit(cache=True, nogil=True)
def nearest_turns(q, seed, turns, lo, hi):
    """Move the joints ``turns`` (t,) of ``q`` (n,) by whole turns toward ``seed``, in [lo, hi].

    The forward kinematics are the same; ``q`` is changed in place.
    """
    two_pi = 2.0 * math.pi
    for t in range(turns.shape[0]):
        i = turns[t]
        k = round((seed[i] - q[i]) / two_pi)
        if k != 0:
            v = q[i] + k * two_pi
            while v > hi[i]:
                v -= two_pi
            while v < lo[i]:
                v += two_pi
            if abs(v - seed[i]) < abs(q[i] - seed[i]):
                q[i] = v
