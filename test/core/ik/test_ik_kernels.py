"""itasc_ros.core.ik._ik_kernels: the set loop's compiled step at the joint limits."""

from __future__ import annotations

import numpy as np

from itasc_ros.core.ik import _ik_kernels as K


def test_a_step_stopped_at_a_limit_leaves_its_error_to_the_other_joints() -> None:
    def step(rounds: int) -> np.ndarray:
        a, e = np.array([[1.0, 1.0]]), np.array([1.0])
        q, lo, hi = np.zeros(2), np.array([-0.1, -1.0]), np.array([0.1, 1.0])
        work = (np.zeros((1, 1)), np.zeros(1), np.zeros(2), np.zeros(2))
        assert K.bounded_step(a, e, 1e-9, q, lo, hi, 1.0, rounds, *work)
        return q

    assert np.allclose(step(3), [0.1, 0.9], atol=1e-6)  # joint 0 at its limit, 1 takes the rest
    assert np.allclose(step(0), [0.1, 0.5], atol=1e-6)  # without re-solving: clipped only
