"""Compiled kernels of a streamed target: pose from a message, twist estimate (numba).

Internal: the public API is :meth:`itasc_ros.core.controller.Controller.set_target`. A target
stream at 100 Hz-1 kHz runs in the same thread as the control tick, so the work per pose must
stay a few microseconds: done with numpy's small-array calls (validation, quaternion to
matrix, orthonormality check, ``so3_log``, the filter) it took ~150 us and delayed the next
tick. The kernels write into preallocated arrays and allocate nothing.
"""

from __future__ import annotations

import math

from numba import njit

#: Return codes of :func:`pose_from_position_quat`.
POSE_OK, BAD_POSITION, BAD_QUATERNION, ZERO_QUATERNION = 0, 1, 2, 3
#: A quaternion whose norm is below this is "zero" (no rotation can be read from it) [-].
MIN_QUAT_NORM = 1e-6


@njit(cache=True, nogil=True)
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
def _rotation_vector(m00, m01, m02, m10, m11, m12, m20, m21, m22, out):
    """Rotation vector [rad] (angle in [0, pi]) of a rotation matrix into ``out[3:6]``.

    Through the quaternion with w >= 0 (Shepperd's branches), stable near 0 and near pi; the
    same result as :func:`itasc_ros.core.spatial.so3_log`.
    """
    t = m00 + m11 + m22
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        x, y, z, w = (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s
    elif m00 > m11 and m00 > m22:
        s = math.sqrt(1.0 + m00 - m11 - m22) * 2.0
        x, y, z, w = 0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s
    elif m11 > m22:
        s = math.sqrt(1.0 + m11 - m00 - m22) * 2.0
        x, y, z, w = (m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s
    else:
        s = math.sqrt(1.0 + m22 - m00 - m11) * 2.0
        x, y, z, w = (m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    v = math.sqrt(x * x + y * y + z * z)
    if v < 1e-12:
        out[3], out[4], out[5] = 2.0 * x, 2.0 * y, 2.0 * z  # small angle: sin(a/2) ~ a/2
        return
    k = 2.0 * math.atan2(v, w) / v
    out[3], out[4], out[5] = x * k, y * k, z * k


@njit(cache=True, nogil=True)
def _rows(a, b, i, j):
    """Row i of a's rotation dotted with row j of b's: entry (i, j) of R_a R_b^T."""
    return a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]


@njit(cache=True, nogil=True)
def filter_twist(pose, prev, dt, alpha, raw, estimate):
    """Finite-difference twist from ``prev`` to ``pose`` over ``dt``, low-pass filtered.

    Args:
        pose: (4, 4) the new pose, root frame.
        prev: (4, 4) the previous pose, root frame.
        dt: time between them [s], > 0.
        alpha: filter factor dt / (tau + dt) in (0, 1].
        raw: (6,) work array: the unfiltered twist [m/s, rad/s] (linear, angular; root frame).
        estimate: (6,) the filtered twist, updated in place: ``estimate += alpha (raw - est)``.
    """
    # angular part: log(R R_prev^T), entry (i, j) = row i of R . row j of R_prev
    _rotation_vector(
        _rows(pose, prev, 0, 0), _rows(pose, prev, 0, 1), _rows(pose, prev, 0, 2),
        _rows(pose, prev, 1, 0), _rows(pose, prev, 1, 1), _rows(pose, prev, 1, 2),
        _rows(pose, prev, 2, 0), _rows(pose, prev, 2, 1), _rows(pose, prev, 2, 2),
        raw,
    )  # fmt: skip
    for i in range(3):
        raw[i] = (pose[i, 3] - prev[i, 3]) / dt
        raw[3 + i] = raw[3 + i] / dt
    for i in range(6):
        estimate[i] += alpha * (raw[i] - estimate[i])
