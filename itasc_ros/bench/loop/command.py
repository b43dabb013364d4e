"""``itasc-bench loop`` and ``itasc-bench soak``: runs of the node over DDS, and their peers.

``--runs`` runs of the node, each followed by the floor's run (``--floor``) and by the node's run
with ``~/journal`` subscribed (``--journal``); one table per run, then the medians and the
ratios of :mod:`~itasc_ros.bench.loop.series`. ``soak`` is one long run with the memory growth.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..report import print_table
from .run import run_loop_bench
from .series import FLOOR_KEYS, FLOOR_MODULE, floor_comparison, median_runs, peer_comparison


def _variants(
    args: argparse.Namespace, soak: bool, duration: float
) -> list[tuple[str, dict[str, Any], str]]:
    """(series, the run's own arguments, table title) of each run of one round."""
    out: list[tuple[str, dict[str, Any], str]] = [
        ("node", {"soak": soak}, f"{args.what}: node at {args.rate:g} Hz for {duration:g} s")
    ]
    if args.floor and not soak:
        title = f"loop: {FLOOR_MODULE} (the floor) at {args.rate:g} Hz"
        out.append(("floor", {"node_module": FLOOR_MODULE}, title))
    if args.journal and not soak:
        out.append(("journal", {"journal": True}, "loop: node with ~/journal subscribed"))
    return out


def loop_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``itasc-bench loop`` or ``soak`` (``args.what``), print the tables.

    Args:
        args: The parsed command line (``what``, ``robot``, ``rate``, ``duration``, ``trigger``,
            ``realtime``, ``keep_warm``, ``runs``, ``floor``, ``journal``).

    Returns:
        The figures for the JSON line: the node's (medians of the runs), then the journal's and
        the floor's comparisons where asked.

    Raises:
        BenchError: A run could not finish.
    """
    soak = args.what == "soak"
    duration = args.duration if args.duration is not None else (600.0 if soak else 60.0)
    kw: dict[str, Any] = dict(
        robot=args.robot,
        rate=args.rate,
        duration=duration,
        trigger=args.trigger,
        realtime=args.realtime,
        keep_warm=args.keep_warm,
    )
    runs = 1 if soak else args.runs
    series: dict[str, list[dict[str, Any]]] = {"node": [], "floor": [], "journal": []}
    variants = _variants(args, soak, duration)
    for i in range(runs):  # interleaved: node, floor, node, floor, ...
        tag = f" (run {i + 1} of {runs})" if runs > 1 else ""
        for name, own, title in variants:
            r = run_loop_bench(**own, **kw)
            print_table(title + tag, r)
            series[name].append(r)
    nodes, floors, journaled = series["node"], series["floor"], series["journal"]
    out = median_runs(nodes)
    if journaled:
        out.update(peer_comparison(journaled, nodes, "journal", "without"))
        _print_journal_comparison(out, runs)
    if floors:
        out.update(floor_comparison(nodes, floors))
        _print_floor_comparison(out, runs)
    return out


def _print_journal_comparison(result: dict[str, Any], runs: int) -> None:
    print(f"\n== node with ~/journal subscribed vs without (medians of {runs} runs)")
    for k in FLOOR_KEYS:
        print(
            f"  {k}: with {result['journal_' + k]:.4g}, without {result[k]:.4g}, "
            f"ratio {result[k + '_journal_vs_without']:.3g}"
        )


def _print_floor_comparison(result: dict[str, Any], runs: int) -> None:
    print(f"\n== node vs floor (medians of {runs} interleaved runs)")
    for k in FLOOR_KEYS:
        print(
            f"  {k}: node {result[k]:.4g}, floor {result['floor_' + k]:.4g}, "
            f"ratio {result[k + '_vs_floor']:.3g}"
        )


__all__ = ["loop_command"]
