"""Every compiled kernel compiled once, ahead of the processes that use them.

Run as ``python -m itasc_ros.tools.warm_cache``.

The core's kernels are compiled by numba on their first call in a process that finds no cache
entry for them, and cached on disk (see :mod:`itasc_ros.core.compiled_cache`: one cache per
version of the core's sources). After a fresh install or an edit of the core, every process
would compile them on its own until one has written the cache: a node's start-up, a test's
or a benchmark's first call: the compilation of the control tick, paid by every process
started meanwhile, beside the others.

This tool builds a controller for each parameters file of ``config/`` on its robot (a tick's
kernels: the scene's rows of every constraint type shipped, the solve, the motion limits, the
journal, the aim and the odometry), and runs the IK paths (a pose on a chain, constraint sets,
the node's request worker) and the core's public solves: two processes at once (the control
tick's kernels here, the IK's and the solves' in a child, which ends well before). ``make
test`` runs it first; on a robot, run it once after installing or updating, before the first
launch. A parameters file whose robot is not installed (the example-robot-data wheel) is
reported and skipped: nothing fails for it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from itasc_ros.core import KinematicTree

PARTS = ("control", "ik")
"""What :func:`main` warms: the control tick's kernels, the IK's."""


def _tree_for(path: Path, flat: dict[str, Any]) -> KinematicTree:
    """The kinematic tree a parameters file's controller is built on (its robot's URDF).

    A robot's relative ``urdf_file`` is taken from the directory above the file's (the
    repository's layout: ``config/`` beside ``urdf/``).
    """
    from itasc_ros.core import KinematicTree
    from itasc_ros.core.kinematics.uri_resolution import resolve_file
    from itasc_ros.params import robots_urdf
    from itasc_ros.tools.resources import example_robot_data_file, robot_urdf

    robots = flat.get("robots") or []
    if robots:
        root = path.resolve().parents[1]
        for r in robots:
            key = f"robots.{r}.urdf_file"
            if key in flat and not Path(str(flat[key])).is_absolute():
                flat[key] = str(root / str(flat[key]))
        xml, why = robots_urdf(flat, list(robots))
        if xml is None:
            raise FileNotFoundError(why)
        return KinematicTree.from_urdf(xml)
    for key, value in flat.items():
        if key.endswith(".urdf_file") and isinstance(value, str):  # a collision's geometry
            return KinematicTree.from_urdf_file(resolve_file(value, what="URDF"))
    if path.stem.startswith("talos"):
        return KinematicTree.from_urdf_file(
            example_robot_data_file("talos_data/robots/talos_full_v2.urdf")
        )
    robot = "ur5" if path.stem.startswith("ur5") else "panda"
    return KinematicTree.from_urdf_file(robot_urdf(robot))


def warm_controller(tree: KinematicTree, config: Any) -> None:
    """Build a controller of ``config`` on ``tree`` and run three ticks: its kernels compiled.

    With a journal (its records' kernels too), a joint state at the neutral pose, the base's
    odometry when there is a world frame, and each pose constraint's target where its link is.
    A kernel already in the cache is loaded instead.
    """
    from itasc_ros.core import Controller
    from itasc_ros.core.control.journal import Journal
    from itasc_ros.core.kinematics.spatial import matrix_to_quat

    ctrl = Controller(tree, config)
    ctrl.attach_journal(Journal())  # its records' kernels too
    q = tree.neutral()
    ctrl.set_joint_state(tree.joint_names, q, 1.0, 1.0)
    if config.world_frame:  # a mobile base: at the world's origin, at rest
        odom = [0.0] * 13
        odom[6] = 1.0
        ctrl.set_odometry(config.world_frame, "", odom, 1.0, 1.0)
    for name in ctrl.pose_constraints:
        link = ctrl.constraint(name).effector_link
        if link is None:
            continue
        pose = tree.forward_kinematics(q, link)
        ctrl.set_target(name, "", pose[:3, 3].copy(), matrix_to_quat(pose), 1.0, 1.0)
    for k in range(3):
        ctrl.step(1.0 + k * ctrl.period)


def warm_node(tree: KinematicTree, config: Any) -> float:
    """What a node of ``config`` on ``tree`` compiles at its start, compiled now.

    Its controller's tick (:func:`warm_controller`), its IK request worker's and its exit
    deadline's kernels: a node started next loads them from the cache.

    Returns:
        The time it took [s] (seconds when every kernel was in the cache).
    """
    from itasc_ros.core.ik.worker import warm_up_ik

    t0 = time.perf_counter()
    warm_controller(tree, config)
    warm_up_ik()
    warm_exit()
    return time.perf_counter() - t0


def warm_control(config_dir: Path) -> list[str]:
    """Build a controller for each parameters file of ``config_dir`` and run one tick.

    Returns:
        One line per file: warmed, or why not.
    """
    from itasc_ros.params import config_from_parameters, read_params_file

    lines = []
    for path in sorted(config_dir.glob("*.yaml")):
        t0 = time.perf_counter()
        try:
            flat = read_params_file(path)
            config = config_from_parameters(flat)
            warm_controller(_tree_for(path, flat), config)
            lines.append(f"{path.name}: {time.perf_counter() - t0:.1f} s")
        except Exception as exc:  # a robot not installed here: said, not fatal
            lines.append(f"{path.name}: skipped ({type(exc).__name__}: {exc})")
    return lines


def warm_ik() -> list[str]:
    """Run the IK paths once: a chain's pose, constraint sets, the node's request worker."""
    from itasc_ros.core import CopyPose, KinematicTree, solve_ik
    from itasc_ros.core.ik.worker import warm_up_ik
    from itasc_ros.tools.resources import robot_urdf

    t0 = time.perf_counter()
    warm_up_ik()
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    q = tree.neutral()
    hand = tree.forward_kinematics(q + 0.1, "panda_hand")
    solve_ik(tree, hand, "panda_hand", seed=q, timeout=0.5)
    pose = CopyPose("ee", "panda_hand")
    pose.set_target(hand)
    solve_ik(tree, constraints=[pose], seed=q, timeout=0.5)  # one pose: the chain's loop
    # constraint sets: full poses of two links (the compiled attempts of a whole-body IK's
    # feet and hands), then the position of one and the orientation of the other (the general
    # set's steps)
    seven = tree.forward_kinematics(q + 0.1, "panda_link7")
    for hand_rotation, seven_position in (("xyz", "xyz"), ("", "")):
        hand_c = CopyPose("hand", "panda_hand", rotation_axes=hand_rotation)
        hand_c.set_target(hand)
        seven_c = CopyPose("seven", "panda_link7", position_axes=seven_position)
        seven_c.set_target(seven)
        solve_ik(tree, constraints=[hand_c, seven_c], seed=q, timeout=0.5)
    return [f"ik: {time.perf_counter() - t0:.1f} s"]


def warm_solves() -> list[str]:
    """Run the core's public solves once, on float64 C arrays (a 6x7 Jacobian).

    ``solve_limited``, ``solve_prioritized`` and ``damped_pinv_solve``.
    The control tick does not call them (its scene solves through its own kernels); a program
    that uses them does, and would compile them on its first call.
    """
    import math

    import numpy as np

    from itasc_ros.core.solve import solver as S

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    m, n = 6, 7
    a, b = rng.normal(size=(m, n)), rng.normal(size=m)
    limits = [-np.ones(n), np.ones(n), np.ones(n)]
    args = [a, b, np.ones(m), np.ones(n), np.zeros(n), *limits, 0.01, 0, 0.1, 0.02, math.pi]
    args += [np.zeros(n), np.zeros(n, dtype=np.bool_), np.zeros((m, n)), np.zeros(m)]
    args += [np.zeros(n), np.zeros(n), np.zeros(S.INFO_SIZE)]
    S.solve_limited(*args)
    levels = np.array([0, 3, m], dtype=np.int64)  # two levels (one compile serves any number)
    work = [levels, len(levels) - 1, np.zeros((n, n)), np.zeros((m, n)), np.zeros(m)]
    work += [np.zeros(n), np.full(n, -np.inf), np.full(n, np.inf)]  # the motion box
    work += [np.zeros(m, dtype=np.bool_), np.zeros(n), np.zeros(m, dtype=np.bool_)]
    S.solve_prioritized(*args, *work)
    S.damped_pinv_solve(a, b)
    return [f"solves: {time.perf_counter() - t0:.1f} s"]


def warm_exit() -> list[str]:
    """The node's exit deadline's compiled thread (:mod:`itasc_ros.ros.exit_deadline`)."""
    t0 = time.perf_counter()
    import itasc_ros.ros.exit_deadline  # noqa: F401  (compiled, or loaded, at its import)

    return [f"exit: {time.perf_counter() - t0:.1f} s"]


def main(argv: list[str] | None = None) -> int:
    """Warm the kernels' cache and print what was warmed; 0 (a skipped file is no error)."""
    parser = argparse.ArgumentParser(
        prog="python -m itasc_ros.tools.warm_cache", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--part", choices=(*PARTS, "all"), default="all")
    parser.add_argument(
        "--config-dir", type=Path, default=Path(__file__).resolve().parents[2] / "config"
    )
    args = parser.parse_args(argv)
    import itasc_ros.core  # noqa: F401  (chooses the versioned cache before numba is used)

    t0 = time.perf_counter()
    child = None
    if args.part == "all":  # the IK's kernels in a second process, at once
        cmd = [sys.executable, "-m", "itasc_ros.tools.warm_cache", "--part", "ik"]
        child = subprocess.Popen(cmd)
    lines = []
    if args.part in ("all", "control"):
        config_dir = args.config_dir
        if not config_dir.is_dir():
            from itasc_ros.tools.resources import share_dir

            config_dir = share_dir() / "config"
        lines += warm_control(config_dir)
    if args.part == "ik":  # beside the control tick's, which take longer: the solves too
        lines += warm_ik() + warm_solves() + warm_exit()
    if child is not None:
        child.wait()
    for line in lines:
        print(f"warm_cache: {line}")
    if args.part == "all":
        print(f"warm_cache: done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
