"""The offline replay of a bag: its journal played back exactly, else the bag in bag order.

Offline is deterministic and needs no ROS graph: this path never imports rclpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from itasc_ros.core.control.playback import Playback
from itasc_ros.tools.replay.bag_events import CommandEvent
from itasc_ros.tools.replay.bag_order import Replayer
from itasc_ros.tools.replay.journal_playback import play_journal, setup_joints, ticks_result
from itasc_ros.tools.replay.node_setup import NodeSetup
from itasc_ros.tools.replay.result import ReplayResult


def replay_offline(
    bag: Path,
    setup: NodeSetup,
    overrides: Mapping[str, Any],
    what_if: bool,
    any_urdf: bool,
    at: str | None = None,
) -> tuple[ReplayResult, Playback | None, list[str]]:
    """The replay of the bag: its journal (exactly) or, without one, bag order.

    Args:
        bag: the bag.
        setup: the node's parameters, URDF and topics
            (:func:`~itasc_ros.tools.replay.node_setup.load_setup`).
        overrides: live parameters changed on top of every recorded revision.
        what_if: an ideal robot follows the recomputed commands
            (:mod:`~itasc_ros.tools.replay.what_if`).
        any_urdf: use the setup's URDF whatever URDF the journal names (``--urdf`` given).
        at: without a journal, 'commands' or 'rate' (default: 'commands' when the bag has
            commands); see :meth:`~itasc_ros.tools.replay.bag_order.Replayer.run`.

    Returns:
        (the replay's steps, the journal played back or None, notes for the report).
    """
    playback = play_journal(bag, setup, overrides, what_if, any_urdf=any_urdf)
    if playback is not None:
        result = ticks_result(playback, setup_joints(setup, playback))
        changes = [f"parameter change at {t:.3f} s: {ch}" for t, ch in result.parameter_changes]
        return result, playback, changes
    replayer = Replayer(bag, setup)
    at = at or (
        "commands" if any(isinstance(e, CommandEvent) for e in replayer.events) else "rate"
    )
    result = replayer.run(at)
    notes = [f"no journal in the bag: replayed in bag order ({at})"]
    notes += [f"parameter change at {t:.3f} s: {ch}" for t, ch in result.parameter_changes]
    return result, None, notes


__all__ = ["replay_offline"]
