"""Playback: a journal fed back through a controller, call for call (ROS-free).

:class:`Playback` takes the records of :mod:`itasc_ros.core.control.journal` in order and makes the
controller calls they stand for: ``set_joint_state``, ``set_target``, ``set_target_twist``,
``set_enabled``, ``update_parameters`` and ``step``, with the recorded arguments and times. The
controller is the node's own code, so identical inputs give identical commands; each TICK's
recorded command is compared with the recomputed one.

*What-if* playback (``what_if=True``, with changed parameters) feeds the same targets, times and
events, but the joint positions of an ideal robot that follows the recomputed commands (each
joint state is the previous one plus the last command times the time between them), so that a
user sees what the changed parameters would have done.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, InputError, ItascError
from ..kinematics import spatial
from ..kinematics.tree import KinematicTree
from .config import ControllerConfig, apply_updates
from .controller import Controller
from .journal import (
    STATUS_CODES,
    TICK_TARGET_SIZE,
    Code,
    Record,
    ZeroReason,
    stamp_of,
)

Array = NDArray[np.float64]


class PlaybackError(ItascError):
    """A journal cannot be played back (unknown revision or URDF; named reason)."""


@dataclass
class ConfigHistory:
    """The configurations of a journal's revisions, and the URDFs of its models.

    Args:
        base_revision: the revision of ``base``.
        base: the configuration at ``base_revision``.
        changes: revision r -> the live updates (``Controller.update_parameters`` keywords)
            that made r from r - 1, for every r after ``base_revision``.
        trees: urdf tag -> a function building the tree of that URDF (tag 0.0: any).
        overrides: updates applied on top of every revision (what-if playback).
    """

    base_revision: int
    base: ControllerConfig
    changes: dict[int, dict[str, Any]] = field(default_factory=dict)
    trees: Mapping[float, Callable[[], KinematicTree]] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)

    def config(self, revision: int) -> ControllerConfig:
        """The configuration in force at ``revision`` (overrides applied).

        Raises:
            PlaybackError: a revision before the base or a change that was not recorded.
        """
        if revision < self.base_revision:
            raise PlaybackError(
                f"configuration revision {revision} is older than the first recorded one "
                f"({self.base_revision})"
            )
        cfg = self.base
        for r in range(self.base_revision + 1, revision + 1):
            cfg = apply_updates(cfg, **self._change(r))
        return apply_updates(cfg, **self.overrides) if self.overrides else cfg

    def updates(self, old: int, new: int) -> dict[str, Any]:
        """``update_parameters`` keywords from revision ``old`` to ``new`` (overrides win)."""
        out: dict[str, Any] = {}
        for r in range(old + 1, new + 1):
            out.update(self._change(r))
        return {k: v for k, v in out.items() if k not in self.overrides}

    def _change(self, r: int) -> dict[str, Any]:
        if r not in self.changes:
            raise PlaybackError(
                f"the parameters of configuration revision {r} were not recorded; recorded "
                f"revisions: {self.base_revision}, {sorted(self.changes)}"
            )
        return self.changes[r]

    def tree(self, tag: float) -> KinematicTree:
        """A new tree of the URDF with ``tag`` (:func:`~itasc_ros.core.control.journal.urdf_tag`).

        Raises:
            PlaybackError: no such URDF known.
        """
        make = self.trees.get(tag) or self.trees.get(0.0)
        if make is None:
            raise PlaybackError(
                f"the journal's model has URDF tag {int(tag):012x}; the URDFs at hand have "
                + ", ".join(f"{int(t):012x}" for t in self.trees)
            )
        return make()


@dataclass
class Tick:
    """One played-back tick (or a zero published outside a tick).

    Attributes:
        t: the tick's time [s] (the node's clock).
        kind: 'tick' or a :class:`~itasc_ros.core.control.journal.ZeroReason` name in lower case.
        status: recorded status ('active', 'stale', ...); ``replayed_status`` the replay's.
        published: the node published a command at this tick.
        recorded: (c,) the node's command [rad/s] (zeros when not published).
        recomputed: (c,) the replay's command.
        q: (c,) the joint positions used [rad] (the replay's: simulated when what-if).
        revision: the configuration revision in force.
        sigma_min, damping, velocity_scale: the replay's solve (NaN when none).
        locked: joints at a position limit in the replay's solve.
        followed: the smallest fraction of a task's asked velocity the replay's command gave
            (:class:`~itasc_ros.core.control.following.Following`; NaN: no task judged).
        position_error, rotation_error: first target constraint's effector to target [m, rad].
        state_stamp, target_stamp: header stamps [s] of the joint state and of the first target
            constraint's pose that the tick used (NaN: none, or no such target).
    """

    t: float
    kind: str
    status: str
    replayed_status: str
    published: bool
    replayed_published: bool
    recorded: Array
    recomputed: Array
    q: Array
    revision: int
    sigma_min: float = math.nan
    damping: float = math.nan
    velocity_scale: float = math.nan
    locked: int = 0
    followed: float = math.nan
    position_error: float = math.nan
    rotation_error: float = math.nan
    state_stamp: float = math.nan
    target_stamp: float = math.nan

    @property
    def diff(self) -> float:
        """Largest |recorded - recomputed| [rad/s] (0 when neither published)."""
        if not (self.published or self.replayed_published):
            return 0.0
        return float(np.max(np.abs(self.recorded - self.recomputed), initial=0.0))


@dataclass
class PlaybackLog:
    """What a playback found besides the ticks."""

    lost_messages: int = 0  # journal messages missing (sequence gaps)
    skipped_records: int = 0  # records before the first SNAPSHOT or after a gap
    snapshots: int = 0
    state_mismatches: int = 0  # snapshots that disagreed with the replayed state
    rejected: int = 0  # recorded inputs the replay's controller rejected
    parameter_changes: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # the first few, with times

    def note(self, text: str) -> None:
        """Keep a problem's description (the first 10)."""
        if len(self.problems) < 10:
            self.problems.append(text)


class Playback:
    """Feeds journal records into controllers built from a :class:`ConfigHistory`.

    Args:
        history: configurations and URDFs.
        what_if: feed an ideal robot's joint positions instead of the recorded ones.
        first_target: the constraint whose tracking error :class:`Tick` reports (default:
            the first that takes a target).
    """

    def __init__(
        self, history: ConfigHistory, what_if: bool = False, first_target: str | None = None
    ) -> None:
        self.history = history
        self.what_if = what_if
        self.first_target = first_target
        self.controller: Controller | None = None
        self.ticks: list[Tick] = []
        self.log = PlaybackLog()
        self._revision = 0
        self._model: tuple[float, float] | None = None  # (urdf tag, model number)
        self._seq: int | None = None
        self._synced = False
        self._names: list[str] = []
        self._all: list[str] = []
        self._links: list[str] = []
        self._sim_q: Array | None = None  # what-if: the ideal robot's joint positions
        self._sim_t = math.nan
        self._sim_cmd: Array | None = None

    # ------------------------------------------------------------------ feeding
    def feed(self, sequence: int, records: list[Record]) -> None:
        """Play one journal message's records (``sequence``: its sequence number)."""
        if self._seq is not None and sequence != self._seq + 1:
            self.log.lost_messages += max(sequence - self._seq - 1, 1)
            self.log.note(f"journal messages {self._seq + 1}..{sequence - 1} missing")
            self._synced = False
        self._seq = sequence
        for rec in records:
            if rec.code == Code.SNAPSHOT:
                self._snapshot(rec.payload)
            elif not self._synced or self.controller is None:
                self.log.skipped_records += 1
            else:
                self._play(rec.code, rec.payload)

    def _play(self, code: int, p: Array) -> None:
        ctrl = self.controller
        assert ctrl is not None
        try:
            if code == Code.JOINT_STATE:
                robots = p[2 + len(self._all) :]  # each robot's reception time (robots)
                ctrl.set_joint_state(
                    self._all, self._positions(p), p[0], stamp_of(p[1]), robots if robots.size
                    else None,
                )  # fmt: skip
            elif code == Code.TARGET:
                name, frame = self._names[int(p[0])], self._frame(p[3])
                ctrl.set_target(name, frame, p[5:8], p[8:12], p[1], stamp_of(p[2]), bool(p[4]))
            elif code == Code.TWIST:
                name, frame = self._names[int(p[0])], self._frame(p[3])
                ctrl.set_target_twist(name, frame, p[4:10], p[1], stamp_of(p[2]))
            elif code == Code.JOG:
                name, frame = self._names[int(p[0])], self._frame(p[3])
                ctrl.set_jog_twist(name, frame, p[4:10], p[1], stamp_of(p[2]))
            elif code == Code.ODOMETRY:
                world = ctrl.config.world_frame
                ctrl.set_odometry(world, "", p[2:15], p[0], stamp_of(p[1]))
            elif code == Code.ENABLED:
                ctrl.set_enabled(bool(p[0]))
            elif code == Code.PARAMETERS:
                new, old = int(p[0]), self._revision
                self._revision = new
                if p[1]:
                    updates = self.history.updates(old, new)
                    ctrl.update_parameters(**updates)
                    t = self.ticks[-1].t if self.ticks else math.nan
                    self.log.parameter_changes.append((t, updates))
            elif code == Code.TICK:
                self._tick(ctrl, p)
            elif code == Code.ZERO:
                self._zero(ctrl, p)
        except InputError as exc:
            self.log.rejected += 1
            self.log.note(f"recorded input rejected by the replay: {exc}")
        except ConfigError as exc:
            self.log.note(f"parameter change refused by the replay: {exc}")

    def _frame(self, code: float) -> str:
        if code == -2.0 and self.controller is not None:
            return self.controller.config.world_frame
        return "" if code < 0 else self._links[int(code)]

    # ------------------------------------------------------------------ snapshots
    def _snapshot(self, p: Array) -> None:
        self.log.snapshots += 1
        revision, tag, model = int(p[0]), float(p[1]), float(p[2])
        ctrl = self.controller
        if ctrl is not None and self._synced and self._model == (tag, model):
            if self.what_if:
                return  # the ideal robot is elsewhere: its state is the replay's own
            if revision == self._revision and _same(ctrl.state_values(), p[3:]):
                return
            self.log.state_mismatches += 1
            self.log.note(f"replayed state differs from the snapshot at revision {revision}")
        if ctrl is None or self._model != (tag, model) or revision != self._revision:
            ctrl = Controller(self.history.tree(tag), self.history.config(revision))
            self.controller = ctrl
            self._names = ctrl.pose_constraints
            self._all = ctrl.full_tree.all_joint_names
            self._links = ctrl.tree.link_names
        ctrl.restore_state(p)
        self._revision, self._model, self._synced = revision, (tag, model), True
        if self.what_if and self._sim_q is None:
            self._sim_q = ctrl.q
            self._sim_t = ctrl.joint_state_stamp

    # ------------------------------------------------------------------ ticks
    def _positions(self, p: Array) -> Array:
        """The joint positions to feed: recorded, or the ideal robot's (what-if)."""
        q_all = np.array(p[2 : 2 + len(self._all)], dtype=float)
        ctrl = self.controller
        if not self.what_if or ctrl is None:
            return q_all
        idx = [self._all.index(j) for j in ctrl.joint_names]
        if self._sim_q is None or not math.isfinite(self._sim_t):
            self._sim_q = q_all[idx].copy()
        elif self._sim_cmd is not None:
            self._sim_q = self._sim_q + self._sim_cmd * max(p[0] - self._sim_t, 0.0)
        self._sim_t = float(p[0])
        q_all[idx] = self._sim_q
        return q_all

    def _tick(self, ctrl: Controller, p: Array) -> None:
        n = int(p[6])
        k = len(self._names)
        recorded = np.array(p[7 + n + k * TICK_TARGET_SIZE : 7 + 2 * n + k * TICK_TARGET_SIZE])
        out = ctrl.step(float(p[0]))
        if out.publish:
            self._sim_cmd = out.qdot.copy()
        tick = Tick(
            t=float(p[0]),
            kind="tick",
            status=STATUS_CODES[int(p[1])],
            replayed_status=str(out.status),
            published=bool(p[2]),
            replayed_published=out.publish,
            recorded=recorded if p[2] else np.zeros(n),
            recomputed=out.qdot if out.publish else np.zeros(n),
            q=out.q,
            revision=int(p[3]),
            state_stamp=float(p[5]),
        )
        res = out.result
        if res is not None:
            tick.sigma_min, tick.damping = res.sigma_min, res.damping
            tick.velocity_scale = res.velocity_scale
            tick.locked = int(np.count_nonzero(res.locked))
            tick.followed = ctrl.following.least()
        target = self.first_target or next(iter(self._names), None)
        if target in self._names:
            tick.target_stamp = float(p[9 + n + self._names.index(target) * TICK_TARGET_SIZE])
        if target is not None and ctrl.has_joint_state:
            tick.position_error, tick.rotation_error = pose_errors(ctrl, target)
        self.ticks.append(tick)

    def _zero(self, ctrl: Controller, p: Array) -> None:
        n = ctrl.n_joints
        try:
            kind = ZeroReason(int(p[1])).name.lower()
        except ValueError:  # a reason this version does not know
            kind = "zero"
        self._sim_cmd = np.zeros(n)
        z = np.zeros(n)
        t = float(p[0])
        self.ticks.append(
            Tick(t, kind, "zero", "zero", True, True, z, z.copy(), ctrl.q, self._revision)
        )


def _same(a: Array, b: Array) -> bool:
    """Bit-for-bit equal state values (NaN equal to NaN)."""
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def pose_errors(ctrl: Controller, constraint: str) -> tuple[float, float]:
    """(position [m], rotation [rad]) distance between a constraint's effector and target."""
    eff, tgt = ctrl.poses(constraint)
    if tgt is None:
        return math.nan, math.nan
    pe = float(np.linalg.norm(tgt[:3, 3] - eff[:3, 3]))
    re = float(np.linalg.norm(spatial.so3_log(tgt[:3, :3] @ eff[:3, :3].T)))
    return pe, re


__all__ = [
    "ConfigHistory",
    "Playback",
    "PlaybackError",
    "PlaybackLog",
    "Tick",
    "pose_errors",
]
