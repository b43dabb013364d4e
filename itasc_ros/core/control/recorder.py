"""The recorder: the controller's records of its inputs and ticks in a journal (ROS-free).

With a :class:`~itasc_ros.core.control.journal.Journal` attached the controller appends one
record per accepted input and per tick, with the very values it used (the layouts of
:mod:`~itasc_ros.core.control.journal`); with a SNAPSHOT of its state
(:meth:`~itasc_ros.core.control.Controller.write_snapshot`) a journal plays back bit for bit
(:mod:`~itasc_ros.core.control.playback`). Each record is written by one compiled call
(:mod:`._journal_kernels`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ._journal_kernels import (
    tick_length,
    write_joint_state,
    write_target,
    write_tick,
    write_twist,
)
from ._packed import JS_SIZE, TA_SIZE, TARGET_SIZE
from .journal import Code, Journal, stamp_value
from .status import STATUS_CODE, Status, StepOutput
from .streams import TargetStream

Array = NDArray[np.float64]

ACTIVE_CODE = float(STATUS_CODE[Status.ACTIVE])
"""The status code of an active tick's TICK record."""

NO_ROOM = np.zeros(0)
"""The buffer of no journal (a compiled call's record not written: its place is -1)."""


def _no_room(length: int) -> tuple[Array, int]:
    """:attr:`Recorder.room` without a journal: an unused buffer, and -1 (no record)."""
    return NO_ROOM, -1


class Recorder:
    """Writes the controller's records into its journal, while one is attached.

    A TICK reads each target stream's pose, reference pose and applied twist in the streams'
    arrays (a row each, which the streams update in place), and its scalars in their packed
    states.

    Args:
        n: the commanded joints.

    Attributes:
        journal: where the records go, or None (nothing is recorded).
        room: ``room(length)``: room for a record of ``length`` payload values that a compiled
            call writes: the journal's buffer and where the record goes (:meth:`Journal.reserve
            <.journal.Journal.reserve>`, the journal's own method: one call); without a
            journal, an unused buffer and -1.
    """

    def __init__(self, n: int) -> None:
        self.journal: Journal | None = None
        self.room: Callable[[int], tuple[Array, int]] = _no_room
        self._n = n
        self._streams: list[TargetStream] = []
        self._tick_arrays = np.zeros((0, TA_SIZE))
        self._states = np.zeros((0, TARGET_SIZE))
        self._tick_len = 0
        self._pending = -1  # where the room of tick_room is, until settled

    def watch(self, targets: dict[str, TargetStream], states: Array, arrays: Array) -> None:
        """Record the ticks of ``targets``' streams (by name, in their journal order).

        ``states``: (k, :data:`~._packed.TARGET_SIZE`) their packed states, ``arrays``: (k,
        :data:`~._packed.TA_SIZE`) their arrays, a row each in the same order.

        Writes each record once into a scratch journal: the kernels never compile in a tick.
        """
        self._streams = list(targets.values())
        self._tick_arrays = arrays
        self._states = states
        self._tick_len = tick_length(self._n, len(self._streams))
        journal = self.journal
        self.attach(Journal())
        zeros = np.zeros(self._n)
        out = StepOutput(Status.WAITING, False, zeros, zeros)
        self.tick(0.0, out, np.zeros(JS_SIZE), zeros)
        self.joint_state(0.0, 0.0, zeros, np.zeros(0))
        self.target(0, 0.0, np.nan, -1, False, np.zeros(3), np.zeros(4))
        self.twist(Code.TWIST, 0, -1, np.zeros(6), 0.0, None)
        self.attach(journal)

    def attach(self, journal: Journal | None) -> None:
        """Record into ``journal`` from now on (None: stop recording)."""
        self.journal = journal
        self.room = _no_room if journal is None else journal.reserve

    def release(self, at: int) -> None:
        """Give back the room :meth:`room` gave at ``at`` (>= 0), its record not written."""
        if at >= 0:
            assert self.journal is not None
            self.journal.release(at)

    def joint_state(
        self, received: float, header: float, positions: Array, robot_stamps: Array
    ) -> None:
        """Append the JOINT_STATE record of a joint state just accepted.

        Args:
            received: its reception time [s].
            header: its header stamp [s] (NaN: unstamped).
            positions: (n_all,) every joint's position, URDF order [rad or m].
            robot_stamps: (g,) each robot's reception time [s] (none for a single robot).
        """
        assert self.journal is not None
        buf, at = self.journal.reserve(2 + positions.shape[0] + robot_stamps.shape[0])
        write_joint_state(buf, at, float(received), header, positions, robot_stamps)

    def target(
        self,
        index: int,
        stamp: float,
        header: float,
        frame_code: int,
        jump: bool,
        p: Array,
        qt: Array,
    ) -> None:
        """Append the TARGET record of a pose just accepted.

        Args:
            index: the target stream's index.
            stamp: its reception time [s].
            header: its header stamp [s] (NaN: unstamped).
            frame_code: its frame as journaled (-1 the root, -2 the world, else a link index).
            jump: the jump as asked.
            p: (3,) the position as received [m].
            qt: (4,) the quaternion (x, y, z, w) as received.
        """
        assert self.journal is not None
        buf, at = self.journal.reserve(12)
        write_target(buf, at, index, stamp, header, frame_code, 1.0 if jump else 0.0, p, qt)

    def odometry(self, stamp: float, header: float, values: Array) -> None:
        """Append the ODOMETRY record: reception [s], header stamp [s], ``values`` (13,)."""
        assert self.journal is not None
        rec = self.journal.begin(Code.ODOMETRY, 15)
        rec[0], rec[1] = stamp, header
        rec[2:15] = values

    def twist(
        self,
        code: Code,
        index: int,
        frame_code: int,
        twist: Array,
        received: float,
        header_stamp: float | None,
    ) -> None:
        """Append a TWIST or JOG record: ``twist`` (6,) as received, in its frame's axes."""
        assert self.journal is not None
        buf, at = self.journal.reserve(10)
        header = stamp_value(header_stamp)
        write_twist(buf, at, float(code), index, float(received), header, frame_code, twist)

    def tick_room(self) -> tuple[Array, int, float, float, Array, Array]:
        """Room for an active tick's TICK record, for the compiled call that sends its command.

        (:func:`~._command_kernels.solve_command`, which writes it once the command is sent);
        then :meth:`settle`.

        Returns:
            The journal's buffer and where the record goes (-1: no journal, nothing to
            write), the status code of an active tick, the configuration revision in force,
            the target streams' packed states and their arrays (:meth:`watch`).
        """
        buf, at, revision = self.reserve_tick()
        return buf, at, ACTIVE_CODE, revision, self._states, self._tick_arrays

    def reserve_tick(self) -> tuple[Array, int, float]:
        """:meth:`tick_room`'s values that change from tick to tick.

        Returns:
            The journal's buffer, where the record goes (-1: none) and the configuration
            revision in force.
        """
        journal = self.journal
        if journal is None:
            return NO_ROOM, -1, 0.0
        buf, self._pending = journal.reserve(self._tick_len)
        return buf, self._pending, float(journal.revision)

    @property
    def watched(self) -> tuple[Array, Array]:
        """The target streams' packed states and their arrays (:meth:`watch`)."""
        return self._states, self._tick_arrays

    def settle(self, written: bool) -> bool:
        """The room :meth:`tick_room` gave: kept when its record was ``written``, else given back.

        Returns:
            True when the tick's record is in the journal.
        """
        at, self._pending = self._pending, -1
        if at >= 0 and not written:
            self.release(at)
        return at >= 0 and written

    def tick(self, now: float, out: StepOutput, joint_state: Array, q: Array) -> None:
        """Append the TICK record of ``out`` (what the tick consumed and decided).

        One compiled call (:func:`._journal_kernels.write_tick`) over the joint state's and
        the target streams' packed states and arrays.

        Args:
            now: the tick's time [s].
            out: its output.
            joint_state: (:data:`~._packed.JS_SIZE`,) the joint-state input's packed
                state (the reception time and header stamp of the state the tick used).
            q: (n,) the joint positions it used.
        """
        assert self.journal is not None
        journal = self.journal
        buf, at = journal.reserve(self._tick_len)
        write_tick(
            buf,
            at,
            float(now),
            STATUS_CODE[out.status],
            out.publish,
            float(journal.revision),
            joint_state,
            out.status is Status.ACTIVE or out.result is not None,
            q,
            out.qdot,
            self._states,
            self._tick_arrays,
        )


__all__ = ["NO_ROOM", "Recorder"]
