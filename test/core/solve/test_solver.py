"""itasc_ros.core.solve.solver: damped pseudo-inverses, weights, joint and velocity limits.

``damped_pinv_solve`` is checked against numpy's SVD / pinv; ``solve_limited`` (the compiled
kernel the scene calls every tick, ``solve_prioritized``, with one level) is driven directly
with small hand-made systems whose answers are known in closed form, and with the Panda's
Jacobian.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from robots import bundled_urdf_path

from itasc_ros.core import KinematicTree, Scene, SolverError
from itasc_ros.core.solve import solver as S
from itasc_ros.core.solve.solvers import SOLVERS, solver_code

PANDA_HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


def _matrix(rng: np.random.Generator, singular_values: list[float], n: int) -> np.ndarray:
    """(m, n) matrix with the given singular values and random singular vectors."""
    m = len(singular_values)
    u, _ = np.linalg.qr(rng.normal(size=(m, m)))
    v, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return u @ np.diag(singular_values) @ v[:, :m].T


def _expected_lambda(smin: float, lam_max: float, eps: float) -> float:
    return lam_max * math.sqrt(1.0 - (smin / eps) ** 2) if smin < eps else 0.0


def _solve(
    a: np.ndarray,
    b: np.ndarray,
    *,
    wy: np.ndarray | None = None,
    wq: np.ndarray | None = None,
    q: np.ndarray | None = None,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    vmax: np.ndarray | None = None,
    dt: float = 0.01,
    method: int = 0,
    lam_max: float = 0.1,
    eps: float = 0.02,
    gamma_max: float = math.pi,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run solve_limited with defaults (no limits); returns (qdot, locked, info)."""
    m, n = a.shape
    qdot = np.zeros(n)
    locked = np.zeros(n, dtype=bool)
    info = np.zeros(S.INFO_SIZE)
    S.solve_limited(
        np.ascontiguousarray(a, dtype=float),
        np.asarray(b, dtype=float),
        np.ones(m) if wy is None else wy,
        np.ones(n) if wq is None else wq,
        np.zeros(n) if q is None else q,
        np.full(n, -np.inf) if lower is None else lower,
        np.full(n, np.inf) if upper is None else upper,
        np.full(n, np.inf) if vmax is None else vmax,
        dt,
        method,
        lam_max,
        eps,
        gamma_max,
        qdot,
        locked,
        np.zeros((m, n)),
        np.zeros(m),
        np.zeros(n),
        np.zeros(n),
        info,
    )
    return qdot, locked, info


# --------------------------------------------------------------------------- damped_pinv_solve
@pytest.mark.parametrize("shape", [(6, 7), (6, 6), (3, 7), (1, 6)])
def test_pinv_far_from_singularity_equals_numpy(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(0)
    m, n = shape
    a = _matrix(rng, list(np.linspace(2.0, 0.5, m)), n)
    b = rng.normal(size=m)
    for solver in SOLVERS:
        # SDLS clamps per direction at gamma_max; a large gamma_max makes it the plain pinv.
        x, smin, lam = S.damped_pinv_solve(a, b, 0.5, 0.1, solver, gamma_max=1e6)
        np.testing.assert_allclose(x, np.linalg.pinv(a) @ b, atol=1e-12)
        assert smin == pytest.approx(np.linalg.svd(a, compute_uv=False).min(), rel=1e-12)
        assert lam == 0.0


def test_dls_damping_follows_the_formula() -> None:
    """lambda_i^2 = (1 - (s_i/eps)^2) lambda_max^2 below eps, else 0, per singular direction;
    x = V S/(S^2+L^2) U^T b; the lambda reported is sigma_min's."""
    rng = np.random.default_rng(1)
    lam_max, eps = 0.5, 0.1
    lams = []
    smins = [0.3, 0.1, 0.0999, 0.08, 0.05, 0.02, 1e-3, 1e-6, 0.0]
    for smin in smins:
        a = _matrix(rng, [1.5, 1.0, 0.7, 0.4, 0.2, smin], 7)
        b = rng.normal(size=6)
        x, s_got, lam = S.damped_pinv_solve(a, b, lam_max, eps, "dls")
        u, s, vt = np.linalg.svd(a, full_matrices=False)
        assert s_got == pytest.approx(s[-1], abs=1e-12)
        assert lam == pytest.approx(_expected_lambda(s[-1], lam_max, eps), abs=1e-9)
        lam_i = np.array([_expected_lambda(si, lam_max, eps) for si in s])  # per direction
        expected = vt.T @ ((s / (s**2 + lam_i**2)) * (u.T @ b))
        np.testing.assert_allclose(x, expected, atol=1e-10)
        lams.append(lam)
    # Damping rises monotonically as sigma_min falls, up to lambda_max at a singularity.
    assert all(l1 <= l2 + 1e-15 for l1, l2 in itertools.pairwise(lams))
    assert lams[0] == 0.0 and lams[-1] == pytest.approx(lam_max)


@pytest.mark.parametrize(("lam_max", "eps"), [(0.5, 0.1), (0.1, 0.02)])
def test_dls_output_is_bounded_through_a_singularity(lam_max: float, eps: float) -> None:
    """Sweeping the smallest singular value to 0: the undamped pinv blows up as 1/s, DLS does not.

    For lambda_max >= eps the gain of every singular direction is s / (s^2 + lambda^2) <= 1 / eps
    (the maximum is at s = eps, where damping starts), so |x| <= |b| / eps; at s -> 0 the
    singular direction's component vanishes (s / lambda_max^2 -> 0) instead of exploding.
    """
    rng = np.random.default_rng(2)
    u, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    v, _ = np.linalg.qr(rng.normal(size=(7, 7)))
    b = u[:, -1] + 0.1 * u[:, 0]  # mostly along the vanishing direction
    for s in np.geomspace(1.0, 1e-12, 60):
        a = u @ np.diag([1.0, 0.9, 0.8, 0.7, 0.6, s]) @ v[:, :6].T
        x, _, _ = S.damped_pinv_solve(a, b, lam_max, eps, "dls")
        assert np.all(np.isfinite(x))
        assert np.linalg.norm(x) <= np.linalg.norm(b) / eps * (1 + 1e-9)
        if s < 1e-6:
            # Singular direction nearly gone: only the well-conditioned part remains.
            assert np.linalg.norm(x) < 0.1 + 1e-3
            assert np.linalg.norm(np.linalg.pinv(a) @ b) > 1e5


def test_sdls_is_bounded_by_gamma_max() -> None:
    rng = np.random.default_rng(3)
    for gamma_max in (0.5, math.pi):
        for _ in range(200):
            svals = sorted(rng.uniform(0.0, 2.0, size=6), reverse=True)
            svals[-1] *= rng.choice([1.0, 1e-3, 1e-8, 0.0])
            a = _matrix(rng, svals, 7)
            b = rng.normal(size=6) * rng.choice([0.01, 1.0, 100.0])
            x, _, lam = S.damped_pinv_solve(a, b, solver="sdls", gamma_max=gamma_max)
            assert np.all(np.isfinite(x))
            assert np.abs(x).max() <= gamma_max * (1 + 1e-12)
            assert lam == 0.0


def test_sdls_moves_along_the_task_near_a_singularity() -> None:
    """Clamped SDLS still reduces the task error (A x points along b) where pinv would spike."""
    rng = np.random.default_rng(4)
    a = _matrix(rng, [1.0, 0.8, 0.6, 0.5, 0.3, 1e-7], 7)
    b = rng.normal(size=6)
    x, _, _ = S.damped_pinv_solve(a, b, solver="sdls")
    assert np.abs(x).max() <= math.pi * (1 + 1e-12)
    assert float(np.dot(a @ x, b)) > 0.0


def test_unknown_solver_names_the_choices() -> None:
    with pytest.raises(SolverError, match=r"unknown solver 'qp'.*dls.*sdls"):
        solver_code("qp")
    with pytest.raises(SolverError, match="dls, sdls"):
        S.damped_pinv_solve(np.eye(2), np.ones(2), solver="pinv")
    tree = KinematicTree.from_urdf_file(bundled_urdf_path("panda"))
    with pytest.raises(SolverError, match="dls, sdls"):
        Scene(tree, solver="lm")
    scene = Scene(tree)
    with pytest.raises(SolverError, match="dls, sdls"):
        scene.set_solver("DLS ")
    assert [solver_code(n) for n in SOLVERS] == [0, 1]


# ----------------------------------------------------------------------- solve_limited: weights
def test_task_weights_trade_off_conflicting_rows() -> None:
    """Rows q' = 1 (weight w1) and q' = -1 (weight w2): least squares gives (w1 - w2)/(w1 + w2)."""
    a = np.array([[1.0], [1.0]])
    b = np.array([1.0, -1.0])
    for w1, w2 in [(1.0, 1.0), (3.0, 1.0), (1.0, 9.0), (1.0, 0.0)]:
        qdot, _, _ = _solve(a, b, wy=np.array([w1, w2]), lam_max=0.0, eps=0.0)
        assert qdot[0] == pytest.approx((w1 - w2) / (w1 + w2), abs=1e-12)


def test_joint_weights_share_the_motion() -> None:
    """One task row q1' + q2' = 1: min sum q_i'^2 / w_i gives q_i' proportional to w_i."""
    a = np.array([[1.0, 1.0]])
    b = np.array([1.0])
    qdot, locked, _ = _solve(a, b, wq=np.array([1.0, 3.0]))
    np.testing.assert_allclose(qdot, [0.25, 0.75], atol=1e-12)
    assert not locked.any()


def test_zero_joint_weight_freezes_a_joint() -> None:
    rng = np.random.default_rng(5)
    a = _matrix(rng, [1.5, 1.2, 1.0, 0.8, 0.6, 0.5], 7)
    b = rng.normal(size=6)
    wq = np.ones(7)
    wq[2] = 0.0
    qdot, locked, info = _solve(a, b, wq=wq)
    assert qdot[2] == 0.0
    assert not locked.any()  # frozen by its weight, not locked by a limit
    # The six free joints solve the full-rank 6-D task exactly.
    np.testing.assert_allclose(a @ qdot, b, atol=1e-9)
    assert info[S.INFO_FINITE] == 1.0


# ------------------------------------------------------------------------ solve_limited: limits
def test_joint_at_upper_limit_locks_and_the_others_compensate_2d() -> None:
    a = np.array([[1.0, 1.0]])
    b = np.array([1.0])
    free, locked, _ = _solve(a, b)
    np.testing.assert_allclose(free, [0.5, 0.5], atol=1e-12)
    assert not locked.any()
    qdot, locked, info = _solve(
        a, b, q=np.array([1.0, 0.0]), lower=np.array([-1.0, -1.0]), upper=np.array([1.0, 1.0])
    )
    np.testing.assert_allclose(qdot, [0.0, 1.0], atol=1e-12)
    assert locked.tolist() == [True, False]
    assert info[S.INFO_ITERATIONS] == 2
    # Near the limit: the joint moves exactly onto it this tick, the other takes the rest.
    dt = 0.01
    qdot, locked, _ = _solve(
        a,
        b,
        q=np.array([0.999, 0.0]),
        lower=np.array([-1.0, -1.0]),
        upper=np.array([1.0, 1.0]),
        dt=dt,
    )
    assert locked[0]
    assert 0.999 + qdot[0] * dt == pytest.approx(1.0, abs=1e-15)
    assert qdot[0] + qdot[1] == pytest.approx(1.0, abs=1e-12)


def test_panda_joint_at_upper_limit_locks_and_others_compensate() -> None:
    """Panda joint 3 at its upper limit, a task velocity that joint 3 alone would produce."""
    tree = KinematicTree.from_urdf_file(bundled_urdf_path("panda"))
    j = 2  # panda_joint3
    q = PANDA_HOME.copy()
    q[j] = tree.upper[j]
    jac = tree.jacobian(q, "panda_hand")  # (6, 7)
    # Precondition: the six other joints span the task space here.
    assert np.linalg.svd(np.delete(jac, j, axis=1), compute_uv=False).min() > 0.1
    b = jac[:, j] * 0.5  # pushes joint 3 further up
    free, _, _ = _solve(jac, b)
    assert free[j] > 0.1  # unconstrained, joint 3 would move past its limit
    qdot, locked, info = _solve(
        jac, b, q=q, lower=tree.lower, upper=tree.upper, vmax=tree.velocity_limits, dt=0.002
    )
    assert np.flatnonzero(locked).tolist() == [j]
    assert qdot[j] == 0.0
    # The six other joints reproduce the task velocity.
    np.testing.assert_allclose(jac @ qdot, b, atol=1e-9)
    assert info[S.INFO_ITERATIONS] >= 2
    # Pulling joint 3 away from the limit does not lock it.
    qdot, locked, _ = _solve(jac, -b, q=q, lower=tree.lower, upper=tree.upper, dt=0.002)
    assert not locked.any() and qdot[j] < 0.0


def test_velocity_limits_scale_the_task_keep_its_direction_and_hold() -> None:
    """Saturation in the null space: the task velocity is s times the unbounded one (its
    direction kept), s at least the factor that scales the whole q', every bound held."""
    rng = np.random.default_rng(6)
    for _ in range(100):
        a = _matrix(rng, sorted(rng.uniform(0.1, 2.0, size=6), reverse=True), 7)
        b = rng.normal(size=6) * 5.0
        vmax = rng.uniform(0.2, 3.0, size=7)
        unscaled, _, info0 = _solve(a, b)
        assert info0[S.INFO_SCALE] == 1.0
        qdot, locked, info = _solve(a, b, vmax=vmax)
        scale = info[S.INFO_SCALE]
        uniform = min(1.0, float(np.min(vmax / np.abs(unscaled))))
        assert uniform * (1 - 1e-12) <= scale <= 1.0
        np.testing.assert_allclose(a @ qdot, scale * (a @ unscaled), atol=1e-9)
        assert np.all(np.abs(qdot) <= vmax * (1 + 1e-12))
        # the saturated joints run exactly at their limit; a scale < 1 is set by a joint at it
        np.testing.assert_allclose(np.abs(qdot[locked]), vmax[locked], rtol=1e-12)
        if scale < 1.0:
            assert np.max(np.abs(qdot) / vmax) == pytest.approx(1.0, rel=1e-12)


def test_non_finite_right_hand_side_gives_zero_and_flags_it() -> None:
    qdot, _, info = _solve(np.eye(3), np.array([1.0, np.inf, 0.0]))
    assert np.all(qdot == 0.0)
    assert info[S.INFO_FINITE] == 0.0


def test_empty_task_gives_zero() -> None:
    qdot, locked, info = _solve(np.zeros((0, 4)), np.zeros(0))
    assert np.all(qdot == 0.0) and not locked.any()
    assert info[S.INFO_FINITE] == 1.0


def test_undamped_solve_does_not_invert_rounding_noise_at_an_exact_singularity() -> None:
    """Panda's hand Jacobian without joint 2 (locked at a limit): joints 1 and 3 are then aligned
    and one singular value is rounding noise. With damping_max 0, inverting it gave a full-speed
    command whose sign came from the rounding: listing the joints in another order reversed it."""
    tree = KinematicTree.from_urdf_file(bundled_urdf_path("panda"))
    q = np.array([0.0, 0.3, 0.0, -2.356, 0.0, 1.571, 0.785])
    a = np.delete(tree.jacobian(q, "panda_hand"), 1, axis=1)  # (6, 6)
    s = np.linalg.svd(a, compute_uv=False)
    assert s[-1] <= S.RCOND * s[0]  # exactly singular, up to rounding
    b = np.array([0.05, -0.02, 0.03, 0.4, -0.3, 0.2])
    x, _, lam = S.damped_pinv_solve(a, b, damping_max=0.0)
    assert lam == 0.0
    truncated = np.linalg.pinv(a, rcond=S.RCOND) @ b  # the truncated pseudo-inverse
    np.testing.assert_allclose(x, truncated, atol=1e-9)
    assert np.max(np.abs(x)) < 10.0  # not 1e16
    for perm in itertools.islice(itertools.permutations(range(6)), 0, 720, 37):
        xp, _, _ = S.damped_pinv_solve(a[:, perm], b, damping_max=0.0)
        np.testing.assert_allclose(xp, x[list(perm)], atol=1e-9)


def test_solve_limited_is_the_prioritized_kernel_with_one_level_bit_for_bit() -> None:
    """Every output (q', locked joints, info) of both entry points, with limits that lock
    joints, velocity limits that scale, a frozen joint, both methods."""
    tree = KinematicTree.from_urdf_file(bundled_urdf_path("panda"))
    rng = np.random.default_rng(21)
    locked_seen = scaled_seen = 0
    for trial in range(40):
        # Some joints at a limit; a fast task for some trials (velocity scaling).
        q = np.clip(PANDA_HOME + rng.normal(0.0, 1.5, 7), tree.lower, tree.upper)
        a = tree.jacobian(q, "panda_hand")  # (6, 7)
        b = rng.normal(size=6) * rng.choice([0.5, 5.0])
        wq = np.ones(7)
        wq[trial % 7] = 0.0 if trial % 5 == 0 else 1.0
        m, n = a.shape
        outs = []
        for prioritized in (False, True):
            qdot, locked, info = np.zeros(n), np.zeros(n, dtype=bool), np.zeros(S.INFO_SIZE)
            args = [a, b, np.ones(m), wq, q, tree.lower, tree.upper, tree.velocity_limits]
            args += [0.05, trial % 2, 0.1, 0.06, math.pi, qdot, locked]
            args += [np.zeros((m, n)), np.zeros(m), np.zeros(n), np.zeros(n), info]
            if prioritized:
                levels = np.array([0, m], dtype=np.int64)
                S.solve_prioritized(
                    *args,
                    levels,
                    1,
                    np.zeros((n, n)),
                    np.zeros((m, n)),
                    np.zeros(m),
                    np.zeros(n),
                    np.full(n, -np.inf),
                    np.full(n, np.inf),
                    np.zeros(m, dtype=bool),
                    np.zeros(n),
                    np.zeros(m, dtype=bool),
                )
            else:
                S.solve_limited(*args)
            outs.append((qdot, locked, info))
        (q1, l1, i1), (q2, l2, i2) = outs
        assert np.array_equal(q1, q2) and np.array_equal(l1, l2) and np.array_equal(i1, i2)
        assert np.all(np.isfinite(q1)) and i1[S.INFO_FINITE] == 1.0
        locked_seen += int(l1.any())
        scaled_seen += int(i1[S.INFO_SCALE] < 1.0)
    assert locked_seen > 0 and scaled_seen > 0  # both limits were exercised


def _circle_under_the_motion_limits(limits: bool, posture: bool = False) -> dict[str, float]:
    """A 6-D target on a horizontal circle (r 0.5 m, 0.3 m/s), Panda with config/panda.yaml.

    The hand points down, its orientation fixed; the exact twist is fed forward; joint states
    and ticks at 250 Hz, q integrated from the commands. 6 s: the hand starts on the target
    and the circle is followable by every joint with margin (an ideal velocity IK keeps them
    away from their limits) in that time.
    """
    from itasc_ros.core import Controller
    from itasc_ros.core.kinematics import spatial
    from itasc_ros.params import load_config
    from itasc_ros.tools.resources import share_file

    cfg = load_config(share_file("config", "panda.yaml"))
    if not limits:
        cfg.joint_limits = {}
    if not posture:  # a user's config without the shipped posture
        cfg.constraints = [c for c in cfg.constraints if c.name != "posture"]
    tree = KinematicTree.from_urdf_file(bundled_urdf_path("panda"))
    ctrl = Controller(tree, cfg)
    q = np.array([-0.020, -1.191, -1.399, -2.226, -1.167, 1.671, -0.923])
    hand = tree.forward_kinematics(q, "panda_hand")
    quat = spatial.matrix_to_quat(hand[:3, :3])
    radius, speed, ramp, th0 = 0.5, 0.3, 0.5, -1.5
    centre = hand[:3, 3] - radius * np.array([math.cos(th0), math.sin(th0), 0.0])
    dt, now = 1.0 / 250.0, 100.0
    worst = spare = 0.0
    margin = math.inf
    scale = 1.0
    for k in range(int(6.0 / dt)):
        t = k * dt
        u = min(t / ramp, 1.0)  # a smooth start: arc length s(t), speed s'(t)
        s = speed * ramp * (u**3 - 0.5 * u**4) if t < ramp else speed * (t - 0.5 * ramp)
        sp = speed * (3 * u * u - 2 * u**3) if t < ramp else speed
        th = th0 + s / radius
        p = centre + radius * np.array([math.cos(th), math.sin(th), 0.0])
        v = sp * np.array([-math.sin(th), math.cos(th), 0.0])
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        ctrl.set_target("ee", "", p, quat, now)
        ctrl.set_target_twist("ee", "", np.r_[v, 0.0, 0.0, 0.0], now)
        out = ctrl.step(now)
        worst = max(
            worst, float(np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - p))
        )
        jac = tree.jacobian(q, "panda_hand")  # (6, 7)
        spare = max(
            spare, float(np.linalg.norm(out.qdot - np.linalg.pinv(jac) @ (jac @ out.qdot)))
        )
        scale = min(scale, out.result.velocity_scale)
        margin = min(margin, float(np.min(np.minimum(q - tree.lower, tree.upper - q))))
        q = np.clip(q + out.qdot * dt, tree.lower, tree.upper)
        now += dt
    return {"worst_m": worst, "spare_rad_s": spare, "scale": scale, "margin_rad": margin}


def test_spare_motion_decays_under_the_motion_limits_and_the_task_is_never_frozen() -> None:
    """The least motion inside the motion box: the command carries no motion no task asks for.

    With Franka's acceleration and jerk limits the box excludes zero once a joint moves faster
    than one tick of acceleration; starting each solve from the box's point nearest zero kept
    that point's share in the null space, tick after tick: it grew to 0.33 rad/s, drove joint 1
    into its limit after 5 s and the task's scale to 0 (the hand left 379 mm behind).
    """
    free = _circle_under_the_motion_limits(limits=False)
    boxed = _circle_under_the_motion_limits(limits=True)
    shipped = _circle_under_the_motion_limits(limits=True, posture=True)
    print(f"\nwithout motion limits: {free}\nwith them: {boxed}\nshipped (posture): {shipped}")
    assert shipped["worst_m"] < 1e-4 and shipped["margin_rad"] > 0.2, shipped
    assert shipped["scale"] == 1.0, shipped
    assert free["worst_m"] < 1e-4 and free["margin_rad"] > 0.2  # the ideal: followable
    assert boxed["worst_m"] < 1e-4, boxed  # 0.1 mm throughout, as without the limits
    assert boxed["scale"] == 1.0 and boxed["margin_rad"] > 0.2, boxed
    assert boxed["spare_rad_s"] < 0.01, boxed  # no carried null-space motion
