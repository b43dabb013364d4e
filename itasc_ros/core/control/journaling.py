"""Journaling: the controller's records of its inputs and ticks, and its state's SNAPSHOT.

With a :class:`~itasc_ros.core.control.journal.Journal` attached the controller appends one
record per accepted input and per tick, with the very values it used, and a SNAPSHOT of its
input state (on attaching, and when asked): :meth:`Journaling.restore_state` puts a controller
in that state, so that a journal plays back from any SNAPSHOT bit for bit
(:mod:`~itasc_ros.core.control.playback`). The layouts are those of
:mod:`~itasc_ros.core.control.journal`. ROS-free.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError
from ..kinematics.tree import KinematicTree
from ._journal_kernels import (
    tick_length,
    write_joint_state,
    write_target,
    write_tick,
    write_twist,
)
from .config import ControllerConfig
from .journal import ODOMETRY_SIZE, SNAPSHOT_HEAD, STREAM_SIZE, Code, Journal, stamp_value
from .odometry import place_in_base
from .prediction import SNAPSHOT_EXTRA, SNAPSHOT_PER_JOINT
from .state import ControllerState
from .status import STATUS_CODE, Status, StepOutput
from .stream_snapshot import (
    odometry_from,
    odometry_into,
    order_from,
    order_into,
    stream_from,
    stream_into,
)

Array = NDArray[np.float64]


class Journaling(ControllerState):
    """Recording into the journal, the SNAPSHOT of the input state and its restoration.

    Each record is written by one compiled call (:mod:`._journal_kernels`). A TICK reads each
    target stream's pose, reference pose and applied twist through flat views made here once
    (the streams update those arrays in place, never replace them), and its scalars through a
    (4 k,) work array.
    """

    def __init__(self, tree: KinematicTree, config: ControllerConfig) -> None:
        super().__init__(tree, config)
        views: list[Array] = []
        for st in self._targets.values():
            views += [st.pose.reshape(16), st.ref.pose.reshape(16), st.applied]
        # (3 k,) views, or 3 unused arrays without targets (a tuple of arrays cannot be empty)
        self._tick_arrays = tuple(views) or (np.zeros(16), np.zeros(16), np.zeros(6))
        # (4 k,) per target: twist source, pose reception time, header stamp, reference active
        self._tick_meta = np.zeros(4 * len(self._targets))
        self._tick_len = tick_length(self._q.shape[0], len(self._targets))
        self._warm_journal()

    def _warm_journal(self) -> None:
        """Write each record once into a scratch journal: the kernels never compile in a tick."""
        scratch = Journal()
        out = StepOutput(Status.WAITING, False, self._qdot, self._q)
        self._record_tick(scratch, 0.0, out)
        self._record_joint_state(scratch, 0.0)
        buf, at = scratch.reserve(12)
        write_target(buf, at, 0, 0.0, np.nan, -1, 0.0, np.zeros(3), np.zeros(4))
        buf, at = scratch.reserve(10)
        write_twist(buf, at, float(Code.TWIST), 0, 0.0, np.nan, -1, np.zeros(6))

    def attach_journal(self, journal: Journal | None) -> None:
        """Record every accepted input and tick into ``journal`` (None: stop recording).

        Attaching writes a SNAPSHOT of the input state first, so that the journal can be
        played back from here (:mod:`itasc_ros.core.control.playback`).
        """
        self.journal = journal
        if journal is not None:
            self.write_snapshot(journal)

    # ------------------------------------------------------------------------- snapshot
    def write_snapshot(self, journal: Journal) -> None:
        """Append a SNAPSHOT record of the input state (:mod:`~itasc_ros.core.control.journal`)."""
        rec = journal.begin(Code.SNAPSHOT, SNAPSHOT_HEAD + self._state_size())
        rec[0], rec[1], rec[2] = journal.revision, journal.urdf_tag, journal.model
        self._state_into(rec[3:])

    def state_values(self) -> Array:
        """(SNAPSHOT size - 3,) the input state as a SNAPSHOT holds it (for comparisons)."""
        out = np.zeros(SNAPSHOT_HEAD - 3 + self._state_size())
        self._state_into(out)
        return out

    def _state_size(self) -> int:
        """Values of the input state after the SNAPSHOT head."""
        n_all, k, n = self._q_full.shape[0], len(self._targets), self._q.shape[0]
        prediction = SNAPSHOT_PER_JOINT * n + SNAPSHOT_EXTRA + 1  # and the states' interval
        return n_all + k * STREAM_SIZE + 1 + 2 * n + ODOMETRY_SIZE + self._robots.size + prediction

    def _state_into(self, out: Array) -> None:
        """The input state from ``n_all`` on (a SNAPSHOT payload without its first three)."""
        n_all, k = self._q_full.shape[0], len(self._targets)
        js = self._joints
        out[0:7] = (n_all, k, self._enabled, self._halted, js.has_state, js.stamp, js.header)
        order_into(js.order, out[7:10])
        h = SNAPSHOT_HEAD - 3
        out[h : h + n_all] = js.all_positions()
        i = h + n_all
        for name, st in self._targets.items():
            st.given_twist[:] = self.scene.get(name).target_twist  # as the last solve had it
            stream_into(st, out[i : i + STREAM_SIZE])
            i += STREAM_SIZE
        n = self._q.shape[0]
        out[i] = self._last_step
        out[i + 1 : i + 1 + n] = self._limiter.v
        out[i + 1 + n : i + 1 + 2 * n] = self._limiter.a
        i += 1 + 2 * n
        odometry_into(self._odom, out[i : i + ODOMETRY_SIZE])
        i += ODOMETRY_SIZE
        g = self._robots.size
        out[i : i + g] = self._robots.stamp  # each robot's joint-state reception
        out[i + g] = js.interval
        self._prediction.state_into(out[i + g + 1 :])  # a late state's prediction

    def restore_state(self, snapshot: Array) -> None:
        """Set the input state from a SNAPSHOT payload (the inverse of :meth:`write_snapshot`).

        Raises:
            ConfigError: the snapshot is of another robot or another set of targets.
        """
        s = np.asarray(snapshot, dtype=float)
        n_all, k = self._q_full.shape[0], len(self._targets)
        if s.shape[0] != SNAPSHOT_HEAD + self._state_size() or (s[3], s[4]) != (n_all, k):
            raise ConfigError(
                f"snapshot of {int(s[3]) if s.shape[0] > 4 else '?'} joints and "
                f"{int(s[4]) if s.shape[0] > 4 else '?'} targets does not fit this controller "
                f"({n_all} joints, {k} targets)"
            )
        js = self._joints
        self._enabled, self._halted, js.has_state = bool(s[5]), bool(s[6]), bool(s[7])
        js.stamp, js.header = float(s[8]), float(s[9])
        order_from(js.order, s[10:13])
        js.set_all_positions(s[SNAPSHOT_HEAD : SNAPSHOT_HEAD + n_all])
        n = self._q.shape[0]
        at_odom = SNAPSHOT_HEAD + n_all + k * STREAM_SIZE + 1 + 2 * n
        odometry_from(self._odom, s[at_odom : at_odom + ODOMETRY_SIZE])
        at_robots = at_odom + ODOMETRY_SIZE
        g = self._robots.size
        self._robots.stamp[:] = s[at_robots : at_robots + g]
        js.restamp()  # each joint's reception time: the state's, or its robot's
        if g:
            self._robots.joint_stamps(js.stamps)
        js.interval = float(s[at_robots + g])
        self._prediction.state_from(s[at_robots + g + 1 :])
        i = self._restore_streams(s, SNAPSHOT_HEAD + n_all)  # world targets: the base first
        self._last_step = float(s[i])
        self._limiter.v[:] = s[i + 1 : i + 1 + n]
        self._limiter.a[:] = s[i + 1 + n : i + 1 + 2 * n]
        self._qdot[:] = self._limiter.v  # the last command (the effector's twist at a step)

    def _restore_streams(self, s: Array, i: int) -> int:
        """Set the target streams from snapshot ``s`` at ``i`` on; returns the index after."""
        for name, st in self._targets.items():
            stream_from(st, s[i : i + STREAM_SIZE])
            c = self.scene.get(name)
            if st.has_pose and not st.world:  # (the next tick aims it again, as live)
                c.set_target(st.pose, check=False)
            c.set_target_twist(st.given_twist if st.given_twist.any() else None)
            if st.world:  # as the last tick placed it (the next one places it again)
                place_in_base(
                    self._base_now(), self._odom.twist, st.world_target, st.world_twist,
                    self._feed_base, st.placed, st.placed_twist,
                )  # fmt: skip
                c.set_target(st.placed, check=False)
            c.mark_twist_seen()  # the snapshot is taken between ticks: the last solve's twist
            i += STREAM_SIZE
        return i

    # ------------------------------------------------------------------------- records
    def _record_joint_state(self, journal: Journal, received: float) -> None:
        """Append the JOINT_STATE record of the joint state just accepted."""
        positions = self._joints.all_positions()
        robots = self._robots.stamp
        buf, at = journal.reserve(2 + positions.shape[0] + robots.shape[0])
        write_joint_state(buf, at, float(received), self._joints.header, positions, robots)

    def _record_target(
        self, journal: Journal, constraint: str, frame: str, jump: bool, p: Array, qt: Array
    ) -> None:
        """Append the TARGET record of the pose just accepted.

        Args:
            journal: the journal.
            constraint: the target's constraint.
            frame: the pose's frame as received.
            jump: the jump as asked.
            p: (3,) the position as received [m].
            qt: (4,) the quaternion (x, y, z, w) as received.
        """
        st = self._targets[constraint]
        buf, at = journal.reserve(12)
        index, code = self._stream_index[constraint], self._frame_code(frame)
        write_target(buf, at, index, st.stamp, st.header, code, 1.0 if jump else 0.0, p, qt)

    def _record_odometry(self, journal: Journal, values: Array) -> None:
        """Append the ODOMETRY record of the odometry just accepted (``values`` as received)."""
        odom = self._odom
        rec = journal.begin(Code.ODOMETRY, 15)
        rec[0], rec[1] = odom.stamp, odom.header
        rec[2:15] = values

    def _record_twist(
        self,
        journal: Journal,
        code: Code,
        constraint: str,
        frame: str,
        twist: Array,
        received: float,
        header_stamp: float | None,
    ) -> None:
        """Append a TWIST or JOG record: ``twist`` (6,) as received, in ``frame``'s axes."""
        buf, at = journal.reserve(10)
        index, header = self._stream_index[constraint], stamp_value(header_stamp)
        frame_code = self._frame_code(frame)
        write_twist(buf, at, float(code), index, float(received), header, frame_code, twist)

    def _record_tick(self, journal: Journal, now: float, out: StepOutput) -> None:
        """Append the TICK record of ``out`` (what the tick consumed and decided).

        One compiled call (:func:`._journal_kernels.write_tick`) after the targets' scalars
        are copied to the work array.
        """
        meta, j = self._tick_meta, 0
        for st in self._targets.values():
            meta[j], meta[j + 1], meta[j + 2] = st.source, st.stamp, st.header
            meta[j + 3] = st.ref.active
            j += 4
        js = self._joints
        buf, at = journal.reserve(self._tick_len)
        write_tick(
            buf,
            at,
            float(now),
            STATUS_CODE[out.status],
            out.publish,
            float(journal.revision),
            js.stamp,
            js.header,
            out.status is Status.ACTIVE or out.result is not None,
            self._q,
            out.qdot,
            self._tick_meta,
            self._tick_arrays,
        )


__all__ = ["Journaling"]
