"""Compiled kernels of the core against plain numpy statements of the same checks."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from itasc_ros.core.kinematics._kernels import is_rigid_transform
from itasc_ros.core.kinematics.spatial import make_pose, so3_exp

floats = st.floats(-10.0, 10.0, allow_nan=False)


def numpy_rigid(p: np.ndarray, tol: float) -> bool:
    if not np.all(np.isfinite(p)):
        return False
    r = p[:3, :3]
    return bool(np.abs(r.T @ r - np.eye(3)).max() <= tol and np.linalg.det(r) > 0.0)


@settings(max_examples=300, deadline=None)
@given(
    w=st.lists(floats, min_size=3, max_size=3),
    t=st.lists(floats, min_size=3, max_size=3),
    noise=st.sampled_from([0.0, 1e-9, 1e-7, 1e-5, 1e-2]),
    flip=st.booleans(),
    bad=st.sampled_from([None, math.nan, math.inf]),
    seed=st.integers(0, 2**31),
)
def test_is_rigid_transform_matches_numpy(
    w: list[float],
    t: list[float],
    noise: float,
    flip: bool,
    bad: float | None,
    seed: int,
) -> None:
    p = make_pose(so3_exp(np.array(w)), np.array(t))
    p[:3, :3] += noise * np.random.default_rng(seed).normal(size=(3, 3))
    if flip:
        p[:3, 0] *= -1.0  # a reflection: det < 0
    if bad is not None:
        p[seed % 4, (seed // 4) % 4] = bad
    assert is_rigid_transform(p, 1e-6) == numpy_rigid(p, 1e-6)
