"""Position IK: a configuration that meets a set of constraints, within joint limits.

:func:`solve_ik` solves for joint *positions* (not velocities) on the same constraint types
as the control loop: a target pose of one link (``target`` and ``link``), or any list of
constraints (:class:`~itasc_ros.core.constraints.CopyPose` with any axes, ``align_axis``,
several effectors, ...) with optional *secondary* constraints (a posture,
:class:`~itasc_ros.core.constraints.JointValue`) solved in the null space of the primary ones.

The method: damped Newton (Levenberg-Marquardt) steps ``dq = A^T (A A^T + lambda I)^-1 e``
with ``lambda = lambda_min + lambda_scale * |e|^2 / 2`` (large far from the solution, vanishing
near it: quadratic convergence at the end, bounded steps near singular poses), each step
projected onto the box of the joint limits (a joint the step pushes past a limit stops there
and the rest of the error is solved again by the other joints in the same iteration; no joint
stays frozen: the next Jacobian decides again), stall detection (the error must shrink by a
factor over a window of iterations) and random restarts drawn from a seeded generator, so a
fixed ``random_seed`` gives the same answer. The first attempt starts at the seed; among
equivalent solutions the one nearest the seed is kept (joints with more than a turn of range
are moved by whole turns toward the seed; ``prefer='distance'`` keeps searching for the whole
budget and returns the solution nearest the seed).

The common case, one link onto a pose (any of its six axes, root frame), runs as one
compiled loop (:mod:`itasc_ros.core.ik._ik_kernels`); any other constraint set iterates the
constraints' rows of ``A`` as :class:`~itasc_ros.core.solve.Scene` assembles them.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..constraints.align_axis import AlignAxis
from ..constraints.base import Constraint
from ..constraints.copy_pose import CopyPose
from ..errors import ConfigurationError, SolverError, TargetNotSet, UnreachableTargetError
from ..kinematics._kernels import is_rigid_transform
from ..kinematics.tree import KinematicTree
from . import _ik_kernels as K

Array = NDArray[np.float64]

PREFER = ("speed", "distance")
"""``prefer`` choices: the first solution found, or the nearest to the seed in the budget."""

#: Iterations per compiled call between two looks at the clock.
CHUNK = 24
#: Joint limits used in place of +-inf for continuous joints [rad].
_UNLIMITED = 1e9


@dataclass
class IkOptions:
    """Tuning of the Newton loop (the defaults are the measured choice, see BENCHMARKS.md).

    Attributes:
        lambda_min: damping added at every step (keeps singular steps bounded).
        lambda_scale: damping per unit of half the squared error norm.
        max_step: largest change of one joint in one step [rad or m].
        stall_ratio: the error norm must fall below this fraction of its value
            ``stall_window`` iterations earlier, else the attempt restarts.
        stall_window: iterations of the stall test.
        restart_iterations: iterations of one attempt at most.
        resolve_at_limits: when a step pushes joints past a limit, stop them there and solve
            the rest of the error again with the other joints in the same iteration.
    """

    lambda_min: float = 1e-6
    lambda_scale: float = 0.01
    max_step: float = 1.0
    stall_ratio: float = 0.5
    stall_window: int = 5
    restart_iterations: int = 60
    resolve_at_limits: bool = True

    def to_array(self) -> Array:
        """(P_SIZE,) the kernel's parameter array."""
        p = np.zeros(K.P_SIZE)
        p[K.P_LAMBDA_MIN] = self.lambda_min
        p[K.P_LAMBDA_SCALE] = self.lambda_scale
        p[K.P_MAX_STEP] = self.max_step
        p[K.P_STALL_RATIO] = self.stall_ratio
        p[K.P_STALL_WINDOW] = self.stall_window
        p[K.P_RESTART_ITERS] = self.restart_iterations
        p[K.P_ACTIVE_SET] = 1.0 if self.resolve_at_limits else 0.0
        return p

    def check(self) -> None:
        """Raise SolverError naming a value out of range."""
        for name in ("lambda_min", "lambda_scale", "max_step", "stall_ratio"):
            v = getattr(self, name)
            if not (isinstance(v, float | int) and math.isfinite(v) and v >= 0.0):
                raise SolverError(f"IK option {name} must be a finite number >= 0, got {v!r}")
        if self.max_step <= 0.0:
            raise SolverError(f"IK option max_step must be > 0, got {self.max_step!r}")
        for name in ("stall_window", "restart_iterations"):
            v = getattr(self, name)
            if not (isinstance(v, int) and v >= 1):
                raise SolverError(f"IK option {name} must be an integer >= 1, got {v!r}")


@dataclass
class IkResult:
    """Outcome of :func:`solve_ik`.

    Attributes:
        q: (n,) joint positions [rad or m] in ``joint_names`` order, within the limits: the
            solution, or the configuration with the smallest error found.
        success: every constrained error component is within its tolerance.
        errors: (m,) the constrained error components at ``q``: for one pose target, the
            selected rows of (position [m], rotation vector [rad]) in the root frame; for a
            constraint set, each row ``yd - y`` in the constraints' order.
        position_error: norm of the selected position rows [m] (one pose target); for a
            constraint set, norm of the rows checked against ``tolerance`` (positions,
            distances, joint values). Always finite.
        rotation_error: norm of the selected rotation rows [rad]; for a constraint set, of
            the rows checked against ``rotation_tolerance`` (0.0 when there are none).
        iterations: Newton iterations run, over all attempts.
        restarts: random restarts made.
        time: wall time of the solve [s], from after the problem was prepared (compiled
            code loaded): the time the budget counts.
        joint_names: the columns of ``q``.
        message: why it stopped.
    """

    q: Array
    success: bool
    errors: Array
    position_error: float
    rotation_error: float
    iterations: int
    restarts: int
    time: float
    joint_names: list[str] = field(default_factory=list)
    message: str = ""

    @property
    def error_norm(self) -> float:
        """Norm of :attr:`errors`."""
        return float(np.linalg.norm(self.errors))


class _Chain:
    """The flat arrays of the root-to-link chain for the compiled loop, and its work arrays."""

    def __init__(self, tree: KinematicTree, link: str) -> None:
        m = tree._m
        li = tree.link_index(link)
        view_col = {int(full): i for i, full in enumerate(tree._sel)}
        q_full = tree._q_full
        jt, col, org, ax, mult, offs = [], [], [], [], [], []
        acc = np.eye(4)
        for k in m.chain[li, : m.chain_len[li]]:
            k = int(k)
            if m.jtype[k] == 0:
                acc = acc @ m.origin[k]
                continue
            frame = acc @ m.origin[k]
            acc = np.eye(4)
            full = int(m.qidx[k])
            jt.append(int(m.jtype[k]))
            org.append(frame[:3])
            ax.append(m.axis[k])
            if full in view_col:
                col.append(view_col[full])
                mult.append(float(m.mult[k]))
                offs.append(float(m.offs[k]))
            else:  # held at its set position in this view
                col.append(-1)
                mult.append(0.0)
                offs.append(float(m.mult[k] * q_full[full] + m.offs[k]))
        nk = len(jt)
        self.link = link
        self.joint_names = tree.joint_names
        self.jt = np.array(jt, dtype=np.int64)
        self.col = np.array(col, dtype=np.int64)
        self.org = np.ascontiguousarray(np.array(org, dtype=float).reshape(nk, 3, 4))
        self.ax = np.ascontiguousarray(np.array(ax, dtype=float).reshape(nk, 3))
        self.mult = np.array(mult, dtype=float)
        self.offs = np.array(offs, dtype=float)
        self.tip = np.ascontiguousarray(acc[:3])
        self.q_full = q_full.copy()
        self.held = bool(np.any(self.col < 0))
        n = self.n = tree.n_joints
        self.work = np.zeros(K.work_size(n, nk))
        self.reach = tree.reach(link)
        lo, hi = tree.lower, tree.upper
        self.lo = np.where(np.isfinite(lo), lo, -_UNLIMITED)
        self.hi = np.where(np.isfinite(hi), hi, _UNLIMITED)
        finite = np.isfinite(lo) & np.isfinite(hi)
        self.samp_lo = np.where(finite, lo, -math.pi)
        self.samp_hi = np.where(finite, hi, math.pi)
        # Joints that can turn by a whole turn within their limits.
        revolute = np.array([t != "prismatic" for t in tree.joint_types], dtype=bool)
        self.turns = [int(i) for i in np.flatnonzero(revolute & (self.hi - self.lo > 2 * math.pi))]
        # Per-call arrays, reused.
        self.q0 = np.zeros(n)
        self.q = np.zeros(n)
        self.best_q = np.zeros(n)
        self.state = np.zeros(K.S_SIZE)
        self.rng = np.zeros(1, dtype=np.uint64)
        self.tol = np.zeros(6)
        self.params = IkOptions().to_array()
        self.sel_cache: dict[tuple[str, str], Array] = {}

    def selection(self, position_axes: str, rotation_axes: str) -> Array:
        key = (position_axes, rotation_axes)
        sel = self.sel_cache.get(key)
        if sel is None:
            sel = self.sel_cache[key] = _selection(position_axes, rotation_axes)
        return sel


_CHAINS: weakref.WeakKeyDictionary[KinematicTree, dict[str, _Chain]] = weakref.WeakKeyDictionary()


def _chain(tree: KinematicTree, link: str) -> tuple[_Chain, bool]:
    """The chain of ``link`` (cached per tree) and whether it was built just now."""
    per_tree = _CHAINS.get(tree)
    if per_tree is None:
        per_tree = _CHAINS[tree] = {}
    ch = per_tree.get(link)
    if ch is None or (ch.held and not np.array_equal(ch.q_full, tree._q_full)):
        ch = per_tree[link] = _Chain(tree, link)
        return ch, True
    return ch, False


_WARM = False


def warm_up() -> None:
    """Load (or compile) the compiled IK loop once, so that no budget pays for it.

    :func:`solve_ik` calls it before starting its clock; a thread may call it ahead of time.
    """
    global _WARM
    if _WARM:
        return
    one = np.zeros(1)
    chain = (
        np.ones(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros((1, 3, 4)),
        np.array([[0.0, 0.0, 1.0]]),
        one.copy(),
        one.copy(),
        np.zeros((3, 4)),
    )
    work = np.zeros(K.work_size(1, 1))
    target = np.eye(4)
    is_rigid_transform(target, 1e-6)
    K.clip_seed(one, one - 1.0, one + 1.0, one.copy())
    K.errors_at(one, *chain, target, work)
    state = np.zeros(K.S_SIZE)
    K.ik_iterate(
        *chain,
        one - 1.0,
        one + 1.0,
        one - 1.0,
        one + 1.0,
        target,
        np.arange(3, dtype=np.int64),
        np.full(6, 1e-5),
        IkOptions().to_array(),
        one.copy(),
        one.copy(),
        state,
        np.zeros(1, dtype=np.uint64),
        1,
        work,
    )
    _WARM = True


def _check_pose(pose: ArrayLike) -> Array:
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


def _seed_array(tree: KinematicTree, seed: ArrayLike | None) -> Array:
    if seed is None:
        return tree.neutral()
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


def _clip_seed(s: Array, lo: Array, hi: Array, out: Array) -> Array:
    if not K.clip_seed(s, lo, hi, out):
        raise ConfigurationError(f"the seed has NaN or Inf values: {s.tolist()}")
    return out


def _check_positive(name: str, v: float | None, allow_none: bool = False) -> None:
    if v is None and allow_none:
        return
    if not (isinstance(v, float | int) and not isinstance(v, bool) and math.isfinite(v) and v > 0):
        raise SolverError(f"{name} must be a finite number > 0, got {v!r}")


def _selection(position_axes: str, rotation_axes: str) -> Array:
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


def _nearest_turns(q: Array, seed: Array, ch: _Chain) -> None:
    """Move joints by whole turns toward the seed, staying within limits (same FK)."""
    two_pi = 2.0 * math.pi
    for i in ch.turns:
        k = round((seed[i] - q[i]) / two_pi)
        if k:
            v = q[i] + k * two_pi
            while v > ch.hi[i]:
                v -= two_pi
            while v < ch.lo[i]:
                v += two_pi
            if abs(v - seed[i]) < abs(q[i] - seed[i]):
                q[i] = v


def solve_ik(
    tree: KinematicTree,
    target: ArrayLike | None = None,
    link: str | None = None,
    *,
    constraints: Sequence[Constraint] = (),
    secondary: Sequence[Constraint] = (),
    seed: ArrayLike | None = None,
    timeout: float | None = 0.005,
    tolerance: float = 1e-5,
    rotation_tolerance: float | None = None,
    position_axes: str = "xyz",
    rotation_axes: str = "xyz",
    max_iterations: int | None = None,
    random_seed: int = 0,
    prefer: str = "speed",
    options: IkOptions | None = None,
) -> IkResult:
    """Joint positions that put ``link`` on ``target`` (or meet ``constraints``), within limits.

    Give either ``target`` (and optionally ``link``, default :meth:`KinematicTree.tip_link`)
    or ``constraints`` (each with its target set). Work arrays are kept per tree and link:
    threads solving at the same time need a tree each (``tree.select_joints(
    tree.joint_names)`` is a view with buffers of its own). A single
    :class:`~itasc_ros.core.constraints.CopyPose` on a pose target (full pose, or any axes
    with ``reference='root'``) takes the compiled path as ``target`` does.

    Args:
        tree: the kinematic tree (or a restricted view: the other joints are held).
        target: (4, 4) target pose of ``link`` in the root frame.
        link: the link to place (default: the tip link).
        constraints: the IK problem as constraints (instead of ``target``). They are bound
            to ``tree`` for the solve (their gains and feed-forward are restored after it):
            give constraints of your own, not those of a running scene on another tree.
        secondary: constraints satisfied as well as possible without disturbing the primary
            ones (null-space projection), e.g. a :class:`JointValue` posture; they never
            decide success.
        seed: (n,) start configuration [rad or m] (default mid-range); clipped into limits.
        timeout: time budget [s]; None: no time limit (``max_iterations`` then required).
        tolerance: largest error of each position component [m] (pose target) or of each row
            (constraint set) at a solution.
        rotation_tolerance: largest error of each rotation component [rad] (default:
            ``tolerance``).
        position_axes: pose target: the constrained position components (root frame).
        rotation_axes: pose target: the constrained rotation components (root frame).
        max_iterations: Newton iterations at most over all attempts (None: the budget only).
        random_seed: seed of the restarts' generator (same seed, same answer).
        prefer: 'speed' returns the first solution; 'distance' searches for the whole budget
            and returns the solution nearest the seed.
        options: tuning of the Newton loop (:class:`IkOptions`).

    Returns:
        :class:`IkResult`; ``success`` False with the best configuration found when the budget
        ran out.

    Raises:
        UnknownLinkError: ``link`` or a constraint's link is not in the tree (lists them).
        ConfigurationError: a target that is not a finite rigid (4, 4) transform, a seed of the
            wrong length or with NaN, bad axes, neither or both of target and constraints.
        SolverError: a budget, tolerance, ``prefer`` or option out of range (names choices).
        UnreachableTargetError: a ``target`` position beyond the link's reach.
        TargetNotSet: a constraint without its target.
    """
    if not _WARM:
        warm_up()
    t0 = time.perf_counter()
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
    rot_tol = tolerance if rotation_tolerance is None else rotation_tolerance
    seed_arr = _seed_array(tree, seed)
    if target is not None and constraints:
        raise ConfigurationError("give either a target pose or constraints, not both")
    if target is None and not constraints:
        raise ConfigurationError("give a target pose (with its link) or a list of constraints")
    budget = (math.inf if timeout is None else float(timeout), max_iterations)
    if target is None and len(constraints) == 1 and not secondary:
        c = constraints[0]
        if (
            isinstance(c, CopyPose)
            and c.target.link is None
            and c.has_target
            and (c.reference == "root" or (c.position_axes + c.rotation_axes) == "xyzxyz")
        ):
            target, link = c.target.pose, c.effector
            position_axes, rotation_axes = c.position_axes, c.rotation_axes
    if target is not None and not secondary:  # one pose: the compiled loop
        ch, fresh = _chain(tree, tree.tip_link() if link is None else link)
        if fresh:  # the budget is for solving: a chain is prepared once per tree and link
            t0 = time.perf_counter()
        return _solve_pose(
            ch,
            _check_pose(target),
            ch.selection(position_axes, rotation_axes),
            seed_arr,
            budget,
            tolerance,
            rot_tol,
            random_seed,
            prefer,
            options,
            t0,
        )
    if target is not None:  # a pose with secondary tasks: the scene's rows
        constraints = [_pose_constraint(tree, target, link, position_axes, rotation_axes)]
    return _solve_set(
        tree,
        constraints,
        secondary,
        seed_arr,
        budget,
        tolerance,
        rot_tol,
        random_seed,
        prefer,
        options or IkOptions(),
        t0,
    )


def _pose_constraint(
    tree: KinematicTree,
    target: ArrayLike,
    link: str | None,
    position_axes: str,
    rotation_axes: str,
) -> CopyPose:
    c = CopyPose(
        "ik_target",
        tree.tip_link() if link is None else link,
        position_axes,
        rotation_axes,
        reference="root",
    )
    pose = _check_pose(target)
    c.set_target(pose)
    reach = tree.reach(c.effector)
    dist = math.hypot(float(pose[0, 3]), float(pose[1, 3]), float(pose[2, 3]))
    if position_axes and dist > reach + 1e-9:
        raise UnreachableTargetError(
            f"the target is {dist:.4g} m from the root; {c.effector!r} reaches "
            f"{reach:.4g} m at most"
        )
    return c


def _solve_pose(
    ch: _Chain,
    target: Array,
    sel: Array,
    seed: Array,
    budget: tuple[float, int | None],
    tol_p: float,
    tol_r: float,
    random_seed: int,
    prefer: str,
    options: IkOptions | None,
    t0: float,
) -> IkResult:
    q0 = _clip_seed(seed, ch.lo, ch.hi, ch.q0)
    dist = math.hypot(float(target[0, 3]), float(target[1, 3]), float(target[2, 3]))
    if sel[0] < 3 and dist > ch.reach + 1e-9:
        raise UnreachableTargetError(
            f"the target is {dist:.4g} m from the root; {ch.link!r} reaches "
            f"{ch.reach:.4g} m at most"
        )
    timeout, max_iters = budget
    deadline = t0 + timeout
    tol = ch.tol
    tol[:3] = tol_p
    tol[3:] = tol_r
    params = ch.params if options is None else options.to_array()
    q, best_q, state = ch.q, ch.best_q, ch.state
    q[:] = q0
    best_q[:] = q0
    state[:] = 0.0
    state[K.S_BEST] = math.inf
    state[K.S_REF] = math.inf
    ch.rng[0] = np.uint64(int(random_seed) & 0xFFFFFFFFFFFFFFFF)
    found: Array | None = None
    found_dist = math.inf
    clock = time.perf_counter
    message = "time budget spent"
    while True:
        chunk = CHUNK
        if max_iters is not None:
            chunk = min(chunk, max_iters - int(state[K.S_ITERS]))
        if K.ik_iterate(
            ch.jt,
            ch.col,
            ch.org,
            ch.ax,
            ch.mult,
            ch.offs,
            ch.tip,
            ch.lo,
            ch.hi,
            ch.samp_lo,
            ch.samp_hi,
            target,
            sel,
            tol,
            params,
            q,
            best_q,
            state,
            ch.rng,
            chunk,
            ch.work,
        ):
            if ch.turns:
                _nearest_turns(q, q0, ch)
            if prefer == "speed":
                found = q.copy()
                message = "converged"
                break
            d = float(np.linalg.norm(q - q0))
            if d < found_dist:
                found, found_dist = q.copy(), d
            state[K.S_RESTART_NOW] = 1.0  # look for a nearer one
            state[K.S_BEST] = math.inf
        if max_iters is not None and state[K.S_ITERS] >= max_iters:
            message = "iteration limit reached"
            break
        if clock() >= deadline:
            break
    if found is not None:
        q_out = found
        if message != "converged":
            message = "converged (nearest of the solutions found in the budget)"
    else:
        q_out = best_q.copy()
    if found is None or prefer != "speed" or ch.turns:
        K.errors_at(q_out, ch.jt, ch.col, ch.org, ch.ax, ch.mult, ch.offs, ch.tip, target, ch.work)
    e = ch.work[45:51]
    errors = e[sel]
    pos = errors[: int(np.count_nonzero(sel < 3))]
    rot = errors[pos.shape[0] :]
    return IkResult(
        q=q_out,
        success=found is not None,
        errors=errors,
        position_error=math.sqrt(float(pos @ pos)),
        rotation_error=math.sqrt(float(rot @ rot)),
        iterations=int(state[K.S_ITERS]),
        restarts=int(state[K.S_RESTARTS]),
        time=clock() - t0,
        joint_names=list(ch.joint_names),
        message=message,
    )


def _rotation_rows(constraints: Sequence[Constraint]) -> NDArray[np.bool_]:
    """(m,) bool: the rows that are rotations [rad] (checked against the rotation tolerance)."""
    out: list[bool] = []
    for c in constraints:
        if not c.enabled:
            continue
        if isinstance(c, CopyPose):
            out += [False] * len(c.position_axes) + [True] * len(c.rotation_axes)
        elif isinstance(c, AlignAxis):
            out += [True] * c.n_rows
        else:
            out += [False] * c.n_rows
    return np.array(out, dtype=bool)


def _damped_step(a: Array, e: Array, lam: float) -> Array:
    """``a^T (a a^T + lam I)^-1 e`` for a (m, n), e (m,)."""
    mm = a @ a.T  # (m, m)
    mm[np.diag_indices_from(mm)] += lam
    return np.asarray(a.T @ np.linalg.solve(mm, e))


class _SetProblem:
    """The constraints' rows at a configuration, with gains 1 and no feed-forward."""

    def __init__(self, tree: KinematicTree, constraints: Sequence[Constraint]) -> None:
        from ..solve.scene import Scene

        for c in constraints:
            if not c.has_target:
                raise TargetNotSet(f"{c.name}: the constraint has no target; set it first")
        self.scene = Scene(tree, constraints)

    def rows(self, q: Array) -> tuple[Array, Array, Array]:
        """(A (m, n), error yd - y (m,)) weighted by sqrt(Wy), and the unweighted error, at q.

        Inactive rows (Wy = 0, e.g. inside a distance band) have a zero error.
        """
        mats = self.scene.matrices(q)
        wy = mats["wy"]
        w = np.sqrt(np.maximum(wy, 0.0))
        e = np.where(wy > 0.0, mats["rhs"], 0.0)
        return mats["A"] * w[:, None], e * w, e


def _solve_set(
    tree: KinematicTree,
    constraints: Sequence[Constraint],
    secondary: Sequence[Constraint],
    seed: Array,
    budget: tuple[float, int | None],
    tol: float,
    tol_r: float,
    random_seed: int,
    prefer: str,
    opts: IkOptions,
    t0: float,
) -> IkResult:
    """The Newton loop on the rows of a constraint set (numpy; see :func:`solve_ik`)."""
    names = [c.name for c in [*constraints, *secondary]]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"constraint names repeat: {names}")
    n = tree.n_joints
    lo_t, hi_t = tree.lower, tree.upper
    lo = np.where(np.isfinite(lo_t), lo_t, -_UNLIMITED)
    hi = np.where(np.isfinite(hi_t), hi_t, _UNLIMITED)
    finite = np.isfinite(lo_t) & np.isfinite(hi_t)
    samp_lo, samp_hi = np.where(finite, lo_t, -math.pi), np.where(finite, hi_t, math.pi)
    q0 = _clip_seed(seed, lo, hi, np.zeros(n))
    saved = [(c, c.gain, c.feedforward) for c in [*constraints, *secondary]]
    try:
        for c, _, _ in saved:
            c.gain, c.feedforward = 1.0, False
        primary = _SetProblem(tree, constraints)
        posture = _SetProblem(tree, secondary) if secondary else None
        rotation = _rotation_rows(primary.scene.constraints)
        tols = np.where(rotation, tol_r, tol)
        # The budget is for solving: the scene's compiled kernels are loaded (or compiled, on
        # the first call in a process) by a first evaluation before the clock starts.
        primary.rows(q0)
        if posture is not None:
            posture.rows(q0)
        t0 = time.perf_counter()
        rng = np.random.default_rng(int(random_seed))
        timeout, max_iters = budget
        deadline = t0 + timeout
        q = q0.copy()
        best_q, best = q0.copy(), math.inf
        found: Array | None = None
        found_dist = math.inf
        iters = restarts = local = 0
        ref = math.inf
        message = "time budget spent"
        e_best = np.zeros(tols.shape[0])
        while True:
            a, ew, e = primary.rows(q)
            norm = float(np.linalg.norm(e))
            if norm < best:
                best, best_q[:], e_best = norm, q, e
            restart = False
            if np.all(np.abs(e) <= tols):
                sol = q.copy()
                if posture is not None:
                    sol, e = _polish(primary, posture, sol, tols, lo, hi, opts)
                    e_best = e
                d = float(np.linalg.norm(sol - q0))
                if d < found_dist:
                    found, found_dist, e_best = sol, d, e
                if prefer == "speed":
                    message = "converged"
                    break
                restart = True
            elif local % opts.stall_window == 0:
                if local > 0 and not norm <= opts.stall_ratio * ref:
                    restart = True
                ref = norm
            if local >= opts.restart_iterations or not math.isfinite(norm):
                restart = True
            if max_iters is not None and iters >= max_iters:
                message = "iteration limit reached"
                break
            if time.perf_counter() >= deadline:
                break
            iters += 1
            if restart:
                q = np.clip(rng.uniform(samp_lo, samp_hi), lo, hi)
                restarts += 1
                local, ref = 0, math.inf
                continue
            local += 1
            lam = opts.lambda_min + opts.lambda_scale * 0.5 * norm * norm
            dq = _damped_step(a, ew, lam)
            if posture is not None:
                dq += _null_space_step(a, dq, posture, q, lam)
            big = float(np.max(np.abs(dq))) if dq.size else 0.0
            if big > opts.max_step:
                dq *= opts.max_step / big
            q = np.clip(q + dq, lo, hi)
    finally:
        for c, gain, ff in saved:
            c.gain, c.feedforward = gain, ff
    if found is not None and message != "converged":
        message = "converged (nearest of the solutions found in the budget)"
    errors = np.asarray(e_best, dtype=float).copy()
    pos, rot = errors[~rotation], errors[rotation]
    return IkResult(
        q=found if found is not None else best_q,
        success=found is not None,
        errors=errors,
        position_error=math.sqrt(float(pos @ pos)),
        rotation_error=math.sqrt(float(rot @ rot)),
        iterations=iters,
        restarts=restarts,
        time=time.perf_counter() - t0,
        joint_names=tree.joint_names,
        message=message,
    )


def _null_space_step(a: Array, dq: Array, posture: _SetProblem, q: Array, lam: float) -> Array:
    """The secondary rows' damped step projected into the null space of ``a`` (m, n)."""
    a2, e2, _ = posture.rows(q)
    if not a2.size:
        return np.zeros_like(dq)
    n = a.shape[1]
    null = np.eye(n) - np.linalg.pinv(a, rcond=1e-6) @ a  # (n, n)
    a2n = a2 @ null
    return null @ _damped_step(a2n, e2 - a2 @ dq, max(lam, 1e-3))


def _polish(
    primary: _SetProblem,
    posture: _SetProblem,
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
    """
    a, _, e = primary.rows(q)
    _, e2, _ = posture.rows(q)
    cost = float(e2 @ e2)
    scale = 1.0
    for _ in range(iterations):
        dq = scale * _null_space_step(a, np.zeros(q.shape[0]), posture, q, 1e-3)
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
            q_new = np.clip(q_new + _damped_step(a_new, ew_new, opts.lambda_min), lo, hi)
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
