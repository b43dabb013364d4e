"""``itasc-bench hierarchy``: strict priority under saturation, ours beside PlaCo, Drake, daqp.

The case (:class:`HierarchyCase`): the Panda at its home pose, a 2 ms period, the URDF's
velocity limits binding; level 1 is the hand's position toward a target 0.3 m away (gain 20:
6 m/s asked, far beyond the limits), level 2 a posture of all 7 joints 0.5 rad from home
(gain 20), below it. What the figures say: how much of level 1 survives when level 2 is added
(the level-1 task velocity ``J_pos q'`` with and without level 2, at the first tick and over a
0.5 s closed loop on an ideal robot ``q += q' dt``). Strict priority means no change at all.

Every solver's joint velocities go through the same figures (:func:`trajectory_figures`), so
the measurement holds for any solver that maps ``q`` to ``q'``: ours (:func:`measure_ours`,
two ``priority`` levels of a :class:`~itasc_ros.core.Scene`), PlaCo (the position task
``hard`` or ``scaled``, the posture ``soft``, in its worker), Drake's differential IK (the
position-only velocity flag, joint centering toward the posture) and daqp's hierarchical QP
(:func:`measure_daqp`: the box, level 1 as least squares or scaled, the posture below; also
timed per solve beside our scene's).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import CopyPose, JointValue, KinematicTree, Scene
from itasc_ros.core.kinematics.home_poses import HOME_POSES
from itasc_ros.core.solve.limits.joint_position import joint_box
from itasc_ros.tools.resources import robot_urdf

from .harness import time_interleaved
from .peers import DrakePeer, PeerUnavailable, PlacoPeer
from .peers.daqp_peer import DaqpHierarchy, daqp_version
from .report import print_table

Array = NDArray[np.float64]

#: A solver of the case: joint positions (n,) [rad] -> joint velocities (n,) [rad/s], or None
#: when it finds no solution (the closed loop ends there).
Step = Callable[[Array], Array | None]


@dataclass(frozen=True)
class HierarchyCase:
    """The saturated two-level case.

    Attributes:
        link: The effector of level 1 (its origin's position).
        offset: Target position minus the home position of ``link``, root frame [m], (3,).
        posture_offset: Posture minus the home pose, per joint [rad].
        gain: Gain of both levels [1/s].
        period: Control period [s].
        duration: Length of the closed loop [s].
    """

    link: str = "panda_hand"
    offset: tuple[float, float, float] = (0.3, 0.0, 0.0)
    posture_offset: float = 0.5
    gain: float = 20.0
    period: float = 0.002
    duration: float = 0.5

    @property
    def ticks(self) -> int:
        """Ticks of the closed loop."""
        return round(self.duration / self.period)


@dataclass
class CaseData:
    """The case on the Panda: the tree, the start, the targets.

    Attributes:
        case: The case's parameters.
        tree: The Panda's kinematic tree.
        home: The home pose [rad], (7,).
        target: Level 1's target position [m], (3,).
        posture: Level 2's target joint positions [rad], (7,).
    """

    case: HierarchyCase
    tree: KinematicTree
    home: Array
    target: Array
    posture: Array

    @classmethod
    def panda(cls, case: HierarchyCase) -> CaseData:
        """The case on the Panda from its home pose."""
        tree = KinematicTree.from_urdf(robot_urdf("panda").read_text())
        home = np.array(HOME_POSES["panda"], dtype=np.float64)
        target = tree.forward_kinematics(home, case.link)[:3, 3] + np.array(case.offset)
        return cls(case, tree, home, target, home + case.posture_offset)

    def position(self, q: Array) -> Array:
        """Position of level 1's link at ``q`` [m], (3,)."""
        return self.tree.forward_kinematics(q, self.case.link)[:3, 3]

    def task_velocity(self, q: Array, qdot: Array) -> Array:
        """Level 1's task velocity ``J_pos q'`` at ``q`` [m/s], (3,)."""
        return self.tree.jacobian(q, self.case.link)[:3] @ qdot


def closed_loop(data: CaseData, step: Step) -> tuple[list[Array], str]:
    """Run ``step`` on an ideal robot (``q += q' dt``) from home for the case's duration.

    Returns:
        The joint velocities of each tick [rad/s], (n,) each, and why the loop ended early
        (empty when it ran to the end).
    """
    q, qdots = data.home.copy(), list[Array]()
    for k in range(data.case.ticks):
        qdot = step(q)
        if qdot is None or not np.all(np.isfinite(qdot)):
            return qdots, f"no solution at tick {k}"
        qdots.append(np.array(qdot, dtype=np.float64))
        q = q + qdots[-1] * data.case.period
    return qdots, ""


def trajectory_figures(data: CaseData, qdots: list[Array]) -> dict[str, Any]:
    """The figures of one solver's run: first tick and closed loop.

    Args:
        data: The case.
        qdots: The joint velocities of each tick from home [rad/s], (n,) each.

    Returns:
        ``level1_speed_m_s`` (first tick, ``|J_pos q'|``), ``level1_velocity_m_s`` (3,),
        ``level1_error_mm`` (distance to the target after each tick, list),
        ``final_level1_error_mm`` and ``final_posture_error_rad`` (norm, at the end); ``ticks``.
        The first-tick and final figures are None when there is no tick (no solution).
    """
    q = data.home.copy()
    errors, v0 = [], np.zeros(3)
    for k, qdot in enumerate(qdots):
        if k == 0:
            v0 = data.task_velocity(q, qdot)
        q = q + qdot * data.case.period
        errors.append(float(np.linalg.norm(data.target - data.position(q))) * 1e3)
    ran = bool(qdots)
    return {
        "ticks": len(qdots),
        "level1_speed_m_s": float(np.linalg.norm(v0)) if ran else None,
        "level1_velocity_m_s": v0.tolist() if ran else None,
        "level1_error_mm": errors,
        "final_level1_error_mm": errors[-1] if ran else None,
        "final_posture_error_rad": float(np.linalg.norm(data.posture - q)) if ran else None,
    }


def _our_scene(data: CaseData, with_posture: bool) -> Scene:
    """Our scene: level 1 (position only), and the posture at priority 2 if asked."""
    c = data.case
    hand = CopyPose("level1", c.link, position_axes="xyz", rotation_axes="", gain=c.gain)
    pose = np.eye(4)
    pose[:3, 3] = data.target
    hand.set_target(pose)
    cons: list[Any] = [hand]
    if with_posture:
        posture = JointValue("posture", data.tree.joint_names, data.posture, gain=c.gain)
        posture.set_priority(2)
        cons.append(posture)
    return Scene(data.tree, cons)


def _our_step(scene: Scene, period: float, scales: list[float]) -> Step:
    def step(q: Array) -> Array | None:
        res = scene.solve(q, period)
        scales.append(res.velocity_scale)
        return res.qdot.copy() if res.ok else None

    return step


def measure_ours(data: CaseData) -> dict[str, Any]:
    """Ours with level 2 (``with_level2``) and level 1 alone (``alone``), and how they differ.

    Returns:
        The two runs' figures (:func:`trajectory_figures`, plus ``first_velocity_scale``, level
        1's task scale at the first tick) and ``speed_ratio`` (first tick, with / alone),
        ``task_velocity_change_m_s`` (first tick, ``|J_pos (q'_both - q'_alone)|``) and
        ``max_error_difference_mm`` (closed loop, largest difference of level 1's error).
    """
    runs: dict[str, Any] = {}
    qdot0: dict[str, Array] = {}
    for name, with_posture in (("alone", False), ("with_level2", True)):
        scales: list[float] = []
        step = _our_step(_our_scene(data, with_posture), data.case.period, scales)
        qdots, ended = closed_loop(data, step)
        runs[name] = trajectory_figures(data, qdots)
        runs[name]["first_velocity_scale"] = scales[0]
        runs[name]["ended"] = ended
        qdot0[name] = qdots[0]
    _compare(data, runs, qdot0)
    return runs


def measure_placo(data: CaseData) -> dict[str, Any]:
    """PlaCo: level 1 as a ``hard`` task, then as a ``scaled`` one; the posture ``soft``.

    Returns:
        Per mode (``hard``, ``scaled``) the figures of :func:`trajectory_figures` with
        ``ended`` (PlaCo's error, if it failed) and ``first_scale`` (PlaCo's scale of the
        first tick); or ``{"unavailable": why}``.
    """
    tree, c = data.tree, data.case
    limits = (tree.lower, tree.upper, tree.velocity_limits)
    try:
        peer = PlacoPeer(robot_urdf("panda"), c.link, tree.joint_names, limits, c.period)
    except (PeerUnavailable, RuntimeError) as exc:
        return {"unavailable": str(exc)}
    out: dict[str, Any] = {"version": peer.version}
    try:
        for mode in ("hard", "scaled"):
            run = peer.hierarchy(data.home, data.target, data.posture, c.gain, c.ticks, mode)
            qdots = [np.array(v) for v in run["qdots"]]
            out[mode] = trajectory_figures(data, qdots)
            out[mode]["ended"] = run["failed"]
            out[mode]["first_scale"] = run["scales"][0] if run["scales"] else None
    except (PeerUnavailable, RuntimeError) as exc:  # the worker died or refused the request
        return {"unavailable": f"PlaCo failed: {exc}"}
    finally:
        peer.close()
    return out


def measure_drake(data: CaseData) -> dict[str, Any]:
    """Drake: ``DoDifferentialInverseKinematics``, position-only, centering toward the posture.

    The desired twist is level 1's ``K (target - p)`` (no rotation, its flags off); the
    joint-centering gain ``K`` pulls toward the posture in the null space of the position.

    Returns:
        The figures of :func:`trajectory_figures` with ``first_status`` (Drake's status at the
        first tick) and ``ended``; or ``{"unavailable": why}``.
    """
    tree, c = data.tree, data.case
    limits = (tree.lower, tree.upper, tree.velocity_limits)
    xml = robot_urdf("panda").read_text()
    try:
        peer = DrakePeer(xml, "panda_link0", c.link, tree.joint_names, limits, c.period)
    except PeerUnavailable as exc:
        return {"unavailable": str(exc)}
    peer.set_secondary(position_only=True, centering_gain=c.gain, nominal=data.posture)
    statuses: list[str] = []

    def step(q: Array) -> Array | None:
        twist = np.zeros(6)
        twist[3:] = c.gain * (data.target - data.position(q))
        qdot = peer.tick_twist(q, twist)
        statuses.append(peer.status)
        return qdot if peer.status != "kNoSolutionFound" else None

    qdots, ended = closed_loop(data, step)
    out = trajectory_figures(data, qdots)
    out.update(first_status=statuses[0], ended=ended)
    return out


def _box(data: CaseData, q: Array) -> tuple[Array, Array]:
    """The box on ``q'`` at ``q`` that our scene keeps to in this case [rad/s], (n,) each.

    The URDF's velocity limits and the position limits reached in one period, intersected by
    the same compiled call as :meth:`Scene.solve <itasc_ros.core.Scene.solve>` (the case adds
    no other limit, so this is the scene's ``box_lo``, ``box_hi``).
    """
    tree, n = data.tree, data.home.shape[0]
    lo, hi = np.empty(n), np.empty(n)
    joint_box(q, tree.velocity_limits, tree.lower, tree.upper, data.case.period, lo, hi)
    return lo, hi


def _daqp_problem(data: CaseData, q: Array) -> tuple[Array, Array, Array, Array, Array]:
    """The data of daqp's solve at ``q``: box (lo, hi), ``J_pos`` (3, n), ``v1``, ``v2``.

    The box [rad/s], (n,) each; ``v1`` [m/s], (3,); ``v2`` [rad/s], (n,). Level 1's rows and
    velocity are our scene's (``J_pos q' = K (target - p)``), level 2's the posture's
    (``q' = K (posture - q)``).
    """
    c = data.case
    lo, hi = _box(data, q)
    jac = data.tree.jacobian(q, c.link)[:3]
    return lo, hi, jac, c.gain * (data.target - data.position(q)), c.gain * (data.posture - q)


def _daqp_run(data: CaseData, solver: DaqpHierarchy) -> tuple[list[Array], dict[str, Any]]:
    """The closed loop with ``solver``; its joint velocities and the run's figures.

    Returns:
        The joint velocities of each tick [rad/s], and :func:`trajectory_figures` with
        ``ended``, ``first_scale`` (daqp's ``s`` at the first tick, None unless scaled),
        ``first_exitflag``, ``max_box_violation_rad_s`` (largest excess of ``q'`` over the box,
        every tick) and ``max_equality_residual_m_s`` (largest ``|J_pos q' - s v1|``
        component, every tick; None unless scaled).
    """
    scales: list[float | None] = []
    flags: list[int] = []
    violation, residual = [0.0], [0.0]

    def step(q: Array) -> Array | None:
        lo, hi, jac, v1, v2 = _daqp_problem(data, q)
        qdot = solver.solve(lo, hi, jac, v1, v2 if solver.posture else None)
        scales.append(solver.scale)
        flags.append(solver.exitflag)
        if qdot is not None:
            violation[0] = max(violation[0], float(np.max(qdot - hi)), float(np.max(lo - qdot)))
            if solver.scale is not None:
                res = float(np.max(np.abs(jac @ qdot - solver.scale * v1)))
                residual[0] = max(residual[0], res)
        return qdot

    qdots, ended = closed_loop(data, step)
    out = trajectory_figures(data, qdots)
    out.update(
        ended=ended,
        first_scale=scales[0],
        first_exitflag=flags[0],
        max_box_violation_rad_s=violation[0],
        max_equality_residual_m_s=residual[0] if solver.scaled else None,
    )
    return qdots, out


def _compare(data: CaseData, runs: dict[str, Any], qdot0: dict[str, Array]) -> None:
    """Add how level 2 changes level 1 to ``runs`` (with ``alone`` and ``with_level2``).

    Adds ``speed_ratio`` (first tick, with / alone), ``task_velocity_change_m_s`` (first tick,
    ``|J_pos (q'_both - q'_alone)|``) and ``max_error_difference_mm`` (closed loop, largest
    difference of level 1's error); ``qdot0``: the two runs' first ``q'`` [rad/s], (n,) each.
    """
    both, alone = runs["with_level2"], runs["alone"]
    change = data.task_velocity(data.home, qdot0["with_level2"] - qdot0["alone"])
    diff = np.abs(np.subtract(both["level1_error_mm"], alone["level1_error_mm"]))
    runs["speed_ratio"] = both["level1_speed_m_s"] / alone["level1_speed_m_s"]
    runs["task_velocity_change_m_s"] = float(np.linalg.norm(change))
    runs["max_error_difference_mm"] = float(np.max(diff))


def time_per_solve(data: CaseData, number: int = 200, repeats: int = 10) -> dict[str, float]:
    """Time per solve at the home pose [us], ours and daqp's, blocks interleaved.

    ``ours_us``: our scene's ``solve`` with both levels (its kinematics, box and solve: one
    tick). ``daqp_<variant>_qp_us``: ``DaqpHierarchy.solve`` alone (its arrays written and
    ``daqp.solve`` called) on the box, ``J_pos`` and velocities at home, computed once.
    ``daqp_<variant>_tick_us``: the same work as our tick: the box (:func:`_box`), ``J_pos``
    and the position from our kinematic tree, then ``DaqpHierarchy.solve``. ``<variant>``:
    ``least_squares`` or ``scaled``. Medians over ``repeats`` blocks of ``number`` calls
    (:func:`~itasc_bench.harness.time_interleaved`).

    Raises:
        PeerUnavailable: If daqp is not importable.
    """
    scene, home, period = _our_scene(data, True), data.home, data.case.period
    problem = _daqp_problem(data, home)
    solvers = {
        v: DaqpHierarchy(home.shape[0], 3, v == "scaled", True)
        for v in ("least_squares", "scaled")
    }

    def qp(solver: DaqpHierarchy) -> Callable[[], Any]:
        return lambda: solver.solve(*problem)

    def tick(solver: DaqpHierarchy) -> Callable[[], Any]:
        return lambda: solver.solve(*_daqp_problem(data, home))

    funcs: dict[str, Callable[[], Any]] = {"ours_us": lambda: scene.solve(home, period)}
    for variant, solver in solvers.items():
        funcs[f"daqp_{variant}_qp_us"] = qp(solver)
        funcs[f"daqp_{variant}_tick_us"] = tick(solver)
    return {k: t * 1e6 for k, t in time_interleaved(funcs, number, repeats).items()}


def measure_daqp(data: CaseData, number: int = 200, repeats: int = 10) -> dict[str, Any]:
    """The case with daqp's hierarchical QP (box; position; posture), two forms of level 1.

    Level 0 the box (:func:`_box`), level 1 the position (least squares: ``least_squares``, or
    scaled along ``v1``: ``scaled``), level 2 the posture; each with and without level 2, as
    :func:`measure_ours` (:class:`~itasc_bench.peers.daqp_peer.DaqpHierarchy`).

    Args:
        data: The case.
        number: Calls per timed block (:func:`time_per_solve`).
        repeats: Timed blocks per function.

    Returns:
        ``version``, ``settings`` (daqp's, as passed); per variant (``least_squares``,
        ``scaled``) the figures of :func:`measure_ours`'s form: ``alone`` and ``with_level2``
        (:func:`_daqp_run`'s), ``speed_ratio``, ``task_velocity_change_m_s``,
        ``max_error_difference_mm``; ``time_us`` (:func:`time_per_solve`) and
        ``time_ratio_qp`` / ``time_ratio_tick`` (daqp's scaled variant over ours: its QP
        alone, its whole tick); or ``{"unavailable": why}``.
    """
    n = data.home.shape[0]
    try:
        DaqpHierarchy(n, 3, False, False)
    except PeerUnavailable as exc:
        return {"unavailable": str(exc)}
    out: dict[str, Any] = {"version": daqp_version()}
    for variant in ("least_squares", "scaled"):
        runs: dict[str, Any] = {}
        qdot0: dict[str, Array] = {}
        for name, posture in (("alone", False), ("with_level2", True)):
            solver = DaqpHierarchy(n, 3, variant == "scaled", posture)
            out["settings"] = solver.settings
            qdots, runs[name] = _daqp_run(data, solver)
            qdot0[name] = qdots[0] if qdots else np.full(n, np.nan)
        _compare(data, runs, qdot0)
        out[variant] = runs
    times = time_per_solve(data, number, repeats)
    out["time_us"] = times
    out["time_ratio_qp"] = times["daqp_scaled_qp_us"] / times["ours_us"]
    out["time_ratio_tick"] = times["daqp_scaled_tick_us"] / times["ours_us"]
    return out


def bench_hierarchy(peers: bool = True, case: HierarchyCase | None = None) -> dict[str, Any]:
    """The case for ours and, if ``peers``, PlaCo, Drake, daqp (``"not measured"`` otherwise).

    Args:
        peers: Also run PlaCo, Drake and daqp (each reported ``unavailable`` if it cannot run).
        case: The case; default :class:`HierarchyCase`'s.

    Returns:
        ``case`` (its parameters), ``ours`` (:func:`measure_ours`), ``placo``
        (:func:`measure_placo`), ``drake`` (:func:`measure_drake`) and ``daqp``
        (:func:`measure_daqp`).
    """
    data = CaseData.panda(case or HierarchyCase())
    c = data.case
    out: dict[str, Any] = {
        "case": {
            "link": c.link,
            "target_distance_m": float(np.linalg.norm(c.offset)),
            "asked_speed_m_s": c.gain * float(np.linalg.norm(c.offset)),
            "posture_offset_rad": c.posture_offset,
            "gain": c.gain,
            "period_s": c.period,
            "duration_s": c.duration,
        },
        "ours": measure_ours(data),
    }
    skipped = {"unavailable": "not measured (peers off)"}
    out["placo"] = measure_placo(data) if peers else skipped
    out["drake"] = measure_drake(data) if peers else skipped
    out["daqp"] = measure_daqp(data) if peers else skipped
    return out


def _row(run: dict[str, Any], extra: str) -> dict[str, Any]:
    """A table row: level-1 speed at the first tick, errors at the end, how it ended."""
    if "unavailable" in run:
        return {"unavailable": run["unavailable"]}
    cells = {
        "v1_first_m_s": run["level1_speed_m_s"],
        "e1_end_mm": run["final_level1_error_mm"],
        "posture_end_rad": run["final_posture_error_rad"],
        extra: run.get(extra),
    }
    row = {k: "-" if v is None else v for k, v in cells.items()}
    row["ended"] = run["ended"] or "ran to the end"
    return row


def print_hierarchy(r: dict[str, Any]) -> None:
    """The table of :func:`bench_hierarchy`'s result."""
    ours, placo = r["ours"], r["placo"]
    rows: dict[str, Any] = {
        "ours_alone": _row(ours["alone"], "first_velocity_scale"),
        "ours_both": _row(ours["with_level2"], "first_velocity_scale"),
        "speed_ratio": ours["speed_ratio"],
        "task_velocity_change_m_s": ours["task_velocity_change_m_s"],
        "max_error_difference_mm": ours["max_error_difference_mm"],
    }
    for mode in ("hard", "scaled"):
        rows[f"placo_{mode}"] = _row(placo.get(mode, placo), "first_scale")
    rows["drake"] = _row(r["drake"], "first_status")
    daqp = r["daqp"]
    for variant, short in (("least_squares", "ls"), ("scaled", "scaled")):
        run = daqp.get(variant, daqp)
        rows[f"daqp_{short}_alone"] = _row(run.get("alone", run), "first_scale")
        rows[f"daqp_{short}_both"] = _row(run.get("with_level2", run), "first_scale")
        if "unavailable" not in run:
            rows[f"daqp_{short}_priority"] = {
                k: run[k]
                for k in ("speed_ratio", "task_velocity_change_m_s", "max_error_difference_mm")
            }
    if "time_us" in daqp:
        rows["time_per_solve_us"] = {**daqp["time_us"], "ratio_qp": daqp["time_ratio_qp"]}
        rows["time_per_solve_us"]["ratio_tick"] = daqp["time_ratio_tick"]
    c = r["case"]
    title = (
        f"strict priority under saturation (Panda, {c['target_distance_m']} m at K = "
        f"{c['gain']:g}: {c['asked_speed_m_s']:g} m/s asked; posture +{c['posture_offset_rad']}"
        f" rad below; {c['period_s'] * 1e3:g} ms, {c['duration_s']} s)"
    )
    print_table(title, rows)


def hierarchy_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench hierarchy``; the figures for the JSON line (``hierarchy``).

    Args:
        args: The parsed command line (unused: the case has fixed parameters).
    """
    r = bench_hierarchy()
    print_hierarchy(r)
    return {"hierarchy": r}


__all__ = [
    "CaseData",
    "HierarchyCase",
    "bench_hierarchy",
    "closed_loop",
    "hierarchy_command",
    "measure_daqp",
    "measure_drake",
    "measure_ours",
    "measure_placo",
    "print_hierarchy",
    "time_per_solve",
    "trajectory_figures",
]
