"""``itasc-bench loop`` and ``itasc-bench soak``: runs of the node over DDS, and their peers.

``--runs`` runs of the node, each followed by the floor's run (``--floor``) and by the node's run
with ``~/journal`` subscribed (``--journal``); one table per run, then the medians and the
ratios of :mod:`~itasc_bench.loop.series`. ``soak`` is one long run with the memory growth.
"""

from __future__ import annotations

import argparse
from typing import Any

from itasc_bench.report import print_table

from .run import run_loop_bench
from .series import (
    CORE_FLOOR_MODULE,
    CORE_FLOORS,
    FLOOR_KEYS,
    FLOOR_MODULE,
    floor_comparison,
    median_runs,
    peer_comparison,
)


def _variants(
    args: argparse.Namespace, soak: bool, duration: float
) -> list[tuple[str, dict[str, Any], str]]:
    """(series, the run's own arguments, table title) of each run of one round."""
    out: list[tuple[str, dict[str, Any], str]] = [
        ("node", {"soak": soak}, f"{args.what}: node at {args.rate:g} Hz for {duration:g} s")
    ]
    core = bool(getattr(args, "core_floor", False))  # the core floors pair with the floor's runs
    if (args.floor or core) and not soak:
        title = f"loop: {FLOOR_MODULE} (the floor) at {args.rate:g} Hz"
        out.append(("floor", {"node_module": FLOOR_MODULE}, title))
    if core and not soak:
        for work in CORE_FLOORS:
            title = f"loop: the floor plus the core's {work} ({CORE_FLOOR_MODULE})"
            own = {"node_module": CORE_FLOOR_MODULE, "node_params": {"floor_work": work}}
            out.append((f"core_{work}", own, title))
    if args.journal and not soak:
        out.append(("journal", {"journal": True}, "loop: node with ~/journal subscribed"))
    return out


def loop_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``itasc-bench loop`` or ``soak`` (``args.what``), print the tables.

    Args:
        args: The parsed command line (``what``, ``robot``, ``rate``, ``duration``, ``trigger``,
            ``realtime``, ``keep_warm``, ``runs``, ``floor``, ``core_floor``, ``journal``).

    Returns:
        The figures for the JSON line: the node's (medians of the runs), then the journal's, the
        floor's and the core floors' comparisons where asked (``core_<work>_<key>`` and
        ``<key>_core_<work>_vs_floor`` for each work of :data:`~.series.CORE_FLOORS`).

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
    variants = _variants(args, soak, duration)
    series: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in variants}
    for i in range(runs):  # interleaved: node, floor, node, floor, ...
        tag = f" (run {i + 1} of {runs})" if runs > 1 else ""
        for name, own, title in variants:
            r = run_loop_bench(**own, **kw)
            print_table(title + tag, r)
            series[name].append(r)
    nodes, floors = series["node"], series.get("floor", [])
    journaled = series.get("journal", [])
    out = median_runs(nodes)
    if journaled:
        out.update(peer_comparison(journaled, nodes, "journal", "without"))
        out["journal_messages"] = [r.get("journal_messages", 0) for r in journaled]
        _print_journal_comparison(out, runs)
    if floors:
        out.update(floor_comparison(nodes, floors))
        _print_floor_comparison(out, runs)
    for work in CORE_FLOORS:
        core = series.get(f"core_{work}")
        if core:
            out.update(peer_comparison(core, floors, f"core_{work}", "floor"))
    if any(f"core_{work}" in series for work in CORE_FLOORS):
        _print_core_floors(out, runs)
    return out


def _print_journal_comparison(result: dict[str, Any], runs: int) -> None:
    print(f"\n== node with ~/journal subscribed vs without (medians of {runs} runs)")
    for k in FLOOR_KEYS:
        print(
            f"  {k}: with {result['journal_' + k]:.4g}, without {result[k]:.4g}, "
            f"ratio {result[k + '_journal_vs_without']:.3g}"
        )


def _print_core_floors(result: dict[str, Any], runs: int) -> None:
    print(f"\n== the node's CPU in layers, against the floor (medians of {runs} interleaved runs)")
    k = "node_cpu_percent"
    rows = [("floor (rclpy, DDS)", result["floor_" + k], 1.0)]
    rows += [
        (f"floor + the core's {w}", result[f"core_{w}_{k}"], result[f"{k}_core_{w}_vs_floor"])
        for w in CORE_FLOORS
    ]
    rows.append(("node", result[k], result[k + "_vs_floor"]))
    for label, cpu, ratio in rows:
        print(f"  {label}: {cpu:.4g} % of a core, {ratio:.3g}x the floor")


def _print_floor_comparison(result: dict[str, Any], runs: int) -> None:
    print(f"\n== node vs floor (medians of {runs} interleaved runs)")
    for k in FLOOR_KEYS:
        print(
            f"  {k}: node {result[k]:.4g}, floor {result['floor_' + k]:.4g}, "
            f"ratio {result[k + '_vs_floor']:.3g}"
        )


__all__ = ["loop_command"]
