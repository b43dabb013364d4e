"""The checks of what a caller gives position IK: pose, seed, axes, budget and options.

Each bad value raises a named error (:class:`~itasc_ros.core.errors.ConfigurationError` for
the problem, :class:`~itasc_ros.core.errors.SolverError` for the solve's settings) that says
what is wrong and what is valid.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, SolverError
from ..kinematics._kernels import is_rigid_transform
from ..kinematics.tree import KinematicTree
from .options import PREFER, IkOptions

Array = NDArray[np.float64]


def check_pose(pose: ArrayLike) -> Array:
    """The target pose as a contiguous (4, 4) float array.

    Raises:
        ConfigurationError: not a (4, 4) finite rigid transform with last row [0, 0, 0, 1].
    """
    try:
        p = np.asarray(pose, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"the target pose must be a (4, 4) matrix: {exc}") from None
    if p.shape != (4, 4):
        raise ConfigurationError(f"the target pose must be a (4, 4) matrix, got shape {p.shape}")
    if not is_rigid_transform(p, 1e-6):
        if not np.all(np.isfinite(p)):
            raise ConfigurationError("the target pose has NaN or Inf values")
        raise ConfigurationError(
            "the target pose is not a rigid transform (rotation not orthonormal with det +1)"
        )
    if p[3, 0] != 0.0 or p[3, 1] != 0.0 or p[3, 2] != 0.0 or p[3, 3] != 1.0:
        raise ConfigurationError(f"the target pose's last row must be [0, 0, 0, 1], got {p[3]}")
    return np.ascontiguousarray(p)


def seed_array(tree: KinematicTree, seed: ArrayLike | None) -> Array:
    """(n,) the seed [rad or m] as floats; None: the tree's mid-range configuration.

    Raises:
        ConfigurationError: not ``tree.n_joints`` numbers (NaN is found later, when clipped).
    """
    if seed is None:
        return tree.neutral()
    if type(seed) is np.ndarray and seed.shape == (tree.n_joints,) and seed.dtype.char == "d":
        return seed  # as it is: the solve copies it
    try:
        s = np.asarray(seed, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"the seed must be {tree.n_joints} numbers: {exc}") from None
    if s.shape != (tree.n_joints,):
        raise ConfigurationError(
            f"the seed has shape {s.shape}; expected ({tree.n_joints},) for joints "
            f"{tree.joint_names}"
        )
    return s


def axis_rows(position_axes: str, rotation_axes: str) -> NDArray[np.int64]:
    """(k,) the selected rows of (position, rotation vector): 0-2 for x/y/z, 3-5 for rotations.

    Raises:
        ConfigurationError: letters other than distinct 'x', 'y', 'z', or no axis at all.
    """
    rows: list[int] = []
    for letters, base, what in ((position_axes, 0, "position"), (rotation_axes, 3, "rotation")):
        low = str(letters).lower()
        if any(a not in "xyz" for a in low) or len(set(low)) != len(low):
            raise ConfigurationError(
                f"{what} axes {letters!r} must be distinct letters from 'x', 'y', 'z' "
                "(e.g. 'xyz', 'xy', 'z' or '')"
            )
        rows += [base + "xyz".index(a) for a in sorted(low)]
    if not rows:
        raise ConfigurationError("select at least one position or rotation axis")
    return np.array(rows, dtype=np.int64)


def _check_positive(name: str, v: float | None, allow_none: bool = False) -> None:
    if v is None and allow_none:
        return
    if not (isinstance(v, float | int) and not isinstance(v, bool) and math.isfinite(v) and v > 0):
        raise SolverError(f"{name} must be a finite number > 0, got {v!r}")


#: Settings found valid (with their types: ``True == 1``), checked once: at most
#: :data:`_VALID_KEPT` of them.
_VALID: set[tuple[object, ...]] = set()
_VALID_KEPT = 64


def check_settings(
    timeout: float | None,
    tolerance: float,
    rotation_tolerance: float | None,
    max_iterations: int | None,
    prefer: str,
    random_seed: int,
    options: IkOptions | None,
) -> None:
    """Check the solve's settings (see :func:`~itasc_ros.core.ik.solve_ik` for their units).

    Settings without ``options`` that passed before pass at once (a solve repeated at a
    high rate checks them once).

    Raises:
        SolverError: the first value out of range, naming it (and the choices of ``prefer``).
    """
    key = None
    if options is None:
        key = (
            timeout, type(timeout), tolerance, type(tolerance), rotation_tolerance,
            type(rotation_tolerance), max_iterations, type(max_iterations), prefer,
            random_seed, type(random_seed),
        )  # fmt: skip
        try:
            if key in _VALID:
                return
        except TypeError:  # an unhashable value: checked (and refused) below
            key = None
    _check_positive("timeout", timeout, allow_none=True)
    _check_positive("tolerance", tolerance)
    _check_positive("rotation_tolerance", rotation_tolerance, allow_none=True)
    if max_iterations is not None and not (
        isinstance(max_iterations, int) and max_iterations >= 1
    ):
        raise SolverError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    if timeout is None and max_iterations is None:
        raise SolverError("give a timeout, max_iterations or both (else the solve may not end)")
    if prefer not in PREFER:
        raise SolverError(f"unknown prefer {prefer!r}; choices are: {', '.join(PREFER)}")
    if not isinstance(random_seed, int | np.integer):
        raise SolverError(f"random_seed must be an integer, got {random_seed!r}")
    if options is not None:
        options.check()
    elif key is not None and len(_VALID) < _VALID_KEPT:
        _VALID.add(key)


__all__ = ["axis_rows", "check_pose", "check_settings", "seed_array"]
