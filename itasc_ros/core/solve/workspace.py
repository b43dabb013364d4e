"""The scene's compiled boundary as data: a model of its layout and one packed workspace.

A :class:`~itasc_ros.core.solve.scene.Scene` tick is a few compiled calls, each taking the
scene's arrays as a handful of packed buffers instead of one argument per array (a compiled
call pays per argument, before any work), in the spirit of Pinocchio's Model / Data split:

* the **model** (:attr:`SceneWorkspace.model`, int64): what is fixed when the layout is built,
  the sizes (n joints, m rows, k constraints, levels), the offsets of every array in the float
  buffers, the levels' row bounds and each constraint's rows and kind;
* the **workspace**: every array a solve reads or writes, in two float64 buffers (the joints'
  (:attr:`SceneWorkspace.joints`, built once for the scene's n) and the rows'
  (:attr:`SceneWorkspace.rows`, built with each layout)) and two bool buffers alike
  (:attr:`SceneWorkspace.joint_flags`, :attr:`SceneWorkspace.row_flags`).

Python keeps named views into the same buffers (``ws.qdot``, ``ws.box_lo``, ``ws.a``, ...), so
the scene's readers see what the kernels wrote, without copies; the kernels slice the same
views from the model's offsets (:func:`scene_rows`, :func:`scene_box`, :func:`scene_solve`).
A constraint's target twist and the twist its demand limit last saw are views of the rows
buffer too while the scene holds them (:meth:`~itasc_ros.core.constraints.Constraint.keep_twists`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..constraints._features import (
    COM_RECORD_HEAD,
    POSE_RECORD_HEAD,
    com_rows,
    copy_pose_tick,
    joint_record,
    joint_value_rows,
    pose_record,
)
from ..constraints.base import TICK_COM, TICK_JOINTS, TICK_POSE, CompiledTick
from ..kinematics._kernels import forward_selected, start_active_set, update_active_set
from .limits.base import intersect
from .limits.joint_position import joint_box, position_sides_unmarked
from .limits.motion import motion_box_within
from .motion_limits import braking_sides
from .pose_demand import task_rhs
from .small_svd import MEMORY_SIZE
from .solver import INFO_SCALE, INFO_SIZE, _scaled_box, _solve_weighted, _weigh_rows

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

MAX_INEQUALITY_ROUNDS = 8
"""Most solves per tick for the active set of the soft inequality rows (usually 1-3)."""

INEQUALITY_TOLERANCE = 1e-9
"""A row ``A q' >= y'_d`` counts as violated below ``y'_d`` minus this [row units/s]."""

DEMAND_SIZE = 12
"""The pose demand's values in the joints' buffer: speeds (2) [m/s, rad/s], braking (2)
[m/s^2, rad/s^2], steps (2) [m/s, rad/s per tick], then its (6,) work array."""

PAR_SIZE = 5
"""Each constraint's tick values in the rows' buffer: gain [1/s], fed forward, aims (0/1),
weight, resolves redundancy (0/1)."""

# The model's entries (indices into SceneWorkspace.model): sizes, then offsets.
N, M, K, NLEV, ACTIVE_SET = 0, 1, 2, 3, 4
# offsets into the joints' float buffer (each (n,) unless noted)
J_Q, J_WQ, J_QDOT, J_XW, J_LO, J_HI, J_BOX_LO, J_BOX_HI = 5, 6, 7, 8, 9, 10, 11, 12
J_SIDE, J_VMAX, J_LOWER, J_UPPER, J_INFO, J_PROJ, J_DEMAND = 13, 14, 15, 16, 17, 18, 19
J_SVD = 20  # (MEMORY_SIZE,): the first level's SVD's memory (thin_svd_from)
# offsets into the rows' float buffer ((m, n), (m, 6) or (m,); (k, 6) twists, (k, 3) values)
R_A, R_B, R_Y, R_YDOT, R_WY, R_RHS, R_FF, R_ASKED = 21, 22, 23, 24, 25, 26, 27, 28
R_AW, R_BW, R_WCAND, R_AT, R_RK, R_TWIST, R_SEEN, R_PAR = 29, 30, 31, 32, 33, 34, 35, 36
# offsets into the flag buffers: the joints' (locked) and the rows' (each (m,))
F_LOCKED, F_INEQ, F_REDUNDANT, F_SOFT, F_ORIENT = 37, 38, 39, 40, 41
LEVELS = 42
"""Where the levels' row bounds start in the model ((nlev + 1,)); each constraint's entries
(:data:`STRIDE` per constraint, in the rows' order of the scene) follow."""

STRIDE = 12
"""A constraint's entries in the model: its first row, number of rows, pose flag, the kind of
its compiled tick (:class:`~itasc_ros.core.constraints.base.CompiledTick`; 0: its own update
writes its rows), where its tick record
starts in the rows' buffer (-1: none), its effector link and its selected feature rows (at
most 6)."""
T_ROW, T_ROWS, T_POSE, T_KIND, T_RECORD, T_LINK, T_SEL = 0, 1, 2, 3, 4, 5, 6

LIMITS_SIZE = 4
"""The added limits' values of a compiled solve (``lim_par``): the motion box's nominal period
[s] (``L_PERIOD``), how long its command may be held [s] (``L_HOLD``), and whether the motion
box (``L_MOTION``) and the held joints (``L_HOLDING``) act this tick (0/1)."""
L_PERIOD, L_HOLD, L_MOTION, L_HOLDING = 0, 1, 2, 3

_JOINT_VECTORS = range(J_Q, J_INFO)
"""The (n,) entries of the joints' buffer, in its order (info, proj and demand follow)."""
_ROW_COLUMNS = {R_A: -1, R_B: 6, R_AW: -1, R_AT: -1}
"""Columns per row of the rows' buffer's matrices (-1: n); its other entries up to R_TWIST are
(m,) vectors, in the order of their entries (the per-constraint part follows)."""


class SceneWorkspace:
    """A scene's model and workspace (see the module docstring), with named views.

    The joints' part is built here, once; the rows' part by :meth:`build` at each layout.
    Every attribute below is a view into the buffers the kernels take.

    Args:
        n: the number of joints.

    Attributes:
        model: (LEVELS + nlev + 1 + 3 k,) int64: sizes, offsets, levels, constraints' rows.
        joints: the joints' float64 buffer: q, wq, qdot, xw, lo, hi, box_lo, box_hi, side,
            vmax, lower, upper (n,) each, info (INFO_SIZE,), proj (n, n), demand
            (DEMAND_SIZE,), svd_memory (MEMORY_SIZE,): the first level's SVD's rotation, kept
            from one solve to the next (:func:`~.small_svd.thin_svd_from`).
        joint_flags: (n,) bool: locked.
        rows: the rows' float64 buffer: a (m, n), b (m, 6), y, ydot, wy, rhs, ff, asked (m,),
            aw (m, n), bw, wcand (m,), at (m, n), rk (m,), twist, seen (k, 6), par
            (k, PAR_SIZE).
        row_flags: (4 m,) bool: ineq, redundant, soft, orient (m,) each.
        buffers: ``(model, joints, rows, joint_flags, row_flags)``: :func:`scene_solve`'s
            first arguments.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        offsets: dict[int, int] = {}
        size = 0
        for entry in _JOINT_VECTORS:
            offsets[entry] = size
            size += n
        offsets[J_INFO] = size
        size += INFO_SIZE
        offsets[J_PROJ] = size
        size += n * n
        offsets[J_DEMAND] = size
        size += DEMAND_SIZE
        offsets[J_SVD] = size
        size += MEMORY_SIZE
        self._joint_offsets = offsets
        self.joints = np.zeros(size)
        self.joint_flags = np.zeros(n, dtype=np.bool_)
        j = self._joint

        self.q, self.wq, self.qdot = j(J_Q), j(J_WQ), j(J_QDOT)  # (n,) [rad], [-], [rad/s]
        self.xw, self.lo, self.hi = j(J_XW), j(J_LO), j(J_HI)  # (n,) x = Wq^-1/2 q', its box
        self.box_lo, self.box_hi = j(J_BOX_LO), j(J_BOX_HI)  # (n,) the box on q' [rad/s]
        self.side = j(J_SIDE)  # (n,) the box's position sides (+1 upper, -1 lower, 0 none)
        self.vmax, self.lower, self.upper = j(J_VMAX), j(J_LOWER), j(J_UPPER)  # (n,) limits
        self.info = j(J_INFO, INFO_SIZE)
        self.proj = j(J_PROJ, n * n).reshape(n, n)
        self.demand = j(J_DEMAND, DEMAND_SIZE)
        self.svd_memory = j(J_SVD, MEMORY_SIZE)
        self.locked = self.joint_flags
        self.box_lo[:] = -np.inf
        self.box_hi[:] = np.inf
        self.build([], 0, np.zeros(2, dtype=np.int64), [])

    def _joint(self, entry: int, size: int = -1) -> Array:
        o = self._joint_offsets[entry]
        return self.joints[o : o + (self.n if size < 0 else size)]

    def build(
        self,
        constraints: Sequence[tuple[int, int, bool]],
        m: int,
        levels: IntArray,
        flags: Sequence[tuple[bool, bool, bool]],
        ticks: Sequence[CompiledTick | None] = (),
    ) -> None:
        """Lay out (and zero) the rows' part for a new set of rows.

        Args:
            constraints: each constraint's (first row, number of rows, pose task), k of them.
            m: the number of rows.
            levels: (nlev + 1,) the levels' row bounds.
            flags: each constraint's (inequality bound, resolves redundancy, soft inequality).
            ticks: each constraint's compiled tick (:class:`~itasc_ros.core.constraints.base.
                CompiledTick`), or None where its own update writes its rows (default: none
                has one); a record of its size is laid out for each, a view in
                :attr:`records`.
        """
        n, k = self.n, len(constraints)
        nlev = levels.shape[0] - 1
        ticks = list(ticks) or [None] * k
        model = np.zeros(LEVELS + nlev + 1 + STRIDE * k, dtype=np.int64)
        model[N], model[M], model[K], model[NLEV] = n, m, k, nlev
        for entry, o in self._joint_offsets.items():
            model[entry] = o
        size = 0
        for entry in range(R_A, R_TWIST):
            cols = _ROW_COLUMNS.get(entry, 1)
            model[entry] = size
            size += m * (n if cols < 0 else cols)
        for entry, per in ((R_TWIST, 6), (R_SEEN, 6), (R_PAR, PAR_SIZE)):
            model[entry] = size
            size += k * per
        model[F_LOCKED] = 0
        for i, entry in enumerate((F_INEQ, F_REDUNDANT, F_SOFT, F_ORIENT)):
            model[entry] = i * m
        model[LEVELS : LEVELS + nlev + 1] = levels
        spans: list[tuple[int, int] | None] = []
        for i, ((r0, rows, pose), tick) in enumerate(zip(constraints, ticks, strict=True)):
            t = LEVELS + nlev + 1 + STRIDE * i
            model[t + T_ROW], model[t + T_ROWS], model[t + T_POSE] = r0, rows, pose
            model[t + T_RECORD] = -1
            if tick is None:
                spans.append(None)
                continue
            model[t + T_KIND], model[t + T_RECORD], model[t + T_LINK] = tick.kind, size, tick.link
            model[t + T_SEL : t + T_SEL + len(tick.sel)] = tick.sel
            spans.append((size, size + tick.size))
            size += tick.size
        self.model = model
        self.rows = np.zeros(size)
        self.row_flags = np.zeros(4 * m, dtype=np.bool_)
        self.buffers = (model, self.joints, self.rows, self.joint_flags, self.row_flags)
        self.records = [None if sp is None else self.rows[sp[0] : sp[1]] for sp in spans]

        def r(entry: int, cols: int = 1) -> Array:
            v = self.rows[model[entry] : model[entry] + m * cols]
            return v.reshape(m, cols) if cols > 1 else v

        self.a, self.b, self.aw, self.at = r(R_A, n), r(R_B, 6), r(R_AW, n), r(R_AT, n)
        self.y, self.ydot, self.wy, self.rhs = r(R_Y), r(R_YDOT), r(R_WY), r(R_RHS)
        self.ff, self.asked, self.bw = r(R_FF), r(R_ASKED), r(R_BW)
        self.wcand, self.rk = r(R_WCAND), r(R_RK)
        self.twist = self.rows[model[R_TWIST] : model[R_TWIST] + 6 * k].reshape(k, 6)
        self.seen = self.rows[model[R_SEEN] : model[R_SEEN] + 6 * k].reshape(k, 6)
        self.par = self.rows[model[R_PAR] : model[R_PAR] + PAR_SIZE * k].reshape(k, PAR_SIZE)
        fl = self.row_flags
        self.ineq, self.redundant = fl[0:m], fl[m : 2 * m]
        self.soft, self.orient = fl[2 * m : 3 * m], fl[3 * m : 4 * m]
        for (r0, rows, _), (ineq, redundant, soft) in zip(constraints, flags, strict=True):
            self.ineq[r0 : r0 + rows] = ineq
            self.redundant[r0 : r0 + rows] = redundant
            self.soft[r0 : r0 + rows] = soft
        model[ACTIVE_SET] = 1 if self.soft.any() else 0


# Inlined: a call with a constant offset (every entry is one) would be a variant of its own
@njit(cache=True, nogil=True, inline="always")
def _vec(buf, model, entry, size):  # pragma: no cover - compiled
    """The (size,) view of ``buf`` at the model's offset ``entry``."""
    o = model[entry]
    return buf[o : o + size]


@njit(cache=True, nogil=True, inline="always")
def _mat(buf, model, entry, rows, cols):  # pragma: no cover - compiled
    """The (rows, cols) view of ``buf`` at the model's offset ``entry``."""
    o = model[entry]  # reshape: a C-ordered array, for the solve's products (@)
    return buf[o : o + rows * cols].reshape((rows, cols))


@njit(cache=True, nogil=True)
def scene_rows(model, joints, rows, row_flags, u, clamp, limit):  # pragma: no cover
    """Every constraint's right-hand side after its update (:func:`.pose_demand.task_rhs`).

    In the constraints' order, each on its rows of the packed buffers, with its values of the
    tick (``par``: gain, fed forward, aims) and the demand's (speeds, braking, steps).

    Args:
        model: the scene's model (:class:`SceneWorkspace`).
        joints: the joints' float buffer.
        rows: the rows' float buffer.
        row_flags: the rows' bool buffer.
        motion: (8, n) the motion limiter's record (:func:`scene_limits`).
        motion_box: (2, n) out: the motion box's own box.
        held: (2, n) the held joints' box.
        lim_par: (:data:`LIMITS_SIZE`,) the added limits' values (:func:`scene_limits`).
        u: (n,) the last command [rad/s] (read only with ``limit``).
        clamp: clamp the pose tasks' feedback.
        limit: limit the pose tasks' demand (:mod:`.pose_demand`).
    """
    n, m, k, nlev = model[N], model[M], model[K], model[NLEV]
    a = _mat(rows, model, R_A, m, n)
    b = _mat(rows, model, R_B, m, 6)
    ydot, wy = _vec(rows, model, R_YDOT, m), _vec(rows, model, R_WY, m)
    rhs, ff = _vec(rows, model, R_RHS, m), _vec(rows, model, R_FF, m)
    asked = _vec(rows, model, R_ASKED, m)
    twist = _mat(rows, model, R_TWIST, k, 6)
    seen = _mat(rows, model, R_SEEN, k, 6)
    par = _mat(rows, model, R_PAR, k, PAR_SIZE)
    orient = _vec(row_flags, model, F_ORIENT, m)
    demand = _vec(joints, model, J_DEMAND, DEMAND_SIZE)
    speeds, braking, steps, dtw = demand[0:2], demand[2:4], demand[4:6], demand[6:12]
    table = LEVELS + nlev + 1
    for i in range(k):
        r0 = model[table + STRIDE * i + T_ROW]
        r1 = r0 + model[table + STRIDE * i + T_ROWS]
        pose = model[table + STRIDE * i + T_POSE] != 0
        task_rhs(
            b[r0:r1], twist[i], ydot[r0:r1], rhs[r0:r1], asked[r0:r1], ff[r0:r1],
            par[i, 1] != 0.0, par[i, 2] != 0.0, wy[r0:r1], clamp and pose, orient[r0:r1],
            speeds, braking, par[i, 0], limit and pose, a[r0:r1], u, seen[i], dtw, steps,
        )  # fmt: skip


@njit(cache=True, nogil=True)
def scene_box(model, joints, dt):  # pragma: no cover - compiled
    """The joints' velocity and next-step position box into ``box_lo``, ``box_hi``; no sides.

    :func:`~itasc_ros.core.solve.limits.joint_position.joint_box` of the scene's ``q``,
    ``vmax``, ``lower``, ``upper`` and ``dt`` [s]; ``side`` (n,) set to 0, for the added
    limits to mark theirs before :func:`scene_solve` marks the position limits' on the rest.
    """
    n = model[N]
    q, vmax = _vec(joints, model, J_Q, n), _vec(joints, model, J_VMAX, n)
    lower, upper = _vec(joints, model, J_LOWER, n), _vec(joints, model, J_UPPER, n)
    lo, hi = _vec(joints, model, J_BOX_LO, n), _vec(joints, model, J_BOX_HI, n)
    joint_box(q, vmax, lower, upper, dt, lo, hi)
    _vec(joints, model, J_SIDE, n)[:] = 0.0


@njit(cache=True, nogil=True)
def scene_limits(model, joints, dt, motion, motion_box, held, lim_par):  # pragma: no cover
    """The joints' box and the added limits a compiled solve knows, in order, and their sides.

    :func:`scene_box`; then, when ``lim_par[L_MOTION]``, the motion box of the limiter's
    ``motion`` record (:attr:`~itasc_ros.core.solve.motion_limits.MotionLimiter.record`,
    (8, n)) at the nominal period ``lim_par[L_PERIOD]`` [s], held ``lim_par[L_HOLD]`` [s]
    (:func:`~itasc_ros.core.solve.limits.motion.motion_box_within`; its own box into
    ``motion_box`` (2, n)); then, when ``lim_par[L_HOLDING]``, the held joints' box ``held``
    (2, n: lower, upper), which wins; then the braking curves' sides of the final box
    (:func:`~itasc_ros.core.solve.motion_limits.braking_sides`). The same as the limits'
    :meth:`~itasc_ros.core.solve.limits.Limit.apply` then
    :meth:`~itasc_ros.core.solve.limits.Limit.mark_sides` in that order.
    """
    scene_box(model, joints, dt)
    n = model[N]
    q = _vec(joints, model, J_Q, n)
    lo, hi = _vec(joints, model, J_BOX_LO, n), _vec(joints, model, J_BOX_HI, n)
    p, hold = lim_par[L_PERIOD], lim_par[L_HOLD]
    v, a, lower, upper = motion[0], motion[1], motion[2], motion[3]
    vmax, amax, dmax, jmax = motion[4], motion[5], motion[6], motion[7]
    if lim_par[L_MOTION] != 0.0:
        motion_box_within(
            v, a, q, lower, upper, vmax, amax, dmax, jmax, p, hold, lo, hi, motion_box[0],
            motion_box[1],
        )  # fmt: skip
    if lim_par[L_HOLDING] != 0.0:
        intersect(lo, hi, held[0], held[1])
    if lim_par[L_MOTION] != 0.0:
        side = _vec(joints, model, J_SIDE, n)
        braking_sides(q, lower, upper, amax, dmax, jmax, 2.0 * p, hold, lo, hi, side)


@njit(cache=True)
def scene_solve(  # pragma: no cover - compiled
    model,
    joints,
    rows,
    joint_flags,
    row_flags,
    motion,
    motion_box,
    held,
    lim_par,
    u,
    dt,
    clamp,
    limit,
    boxed,
    method,
    lam_max,
    eps,
    gamma_max,
):
    """The rest of a scene's tick after its constraints' updates: q' into ``qdot``.

    Every constraint's right-hand side (:func:`scene_rows`); unless ``boxed`` (the box and the
    added limits' sides made before: :func:`scene_box`, then each limit's), the joints' box
    and the added limits a compiled solve knows (:func:`scene_limits`); the position limits'
    sides where no added limit marked one; then the solve of the levels inside the box
    ``[box_lo, box_hi]`` (:func:`~itasc_ros.core.solve.solver.solve_prioritized`'s, on that box:
    the joints' limits are in it), repeated for the active set of the soft inequality rows up
    to :data:`MAX_INEQUALITY_ROUNDS` times.

    Args:
        model: the scene's model (:class:`SceneWorkspace`).
        joints: the joints' float buffer.
        rows: the rows' float buffer.
        joint_flags: the joints' bool buffer.
        row_flags: the rows' bool buffer.
        motion: (8, n) the motion limiter's record (:func:`scene_limits`).
        motion_box: (2, n) out: the motion box's own box.
        held: (2, n) the held joints' box.
        lim_par: (:data:`LIMITS_SIZE`,) the added limits' values (:func:`scene_limits`).
        u: (n,) the last command [rad/s] (read only with ``limit``).
        dt: the control period [s].
        clamp: clamp the pose tasks' feedback.
        limit: limit the pose tasks' demand.
        boxed: the box and its added limits' sides are made (by Python: the scene has a limit
            that :func:`scene_limits` does not know).
        method: 0 dls, 1 sdls.
        lam_max: largest damping lambda.
        eps: singular value below which damping starts.
        gamma_max: SDLS joint velocity bound per singular direction [rad/s].
    """
    scene_rows(model, joints, rows, row_flags, u, clamp, limit)
    n, m, nlev = model[N], model[M], model[NLEV]
    q, wq = _vec(joints, model, J_Q, n), _vec(joints, model, J_WQ, n)
    lower, upper = _vec(joints, model, J_LOWER, n), _vec(joints, model, J_UPPER, n)
    box_lo, box_hi = _vec(joints, model, J_BOX_LO, n), _vec(joints, model, J_BOX_HI, n)
    side = _vec(joints, model, J_SIDE, n)
    if not boxed:
        scene_limits(model, joints, dt, motion, motion_box, held, lim_par)
    position_sides_unmarked(q, lower, upper, dt, box_lo, box_hi, side)
    a, aw = _mat(rows, model, R_A, m, n), _mat(rows, model, R_AW, m, n)
    at, rk = _mat(rows, model, R_AT, m, n), _vec(rows, model, R_RK, m)
    rhs, wy = _vec(rows, model, R_RHS, m), _vec(rows, model, R_WY, m)
    bw, wcand = _vec(rows, model, R_BW, m), _vec(rows, model, R_WCAND, m)
    ineq, redundant = _vec(row_flags, model, F_INEQ, m), _vec(row_flags, model, F_REDUNDANT, m)
    soft = _vec(row_flags, model, F_SOFT, m)
    lo, hi = _vec(joints, model, J_LO, n), _vec(joints, model, J_HI, n)
    xw, qdot = _vec(joints, model, J_XW, n), _vec(joints, model, J_QDOT, n)
    info = _vec(joints, model, J_INFO, INFO_SIZE)
    proj = _mat(joints, model, J_PROJ, n, n)
    memory = _vec(joints, model, J_SVD, MEMORY_SIZE)
    locked = _vec(joint_flags, model, F_LOCKED, n)
    levels = model[LEVELS : LEVELS + nlev + 1]
    active_set = model[ACTIVE_SET] != 0
    lams = (lam_max, eps, gamma_max)
    if active_set:  # soft inequality rows start off (see the scene's module docstring)
        start_active_set(wy, wcand, soft)
    for _ in range(MAX_INEQUALITY_ROUNDS):
        finite = _weigh_rows(a, rhs, wy, wq, ineq, aw, bw)
        _scaled_box(box_lo, box_hi, wq, lo, hi)
        _solve_weighted(
            finite,
            wq,
            aw,
            bw,
            lo,
            hi,
            levels,
            nlev,
            method,
            lams,
            qdot,
            locked,
            xw,
            info,
            proj,
            at,
            rk,
            ineq,
            side,
            redundant,
            memory,
        )
        if not active_set or not update_active_set(
            a, rhs, wy, wcand, soft, qdot, max(info[INFO_SCALE], 1e-12), INEQUALITY_TOLERANCE
        ):
            break


@njit(cache=True, nogil=True)
def tick_rows(ints, floats, poses, full, cols, model, joints, rows):  # pragma: no cover
    """The rows of every constraint with a compiled tick, from the tree's computed ``poses``.

    A pose task (:data:`~itasc_ros.core.constraints.base.TICK_POSE`): its effector's
    Jacobian and its rows (:func:`~itasc_ros.core.constraints._features.copy_pose_tick`) on
    its record (:func:`~itasc_ros.core.constraints._features.pose_record`); joint values
    (:data:`~itasc_ros.core.constraints.base.TICK_JOINTS`): their rows at the scene's ``q``
    (:func:`~itasc_ros.core.constraints._features.joint_value_rows`); a centre of mass
    (:data:`~itasc_ros.core.constraints.base.TICK_COM`: :func:`~itasc_ros.core.constraints.
    _features.com_rows`); each with its values of the tick (``par``). ``ints``, ``floats``,
    ``full``, ``cols``: the tree's model, its work array and its active columns
    (:meth:`~itasc_ros.core.kinematics.tree.KinematicTree.kernel_arrays`).
    """
    n, m, k, nlev = model[N], model[M], model[K], model[NLEV]
    q = _vec(joints, model, J_Q, n)
    a, b = _mat(rows, model, R_A, m, n), _mat(rows, model, R_B, m, 6)
    y, ydot = _vec(rows, model, R_Y, m), _vec(rows, model, R_YDOT, m)
    wy = _vec(rows, model, R_WY, m)
    par = _mat(rows, model, R_PAR, k, PAR_SIZE)
    table = LEVELS + nlev + 1
    for i in range(k):
        t = table + STRIDE * i
        kind = model[t + T_KIND]
        r0 = model[t + T_ROW]
        r1 = r0 + model[t + T_ROWS]
        o = model[t + T_RECORD]
        if kind == TICK_POSE:
            frame, tt, ge, gt, xf, work, jac = pose_record(
                rows[o : o + POSE_RECORD_HEAD + 6 * n], n
            )
            sel = model[t + T_SEL : t + T_SEL + r1 - r0]
            copy_pose_tick(
                model[t + T_LINK], ints, floats, poses, full, cols, tt, int(frame[0]), ge, gt,
                xf, work, sel, jac, par[i, 0], par[i, 3], a[r0:r1], b[r0:r1], y[r0:r1],
                ydot[r0:r1], wy[r0:r1],
            )  # fmt: skip
        elif kind == TICK_JOINTS:
            values, rates, vmax, idx = joint_record(rows[o : o + 4 * (r1 - r0)])
            joint_value_rows(
                q, idx, values, rates, vmax, par[i, 0], par[i, 3], par[i, 4] != 0.0, a[r0:r1],
                b[r0:r1], y[r0:r1], ydot[r0:r1], wy[r0:r1],
            )  # fmt: skip
        elif kind == TICK_COM:
            size = COM_RECORD_HEAD + 6 * (r1 - r0) + 3 * n + 4 * poses.shape[0] + 3 * full.shape[1]
            com_rows(
                ints, floats, poses, cols, rows[o : o + size], par[i, 0], par[i, 3], a[r0:r1],
                b[r0:r1], y[r0:r1], ydot[r0:r1], wy[r0:r1],
            )  # fmt: skip


@njit(cache=True)
def scene_tick(  # pragma: no cover - compiled
    fk,
    ints,
    floats,
    poses,
    full,
    sel,
    q_full,
    model,
    joints,
    rows,
    joint_flags,
    row_flags,
    motion,
    motion_box,
    held,
    lim_par,
    u,
    dt,
    clamp,
    limit,
    boxed,
    method,
    lam_max,
    eps,
    gamma_max,
):
    """A scene's tick in one call: its compiled ticks' rows and the solve.

    With ``fk``, first the tree's forward kinematics at the scene's ``q`` (bounded as
    :meth:`~itasc_ros.core.kinematics.tree.KinematicTree.compute` bounds it: every
    constraint's tick is compiled); without, the poses are computed (the other constraints'
    updates wrote their rows from them). Then the rows of the constraints whose tick is
    compiled (:func:`tick_rows`), then :func:`scene_solve`.

    Args:
        fk: compute the tree's forward kinematics first.
        ints: the tree's model, its int buffer.
        floats: its float buffer.
        poses: (n_links, 4, 4) out: the tree's link poses.
        full: (6, n_full) the tree's work array.
        sel: (n,) its active joints' columns.
        q_full: (n_full,) its full configuration (the active joints' written).
        model: the scene's model, and the arguments after it: :func:`scene_solve`'s.
        joints: likewise.
        rows: likewise.
        joint_flags: likewise.
        row_flags: likewise.
        motion: likewise.
        motion_box: likewise.
        held: likewise.
        lim_par: likewise.
        u: likewise.
        dt: likewise.
        clamp: likewise.
        limit: likewise.
        boxed: likewise.
        method: likewise.
        lam_max: likewise.
        eps: likewise.
        gamma_max: likewise.

    Returns:
        False (nothing solved) when a value of ``q`` is NaN, Inf or huge.
    """
    q = _vec(joints, model, J_Q, model[N])
    if fk and not forward_selected(q, sel, 1e150, q_full, ints, floats, poses):
        return False
    tick_rows(ints, floats, poses, full, sel, model, joints, rows)
    scene_solve(
        model, joints, rows, joint_flags, row_flags, motion, motion_box, held, lim_par, u, dt,
        clamp, limit, boxed, method, lam_max, eps, gamma_max,
    )  # fmt: skip
    return True


__all__ = [
    "INEQUALITY_TOLERANCE",
    "LIMITS_SIZE",
    "MAX_INEQUALITY_ROUNDS",
    "SceneWorkspace",
    "scene_box",
    "scene_limits",
    "scene_rows",
    "scene_solve",
    "scene_tick",
    "tick_rows",
]
