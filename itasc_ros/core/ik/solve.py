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
compiled loop (:mod:`~itasc_ros.core.ik.pose_solve`, kernel in
:mod:`itasc_ros.core.ik._ik_kernels`), and so does a lone constraint that declares itself
such a pose (:meth:`~itasc_ros.core.constraints.Constraint.pose_goal`); such a pose among
inequalities (collision pairs, joints kept from their limits) takes that loop too, its
solutions checked against them and repaired by the set loop when one breaks
(:mod:`~itasc_ros.core.ik.pose_among`); any other constraint
set iterates the constraints' rows of ``A`` as :class:`~itasc_ros.core.solve.Scene` assembles
them (:mod:`~itasc_ros.core.ik.set_solve`). This module holds the entry point: it checks the
arguments and picks the path.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from numpy.typing import ArrayLike

from ..constraints.base import Constraint
from ..constraints.copy_pose import CopyPose
from ..errors import ConfigurationError, UnreachableTargetError
from ..kinematics.tree import KinematicTree
from .inputs import check_pose, check_settings, seed_array
from .options import PREFER, IkOptions
from .pose_among import among_inequalities, solve_pose_among
from .pose_chain import chain_of
from .pose_solve import solve_pose, warm_up
from .result import IkResult
from .set_solve import solve_set


def solve_ik(
    tree: KinematicTree,
    target: ArrayLike | None = None,
    link: str | None = None,
    *,
    constraints: Sequence[Constraint] = (),
    secondary: Sequence[Constraint] = (),
    keep: Sequence[Constraint] = (),
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
        keep: one-sided constraints every solution keeps beside the ``target`` pose or the
            ``constraints`` (a :class:`~itasc_ros.core.constraints.Collision`: every pair at
            its margin; a joint kept from its limits), bound to ``tree`` for the solve.
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
        ConfigurationError: a constraint in ``keep`` that is not one-sided.
    """
    warm_up()
    t0 = time.perf_counter()
    check_settings(
        timeout, tolerance, rotation_tolerance, max_iterations, prefer, random_seed, options
    )
    # floats for the compiled loops (an int, accepted here, would compile another variant)
    tolerance = float(tolerance)
    rot_tol = tolerance if rotation_tolerance is None else float(rotation_tolerance)
    seed_arr = seed_array(tree, seed)
    budget = (math.inf if timeout is None else float(timeout), max_iterations)
    if target is None and len(constraints) == 1 and not (secondary or keep):
        goal = constraints[0].pose_goal()  # a constraint that is one pose: the compiled loop
        if goal is not None:
            link, target, position_axes, rotation_axes = goal
            constraints = ()
    if target is not None and not (constraints or secondary or keep):  # the compiled loop
        ch, fresh = chain_of(tree, tree.tip_link() if link is None else link)
        sel = ch.selection(position_axes, rotation_axes)
        if fresh:  # the budget is for solving: a chain is prepared once per tree and link
            t0 = time.perf_counter()
        return solve_pose(
            ch, target, sel, seed_arr, budget, tolerance, rot_tol, random_seed, prefer,
            options, t0,
        )  # fmt: skip
    if target is not None and constraints:
        raise ConfigurationError("give either a target pose or constraints, not both")
    if target is None and not constraints:
        raise ConfigurationError("give a target pose (with its link) or a list of constraints")
    bad = [c.name for c in keep if not c.one_sided]
    if bad:
        raise ConfigurationError(
            f"keep takes one-sided constraints (collision, joint_limit_avoidance); {bad} are not"
        )
    if keep and target is not None:  # the pose as a constraint beside them
        constraints = [_pose_constraint(tree, target, link, position_axes, rotation_axes)]
        target = None
    constraints = [*constraints, *keep]
    if target is not None:  # a pose with secondary tasks: the scene's rows
        constraints = [_pose_constraint(tree, target, link, position_axes, rotation_axes)]
    if not secondary and prefer == "speed" and among_inequalities(constraints):
        return solve_pose_among(  # a pose among inequalities: the pose loop, checked
            tree, constraints, seed_arr, budget, tolerance, rot_tol, random_seed,
            options or IkOptions(),
        )  # fmt: skip
    return solve_set(
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
    )


def _pose_constraint(
    tree: KinematicTree,
    target: ArrayLike,
    link: str | None,
    position_axes: str,
    rotation_axes: str,
) -> CopyPose:
    """The pose target as a CopyPose on root axes (to solve it with secondary constraints).

    Raises:
        ConfigurationError: the pose is not a finite rigid (4, 4) transform.
        UnreachableTargetError: a position beyond the link's reach.
    """
    c = CopyPose(
        "ik_target",
        tree.tip_link() if link is None else link,
        position_axes,
        rotation_axes,
        reference="root",
    )
    pose = check_pose(target)
    c.set_target(pose)
    reach = tree.reach(c.effector)
    dist = math.hypot(float(pose[0, 3]), float(pose[1, 3]), float(pose[2, 3]))
    if position_axes and dist > reach + 1e-9:
        raise UnreachableTargetError(
            f"the target is {dist:.4g} m from the root; {c.effector!r} reaches "
            f"{reach:.4g} m at most"
        )
    return c


__all__ = ["PREFER", "IkOptions", "IkResult", "solve_ik"]
