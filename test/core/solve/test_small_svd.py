"""The thin SVD of small matrices against LAPACK's: shapes, order, accuracy, the fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from itasc_ros.core.solve.small_svd import JACOBI_MAX_ENTRIES, JACOBI_MAX_ROWS, thin_svd

SHAPES = [(6, 7), (3, 7), (7, 3), (1, 7), (7, 1), (6, 6), (12, 7), (8, 12), (13, 7), (24, 32)]


def _check(a: np.ndarray) -> None:
    for layout in (np.ascontiguousarray, np.asfortranarray):  # the caller's matrix untouched
        given = layout(a)
        thin_svd(given)
        assert np.array_equal(given, a)
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


@pytest.mark.parametrize("rank", [0, 1, 3, 6])
def test_a_task_projected_into_a_null_space_keeps_orthonormal_vectors(rank: int) -> None:
    """A lower level's rows: rank-deficient by construction, with exact zero rows too."""
    rng = np.random.default_rng(rank)
    upper = rng.standard_normal((6, 7))
    _, _, vt = np.linalg.svd(upper)
    null = np.eye(7) - vt[:6].T @ vt[:6]  # rank 1
    posture = rng.standard_normal((7, 7))
    _check(posture @ null)  # rank 1 of 7
    a = rng.standard_normal((rank, 7)) @ rng.standard_normal((7, 7)) if rank else np.zeros((0, 7))
    padded = np.vstack([a, np.zeros((6 - rank, 7))])  # rows switched off: weight 0
    if rank:
        _check(padded)
        _check(padded.T)


def test_an_arm_task_is_within_jacobis_limits_and_a_humanoids_beyond() -> None:
    """The sizes the limits are set for (the humanoid's go to LAPACK, checked above)."""
    assert 6 <= JACOBI_MAX_ROWS and 12 * 7 <= JACOBI_MAX_ENTRIES < 24 * 32
