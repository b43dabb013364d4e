"""Motion limits: each tick's command changes only as fast as the joints' limits allow (ROS-free).

Per joint, in the ros2_control / MoveIt ``joint_limits`` convention: a velocity limit [rad/s or
m/s], an acceleration limit (speeding up), a deceleration limit (slowing down) and a jerk limit
(the change of acceleration per second). A limit that is not given is infinite.

:class:`MotionLimiter` turns the solver's velocity ``v_d`` into the command of this tick:

1. **Braking before position limits.** A joint may move toward its limit only as fast as it can
   still stop there: ``v h + v^2 / (2 d') <= distance`` with half the deceleration limit,
   ``d' = d / 2``, ``h`` the time the command may be held plus the time its acceleration needs
   to reach ``d'`` under the jerk limit. The whole ``v_d`` is scaled (its direction kept), and
   a joint above that speed decelerates whatever the common fraction below allows the others.
2. **Acceleration and jerk.** The change ``e = v_d - v`` of each joint is made with an
   acceleration within the jerk window ``[a - J dt, a + J dt]``, the acceleration or
   deceleration limit and, with a jerk limit, no faster than lets the acceleration ramp back to
   zero before ``v_d`` is passed (no overshoot). The accelerations of all joints are one common
   fraction ``s`` of ``e / dt``, so the change keeps its direction, as the velocity limits
   already do; a joint whose jerk window cannot take that fraction is held to its window.
3. **Guards.** The command never exceeds the velocity limits, never takes a joint past a
   position limit within the tick, and is finite (the limits win over acceleration and jerk,
   which only happens when a limit itself changed).

The arithmetic is one compiled kernel working in preallocated arrays (no allocation per tick).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ..kinematics._kernels import any_nonzero
from .joint_limits import JointLimits

Array = NDArray[np.float64]

INSIDE = 1.0 - 1e-9
"""The limiter works this fraction of the limits (rounding stays inside them)."""


@njit(cache=True)
def _braking_speed(dist: float, d: float, lag: float) -> float:  # pragma: no cover - compiled
    """Largest speed toward a limit ``dist`` away that still stops there [rad/s].

    Moving at ``v`` for ``lag`` seconds, then braking at ``d``: ``v lag + v^2 / (2 d) <= dist``.
    """
    if dist <= 0.0:
        return 0.0
    if math.isinf(d):
        return dist / lag
    return d * (-lag + math.sqrt(lag * lag + 2.0 * dist / d))


@njit(cache=True)
def _ramp_cap(e: float, jerk: float, dt: float) -> float:  # pragma: no cover - compiled
    """Largest acceleration toward a velocity ``e`` away that can still ramp to zero in time.

    Within half a tick's jerk of ``e / dt`` the change is made at once (and the acceleration
    returns to zero the tick after), so that the velocity arrives exactly.
    """
    if math.isinf(jerk) or e / dt <= 0.5 * jerk * dt:
        return e / dt
    return jerk * (-1.5 * dt + math.sqrt(2.25 * dt * dt + 2.0 * e / jerk))


@njit(cache=True)
def _window(
    v: float,
    a: float,
    q: float,
    lower: float,
    upper: float,
    amax: float,
    dmax: float,
    jmax: float,
    dt: float,
    lag0: float,
) -> tuple[float, float]:  # pragma: no cover - compiled
    """One joint's acceleration window [rad/s^2] this tick: limits, jerk, braking curves.

    The acceleration (speeding up) or deceleration limit, the jerk window around ``a`` and, on
    the braking curve before each position limit (half the deceleration limit, held ``lag0``
    plus the jerk's ramp), no faster than still stops there. Returns (lowest, highest).
    """
    jd = jmax * dt
    up = amax if v >= 0.0 else dmax  # positive acceleration: speeding up if v >= 0
    down = amax if v <= 0.0 else dmax
    lo = max(-down, a - jd)
    hi = min(up, a + jd)
    d = 0.5 * min(dmax, amax)  # on the braking curve, whatever the others do
    if not math.isinf(d):
        lag = lag0 + (d / jmax if not math.isinf(jmax) else 0.0)
        if not math.isinf(upper):
            hi = max(min(hi, (_braking_speed(upper - q, d, lag) - v) / dt), lo)
        if not math.isinf(lower):
            lo = min(max(lo, (-_braking_speed(q - lower, d, lag) - v) / dt), hi)
    return lo, hi


@njit(cache=True)
def limit_motion(  # pragma: no cover - compiled
    v_d: Array,
    v: Array,
    a: Array,
    q: Array,
    lower: Array,
    upper: Array,
    vmax: Array,
    amax: Array,
    dmax: Array,
    jmax: Array,
    dt: float,
    horizon: float,
    lo: Array,
    hi: Array,
    work: Array,
    sync: bool = True,
) -> float:
    """One tick of :class:`MotionLimiter` (see the module docstring); updates ``v`` and ``a``.

    Args:
        v_d: (n,) the solver's velocity (within ``vmax``).
        v: (n,) in: the last command; out: this tick's.
        a: (n,) in: the last command's acceleration; out: this tick's.
        q: (n,) joint positions.
        lower: (n,) lower position limits (-inf: none).
        upper: (n,) upper position limits (inf: none).
        vmax: (n,) velocity limits.
        amax: (n,) acceleration limits (inf: none).
        dmax: (n,) deceleration limits (inf: none).
        jmax: (n,) jerk limits (inf: none).
        dt: the tick's time step [s] (> 0).
        horizon: how long the command may be held [s] (the next tick may be late): a joint
            must not pass a position limit within it.
        lo: (n,) work array.
        hi: (n,) work array.
        work: (n,) work array.
        sync: True: one common fraction of the change for all joints (its direction kept);
            False: each joint makes as much of its change as its own limits allow (a stop:
            every joint brakes at its own limit).

    Returns:
        The common fraction ``s`` of the change made this tick (1: all of it).
    """
    n = v.shape[0]
    # 1. braking before the position limits: scale v_d as a whole
    scale = 1.0
    for j in range(n):
        d = 0.5 * min(dmax[j], amax[j])
        if math.isinf(d):
            continue
        lag = horizon + (d / jmax[j] if not math.isinf(jmax[j]) else 0.0)
        if v_d[j] > 0.0 and not math.isinf(upper[j]):
            vb = _braking_speed(upper[j] - q[j], d, lag)
            if v_d[j] > vb:
                scale = min(scale, max(vb, 0.0) / v_d[j])
        elif v_d[j] < 0.0 and not math.isinf(lower[j]):
            vb = _braking_speed(q[j] - lower[j], d, lag)
            if -v_d[j] > vb:
                scale = min(scale, max(vb, 0.0) / -v_d[j])
    for j in range(n):
        work[j] = v_d[j] * scale - v[j]  # e: the change to make
    # 2. the acceleration window of each joint, then one common fraction of e / dt
    s_lo, s_hi = 0.0, 1.0
    for j in range(n):
        e = work[j]
        jd = jmax[j] * dt
        up = amax[j] if v[j] >= 0.0 else dmax[j]
        down = amax[j] if v[j] <= 0.0 else dmax[j]
        lo[j], hi[j] = _window(
            v[j], a[j], q[j], lower[j], upper[j], amax[j], dmax[j], jmax[j], dt, horizon
        )
        if e > 0.0:
            hi[j] = min(hi[j], max(_ramp_cap(e, jmax[j], dt), 0.0))
        elif e < 0.0:
            lo[j] = max(lo[j], min(-_ramp_cap(-e, jmax[j], dt), 0.0))
        else:
            lo[j] = max(lo[j], min(0.0, hi[j]))
            hi[j] = min(hi[j], max(0.0, lo[j]))
        if hi[j] < lo[j]:  # conflicting bounds: their middle, within the jerk window and limits
            m = min(max(0.5 * (lo[j] + hi[j]), a[j] - jd, -down), a[j] + jd, up)
            lo[j] = hi[j] = m
        if e != 0.0:
            r = e / dt
            f1, f2 = lo[j] / r, hi[j] / r
            if f1 > f2:
                f1, f2 = f2, f1
            s_lo = max(s_lo, f1)
            s_hi = min(s_hi, f2)
    s = s_hi if s_hi >= s_lo else max(min(s_hi, 1.0), 0.0)
    if not sync:
        s = 1.0
    for j in range(n):
        acc = min(max(s * work[j] / dt, lo[j]), hi[j])
        nv = v[j] + acc * dt
        # 3. guards: velocity limit, position limit within the tick, finite
        if nv > vmax[j]:
            nv = vmax[j]
        elif nv < -vmax[j]:
            nv = -vmax[j]
        if not math.isinf(upper[j]) and q[j] + nv * horizon > upper[j]:
            nv = max((upper[j] - q[j]) / horizon, 0.0)
        if not math.isinf(lower[j]) and q[j] + nv * horizon < lower[j]:
            nv = min((lower[j] - q[j]) / horizon, 0.0)
        if not math.isfinite(nv):
            nv = 0.0
        a[j] = (nv - v[j]) / dt
        v[j] = nv
    return s


@njit(cache=True)
def motion_box(  # pragma: no cover - compiled
    v: Array,
    a: Array,
    q: Array,
    lower: Array,
    upper: Array,
    vmax: Array,
    amax: Array,
    dmax: Array,
    jmax: Array,
    dt: float,
    horizon: float,
    hold: float,
    lo: Array,
    hi: Array,
) -> None:
    """The box ``lo <= q' <= hi`` of this tick's command that the limits allow, per joint.

    The same windows as :func:`limit_motion`, as bounds on the command instead of a change
    to scale: from the last command ``v`` and its acceleration ``a``, the acceleration (or
    deceleration) and jerk limits over the nominal period ``dt``, the braking curve before the
    position limits (half the deceleration limit, held ``horizon`` plus the jerk's ramp), the
    velocity limit and the position limit within ``horizon``. A solve inside this box gives a
    command :func:`limit_motion` passes unchanged (no acceleration ramp-down cap aside). Where
    the limits conflict (a limit changed live), the acceleration window wins: the command
    never jumps.

    Args:
        v: (n,) the last published command [rad/s].
        a: (n,) its acceleration [rad/s^2].
        q: (n,) joint positions.
        lower: (n,) lower position limits (-inf: none).
        upper: (n,) upper position limits (inf: none).
        vmax: (n,) velocity limits.
        amax: (n,) acceleration limits (inf: none).
        dmax: (n,) deceleration limits (inf: none).
        jmax: (n,) jerk limits (inf: none).
        dt: the nominal control period [s].
        horizon: how long the command may be held before the next tick [s].
        hold: how long the command may go on before a stop ramps it down [s] (the inputs'
            timeout): the braking curve's lag, so that a joint still stops before its limit
            when its joint states go stale now.
        lo: (n,) output: the box's lower side [rad/s].
        hi: (n,) output: the box's upper side [rad/s].
    """
    n = v.shape[0]
    for j in range(n):
        jd = jmax[j] * dt
        up = amax[j] if v[j] >= 0.0 else dmax[j]
        down = amax[j] if v[j] <= 0.0 else dmax[j]
        alo, ahi = _window(
            v[j], a[j], q[j], lower[j], upper[j], amax[j], dmax[j], jmax[j], dt,
            max(horizon, hold),
        )  # fmt: skip
        if not math.isinf(jmax[j]):  # the acceleration ramps back to 0 before the velocity limit
            ahi = max(min(ahi, max(_ramp_cap(vmax[j] - v[j], jmax[j], dt), 0.0)), alo)
            alo = min(max(alo, min(-_ramp_cap(vmax[j] + v[j], jmax[j], dt), 0.0)), ahi)
        if ahi < alo:
            m = min(max(0.5 * (alo + ahi), a[j] - jd, -down), a[j] + jd, up)
            alo = ahi = m
        wlo = v[j] + alo * dt if not math.isinf(alo) else -math.inf
        whi = v[j] + ahi * dt if not math.isinf(ahi) else math.inf
        blo = -vmax[j]
        bhi = vmax[j]
        if not math.isinf(upper[j]):
            bhi = min(bhi, max((upper[j] - q[j]) / horizon, 0.0))
        if not math.isinf(lower[j]):
            blo = max(blo, min((lower[j] - q[j]) / horizon, 0.0))
        if whi < blo:  # the limits moved away faster than the joint may follow
            lo[j] = hi[j] = whi
        elif wlo > bhi:
            lo[j] = hi[j] = wlo
        else:
            lo[j] = max(wlo, blo)
            hi[j] = min(whi, bhi)


@njit(cache=True)
def braking_sides(  # pragma: no cover - compiled
    q: Array,
    lower: Array,
    upper: Array,
    amax: Array,
    dmax: Array,
    jmax: Array,
    horizon: float,
    hold: float,
    lo: Array,
    hi: Array,
    side: Array,
) -> None:
    """Mark the sides of a box ``[lo, hi]`` (n,) that :func:`motion_box`'s position bounds set.

    ``side[j]`` becomes +1 where ``hi[j]`` is at (or above) the joint's speed toward its upper
    limit that still stops there (the braking curve, held ``max(horizon, hold)`` plus the
    jerk's ramp) or that reaches it within ``horizon``; -1 likewise for ``lo`` and the lower
    limit; left as it is elsewhere. The arguments are :func:`motion_box`'s.
    """
    for j in range(q.shape[0]):
        d = 0.5 * min(dmax[j], amax[j])
        lag = max(horizon, hold) + (d / jmax[j] if not math.isinf(jmax[j]) else 0.0)
        if not math.isinf(upper[j]):
            pos = max((upper[j] - q[j]) / horizon, 0.0)
            if not math.isinf(d):
                pos = min(pos, _braking_speed(upper[j] - q[j], d, lag))
            if hi[j] >= pos - 1e-9 * max(1.0, abs(pos)):
                side[j] = 1.0
                continue
        if not math.isinf(lower[j]):
            neg = min((lower[j] - q[j]) / horizon, 0.0)
            if not math.isinf(d):
                neg = max(neg, -_braking_speed(q[j] - lower[j], d, lag))
            if lo[j] <= neg + 1e-9 * max(1.0, abs(neg)):
                side[j] = -1.0


@njit(cache=True)
def take_clipped(  # pragma: no cover - compiled
    qdot: Array,
    vmax: Array,
    out: Array,
    lo: Array,
    hi: Array,
    v: Array,
    a: Array,
    dt: float,
    active: bool,
) -> int:
    """A solve's ``qdot`` (n,) clipped to ``+-vmax`` into ``out``, taken as the last command.

    Returns -1 (``out`` undefined, nothing taken) when ``qdot`` has NaN or Inf; 1 when taken:
    without motion limits (``active`` False) ``out`` becomes ``v``, else as
    :func:`take_command` (``out`` within the box ``[lo, hi]``); 0 when ``out`` is outside the
    box by more than 1e-12 (nothing taken: the limiter's step makes the command).
    """
    n = qdot.shape[0]
    for j in range(n):
        c = qdot[j]
        if not math.isfinite(c):
            return -1
        out[j] = min(max(c, -vmax[j]), vmax[j])
    if not active:
        for j in range(n):
            v[j] = out[j]
        return 1
    return 1 if take_command(out, lo, hi, v, a, dt) else 0


@njit(cache=True)
def take_command(
    cmd: Array, lo: Array, hi: Array, v: Array, a: Array, dt: float
) -> bool:  # pragma: no cover - compiled
    """The take of :meth:`MotionLimiter.take_clipped`: a command inside the box becomes the last.

    ``cmd`` (n,) clipped into ``[lo, hi]`` becomes ``v``, its change over ``dt`` [s] ``a``;
    False (nothing changed) when a joint is outside by more than 1e-12.
    """
    n = cmd.shape[0]
    for j in range(n):
        if not (lo[j] - 1e-12 <= cmd[j] <= hi[j] + 1e-12):
            return False
    for j in range(n):
        c = min(max(cmd[j], lo[j]), hi[j])
        cmd[j] = c
        a[j] = (c - v[j]) / dt
        v[j] = c
    return True


def limit_ratios(
    t: Array, cmds: Array, limits: Sequence[JointLimits], period: float | None = None
) -> tuple[Array, Array]:
    """Per interval, the largest acceleration / limit and jerk / limit of a command sequence.

    The definitions of :func:`limit_motion`: the acceleration ``a_k = (v_k - v_{k-1}) / dt``
    against the acceleration limit when the joint speeds up from ``v_{k-1}`` and the
    deceleration limit when it slows down; the jerk ``(a_k - a_{k-1}) / dt`` against the jerk
    limit. ``dt`` is the nominal control ``period`` when given (what the controller promises:
    a ros2_control velocity controller applies each command at once, however late it
    comes), else the time between the commands.

    Args:
        t: (k,) command times [s], increasing.
        cmds: (k, n) the commands [rad/s].
        limits: (n,) the joints' limits.
        period: the nominal control period [s], or None.

    Returns:
        ((k - 1,) acceleration ratios, (k - 2,) jerk ratios); 0 where a joint has no limit.
    """
    amax = np.array([lim.max_acceleration for lim in limits])
    dmax = np.array([lim.max_deceleration for lim in limits])
    jmax = np.array([lim.max_jerk for lim in limits])
    dt = np.diff(t)[:, None] if period is None else np.full((max(len(t) - 1, 0), 1), period)
    acc = np.diff(cmds, axis=0) / dt
    prev = cmds[:-1]
    speeding_up = np.where(acc >= 0.0, prev >= 0.0, prev <= 0.0)
    bound = np.where(speeding_up, amax, dmax)
    acc_ratio = np.max(np.abs(acc) / bound, axis=1, initial=0.0)
    jerk = np.diff(acc, axis=0) / dt[1:]
    jerk_ratio = np.max(np.abs(jerk) / jmax, axis=1, initial=0.0)
    return acc_ratio, jerk_ratio


RECORD_ROWS = 8
"""Rows of :attr:`MotionLimiter.record` (n,) each: ``v``, ``a``, ``lower``, ``upper``,
``vmax``, ``amax``, ``dmax``, ``jmax`` (see :class:`MotionLimiter`)."""


class MotionLimiter:
    """The command's acceleration, deceleration and jerk limits, and braking before limits.

    Args:
        vmax: (n,) velocity limits (the solver's, already scaled by ``velocity_scale``): what
            the commands aim to keep.
        limits: (n,) per commanded joint, in order.
        lower, upper: (n,) position limits.
        vmax_hard: (n,) the limits no command exceeds (the URDF's, not scaled); default
            ``vmax``. After a live change lowers ``vmax``, a faster joint slows down to it at
            its deceleration limit rather than jump.
    """

    def __init__(
        self,
        vmax: Array,
        limits: Sequence[JointLimits],
        lower: Array,
        upper: Array,
        vmax_hard: Array | None = None,
    ) -> None:
        n = vmax.shape[0]
        # the limiter's state and limits as rows of one record, which a compiled solve reads
        # whole (:data:`RECORD_ROWS`); the named attributes are views of its rows
        self.record = np.zeros((RECORD_ROWS, n))
        rec = self.record
        self.v, self.a = rec[0], rec[1]  # [rad/s] the last command, [rad/s^2] its acceleration
        self.lower, self.upper, self.vmax = rec[2], rec[3], rec[4]
        self.amax, self.dmax, self.jmax = rec[5], rec[6], rec[7]
        self.vmax[:] = np.minimum(vmax, [lim.max_velocity for lim in limits])
        hard = self.vmax if vmax_hard is None else np.maximum(vmax_hard, vmax)
        self.vmax_hard = np.minimum(hard, [lim.max_velocity for lim in limits])
        # A hair inside the limits, so that rounding never shows a ratio of 1 + 1e-15
        self.amax[:] = np.array([lim.max_acceleration for lim in limits], dtype=float) * INSIDE
        self.dmax[:] = np.array([lim.max_deceleration for lim in limits], dtype=float) * INSIDE
        self.jmax[:] = np.array([lim.max_jerk for lim in limits], dtype=float) * INSIDE
        self.lower[:] = np.asarray(lower, dtype=float)
        self.upper[:] = np.asarray(upper, dtype=float)
        self.active = bool(np.isfinite(self.amax).any() or np.isfinite(self.jmax).any())
        self._lo = np.zeros(n)
        self._hi = np.zeros(n)
        self._work = np.zeros(n)
        self._free_lo = np.full(n, -np.inf)  # no position limits: the open-loop stop
        self._free_hi = np.full(n, np.inf)
        self._rest = np.zeros(n)
        self._saved_v = np.zeros(n)
        self._saved_a = np.zeros(n)

    @property
    def moving(self) -> bool:
        """True while the last command is not all zero."""
        return bool(any_nonzero(self.v))

    def step(self, v_d: Array, q: Array, dt: float, horizon: float, out: Array) -> float:
        """The command for the solver's velocity ``v_d`` (n,) at ``q``; written into ``out``.

        Args:
            v_d: (n,) the solver's velocity.
            q: (n,) joint positions.
            dt: time since the last command [s].
            horizon: how long this command may be held [s] (e.g. two control periods).
            out: (n,) the command.

        Returns:
            The fraction of the change made this tick (1.0: all; below: limited).
        """
        s = limit_motion(
            v_d, self.v, self.a, q, self.lower, self.upper, self.vmax_hard, self.amax,
            self.dmax, self.jmax, max(dt, 1e-6), max(horizon, dt, 1e-6), self._lo, self._hi,
            self._work, True,
        )  # fmt: skip
        out[:] = self.v
        return s

    def take_clipped(
        self, qdot: Array, vmax: Array, out: Array, lo: Array, hi: Array, dt: float
    ) -> int:
        """A solve's ``qdot`` (n,) clipped to ``+-vmax`` into ``out`` and taken (one call).

        Returns -1 when ``qdot`` is not finite (nothing taken), 1 when ``out`` became the last
        command (inside this tick's box ``lo <= out <= hi``, or without motion limits), 0 when
        it is outside the box (then :meth:`step` makes the command); see :func:`take_clipped`.
        """
        return int(
            take_clipped(qdot, vmax, out, lo, hi, self.v, self.a, max(dt, 1e-6), self.active)
        )

    def stop(self, dt: float, out: Array, sync: bool = False) -> None:
        """One step of the ramp of the last command to zero, open loop (no joint state needed).

        Each joint slows down at its own deceleration and jerk limits over ``dt`` [s] (not in
        step with the others: the braking curves before the position limits are per joint); the
        position limits are not consulted (the ramp only slows down). A residue of rounding
        (below 1e-12) is made exactly zero, so that the ramp ends; its acceleration is kept.

        Args:
            dt: the nominal control period [s].
            out: (n,) output: the command [rad/s].
            sync: every joint slows down by one common fraction of its speed (the command keeps
                its direction, as far as each joint's window allows: a link between two arms
                holds through the stop), at the pace of the slowest; else each at its own.
        """
        limit_motion(
            self._rest, self.v, self.a, self._rest, self._free_lo,
            self._free_hi, self.vmax_hard, self.amax, self.dmax, self.jmax, max(dt, 1e-6),
            max(2.0 * dt, 1e-6), self._lo, self._hi, self._work, sync,
        )  # fmt: skip
        for j in range(self.v.shape[0]):
            if abs(self.v[j]) < 1e-12:
                self.v[j] = 0.0
        out[:] = self.v

    def stop_ramp(self, dt: float, out: Array, sync: bool = False) -> None:
        """:meth:`stop`'s next step into ``out`` (n,), the last command kept (no limits: 0)."""
        out.fill(0.0)
        if self.active:
            self._saved_v[:], self._saved_a[:] = self.v, self.a
            self.stop(dt, out, sync)
            self.v[:], self.a[:] = self._saved_v, self._saved_a

    def box(self, q: Array, dt: float, horizon: float, hold: float, lo: Array, hi: Array) -> None:
        """This tick's box of commands ``lo <= q' <= hi`` (n,) at ``q`` (see :func:`motion_box`).

        Args:
            q: (n,) joint positions.
            dt: the nominal control period [s].
            horizon: how long the command may be held before the next tick [s].
            hold: how long it may go on before a stop ramps it down [s] (the inputs' timeout).
            lo: (n,) output: the lower side [rad/s].
            hi: (n,) output: the upper side [rad/s].
        """
        motion_box(
            self.v, self.a, q, self.lower, self.upper, self.vmax, self.amax, self.dmax,
            self.jmax, max(dt, 1e-6), max(horizon, dt, 1e-6), hold, lo, hi,
        )  # fmt: skip

    def warm_up(self) -> None:
        """Compile (or load) the kernel now, on copies: the first tick must not wait for it."""
        v, a = self.v.copy(), self.a.copy()
        limit_motion(  # step() and stop() pass the flag: one compiled variant
            v, v, a, v, self.lower, self.upper, self.vmax, self.amax, self.dmax, self.jmax,
            0.001, 0.002, self._lo.copy(), self._hi.copy(), self._work.copy(), False,
        )  # fmt: skip
        motion_box(
            v, a, v, self.lower, self.upper, self.vmax, self.amax, self.dmax, self.jmax,
            0.001, 0.002, 0.1, self._lo.copy(), self._hi.copy(),
        )  # fmt: skip
        take_command(v.copy(), self._lo.copy(), self._hi.copy(), v, a, 0.001)
        lo, hi = self._lo.copy(), self._hi.copy()
        take_clipped(v.copy(), self.vmax, v.copy(), lo, hi, v, a, 0.001, True)

    def halt(self) -> None:
        """The robot was sent an immediate zero: start again from rest."""
        self.v[:] = 0.0
        self.a[:] = 0.0


__all__ = [
    "MotionLimiter",
    "braking_sides",
    "limit_motion",
    "limit_ratios",
    "motion_box",
    "take_clipped",
    "take_command",
]
