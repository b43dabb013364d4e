"""``python -m itasc_bench.loop``: one loop (or soak) run from the command line.

Usage::

    python -m itasc_bench.loop --robot panda --rate 1000 --duration 20
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from itasc_bench.arguments import control_rate, loop_robots
from itasc_ros.cli import CliParser, positive_float

from .errors import BenchError
from .run import run_loop_bench

#: The description of ``--help``.
DESCRIPTION = (
    "The ``loop`` and ``soak`` benchmarks: the node in closed loop with the simulated robot."
)


def _parser() -> CliParser:
    ap = CliParser(prog="itasc_bench_loop", description=DESCRIPTION)
    ap.add_argument("--robot", default="panda", choices=loop_robots(), help="bundled robot")
    ap.add_argument("--rate", type=control_rate, default=1000.0, help="node control rate [Hz]")
    ap.add_argument("--sim-rate", type=positive_float, default=None, help="sim robot rate [Hz]")
    ap.add_argument(
        "--trigger", default="timer", choices=["timer", "joint_states"], help="control_trigger"
    )
    ap.add_argument(
        "--realtime", action="store_true", help="SCHED_FIFO priorities and a CPU for the node"
    )
    ap.add_argument(
        "--keep-warm", action="store_true", help="a SCHED_IDLE busy loop on every CPU (idle=poll)"
    )
    ap.add_argument("--duration", type=positive_float, default=60.0, help="measured time [s]")
    ap.add_argument("--soak", action="store_true", help="long-run variant (memory growth)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON only")
    ap.add_argument("--node-module", default="itasc_ros.ros.node", help="node to run (-m)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point (``python -m itasc_bench.loop``); returns the exit status.

    Args:
        argv: The arguments (default ``sys.argv[1:]``).

    Returns:
        0, 3 when a command was out of limits, 1 when the run could not finish (one line on
        stderr), 2 for a usage error.
    """
    args = _parser().parse_args(argv)
    try:
        r = run_loop_bench(
            robot=args.robot,
            rate=args.rate,
            duration=args.duration,
            soak=args.soak,
            sim_rate=args.sim_rate,
            trigger=args.trigger,
            realtime=args.realtime,
            keep_warm=args.keep_warm,
            node_module=args.node_module,
        )
    except (BenchError, FileNotFoundError) as exc:
        print(f"itasc_bench_loop: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(r))
    else:
        print(f"loop: node at {args.rate:g} Hz, {args.robot}, {r['duration_s']:.1f} s")
        for k, v in r.items():
            print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    return 0 if r["commands_out_of_limits"] == 0 else 3


__all__ = ["DESCRIPTION", "main"]
