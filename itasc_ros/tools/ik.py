"""``itasc-ik``: joint positions that put a link on a pose (position IK), from the shell.

Usage::

    itasc-ik panda --xyz 0.4 0.1 0.5 --quat 1 0 0 0
    itasc-ik ur5 --link tool0 --xyz 0.3 0.2 0.4 --rpy 3.1416 0 0 --json
    itasc-ik my_robot.urdf --link tool0 --xyz 0.3 0.2 0.4          # position only
    itasc-ik panda.urdf --link panda_hand --xyz 0.5 0.2 0.3 --quat 1 0 0 0 \
        --keep config/panda_obstacles.yaml                        # every pair at its margin

The robot is a bundled name (``panda``, ``ur5``) or a URDF file. The pose is in the root frame
(``--frame`` names another link of the robot; it is then taken at the seed configuration).
Without ``--quat`` or ``--rpy`` only the position is constrained. ``--seed`` gives the start
configuration (default mid-range). ``--keep`` takes a node parameters file: the solution keeps
its one-sided constraints (a ``collision`` constraint: every pair at its margin; its ``joints``
are the ones solved). Exit status: 0 solved, 1 not solved in the budget, 2 bad
input (unknown link, unreachable target, ...). ``--json`` prints one JSON object on the last
line. No ROS is needed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..cli import USAGE_EXIT, CliParser, finite_float, positive_float, run_cli, with_hint
from ..core.errors import ItascError
from ..core.ik.options import PREFER

if TYPE_CHECKING:  # the solver is imported once the arguments are checked (run)
    from ..core import IkResult, KinematicTree
    from ..core.constraints import Constraint

PROG = "itasc-ik"
#: Default time budget [s]: 5 ms, as ``solve_ik`` and TRAC-IK's benchmark protocol.
DEFAULT_TIMEOUT = 0.005


def _parser() -> argparse.ArgumentParser:
    ap = CliParser(
        prog=PROG,
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Exit status: 0 solved, 1 not solved in the budget, 2 bad input.",
    )
    ap.add_argument(
        "robot", help="bundled robot name (panda, ur5) or a URDF file (ends in .urdf or has a /)"
    )
    ap.add_argument("--link", default="", help="link to place (default: the tip link)")
    ap.add_argument(
        "--xyz", type=finite_float, nargs=3, required=True, metavar=("X", "Y", "Z"), help="[m]"
    )
    rot = ap.add_mutually_exclusive_group()
    rot.add_argument(
        "--quat", type=finite_float, nargs=4, metavar=("QX", "QY", "QZ", "QW"), help="(x, y, z, w)"
    )
    rot.add_argument(
        "--rpy", type=finite_float, nargs=3, metavar=("R", "P", "Y"), help="roll pitch yaw [rad]"
    )
    ap.add_argument("--frame", default="", help="frame of the pose (default: the root link)")
    ap.add_argument("--seed", type=finite_float, nargs="+", help="start configuration [rad or m]")
    ap.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT,
        help=f"time budget [s] ({DEFAULT_TIMEOUT:g} = 5 ms)",
    )
    ap.add_argument(
        "--tolerance", type=positive_float, default=1e-5, help="per component [m and rad] (1e-5)"
    )
    ap.add_argument("--random-seed", type=int, default=0, help="seed of the restarts (0)")
    ap.add_argument("--prefer", choices=PREFER, default="speed", help="first or nearest")
    ap.add_argument(
        "--keep",
        metavar="PARAMS_FILE",
        help="keep the one-sided constraints (collision, ...) of a node parameters file",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object on the last line")
    return ap


def _load(robot: str) -> KinematicTree:
    from ..core import KinematicTree
    from .resources import robot_urdf

    return KinematicTree.from_urdf_file(robot_urdf(robot))  # RobotNotFoundError names them


def run(args: argparse.Namespace) -> tuple[KinematicTree, str, IkResult, bool]:
    """Solve the request of the parsed command line.

    Returns:
        (tree, link, result, position_only).

    Raises:
        ItascError: a bad robot, link, pose or seed (named).
    """
    from ..core import solve_ik
    from ..core.kinematics import spatial
    from ..params import load_config

    tree = _load(args.robot)
    keep: list[Constraint] = []
    if args.keep:
        cfg = load_config(args.keep)
        if cfg.joints:
            tree = tree.select_joints(cfg.joints)
        keep = [c.build() for c in cfg.constraints if c.kind.one_sided]
    link = args.link or tree.tip_link()
    seed = tree.neutral() if args.seed is None else np.array(args.seed, dtype=float)
    if seed.shape != (tree.n_joints,):
        raise ItascError(
            f"--seed needs {tree.n_joints} values for joints {tree.joint_names}, got {seed.size}"
        )
    if not np.all(np.isfinite(seed)):
        raise ItascError(f"--seed has NaN or Inf values: {seed.tolist()}")
    target = np.eye(4)
    target[:3, 3] = args.xyz
    if args.quat is not None:
        x, y, z, w = args.quat  # plain floats: an error message shows them as typed
        target[:3, :3] = spatial.quat_to_matrix((x, y, z, w))
    elif args.rpy is not None:
        target[:3, :3] = spatial.rpy_to_matrix(*args.rpy)
    if not np.all(np.isfinite(target)):
        raise ItascError(f"the pose has NaN or Inf values: {target.tolist()}")
    if args.frame and args.frame != tree.root_link:
        target = tree.forward_kinematics(tree.clamp(seed), args.frame) @ target
    position_only = args.quat is None and args.rpy is None
    r = solve_ik(
        tree,
        target,
        link,
        seed=seed,
        timeout=args.timeout,
        tolerance=args.tolerance,
        rotation_axes="" if position_only else "xyz",
        random_seed=args.random_seed,
        prefer=args.prefer,
        keep=keep,
    )
    return tree, link, r, position_only


def _print_result(
    tree: KinematicTree, link: str, r: IkResult, position_only: bool, as_json: bool
) -> None:
    """The solution as a table, then (``as_json``) one JSON object of plain numbers."""
    print(f"{tree.name}: {link} -> {'solved' if r.success else 'NOT solved'}")
    for name, v in zip(r.joint_names, r.q, strict=True):
        print(f"  {name:<28} {float(v): .6f}")
    rot = "" if position_only else f", rotation error {float(r.rotation_error):.3g} rad"
    print(
        f"  position error {float(r.position_error):.3g} m{rot}, {r.iterations} iterations, "
        f"{r.restarts} restarts, {1e3 * float(r.time):.3f} ms ({r.message})"
    )
    if as_json:
        out = {
            "robot": tree.name,
            "link": link,
            "success": bool(r.success),
            "joint_names": list(r.joint_names),
            "q": [float(v) for v in r.q],
            "position_error_m": float(r.position_error),
            "rotation_error_rad": None if position_only else float(r.rotation_error),
            "iterations": int(r.iterations),
            "restarts": int(r.restarts),
            "time_ms": 1e3 * float(r.time),
            "message": str(r.message),
        }
        print(json.dumps(out))


def _solve(args: argparse.Namespace) -> int:
    try:
        tree, link, r, position_only = run(args)
    except ItascError as exc:
        if args.json:
            print(json.dumps({"success": False, "error": with_hint(exc)}))
        raise
    _print_result(tree, link, r, position_only, args.json)
    return 0 if r.success else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (2: a mistake, named on one line)."""
    args = _parser().parse_args(argv)
    try:
        return run_cli(PROG, lambda: _solve(args))
    except SystemExit as exc:  # run_cli printed the mistake on one line
        return exc.code if isinstance(exc.code, int) else USAGE_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
