"""``itasc-replay --compare``'s matching of recorded commands with the journal's ticks."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from itasc_ros.tools.replay.bag_events import CommandEvent
from itasc_ros.tools.replay.compare import (
    DEFAULT_TOLERANCE,
    CompareReport,
    _compare_matched,
    align,
)


def _ticks(values: list[float]) -> list[Any]:
    """Published ticks at t = 0, 1, 2, ... [s], each with a one-joint command."""
    return [
        SimpleNamespace(t=float(k), published=True, recorded=np.array([v]))
        for k, v in enumerate(values)
    ]


def _cmd(t: float, v: float) -> CommandEvent:
    return CommandEvent(t, np.array([v]))


def test_a_redelivered_command_does_not_jump_to_a_later_tick_with_its_values() -> None:
    """A command delivered twice whose values come back later (held at a limit) is skipped.

    Matched greedily, the second delivery would take tick 3 (the same values) and leave the
    commands of ticks 1 and 2 uncovered: a failed compare of a run that was reproduced.
    """
    ticks = _ticks([1.0, 2.0, 3.0, 1.0])
    commands = [_cmd(0.1, 1.0), _cmd(0.2, 1.0), _cmd(1.1, 2.0), _cmd(2.1, 3.0), _cmd(3.1, 1.0)]
    assert align(commands, ticks) == [0, None, 1, 2, 3]


def test_the_same_values_after_the_next_tick_are_a_command_of_their_own() -> None:
    """Equal values received after the next tick was computed are that tick's command."""
    ticks = _ticks([1.0, 1.0, 2.0])
    commands = [_cmd(0.1, 1.0), _cmd(1.1, 1.0), _cmd(2.1, 2.0)]
    assert align(commands, ticks) == [0, 1, 2]


def test_a_burst_of_redeliveries_at_a_late_match_is_never_matched_with_a_later_tick() -> None:
    """A recorder that matched late gets a tick's command several times in a burst.

    Measured on a fresh clone (a holonomic base's bag): 4 zero ticks at the start, 8 zero
    commands received, 5 of them within 0.7 ms; then the commands of the motion, and zeros
    again when it stops. A delivery of a zero is neither the next zero tick's command (that
    tick was computed after the delivery arrived) nor the stop's far later zeros: matched
    there, every command in between was left uncovered.
    """
    ticks = _ticks([0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0])
    receptions = [0.5, 1.2, 1.3, 1.4, 1.5, 1.6, 2.1, 3.1]  # ticks 0, 1 again x4, 2, 3
    commands = [_cmd(t, 0.0) for t in receptions]
    commands += [_cmd(4.1, 1.0), _cmd(5.1, 2.0), _cmd(6.1, 3.0), _cmd(7.1, 0.0), _cmd(8.1, 0.0)]
    assert align(commands, ticks) == [0, 1, None, None, None, None, 2, 3, 4, 5, 6, 7, 8]


def test_a_command_is_never_matched_with_a_tick_computed_after_its_reception() -> None:
    """A command whose values come only from a later tick is not covered (a lost tick's)."""
    ticks = _ticks([1.0, 2.0, 1.0])
    commands = [_cmd(0.1, 1.0), _cmd(1.1, 1.0), _cmd(2.1, 1.0)]
    # the second command's values are those of no tick computed before it arrived; the third
    # is tick 2's
    assert align(commands, ticks) == [0, None, 2]


def test_a_late_burst_of_redeliveries_is_told_from_a_later_tick_by_its_values() -> None:
    """A recorder's first match delivered tick 0's command again after ticks 1 and 2 were
    computed (measured on a two-robot bag: 12 ms late); ticks 1 and 2 have other values, so
    it is neither: a delivery again, not an uncovered command. The same values once a tick
    with them was computed are that tick's (the previous test)."""
    ticks = _ticks([0.5, 0.25, 0.125, 0.5])
    for tick in ticks:
        tick.diff = 0.0  # recomputed exactly
    commands = [_cmd(2.3, 0.5), _cmd(2.4, 0.5), _cmd(2.5, 0.25), _cmd(2.6, 0.125), _cmd(3.1, 0.5)]
    matched = align(commands, ticks)
    assert matched == [0, None, 1, 2, 3]
    rep = CompareReport(tolerance=DEFAULT_TOLERANCE, exact=True)
    _compare_matched(rep, commands, matched, ticks, ["j"])
    assert (rep.compared, rep.duplicates, rep.not_covered) == (4, 1, 0)
