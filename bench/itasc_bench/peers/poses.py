"""Pose arithmetic the peers share: a rotation's quaternion and KDL's pose difference."""

from __future__ import annotations

import math

import numpy as np

from .contract import FloatArray


def rotation_to_quaternion(rot: FloatArray) -> tuple[float, float, float, float]:
    """Unit quaternion ``(x, y, z, w)`` of a rotation matrix (Shepperd's method).

    Args:
        rot: Rotation matrix, shape (3, 3).

    Returns:
        ``(x, y, z, w)`` with ``w >= 0``.
    """
    m = np.asarray(rot, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(tr + 1.0)
        w, x = 0.25 * s, (m[2, 1] - m[1, 2]) / s
        y, z = (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        w, x = (m[2, 1] - m[1, 2]) / s, 0.25 * s
        y, z = (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        w, x = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s
        y, z = 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        w, x = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s
        y, z = (m[1, 2] + m[2, 1]) / s, 0.25 * s
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    return float(x), float(y), float(z), float(w)


def pose_error(current: FloatArray, target: FloatArray) -> FloatArray:
    """Error twist from ``current`` to ``target``, both ``(4, 4)`` in the same base frame.

    Args:
        current: Current pose, shape (4, 4).
        target: Target pose, shape (4, 4).

    Returns:
        ``(6,)``: position difference [m] then rotation vector [rad] of
        ``R_target R_current^T``, both in the base frame (KDL's ``diff(current, target)``).
    """
    dp = target[:3, 3] - current[:3, 3]  # (3,)
    r = target[:3, :3] @ current[:3, :3].T  # (3, 3)
    cos = max(-1.0, min(1.0, 0.5 * (r[0, 0] + r[1, 1] + r[2, 2] - 1.0)))
    angle = math.acos(cos)
    axis_sin = 0.5 * np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-9:
        rotvec = axis_sin
    elif math.pi - angle < 1e-6:
        # Near pi: axis from the symmetric part (sign is irrelevant at pi).
        sym = 0.5 * (r + np.eye(3))
        k = int(np.argmax(np.diag(sym)))
        axis = sym[:, k] / math.sqrt(max(sym[k, k], 1e-300))
        rotvec = axis * angle
    else:
        rotvec = axis_sin * (angle / math.sin(angle))
    return np.concatenate([dp, rotvec])


__all__ = ["pose_error", "rotation_to_quaternion"]
