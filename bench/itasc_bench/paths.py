"""``itasc-bench paths``: long paths under the motion limits, beside an ideal velocity IK.

Circles, back-and-forth lines and breathing spirals of fixed random centre, size, speed and
plane (a seeded generator: the same paths every run), 6-D (the hand's orientation held) and
position-only, each run for ``DURATION`` seconds on the Panda at 250 Hz from one start, the
joint positions integrated from the commands (an ideal robot). Three controllers on each path:

* ``ideal``: the shipped config's tasks without acceleration and jerk limits (a velocity IK
  with the URDF's position and velocity limits only);
* ``shipped``: ``config/panda.yaml`` as it ships (Franka's limits, the posture that resolves
  redundancy);
* ``no_posture``: the same without the posture (a user's config without one).

Only the paths the ideal follows (error below ``FOLLOWABLE`` throughout, every joint at least
``MARGIN`` from its limits, never damped: its smallest singular value at least
``damping_epsilon``) count: the others are counted as skipped. (Near a singularity the limited
controllers are slower to come out than the ideal: the motion limits' demand limit is measured
from what the damped command gives the task; such paths are reported while they last.)
PlaCo, with the same position and velocity limits inside its QP (no acceleration limits: it
has none), runs the same paths where it is installed (``make limit-peers``).

Per controller: the largest tracking error over the paths, the largest of each path's median,
the time the hand's task was reported short (``Following``) and the smallest joint margin.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.resources import robot_urdf, share_file

from .peers.contract import PeerUnavailable

Array = NDArray[np.float64]
Path3 = Callable[[float], tuple[Array, Array]]

RATE = 250.0  # [Hz]
DURATION = 20.0  # [s] each path
RAMP = 0.5  # [s] the path's smooth start
SETTLE = 1.0  # [s] errors counted from here on
PATHS = 24
SEED = 53
FOLLOWABLE = 0.01  # [m]
MARGIN = 0.2  # [rad]
Q0 = np.array([0.0, -0.4, 0.0, -2.1, 0.0, 1.9, 0.785])
VARIANTS = ("ideal", "shipped", "no_posture")


def _path(kind: str, centre: Array, size: float, speed: float, frame: Array) -> Path3:
    """Position and velocity (3,) at time t [s] of a path in the plane of ``frame`` (3, 3)."""
    ex, ey = frame[:, 0], frame[:, 1]

    def at(t: float) -> tuple[Array, Array]:
        u = min(t / RAMP, 1.0)
        s = speed * RAMP * (u**3 - 0.5 * u**4) if t < RAMP else speed * (t - 0.5 * RAMP)
        sp = speed * (3 * u * u - 2 * u**3) if t < RAMP else speed
        if kind == "line":
            return centre + size * math.sin(s / size) * ex, sp * math.cos(s / size) * ex
        th = s / size
        if kind == "circle":
            r, dr = size, 0.0
        else:  # spiral: the radius breathes between 0.2 and 1.0 of size
            r, dr = size * (0.6 + 0.4 * math.sin(0.3 * t)), size * 0.12 * math.cos(0.3 * t)
        radial = math.cos(th) * ex + math.sin(th) * ey
        tangent = -math.sin(th) * ex + math.cos(th) * ey
        return centre + r * radial, dr * radial + sp * (r / size) * tangent

    return at


def paths(tree: KinematicTree, count: int = PATHS) -> list[dict[str, Any]]:
    """The benchmark's paths (seeded), each starting on the hand.

    Each: ``kind``, ``size`` [m], ``speed`` [m/s], ``six_d`` and ``at`` (its position and
    velocity (3,) at a time [s]).
    """
    rng = np.random.default_rng(SEED)
    hand = tree.forward_kinematics(Q0, "panda_hand")
    out = []
    for i in range(count):
        kind = ("circle", "line", "spiral")[i % 3]
        size, speed = float(rng.uniform(0.05, 0.4)), float(rng.uniform(0.05, 0.3))
        normal = rng.normal(size=3)
        normal /= np.linalg.norm(normal)
        ex = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
        ex /= np.linalg.norm(ex)
        frame = np.column_stack([ex, np.cross(normal, ex), normal])
        p0 = _path(kind, np.zeros(3), size, speed, frame)(0.0)[0]
        at = _path(kind, hand[:3, 3] - p0, size, speed, frame)
        out.append({"kind": kind, "size": size, "speed": speed, "six_d": bool(i % 2), "at": at})
    return out


def _controller(tree: KinematicTree, variant: str, six_d: bool) -> Controller:
    params = read_params_file(share_file("config", "panda.yaml"))
    params["control_rate"] = RATE
    if variant == "ideal":
        params = {k: v for k, v in params.items() if not k.startswith("joint_limits.")}
    if variant != "shipped":
        params["constraint_names"] = ["ee"]
    if not six_d:
        params["constraints.ee.rotation_axes"] = ""
    return Controller(tree, config_from_parameters(params))


def _figures(err: Array, margin: float, short: float, sigma: float) -> dict[str, float]:
    settled = err[int(SETTLE * RATE) :]
    return {
        "max_error_m": float(settled.max()),
        "median_error_m": float(np.median(settled)),
        "min_margin_rad": margin,
        "time_not_followed_s": short,
        "min_sigma": sigma,
    }


def run_ours(tree: KinematicTree, variant: str, path: dict[str, Any]) -> dict[str, float]:
    """One path with one of our controllers (see the module)."""
    ctrl = _controller(tree, variant, path["six_d"])
    quat = spatial.matrix_to_quat(tree.forward_kinematics(Q0, "panda_hand"))
    q, dt, now = Q0.copy(), 1.0 / RATE, 100.0
    err = np.zeros(int(DURATION * RATE))
    margin = sigma = math.inf
    for k in range(err.shape[0]):
        p, v = path["at"](k * dt)
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        ctrl.set_target("ee", "", p, quat, now)
        ctrl.set_target_twist("ee", "", np.r_[v, 0.0, 0.0, 0.0], now)
        out = ctrl.step(now)
        if out.result is not None:
            sigma = min(sigma, out.result.sigma_min)
        err[k] = float(np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - p))
        margin = min(margin, float(np.minimum(q - tree.lower, tree.upper - q).min()))
        q = np.clip(q + out.qdot * dt, tree.lower, tree.upper)
        now += dt
    names = ctrl.following.names
    short = float(ctrl.following.short_time[names.index("ee")]) if "ee" in names else 0.0
    return _figures(err, margin, short, sigma)


def run_placo(tree: KinematicTree, path: dict[str, Any], peer: Any) -> dict[str, float]:
    """One path with PlaCo's frame task (6-D paths only: its task holds the orientation)."""
    hand = tree.forward_kinematics(Q0, "panda_hand")
    q, dt = Q0.copy(), 1.0 / RATE
    err = np.zeros(int(DURATION * RATE))
    margin = math.inf
    target = hand.copy()
    for k in range(err.shape[0]):
        target[:3, 3] = path["at"](k * dt)[0]
        peer.set_target(target)
        qdot = peer.tick(q)
        err[k] = float(
            np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - target[:3, 3])
        )
        margin = min(margin, float(np.minimum(q - tree.lower, tree.upper - q).min()))
        q = np.clip(q + qdot * dt, tree.lower, tree.upper)
    return _figures(err, margin, math.nan, math.nan)


def _placo(tree: KinematicTree) -> tuple[Any, str]:
    """PlaCo's peer with the URDF's limits, or None and why not."""
    try:
        from .peers.placo_peer import PlacoPeer

        limits = (tree.lower, tree.upper, tree.velocity_limits)
        peer = PlacoPeer(robot_urdf("panda"), "panda_hand", tree.joint_names, limits, 1 / RATE)
    except (PeerUnavailable, ImportError) as exc:
        return None, str(exc)
    return peer, ""


def bench_paths(with_peers: bool = True, count: int = PATHS) -> dict[str, Any]:
    """The first ``count`` paths with every controller (see the module); the summary."""
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    rows: list[dict[str, Any]] = []
    skipped = 0
    peer, why = _placo(tree) if with_peers else (None, "not asked")
    try:
        for path in paths(tree, count):
            ideal = run_ours(tree, "ideal", path)
            eps = _controller(tree, "ideal", path["six_d"]).config.damping_epsilon
            if (
                ideal["max_error_m"] >= FOLLOWABLE
                or ideal["min_margin_rad"] < MARGIN
                or ideal["min_sigma"] < eps
            ):
                skipped += 1
                continue
            row: dict[str, Any] = {k: path[k] for k in ("kind", "size", "speed", "six_d")}
            row["ideal"] = ideal
            for variant in VARIANTS[1:]:
                row[variant] = run_ours(tree, variant, path)
            if peer is not None and path["six_d"]:
                row["placo"] = run_placo(tree, path, peer)
            rows.append(row)
    finally:
        if peer is not None:
            peer.close()
    summary: dict[str, Any] = {}
    for name in (*VARIANTS, "placo"):
        figs = [r[name] for r in rows if name in r]
        if figs:
            summary[name] = {
                "paths": len(figs),
                "max_error_m": max(f["max_error_m"] for f in figs),
                "worst_median_error_m": max(f["median_error_m"] for f in figs),
                "time_not_followed_s": float(sum(f["time_not_followed_s"] for f in figs)),
                "min_margin_rad": min(f["min_margin_rad"] for f in figs),
            }
    return {
        "paths": rows,
        "skipped_not_followable": skipped,
        "summary": summary,
        "placo_unavailable": why,
        "duration_s": DURATION,
        "rate_hz": RATE,
    }


def print_paths(r: dict[str, Any]) -> None:
    """The tables of :func:`bench_paths`."""
    print(
        f"\n== paths ({len(r['paths'])} paths of {r['duration_s']:g} s at {r['rate_hz']:g} Hz "
        f"the ideal follows undamped; {r['skipped_not_followable']} skipped: not followable)"
    )
    print(f"  {'controller':<11} {'paths':>5} {'max err [mm]':>13} {'worst median [mm]':>18} "
          f"{'not followed [s]':>17} {'min margin [rad]':>17}")  # fmt: skip
    for name, s in r["summary"].items():
        short = "-" if name == "placo" else f"{s['time_not_followed_s']:.2f}"  # no such report
        print(
            f"  {name:<11} {s['paths']:>5} {s['max_error_m'] * 1e3:>13.3f} "
            f"{s['worst_median_error_m'] * 1e3:>18.3f} {short:>17} {s['min_margin_rad']:>17.3f}"
        )
    if r["placo_unavailable"]:
        print(f"  placo: not run ({r['placo_unavailable']})")


def paths_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench paths``; the figures for the JSON line."""
    r = bench_paths()
    print_paths(r)
    s = r["summary"]
    return {
        "paths": r,
        "paths_max_error_m": s["shipped"]["max_error_m"],
        "paths_max_error_vs_ideal": s["shipped"]["max_error_m"] / s["ideal"]["max_error_m"],
        "paths_time_not_followed_s": s["shipped"]["time_not_followed_s"],
    }


__all__ = ["bench_paths", "paths", "paths_command", "print_paths", "run_ours", "run_placo"]
