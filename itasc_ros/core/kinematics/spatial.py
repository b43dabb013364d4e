"""SO(3) / SE(3) helpers. Quaternions are (x, y, z, w), as in geometry_msgs.

All functions take and return numpy arrays; rotations are (3, 3), poses (4, 4) homogeneous.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigurationError

Array = NDArray[np.float64]


def quat_to_matrix(q: Array | tuple[float, float, float, float]) -> Array:
    """Rotation matrix of a quaternion.

    Args:
        q: (4,) quaternion (x, y, z, w). Normalised here, without overflow (divided by its
            largest component first: a quaternion scaled by 1e200 is the same rotation); its
            norm must be at least 1e-6 and finite.

    Returns:
        (3, 3) rotation matrix.

    Raises:
        ConfigurationError: zero-norm or non-finite quaternion.
    """
    x, y, z, w = (float(v) for v in q)
    big = max(abs(x), abs(y), abs(z), abs(w))
    if not math.isfinite(big) or big * math.sqrt(4.0) < 1e-6:
        raise ConfigurationError(
            f"quaternion (x, y, z, w)={tuple(float(v) for v in q)} has no rotation "
            "(norm ~0 or not finite)"
        )
    x, y, z, w = x / big, y / big, z / big, w / big
    n = x * x + y * y + z * z + w * w  # in [1, 4]
    if big * math.sqrt(n) < 1e-6:
        raise ConfigurationError(
            f"quaternion (x, y, z, w)={tuple(float(v) for v in q)} has no rotation (norm ~0)"
        )
    s = 2.0 / n
    xx, yy, zz = x * x * s, y * y * s, z * z * s
    xy, xz, yz = x * y * s, x * z * s, y * z * s
    wx, wy, wz = w * x * s, w * y * s, w * z * s
    return np.array(
        [
            [1.0 - yy - zz, xy - wz, xz + wy],
            [xy + wz, 1.0 - xx - zz, yz - wx],
            [xz - wy, yz + wx, 1.0 - xx - yy],
        ]
    )


def matrix_to_quat(r: Array) -> Array:
    """Quaternion (x, y, z, w) of a rotation matrix, with w >= 0.

    Args:
        r: (3, 3) rotation matrix (or the top-left block of a (4, 4) pose).

    Returns:
        (4,) unit quaternion (x, y, z, w).
    """
    m = np.asarray(r, dtype=float)[:3, :3]
    t = m[0, 0] + m[1, 1] + m[2, 2]
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    out = np.array(q)
    out /= np.linalg.norm(out)
    if out[3] < 0.0:
        out = -out
    return out


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> Array:
    """URDF fixed-axis roll-pitch-yaw [rad] to a rotation: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def matrix_to_rpy(r: Array) -> Array:
    """The roll, pitch and yaw angles [rad] of a rotation, inverse of :func:`rpy_to_matrix`."""
    m = np.asarray(r, dtype=float)
    pitch = math.atan2(-m[2, 0], math.hypot(m[0, 0], m[1, 0]))
    if abs(math.cos(pitch)) < 1e-12:
        return np.array([math.atan2(-m[1, 2], m[1, 1]), pitch, 0.0])
    return np.array([math.atan2(m[2, 1], m[2, 2]), pitch, math.atan2(m[1, 0], m[0, 0])])


def skew(v: Array) -> Array:
    """(3, 3) cross-product matrix of a (3,) vector v: ``skew(v) @ b == cross(v, b)``."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def so3_exp(w: Array) -> Array:
    """Rotation of the rotation vector w [rad] (axis * angle), Rodrigues' formula."""
    w = np.asarray(w, dtype=float)
    theta = float(np.linalg.norm(w))
    k = skew(w)
    if theta < 1e-9:
        return np.eye(3) + k + 0.5 * (k @ k)
    return np.eye(3) + (math.sin(theta) / theta) * k + ((1 - math.cos(theta)) / theta**2) * (k @ k)


def so3_log(r: Array) -> Array:
    """Rotation vector (3,) [rad] of a rotation matrix: the inverse of :func:`so3_exp`.

    Stable near 0 and near pi (angle in [0, pi]).
    """
    m = np.asarray(r, dtype=float)[:3, :3]
    q = matrix_to_quat(m)  # w >= 0 so the angle is in [0, pi]
    v = q[:3]
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        return 2.0 * v  # small angle: sin(a/2) ~ a/2
    angle = 2.0 * math.atan2(s, q[3])
    return v * (angle / s)


def make_pose(rotation: Array | None = None, translation: Array | None = None) -> Array:
    """(4, 4) homogeneous pose from a (3, 3) rotation and a (3,) translation [m]."""
    t = np.eye(4)
    if rotation is not None:
        t[:3, :3] = rotation
    if translation is not None:
        t[:3, 3] = translation
    return t


def pose_from_xyz_quat(xyz: Array, quat_xyzw: Array) -> Array:
    """(4, 4) pose from a position [m] and a quaternion (x, y, z, w)."""
    return make_pose(quat_to_matrix(quat_xyzw), np.asarray(xyz, dtype=float))


def pose_inverse(t: Array) -> Array:
    """Inverse of a (4, 4) rigid transform."""
    out = np.eye(4)
    rt = t[:3, :3].T
    out[:3, :3] = rt
    out[:3, 3] = -rt @ t[:3, 3]
    return out


def adjoint(t: Array) -> Array:
    """(6, 6) adjoint of a pose for twists ordered (linear, angular).

    Maps a twist expressed in the child frame at the child origin to the parent frame at
    the parent origin: ``[v; w]_parent = adjoint(T) @ [v; w]_child``.
    """
    r = t[:3, :3]
    out = np.zeros((6, 6))
    out[:3, :3] = r
    out[3:, 3:] = r
    out[:3, 3:] = skew(t[:3, 3]) @ r
    return out


def pose_error(current: Array, target: Array) -> Array:
    """(6,) error [m, rad] from ``current`` to ``target``, both (4, 4) in one frame.

    Linear part: target position - current position; angular part: the rotation vector of
    ``target_R @ current_R^T`` (both expressed in the common frame).
    """
    out = np.empty(6)
    out[:3] = target[:3, 3] - current[:3, 3]
    out[3:] = so3_log(target[:3, :3] @ current[:3, :3].T)
    return out


__all__ = [
    "adjoint",
    "make_pose",
    "matrix_to_quat",
    "matrix_to_rpy",
    "pose_error",
    "pose_from_xyz_quat",
    "pose_inverse",
    "quat_to_matrix",
    "rpy_to_matrix",
    "skew",
    "so3_exp",
    "so3_log",
]
