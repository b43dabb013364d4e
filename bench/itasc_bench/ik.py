"""``itasc-bench ik``: position IK on the TRAC-IK benchmark protocol, beside its peers.

The protocol of TRAC-IK's own benchmark: for each sample, a joint vector drawn uniformly within
the limits gives a target pose of the tip (forward kinematics); each solver starts from the
mid-range configuration (``seed='mid'``) or from another random configuration within the
limits (``seed='random'``) with a 5 ms budget; a sample is a success when the returned
configuration is within the limits and every component of the pose error (position [m],
rotation vector [rad], KDL's ``diff``) is at most 1e-5. Every returned configuration is checked
here with the same forward kinematics, whatever the solver says. The solvers take turns on each
sample (interleaved), so that machine load hits them alike.

Solvers: ``itasc_ros`` (:func:`itasc_ros.core.solve_ik`), ``trac_ik`` (``pytracik``, Speed mode)
and ``kdl_nr_jl`` (PyKDL ``ChainIkSolverPos_NR_JL`` in a timed loop); a peer that is not
installed is left out with the reason.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import KinematicTree, solve_ik
from itasc_ros.tools.resources import robot_urdf

from .harness import erd_urdf
from .ik_obstacles import obstacle_rows
from .ik_protocol import (
    EPS,
    SEEDS,
    TIMEOUT,
    Solver,
    chain_peers,
    pose_error_max,
    result_row,
    solved,
)
from .ik_rows import IK_ROBOTS, IK_ROWS, OBSTACLES, WHOLE_BODY
from .ik_whole_body import whole_body_rows
from .peers import urdf_chain

Array = NDArray[np.float64]


def _urdf_path(ref: str) -> Path | None:
    if ref.startswith("erd:"):
        return erd_urdf(ref[4:])
    return robot_urdf(ref)


def bench_ik(
    samples: int = 1000,
    robots: Sequence[str] = IK_ROWS,
    seeds: Sequence[str] = SEEDS,
    rng_seed: int = 0,
) -> dict[str, Any]:
    """Run the protocol; one row per (solver, robot, seed).

    Args:
        samples: targets per robot and seed kind.
        robots: names of :data:`IK_ROWS`.
        seeds: 'mid' and/or 'random'.
        rng_seed: seed of the targets' and seeds' generator.

    Returns:
        ``{"results": [{"solver", "robot", "seed", "samples", "success_rate", "mean_ms",
        "median_ms", "max_ms"}, ...], "notes": [...]}``.
    """
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for robot in robots:
        if robot == OBSTACLES:
            rows += obstacle_rows(samples, seeds, rng_seed, notes)
            continue
        if robot == WHOLE_BODY:
            rows += whole_body_rows(samples, rng_seed, notes)
            continue
        ref, root, tip = IK_ROBOTS[robot]
        path = _urdf_path(ref)
        if path is None:
            notes.append(f"{robot}: URDF not installed (example-robot-data)")
            continue
        rows += _robot_rows(robot, path.read_text(), root, tip, samples, seeds, rng_seed, notes)
    return {"results": rows, "notes": notes}


def _robot_rows(
    robot: str,
    xml: str,
    root: str,
    tip: str,
    samples: int,
    seeds: Sequence[str],
    rng_seed: int,
    notes: list[str],
) -> list[dict[str, Any]]:
    """One robot's rows: every solver that runs here, warmed up, on each kind of seed."""
    full = KinematicTree.from_urdf(xml)
    names = [j.name for j in urdf_chain(xml, root, tip) if j.movable]
    tree = full.select_joints(names)
    solvers = [
        Solver("itasc_ros", functools.partial(_ours, tree, tip)),
        *chain_peers(xml, root, tip, names, notes),
    ]
    for s in solvers:  # warm-up: compilation, caches
        s.solve(tree.neutral(), tree.forward_kinematics(tree.neutral() + 0.1, tip))
    rows: list[dict[str, Any]] = []
    for kind in seeds:
        times, ok = _run_protocol(tree, tip, solvers, kind, samples, rng_seed)
        rows += [
            result_row(s.name, robot, kind, samples, ok[s.name], times[s.name]) for s in solvers
        ]
    return rows


def _run_protocol(
    tree: KinematicTree,
    tip: str,
    solvers: list[Solver],
    kind: str,
    samples: int,
    rng_seed: int,
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """The solvers in turn on ``samples`` targets: (solver -> times [s], solver -> successes)."""
    lo, hi = tree.lower, tree.upper
    rng = np.random.default_rng(rng_seed)
    times: dict[str, list[float]] = {s.name: [] for s in solvers}
    ok: dict[str, int] = {s.name: 0 for s in solvers}
    for i in range(samples):
        q_true = rng.uniform(lo, hi)
        target = tree.forward_kinematics(q_true, tip)
        seed = tree.neutral() if kind == "mid" else rng.uniform(lo, hi)
        order = solvers[i % len(solvers) :] + solvers[: i % len(solvers)]
        for s in order:
            t0 = time.perf_counter()
            q = s.solve(seed.copy(), target)
            times[s.name].append(time.perf_counter() - t0)
            if solved(tree, tip, q, target, lo, hi):
                ok[s.name] += 1
    return times, ok


def _ours(tree: KinematicTree, tip: str, seed: Array, target: Array) -> Array | None:
    r = solve_ik(tree, target, tip, seed=seed, timeout=TIMEOUT, tolerance=EPS)
    return r.q if r.success else None


def print_ik_table(result: dict[str, Any]) -> None:
    """The rows as a table: success % / mean ms, solvers side by side, ratios to TRAC-IK."""
    rows = result["results"]
    print("\n== position IK, TRAC-IK protocol (5 ms, 1e-5): success % / mean ms")
    keys = sorted({(r["robot"], r["seed"]) for r in rows}, key=lambda k: (k[0], k[1]))
    solvers = list(dict.fromkeys(r["solver"] for r in rows))
    print(f"  {'robot':<7} {'seed':<7}" + "".join(f"{s:>20}" for s in solvers) + "  mean/trac_ik")
    for robot, kind in keys:
        cell = {r["solver"]: r for r in rows if r["robot"] == robot and r["seed"] == kind}
        line = f"  {robot:<7} {kind:<7}"
        for s in solvers:
            r = cell.get(s)
            line += (
                f"{100 * r['success_rate']:>12.1f} / {r['mean_ms']:5.3f}" if r else f"{'-':>20}"
            )
        if "itasc_ros" in cell and "trac_ik" in cell:
            line += f"  {cell['itasc_ros']['mean_ms'] / cell['trac_ik']['mean_ms']:.3f}"
        print(line)
    for n in result.get("notes", []):
        print(f"  note: {n}")


IK_ROW_KEYS = ("solver", "robot", "seed", "samples", "success_rate", "mean_ms")
"""The keys of each row of the ``ik`` subcommand's JSON line."""


def ik_command(args: argparse.Namespace) -> int:
    """Run and print ``itasc-bench ik``; with ``--json``, the rows' :data:`IK_ROW_KEYS` last.

    Args:
        args: The parsed command line (``samples``, ``robots``, ``json``).

    Returns:
        The exit status (0).
    """
    r = bench_ik(args.samples, args.robots)
    print_ik_table(r)
    if args.json:
        rows = [{k: row[k] for k in IK_ROW_KEYS} for row in r["results"]]
        print(json.dumps({"results": rows}, default=float))
    return 0


__all__ = [
    "IK_ROW_KEYS",
    "bench_ik",
    "ik_command",
    "pose_error_max",
    "print_ik_table",
]
