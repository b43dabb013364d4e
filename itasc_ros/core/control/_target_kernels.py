"""Compiled kernels of a streamed target: pose from a message, twist estimate (numba).

Internal: the public API is :meth:`itasc_ros.core.control.Controller.set_target`. A target
stream at 100 Hz-1 kHz runs in the same thread as the control tick, so the work per pose must
stay small next to a tick: numpy's small-array calls (validation, quaternion to matrix,
orthonormality check, ``so3_log``, the filter), one dispatch each, would delay the next tick.
The kernels write into preallocated arrays and allocate nothing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..kinematics._kernels import INPUT_VECTOR, all_finite, any_nonzero, gather_within, rot_log
from ._packed import T_POSE_FRESH, T_SOURCE, T_TWIST_FRESH, TARGET_SIZE
from .journal import TwistSource

#: :func:`take_stream_twist`: the stream has no twist source, and its applied twist was zeroed.
TWIST_ZEROED = 4
_NO_SOURCE = float(TwistSource.NONE)
_ESTIMATED = float(TwistSource.ESTIMATED)
_EXPLICIT = float(TwistSource.EXPLICIT)

#: Return codes of :func:`pose_from_position_quat`.
POSE_OK, BAD_POSITION, BAD_QUATERNION, ZERO_QUATERNION = 0, 1, 2, 3
#: A quaternion whose norm is below this is "zero" (no rotation can be read from it) [-].
MIN_QUAT_NORM = 1e-6


@njit(
    types.int64(INPUT_VECTOR, INPUT_VECTOR, types.float64, types.Array(types.float64, 2, "C")),
    cache=True,
)
def pose_from_position_quat(p, qt, huge, out):
    """Write the pose (4, 4) of position ``p`` (3,) [m] and quaternion ``qt`` (x, y, z, w).

    The quaternion is normalised without overflow or underflow (divided by its largest
    component first, as 1e200 or 1e-200 components must work). Nothing is written unless the
    result is :data:`POSE_OK`.

    Returns:
        :data:`POSE_OK`; :data:`BAD_POSITION` (a component NaN/Inf or above ``huge``);
        :data:`BAD_QUATERNION` (a component NaN/Inf); :data:`ZERO_QUATERNION` (norm below
        :data:`MIN_QUAT_NORM`).
    """
    for i in range(3):
        if not (abs(p[i]) <= huge):  # False for NaN too
            return BAD_POSITION
    scale = 0.0
    for i in range(4):
        a = abs(qt[i])
        if not math.isfinite(a):
            return BAD_QUATERNION
        if a > scale:
            scale = a
    if scale == 0.0:
        return ZERO_QUATERNION
    x, y, z, w = qt[0] / scale, qt[1] / scale, qt[2] / scale, qt[3] / scale
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if scale * n < MIN_QUAT_NORM:
        return ZERO_QUATERNION
    x, y, z, w = x / n, y / n, z / n, w / n
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - w * z)
    out[0, 2] = 2.0 * (x * z + w * y)
    out[1, 0] = 2.0 * (x * y + w * z)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - w * x)
    out[2, 0] = 2.0 * (x * z - w * y)
    out[2, 1] = 2.0 * (y * z + w * x)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)
    for i in range(3):
        out[i, 3] = p[i]
        out[3, i] = 0.0
    out[3, 3] = 1.0
    return POSE_OK


@njit(cache=True, nogil=True)
def filter_twist(pose, prev, dt, alpha, rel, raw, estimate):
    """Finite-difference twist from ``prev`` to ``pose`` over ``dt``, low-pass filtered.

    Args:
        pose: (4, 4) the new pose, root frame.
        prev: (4, 4) the previous pose, root frame.
        dt: time between them [s], > 0.
        alpha: filter factor dt / (tau + dt) in (0, 1].
        rel: (3, 3) work array: R R_prev^T.
        raw: (6,) work array: the unfiltered twist [m/s, rad/s] (linear, angular; root frame).
        estimate: (6,) the filtered twist, updated in place: ``estimate += alpha (raw - est)``.
    """
    for i in range(3):
        for j in range(3):
            rel[i, j] = pose[i, 0] * prev[j, 0] + pose[i, 1] * prev[j, 1] + pose[i, 2] * prev[j, 2]
    rot_log(rel, raw[3:])  # angular part: log(R R_prev^T), angle in [0, pi]
    for i in range(3):
        raw[i] = (pose[i, 3] - prev[i, 3]) / dt
        raw[3 + i] = raw[3 + i] / dt
    for i in range(6):
        estimate[i] += alpha * (raw[i] - estimate[i])


@njit(cache=True, nogil=True)
def cap_twist(twist, max_speed, max_angular_speed):
    """Scale the linear and the angular part of ``twist`` (6,) to at most the speed limits.

    Each part keeps its direction; ``twist`` is changed in place.

    Args:
        twist: (6,) linear velocity [m/s], angular velocity [rad/s].
        max_speed: largest linear speed [m/s], > 0.
        max_angular_speed: largest angular speed [rad/s], > 0.

    Returns:
        True when a part was above its limit (and was scaled down).
    """
    capped = False
    for k, limit in ((0, max_speed), (3, max_angular_speed)):
        n = math.sqrt(twist[k] ** 2 + twist[k + 1] ** 2 + twist[k + 2] ** 2)
        if n > limit:
            s = limit / n
            for i in range(k, k + 3):
                twist[i] *= s
            capped = True
    return capped


@njit(cache=True, nogil=True)
def is_target_jump(pose, prev, dt, max_speed, max_angular_speed, rel):
    """True when going from ``prev`` to ``pose`` in ``dt`` is faster than the speed limits.

    Args:
        pose: (4, 4) the new pose, root frame.
        prev: (4, 4) the previous pose, root frame.
        dt: time between them [s], > 0 (the caller floors it at the control period, so
            that poses received in a burst are not jumps).
        max_speed: largest linear speed of a target [m/s].
        max_angular_speed: largest angular speed of a target [rad/s].
        rel: (3, 3) work array.
    """
    d2 = 0.0
    for i in range(3):
        d2 += (pose[i, 3] - prev[i, 3]) ** 2
    if math.sqrt(d2) > max_speed * dt:
        return True
    for i in range(3):
        for j in range(3):
            rel[i, j] = pose[i, 0] * prev[j, 0] + pose[i, 1] * prev[j, 1] + pose[i, 2] * prev[j, 2]
    c = 0.5 * (rel[0, 0] + rel[1, 1] + rel[2, 2] - 1.0)  # cos of the rotation angle
    angle = math.acos(min(1.0, max(-1.0, c)))
    return angle > max_angular_speed * dt


@njit(cache=True)
def stream_step(pose, prev, dt, dt_floor, max_speed, max_angular_speed, tau, rel, raw, estimate):
    """One pose of a stream: True when it is a jump, else the twist estimate updated.

    :func:`is_target_jump` over ``max(dt, dt_floor)`` (poses of a burst are no jumps); if not,
    :func:`filter_twist` over ``dt`` with the factor ``dt / (tau + dt)`` (``tau`` the filter's
    time constant [s]), then :func:`cap_twist`. One call where a pose of a stream took three.
    """
    if is_target_jump(pose, prev, max(dt, dt_floor), max_speed, max_angular_speed, rel):
        return True
    filter_twist(pose, prev, dt, dt / (tau + dt), rel, raw, estimate)
    cap_twist(estimate, max_speed, max_angular_speed)  # never beyond the speed limits
    return False


@njit(cache=True, nogil=True)
def extrapolate_pose(pose, twist, dt, out):
    """``out`` (4, 4): ``pose`` moved for ``dt`` [s] by ``twist`` (6,) (root frame).

    The position moves by ``v dt``, the rotation by ``exp(w dt)`` (Rodrigues) applied on the
    left (``w`` on the root's axes, as the twist estimate and an explicit twist give it).
    """
    wx, wy, wz = twist[3] * dt, twist[4] * dt, twist[5] * dt
    angle = math.sqrt(wx * wx + wy * wy + wz * wz)
    if angle > 1e-12:
        kx, ky, kz = wx / angle, wy / angle, wz / angle
        sn, cs = math.sin(angle), math.cos(angle)
        c1 = 1.0 - cs
        r00, r01, r02 = cs + kx * kx * c1, kx * ky * c1 - kz * sn, kx * kz * c1 + ky * sn
        r10, r11, r12 = ky * kx * c1 + kz * sn, cs + ky * ky * c1, ky * kz * c1 - kx * sn
        r20, r21, r22 = kz * kx * c1 - ky * sn, kz * ky * c1 + kx * sn, cs + kz * kz * c1
        for j in range(3):
            a, b, c = pose[0, j], pose[1, j], pose[2, j]
            out[0, j] = r00 * a + r01 * b + r02 * c
            out[1, j] = r10 * a + r11 * b + r12 * c
            out[2, j] = r20 * a + r21 * b + r22 * c
    else:
        for i in range(3):
            for j in range(3):
                out[i, j] = pose[i, j]
    for i in range(3):
        out[i, 3] = pose[i, 3] + twist[i] * dt
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0


@njit(cache=True, nogil=True)
def filter_rate(new, old, dt, alpha, rate):
    """``rate += alpha ((new - old) / dt - rate)`` (6,): the filtered change rate of a twist."""
    for i in range(6):
        rate[i] += alpha * ((new[i] - old[i]) / dt - rate[i])


@njit(cache=True, nogil=True)
def aim_twist(twist, accel, lead_at, lead_mean, mean, at):
    """A twist (6,) moved on by its change rate ``accel`` (6,): to ``at`` and to ``mean``.

    ``at = twist + accel lead_at`` (the twist when the command acts), ``mean = twist + accel
    lead_mean`` (the mean twist over the pose's extrapolation, at its midpoint); the leads [s]
    count from the twist's own time.
    """
    for i in range(6):
        at[i] = twist[i] + accel[i] * lead_at
        mean[i] = twist[i] + accel[i] * lead_mean


@njit(cache=True)
def take_twist(src, dst):
    """Copy the twist ``src`` (6,) into ``dst`` (6,) when they differ.

    Returns:
        2 when they differed, plus 1 when the twist is not zero (``dst`` as it is now).
    """
    changed = False
    moving = False
    for i in range(src.shape[0]):
        if dst[i] != src[i]:
            dst[i] = src[i]
            changed = True
        moving = moving or src[i] != 0.0
    return (2 if changed else 0) + (1 if moving else 0)


@njit(cache=True)
def take_stream_twist(s, twist, estimate, applied):
    """A target stream's twist at a tick that no reference leads, into ``applied`` (6,).

    Its explicit ``twist`` (6,) when one is fresh, else its ``estimate`` (6,) from successive
    poses when a pose is, else zero; the source (:class:`~.journal.TwistSource`) written into
    its packed state ``s`` (:data:`~._packed.TARGET_SIZE`,), whose freshness flags the tick's
    look wrote.

    Returns:
        With a source, :func:`take_twist`'s code (2 when ``applied`` changed, plus 1 when it
        is not zero); without, :data:`TWIST_ZEROED` when ``applied`` was not zero (it is now),
        else 0.
    """
    if s[T_TWIST_FRESH] != 0.0:
        s[T_SOURCE] = _EXPLICIT
        return take_twist(twist, applied)
    if s[T_POSE_FRESH] != 0.0:
        s[T_SOURCE] = _ESTIMATED
        return take_twist(estimate, applied)
    s[T_SOURCE] = _NO_SOURCE
    zeroed = False
    for i in range(applied.shape[0]):
        if applied[i] != 0.0:
            applied[i] = 0.0
            zeroed = True
    return TWIST_ZEROED if zeroed else 0


@njit(cache=True, nogil=True)
def joints_along(jac, u, axis, amax, vmax, shares, gram, y, rates, out):
    """What the joints allow along a straight line and about an axis, at one configuration.

    The least-norm joint rates of a unit twist along the line and of one about the axis
    (``J^T (J J^T + eps I)^-1 e``), and so the largest linear and angular acceleration and
    speed whose joint accelerations and speeds stay within ``share`` of the joints' limits.

    Args:
        jac: (6, n) the effector's Jacobian (root frame).
        u: (3,) the line's unit direction (zeros: no line).
        axis: (3,) the rotation's unit axis (zeros: no rotation).
        amax: (n,) the joints' acceleration limits (inf: none).
        vmax: (n,) the joints' velocity limits (inf: none).
        shares: the share of each joint's velocity limit and of its acceleration limit the
            motion may take (each in (0, 1]).
        gram: (6, 6) work.
        y: (6,) work.
        rates: (2, n) work.
        out: (4,) output: linear speed [m/s], linear acceleration [m/s^2], angular speed
            [rad/s], angular acceleration [rad/s^2]; inf where nothing limits (no motion).
    """
    n = jac.shape[1]
    for i in range(6):
        for j in range(6):
            s = 0.0
            for k in range(n):
                s += jac[i, k] * jac[j, k]
            gram[i, j] = s
        gram[i, i] += 1e-6
    # Cholesky in place (lower), then the two right-hand sides e = (u, 0) and (0, axis)
    for j in range(6):
        s = gram[j, j]
        for k in range(j):
            s -= gram[j, k] * gram[j, k]
        d = math.sqrt(max(s, 1e-300))
        gram[j, j] = d
        for i in range(j + 1, 6):
            s = gram[i, j]
            for k in range(j):
                s -= gram[i, k] * gram[j, k]
            gram[i, j] = s / d
    for r in range(2):
        y[:] = 0.0
        for i in range(3):
            y[i + 3 * r] = u[i] if r == 0 else axis[i]
        for i in range(6):  # forward
            s = y[i]
            for k in range(i):
                s -= gram[i, k] * y[k]
            y[i] = s / gram[i, i]
        for i in range(5, -1, -1):  # backward
            s = y[i]
            for k in range(i + 1, 6):
                s -= gram[k, i] * y[k]
            y[i] = s / gram[i, i]
        for k in range(n):
            s = 0.0
            for i in range(6):
                s += jac[i, k] * y[i]
            rates[r, k] = abs(s)
    for r in range(2):
        v, a = math.inf, math.inf
        for k in range(n):
            if rates[r, k] > 1e-12:
                v = min(v, shares[0] * vmax[k] / rates[r, k])
                a = min(a, shares[1] * amax[k] / rates[r, k])
        out[2 * r] = v
        out[2 * r + 1] = a


def warm_up_kernels(vmax: np.ndarray) -> None:
    """Compile (or load) every kernel an input or a tick calls, with the types they get there.

    Called when a controller is built: the first target pose, twist or step must not wait for
    a compilation (~0.1-0.5 s on a fresh install, where no cache exists yet).

    Args:
        vmax: (n,) the controller's velocity limits (their length: the joints').
    """
    pose, prev, rel = np.eye(4), np.eye(4), np.zeros((3, 3))
    raw, estimate = np.zeros(6), np.zeros(6)
    pose_from_position_quat(np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), 1.0, pose)
    filter_twist(pose, prev, 0.01, 0.5, rel, raw, estimate)
    is_target_jump(pose, prev, 0.01, 1.0, 1.0, rel)
    cap_twist(estimate, 1.0, 1.0)
    take_twist(raw, estimate)
    take_stream_twist(np.zeros(TARGET_SIZE), raw, estimate, raw)
    extrapolate_pose(pose, estimate, 0.001, prev)
    n = vmax.shape[0]
    filter_rate(raw, estimate, 0.01, 0.5, raw)
    aim_twist(raw, raw, 0.01, 0.01, estimate, raw)
    all_finite(raw, 1.0)  # streams.usable: a twist's or a jog's check
    gather_within(raw, np.zeros(n, dtype=np.int64), 1.0, np.zeros(n))  # a joint state's
    stream_step(pose, prev, 0.01, 0.001, 1.0, 1.0, 0.05, rel, raw, estimate)
    any_nonzero(raw)  # a twist's (6,) and a command's (n,): one signature
    joints_along(
        np.ones((6, n)), raw[:3], raw[3:], vmax, vmax, (0.8, 0.5), np.zeros((6, 6)), np.zeros(6),
        np.zeros((2, n)), np.zeros(4),
    )  # fmt: skip
