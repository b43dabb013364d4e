"""``itasc-replay``'s flow: check the arguments, replay (offline or ``--online``), compare, report.

Exit status: 0, 1 when ``--compare`` finds a difference, 2 for a usage error (one line).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from itasc_ros.cli import usage_status
from itasc_ros.core.control.playback import Playback
from itasc_ros.tools.replay.arguments import (
    check_bag,
    check_outputs,
    load_with_overrides,
    parse_override,
    parser,
)
from itasc_ros.tools.replay.compare import compare_commands
from itasc_ros.tools.replay.journal_playback import play_journal, setup_joints
from itasc_ros.tools.replay.metrics import replay_metrics
from itasc_ros.tools.replay.node_setup import NodeSetup, load_setup
from itasc_ros.tools.replay.offline import replay_offline
from itasc_ros.tools.replay.online import replay_online
from itasc_ros.tools.replay.plots import write_replay_plots
from itasc_ros.tools.replay.report import print_json, print_replay
from itasc_ros.tools.replay.tracking import (
    TrackingComparison,
    TrackingPair,
    stamp_offset,
    tracking_pair,
)
from itasc_ros.tools.replay.what_if import what_if


def _online(args: argparse.Namespace, bag: Path, setup: NodeSetup) -> tuple[Path, dict[str, int]]:
    """``--online``: republish the bag into the running node; (the new bag, topic -> count)."""
    out_bag = (
        Path(args.online_out)
        if args.online_out
        else (Path(args.out) / "online_bag" if args.out else bag.with_name(bag.name + "_online"))
    )
    counts = replay_online(bag, out_bag, setup, args.storage, args.speed, args.wait)
    print(f"itasc-replay: recorded {out_bag}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    return out_bag, counts


def _tracking(
    args: argparse.Namespace,
    bag: Path,
    setup: NodeSetup,
    playback: Playback | None,
    original: tuple[Path, NodeSetup],
) -> TrackingComparison:
    """The tracking error of the recorded run (the original bag) beside the replayed one."""
    orig_bag, orig_setup = original
    recorded_pb = play_journal(orig_bag, orig_setup) if args.online else playback
    empty = {"rms_mm": math.nan, "max_mm": math.nan, "ticks": 0}
    pair = TrackingPair(empty, empty)
    if recorded_pb is not None and playback is not None:
        offset = stamp_offset(orig_bag, bag, setup) if args.online else 0.0
        pair = tracking_pair(recorded_pb, playback, offset, not args.online)
    if args.online:
        label = f"the recording {orig_bag}", f"the online run {bag}"
    else:
        label = "the recording", "the offline replay"
    active = 0 if recorded_pb is None else sum(t.status == "active" for t in recorded_pb.ticks)
    return TrackingComparison(
        pair.recorded, pair.replayed, args.tracking_tolerance, label, active, pair.out_of_step
    )


def _compare(
    args: argparse.Namespace,
    bag: Path,
    setup: NodeSetup,
    playback: Playback | None,
    original: tuple[Path, NodeSetup],
    summary: dict[str, Any],
) -> int:
    """``--compare``: every command, and the tracking error of both runs. Returns the status."""
    joints = setup_joints(setup, playback)
    report = compare_commands(bag, setup, playback, joints, args.tolerance)
    print(report.text())
    summary.update(report.to_dict())
    summary["compare"] = report.to_dict()
    tracking = _tracking(args, bag, setup, playback, original)
    print(tracking.text())
    summary["tracking"] = tracking.to_dict()
    commands_ok = report.ok or not report.exact
    summary["ok"] = commands_ok and tracking.ok
    reasons = [
        r for r, bad in (("commands", not commands_ok), ("tracking", not tracking.ok)) if bad
    ]
    print("itasc-replay: compare: " + (f"FAILED ({', '.join(reasons)})" if reasons else "OK"))
    return 0 if summary["ok"] else 1


def _run(args: argparse.Namespace) -> int:
    """The whole command; returns the exit status."""
    bag = check_bag(args.bag)
    check_outputs(args)
    overrides = dict(parse_override(s) for s in args.set)
    setup = load_with_overrides(args, bag, overrides)
    summary: dict[str, Any] = {"bag": str(bag), "parameters": setup.params_source}
    summary["urdf"] = setup.urdf_source
    original = (bag, setup)
    if args.online:
        bag, summary["online_counts"] = _online(args, bag, setup)
        summary["online_bag"] = str(bag)
        setup = load_setup(bag, args.params_file, args.urdf, overrides, args.node_name)
    what_if_run = bool(overrides) and not args.compare
    result, playback, notes = replay_offline(
        bag, setup, overrides, what_if_run, args.urdf is not None, args.at
    )
    summary["exact"] = playback is not None
    metrics = replay_metrics(result)
    summary.update(metrics)
    print_replay(bag, setup, metrics, notes, result)
    status = 0
    what_if_plots: list[Path] = []
    if args.compare:
        status = _compare(args, bag, setup, playback, original, summary)
    elif overrides and playback is not None:
        what_if_plots = what_if(args, bag, result, overrides, summary)
    if args.out and not args.no_plots:
        paths = write_replay_plots(result, args.out) + what_if_plots
        print("  plots: " + ", ".join(str(p) for p in paths))
        summary["plots"] = [str(p) for p in paths]
    if args.json:
        print_json(summary)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (1: mismatch, 2: usage error).

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    """
    args = parser().parse_args(argv)
    return usage_status("itasc-replay", lambda: _run(args))


__all__ = ["main"]
