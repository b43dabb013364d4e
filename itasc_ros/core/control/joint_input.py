"""The joint-state input: positions mapped by name, checked, kept while good (ROS-free).

A joint state lists positions by name, in any order, with extra joints: the commanded joints'
positions (:attr:`JointStateInput.q`) are read through an index cached per name list, and the
joints the controller holds but does not command update the positions at which its tree holds
them. A bad message is refused whole, naming the reason; the last good state is kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled_call import entry_point
from ..errors import InputError
from ..kinematics._kernels import gather_within
from ..kinematics.tree import KinematicTree
from ._input_kernels import REFUSED, take_joint_state
from ._packed import JS_HAS_STATE, JS_HEADER, JS_INTERVAL, JS_ORDER, JS_SIZE, JS_STAMP
from .journal import stamp_value
from .recorder import NO_ROOM
from .streams import F8, HUGE, StampOrder, as_array

Array = NDArray[np.float64]


INTERVAL_FILTER = 0.05
"""Weight of the newest reception interval in :attr:`JointStateInput.interval` [-]."""


class JointStateInput:
    """The last good joint state of the commanded joints, and of the held ones.

    Args:
        tree: the controller's view of the tree (it holds the joints it does not command).
        q_full: (n_all,) positions of every movable joint (URDF order) at which ``tree`` holds
            the joints not commanded; updated in place by the joint states.
        implicit: the first commanded joints that no joint state gives (a commanded mobile
            base's virtual joints): always at position zero.

    Attributes:
        q: (n,) positions [rad or m] of the commanded joints, in ``tree.joint_names`` order.
        has_state: a joint state was accepted.
        stamp: reception time [s] of the last accepted joint state (-inf before the first).
        stamps: (n,) each commanded joint's: ``stamp``, or its robot's own reception time
            (several robots); ``inf`` for the implicit joints (never measured, never late).
        interval: the usual interval between joint states [s]: their reception intervals
            filtered (:data:`INTERVAL_FILTER`), each at most ``input_timeout``.
        header: its header stamp [s] (NaN: unstamped).
        order: the header stamps' :class:`StampOrder`.
    """

    def __init__(self, tree: KinematicTree, q_full: Array, implicit: int = 0) -> None:
        self._tree = tree
        commanded = tree.joint_names
        self._implicit = implicit
        self._names = commanded[implicit:]  # commanded and measured, in command order
        self._all = tree.all_joint_names
        self._held = [j for j in self._all if j not in commanded]
        self._q_full = q_full
        n = len(self._names)
        self.q = np.zeros(implicit + n)
        # (n,) each commanded joint's state's reception time; the implicit joints are never late
        self.stamps = np.full(implicit + n, -math.inf)
        self.stamps[:implicit] = math.inf
        # packed: has a state, its reception time [s], its header stamp [s], the usual interval
        # [s], the stamp order (:mod:`._packed`' layout)
        self.s = np.zeros(JS_SIZE)
        self.has_state = False
        self.interval = 0.0  # [s] the joint states' usual interval (0 before two)
        self.stamp = -math.inf
        self.header = math.nan
        self.order = StampOrder(self.s[JS_ORDER : JS_ORDER + 3])
        self._names_cache: list[str] | None = None
        self._idx = np.zeros(n, dtype=np.int64)  # message index of each commanded joint
        self._held_idx: list[tuple[int, int]] = []  # (message index, q_full index) of held
        self._cmd_in_all = np.array([self._all.index(j) for j in commanded], dtype=int)
        self._held_in_all = np.array([self._all.index(j) for j in self._held], dtype=int)
        self._q_all = np.zeros(len(self._all))  # work array: positions of every joint
        self._gathered = np.zeros(len(self._names))  # work array: a message's commanded ones
        self._commands_all = commanded == self._all
        #: :attr:`q` holds every movable joint's position, URDF order (a record's positions)
        self.whole = self._commands_all
        # take_joint_state's one variant (its explicit signature), called without dispatch
        self._take = entry_point(take_joint_state)

    def accept(
        self,
        names: Sequence[str],
        positions: ArrayLike,
        received: float,
        header_stamp: float | None,
        timeout: float,
        reject: Callable[[str], InputError],
        buf: Array = NO_ROOM,
        at: int = -1,
    ) -> bool:
        """Take a joint state (see :meth:`~itasc_ros.core.control.Controller.set_joint_state`).

        Args:
            names: joint names of the message.
            positions: one position per name [rad or m].
            received: reception time [s].
            header_stamp: the message's own stamp [s], or None.
            timeout: ``input_timeout`` [s] (for the stamp order).
            reject: reason -> the :class:`InputError` to raise (the caller counts
                rejections).
            buf: a journal's buffer, with room for the state's JOINT_STATE record at ``at``
                (every position, URDF order; no robot stamps) when ``at`` >= 0 and
                :attr:`whole`.
            at: where that record goes; -1: none.

        Returns:
            True when the state's JOINT_STATE record was written at ``at``.

        Raises:
            InputError: the reason; nothing is changed.
        """
        if (
            type(names) is list
            and names == self._names_cache
            and type(positions) is np.ndarray
            and positions.ndim == 1
            and positions.dtype is F8
            and positions.shape[0] == len(names)
            and type(received) is float
            and (header_stamp is None or type(header_stamp) is float)
            and not self._held_idx
        ):  # the usual state: taken in one compiled call, else refused below with its reason
            stamped = header_stamp is not None
            taken = self._take(
                positions, self._idx, HUGE, self._gathered, self.q, self._implicit,
                self.stamps, self.s, received, header_stamp if stamped else 0.0, stamped,
                timeout, INTERVAL_FILTER, buf, at if self.whole else -1,
            )  # fmt: skip
            if taken != REFUSED:
                return at >= 0 and self.whole
        if type(names) is not list:
            names = list(names)
        # a float64 vector as it is; anything else converted (or refused)
        pos = as_array(positions, "joint state positions", reject)
        if pos.shape[0] != len(names):
            raise reject(f"joint state has {len(names)} names but {pos.shape[0]} positions")
        if not math.isfinite(received):
            raise reject(f"joint state reception time {received!r} is not finite")
        if names != self._names_cache:  # compared by value: a caller may reuse its list
            self._map_names(list(names), reject)
        q = self._gathered  # the commanded joints' positions, checked in one compiled call
        if not gather_within(pos, self._idx, HUGE, q):
            raise reject(self._unusable(q))
        why = self.order.check(header_stamp, received, timeout)
        if why:
            raise reject(f"joint state {why}")
        self.q[self._implicit :] = q
        if self._held_idx:
            self._hold(pos)
        if self.has_state:  # the states' usual interval: a filtered mean of the last ones
            gap = min(max(float(received) - self.stamp, 0.0), timeout)
            if self.interval == 0.0:  # the first interval: the estimate starts there
                self.interval = gap
            else:
                self.interval += INTERVAL_FILTER * (gap - self.interval)
        self.has_state = True
        self.stamp = float(received)
        self.stamps[self._implicit :] = self.stamp
        self.header = stamp_value(header_stamp)
        self.order.accept(header_stamp, received)
        return False

    @property
    def has_state(self) -> bool:
        """A joint state was accepted."""
        return self.s.item(JS_HAS_STATE) != 0.0

    @has_state.setter
    def has_state(self, value: bool) -> None:
        self.s[JS_HAS_STATE] = 1.0 if value else 0.0

    @property
    def stamp(self) -> float:
        """Reception time [s] of the last accepted joint state (-inf before the first)."""
        return self.s.item(JS_STAMP)

    @stamp.setter
    def stamp(self, value: float) -> None:
        self.s[JS_STAMP] = value

    @property
    def header(self) -> float:
        """Its header stamp [s] (NaN: unstamped)."""
        return self.s.item(JS_HEADER)

    @header.setter
    def header(self, value: float) -> None:
        self.s[JS_HEADER] = value

    @property
    def interval(self) -> float:
        """The joint states' usual interval [s] (0 before two)."""
        return self.s.item(JS_INTERVAL)

    @interval.setter
    def interval(self, value: float) -> None:
        self.s[JS_INTERVAL] = value

    def _unusable(self, q: Array) -> str:
        """Why positions ``q`` (n,) of the commanded joints are refused: NaN/Inf, or huge."""
        finite = np.isfinite(q)
        bad = [self._names[i] for i in np.flatnonzero(~finite)]
        if bad:
            return f"joint state has non-finite positions for {bad}"
        huge = [self._names[i] for i in np.flatnonzero(np.abs(q) > HUGE)]
        return f"joint state has huge positions (> {HUGE:g}) for {huge}"

    def _hold(self, pos: Array) -> None:
        """Hold the joints not commanded at the message's positions ``pos`` (usable ones)."""
        changed = False
        for i_msg, i_full in self._held_idx:
            v = pos[i_msg]
            if abs(v) <= HUGE and v != self._q_full[i_full]:
                self._q_full[i_full] = v
                changed = True
        if changed:
            self._tree.set_fixed_positions(self._q_full)

    def _map_names(self, names: list[str], reject: Callable[[str], InputError]) -> None:
        """Cache the message index of each joint for this list of names."""
        index: dict[str, int] = {}
        dup: list[str] = []
        for i, n in enumerate(names):
            if n in index:
                dup.append(n)
            index[n] = i
        needed = [n for n in dup if n in self._names or n in self._held]
        if needed:
            raise reject(f"joint state lists {needed} more than once")
        missing = [j for j in self._names if j not in index]
        if missing:
            raise reject(
                f"joint state lacks joints {missing}; commanded joints are: "
                + ", ".join(self._names)
            )
        self._idx[:] = [index[j] for j in self._names]
        self._held_idx = [(index[j], self._all.index(j)) for j in self._held if j in index]
        self._names_cache = names

    def head_into(self, out: Array) -> None:
        """Write the SNAPSHOT's (6,) head of the state: has_state, stamp, header, order (3,)."""
        out[0], out[1], out[2] = self.has_state, self.stamp, self.header
        self.order.state_into(out[3:6])

    def restore(self, head: Array, q_all: Array, interval: float) -> None:
        """Set the state from a SNAPSHOT (the inverse of :meth:`head_into` and the positions).

        Args:
            head: (6,) as :meth:`head_into` wrote it.
            q_all: (n_all,) every joint's position, URDF order (:meth:`all_positions`).
            interval: the joint states' usual interval [s].
        """
        self.has_state, self.stamp, self.header = bool(head[0]), float(head[1]), float(head[2])
        self.order.state_from(head[3:6])
        self.set_all_positions(q_all)
        self.stamps[self._implicit :] = self.stamp  # each robot's own: RobotGroups.joint_stamps
        self.interval = float(interval)

    def all_positions(self) -> Array:
        """(n_all,) positions of every movable joint (URDF order) as the controller has them.

        The returned array is reused: read it before the next call.
        """
        if self._commands_all:
            return self.q  # every joint commanded, in URDF order
        q = self._q_all
        q[:] = self._q_full
        q[self._cmd_in_all] = self.q
        return q

    def set_all_positions(self, q_all: Array) -> None:
        """Set the positions from ``q_all`` (n_all,) in URDF order (the inverse of the above)."""
        self.q[:] = q_all[self._cmd_in_all]
        if self._held_in_all.size:
            self._q_full[self._held_in_all] = q_all[self._held_in_all]
            self._tree.set_fixed_positions(self._q_full)


__all__ = ["JointStateInput"]
