"""Hard joint bounds by saturation in the null space, level by level, on the Panda.

* with velocity limits binding, the higher level's task velocity is that of the higher level
  solved alone with the same bounds (the lower level only uses what is left);
* no bound is ever exceeded, whatever the levels ask;
* a level that cannot be done within the bounds is scaled, its direction kept.
"""

from __future__ import annotations

import numpy as np

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.solve import solver as S
from itasc_ros.tools.resources import robot_urdf

TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
HOME = home_of("panda")
N = TREE.n_joints
DT = 0.004
LAM, EPS = 0.1, 0.06


def _kernel(
    a: np.ndarray,
    b: np.ndarray,
    q: np.ndarray,
    levels: list[int],
    vmax: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    method: int = 0,
    box: tuple[np.ndarray, np.ndarray] | None = None,
    side: np.ndarray | None = None,
    eps: float = EPS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """solve_prioritized with unit weights: (q', locked, info); ``box``: the motion box,
    ``side``: its position sides (+1 upper, -1 lower)."""
    blo, bhi = box if box is not None else (np.full(N, -np.inf), np.full(N, np.inf))
    m = a.shape[0]
    qdot, locked, info = np.zeros(N), np.zeros(N, dtype=bool), np.zeros(S.INFO_SIZE)
    S.solve_prioritized(
        np.ascontiguousarray(a),
        b.copy(),
        np.ones(m),
        np.ones(N),
        q.copy(),
        lower,
        upper,
        vmax,
        DT,
        method,
        LAM,
        eps,
        np.pi,
        qdot,
        locked,
        np.zeros((m, N)),
        np.zeros(m),
        np.zeros(N),
        np.zeros(N),
        info,
        np.array(levels, dtype=np.int64),
        len(levels) - 1,
        np.zeros((N, N)),
        np.zeros((m, N)),
        np.zeros(m),
        np.zeros(N),
        blo,
        bhi,
        np.zeros(m, dtype=bool),
        np.zeros(N) if side is None else side.astype(float),
        np.zeros(m, dtype=bool),
    )
    return qdot, locked, info


def _draw(rng: np.random.Generator, speed: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A configuration inside the limits, the hand position rows (level 1) and the joint rows
    (level 2) stacked, and right-hand sides of the given order [m/s, rad/s]."""
    span = TREE.upper - TREE.lower
    q = TREE.lower + span * rng.uniform(0.02, 0.98, N)
    a = np.vstack([TREE.jacobian(q, "panda_hand")[:3], np.eye(N)])
    b = np.concatenate([rng.normal(size=3) * speed, rng.normal(size=N) * 3.0 * speed])
    return q, a, b


def _box(q: np.ndarray, vmax: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi = np.minimum(vmax, np.maximum(0.0, (TREE.upper - q) / DT))
    lo = np.maximum(-vmax, np.minimum(0.0, (TREE.lower - q) / DT))
    return lo, hi


def test_the_higher_level_is_the_higher_level_alone_under_saturation() -> None:
    rng = np.random.default_rng(11)
    vmax = TREE.velocity_limits
    checked = saturated = 0
    for _ in range(400):
        q, a, b = _draw(rng, rng.uniform(0.2, 4.0))
        if np.linalg.svd(a[:3], compute_uv=False).min() < EPS:
            continue  # in level 1's damping band the projector hands a share over, by design
        alone, _, info1 = _kernel(a[:3], b[:3], q, [0, 3], vmax, TREE.lower, TREE.upper)
        both, _, info = _kernel(a, b, q, [0, 3, 3 + N], vmax, TREE.lower, TREE.upper)
        free, _, _ = _kernel(
            a, b, q, [0, 3, 3 + N], np.full(N, np.inf), TREE.lower - 1e9, TREE.upper + 1e9
        )
        lo, hi = _box(q, vmax)
        if np.any(free > hi) or np.any(free < lo):
            saturated += 1
        checked += 1
        np.testing.assert_allclose(a[:3] @ both, a[:3] @ alone, rtol=0.0, atol=1e-9)
        assert info[S.INFO_SCALE] == info1[S.INFO_SCALE]
        assert np.all(both <= hi + 1e-12) and np.all(both >= lo - 1e-12)
    assert checked >= 200 and saturated >= checked // 2


def test_no_bound_is_ever_exceeded() -> None:
    rng = np.random.default_rng(12)
    for i in range(300):
        q, a, b = _draw(rng, rng.uniform(0.1, 20.0))
        if i % 3 == 0:  # joints at or just inside their limits
            k = rng.integers(0, N, 3)
            q[k] = np.where(rng.random(3) < 0.5, TREE.lower[k], TREE.upper[k] - 1e-4)
        vmax = TREE.velocity_limits * rng.uniform(0.05, 1.0)
        lo, hi = _box(q, vmax)
        for method in (0, 1):
            qdot, locked, info = _kernel(
                a, b, q, [0, 3, 3 + N], vmax, TREE.lower, TREE.upper, method
            )
            assert info[S.INFO_FINITE] == 1.0
            assert np.all(qdot <= hi + 1e-12) and np.all(qdot >= lo - 1e-12)
            assert np.all(
                (qdot[locked] >= hi[locked] - 1e-12) | (qdot[locked] <= lo[locked] + 1e-12)
            )
            assert 0.0 <= info[S.INFO_SCALE] <= 1.0


def test_an_infeasible_level_keeps_its_direction() -> None:
    """Level 1 asks for far more than the velocity limits allow: its task velocity is s times
    the unbounded one (s < 1), with or without a level below."""
    rng = np.random.default_rng(13)
    vmax = TREE.velocity_limits
    big = np.full(N, np.inf)
    scaled = 0
    for _ in range(200):
        q, a, b = _draw(rng, 10.0)
        if np.linalg.svd(a[:3], compute_uv=False).min() < EPS:
            continue
        d1 = a[:3] @ _kernel(a[:3], b[:3], q, [0, 3], big, TREE.lower - 1e9, TREE.upper + 1e9)[0]
        for levels in ([0, 3], [0, 3, 3 + N]):
            rows = levels[-1]
            qdot, _, info = _kernel(a[:rows], b[:rows], q, levels, vmax, TREE.lower, TREE.upper)
            s = info[S.INFO_SCALE]
            assert 0.0 < s <= 1.0
            np.testing.assert_allclose(
                a[:3] @ qdot, s * d1, rtol=0.0, atol=1e-9 * max(1.0, s * np.abs(d1).max())
            )
            scaled += s < 1.0
    assert scaled >= 100


def test_a_joint_on_its_braking_curve_is_held_and_the_level_goes_on_with_the_others() -> None:
    """Joint 1's box ends at the braking curve before its upper limit (a small speed that
    shrinks as it closes in) and the task needs it faster; without joint 1 the task needs
    damping (a singular value of 0.03). Scaling the level to joint 1's speed (what velocity
    limits get: the direction kept) would scale the task toward zero tick after tick, a
    frozen arm. With the side marked as a position limit's, the level holds joint 1 there
    and goes on with the other six, damped: several times more of the task, nearer to it."""
    a = np.zeros((6, N))
    a[:, 1:] = np.diag([1.0, 0.8, 0.6, 0.5, 0.4, 0.03])
    a[5, 0], a[0, 0] = 1.0, 0.2
    b = np.array([0.1, -0.1, 0.05, 0.1, 0.0, 0.5])
    vmax = np.full(N, 3.0)
    lower, upper = np.full(N, -3.0), np.full(N, 3.0)
    hi = vmax.copy()
    hi[0] = 0.03  # the braking curve
    box = (-vmax, hi)
    side = np.zeros(N)
    side[0] = 1.0
    for method in (0, 1):
        scaled, _, info0 = _kernel(a, b, np.zeros(N), [0, 6], vmax, lower, upper, method, box)
        assert info0[S.INFO_SCALE] < 0.1  # joint 1's ratio: the task nearly stopped
        qdot, locked, info = _kernel(
            a, b, np.zeros(N), [0, 6], vmax, lower, upper, method, box, side
        )
        assert info[S.INFO_FINITE] == 1.0 and info[S.INFO_SCALE] == 1.0
        assert qdot[0] == hi[0] and locked[0]
        assert np.all(qdot <= hi + 1e-12) and np.all(qdot >= -vmax - 1e-12)
        got, before = a @ qdot, a @ scaled
        assert got @ b > 3.0 * (before @ b)
        assert np.linalg.norm(got - b) < 0.9 * np.linalg.norm(before - b)


def test_a_saturated_joint_is_reported_and_held_exactly() -> None:
    """Joint 3 at its upper limit, a task that needs it further: held at 0, the others do the
    task (the Panda is redundant), reported as the only saturated joint."""
    q = HOME.copy()
    q[2] = TREE.upper[2]
    jac = TREE.jacobian(q, "panda_hand")
    b = jac[:, 2] * 0.5
    qdot, locked, info = _kernel(jac, b, q, [0, 6], TREE.velocity_limits, TREE.lower, TREE.upper)
    assert np.flatnonzero(locked).tolist() == [2] and qdot[2] == 0.0
    np.testing.assert_allclose(jac @ qdot, b, atol=1e-9)
    assert info[S.INFO_SCALE] == 1.0 and info[S.INFO_ITERATIONS] == 2


def test_a_motion_box_that_excludes_zero_is_kept_and_the_hierarchy_is_exact() -> None:
    """The acceleration window around the last command (it may exclude zero: the joints are
    moving and may slow down only so fast) is a bound of every level: every joint stays in it,
    and level 1 with a level below equals level 1 alone in the same box."""
    rng = np.random.default_rng(14)
    vmax = TREE.velocity_limits
    acc = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
    checked = excluded = 0
    for _ in range(300):
        q, a, b = _draw(rng, rng.uniform(0.1, 4.0))
        if np.linalg.svd(a[:3], compute_uv=False).min() < EPS:
            continue
        v_prev = vmax * rng.uniform(-0.9, 0.9, N)
        box = (v_prev - acc * DT, v_prev + acc * DT)
        excluded += bool(np.any((box[0] > 0.0) | (box[1] < 0.0)))
        lo, hi = _box(q, vmax)
        lo, hi = np.maximum(lo, box[0]), np.minimum(hi, box[1])
        if np.any(lo > hi):
            continue  # a joint near its position limit, moving fast toward it
        alone, _, _ = _kernel(a[:3], b[:3], q, [0, 3], vmax, TREE.lower, TREE.upper, box=box)
        both, _, info = _kernel(a, b, q, [0, 3, 3 + N], vmax, TREE.lower, TREE.upper, box=box)
        assert info[S.INFO_FINITE] == 1.0
        assert np.all(both <= hi + 1e-12) and np.all(both >= lo - 1e-12)
        assert np.all(alone <= hi + 1e-12) and np.all(alone >= lo - 1e-12)
        np.testing.assert_allclose(a[:3] @ both, a[:3] @ alone, rtol=0.0, atol=1e-9)
        checked += 1
    assert checked >= 150 and excluded >= checked // 2


def test_the_top_levels_held_increment_equals_the_general_one() -> None:
    """Joints held at the top level: the SVD-free path gives the general path's increment.

    The general path (an SVD of the held rows, ``N`` given as the identity matrix) and the
    top level's (the task's free columns) are the same solve up to rounding, holds of one to
    all but one joint, with and without stopping on lost rank.
    """
    from itasc_ros.core.solve.saturation import _held_increment

    rng = np.random.default_rng(7)
    n, lam = 7, (0.1, 0.05, 10.0)  # as the solve passes it: its compiled code
    cw = np.zeros((0, n))
    compared = 0
    for _ in range(300):
        m = int(rng.integers(1, 7))
        ak, r, xprev = rng.normal(size=(m, n)), rng.normal(size=m), rng.normal(size=n)
        sat = np.zeros(n, dtype=np.bool_)
        sat[rng.choice(n, int(rng.integers(1, n)), replace=False)] = True
        satval = np.where(sat, rng.normal(size=n), 0.0)
        rank0 = min(m, n)
        stop = bool(rng.integers(2))
        out = []
        for ident in (True, False):
            a, bb = np.zeros(n), np.zeros(n)
            ref = np.array([rank0, 0.5, 0.0])
            ok = _held_increment(
                ak, r, xprev, np.eye(n), ident, sat, satval, ref, stop, 0, lam, a, bb, cw
            )
            out.append((ok, a, bb))
        (ok1, a1, b1), (ok2, a2, b2) = out
        assert ok1 == ok2
        if ok1:
            compared += 1
            assert np.allclose(a1, a2, atol=1e-10) and np.allclose(b1, b2, atol=1e-10)
            # held joints at their values (to rounding: _keep then sets them exactly)
            assert np.allclose(b1[sat], satval[sat], atol=1e-12) and not a1[sat].any()
    assert compared > 100


def test_the_least_motion_shortcut_equals_the_saturating_level() -> None:
    """The least-motion level's shortcuts give what the general level gives, to rounding.

    The general level: the exact null space of the rows from their own SVD, then a level
    ``q' = 0`` saturating in it (:func:`_sns_level` with the identity as its task). The
    solver's: the null space from the one level's SVD when it has one, and the first step
    ``-P x`` taken whole when it stays in the box. Boxes wide (the step taken whole) and
    narrow (joints saturated), one to seven rows, rank-deficient rows included.
    """
    from itasc_ros.core.solve.damped_inverse import _projector
    from itasc_ros.core.solve.saturation import _sns_level
    from itasc_ros.core.solve.small_svd import thin_svd

    rng = np.random.default_rng(11)
    n, lam = 7, (0.1, 0.05, 10.0)  # as the solve passes it: its compiled code
    cw, cl, side = np.zeros((0, n)), np.zeros(0), np.zeros(n)
    whole = saturated = 0
    for k in range(400):
        m = int(rng.integers(1, n + 1))
        aw = rng.normal(size=(m, n))
        if k % 5 == 0 and m > 1:
            aw[-1] = aw[0] * rng.normal()  # a repeated direction: rank m - 1
        x = rng.normal(size=n)
        wide = k % 2 == 0
        reach = np.linalg.norm(x) * (rng.uniform(1.0, 3.0, n) if wide else rng.uniform(0, 0.3, n))
        lo, hi = x - reach - 1e-3, x + reach + 1e-3
        _, sv, vt = thin_svd(aw)
        proj = np.zeros((n, n))
        _projector(sv, vt, 0.0, lam[1], proj)
        expected, held = x.copy(), np.zeros(n, dtype=np.bool_)
        _sns_level(
            np.eye(n), -x, proj, False, lo, hi, 0, lam, expected, held, cw, cl, side, np.zeros(0)
        )
        for sv1, vt1 in ((np.zeros(0), np.zeros((0, n))), (sv, vt)):
            got, work = x.copy(), np.zeros((n, n))
            S._least_motion(aw, m, lo, hi, lam, got, held, work, cw, cl, side, sv1, vt1)
            np.testing.assert_allclose(got, expected, rtol=0.0, atol=1e-12)
            assert np.all(got >= lo - 1e-12) and np.all(got <= hi + 1e-12)
        step = -proj @ x
        inside = np.all(x + step >= lo) and np.all(x + step <= hi)
        whole += bool(inside)
        saturated += not inside
    assert whole > 100 and saturated > 100


def test_an_undamped_lower_level_left_only_rounding_by_the_levels_above_is_not_inverted() -> None:
    """What the levels above (and held joints) leave of a lower level is ``M = ak Z``; when they
    leave it nothing, ``M`` is rounding of ``ak``'s scale. Its singular values are then judged
    against ``ak``'s scale, not against its own largest: undamped, none is inverted (relative to
    its own largest they looked like a full rank, with gains of 1e16); damped, the damping
    bounds it; a task that is small in its own right is still inverted."""
    from itasc_ros.core.solve.damped_inverse import _apply, _scale
    from itasc_ros.core.solve.small_svd import thin_svd

    rng = np.random.default_rng(5)
    ak = np.eye(N)  # a posture level
    nz = np.linalg.qr(rng.normal(size=(N, N - 1)))[0]  # a basis of what is left free
    rounding = 1e-10 * rng.normal(size=(N, N - 1))  # nothing left of ak, but rounding
    r = rng.normal(size=N)
    u, s, vt = thin_svd(rounding)
    w = np.empty(N - 1)
    _apply(u, s, vt, rounding, r, 0, False, 0.0, EPS, np.pi, w, _scale(ak))
    assert not w.any()
    _apply(u, s, vt, rounding, r, 0, False, 0.0, EPS, np.pi, w, 0.0)  # its own scale: inverted
    assert np.abs(w).max() > 1e8
    _apply(u, s, vt, rounding, r, 0, False, LAM, EPS, np.pi, w, _scale(ak))  # damped: bounded
    assert np.abs(w).max() < 1e-6
    small = 1e-10 * ak  # a task small in its own right: its own scale, inverted
    m = small @ nz
    u, s, vt = thin_svd(m)
    _apply(u, s, vt, m, r, 0, False, 0.0, EPS, np.pi, w, _scale(small))
    np.testing.assert_allclose(m @ w, (nz @ nz.T) @ r, atol=1e-12)
