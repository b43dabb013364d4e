"""Damped Newton steps, and secondary constraints in the null space of the primary ones.

A step is ``dq = A^T (A A^T + lambda I)^-1 e``; a secondary step is projected into the null
space of the primary rows, and :func:`polish` slides a solution along the primary
constraints' solutions toward the secondary ones.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .options import IkOptions
from .set_problem import SetProblem

Array = NDArray[np.float64]


def damped_step(a: Array, e: Array, lam: float) -> Array:
    """``a^T (a a^T + lam I)^-1 e`` (n,) for a (m, n), e (m,) and a damping ``lam`` >= 0."""
    mm = a @ a.T  # (m, m)
    mm[np.diag_indices_from(mm)] += lam
    return np.asarray(a.T @ np.linalg.solve(mm, e))


def null_space_step(a: Array, dq: Array, posture: SetProblem, q: Array, lam: float) -> Array:
    """(n,) the secondary rows' damped step projected into the null space of ``a`` (m, n).

    Args:
        a: (m, n) the primary rows at ``q``.
        dq: (n,) the primary step [rad or m] (the secondary rows see its effect).
        posture: the secondary constraints.
        q: (n,) the configuration [rad or m].
        lam: the primary step's damping (at least 1e-3 is used).
    """
    a2, e2, _ = posture.rows(q)
    if not a2.size:
        return np.zeros_like(dq)
    n = a.shape[1]
    null = np.eye(n) - np.linalg.pinv(a, rcond=1e-6) @ a  # (n, n)
    a2n = a2 @ null
    return null @ damped_step(a2n, e2 - a2 @ dq, max(lam, 1e-3))


def polish(
    primary: SetProblem,
    posture: SetProblem,
    q: Array,
    tols: Array,
    lo: Array,
    hi: Array,
    opts: IkOptions,
    iterations: int = 20,
) -> tuple[Array, Array]:
    """Move along the solutions toward the secondary constraints; keep the primary ones met.

    Each round takes the secondary step in the null space of the primary rows, then Newton
    steps back onto the primary constraints; a round that leaves them unmet or does not lower
    the secondary error halves the step, and the last configuration that met them is kept.

    Args:
        primary: the constraints that decide success, met at ``q``.
        posture: the secondary constraints.
        q: (n,) a solution [rad or m].
        tols: (m,) the tolerance of each primary row.
        lo: (n,) the lower joint limits [rad or m].
        hi: (n,) the upper joint limits [rad or m].
        opts: the loop's tuning (``max_step``, ``lambda_min``).
        iterations: rounds at most.

    Returns:
        (the configuration kept (n,), its primary errors (m,)).
    """
    a, _, e = primary.rows(q)
    _, e2, _ = posture.rows(q)
    cost = float(e2 @ e2)
    scale = 1.0
    for _ in range(iterations):
        dq = scale * null_space_step(a, np.zeros(q.shape[0]), posture, q, 1e-3)
        big = float(np.max(np.abs(dq)))
        if big < 1e-9:
            break
        if big > opts.max_step:
            dq *= opts.max_step / big
        q_new = np.clip(q + dq, lo, hi)
        for _ in range(6):  # back onto the primary constraints
            a_new, ew_new, e_new = primary.rows(q_new)
            if np.all(np.abs(e_new) <= tols):
                break
            q_new = np.clip(q_new + damped_step(a_new, ew_new, opts.lambda_min), lo, hi)
        _, e2, _ = posture.rows(q_new)
        new_cost = float(e2 @ e2)
        if np.all(np.abs(e_new) <= tols) and new_cost < cost * (1.0 - 1e-6):
            q, a, e, cost = q_new, a_new, e_new, new_cost
            scale = min(1.0, 2.0 * scale)
        else:
            scale *= 0.5
            if scale < 1e-3:
                break
    return q, e


__all__ = ["damped_step", "null_space_step", "polish"]
