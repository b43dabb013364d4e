"""Compiled command of an active tick: the solve to the command sent, in one call (numba).

Internal: the public API is :meth:`itasc_ros.core.control.Controller.step`. Taken through its
parts one by one (the scene's compiled solve, the cap of a late state, the clip and take of the
motion limits, the command sent, the tasks' fractions), an active tick paid each part's
compiled-call dispatch and its Python around it, more than the work. :func:`solve_command`
makes the same calls, in the same order, on the same arrays, inside one compiled call: the
controller's Python path (:meth:`~itasc_ros.core.control.Controller.step` through
:meth:`~itasc_ros.core.solve.scene.Scene.solve`) gives the same command bit for bit, and
stays the path of a scene whose tick is not compiled.
"""

from __future__ import annotations

import math
from typing import Any

from numba import njit, types
from numba.experimental import structref

from ..solve.motion_limits import take_clipped
from ..solve.shortfall import task_fractions
from ..solve.solver import INFO_FINITE
from ..solve.workspace import J_BOX_HI, J_BOX_LO, J_INFO, J_Q, J_QDOT, N, scene_tick
from ._journal_kernels import write_tick
from ._packed import (
    JS_HEADER,
    JS_ORDER,
    JS_STAMP,
    ORDER_OFFSET,
    ORDER_RECEIVED,
    ORDER_SOURCE,
    T_HAS_POSE,
    T_HEADER,
    T_JOG_FRESH,
    T_POSE_FRESH,
    T_SOURCE,
    T_STAMP,
    T_TWIST_FRESH,
)
from ._target_kernels import (
    TWIST_ZEROED,
    aim_twist,
    cap_twist,
    extrapolate_pose,
    take_stream_twist,
)
from ._tick_kernels import ELAPSED, JOINTS_FRESH, LAST_STEP, ODOM_FRESH, look
from .following import judge_tasks
from .journal import TwistSource
from .prediction import FRESH_NORM, INSTANT, LATE, Q, cap_into, take_sent
from .prediction import SENT as SENT_ROW

#: Results of :func:`solve_command`: nothing solved (a value of q NaN, Inf or huge), the solve
#: not finite (nothing taken), the command outside the motion box (nothing taken: the
#: limiter's step makes it), the command taken and sent.
NOT_SOLVED, NOT_FINITE, OUTSIDE, SENT = -2, -1, 0, 1
#: :func:`tick_command` stopped after the tick's look: the rest of the tick is the
#: controller's (a stale joint state or odometry, a jog, a moving target to aim ahead).
LOOKED = -3
_EXPLICIT = float(TwistSource.EXPLICIT)  # a stream's packed twist source: its twist topic


@njit(cache=True)
def solve_command(  # pragma: no cover - compiled
    fk,
    ints,
    floats,
    poses,
    full,
    sel,
    q_full,
    model,
    joints,
    rows,
    joint_flags,
    row_flags,
    motion,
    motion_box,
    held,
    lim_par,
    u,
    dt,
    clamp,
    limit,
    boxed,
    method,
    lam_max,
    eps,
    gamma_max,
    predicted,
    capped,
    vmax,
    out,
    v,
    a,
    active,
    sent,
    tasks,
    clock,
    buf,
    at,
    status,
    revision,
    streams,
    arrays,
    joint_state,
    measured,
):
    """A scene's solve, then its command (:func:`take_solved`), then the tick's record.

    :func:`~itasc_ros.core.solve.workspace.scene_tick`, then :func:`take_solved` of its
    result; once the command is sent, the tick's TICK record
    (:func:`~._journal_kernels.write_tick`: published, the targets' twist sources) when
    ``at`` >= 0.

    Args:
        fk: :func:`~itasc_ros.core.solve.workspace.scene_tick`'s arguments, from the
            scene's :meth:`~itasc_ros.core.solve.scene.Scene.prepare`.
        ints: likewise.
        floats: likewise.
        poses: likewise.
        full: likewise.
        sel: likewise.
        q_full: likewise.
        model: likewise.
        joints: likewise.
        rows: likewise.
        joint_flags: likewise.
        row_flags: likewise.
        motion: likewise.
        motion_box: likewise.
        held: likewise.
        lim_par: likewise.
        u: likewise.
        dt: likewise (the nominal period [s], also the motion limits').
        clamp: likewise.
        limit: likewise.
        boxed: likewise.
        method: likewise.
        lam_max: likewise.
        eps: likewise.
        gamma_max: likewise.
        predicted: :func:`take_solved`'s.
        capped: likewise.
        vmax: likewise.
        out: likewise.
        v: likewise.
        a: likewise.
        active: likewise.
        sent: likewise.
        tasks: likewise.
        clock: likewise.
        buf: the journal's buffer (:meth:`~.recorder.Recorder.tick_room`'s values from here).
        at: where the TICK record goes in it; -1: no record.
        status: the tick's status code (:data:`~.status.STATUS_CODE`).
        revision: the configuration revision in force.
        streams: :func:`~._journal_kernels.write_tick`'s.
        arrays: likewise.
        joint_state: likewise.
        measured: likewise (its ``q``: the joint positions of the joint state).

    Returns:
        (:data:`NOT_SOLVED`, -1, 0) when a value of ``q`` is NaN, Inf or huge (nothing
        solved), else :func:`take_solved`'s; the record is written only once
        :data:`SENT`.
    """
    if not scene_tick(
        fk, ints, floats, poses, full, sel, q_full, model, joints, rows, joint_flags, row_flags,
        motion, motion_box, held, lim_par, u, dt, clamp, limit, boxed, method, lam_max, eps,
        gamma_max,
    ):  # fmt: skip
        return NOT_SOLVED, -1, 0.0
    code, worst, longest = take_solved(
        model, joints, rows, row_flags, dt, predicted, capped, vmax, out, v, a, active, sent,
        tasks, clock,
    )  # fmt: skip
    if code == SENT and at >= 0:
        write_tick(
            buf, at, clock[LAST_STEP], status, True, revision, joint_state, True, measured, out,
            streams, arrays,
        )  # fmt: skip
    return code, worst, longest


@njit(cache=True)
def take_solved(  # pragma: no cover - compiled
    model,
    joints,
    rows,
    row_flags,
    dt,
    predicted,
    capped,
    vmax,
    out,
    v,
    a,
    active,
    sent,
    tasks,
    clock,
):
    """The command of a scene's last solve: capped, clipped, taken, sent, then judged.

    :func:`solve_command` after its solve; the controller's call after a solve of its own
    (a scene whose tick is not compiled). The solve's ``q'`` scaled to the norm of the last
    command sent on a state that was not late when it is larger (a late joint state: no
    faster than that command; :meth:`~itasc_ros.core.control.prediction.StatePrediction.cap`);
    :func:`~itasc_ros.core.solve.motion_limits.take_clipped` into ``out``; once taken, ``out``
    sent (:func:`~itasc_ros.core.control.prediction.take_sent`; its norm kept as the fresh one
    when no state is late, as :meth:`~itasc_ros.core.control.prediction.StatePrediction.took`
    keeps it), each task's fraction of it
    (:func:`~itasc_ros.core.solve.shortfall.task_fractions`) and the tasks' following judged
    (:func:`~itasc_ros.core.control.following.judge_tasks`).

    Args:
        model: the scene's model (:class:`~itasc_ros.core.solve.workspace.SceneWorkspace`).
        joints: its joints' buffer (the solve's ``q'``, box and info).
        rows: its rows' buffer.
        row_flags: its rows' flags.
        dt: the nominal period [s] (the motion limits').
        predicted: (3,) in/out: the prediction's packed scalars (its lateness, the norm of
            the last command sent while no state was late).
        capped: (n,) work: the capped command.
        vmax: (n,) the hard velocity limits [rad/s].
        out: (n,) out: the command [rad/s] (undefined unless :data:`SENT` or
            :data:`OUTSIDE`).
        v: (n,) in/out: the motion limiter's last command [rad/s].
        a: (n,) in/out: its acceleration [rad/s^2].
        active: the motion limits are on.
        sent: (n,) out: the command the robot follows from now on (once :data:`SENT`).
        tasks: (3, k) in/out, once :data:`SENT`: the following's packed rows
            (:attr:`~itasc_ros.core.control.following.Following.tasks`: each task's fraction
            of the command, when it went short, its time short [s]).
        clock: the controller's packed clock (:mod:`._tick_kernels`: the tick's time and
            the time since the last tick).

    Returns:
        (one of :data:`NOT_FINITE`, :data:`OUTSIDE`, :data:`SENT`; once :data:`SENT`, the
        task short the longest for at least
        :data:`~itasc_ros.core.control.following.REPORT_AFTER` (-1: none) and for how long
        [s], else -1 and 0).
    """
    n = model[N]
    if joints[model[J_INFO] + INFO_FINITE] == 0.0:
        return NOT_FINITE, -1, 0.0
    o = model[J_QDOT]
    qdot = joints[o : o + n]
    fresh = predicted[LATE] == 0.0
    if cap_into(qdot, 0.0 if fresh else predicted[FRESH_NORM], capped):
        qdot = capped
    lo, hi = model[J_BOX_LO], model[J_BOX_HI]
    taken = take_clipped(
        qdot, vmax, out, joints[lo : lo + n], joints[hi : hi + n], v, a, max(dt, 1e-6), active
    )
    if taken < 0:
        return NOT_FINITE, -1, 0.0
    if taken == 0:
        return OUTSIDE, -1, 0.0
    size = take_sent(sent, out)
    if fresh:
        predicted[FRESH_NORM] = size
    task_fractions(model, rows, row_flags, out, tasks[0])
    worst, longest = judge_tasks(tasks[0], tasks[1], tasks[2], clock[LAST_STEP], clock[ELAPSED])
    return SENT, worst, longest


#: The fields of a :class:`TickPlan`, in :func:`new_tick_plan`'s order: :func:`tick_command`'s
#: arguments that stay the same from one tick to the next (each described there).
PLAN_FIELDS = (
    "clock", "period", "timeout", "joint_state", "streams", "measured", "stamps", "state",
    "values", "lag", "late", "need_odom", "aim", "twist", "estimate", "applied", "given",
    "aim_here", "pose", "aimed", "dest", "aiming", "twist_clock", "accel", "mean_twist",
    "aimed_twist", "latency", "max_speed", "max_angular_speed", "fk",
    "ints", "floats", "poses", "full", "sel", "q_full", "model", "joints", "rows", "joint_flags",
    "row_flags", "motion", "motion_box", "held", "lim_par", "u", "dt", "clamp", "limit", "boxed",
    "method", "lam_max", "eps", "gamma_max", "capped", "vmax", "out", "v", "a", "active",
    "tasks", "status", "arrays",
)  # fmt: skip


@structref.register
class TickPlanType(types.StructRef):
    """The numba type of a :class:`TickPlan` (its fields' types, literals widened)."""

    def preprocess_fields(self, fields: Any) -> tuple[Any, ...]:
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class TickPlan(structref.StructRefProxy):
    """The arrays and settings of a controller's common tick, held for its compiled call.

    One object where :func:`tick_command` took its 56 fields as arguments every tick: a
    compiled call's dispatch checks each argument's type, and the Python that gathered them
    ran every tick. It holds
    the arrays themselves (their buffers, not copies): what the tick's parts write in place,
    the call reads; an array replaced by a new one is not seen, so its owner builds a new
    plan then (:class:`~.fused_tick.FusedTick`). Built by :func:`new_tick_plan`.
    """


structref.define_proxy(TickPlan, TickPlanType, list(PLAN_FIELDS))


@njit(cache=True)
def new_tick_plan(  # pragma: no cover - compiled
    clock, period, timeout, joint_state, streams, measured, stamps, state, values, lag, late,
    need_odom, aim, twist, estimate, applied, given, aim_here, pose, aimed, dest, aiming,
    twist_clock, accel, mean_twist, aimed_twist, latency, max_speed, max_angular_speed, fk,
    ints, floats, poses, full, sel, q_full, model, joints, rows, joint_flags, row_flags, motion,
    motion_box, held, lim_par, u, dt, clamp, limit, boxed, method, lam_max, eps, gamma_max,
    capped, vmax, out, v, a, active, tasks, status, arrays,
):  # fmt: skip
    """A :class:`TickPlan` of these values (:data:`PLAN_FIELDS`; :func:`tick_command`'s)."""
    return TickPlan(
        clock, period, timeout, joint_state, streams, measured, stamps, state, values, lag, late,
        need_odom, aim, twist, estimate, applied, given, aim_here, pose, aimed, dest, aiming,
        twist_clock, accel, mean_twist, aimed_twist, latency, max_speed, max_angular_speed, fk,
        ints, floats, poses, full, sel, q_full, model, joints, rows, joint_flags, row_flags,
        motion, motion_box, held, lim_par, u, dt, clamp, limit, boxed, method, lam_max, eps,
        gamma_max, capped, vmax, out, v, a, active, tasks, status, arrays,
    )  # fmt: skip


@njit(cache=True)
def tick_command(plan, now, odom_stamp, buf, at, revision):  # pragma: no cover - compiled
    """An active tick in one call: its look, its target's twist, then :func:`solve_command`.

    The tick's look at its inputs (:func:`~._tick_kernels.look`); then, when the joint state
    (and the odometry, ``need_odom``) is fresh and the target stream (at most one, the row of
    ``streams``) does not jog (nor, with ``aim``, moves while the call cannot aim it), the
    stream's twist taken (:func:`~._target_kernels.take_stream_twist`)
    and, when it changed, given to its constraint (``given``), the target aimed ahead by its
    twist (:func:`_aim`); the scene's ``q`` set to the prediction's positions;
    then :func:`solve_command`. The same calls, in the same order, on
    the same arrays as the controller's tick through its parts.

    Args:
        plan: the tick's :class:`TickPlan`, whose fields are:
            ``clock``, ``period``, ``timeout``, ``joint_state``, ``streams``, ``measured``,
            ``stamps``, ``state``, ``values``, ``lag``, ``late``: :func:`~._tick_kernels.look`'s
            (``joint_state`` ``joints``, also the record's; ``streams`` k <= 1 rows, also the
            record's; ``measured`` also the record's; ``state`` the prediction's rows: its
            positions solved at, its command sent; ``values`` the prediction's scalars,
            :func:`take_solved`'s ``predicted``).
            ``need_odom``: the odometry must be fresh (a commanded base).
            ``aim``: ``aim_ahead``.
            ``twist``, ``estimate``: (6,) the stream's explicit and estimated twists.
            ``applied``: (6,) in/out: the twist it gave its constraint.
            ``given``: (6,) out: its constraint's target twist.
            ``aim_here``: the call aims the stream (:func:`_aim`: ``dest`` is its
            constraint's target pose); else a target to aim leaves the rest to the
            controller. ``pose``, ``aimed``: (4, 4) the stream's pose and its aimed pose;
            ``dest``: (4, 4) its constraint's target pose; ``aiming``: (1,) in/out, the
            constraint's target is ``aimed``. An explicit twist's aim: ``twist_clock`` (1,)
            its time [s], ``accel`` (6,) its filtered change rate, ``mean_twist`` (6,) work,
            ``aimed_twist`` (6,) out: the twist when the command acts; ``latency`` the
            command's delivery [s] (``command_latency``; < 0: the joint states' most
            punctual), ``max_speed`` [m/s], ``max_angular_speed`` [rad/s] the target speeds.
            The others: :func:`solve_command`'s of the same names (the scene's ``q`` is set in
            ``joints``).
        now: :func:`~._tick_kernels.look`'s [s].
        odom_stamp: likewise [s].
        buf: :func:`solve_command`'s (the journal's buffer).
        at: likewise.
        revision: likewise.

    Returns:
        (:data:`LOOKED`, -1, 0) when it stopped after the look, else :func:`solve_command`'s.
    """
    p = plan
    clock, streams, state = p.clock, p.streams, p.state
    look(
        clock, now, p.period, p.timeout, p.joint_state, odom_stamp, streams, p.measured,
        p.stamps, state, p.values, p.lag, p.late,
    )  # fmt: skip
    if clock[JOINTS_FRESH] == 0.0 or (p.need_odom and clock[ODOM_FRESH] == 0.0):
        return LOOKED, -1, 0.0
    if streams.shape[0] == 1:
        s, twist, estimate, applied, given = streams[0], p.twist, p.estimate, p.applied, p.given
        if (
            s[T_JOG_FRESH] != 0.0
            or (p.aim and not p.aim_here and _moving(s, twist, estimate))
            or (not p.aim_here and p.aiming[0] != 0.0)
        ):  # a jog, a target to aim that the call cannot: the controller's parts
            return LOOKED, -1, 0.0
        took = take_stream_twist(s, twist, estimate, applied)
        if took >= 2:  # changed: given to the constraint
            for i in range(6):
                given[i] = 0.0 if took == TWIST_ZEROED else applied[i]
        if p.aim_here:
            _aim(p, s, applied, given, p.aim and took % 2 == 1, now)
    model, joints = p.model, p.joints
    n, o = model[N], model[J_Q]
    for i in range(n):
        joints[o + i] = state[Q, i]
    return solve_command(
        p.fk, p.ints, p.floats, p.poses, p.full, p.sel, p.q_full, model, joints, p.rows,
        p.joint_flags, p.row_flags, p.motion, p.motion_box, p.held, p.lim_par, p.u, p.dt, p.clamp,
        p.limit, p.boxed, p.method, p.lam_max, p.eps, p.gamma_max, p.values, p.capped, p.vmax,
        p.out, p.v, p.a, p.active, state[SENT_ROW], p.tasks, clock, buf, at, p.status, revision,
        streams, p.arrays, p.joint_state, p.measured,
    )  # fmt: skip


@njit(cache=True)
def plan_command(plan, buf, at, revision):  # pragma: no cover - compiled
    """:func:`solve_command` with the arrays and settings of ``plan`` (:class:`TickPlan`).

    The solve and command of an active tick whose look, references and aim the controller's
    parts made (the scene readied at the prediction's positions): the same call as
    :func:`tick_command`'s after its look. ``buf``, ``at``, ``revision``: its.

    Returns:
        :func:`solve_command`'s.
    """
    p = plan
    return solve_command(
        p.fk, p.ints, p.floats, p.poses, p.full, p.sel, p.q_full, p.model, p.joints, p.rows,
        p.joint_flags, p.row_flags, p.motion, p.motion_box, p.held, p.lim_par, p.u, p.dt, p.clamp,
        p.limit, p.boxed, p.method, p.lam_max, p.eps, p.gamma_max, p.values, p.capped, p.vmax,
        p.out, p.v, p.a, p.active, p.state[SENT_ROW], p.tasks, p.clock, buf, at, p.status,
        revision, p.streams, p.arrays, p.joint_state, p.measured,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _aim(p, s, applied, given, moving, now):  # pragma: no cover - compiled
    """The stream's target aimed ahead by its twist, or no longer (``plan`` ``p``).

    :class:`~.aim.TargetAim`'s aim (``moving``: with ``aim_ahead``, its twist not zero): the
    pose moved on to the joint state's instant, and the actuator lag (``pose`` to ``aimed``),
    given to the constraint (``dest``); by an explicit twist, that twist moved on by its
    change rate (:func:`_aim_explicit`); once the stream no longer moves (or ``aim_ahead`` is
    off), its pose and twist as received given again. ``aiming`` (1,): whether the
    constraint's target is ``aimed``. ``now``: the tick's time [s].
    """
    aiming, dest = p.aiming, p.dest
    if moving:
        js = p.joint_state
        header, stamp = js[JS_HEADER], js[JS_STAMP]
        measured = (header if header == header else stamp) + max(p.values[INSTANT] - stamp, 0.0)
        cap = 0.5 * p.timeout
        h = s[T_HEADER]
        at = h if h == h else s[T_STAMP]
        lead = min(max(measured - at, -cap), cap)
        aimed = p.aimed
        if s[T_SOURCE] == _EXPLICIT:
            _aim_explicit(p, applied, given, now + _delivery(p.latency, js) + p.lag, at, lead)
        else:
            if aiming[0] != 0.0:
                for i in range(6):
                    given[i] = applied[i]
            extrapolate_pose(p.pose, applied, lead + p.lag, aimed)
        for i in range(4):
            for j in range(4):
                dest[i, j] = aimed[i, j]
        aiming[0] = 1.0
    elif aiming[0] != 0.0:
        aiming[0] = 0.0
        if s[T_HAS_POSE] != 0.0:
            pose = p.pose
            for i in range(4):
                for j in range(4):
                    dest[i, j] = pose[i, j]
        still = True
        for i in range(6):
            still = still and applied[i] == 0.0
        for i in range(6):
            given[i] = 0.0 if still else applied[i]


@njit(cache=True, nogil=True)
def _aim_explicit(p, applied, given, acts, at, lead):  # pragma: no cover - compiled
    """An explicit twist's aim: :class:`~.aim.TargetAim`'s, second order.

    The twist moved on by its change rate to ``acts`` (when the command acts [s]: given to
    the constraint) and to the middle of the pose's lead (its mean over it), each lead from
    the twist's time and within +-``input_timeout / 2``, each twist within the target speeds;
    the pose (stamped ``at`` [s]) moved on by the mean twist for ``lead`` [s], then straight
    on for the actuator lag (into ``aimed``).
    """
    cap = 0.5 * p.timeout
    t0 = p.twist_clock[0]
    mean, aimed_twist, aimed = p.mean_twist, p.aimed_twist, p.aimed
    aim_twist(
        applied, p.accel, min(max(acts - t0, -cap), cap),
        min(max(at + 0.5 * lead - t0, -cap), cap), mean, aimed_twist,
    )  # fmt: skip
    cap_twist(aimed_twist, p.max_speed, p.max_angular_speed)
    cap_twist(mean, p.max_speed, p.max_angular_speed)
    extrapolate_pose(p.pose, mean, lead, aimed)
    if p.lag > 0.0:  # where the joints head for: the target lag ahead, straight
        extrapolate_pose(aimed, mean, p.lag, aimed)
    for i in range(6):
        given[i] = aimed_twist[i]


@njit(cache=True, nogil=True)
def _delivery(latency, js):  # pragma: no cover - compiled
    """How long [s] from a tick until the robot applies its command.

    ``latency`` (``command_latency``), or when it is negative the joint states' most punctual
    delivery (their stamp order's offset, in the packed joint state ``js``; 0 while unknown):
    :meth:`~.aim.TargetAim._command_delivery`.
    """
    if latency >= 0.0:
        return latency
    kept, source = js[JS_ORDER + ORDER_OFFSET], js[JS_ORDER + ORDER_SOURCE]
    offset = kept
    if kept == math.inf and source == source:  # the anchor alone: its own
        offset = js[JS_ORDER + ORDER_RECEIVED] - source
    return offset if 0.0 <= offset < math.inf else 0.0


@njit(cache=True, nogil=True)
def _moving(s, twist, estimate):  # pragma: no cover - compiled
    """Whether a stream's twist at this tick is not zero (:func:`take_stream_twist`'s source)."""
    if s[T_TWIST_FRESH] != 0.0:
        src = twist
    elif s[T_POSE_FRESH] != 0.0:
        src = estimate
    else:
        return False
    for i in range(6):
        if src[i] != 0.0:
            return True
    return False


__all__ = [
    "LOOKED",
    "NOT_FINITE",
    "NOT_SOLVED",
    "OUTSIDE",
    "PLAN_FIELDS",
    "SENT",
    "TickPlan",
    "new_tick_plan",
    "solve_command",
    "take_solved",
    "tick_command",
]
