"""Scene: stacks the constraints' rows of ``A q' = y' + B Xu'`` and solves for ``q'``.

For constraints c = 1..k on one kinematic tree::

    A = [A_1; ...; A_k]        (m, n)      A_c = Cq - Cf Jf^-1 Jq
    B = blockdiag(B_1, ...)    (m, 6k)     B_c = Cf Jf^-1 Ju
    y'_d = yd' + K (yd - y)    (m,)
    q' = A# (y'_d + B Xu')     weighted (Wy, Wq), damped, with joint and velocity limits

Rows are grouped by the constraints' ``priority`` (1 first); a lower level acts only in the
null space of the higher ones (:func:`~itasc_ros.core.solve.solver.solve_prioritized`).

Rows of a one-sided constraint (``Constraint.one_sided``) are inequalities ``A q' >= y'_d``.

* **Hard** ones (``Constraint.hard``, collision), switched on by their weight (> 0: inside the
  activation distance), are no level's task but a bound of every level, kept as the joints'
  box is (saturated at their bound when a level's motion would break them): no task at any
  priority drives a pair below its margin.
* **Soft** ones (joint-limit avoidance) are a weighted task of their level, by an active set:
  off at first; after each solve the most violated row is switched on or, when none is, the
  one on that pulls most (an inequality must not pull) off, and the solve runs again, up to
  :data:`MAX_INEQUALITY_ROUNDS` times (rows checked on q' divided by level 1's scale).

``Xu'`` is each constraint's target twist: the feed-forward term, switchable per constraint.
A pose task's demand is shaped by :mod:`.pose_demand`. The arrays of a solve are views of one
workspace (:class:`~itasc_ros.core.solve.workspace.SceneWorkspace`): the joints' part built
with the scene, the rows' part when the layout changes (a constraint added, removed, enabled
or given other axes), never in a solve. A solve is the constraints' updates and one compiled
call (:func:`~itasc_ros.core.solve.workspace.scene_solve`: every right-hand side, the joints'
box, the levels' solve). The added limits the compiled solve knows (the motion box, the held
joints, as their classes are) are records it reads
in the same call (:func:`~itasc_ros.core.solve.workspace.scene_limits`); with any other added
limit, the box is made before it by :func:`~itasc_ros.core.solve.workspace.scene_box` and each
limit's own calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..constraints.base import HOLDER_EPOCH, LAYOUT_EPOCH, Constraint
from ..errors import ConfigurationError, ConstraintError, SolverError
from ..kinematics.tree import KinematicTree
from . import solver as S
from .limits import HeldJoints, JointPositionLimit, JointVelocityLimit, Limit, MotionBox
from .pose_demand import PoseDemand
from .shortfall import limiting_causes, task_fractions
from .solve_result import SolveResult
from .workspace import (
    INEQUALITY_TOLERANCE,
    L_HOLD,
    L_HOLDING,
    L_MOTION,
    L_PERIOD,
    LIMITS_SIZE,
    MAX_INEQUALITY_ROUNDS,
    SceneWorkspace,
    scene_box,
    scene_rows,
    scene_solve,
    scene_tick,
)

_NO_ROWS = np.zeros(0, dtype=np.bool_)  # the rotation-row mask of a task that is not a pose


def layout_signature(c: Constraint) -> int:
    """What of a constraint the scene's layout depends on: its structure and whether enabled."""
    return 2 * c.structure_version + (1 if c.enabled else 0)


Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class Scene:
    """Constraints on one kinematic tree, and the iTaSC solve.

    Args:
        tree: the kinematic tree (or a restricted view of it).
        constraints: initial constraints.
        solver: 'dls' (damped least squares, automatic damping) or 'sdls'.
        damping_max: largest damping lambda (at a singularity). Blender's 0.5 / 0.1 suit its
            scene units; for arms in metres and radians 0.1 / 0.06 is the measured choice: the
            gain of a near-singular direction, s / (s^2 + lambda^2), is bounded by
            1 / damping_epsilon and rises over a band wide enough that crossing the UR5 wrist
            singularity at full speed changes q' by < 0.07 vmax per 2 ms tick (0.1 / 0.02 gave
            0.59 vmax), at the price of slower final convergence for targets near a singular
            pose (test/core/solve/test_scene.py prints both).
        damping_epsilon: smallest singular value below which damping starts.
        sdls_gamma_max: SDLS: largest joint velocity per singular direction [rad/s].
        joint_weights: (n,) Wq (>= 0; 0 freezes a joint); default ones.
        velocity_scale: fraction (0, 1] of the URDF velocity limits to respect.
        joint_limit_margin: distance kept from each position limit [rad or m].
        max_velocity: cap for joints whose URDF has no velocity limit [rad/s or m/s].
    """

    def __init__(
        self,
        tree: KinematicTree,
        constraints: Iterable[Constraint] = (),
        *,
        solver: str = "dls",
        damping_max: float = 0.1,
        damping_epsilon: float = 0.06,
        sdls_gamma_max: float = math.pi,
        joint_weights: ArrayLike | None = None,
        velocity_scale: float = 1.0,
        joint_limit_margin: float = 0.0,
        max_velocity: float = 10.0,
    ) -> None:
        self.tree = tree
        n = tree.n_joints
        ints, floats, poses, full, sel = tree.kernel_arrays()
        # the tree's model and data as the scene's compiled tick takes them (scene_tick)
        self._tree_arrays = (ints, floats, poses, full, sel, tree.fk_kernel_arrays()[0])
        self._compiled = False  # some active constraint's tick is compiled (_rebuild)
        #: the count of changes to :meth:`arguments` (its arrays replaced, its settings)
        self.revision = 0
        self._constraints: list[Constraint] = []
        self._by_name: dict[str, Constraint] = {}  # the same constraints by name
        self._layout_version = 0
        self._engaged = True  # False: redundancy terms ask nothing (no task's target)
        self._built_layout = -1
        self._built_sig: list[int] = []
        self._built_epoch = -1
        self._held_epoch = -1  # HOLDER_EPOCH when the constraints last held the scene's arrays
        # the compiled solve's model and workspace; the arrays below are views of its buffers
        self._ws = ws = SceneWorkspace(n)
        self._wq = ws.wq
        self._wq[:] = 1.0
        self._lower = ws.lower
        self._upper = ws.upper
        self._vmax = ws.vmax
        self._q = ws.q
        self._method = S.solver_code(solver)
        self.solver = solver
        self.damping_max = damping_max
        self.damping_epsilon = damping_epsilon
        self.sdls_gamma_max = sdls_gamma_max
        self.set_damping(damping_max, damping_epsilon)
        self._velocity_scale = 1.0
        self._max_velocity = 10.0
        self._margin = 0.0
        self._limits: list[Limit] = []
        self._extra_limits: list[Limit] = []
        # the added limits as the compiled solve reads them (scene_limits): the motion box's
        # record and its own box, the held joints' box, their values; the limits that only
        # Python applies (none: the compiled solve applies all)
        self._motion_rec = np.zeros((8, n))
        self._motion_box = np.zeros((2, n))
        self._held: HeldJoints | None = None
        self._held_box = np.zeros((2, n))
        self._lim_par = np.zeros(LIMITS_SIZE)
        self._python_limits = False
        self.set_limits(velocity_scale, joint_limit_margin, max_velocity)
        if joint_weights is not None:
            self.set_joint_weights(joint_weights)
        self._locked = ws.locked
        self._info = ws.info
        self._zw = ws.hi  # the kernel's ``u`` when the demand limit is off (not read)
        self._demand = PoseDemand(n, ws.demand)
        self.box_lo = ws.box_lo  # (n,) the last solve's box on q' [rad/s]
        self.box_hi = ws.box_hi
        self._side = ws.side  # (n,) the box's position sides (+1 upper, -1 lower, 0 none)
        self._info[S.INFO_SCALE] = 1.0  # before any solve: unscaled, finite
        self._info[S.INFO_FINITE] = 1.0
        self.result = SolveResult(
            ws.qdot, np.zeros(0), [], tree.joint_names, locked=self._locked, info=self._info
        )
        for c in constraints:
            self.add(c)
        self._rebuild()

    # ----------------------------------------------------------------------- constraints
    @property
    def constraints(self) -> list[Constraint]:
        """The constraints, in row order."""
        return list(self._constraints)

    def add(self, constraint: Constraint) -> Constraint:
        """Add a constraint (bound to the tree now).

        Raises:
            ConstraintError: a constraint of that name exists.
            UnknownLinkError, UnknownJointError: it names something the tree lacks.
        """
        if any(c.name == constraint.name for c in self._constraints):
            raise ConstraintError(
                f"a constraint named {constraint.name!r} exists; names in use: "
                + ", ".join(repr(c.name) for c in self._constraints)
            )
        constraint.attach(self.tree)  # the tree it is bound to now (see ``bound_tree``)
        self._constraints.append(constraint)
        self._by_name[constraint.name] = constraint
        self._layout_version += 1
        return constraint

    def remove(self, name: str) -> Constraint:
        """Remove a constraint by name.

        Raises:
            ConstraintError: naming the constraints in the scene.
        """
        c = self.get(name)
        self._constraints.remove(c)
        del self._by_name[c.name]
        self._layout_version += 1
        return c

    def get(self, name: str) -> Constraint:
        """A constraint by name.

        Raises:
            ConstraintError: naming the constraints in the scene.
        """
        c = self._by_name.get(name) if isinstance(name, str) else None
        if c is not None:
            return c
        raise ConstraintError(
            f"no constraint named {name!r}; constraints are: "
            + (", ".join(repr(c.name) for c in self._constraints) or "(none)")
        )

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._by_name

    # ----------------------------------------------------------------------- settings
    def set_solver(self, solver: str) -> None:
        """'dls' or 'sdls'."""
        self._method = S.solver_code(solver)
        self.solver = solver
        self.revision += 1

    def set_damping(self, damping_max: float, damping_epsilon: float) -> None:
        """Damping lambda at a singularity and the singular value where it starts."""
        for name, v in (("damping_max", damping_max), ("damping_epsilon", damping_epsilon)):
            if not (math.isfinite(v) and v >= 0.0):
                raise SolverError(f"{name} must be a finite number >= 0, got {v!r}")
        if damping_epsilon == 0.0 and damping_max > 0.0:
            raise SolverError("damping_epsilon must be > 0 when damping_max > 0")
        self.damping_max = float(damping_max)
        self.damping_epsilon = float(damping_epsilon)
        self.revision += 1

    def set_joint_weights(self, weights: ArrayLike) -> None:
        """Wq (n,) in ``tree.joint_names`` order (>= 0; 0 freezes a joint)."""
        w = np.asarray(weights, dtype=float).reshape(-1)
        if w.shape != self._wq.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise SolverError(
                f"joint weights must be {self._wq.shape[0]} finite values >= 0 for joints "
                f"{self.tree.joint_names}"
            )
        self._wq[:] = w

    def set_limits(
        self,
        velocity_scale: float = 1.0,
        joint_limit_margin: float = 0.0,
        max_velocity: float = 10.0,
    ) -> None:
        """Velocity-limit fraction, position-limit margin and cap for unlimited joints."""
        if not (0.0 < velocity_scale <= 1.0):
            raise SolverError(f"velocity_scale must be in (0, 1], got {velocity_scale!r}")
        if not (math.isfinite(joint_limit_margin) and joint_limit_margin >= 0.0):
            raise SolverError(f"joint_limit_margin must be >= 0, got {joint_limit_margin!r}")
        if not (math.isfinite(max_velocity) and max_velocity > 0.0):
            raise SolverError(f"max_velocity must be > 0, got {max_velocity!r}")
        self._velocity_scale = float(velocity_scale)
        self._margin = float(joint_limit_margin)
        self._max_velocity = float(max_velocity)
        lo, hi = self.tree.lower, self.tree.upper
        room = (hi - lo) > 2.0 * self._margin
        self._lower[:] = np.where(room, lo + self._margin, lo)
        self._upper[:] = np.where(room, hi - self._margin, hi)
        v = self.tree.velocity_limits
        self._vmax[:] = np.where(np.isfinite(v), v, self._max_velocity) * self._velocity_scale
        self._limits = [
            JointVelocityLimit(self._vmax),
            JointPositionLimit(self._lower, self._upper),
            *self._extra_limits,
        ]

    @property
    def limits(self) -> list[Limit]:
        """The hard limits of every solve, in the order their boxes are intersected."""
        return list(self._limits)

    def add_limit(self, limit: Limit) -> Limit:
        """Add a hard limit after the others (it wins where its box conflicts with theirs).

        Raises:
            SolverError: a limit for another number of joints.
        """
        if limit.tick_lo.shape != self._q.shape:
            raise SolverError(
                f"limit {limit.name!r} bounds {limit.tick_lo.shape[0]} joints; the scene has "
                f"{self._q.shape[0]}: {self.tree.joint_names}"
            )
        self._extra_limits.append(limit)
        self._limits.append(limit)
        self._plan_limits()
        return limit

    def _plan_limits(self) -> None:
        """How a solve applies the added limits: in its compiled call, or by their own calls.

        In the compiled call when it knows each (a motion box, then a held joints' box:
        :func:`~itasc_ros.core.solve.workspace.scene_limits`); else (another limit, a subclass
        of theirs) each by its :meth:`~Limit.apply` and :meth:`~Limit.mark_sides`.
        """
        kinds = [type(lim) for lim in self._extra_limits]
        self._python_limits = kinds not in ([MotionBox], [HeldJoints], [MotionBox, HeldJoints])
        self.revision += 1
        self._lim_par[:] = 0.0
        self._held = None
        if self._python_limits:
            return
        for lim in self._extra_limits:
            if isinstance(lim, MotionBox):
                self._motion_rec = lim.limiter.record
                self._motion_box = lim.tick
                self._lim_par[L_PERIOD] = lim.period
                self._lim_par[L_HOLD] = lim.hold + lim.period
                self._lim_par[L_MOTION] = 1.0
            elif isinstance(lim, HeldJoints):
                self._held = lim
                self._held_box = lim.tick

    def set_feedback_limits(self, linear: float, angular: float) -> None:
        """Clamp the feedback of pose errors to these speeds (:meth:`.PoseDemand.set_speeds`).

        The controller gives its Cartesian speeds (``max_cartesian_speed``, ``_angular_``)
        [m/s], [rad/s]; the clamp is never below the target's own twist. 0: no clamp.

        Raises:
            SolverError: a negative speed.
        """
        self._demand.set_speeds(linear, angular)
        self.revision += 1

    def set_demand_limits(
        self, linear: float, angular: float, last_command: Array | None, period: float
    ) -> None:
        """Keep a pose task's demand near what the last command gives it (:mod:`.pose_demand`).

        The controller gives its Cartesian accelerations (``max_cartesian_acceleration``,
        ``_angular_``; 0: off), its last published command (an (n,) array it updates in place,
        read at each solve) and its nominal period [s]. The feedback's clamp
        (:meth:`set_feedback_limits`) then also follows the braking curve of the pose error.

        Raises:
            SolverError: a negative or non-finite value, or a command of the wrong length.
        """
        self._demand.set(linear, angular, last_command, period)
        self.revision += 1

    def set_demand_accelerations(self, linear: float, angular: float) -> None:
        """New accelerations of the demand limit, when it is on (:meth:`set_demand_limits`)."""
        self._demand.set_accelerations(linear, angular)
        self.revision += 1

    @property
    def velocity_limits(self) -> Array:
        """(n,) the velocity limits the solve respects [rad/s or m/s]."""
        return self._vmax.copy()

    @property
    def hard_velocity_limits(self) -> Array:
        """(n,) the URDF's velocity limits, not scaled (``max_velocity`` where none) [rad/s]."""
        v = self.tree.velocity_limits
        return np.where(np.isfinite(v), v, self._max_velocity)

    @property
    def position_limits(self) -> tuple[Array, Array]:
        """(lower (n,), upper (n,)) the position limits the solve keeps to (margin applied)."""
        return self._lower.copy(), self._upper.copy()

    # ----------------------------------------------------------------------- layout
    def _layout_changed(self) -> bool:
        # Exact comparison with the last rebuild. (A sum of the versions collided: removing an
        # enabled constraint bound once, +1 layout - 1 structure, or disabling one constraint
        # while enabling another, left the sum unchanged and the stale rows in the solve.)
        # The fast path: no constraint anywhere changed its layout since the last look.
        epoch = LAYOUT_EPOCH[0]
        if self._built_epoch == epoch and self._built_layout == self._layout_version:
            return False
        sig = self._built_sig
        if self._built_layout != self._layout_version or len(sig) != len(self._constraints):
            return True
        for i, c in enumerate(self._constraints):
            if sig[i] != layout_signature(c):
                return True
        self._built_epoch = epoch  # another scene's constraints changed, not ours
        return False

    def _rebuild(self) -> None:
        active = [c for c in self._constraints if c.enabled]
        m = sum(c.n_rows for c in active)
        self._active = active
        # Rows grouped by priority level, highest first (one level: the constraints' order).
        prios = sorted({c.priority for c in active})
        self._nlev = max(1, len(prios))
        self._levels = np.zeros(self._nlev + 1, dtype=np.int64)
        start: dict[Constraint, int] = {}
        r = 0
        for k, p in enumerate(prios):
            for c in active:
                if c.priority == p:
                    start[c] = r
                    r += c.n_rows
            self._levels[k + 1] = r
        self._levels[self._nlev] = m
        ws = self._ws
        kinds = [
            (c.one_sided and c.hard, c.resolves_redundancy, c.one_sided and not c.hard)
            for c in active
        ]
        ticks = [c.compiled_tick(self.tree) for c in active]
        self._compiled = any(t is not None for t in ticks)
        if not self._compiled:
            ticks = []  # each constraint's update writes its rows
        ws.build(
            [(start[c], c.n_rows, c.pose_feedback) for c in active], m, self._levels, kinds, ticks
        )
        self._a, self._b, self._y, self._ydot = ws.a, ws.b, ws.y, ws.ydot
        self._wy, self._rhs, self._ff, self._asked = ws.wy, ws.rhs, ws.ff, ws.asked
        self._ineq, self._redundant, self._soft = ws.ineq, ws.redundant, ws.soft
        self._views = []
        self._tick = []
        self._own_updates = []  # in a compiled tick, the constraints whose update runs first
        self._row_slices: dict[str, slice] = {}
        for i, c in enumerate(active):
            r = start[c]
            s = slice(r, r + c.n_rows)
            self._row_slices[c.name] = s
            orient = _NO_ROWS
            if c.pose_feedback:
                orient = ws.orient[s]
                orient[:] = np.array(c.orientation_rows(), dtype=np.bool_)
            a, b, y, ydot, wy = self._a[s], self._b[s], self._y[s], self._ydot[s], self._wy[s]
            self._views.append(
                (c, a, b, y, ydot, wy, self._rhs[s], self._ff[s], orient, self._asked[s])
            )
            c.keep_twists(ws.twist[i], ws.seen[i])
            record = ws.records[i]
            if record is not None:
                c.keep_record(record)
            elif self._compiled:
                self._own_updates.append((c, a, b, y, ydot, wy))
            self._tick.append((c, a, b, y, ydot, wy, ws.par[i], ws.twist[i], ws.seen[i], record))
        # each constraint's row of tick values, and the values last written there (none yet:
        # the workspace's rows are new)
        self._pars = [(t[0], t[6]) for t in self._tick]
        self._par_written: list[tuple[Any, ...] | None] = [None] * len(self._tick)
        self.result.relayout([c.name for c in active])
        self._held_epoch = HOLDER_EPOCH[0]  # every active constraint's arrays are ours now
        self._built_layout = self._layout_version
        self._built_epoch = LAYOUT_EPOCH[0]
        self._built_sig = [layout_signature(c) for c in self._constraints]
        self.revision += 1

    # ----------------------------------------------------------------------- solve
    def _check(self, q: ArrayLike, dt: float) -> Array:
        period = type(dt) is float and 0.0 < dt < math.inf  # the tick's own: nothing to convert
        if not (period or (isinstance(dt, float | int) and math.isfinite(dt) and dt > 0.0)):
            raise ConfigurationError(f"dt must be a finite time step > 0 [s], got {dt!r}")
        qa = q if type(q) is np.ndarray else np.asarray(q, dtype=float)
        if qa.shape != self._q.shape:
            raise ConfigurationError(
                f"q has shape {qa.shape}; expected ({self._q.shape[0]},) for joints "
                f"{self.tree.joint_names}"
            )
        self._q[:] = qa
        return self._q

    def engage_redundancy(self, engaged: bool) -> None:
        """Let the terms that only resolve redundancy ask for motion (a task has a target).

        Until then such a term (``resolves_redundancy``) asks nothing: it starts no motion of
        its own.
        """
        self._engaged = engaged

    def update(self, q: ArrayLike) -> None:
        """Compute A, B, y and y'_d for ``q`` without solving (see :meth:`matrices`)."""
        self._update_rows(self._check(q, 1.0))
        ws = self._ws
        scene_rows(
            ws.model, ws.joints, ws.rows, ws.row_flags, self._zw, self._demand.clamps, False
        )

    def _update_rows(self, qv: Array) -> None:
        """Each constraint's rows of A, B, y, y'_d, Wy for ``qv`` (checked: :meth:`_check`).

        Also each constraint's values of the tick for its right-hand side (gain, fed forward,
        aims: :func:`~itasc_ros.core.solve.workspace.scene_rows` makes it), and its twist
        arrays back in the workspace when another scene took them.
        """
        if self._layout_changed():
            self._rebuild()
        tree = self.tree
        tree.compute(qv)
        for c, a, b, y, ydot, wy, *_ in self._tick:
            c.update(tree, qv, a, b, y, ydot, wy)
        self._tick_values()

    def _tick_values(self) -> None:
        """Each constraint's values of the tick in ``par``.

        Its gain, fed forward, aims, weight and whether it resolves redundancy; also its
        twist arrays and its tick record back in the workspace when another scene took them.
        """
        if self._held_epoch != HOLDER_EPOCH[0]:  # some constraint's arrays moved since
            for c, *_, twist, seen, record in self._tick:
                c.keep_twists(twist, seen)  # back from another scene that took them
                if record is not None:
                    c.keep_record(record)
            self._held_epoch = HOLDER_EPOCH[0]
        engaged, written = self._engaged, self._par_written
        for i, (c, par) in enumerate(self._pars):  # written when they changed (rows: reads)
            resolves = c.resolves_redundancy
            values = (
                c.gain, c.feedforward, c.has_target and (engaged or not resolves), c.weight,
                resolves,
            )  # fmt: skip
            if values != written[i]:
                par[0], par[1], par[2], par[3], par[4] = values
                written[i] = values

    def solve(self, q: ArrayLike, dt: float) -> SolveResult:
        """One control tick: q' for the joint positions ``q`` (n,) and period ``dt`` [s].

        Every level keeps ``q'`` inside the joints' box, the intersection of the :attr:`limits`'
        boxes (velocity, next-step position, and those added: the controller's motion limits),
        kept in :attr:`box_lo`, :attr:`box_hi`.

        Returns:
            The scene's :class:`SolveResult` (reused by the next call).

        Raises:
            ConfigurationError: q of the wrong length or non-finite; dt not > 0.
        """
        return self.run(self.prepare(q, dt))

    def run(self, args: tuple[Any, ...]) -> SolveResult:
        """The solve :meth:`prepare` readied (``args``, its result), then :meth:`solved`."""
        if not self._compiled:
            scene_solve(*args)
            return self.solved(True)
        return self.solved(scene_tick(*args))

    def prepare(self, q: ArrayLike, dt: float) -> tuple[Any, ...]:
        """A solve at ``q`` (n,) [rad or m] and ``dt`` [s] up to its one compiled call.

        For a caller that makes that call itself, inside a compiled call of its own (the
        controller's tick: :func:`~itasc_ros.core.control._command_kernels.solve_command`),
        then gives its outcome to :meth:`solved`. :meth:`solve` is ``prepare`` then
        :meth:`run` (the call, then ``solved``). ``prepare`` is :meth:`ready` then
        :meth:`arguments`.

        Returns:
            With :attr:`compiled_tick`: :func:`~itasc_ros.core.solve.workspace.scene_tick`'s
            arguments (True when it computes the tree's forward kinematics, the tree's arrays,
            then the scene's); else :func:`~itasc_ros.core.solve.workspace.scene_solve`'s.

        Raises:
            ConfigurationError: q of the wrong length or non-finite; dt not > 0.
        """
        self.ready(q, dt)
        return self.arguments(dt)

    def ready(self, q: ArrayLike, dt: float) -> None:
        """The scene's arrays readied for a solve at ``q`` (n,) [rad or m] and ``dt`` [s].

        Its layout rebuilt when a constraint changed it, the rows or values of the tick
        written, the limits' boxes of a Python limit applied: all that :meth:`prepare` does
        but gather the call's :meth:`arguments` (the same arrays until :attr:`revision`
        changes: a caller may keep them).

        Raises:
            ConfigurationError: q of the wrong length or non-finite; dt not > 0.
        """
        qv = self._q
        period = type(dt) is float and 0.0 < dt < math.inf
        if period and type(q) is np.ndarray and q.shape == qv.shape:
            qv[:] = q  # the tick's own: nothing to convert, nothing to refuse
        else:
            qv = self._check(q, dt)
        # the fast path of _layout_changed: no constraint anywhere changed its layout since
        if (
            self._built_epoch != LAYOUT_EPOCH[0] or self._built_layout != self._layout_version
        ) and self._layout_changed():
            self._rebuild()
        if self._compiled:  # the rows of the compiled ticks in one call (scene_tick)
            if self._own_updates:  # the others' first, from the tree's FK
                tree = self.tree
                tree.compute(qv)
                for c, a, b, y, ydot, wy in self._own_updates:
                    c.update(tree, qv, a, b, y, ydot, wy)
            self._tick_values()
        else:
            self._update_rows(qv)
        if self._python_limits:
            # the built-in velocity and position limits in one compiled call (what their Limit
            # objects intersect), then the added ones in order, which mark their position sides
            # (the solve marks the position limits' on the joints they leave unmarked)
            ws, step = self._ws, float(dt)
            scene_box(ws.model, ws.joints, step)
            for lim in self._extra_limits:
                lim.apply(qv, step, self.box_lo, self.box_hi)
            for lim in self._extra_limits:
                lim.mark_sides(qv, self.box_lo, self.box_hi, self._side)
        elif self._held is not None:
            self._lim_par[L_HOLDING] = self._held.holding

    def arguments(self, dt: float) -> tuple[Any, ...]:
        """The compiled call's arguments of a solve :meth:`ready` readied, period ``dt`` [s].

        :meth:`prepare`'s result. The same arrays and values from call to call while
        :attr:`revision` stays (and ``dt`` with it).
        """
        demand = self._demand
        limit = demand.limits
        u = demand.last_command  # (n,) read with the demand limit on; else a work array's place
        if u is None or not limit:
            u = self._zw
        args = self._kernel_args(u, float(dt), limit)
        if not self._compiled:
            return args
        return (not self._own_updates, *self._tree_arrays, *args)

    @property
    def solve_memory(self) -> Array:
        """(:data:`~.small_svd.MEMORY_SIZE`,) what the scene's solve keeps from one to the next.

        The rotation that made the first level's rows orthogonal at the last solve, where the
        next one's SVD starts (:func:`~.small_svd.thin_svd_from`): a solve depends on it to
        the last bit (not beyond its convergence test), so a controller's snapshot holds it
        and a restored one sets it. Zeros: none (the next SVD starts from its matrix).
        """
        return self._ws.svd_memory

    @property
    def solve_buffers(self) -> tuple[IntArray, Array, Array, BoolArray]:
        """The workspace's buffers a compiled call reads a solve's result from.

        ``(model, joints, rows, row_flags)`` (:class:`~itasc_ros.core.solve.workspace.
        SceneWorkspace`): after a solve, its ``q'``, box, info and rows.
        """
        ws = self._ws
        return ws.model, ws.joints, ws.rows, ws.row_flags

    @property
    def compiled_tick(self) -> bool:
        """True when :meth:`prepare` readies ``scene_tick``'s call (else ``scene_solve``'s)."""
        return self._compiled

    @property
    def solves_in_one_call(self) -> bool:
        """True when a compiled tick reads ``q`` in its compiled call only.

        :attr:`compiled_tick`, no constraint updated and no limit applied in Python first:
        the call's caller may set ``q`` itself, after :meth:`prepare` (the workspace's).
        """
        return self._compiled and not self._own_updates and not self._python_limits

    def solved(self, finite: bool) -> SolveResult:
        """The result of the solve :meth:`prepare` readied, once its compiled call ran.

        Args:
            finite: what that call returned (``scene_tick``: False when a value of ``q`` was
                NaN, Inf or huge and nothing was solved; ``scene_solve``: True).

        Raises:
            ConfigurationError: ``finite`` is False.
        """
        if not finite:
            raise ConfigurationError(f"q has NaN, Inf or huge values: {self._q.tolist()}")
        res = self.result
        res.defer(self._fill_errors, self._wy)  # sigma_min, ok, ...: read from self._info
        return res

    def _fill_errors(self, out: Array) -> None:
        """Each constraint's error from its rows of y into ``out`` (k,) (the last solve's)."""
        for i, (c, _a, _b, y, *_rest) in enumerate(self._views):
            out[i] = c.error(y)

    def _kernel_args(self, u: Array, dt: float, limit: bool) -> tuple[Any, ...]:
        """``scene_solve``'s arguments (``scene_tick``'s after the tree's) for a solve.

        ``u``: the last command (n,) [rad/s], read with the demand ``limit``; ``dt`` [s].
        """
        return (
            *self._ws.buffers, self._motion_rec, self._motion_box, self._held_box, self._lim_par,
            u, dt, self._demand.clamps, limit, self._python_limits, self._method,
            self.damping_max, self.damping_epsilon, self.sdls_gamma_max,
        )  # fmt: skip

    def warm_up(self, dt: float) -> tuple[Any, ...]:
        """Load the compiled calls of both kinds of tick now, so that no tick waits for one.

        A scene with a compiled tick solves through ``scene_tick``, one without through
        ``scene_solve``; a live change (a constraint enabled or disabled) may take the other.
        Run at the model's warm-up: the buffers' values are a solve's again at the next one.

        Returns:
            The ``scene_tick`` arguments it ran (for a compiled call that makes that call:
            :meth:`prepare`).
        """
        args = self._kernel_args(self._zw, float(dt), self._demand.limits)
        scene_solve(*args)
        tick = (False, *self._tree_arrays, *args)
        scene_tick(*tick)
        return tick

    def following(self, qdot: Array, out: Array) -> None:
        """How much of each constraint's asked velocity the command ``qdot`` (n,) gives.

        Into ``out`` (k,), in :attr:`SolveResult.constraint_names` order, from the last
        solve's rows (:func:`~itasc_ros.core.solve.shortfall.task_fractions`, one compiled
        call).
        """
        ws = self._ws
        task_fractions(ws.model, ws.rows, ws.row_flags, qdot, out)

    def limiting(self, qdot: Array) -> list[str]:
        """What held the last solve's command ``qdot`` (n,) back, in words (a report's cause).

        See :func:`~itasc_ros.core.solve.shortfall.limiting_causes`.
        """
        res = self.result
        return limiting_causes(
            self.tree.joint_names, self._locked, self._side, self.box_lo, self.box_hi, qdot,
            res.damping, res.sigma_min, self._views,
        )  # fmt: skip

    @property
    def levels(self) -> list[tuple[int, slice]]:
        """(priority, rows) of each level, highest first, as the last solve grouped them."""
        if self._layout_changed():
            self._rebuild()
        prios = sorted({c.priority for c in self._active}) or [1]
        return [
            (p, slice(int(self._levels[k]), int(self._levels[k + 1]))) for k, p in enumerate(prios)
        ]

    def rows(self, name: str) -> slice:
        """The rows of constraint ``name`` in A, B, y (see :meth:`matrices`).

        Raises:
            ConstraintError: no enabled constraint of that name (naming the constraints).
        """
        if self._layout_changed():
            self._rebuild()
        if name in self._row_slices:
            return self._row_slices[name]
        raise ConstraintError(
            f"no enabled constraint named {name!r}; constraints are: "
            + (", ".join(repr(c.name) for c in self._active) or "(none)")
        )

    def matrices(self, q: ArrayLike) -> dict[str, Array]:
        """Copies of A (m, n), B (m, 6), y, y'_d, Wy (m,) and y'_d + B Xu' at ``q``."""
        self.update(q)
        return {
            "A": self._a.copy(),
            "B": self._b.copy(),
            "y": self._y.copy(),
            "ydot": self._ydot.copy(),
            "wy": self._wy.copy(),
            "rhs": self._rhs.copy(),
        }


__all__ = ["INEQUALITY_TOLERANCE", "MAX_INEQUALITY_ROUNDS", "Scene", "SolveResult"]
