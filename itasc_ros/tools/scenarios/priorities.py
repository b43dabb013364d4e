"""Strict priorities on the Panda: a posture in the null space of the hand's pose.

Two closed-loop runs of the real :class:`~itasc_ros.core.control.Controller` on an ideal
robot, from ``config/panda_priorities.yaml``: the pose task alone, and the pose task at
priority 1 with a posture of all seven joints at priority 2; the hand's target steps through
waypoints (followed along straight lines). At every tick of the second run the scene is also
solved without the posture at the same state: the pose rows' rate ``A_1 q'`` must be the
same (the posture acts only in the pose task's null space), while the posture error falls.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from ...core import KinematicTree
from ...core.kinematics import home_of
from ..resources import robot_urdf
from ._common import IdealRobot, json_ready, scenario_config, set_pose_target, without

NAME = "priorities"
DESCRIPTION = (
    "Panda: hand pose at priority 1, posture of all joints at priority 2 "
    "(config/panda_priorities.yaml); the pose tracking is the pose-only run's while the "
    "posture converges in the null space."
)
PARAMS = "panda_priorities.yaml"
POSE, POSTURE = "ee", "posture"
HOME = home_of("panda")
WAYPOINTS = ((0.08, 0.10, 0.0), (0.0, -0.12, -0.08), (-0.06, 0.04, 0.08))
"""Offsets of the hand's target from its start position [m, root frame]."""


def run(out_dir: Path, quick: bool = False) -> dict[str, Any]:
    """Run the scenario, write ``priorities.png`` into ``out_dir``; returns the metrics.

    The full run also repeats the two closed-loop runs at 1 kHz (``..._1khz``): their pose
    errors differ less, as the difference comes from the Euler step ``q += q' dt`` (its
    second-order terms depend on the null-space motion) and shrinks with the period.
    """
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    both_cfg = scenario_config(PARAMS)
    hold = 1.0 if quick else 1.6  # [s] per waypoint
    waypoints = WAYPOINTS[:2] if quick else WAYPOINTS
    r = _runs(tree, both_cfg, hold, waypoints, check=True)
    err, posture = r["err"], r["posture"]
    metrics = {
        "pose_error_max_diff": float(np.max(np.abs(err[0] - err[1]))),
        "pose_rate_max_diff": float(r["rate_diff"].max()),
        "pose_error_max": float(err[1].max()),
        "pose_error_end": float(err[0, -1]),
        "posture_error_start": float(posture[0, 0]),
        "posture_error_end": float(posture[0, -1]),
        "posture_error_end_without_posture_task": float(posture[1, -1]),
        "velocity_scaled_ticks": r["scaled"],
        "locked_ticks": r["locked"],
        "ticks": len(r["t"]),
        "control_period_s": 1.0 / both_cfg.control_rate,
        "params_file": f"config/{PARAMS}",
    }
    metrics.update(continuous_isolation(tree, both_cfg))
    if not quick:
        fast = copy.deepcopy(both_cfg)
        fast.control_rate = 1000.0
        r1k = _runs(tree, fast, hold, waypoints, check=False)
        metrics["pose_error_max_diff_1khz"] = float(np.max(np.abs(r1k["err"][0] - r1k["err"][1])))
    _plot(out_dir / f"{NAME}.png", r["t"], err, posture, r["rate_diff"])
    return json_ready(metrics)


def continuous_isolation(
    tree: KinematicTree, both_cfg: Any, offset: Any = (0.01, -0.008, 0.006), duration: float = 0.6
) -> dict[str, float]:
    """The pose error with and without the posture, in continuous time.

    The scene's ``q'(q)`` of a pose step (small enough for no velocity scaling) is integrated
    by an adaptive 8th-order Runge-Kutta (DOP853, tolerances 1e-12) with and without the
    posture task. The posture's motion lies in the pose task's null space, so the two pose
    errors are the same trajectory: what is left of their difference is the integrator's.

    Returns:
        ``pose_error_max_diff_continuous`` [m+rad], ``pose_error_start_continuous``,
        ``pose_error_end_continuous``, ``posture_travel_continuous`` [rad] (how far the
        posture moved the joints away from the pose-only run), ``velocity_scaled_or_locked``.
    """
    from scipy.integrate import solve_ivp

    from ...core import Controller

    errors, finals, touched = [], [], 0
    for cfg in (both_cfg, without(both_cfg, [POSTURE])):
        scene = Controller(tree, cfg).scene
        pose = scene.get(POSE)
        tip = pose.effector_link or "panda_hand"
        goal = tree.forward_kinematics(HOME, tip)
        goal[:3, 3] += offset
        pose.set_target(goal)
        dt = 1.0 / cfg.control_rate

        def qdot(_t: float, q: np.ndarray, scene: Any = scene, dt: float = dt) -> np.ndarray:
            nonlocal touched
            res = scene.solve(q, dt)
            touched += bool(res.velocity_scaled or res.locked.any())
            return res.qdot.copy()

        times = np.linspace(0.0, duration, 61)
        sol = solve_ivp(qdot, (0.0, duration), HOME, "DOP853", times, rtol=1e-12, atol=1e-12)
        errors.append([scene.solve(q, dt).error(POSE) for q in sol.y.T])
        finals.append(sol.y[:, -1])
    e = np.asarray(errors)
    return {
        "pose_error_max_diff_continuous": float(np.max(np.abs(e[0] - e[1]))),
        "pose_error_start_continuous": float(e[1, 0]),
        "pose_error_end_continuous": float(e[1, -1]),
        "posture_travel_continuous": float(np.linalg.norm(finals[0] - finals[1])),
        "velocity_scaled_or_locked": float(touched),
    }


def _runs(
    tree: KinematicTree, both_cfg: Any, hold: float, waypoints: Any, check: bool
) -> dict[str, Any]:
    """The runs with and without the posture; ``check``: the isolation at every tick too."""
    from ...core import Controller

    both = Controller(tree, both_cfg)
    single = Controller(tree, without(both_cfg, [POSTURE]))
    names = both.joint_names
    robots = [IdealRobot(c, names, HOME) for c in (both, single)]
    tip = both.constraint(POSE).effector_link or "panda_hand"
    start = tree.forward_kinematics(HOME, tip)
    n_ticks = round(hold * len(waypoints) / both.period)
    per_wp = n_ticks // len(waypoints)
    t = np.zeros(n_ticks)
    err = np.zeros((2, n_ticks))  # pose error [m+rad]: with posture, alone
    posture = np.zeros((2, n_ticks))  # posture error [rad]: with posture, alone
    rate_diff = np.zeros(n_ticks)  # |A_1 (q'_both - q'_alone)| at the same state
    scaled = locked = 0
    target = np.array(both_cfg.constraint(POSTURE).values)
    for k in range(n_ticks):
        for rb in robots:
            rb.sense()
        if k % per_wp == 0 and k // per_wp < len(waypoints):
            goal = start.copy()
            goal[:3, 3] += waypoints[k // per_wp]
            for rb in robots:
                set_pose_target(rb.controller, POSE, goal, rb.t)
        t[k] = robots[0].t
        for i, rb in enumerate(robots):
            start_memory = both.scene.solve_memory.copy()  # where the tick's solve starts
            out = rb.tick()
            res = out.result
            if res is None or out.status != "active":
                raise RuntimeError(f"the controller stopped: {out.status}: {out.reason}")
            err[i, k] = res.error(POSE)
            posture[i, k] = float(np.linalg.norm(target - out.q))
            if i == 0:
                scaled += res.velocity_scaled
                locked += bool(res.locked.any())
                if check:
                    rate_diff[k] = _isolation(both, out.q, out.qdot, start_memory)
    return {
        "t": t,
        "err": err,
        "posture": posture,
        "rate_diff": rate_diff,
        "scaled": int(scaled),
        "locked": int(locked),
    }


def _isolation(ctrl: Any, q: np.ndarray, qdot: np.ndarray, start_memory: np.ndarray) -> float:
    """The largest |A_1 (q'_both - q'_alone)| at ``q``: the scene solved without the posture.

    ``q'_both`` is re-solved from the tick's start (``start_memory``: where its SVD started,
    :attr:`~itasc_ros.core.solve.Scene.solve_memory`) and checked equal to the tick's command;
    the posture is then switched off for one solve and back on, and the scene's memory left as
    the tick left it (the run goes on as if it had not been probed).
    """
    scene = ctrl.scene
    dt = ctrl.period
    after = scene.solve_memory.copy()
    scene.solve_memory[:] = start_memory
    try:
        return _probed(scene, q, dt, qdot)
    finally:
        scene.solve_memory[:] = after


def _probed(scene: Any, q: np.ndarray, dt: float, qdot: np.ndarray) -> float:
    """:func:`_isolation`'s solves, the scene's memory at the tick's start."""
    q_both = scene.solve(q, dt).qdot.copy()
    if not np.array_equal(q_both, qdot):
        raise RuntimeError("the re-solve differs from the tick's command")
    rows = scene.rows(POSE)
    a1 = scene.matrices(q)["A"][rows]
    post = scene.get(POSTURE)
    post.enabled = False
    try:
        q_alone = scene.solve(q, dt).qdot.copy()
    finally:
        post.enabled = True
    return float(np.max(np.abs(a1 @ (q_both - q_alone))))


def _plot(
    path: Path, t: np.ndarray, err: np.ndarray, posture: np.ndarray, rate_diff: np.ndarray
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    ax[0].plot(t, err[1], label="pose task alone")
    ax[0].plot(t, err[0], "--", label="pose (priority 1) + posture (priority 2)")
    ax[0].set_ylabel("pose error [m, rad]")
    ax[0].legend()
    ax[1].semilogy(t, np.maximum(rate_diff, 1e-18), label="|A1 (q'_both - q'_alone)| per tick")
    ax[1].semilogy(
        t, np.maximum(np.abs(err[0] - err[1]), 1e-18), label="|pose error difference| (two runs)"
    )
    ax[1].set_ylabel("difference")
    ax[1].legend()
    ax[2].plot(t, posture[0], label="with the posture task (priority 2)")
    ax[2].plot(t, posture[1], "--", label="pose task alone")
    ax[2].set_ylabel("posture error [rad]")
    ax[2].set_xlabel("t [s]")
    ax[2].legend()
    fig.suptitle("Strict priorities: Panda, pose at priority 1, posture at priority 2")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
