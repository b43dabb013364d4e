"""What the measuring process records of a run: command and joint-state times, bad commands."""

from __future__ import annotations

import array
import struct
from typing import Any

import numpy as np

from .stats import out_of_limits

#: Every this many joint states, the positions are kept for the tracking error [-].
TRACK_EVERY = 10


class Recorder:
    """Callbacks of this process: command and joint-state times (append only, whole run).

    Times are wall clock [s]. A command's arrival is its DDS reception timestamp, so this
    process's own delays do not count, and its publish time is the DDS source timestamp.
    """

    def __init__(self, n: int, velocity_limits: np.ndarray) -> None:
        self.n = n
        self.velocity_limits = velocity_limits
        self.cmd_received = array.array("d")  # [s] arrival (DDS reception) times
        self.cmd_sent = array.array("d")  # [s] publish (DDS source) times
        self.bad_commands = 0
        self.max_abs_ratio = 0.0  # largest |qdot| / limit seen [-]
        self.js_stamps = array.array("d")  # [s] header stamps
        self.track: list[tuple[float, np.ndarray]] = []  # every TRACK_EVERY-th (stamp, q)
        self.journal_messages = 0
        self.last_command = np.full(n, np.nan)  # (n,) the last command received [rad/s]

    def on_journal_raw(self, raw: bytes, info: Any = None) -> None:
        """A serialized journal message: counted, not read (a recorder writes the bytes)."""
        self.journal_messages += 1

    def _command(self, msg: Any, sent: float, received: float) -> None:
        self.cmd_received.append(received)
        self.cmd_sent.append(sent)
        qdot = np.asarray(msg.data, dtype=float)
        self.last_command = qdot
        if out_of_limits(qdot, self.n, self.velocity_limits):
            self.bad_commands += 1
        elif self.n:
            self.max_abs_ratio = max(
                self.max_abs_ratio, float(np.max(np.abs(qdot) / self.velocity_limits))
            )

    def longest_gap(self, t0: float, t1: float) -> float:
        """The longest time [s] between two commands' arrivals within ``[t0, t1]`` (wall clock).

        The window's edges count as arrivals: a loop silent from ``t0`` on has a gap too.
        """
        t = np.frombuffer(self.cmd_received, dtype=float)
        inside = np.sort(t[(t >= t0) & (t <= t1)])
        edges = np.concatenate(([t0], inside, [t1]))
        return float(np.max(np.diff(edges)))

    def on_command_info(self, msg: Any, info: Any) -> None:
        """A command with its message info (DDS ``source_timestamp``, ``received_timestamp``)."""
        self._command(msg, 1e-9 * info["source_timestamp"], 1e-9 * info["received_timestamp"])

    def on_joint_state_raw(self, raw: bytes, info: Any = None) -> None:
        """A serialized JointState: only the stamp is read, the message every TRACK_EVERY-th."""
        order = "<" if raw[1] == 1 else ">"  # CDR encapsulation: 0x0001 little endian
        sec, nanosec = struct.unpack_from(order + "iI", raw, 4)  # header.stamp comes first
        stamp = sec + 1e-9 * nanosec
        self.js_stamps.append(stamp)
        if len(self.js_stamps) % TRACK_EVERY == 0:
            from rclpy.serialization import deserialize_message
            from sensor_msgs.msg import JointState

            msg = deserialize_message(raw, JointState)
            self.track.append((stamp, np.asarray(msg.position, dtype=float)))


__all__ = ["TRACK_EVERY", "Recorder"]
