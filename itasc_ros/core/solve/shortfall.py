"""How much of each task a command gives, and what held it back (a scene's report, in words).

:meth:`Scene.following <itasc_ros.core.solve.scene.Scene.following>` and
:meth:`Scene.limiting <itasc_ros.core.solve.scene.Scene.limiting>` read the last solve through
these functions: the fraction of each task's asked velocity a command gives its rows, and the
causes of a shortfall (a joint held at a position limit or at a velocity or motion limit,
damping near a singularity, collision rows at their bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit
from numpy.typing import NDArray

from .workspace import (
    F_INEQ,
    F_REDUNDANT,
    F_SOFT,
    LEVELS,
    NLEV,
    PAR_SIZE,
    R_A,
    R_ASKED,
    R_PAR,
    R_WY,
    STRIDE,
    T_ROW,
    T_ROWS,
    K,
    M,
    N,
    SceneWorkspace,
    _mat,
    _vec,
)

Array = NDArray[np.float64]

MIN_ASKED = 1e-4
"""A task asking for less than this (the norm of its right-hand side, task units/s) is
followed whatever the command: :meth:`Scene.following` gives NaN for it."""


@njit(cache=True, nogil=True)
def followed_fraction(a, rhs, wy, qdot):  # pragma: no cover - compiled
    """How much of its asked velocity ``rhs`` (m,) a task's rows ``a`` (m, n) get from ``qdot``.

    ``<a q', rhs> / |rhs|^2`` over the rows with a weight (1: all of it, in its direction; 0:
    none); NaN when the task asks for less than :data:`MIN_ASKED`.
    """
    dot = 0.0
    asked = 0.0
    for r in range(a.shape[0]):
        if wy[r] <= 0.0:
            continue
        got = 0.0
        for j in range(a.shape[1]):
            got += a[r, j] * qdot[j]
        dot += got * rhs[r]
        asked += rhs[r] * rhs[r]
    if asked < MIN_ASKED * MIN_ASKED:
        return math.nan
    return dot / asked


@njit(cache=True)
def task_fractions(model, rows, row_flags, qdot, out):  # pragma: no cover - compiled
    """How much of each constraint's asked velocity the command ``qdot`` (n,) gives, into ``out``.

    One call over a scene's packed buffers (:class:`~itasc_ros.core.solve.workspace.
    SceneWorkspace`: ``model``, ``rows``, ``row_flags``), as its last solve left them. ``out``
    (k,), in the constraints' order: ``<A_i q', b_i> / |b_i|^2`` for a task's rows ``A_i`` and
    its asked velocity ``b_i = y'_d + B Xu'`` (the pose feedback within its configured speeds,
    before the motion limits' demand limit cuts it to what one tick allows): 1, all of it;
    less: scaled by a limit, damped near a singularity, held off by a collision row
    (:func:`followed_fraction`). NaN for a constraint that is not a task this tick (one-sided
    rows, no target, weight 0), a term that only resolves redundancy (a posture under the tasks
    it serves) or one that asks for less than :data:`MIN_ASKED`.
    """
    n, m, k, nlev = model[N], model[M], model[K], model[NLEV]
    a = _mat(rows, model, R_A, m, n)
    wy, asked = _vec(rows, model, R_WY, m), _vec(rows, model, R_ASKED, m)
    par = _mat(rows, model, R_PAR, k, PAR_SIZE)
    ineq, soft = _vec(row_flags, model, F_INEQ, m), _vec(row_flags, model, F_SOFT, m)
    redundant = _vec(row_flags, model, F_REDUNDANT, m)
    table = LEVELS + nlev + 1
    for i in range(k):
        r0 = model[table + STRIDE * i + T_ROW]
        r1 = r0 + model[table + STRIDE * i + T_ROWS]
        if r1 == r0 or par[i, 2] == 0.0 or ineq[r0] or soft[r0] or redundant[r0]:
            out[i] = math.nan  # not a task this tick (the aims flag: it has a target)
        else:
            out[i] = followed_fraction(a[r0:r1], asked[r0:r1], wy[r0:r1], qdot)


def warm_up() -> None:
    """Compile (or load) :func:`task_fractions` now: a first task must not wait for it."""
    ws = SceneWorkspace(1)
    ws.build([(0, 1, False)], 1, np.array([0, 1], dtype=np.int64), [(False, False, False)])
    task_fractions(ws.model, ws.rows, ws.row_flags, np.zeros(1), np.zeros(1))


def limiting_causes(
    names: Sequence[str],
    locked: NDArray[np.bool_],
    side: Array,
    box_lo: Array,
    box_hi: Array,
    qdot: Array,
    damping: float,
    sigma_min: float,
    views: Sequence[tuple[Any, ...]],
) -> list[str]:
    """What held a solve's command ``qdot`` (n,) back, in words; empty when nothing did.

    Args:
        names: (n,) the joints' names.
        locked: (n,) the joints the solve held at a bound of their box.
        side: (n,) the box's position sides (+1 upper, -1 lower, 0 none).
        box_lo: (n,) the box's lower side [rad/s or m/s].
        box_hi: (n,) its upper side.
        qdot: (n,) the command.
        damping: the solve's damping (> 0: near a singularity).
        sigma_min: its smallest singular value.
        views: the scene's per-constraint views (see :func:`task_fractions`).

    Returns:
        Joints held at a position limit (on its braking curve) or at a velocity or motion limit,
        damping near a singularity, collision rows at their bound (their closest pair).
    """
    causes: list[str] = []
    for j in (int(i) for i in np.flatnonzero(locked)):
        if side[j] > 0.0 and abs(qdot[j] - box_hi[j]) <= 1e-9:
            causes.append(f"{names[j]} at its upper limit")
        elif side[j] < 0.0 and abs(qdot[j] - box_lo[j]) <= 1e-9:
            causes.append(f"{names[j]} at its lower limit")
        else:
            causes.append(f"{names[j]} at its velocity or motion limit")
    if damping > 0.0:
        causes.append(f"near a singularity (sigma_min {sigma_min:.3f}, damped)")
    for c, a, _b, _y, _yd, wy, rhs, *_rest in views:
        if not (c.one_sided and c.hard) or not np.any(wy > 0.0):
            continue
        if not np.any((wy > 0.0) & (a @ qdot <= rhs + 1e-6)):
            continue
        distances = getattr(c, "distances", None)
        where = ""
        if distances is not None:
            (la, lb), d = min(distances().items(), key=lambda kv: kv[1])
            where = f" ({la}-{lb or 'obstacle'} at {1e3 * d:.1f} mm)"
        causes.append(f"collision rows of {c.name!r}{where}")
    return causes


__all__ = ["MIN_ASKED", "followed_fraction", "limiting_causes", "task_fractions", "warm_up"]
