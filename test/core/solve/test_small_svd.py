"""The thin SVD of small matrices against LAPACK's: shapes, order, accuracy, the fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from itasc_ros.core.solve.small_svd import (
    JACOBI_MAX_ENTRIES,
    JACOBI_MAX_ROWS,
    MEMORY_SIZE,
    thin_svd,
    thin_svd_from,
)

SHAPES = [(6, 7), (3, 7), (7, 3), (1, 7), (7, 1), (6, 6), (12, 7), (8, 12), (13, 7), (24, 32)]


def _check(a: np.ndarray, memory: np.ndarray | None = None) -> None:
    for layout in (np.ascontiguousarray, np.asfortranarray):  # the caller's matrix untouched
        given = layout(a)
        thin_svd(given)
        assert np.array_equal(given, a)
    u, s, vt = thin_svd(a) if memory is None else thin_svd_from(a, memory)
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


@pytest.mark.parametrize("shape", [(6, 7), (3, 7), (7, 3), (12, 7), (6, 6)])
def test_a_slowly_changing_matrix_started_from_its_last_rotation_is_still_exact(
    shape: tuple[int, int],
) -> None:
    """Tick after tick (a Jacobian moving a little): the SVD of each matrix, to the same test."""
    rng = np.random.default_rng(sum(shape) + 1)
    a, da = rng.standard_normal(shape), rng.standard_normal(shape) * 1e-3
    memory = np.zeros(MEMORY_SIZE)
    for i in range(300):
        _check(a + i * da, memory)
        assert tuple(memory[:2]) == shape  # its rotation kept for the next one
    k = min(shape)  # the rotation it keeps is one: the rounding of the ticks does not add up
    g = memory[2 : 2 + k * k].reshape(k, k)
    assert np.abs(g @ g.T - np.eye(k)).max() < 1e-12


def test_a_memory_of_another_shape_or_of_no_rotation_is_not_started_from() -> None:
    rng = np.random.default_rng(3)
    memory = np.zeros(MEMORY_SIZE)
    _check(rng.standard_normal((6, 7)), memory)
    _check(rng.standard_normal((5, 7)), memory)  # another shape: from the matrix
    assert tuple(memory[:2]) == (5, 7)
    for bad in (0.0, np.nan, np.inf, 1e300):  # not a rotation: from the matrix, then kept
        memory[2:] = bad
        _check(rng.standard_normal((5, 7)), memory)
        assert np.all(np.isfinite(memory[: 2 + 5 * 5]))  # the rotation it keeps
    far = rng.standard_normal((5, 7)) * 1e6  # a rotation of a matrix far from this one
    _check(far, memory)
    _check(rng.standard_normal((5, 7)), memory)
    big = rng.standard_normal((9, 12))  # LAPACK's: no rotation to keep
    _check(big, memory)
    assert memory[0] == -1.0
    _check(rng.standard_normal((5, 7)), memory)  # and on from the matrix again
    assert tuple(memory[:2]) == (5, 7)


def test_no_memory_is_none_kept() -> None:
    """``thin_svd`` is ``thin_svd_from`` with an empty memory: each call of its own."""
    a = np.random.default_rng(4).standard_normal((6, 7))
    u, s, vt = thin_svd(a)
    u2, s2, vt2 = thin_svd_from(a, np.zeros(0))
    assert np.array_equal(s, s2) and np.array_equal(u, u2) and np.array_equal(vt, vt2)
