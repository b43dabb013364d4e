"""``itasc-bench collision``: the collision constraint's distance queries and the tick with it.

The Panda of example-robot-data with the pairs its SRDF leaves in, beside
``pinocchio.computeDistances`` on the same pairs
(:func:`~itasc_bench.peers.pinocchio_collision.pinocchio_reference`, also imported from
here by the tests); key ``queries_ratio_vs_pinocchio``; and the controller's tick with
self-collision on (:func:`bench_collision`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics.home_poses import HOME_POSES
from itasc_ros.core.kinematics.tree import KinematicTree

from .harness import time_interleaved
from .peers.pinocchio_collision import PinocchioReference, pinocchio_reference
from .report import print_table

Array = NDArray[np.float64]


PANDA_URDF = "package://example-robot-data/robots/panda_description/urdf/panda.urdf"
PANDA_SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"
ARM = [f"panda_joint{i}" for i in range(1, 8)]


def _scenario_path(ctrl: Any, seconds: float) -> list[Array]:
    """The Panda's joints at each tick of ``seconds`` of the self_collision scenario.

    The last entry is the arm folded against its base (pairs close).
    """
    from itasc_ros.core.kinematics import spatial
    from itasc_ros.tools.scenarios.self_collision import HOME, TARGET

    q = HOME.copy()
    path = [q]
    quat = spatial.matrix_to_quat(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, :3])
    dt = 1.0 / ctrl.config.control_rate
    for k in range(round(seconds / dt)):
        ctrl.set_joint_state(ctrl.joint_names, q, k * dt)
        if k == 0:
            ctrl.set_target("ee", "", TARGET, quat, 0.0)
        q = q + ctrl.step(k * dt).qdot * dt
        path.append(q)
    return path


def _along_path(
    tree: KinematicTree, coll: Collision, ref: PinocchioReference, path: list[Array]
) -> tuple[dict[str, Callable[[], Any]], float]:
    """Per-tick functions over the whole scenario path, and the mean pairs queried per tick.

    Each call runs the path from its start (the broad phase's memory is of the previous tick,
    as in the loop): the constraint as configured, and Pinocchio on every pair.
    """
    qps = [ref.q_of(q) for q in path]
    queried = 0
    for q in path:
        tree.compute(q)
        coll.update_distances(tree)
        queried += int(coll.pairs_queried.sum())

    def ours() -> None:
        for q in path:
            tree.compute(q)
            coll.update_distances(tree)

    def peer() -> None:
        for qp in qps:
            ref.distances(qp)

    return {"path_itasc_ros": ours, "path_pinocchio": peer}, queried / len(path)


def bench_collision(number: int, repeats: int) -> dict[str, Any]:
    """Distance queries per tick: the constraint vs ``pinocchio.computeDistances``; the tick.

    The Panda of example-robot-data, the pairs its SRDF leaves in (meshes as convex hulls), at
    two configurations: ``home`` and ``near`` (after 3 s of the self_collision scenario, the
    arm folded against its base). ``queries``: FK + every pair's distance and nearest points
    (the constraint with the broad phase off, so that both compute every pair), beside
    Pinocchio's FK + geometry placements + the same queries in C++. ``queries_culled``: the
    constraint as configured, called again at the same configuration (the robot at rest: the
    broad phase queries the pairs whose bounding spheres or last distance are within
    margin + activation_distance). ``path``: the constraint as configured, per tick over the
    3 s of the scenario (moving), beside Pinocchio on every pair of the same configurations.
    ``rows``: the constraint's whole update (queries and
    rows of A). ``tick``: the controller's tick (joint state, target, step) of
    config/panda_self_collision.yaml, and the same configuration without the collision
    constraint.
    """
    import copy

    from itasc_ros.core import Controller, Scene
    from itasc_ros.core.kinematics.collision_geometry import resolve_file
    from itasc_ros.params import load_config
    from itasc_ros.tools.resources import share_file

    urdf = resolve_file(PANDA_URDF, (), "Panda URDF")
    full = KinematicTree.from_urdf_file(urdf)
    tree = full.select_joints(ARM)
    every = Collision("c", srdf_file=PANDA_SRDF, activation_distance=10.0)
    culled = Collision("c", srdf_file=PANDA_SRDF)
    Scene(tree, [every])
    scene = Scene(tree, [culled])
    ref = pinocchio_reference(str(urdf), tree, every)
    cfg = load_config(share_file("config", "panda_self_collision.yaml"))
    plain = copy.deepcopy(cfg)
    plain.constraints = [c for c in plain.constraints if c.type != "collision"]
    path = _scenario_path(Controller(full, cfg), 3.0)
    near = path[-1]
    out: dict[str, Any] = {"pairs": every.n_pairs, "robot": "panda", "urdf": str(urdf)}
    for label, q in (("home", np.array(HOME_POSES["panda"])), ("near", near)):
        qp = ref.q_of(q)
        tree.compute(q)
        every.update_distances(tree)
        err = float(np.abs(every.pair_distances - ref.distances(qp)).max())

        def ours(q: Array = q) -> None:
            tree.compute(q)
            every.update_distances(tree)

        def ours_culled(q: Array = q) -> None:
            tree.compute(q)
            culled.update_distances(tree)

        def peer(qp: Array = qp) -> Array:
            return ref.distances(qp)

        def rows(q: Array = q) -> None:
            scene.update(q)

        funcs: dict[str, Callable[[], Any]] = {
            "itasc_ros": ours,
            "pinocchio": peer,
            "itasc_ros_culled": ours_culled,
            "itasc_ros_rows": rows,
        }
        funcs.update(_ticks(Controller, full, cfg, plain, q))
        t = time_interleaved(funcs, number, repeats)
        tree.compute(q)
        culled.update_distances(tree)
        row: dict[str, Any] = {f"{k}_us": v * 1e6 for k, v in t.items()}
        row["queries_ratio_vs_pinocchio"] = t["itasc_ros"] / t["pinocchio"]
        row["max_distance_difference_m"] = err
        row["min_distance_m"] = float(every.pair_distances.min())
        row["pairs_queried_culled"] = int(culled.pairs_queried.sum())
        row["tick_collision_overhead_us"] = (t["tick_collision"] - t["tick_plain"]) * 1e6
        row["tick_fits_1khz"] = bool(t["tick_collision"] < 1e-3)
        out[label] = row
    path_funcs, per_tick = _along_path(tree, culled, ref, path)
    t = time_interleaved(path_funcs, max(1, number // 100), repeats)
    out["path"] = {
        "ticks": len(path),
        "itasc_ros_us_per_tick": t["path_itasc_ros"] / len(path) * 1e6,
        "pinocchio_us_per_tick": t["path_pinocchio"] / len(path) * 1e6,
        "ratio_vs_pinocchio": t["path_itasc_ros"] / t["path_pinocchio"],
        "pairs_queried_per_tick": per_tick,
    }
    out["queries_ratio_vs_pinocchio"] = out["near"]["queries_ratio_vs_pinocchio"]
    out["tick_collision_near_us"] = out["near"]["tick_collision_us"]
    return out


def _ticks(ctrl_cls: Any, full: KinematicTree, cfg: Any, plain: Any, q: Array) -> dict[str, Any]:
    """The node's tick in the core with and without the collision constraint, at ``q``."""
    from itasc_ros.core.kinematics import spatial
    from itasc_ros.tools.scenarios.self_collision import TARGET

    funcs = {}
    for name, c in (("tick_collision", cfg), ("tick_plain", plain)):
        ctrl = ctrl_cls(full, c)
        quat = spatial.matrix_to_quat(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, :3])
        clock = [1000.0]

        def tick(ctrl: Any = ctrl, clock: list[float] = clock, quat: Array = quat) -> Any:
            clock[0] += 0.001
            now = clock[0]
            ctrl.set_joint_state(ARM, q, now, now)
            ctrl.set_target("ee", "", TARGET, quat, now, now)
            return ctrl.step(now)

        funcs[name] = tick
    return funcs


def collision_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench collision`` (``max(10, args.number // 10)`` calls a block).

    Args:
        args: The parsed command line (``number``, ``repeats``).

    Returns:
        The figures for the JSON line.
    """
    r = bench_collision(max(10, args.number // 10), args.repeats)
    for label in ("home", "near"):
        print_table(
            f"collision, Panda {label}, {r['pairs']} pairs [us per call, median]", r[label]
        )
    print_table("collision along the self_collision scenario [us per tick, median]", r["path"])
    return {
        "collision": r,
        "queries_ratio_vs_pinocchio": r["queries_ratio_vs_pinocchio"],
        "path_ratio_vs_pinocchio": r["path"]["ratio_vs_pinocchio"],
        "tick_collision_near_us": r["tick_collision_near_us"],
    }


__all__ = [
    "PinocchioReference",
    "bench_collision",
    "collision_command",
    "pinocchio_reference",
]
