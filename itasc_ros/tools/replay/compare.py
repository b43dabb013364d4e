"""``--compare``: every recorded command matched with a journal tick and recomputed.

Every command on the command topic is matched, in order and value for value, with the command
a journal TICK says was published, and that tick's command is recomputed from the journaled
inputs. Identical code and inputs give identical commands, so the default tolerance is
:data:`DEFAULT_TOLERANCE` (1e-12 rad/s; the difference is 0.0 when nothing changed). Commands
recorded before the journal's first covered command or after its last (a recording started
before the node's journal, or stopped before the node) are reported, not compared; a command
within the journal's span that it does not cover (a lost message) fails the check, as does
any difference above the tolerance or a tick whose status differs. A command received twice
(the same values again, received before any later tick with these values was computed: DDS
delivered one message twice, as measured at a recorder's first match, in a burst up to 12 ms
after the node's next tick) is a duplicate delivery: counted and reported, not a command of
its own.
A bag without a journal cannot be compared exactly: the report says so and claims nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from itasc_ros.core.control.playback import Playback, Tick
from itasc_ros.core.kinematics.robots import SEPARATOR
from itasc_ros.tools.replay.bag_events import CommandEvent, bag_base_commands, bag_commands
from itasc_ros.tools.replay.node_setup import NodeSetup

#: Default comparison tolerance [rad/s] (see the module docstring).
DEFAULT_TOLERANCE = 1e-12


@dataclass
class Mismatch:
    """A recorded command the replay does not reproduce (velocities [rad/s], t [s])."""

    t: float
    joint: str
    recorded: float
    recomputed: float
    diff: float
    why: str = ""

    def text(self) -> str:
        """One line for the report."""
        return (
            f"t={self.t:.6f} s: {self.joint} recorded {self.recorded:+.15f} rad/s, recomputed "
            f"{self.recomputed:+.15f} rad/s (|diff| {self.diff:.3e}){self.why}"
        )


@dataclass
class CompareReport:
    """Outcome of :func:`compare_commands`.

    Attributes:
        exact: the bag has a journal (otherwise nothing is compared).
        commands: command messages on the command topic.
        compared: those matched with a journal tick and recomputed.
        max_abs_diff: largest |recorded - recomputed| over the compared commands [rad/s].
        mismatches: compared commands above the tolerance, ticks whose status differs.
        not_covered: commands within the journal's span without a tick (lost messages).
        duplicates: commands received again: the previous command's values, received before
            the next published tick's time (one message delivered twice).
        outside: commands before the journal's first covered command or after its last (the
            recording started before the node's journal, or stopped before its last message).
        matched: per command, the index of its tick in the playback (None: not covered).
    """

    tolerance: float
    exact: bool
    commands: int = 0
    compared: int = 0
    max_abs_diff: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)
    not_covered: int = 0
    duplicates: int = 0
    outside: int = 0
    unreadable: int = 0
    status_differences: int = 0
    lost_messages: int = 0
    state_mismatches: int = 0
    problems: list[str] = field(default_factory=list)
    matched: list[int | None] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every command of the journal's span was compared and reproduced."""
        return (
            self.exact
            and self.compared > 0
            and self.compared == self.commands - self.outside - self.unreadable - self.duplicates
            and not self.mismatches
            and self.state_mismatches == 0
            and self.lost_messages == 0
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {
            "ok": self.ok,
            "exact": self.exact,
            "tolerance_rad_s": self.tolerance,
            "commands": self.commands,
            "compared": self.compared,
            "max_abs_diff": self.max_abs_diff,
            "mismatches": len(self.mismatches),
            "not_covered": self.not_covered,
            "duplicates": self.duplicates,
            "outside_journal": self.outside,
            "unreadable": self.unreadable,
            "status_differences": self.status_differences,
            "lost_journal_messages": self.lost_messages,
            "state_mismatches": self.state_mismatches,
        }

    def text(self) -> str:
        """A human-readable report."""
        if not self.exact:
            return (
                f"compare: the bag has no journal of the node: its {self.commands} commands "
                "cannot be compared exactly (replayed in bag order; no pass/fail)"
            )
        lines = [
            f"compare: {self.commands} recorded commands, {self.compared} compared, tolerance "
            f"{self.tolerance:g} rad/s",
            f"  largest |recorded - recomputed|: {self.max_abs_diff:.3e} rad/s",
        ]
        for label, value in (
            ("commands within the journal's span that it does not cover", self.not_covered),
            ("commands received twice (one message delivered again)", self.duplicates),
            ("commands before or after the journal (not compared)", self.outside),
            ("unreadable command messages", self.unreadable),
            ("journal messages lost", self.lost_messages),
            ("snapshots that differ from the replayed state", self.state_mismatches),
            ("ticks whose status differs", self.status_differences),
        ):
            if value:
                lines.append(f"  {label}: {value}")
        if self.mismatches:
            lines.append(f"  MISMATCH: {len(self.mismatches)} commands not reproduced")
            lines.extend("    " + m.text() for m in self.mismatches[:10])
        lines.extend("  " + p for p in self.problems[:5])
        if self.commands == 0:
            lines.append("  the bag has no commands to compare")
        lines.append("  result: " + ("OK" if self.ok else "FAILED"))
        return "\n".join(lines)


#: How much later [s] than a command's reception the tick that computed it may be stamped:
#: none (the node stamps a tick before it publishes its command, on the same system clock as
#: the recorder), give or take the resolution of the two clock readings. A bag of a node on
#: simulated time has tick times far below the receptions: the bound then excludes nothing.
CAUSALITY_SLACK = 1e-3


def align(
    commands: Sequence[CommandEvent], ticks: Sequence[Tick], part: Any = slice(None)
) -> list[int | None]:
    """Per command, the index of the published tick with exactly its values, in order.

    Both streams keep their order (reliable DDS), so each command is searched after the
    previous match, among the ticks computed before it was received (a tick stamped later
    cannot have published it: a run of equal commands delivered again, as a reader that
    matched late gets them, is never matched with a far later tick of the same values, which
    would leave every command in between uncovered); a command matching no published tick is
    not covered (None). A command
    delivered again (:func:`_redelivered`) is not searched for: it would match the next tick
    whose command has the same values (a command held at a limit), however far, and every
    command before that tick would be left uncovered. ``part``: the joints of a tick's
    command the messages carry, a slice or an index array (a commanded base's twist is its
    own stream: the first joints; the arm's message the others; each of several robots'
    messages its own joints).
    """
    published = [i for i, t in enumerate(ticks) if t.published]
    out: list[int | None] = [None] * len(commands)
    j = 0
    for c, cmd in enumerate(commands):
        if cmd.qdot is None or _redelivered(commands, out, c, ticks, published, part):
            continue
        for k in range(j, len(published)):
            tick = ticks[published[k]]
            if tick.t > cmd.t + CAUSALITY_SLACK:
                break  # computed after the command arrived: neither this tick nor a later one
            if np.array_equal(tick.recorded[part], cmd.qdot):
                out[c] = published[k]
                j = k + 1
                break
    return out


def _compare_matched(
    rep: CompareReport,
    commands: Sequence[CommandEvent],
    matched: Sequence[int | None],
    ticks: Sequence[Tick],
    joints: Sequence[str],
    part: Any = slice(None),
) -> None:
    """Count the commands outside the journal or not covered; compare the matched ones.

    ``part``: the joints of a tick's command the messages carry (see :func:`align`).
    """
    covered = [c for c, i in enumerate(matched) if i is not None]
    first, last = (covered[0], covered[-1]) if covered else (len(commands), -1)
    published = [k for k, t in enumerate(ticks) if t.published]
    for c, (cmd, i) in enumerate(zip(commands, matched, strict=True)):
        if i is None:
            if _redelivered(commands, matched, c, ticks, published, part):
                rep.duplicates += 1
            elif cmd.qdot is not None and first < c < last:
                rep.not_covered += 1
            elif cmd.qdot is not None:
                rep.outside += 1
            continue
        rep.compared += 1
        tick = ticks[i]
        rep.max_abs_diff = max(rep.max_abs_diff, tick.diff)
        if tick.diff > rep.tolerance:
            j = int(np.argmax(np.abs(tick.recorded - tick.recomputed)))
            rep.mismatches.append(
                Mismatch(tick.t, joints[j], tick.recorded[j], tick.recomputed[j], tick.diff)
            )


def _redelivered(
    commands: Sequence[CommandEvent],
    matched: Sequence[int | None],
    c: int,
    ticks: Sequence[Tick],
    published: Sequence[int],
    part: Any = slice(None),
) -> bool:
    """Command ``c`` is an earlier one delivered again (see the module docstring).

    Its values are those of the last command before it that was matched with a tick (the
    commands between, if any, being deliveries of it again), and no later published tick
    computed before it was received has these values (its ``part``): no other tick's command
    could be it. (Received before the next tick was computed, as a burst at a recorder's late
    first match mostly is; or after it, when those ticks' commands differ: a burst arrived
    12 ms after the next tick was computed, measured.)
    """
    last = next((b for b in range(c - 1, -1, -1) if matched[b] is not None), None)
    cmd = commands[c]
    if last is None or cmd.qdot is None:
        return False
    prev, before = matched[last], commands[last].qdot
    if prev is None or before is None:
        return False
    if not np.array_equal(cmd.qdot, before):
        return False
    for k in published[bisect.bisect_right(published, prev) :]:  # the ticks after ``prev``
        if ticks[k].t > cmd.t:
            break  # computed after the command arrived: it cannot be theirs
        if np.array_equal(ticks[k].recorded[part], cmd.qdot):
            return False  # this tick's command, as far as its values tell
    return True


def _compare_statuses(rep: CompareReport, ticks: Sequence[Tick]) -> None:
    """A tick whose status (or whether it published) the replay does not reproduce."""
    for t in ticks:
        if (t.status, t.published) != (t.replayed_status, t.replayed_published):
            rep.status_differences += 1
            if len(rep.mismatches) < 1000:
                why = f" (status {t.status} -> {t.replayed_status})"
                rep.mismatches.append(Mismatch(t.t, "-", 0.0, 0.0, t.diff, why))


def compare_commands(
    bag: str | Path,
    setup: NodeSetup,
    playback: Playback | None,
    joints: Sequence[str],
    tolerance: float = DEFAULT_TOLERANCE,
) -> CompareReport:
    """Compare every recorded command with the played-back journal (see the module docstring).

    Args:
        bag: the bag.
        setup: its topics (:func:`~itasc_ros.tools.replay.node_setup.load_setup`).
        playback: its journal played back (None: the bag has none; nothing is compared).
        joints: the commanded joints (n,).
        tolerance: largest accepted |recorded - recomputed| per joint [rad/s].
    """
    nb = len(setup.base_joints)
    streams: list[tuple[list[CommandEvent], Any]] = []
    if setup.robot_topics:  # several robots: each one's commands, its own joints
        for r, (_, topic) in setup.robot_topics.items():
            part = np.array([i for i, j in enumerate(joints) if j.startswith(r + SEPARATOR)])
            own = [joints[i][len(r) + len(SEPARATOR) :] for i in part]
            streams.append((bag_commands(bag, setup, own, topic), part))
    else:
        streams.append((bag_commands(bag, setup, joints[nb:]), slice(nb, None)))
    if nb:  # a commanded base's twists: a stream of their own, compared the same way
        streams.append((bag_base_commands(bag, setup), slice(0, nb)))
    rep = CompareReport(tolerance=tolerance, exact=playback is not None)
    for commands, _ in streams:
        rep.commands += len(commands)
        rep.unreadable += sum(c.qdot is None for c in commands)
    if playback is None:
        return rep
    ticks = playback.ticks
    for commands, part in streams:
        matched = align(commands, ticks, part)
        rep.matched += matched
        _compare_matched(rep, commands, matched, ticks, joints, part)
    rep.lost_messages = playback.log.lost_messages
    rep.state_mismatches = playback.log.state_mismatches
    rep.problems = list(playback.log.problems)
    _compare_statuses(rep, ticks)
    return rep


__all__ = ["DEFAULT_TOLERANCE", "CompareReport", "Mismatch", "align", "compare_commands"]
