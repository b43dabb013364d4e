"""``itasc-bench hierarchy``: strict priority under saturation, ours beside PlaCo and Drake.

The case (:class:`HierarchyCase`): the Panda at its home pose, a 2 ms period, the URDF's
velocity limits binding; level 1 is the hand's position toward a target 0.3 m away (gain 20:
6 m/s asked, far beyond the limits), level 2 a posture of all 7 joints 0.5 rad from home
(gain 20), below it. What the figures say: how much of level 1 survives when level 2 is added
(the level-1 task velocity ``J_pos q'`` with and without level 2, at the first tick and over a
0.5 s closed loop on an ideal robot ``q += q' dt``). Strict priority means no change at all.

Every solver's joint velocities go through the same figures (:func:`trajectory_figures`), so
the measurement holds for any solver that maps ``q`` to ``q'``: ours (:func:`measure_ours`,
two ``priority`` levels of a :class:`~itasc_ros.core.Scene`), PlaCo (the position task
``hard`` or ``scaled``, the posture ``soft``, in its worker) and Drake's differential IK (the
position-only velocity flag, joint centering toward the posture).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core import CopyPose, JointValue, KinematicTree, Scene
from ..core.kinematics.home_poses import HOME_POSES
from ..tools.resources import robot_urdf
from .peers import DrakePeer, PeerUnavailable, PlacoPeer
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
    both, alone = runs["with_level2"], runs["alone"]
    change = data.task_velocity(data.home, qdot0["with_level2"] - qdot0["alone"])
    diff = np.abs(np.subtract(both["level1_error_mm"], alone["level1_error_mm"]))
    runs["speed_ratio"] = both["level1_speed_m_s"] / alone["level1_speed_m_s"]
    runs["task_velocity_change_m_s"] = float(np.linalg.norm(change))
    runs["max_error_difference_mm"] = float(np.max(diff))
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


def bench_hierarchy(peers: bool = True, case: HierarchyCase | None = None) -> dict[str, Any]:
    """The case for ours and, if ``peers``, PlaCo and Drake (``"not measured"`` otherwise).

    Args:
        peers: Also run PlaCo and Drake (each reported ``unavailable`` if it cannot run).
        case: The case; default :class:`HierarchyCase`'s.

    Returns:
        ``case`` (its parameters), ``ours`` (:func:`measure_ours`), ``placo``
        (:func:`measure_placo`) and ``drake`` (:func:`measure_drake`).
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
    "measure_drake",
    "measure_ours",
    "measure_placo",
    "print_hierarchy",
    "trajectory_figures",
]
