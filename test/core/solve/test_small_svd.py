"""The thin SVD of small matrices against LAPACK's: shapes, order, accuracy, the fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from itasc_ros.core.solve.small_svd import JACOBI_MAX_ENTRIES, JACOBI_MAX_ROWS, thin_svd

SHAPES = [(6, 7), (3, 7), (7, 3), (1, 7), (7, 1), (6, 6), (12, 7), (8, 12), (13, 7), (24, 32)]


def _check(a: np.ndarray) -> None:
    u, s, vt = thin_svd(a)
    s_ref = np.linalg.svd(a, compute_uv=False)
    k = min(a.shape)
    assert u.shape == (a.shape[0], k) and s.shape == (k,) and vt.shape == (k, a.shape[1])
    scale = max(float(s_ref[0]), 1e-300)
    assert np.all(np.diff(s) <= 1e-12 * scale)  # descending
    assert np.abs(s - s_ref).max() <= 1e-12 * scale
    assert np.abs(u @ np.diag(s) @ vt - a).max() <= 1e-12 * scale
    assert np.allclose(u.T @ u, np.eye(k), atol=1e-10)
    assert np.allclose(vt @ vt.T, np.eye(k), atol=1e-10)


@pytest.mark.parametrize("shape", SHAPES)
def test_thin_svd_matches_lapack_on_random_matrices(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    for _ in range(50):
        _check(rng.standard_normal(shape) * 10.0 ** rng.uniform(-4, 4))


@pytest.mark.parametrize("shape", [(6, 7), (3, 7), (7, 3), (6, 6)])
def test_rank_deficient_and_nearly_so_fall_back_or_stay_exact(shape: tuple[int, int]) -> None:
    """A zero row, two parallel rows, two nearly parallel: still a full orthonormal SVD."""
    rng = np.random.default_rng(7)
    for kind in range(3):
        a = rng.standard_normal(shape)
        if kind == 0:
            a[-1] = 0.0
        elif kind == 1:
            a[0] = 2.0 * a[1]
        else:
            a[0] = a[1] * (1.0 + 1e-9)
        _check(a)


def test_an_arm_task_is_within_jacobis_limits_and_a_humanoids_beyond() -> None:
    """The sizes the limits are set for (the humanoid's go to LAPACK, checked above)."""
    assert 6 <= JACOBI_MAX_ROWS and 12 * 7 <= JACOBI_MAX_ENTRIES < 24 * 32
