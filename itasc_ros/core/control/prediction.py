"""StatePrediction: the joint positions a tick solves at while the joint states age.

A joint state is up to one control period old when a tick reads it: the feedback is designed
for that. When it is later (a delayed message, a robot whose driver paused, the moments before
the stale stop), the robot has gone on moving with the commands it was sent, and a tick that
solved at the frozen state would see the task's error grow by the motion it does not see and
ask for more: the commands grew (measured over DDS: 1.23x the last before the stop; two arms
holding a box sped up and their hands drifted 18 mm apart). The prediction advances each joint
from its last measured position by the commands sent since, so that a late state gives the
commands an ideal robot would have needed, and no more.

A joint's state is late once older than ``expected``, the age a state reaches in the normal
course (:data:`LATE_AFTER` times the larger of the control period and the joint states' usual
interval: a robot may publish its states slower than the node ticks). Every joint is taken at
one instant ``T``: the freshest joint's state (several robots: the robot whose state arrived
last), or ``now - expected`` when every state is late; a joint whose state is older is
predicted to it, ``q = q_measured + integral of the command over [t_state, T]``, with
``t_state`` the reception time of the joint's state. So a single robot's joints are as measured
until its state becomes late and continuous then, and several robots are compared at one
instant: two arms holding a box whose states arrive out of phase (a few milliseconds apart,
each robot's driver on its own clock) or one of them delayed see each other where they are,
not where one was a moment ago. A new state starts its joints' prediction again.

A prediction is a model of the robot, not a measurement: while a state is late, a command is
also never larger (its norm) than the last one sent on a state that was not
(:meth:`StatePrediction.cap`), so that an unrefreshed state never speeds the robot up.

A robot whose velocity servos lag (``actuator_lag`` ``tau``: each joint's velocity ``v``
follows its command ``u`` as ``tau v' + v = u``) is solved at where its joints head for,
``z = q + tau v`` (:meth:`StatePrediction.lead`): ``z' = v + tau v' = u``, so ``z`` moves
exactly as an ideal robot commanded with ``u`` would, and the tick's feedback and limits act on
an ideal robot again. ``v`` is modelled from the commands sent (the same first-order lag, exact
over each tick's interval), not read from the joint states' velocities, which a driver may
filter, delay or leave out.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

Array = NDArray[np.float64]

LATE_AFTER = 1.5
"""A joint state is late once older than this many control periods or joint-state intervals."""

#: Values of a :class:`StatePrediction`'s state in a journal snapshot, per joint and in all.
SNAPSHOT_PER_JOINT = 5
SNAPSHOT_EXTRA = 3


#: The rows of a :class:`StatePrediction`'s (6, n) state: the tick's positions, the command
#: sent, the modelled velocity, and each joint's prediction (the stamp it started from, the
#: instant it reaches, the motion predicted since).
Q, SENT, VELOCITY, BASE, UPTO, OFFSET = range(6)
#: Its (3,) scalars: the lateness and the instant of the last tick (:func:`predict`), the
#: norm of the last command published while no state was late.
LATE, INSTANT, FRESH_NORM = range(3)


@njit(cache=True, nogil=True)
def predict(state, values, measured, stamps, now, interval, period):  # pragma: no cover
    """:func:`advance_rows` on a prediction's (6, n) ``state``; lateness, instant into ``values``.

    A state is late once older than :data:`LATE_AFTER` times the larger of ``period`` and the
    joint states' usual ``interval`` [s] (0 before two states: none is judged late).
    """
    expected = LATE_AFTER * max(period, interval) if interval > 0.0 else math.inf
    values[LATE], values[INSTANT] = advance_rows(
        state[Q], measured, stamps, state[BASE], state[UPTO], state[OFFSET], state[SENT], now,
        expected,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def head_for(state, lag, dt):  # pragma: no cover - compiled
    """:func:`lead` on a prediction's (6, n) ``state`` (``lag`` 0: velocity = command)."""
    if lag > 0.0:
        lead(state[Q], state[VELOCITY], state[SENT], lag, dt)
    else:
        state[VELOCITY, :] = state[SENT]


@njit(cache=True, nogil=True)
def advance_rows(q, measured, stamps, base, upto, offset, cmd, now, expected):  # pragma: no cover
    """One tick of :class:`StatePrediction` in place; returns (largest lateness, instant) [s].

    Every joint is taken at one instant: the freshest joint's state, or ``now - expected`` when
    every state is late (older than ``expected``). A joint whose state is older is advanced from
    it by the command ``cmd`` (the one in force since the last tick stands for the interval);
    the freshest are as measured.

    Args:
        q: (n,) output: the tick's joint positions.
        measured: (n,) the last measured positions.
        stamps: (n,) each joint's state's reception time [s] (inf: never measured).
        base: (n,) in/out: the stamp each joint's ``offset`` started from.
        upto: (n,) in/out: the instant each joint's ``offset`` reaches [s].
        offset: (n,) in/out: the motion predicted since the joint's state.
        cmd: (n,) the command the robot follows [rad/s or m/s].
        now: this tick's time [s].
        expected: the age of a state that is not late [s].
    """
    n = q.shape[0]
    late_at = now - expected  # a state older than this is late
    target = late_at
    for j in range(n):
        if math.isfinite(stamps[j]) and stamps[j] > target:
            target = stamps[j]
    late = 0.0
    for j in range(n):
        if stamps[j] != base[j]:  # a new state: predict from it
            base[j] = stamps[j]
            upto[j] = stamps[j]
            offset[j] = 0.0
        if math.isfinite(stamps[j]) and stamps[j] < target:  # behind: advanced to the instant
            if target > upto[j]:
                offset[j] += cmd[j] * (target - upto[j])
                upto[j] = target
            if stamps[j] < late_at:
                late = max(late, late_at - stamps[j])
        q[j] = measured[j] + offset[j]
    return late, target


@njit(cache=True, nogil=True)
def lead(q, velocity, sent, lag, dt):  # pragma: no cover - compiled
    """One tick of a lagging robot's velocity model, then ``q += lag v`` (both in place).

    Args:
        q: (n,) in/out: the positions the tick solves at [rad or m].
        velocity: (n,) in/out: the joints' modelled velocity [rad/s or m/s].
        sent: (n,) the command in force since the last tick.
        lag: the servos' time constant [s] (> 0).
        dt: the time since the last tick [s].
    """
    keep = math.exp(-dt / lag) if dt > 0.0 else 1.0
    for j in range(q.shape[0]):
        velocity[j] = sent[j] + (velocity[j] - sent[j]) * keep
        q[j] += lag * velocity[j]


@njit(cache=True)
def norm(v):  # pragma: no cover - compiled
    """The Euclidean norm of ``v`` (n,), summed in order (a command's, for :meth:`cap`)."""
    s = 0.0
    for j in range(v.shape[0]):
        s += v[j] * v[j]
    return math.sqrt(s)


@njit(cache=True)
def cap_into(qdot, cap, out):  # pragma: no cover - compiled
    """``qdot`` (n,) scaled into ``out`` (n,) to the norm ``cap`` [rad/s] when it is larger.

    The rule of :meth:`StatePrediction.cap` (``cap`` 0: none) and of the tick's compiled
    command.

    Returns:
        True when ``out`` holds the scaled command, False when ``qdot`` stands (``out``
        untouched).
    """
    if cap == 0.0:
        return False
    size = norm(qdot)
    if size <= cap:
        return False
    scale = cap / size
    for j in range(qdot.shape[0]):
        out[j] = qdot[j] * scale
    return True


@njit(cache=True)
def take_sent(sent, qdot):  # pragma: no cover - compiled
    """``sent`` = ``qdot`` (n,); returns its :func:`norm` (one call for a published command)."""
    for j in range(qdot.shape[0]):
        sent[j] = qdot[j]
    return norm(qdot)


class StatePrediction:
    """The tick's joint positions: the measured ones, advanced by the commands to one instant.

    Args:
        n: number of commanded joints.
        period: the nominal control period [s].

    Attributes:
        q: (n,) the positions the tick solves at [rad or m].
        sent: (n,) the last command published [rad/s or m/s] (what the robot follows).
        velocity: (n,) the joints' modelled velocity behind a lagging servo (:meth:`lead`).
        state: (6, n) the packed rows (:data:`Q`, :data:`SENT`, :data:`VELOCITY`, each
            joint's prediction), the views above.
        values: (3,) the packed scalars (:data:`LATE`, :data:`INSTANT`, :data:`FRESH_NORM`),
            read by :attr:`late`, :attr:`instant`, :attr:`fresh_norm`.
    """

    def __init__(self, n: int, period: float) -> None:
        self.period = float(period)
        # one record each: a tick's compiled call takes them whole
        self.state, self.values = np.zeros((6, n)), np.zeros(3)
        self.q, self.sent, self.velocity = self.state[Q], self.state[SENT], self.state[VELOCITY]
        self._base, self._upto = self.state[BASE], self.state[UPTO]
        self._offset = self.state[OFFSET]
        self._base[:] = math.nan
        self.values[INSTANT] = -math.inf
        self.advance(self.q.copy(), np.full(n, -math.inf), 0.0, 0.0)  # compiled (or loaded) now
        self.lead(1.0, 0.0)
        self.lead(0.0, 0.0)
        take_sent(self.velocity, self.sent)  # both zero: compiled (or loaded) now
        norm(self.sent)  # and cap's, called only once a state is late: never in a tick
        self.reset()

    def advance(self, measured: Array, stamps: Array, now: float, interval: float) -> Array:
        """The positions at ``now`` [s] from the measured ones (n,) and their stamps (n,) [s].

        ``interval``: the joint states' usual interval [s] (a state is late once older than
        :data:`LATE_AFTER` times the larger of it and the control period).
        """
        predict(self.state, self.values, measured, stamps, now, interval, self.period)
        return self.q

    def lead(self, lag: float, dt: float) -> Array:
        """The positions the joints head for behind servos that lag (see the module).

        Moves the modelled velocity on by ``dt`` [s] (the command sent through the lag
        ``lag`` [s]), then :attr:`q` by ``lag`` times it, in place. ``lag`` 0: the joints
        follow at once; :attr:`q` is left as it is.
        """
        head_for(self.state, lag, dt)
        return self.q

    @property
    def late(self) -> float:
        """How far beyond its expected age the oldest joint state was at the last tick [s].

        0: none late, the prediction was the measured state.
        """
        return self.values.item(LATE)

    @property
    def instant(self) -> float:
        """The reception time every joint was taken at, at the last tick [s].

        The freshest state's, or the time a state became late.
        """
        return self.values.item(INSTANT)

    @property
    def fresh_norm(self) -> float:
        """The norm of the last command published while no state was late [rad/s]."""
        return self.values.item(FRESH_NORM)

    def state_into(self, out: Array) -> None:
        """The prediction's state into ``out`` (5 n + 3,) (a journal snapshot's part)."""
        n = self.q.shape[0]
        out[:n] = self._base
        out[n : 2 * n] = self._upto
        out[2 * n : 3 * n] = self._offset
        out[3 * n : 4 * n] = self.sent
        out[4 * n : 5 * n] = self.velocity
        out[5 * n :] = (self.fresh_norm, self.late, self.instant)

    def state_from(self, s: Array) -> None:
        """Set the state from :meth:`state_into`'s values ``s`` (5 n + 3,)."""
        n = self.q.shape[0]
        self._base[:] = s[:n]
        self._upto[:] = s[n : 2 * n]
        self._offset[:] = s[2 * n : 3 * n]
        self.sent[:] = s[3 * n : 4 * n]
        self.velocity[:] = s[4 * n : 5 * n]
        self.values[FRESH_NORM], self.values[LATE], self.values[INSTANT] = s[5 * n : 5 * n + 3]

    def publish(self, qdot: Array) -> None:
        """The command ``qdot`` (n,) was published: the robot follows it from now on."""
        self.took(take_sent(self.sent, qdot))

    def took(self, size: float) -> None:
        """The rest of :meth:`publish` once a command of norm ``size`` [rad/s] became :attr:`sent`.

        For a caller whose own compiled call ran :func:`take_sent`.
        """
        if self.values.item(LATE) == 0.0:
            self.values[FRESH_NORM] = size

    @property
    def cap_norm(self) -> float:
        """The norm [rad/s] :meth:`cap` scales a larger command to; 0: none.

        None while no state is late, or when the robot starts from rest.
        """
        v = self.values
        return 0.0 if v.item(LATE) == 0.0 else v.item(FRESH_NORM)

    def cap(self, qdot: Array, out: Array) -> Array:
        """``qdot`` (n,), or while a state is late, scaled into ``out`` to :attr:`fresh_norm`.

        Returns ``qdot`` itself when nothing is late, when the last fresh command was zero (the
        robot starts from rest: the prediction holds its position) or ``qdot`` is not larger,
        else ``out``.
        """
        return out if cap_into(qdot, self.cap_norm, out) else qdot

    def reset(self) -> None:
        """Start again from the measured positions (a new model, a halt)."""
        self._base[:] = math.nan
        self._offset[:] = 0.0
        self.sent[:] = 0.0
        self.velocity[:] = 0.0
        self.values[FRESH_NORM] = 0.0


__all__ = [
    "LATE_AFTER",
    "SNAPSHOT_EXTRA",
    "SNAPSHOT_PER_JOINT",
    "StatePrediction",
    "advance_rows",
    "cap_into",
    "head_for",
    "lead",
    "norm",
    "predict",
    "take_sent",
]
