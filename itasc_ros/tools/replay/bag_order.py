"""Replay of a bag without the node's journal, in bag order (:class:`Replayer`).

The recorder's order of the inputs is not the node's, so the recomputed commands differ from
the recorded ones: this replay gives figures (tracking error, singular values), no exact
comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from itasc_ros.core import Controller
from itasc_ros.core.control.playback import pose_errors
from itasc_ros.core.errors import ConfigError, InputError
from itasc_ros.tools.replay.bag_events import (
    CommandEvent,
    Event,
    JointStateEvent,
    OdometryEvent,
    ParameterChangeEvent,
    PoseEvent,
    TwistEvent,
    load_events,
)
from itasc_ros.tools.replay.errors import ReplayError
from itasc_ros.tools.replay.node_setup import NodeSetup
from itasc_ros.tools.replay.result import ReplayResult

_COLUMNS = (
    "t",
    "recorded",
    "recomputed",
    "status",
    "sigma",
    "damping",
    "scale",
    "followed",
    "locked",
    "perr",
    "rerr",
    "q",
    "eps",
)
_COUNTS = (
    "joint_states",
    "odometry",
    "target_poses",
    "target_twists",
    "commands",
    "parameter_changes",
)


@dataclass
class _Tally:
    """What a run collects: one row per step, counts, rejections and parameter changes."""

    rows: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in _COLUMNS})
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    rejections: int = 0
    reasons: list[str] = field(default_factory=list)
    changes: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


class Replayer:
    """Replay of a bag without a journal, in bag order, through a :class:`Controller`.

    The recorder's order of the inputs is not the node's, so its commands differ from the
    recorded ones; the figures (tracking error, singular values) are those of the bag order.

    Args:
        bag: bag directory or a single .mcap / .db3 file.
        setup: the node's parameters, URDF and topics
            (:func:`~itasc_ros.tools.replay.node_setup.load_setup`).

    Raises:
        ReplayError: the bag lacks inputs. ConfigError: the configuration does not fit the URDF.
    """

    def __init__(self, bag: str | Path, setup: NodeSetup) -> None:
        self.bag = Path(bag)
        self.setup = setup
        self.tree = setup.tree()
        self.controller = Controller(self.tree, setup.config)
        # the command topic's joints: a commanded base's go to its twist topic (not compared)
        self._nb = len(self.controller.base_joints)
        self.joint_names = list(self.controller.joint_names[self._nb :])
        self.events = load_events(bag, setup, self.joint_names)
        self.result: ReplayResult | None = None

    def run(self, at: str = "commands") -> ReplayResult:
        """Feed every input in bag order and step at each command time (or at control_rate).

        Args:
            at: 'commands' (at each recorded command's bag time) or 'rate' (every
                1 / control_rate from the first to the last input).

        Raises:
            ReplayError: 'commands' with a bag without commands, or an unknown ``at``.
        """
        tally = _Tally()
        for ev in self._schedule(at):
            try:
                self._feed(ev, tally)
            except InputError as exc:
                tally.rejections += 1
                if len(tally.reasons) < 5:
                    tally.reasons.append(f"t={ev.t:.6f} s: {exc}")
            except ConfigError as exc:
                what = ev.changes if isinstance(ev, ParameterChangeEvent) else ev
                tally.ignored.append(f"{what}: {exc}")
        self.result = self._result(tally)
        return self.result

    def _schedule(self, at: str) -> list[Event]:
        """The events in the order they are fed; steps are the :class:`CommandEvent` s."""
        if at not in ("commands", "rate"):
            raise ReplayError(f"unknown step mode {at!r}; valid: 'commands', 'rate'")
        events = list(self.events)
        if at == "commands":
            if not any(isinstance(e, CommandEvent) for e in events):
                raise ReplayError(
                    f"bag {str(self.bag)!r} has no commands on "
                    f"{self.setup.command_topic}; use --at rate"
                )
            return events
        t0 = min(e.t for e in events)
        t1 = max(e.t for e in events)
        period = 1.0 / self.controller.config.control_rate
        ticks: list[Event] = [
            CommandEvent(t0 + k * period, None, "tick") for k in range(int((t1 - t0) / period) + 1)
        ]
        inputs = [e for e in events if not isinstance(e, CommandEvent)]
        # stable sort: bag order kept, a tick after the inputs of the same time
        return sorted(inputs + ticks, key=lambda e: (e.t, isinstance(e, CommandEvent)))

    def _feed(self, ev: Event, tally: _Tally) -> None:
        """One event into the controller; a command (or a tick) steps it."""
        ctrl = self.controller
        if isinstance(ev, JointStateEvent):
            tally.counts["joint_states"] += 1
            ctrl.set_joint_state(ev.names, ev.pos, ev.t, ev.src)
        elif isinstance(ev, OdometryEvent):
            tally.counts["odometry"] += 1
            ctrl.set_odometry(ev.frame, ev.child, ev.values, ev.t, ev.src)
        elif isinstance(ev, PoseEvent):
            tally.counts["target_poses"] += 1
            ctrl.set_target(ev.name, ev.frame, ev.pos, ev.quat, ev.t, ev.src)
        elif isinstance(ev, TwistEvent):
            tally.counts["target_twists"] += 1
            ctrl.set_target_twist(ev.name, ev.frame, ev.twist, ev.t)
        elif isinstance(ev, ParameterChangeEvent):
            tally.counts["parameter_changes"] += 1
            tally.ignored.extend(ev.ignored)
            if ev.changes:
                ctrl.update_parameters(**ev.changes)
                tally.changes.append((ev.t, dict(ev.changes)))
        else:
            if ev.problem != "tick":
                tally.counts["commands"] += 1
            self._step(ev, tally.rows)

    def _step(self, ev: CommandEvent, rows: dict[str, list[Any]]) -> None:
        """Step the controller at the command's time; one row of figures."""
        ctrl = self.controller
        out = ctrl.step(ev.t)
        res = out.result
        rows["t"].append(ev.t)
        rows["recorded"].append(
            ev.qdot if ev.qdot is not None else np.full(len(self.joint_names), np.nan)
        )
        rows["recomputed"].append(out.qdot[self._nb :])
        rows["status"].append(out.status)
        rows["sigma"].append(res.sigma_min if res is not None else np.nan)
        rows["damping"].append(res.damping if res is not None else np.nan)
        rows["scale"].append(res.velocity_scale if res is not None else np.nan)
        rows["followed"].append(ctrl.following.least() if res is not None else np.nan)
        rows["locked"].append(int(np.count_nonzero(res.locked)) if res else 0)
        rows["q"].append(out.q[self._nb :])
        rows["eps"].append(ctrl.config.damping_epsilon)
        pe = re = np.nan
        first_pose = next(iter(self.setup.pose_topics), None)
        if first_pose is not None and ctrl.has_joint_state:
            pe, re = pose_errors(ctrl, first_pose)
        rows["perr"].append(pe)
        rows["rerr"].append(re)

    def _result(self, tally: _Tally) -> ReplayResult:
        """The collected rows as arrays (k steps, n joints)."""
        rows, n = tally.rows, len(self.joint_names)
        k = len(rows["t"])
        return ReplayResult(
            joint_names=self.joint_names,
            t=np.asarray(rows["t"], dtype=float),
            recorded=np.asarray(rows["recorded"], dtype=float).reshape(k, n),
            recomputed=np.asarray(rows["recomputed"], dtype=float).reshape(k, n),
            status=rows["status"],
            sigma_min=np.asarray(rows["sigma"], dtype=float),
            damping=np.asarray(rows["damping"], dtype=float),
            velocity_scale=np.asarray(rows["scale"], dtype=float),
            followed=np.asarray(rows["followed"], dtype=float),
            locked=np.asarray(rows["locked"], dtype=np.int64),
            position_error=np.asarray(rows["perr"], dtype=float),
            rotation_error=np.asarray(rows["rerr"], dtype=float),
            q=np.asarray(rows["q"], dtype=float).reshape(k, n),
            velocity_limits=self.controller.velocity_limits,
            damping_epsilon=np.asarray(rows["eps"], dtype=float),
            rejections=tally.rejections,
            rejection_reasons=tally.reasons,
            parameter_changes=tally.changes,
            ignored_parameters=sorted(set(tally.ignored)),
            inputs=tally.counts,
        )


__all__ = ["Replayer"]
