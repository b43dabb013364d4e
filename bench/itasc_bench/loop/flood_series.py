"""``itasc-bench flood``: the node's loop under input floods beside the same run unflooded.

Each round runs the node in closed loop (:func:`~itasc_bench.loop.run.run_loop_bench`) with
``--burners`` processes spinning beside it (from the first command to the window's end, as the
flood: the processes start and stop unburdened), first with the *unread* flood (a publisher at the
same rate on a topic nobody reads: the machine's load without the node's own work for it), then
with each flood of ``--floods`` (jog twists, IK requests, target poses; see
:mod:`~itasc_bench.loop.flood`). Reported per flood: the missed-tick fraction and its ratio
to the unread run of the same round (median over rounds), the longest time between two commands
(worst round) and the node's CPU.
"""

from __future__ import annotations

import argparse
import math
import statistics
from typing import Any

from .run import run_loop_bench

#: The figures kept per flood run.
FLOOD_KEYS = (
    "missed_tick_fraction",
    "command_gap_max_ms",
    "node_cpu_percent",
    "commands_out_of_limits",
    "flood_sent",
)


def flood_rounds(kinds: list[str], rounds: int, **run: Any) -> dict[str, list[dict[str, Any]]]:
    """``rounds`` rounds of the unread run then each flood's; the runs by flood name."""
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in ("unread", *kinds)}
    for _ in range(rounds):
        for kind in ("unread", *kinds):
            r = run_loop_bench(flood=kind, **run)
            runs[kind].append({k: r[k] for k in FLOOD_KEYS})
    return runs


def flood_summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians, the worst gap, and each flood's missed-tick ratio to its round's unread run."""
    out: dict[str, Any] = {}
    base = runs["unread"]
    for kind, rs in runs.items():
        out[f"{kind}_missed_tick_fraction"] = statistics.median(
            r["missed_tick_fraction"] for r in rs
        )
        out[f"{kind}_command_gap_max_ms"] = max(r["command_gap_max_ms"] for r in rs)
        out[f"{kind}_node_cpu_percent"] = statistics.median(r["node_cpu_percent"] for r in rs)
        out[f"{kind}_commands_out_of_limits"] = sum(r["commands_out_of_limits"] for r in rs)
        out[f"{kind}_sent_per_run"] = statistics.median(r["flood_sent"] for r in rs)
        if kind != "unread":
            ratios = [
                f["missed_tick_fraction"] / u["missed_tick_fraction"]
                if u["missed_tick_fraction"]
                else (1.0 if not f["missed_tick_fraction"] else math.inf)
                for f, u in zip(rs, base, strict=True)
            ]
            out[f"{kind}_missed_ticks_vs_unread"] = statistics.median(ratios)
    return out


def flood_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``itasc-bench flood``, print one line per flood; returns the figures for --json."""
    duration = args.duration if args.duration is not None else 10.0
    runs = flood_rounds(
        args.floods,
        args.runs,
        robot=args.robot,
        rate=args.rate,
        duration=duration,
        trigger=args.trigger,
        burners=args.burners,
    )
    out = flood_summary(runs)
    print(
        f"\n== floods beside {args.burners} CPU burners, {args.rate:g} Hz, {duration:g} s, "
        f"{args.runs} round(s)"
    )
    for kind in ("unread", *args.floods):
        ratio = out.get(f"{kind}_missed_ticks_vs_unread")
        print(
            f"  {kind:>7}: missed {100 * out[f'{kind}_missed_tick_fraction']:.2f} %"
            + ("" if ratio is None else f" ({ratio:.3g}x unread)")
            + f", longest gap {out[f'{kind}_command_gap_max_ms']:.1f} ms, node CPU "
            f"{out[f'{kind}_node_cpu_percent']:.1f} %, sent {out[f'{kind}_sent_per_run']:.0f}"
        )
    out.update(flood_burners=args.burners, flood_rate_hz=args.rate, flood_duration_s=duration)
    return out


__all__ = ["FLOOD_KEYS", "flood_command", "flood_rounds", "flood_summary"]
