"""``itasc-bench``: speed and tracking figures, side by side with the peers in the same run.

Subcommands (``--json`` prints one JSON object on the last line):

* ``kinematics``: FK + tip Jacobian of the Panda (7 DOF) and of Talos (all joints): itasc_ros,
  Orocos KDL (PyKDL) and Pinocchio; key ``fk_jac_ratio_vs_pykdl`` (Panda, ours / KDL)
  (:mod:`itasc_bench.kinematics`).
* ``tick``: one full control tick (FK, Jacobian, 6-D CopyPose, damping, limits) of the Panda
  beside KDL's ``ChainFkSolverPos`` + ``ChainIkSolverVel_wdls`` for the same step; key
  ``tick_ratio_vs_pykdl``; with a new target pose set every tick (checked, as KDL's tick takes
  one), ``tick_with_target_ratio_vs_pykdl``; the node's tick and KDL's on a moving arm (the
  target circling, the joints following each command: every Jacobian new),
  ``node_tick_moving_ratio_vs_pykdl``, and the same ticks made once per period of a 250 Hz
  node (a sleep before each: what a node pays, its caches no longer warm),
  ``node_tick_paced_ratio_vs_pykdl``; beside PlaCo and Drake's differential IK, which
  put the same joint and velocity limits inside their solve (``tick_ratio_vs_placo``,
  ``tick_ratio_vs_drake``). Also a Talos tick with four constraints, and the Panda with a pose
  and a posture at one priority level vs two (``priorities``) (:mod:`itasc_bench.tick`).
* ``tracking``: a target on a circle (0.1 m, 0.25 m/s) with and without feed-forward
  (:mod:`itasc_bench.tracking`).
* ``paths``: long circles, lines and spirals (20 s each, 6-D and position-only) the ideal
  velocity IK follows: the largest tracking error and the time the hand's task was reported
  short, with the shipped config (motion limits and posture), without its posture, beside
  the ideal (no motion limits) and PlaCo where installed; keys ``paths_max_error_m``,
  ``paths_max_error_vs_ideal``, ``paths_time_not_followed_s`` (:mod:`itasc_bench.paths`).
* ``lag``: the circle through velocity servos that lag 0-30 ms, without and with
  ``actuator_lag``, beside pink through the same servos; key ``lag_20ms_compensated_ratio``
  (:mod:`itasc_bench.lag`).
* ``outliers``: one bad target pose (1e6, 1e12, 1e149 m away, refused; 1 and 3 m, jumps) in a
  50 Hz stream on a circle: the effector's largest deviation from the run without it and the
  time to come back within 1 mm (the controller closed on a perfect velocity robot)
  (:mod:`itasc_bench.outliers`).
* ``collision``: the collision constraint's distance queries per tick on the Panda (the pairs
  its SRDF leaves in) beside ``pinocchio.computeDistances`` on the same pairs; key
  ``queries_ratio_vs_pinocchio``; and the controller's tick with self-collision on
  (:mod:`itasc_bench.collision`).
* ``loop`` / ``soak``: the node at 1 kHz with the simulated robot over DDS
  (:mod:`itasc_bench.loop`).
* ``flood``: the node's loop beside ``--burners`` busy processes under input floods (jog
  twists at 5 kHz, IK requests at 2 kHz, target poses at 5 kHz), each beside the same run with a
  flood nobody reads; keys ``<flood>_missed_ticks_vs_unread``, ``<flood>_command_gap_max_ms``
  (:mod:`itasc_bench.loop.flood_series`).
* ``stops``: ``--runs`` runs of each way to stop the node while the robot moves (SIGINT, SIGTERM,
  ``~/enable false``): in how many the last command received was not zero; keys
  ``<kind>_zero_lost`` (:mod:`itasc_bench.loop.stops`).
* ``ik``: position IK on the TRAC-IK protocol (random reachable targets, mid-range or random
  seed, 5 ms, every pose error component <= 1e-5) beside TRAC-IK (pytracik) and KDL's
  ``ChainIkSolverPos_NR_JL``, interleaved per sample, on the Panda, the UR5 and the xArm7
  (:mod:`itasc_bench.ik`), and on the Panda among obstacles, every solution checked
  collision-free (``panda_obstacles``, :mod:`itasc_bench.ik_obstacles`); ``--samples``
  targets per row; the last line of ``--json`` is
  ``{"results": [{"solver", "robot", "seed", "samples", "success_rate", "mean_ms"}, ...]}``.
* ``hierarchy``: strict priority under saturation on the Panda (the hand's position 0.3 m away
  at gain 20 above a posture): level 1's task velocity with and without level 2, ours beside
  PlaCo (``hard`` / ``scaled``) and Drake's differential IK; key ``hierarchy``
  (:mod:`itasc_bench.hierarchy`).
* ``unreachable``: at a target 2 m away, from ``--samples`` (at most 100) random starts per
  robot (Panda, UR5; their configs' limits, one tick of delay): the most sign changes per
  second of a joint's command after 1 s; key ``unreachable``
  (:mod:`itasc_bench.unreachable`).
* ``all``: kinematics, tick, tracking and hierarchy.

Timing: each implementation runs ``--number`` calls per block, blocks interleaved between the
implementations (so machine load hits all of them alike), ``--repeats`` blocks; the figure is
the median per-call time over blocks. Ratios are ours / peer (< 1: we are faster).
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

from itasc_ros.cli import CliParser, positive_float, positive_int, run_cli

from .arguments import control_rate, flood_kinds, ik_robot_list, loop_robots
from .ik_rows import IK_ROWS
from .loop.errors import BenchError

PROG = "itasc-bench"

#: The subcommands of ``itasc-bench``.
SUBCOMMANDS = (
    "kinematics",
    "tick",
    "tracking",
    "paths",
    "lag",
    "outliers",
    "collision",
    "hierarchy",
    "unreachable",
    "ik",
    "loop",
    "soak",
    "flood",
    "stops",
    "all",
)
#: Subcommand -> its run (``module:function``, imported once the arguments are checked): it
#: prints its tables and returns its figures for the JSON line (``ik`` prints a JSON line of its
#: own and returns the exit status; ``all`` runs :data:`ALL`).
COMMANDS: dict[str, str] = {
    "kinematics": ".kinematics:kinematics_command",
    "tick": ".tick:tick_command",
    "tracking": ".tracking:tracking_command",
    "paths": ".paths:paths_command",
    "lag": ".lag:lag_command",
    "outliers": ".outliers:outliers_command",
    "collision": ".collision:collision_command",
    "hierarchy": ".hierarchy:hierarchy_command",
    "unreachable": ".unreachable:unreachable_command",
    "ik": ".ik:ik_command",
    "loop": ".loop.command:loop_command",
    "soak": ".loop.command:loop_command",
    "flood": ".loop.flood_series:flood_command",
    "stops": ".loop.stops:stops_command",
}
#: What ``all`` runs, in order.
ALL = ("kinematics", "tick", "tracking", "hierarchy")


def _parser() -> CliParser:
    ap = CliParser(prog=PROG, description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("what", choices=SUBCOMMANDS)
    ap.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    ap.add_argument("--number", type=positive_int, default=2000, help="calls per timing block")
    ap.add_argument(
        "--repeats", type=positive_int, default=15, help="timing blocks (median taken)"
    )
    ap.add_argument(
        "--samples",
        type=positive_int,
        default=1000,
        help="ik: targets per robot and seed kind; unreachable: starts per robot (<= 100)",
    )
    ap.add_argument(
        "--robots",
        type=ik_robot_list,
        default=",".join(IK_ROWS),
        help=f"ik: comma-separated robots ({', '.join(IK_ROWS)})",
    )
    ap.add_argument(
        "--rate", type=control_rate, default=1000.0, help="loop/soak: control rate [Hz]"
    )
    ap.add_argument(
        "--duration",
        type=positive_float,
        default=None,
        help="loop/soak duration [s] (default 60 / 600)",
    )
    ap.add_argument("--robot", default="panda", choices=loop_robots(), help="loop/soak: robot")
    ap.add_argument(
        "--trigger",
        default="timer",
        choices=["timer", "joint_states"],
        help="loop/soak: the node's control_trigger",
    )
    ap.add_argument(
        "--realtime",
        action="store_true",
        help="loop/soak: SCHED_FIFO priorities, a CPU of its own for the node",
    )
    _add_loop_flags(ap)
    return ap


def _add_loop_flags(ap: CliParser) -> None:
    ap.add_argument(
        "--keep-warm",
        action="store_true",
        help="loop/soak: a SCHED_IDLE busy loop on every CPU (a host with idle=poll)",
    )
    ap.add_argument(
        "--runs",
        type=positive_int,
        default=1,
        help="loop: runs (interleaved with the floor's); medians reported; flood: rounds; "
        "stops: runs of each stop",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="loop: then the same run with itasc_bench.floor_node (no kinematics) as peer",
    )
    ap.add_argument(
        "--core-floor",
        action="store_true",
        help="loop: --floor, and also the floor plus the core's scene solve, and plus its whole "
        "tick (itasc_bench.loop.core_floor) as peers: the node's CPU in layers",
    )
    ap.add_argument(
        "--journal",
        action="store_true",
        help="loop: then the same run with a subscriber of the node's ~/journal (its cost)",
    )
    ap.add_argument(
        "--floods",
        type=flood_kinds,
        default="jog,ik,target",
        help="flood: comma-separated floods (jog, ik, target)",
    )
    ap.add_argument("--burners", type=int, default=2, help="flood: busy processes beside the node")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``itasc-bench``; a mistake is one line on stderr and exit status 2.

    A loop or soak run that cannot finish (a process died, no command) is one line and exit
    status 1.
    """
    try:
        return run_cli(PROG, lambda: _main(argv))
    except BenchError as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1


def command(what: str) -> Any:
    """The run of subcommand ``what`` (:data:`COMMANDS`), its module imported now."""
    module, function = COMMANDS[what].split(":")
    return getattr(importlib.import_module(module, __package__), function)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.what == "ik":
        return int(command("ik")(args))
    result: dict[str, Any] = {"command": "itasc-bench " + " ".join(argv or sys.argv[1:])}
    for what in ALL if args.what == "all" else (args.what,):
        result.update(command(what)(args))
    if args.json:
        print(json.dumps(result, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
