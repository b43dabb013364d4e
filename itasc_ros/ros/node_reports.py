"""What the node reports: ``~/status`` (JSON), ``/diagnostics`` and the RViz ``~/markers``.

Built from the controller's last step and the node's counters, at most 10 Hz (status,
markers) and 2 Hz (diagnostics), after a tick's command, never inside it. The health verdict
itself is the core's (:func:`~itasc_ros.core.control.health.diagnose`); this module turns it
and the figures into messages, and :class:`NodeReports` publishes them when they are due.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, String
from visualization_msgs.msg import Marker, MarkerArray

from ..core import Controller, ItascError, Status, StepOutput
from ..core.control.health import Health, diagnose, step_colour
from ..core.control.health import clip_reason as clip
from .conversions import matrix_to_pose
from .journal_publisher import JournalPublisher
from .log_throttle import log_throttled
from .node_outputs import read_clock
from .polled_reader import MatchWatch, PolledReader

DIAGNOSTICS_PERIOD = 0.5  # [s] /diagnostics at 2 Hz
STATUS_PERIOD = 0.1  # [s] ~/status and ~/markers at 10 Hz

LEVELS = (
    DiagnosticStatus.OK,
    DiagnosticStatus.WARN,
    DiagnosticStatus.ERROR,
    DiagnosticStatus.STALE,
)
"""diagnostic_msgs levels of the core's health levels (index: ``Level``)."""


class LoopStats:
    """Tick count and solve-time statistics over one diagnostics window (no allocation).

    Attributes:
        rate: the last window's tick rate [Hz].
        solve_mean: the last window's mean solve time [s].
        solve_max: the last window's longest solve time [s].
    """

    def __init__(self) -> None:
        self.rate = self.solve_mean = self.solve_max = 0.0
        self._reset(time.monotonic())

    def _reset(self, t: float) -> None:
        self._t0 = t
        self._ticks = self._solves = 0
        self._sum = self._max = 0.0

    def add(self, seconds: float, solved: bool) -> None:
        """Count one tick that took ``seconds`` [s] (a solve when ``solved``)."""
        self._ticks += 1
        if solved:
            self._solves += 1
            self._sum += seconds
            if seconds > self._max:
                self._max = seconds

    def close_window(self, t: float) -> None:
        """End the window at ``t`` (``time.monotonic()`` [s]): its figures, a new window."""
        span = t - self._t0
        self.rate = self._ticks / span if span > 0 else 0.0
        self.solve_mean = self._sum / self._solves if self._solves else 0.0
        self.solve_max = self._max
        self._reset(t)


class Rejections:
    """The inputs refused: how many, the last one's reason and when (``time.monotonic()``)."""

    def __init__(self) -> None:
        self.count = 0
        self.last = ""
        self.last_time = -math.inf

    def add(self, exc: ItascError) -> None:
        """Count one refused input."""
        self.count += 1
        self.last = clip(str(exc))
        self.last_time = time.monotonic()


@dataclass
class NodeState:
    """What the reports read of the node: its controller, last step and counters.

    Attributes:
        urdf_source: where the installed model's URDF came from ('' for none).
        urdf_error: why the latest URDF is not (or not wholly) in force ('' when it is).
        urdf_rejections: URDFs rejected or refused so far.
        enabled: ``~/enable``.
    """

    ctrl: Controller | None
    out: StepOutput | None
    urdf_source: str
    urdf_error: str
    urdf_rejections: int
    enabled: bool
    stats: LoopStats
    rejections: Rejections
    control_rate: float
    trigger: str
    timer_trigger: bool
    tick_error: str


def status_message(s: NodeState) -> String:
    """``~/status``: the control status, its reason and the last solve's figures (JSON)."""
    ctrl, out = s.ctrl, s.out
    info: dict[str, Any] = {
        "status": "no_model"
        if ctrl is None
        else (str(out.status) if out else str(Status.WAITING)),
        "reason": (s.urdf_error or "no URDF yet") if ctrl is None else (out.reason if out else ""),
        "enabled": s.enabled,
        "loop_rate": round(s.stats.rate, 1),
        "rejections": s.rejections.count,
        "last_rejection": s.rejections.last,
        "urdf_error": s.urdf_error,
        "urdf_rejections": s.urdf_rejections,
    }
    r = out.result if out is not None else None
    if r is not None:
        info.update(
            errors={n: float(e) for n, e in zip(r.constraint_names, r.errors, strict=True)},
            sigma_min=r.sigma_min,
            damping=r.damping,
            locked=r.locked_joints,
            velocity_scale=r.velocity_scale,
        )
    if ctrl is not None and out is not None:
        info.update(following=ctrl.following.fractions(), shortfall=out.shortfall)
    return String(data=json.dumps(info))


def _age(now: float, stamp: float) -> str:
    return "never" if not math.isfinite(stamp) else f"{now - stamp:.3f}"


def _values(
    s: NodeState,
    now: float,
    scheduling: str,
    extra: list[tuple[str, Any]],
    tail: list[tuple[str, Any]],
) -> list[tuple[str, Any]]:
    ctrl, out = s.ctrl, s.out
    values: list[tuple[str, Any]] = [
        ("loop_rate_hz", f"{s.stats.rate:.1f}"),
        ("control_rate_hz", f"{s.control_rate:.1f}"),
        ("control_trigger", s.trigger),
        ("scheduling", scheduling),
        *extra,
        ("solve_time_mean_ms", f"{1e3 * s.stats.solve_mean:.3f}"),
        ("solve_time_max_ms", f"{1e3 * s.stats.solve_max:.3f}"),
        ("urdf_source", s.urdf_source or "none"),
        ("enabled", s.enabled),
        ("rejections", s.rejections.count),
        ("last_rejection", s.rejections.last),
        ("urdf_rejections", s.urdf_rejections),
        ("urdf_error", s.urdf_error),
        *tail,
    ]
    if ctrl is None:
        return values
    values.append(("joint_state_age_s", _age(now, ctrl.joint_state_stamp)))
    if ctrl.config.world_frame:
        odom = ctrl.odometry()
        jumps, behind, _ = ctrl.odometry_counts
        values += [
            ("world_frame", ctrl.config.world_frame),
            ("odometry_age_s", _age(now, odom[2] if odom is not None else -math.inf)),
            ("odometry_jumps", jumps),
            ("odometry_behind", behind),
        ]
    for name in ctrl.pose_constraints:
        values += [
            (f"target_age_s.{name}", _age(now, ctrl.target_stamp(name))),
            (f"target_jumps.{name}", ctrl.target_jumps(name)),
            (f"target_twists_capped.{name}", ctrl.target_twists_capped(name)),
            (f"jog_late_twists.{name}", ctrl.jog_late_twists(name)),
        ]
    r = out.result if out is not None else None
    if out is not None:
        values.append(("status", out.status))
    if r is not None:
        values += [
            ("sigma_min", f"{r.sigma_min:.5f}"),
            ("damping", f"{r.damping:.5f}"),
            ("locked_joints", ", ".join(r.locked_joints)),
            ("velocity_scale", f"{r.velocity_scale:.4f}"),
        ]
    fol = ctrl.following
    for i, name in enumerate(fol.names):
        if not math.isnan(fol.fraction[i]):
            values.append((f"following.{name}", f"{fol.fraction[i]:.3f}"))
        values.append((f"time_not_followed_s.{name}", f"{fol.short_time[i]:.2f}"))
    values.append(("shortfall", out.shortfall if out is not None else ""))
    return values


def diagnostic_status(
    name: str,
    s: NodeState,
    now: float,
    scheduling: str,
    extra: list[tuple[str, Any]],
    tail: list[tuple[str, Any]],
) -> DiagnosticStatus:
    """The node's ``/diagnostics`` status: the health verdict and the figures as key-values.

    Args:
        name: the status's name (``<node>: controller``).
        s: the node's state.
        now: the node's ROS time [s] (ages of the inputs).
        scheduling: the threads' scheduling in words.
        extra: more key-values after ``scheduling`` (the garbage collections).
        tail: more key-values after the URDF's (the journal's).
    """
    out = s.out
    status = DiagnosticStatus(name=name, hardware_id=s.ctrl.tree.name if s.ctrl else "")
    level, status.message = diagnose(
        Health(
            has_model=s.ctrl is not None,
            status=None if out is None else str(out.status),
            reason="" if out is None else out.reason,
            held=() if out is None else out.held,
            loop_rate=s.stats.rate,
            control_rate=s.control_rate,
            timer_trigger=s.timer_trigger,
            urdf_error=s.urdf_error,
            since_rejection=time.monotonic() - s.rejections.last_time,
            last_rejection=s.rejections.last,
            tick_error=s.tick_error,
            shortfall="" if out is None else out.shortfall,
        )
    )
    status.level = LEVELS[level]
    status.values = [
        KeyValue(key=k, value=str(v)) for k, v in _values(s, now, scheduling, extra, tail)
    ]
    return status


def diagnostic_array(status: DiagnosticStatus, stamp: Any) -> DiagnosticArray:
    """One status in a stamped DiagnosticArray."""
    array = DiagnosticArray(status=[status])
    array.header.stamp = stamp
    return array


def _arrow(name: str, i: int, pose: Any, scale: float, frame: str, stamp: Any) -> Marker:
    m = Marker(ns=name, id=i, type=Marker.ARROW, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    if pose is None:
        m.action = Marker.DELETE
    else:
        matrix_to_pose(pose, m.pose)
    m.scale.x, m.scale.y, m.scale.z = scale, 0.01, 0.01
    return m


def marker_array(ctrl: Controller, out: StepOutput | None, stamp: Any) -> MarkerArray:
    """``~/markers``: per pose constraint the effector and target arrows and a line between.

    The target and the line take the colour of the step's status (:func:`step_colour`).
    """
    colour = ColorRGBA()
    colour.r, colour.g, colour.b, colour.a = step_colour(out)[1]
    frame = ctrl.tree.root_link
    array = MarkerArray()
    for name in ctrl.pose_constraints:
        eff, target = ctrl.poses(name)
        for i, (pose, scale) in enumerate(((eff, 0.08), (target, 0.12))):
            m = _arrow(name, i, pose, scale, frame, stamp)
            m.color = colour if i == 1 else ColorRGBA(r=0.2, g=0.4, b=1.0, a=1.0)
            array.markers.append(m)
        line = Marker(ns=name, id=2, type=Marker.LINE_LIST, action=Marker.ADD)
        line.header.frame_id, line.header.stamp = frame, stamp
        line.pose.orientation.w = 1.0
        line.scale.x = 0.004
        line.color = colour
        if target is None:
            line.action = Marker.DELETE
        else:
            line.points = [
                Point(x=float(a[0]), y=float(a[1]), z=float(a[2]))
                for a in (eff[:3, 3], target[:3, 3])
            ]
        array.markers.append(line)
    return array


class NodeReports:
    """Publishes ``~/status``, ``~/markers`` and ``/diagnostics``; warns of late odometry.

    The reports when they are due; the warning after each tick (:meth:`warn_odometry_behind`).

    Run after a tick's command (or by the node's timer while the loop does not tick), under the
    tick's lock: :meth:`publish_due`. ``~/status`` and ``~/markers`` only for listeners.

    Args:
        node: the node the publishers belong to (its name, its clock, its logger).
        journal: the node's journal (flushed with the status; its figures in /diagnostics).
        state: the node's state, as the reports read it.
        scheduling: the threads' scheduling in words.
        values: more /diagnostics key-values after ``scheduling``.
        joint_readers: the joint state readers, renewed when DDS never matched them.
        publish_markers: ``publish_markers``.
    """

    def __init__(
        self,
        node: Node,
        journal: JournalPublisher,
        state: Callable[[], NodeState],
        scheduling: Callable[[], str],
        values: Callable[[], list[tuple[str, Any]]],
        joint_readers: list[PolledReader[Any]],
        publish_markers: bool,
    ) -> None:
        self._node = node
        self._journal = journal
        self._state = state
        self._scheduling = scheduling
        self._values = values
        self._joint_readers = joint_readers
        self._publish_markers = publish_markers
        self._diag_pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._status_pub = node.create_publisher(String, "~/status", 10)
        self._marker_pub = node.create_publisher(MarkerArray, "~/markers", 10)
        self._watches: list[MatchWatch] = []  # the joint state readers' (see below)
        self._status_due = self._diagnostics_due = 0.0  # [s] time.monotonic()
        # the controller whose late placements of the base were warned of, and their count
        self._behind: tuple[Controller | None, int] = (None, 0)

    def warn_odometry_behind(self, ctrl: Controller) -> None:
        """A throttled warning while the odometry is too late to place the base by its twist.

        After a tick of ``ctrl`` (one with a ``world_frame``). The base is moved on from its
        odometry's stamp to the joint state's by its twist for at most ``input_timeout / 2``;
        odometry older than that leaves a world target behind the base's motion since (the
        node stops only past ``input_timeout``).
        """
        _, behind, by = ctrl.odometry_counts
        seen, warned = self._behind
        if ctrl is seen and behind == warned:
            return
        self._behind = (ctrl, behind)
        if behind == 0:
            return
        cap = 500.0 * ctrl.config.input_timeout
        text = (
            f"odometry behind: {by * 1e3:.0f} ms older than the joint state, the base moved on "
            f"by its twist over {cap:.0f} ms of it (input_timeout / 2); world targets lag the "
            "base by the rest"
        )
        log_throttled(self._node.get_logger(), "warning", "odometry behind", text, 1.0)

    def set_publish_markers(self, publish: bool) -> None:
        """``publish_markers`` changed: ``~/markers`` on or off."""
        self._publish_markers = publish

    def publish_due(self, t: float) -> None:
        """Publish the reports that are due (after a command, under the tick's lock).

        ``~/status`` and ``~/markers`` every :data:`STATUS_PERIOD`, ``/diagnostics`` every
        :data:`DIAGNOSTICS_PERIOD`.

        Args:
            t: ``time.monotonic()`` [s].
        """
        if t >= self._status_due:
            self._status_due = t + STATUS_PERIOD
            self._publish_status()
        if t >= self._diagnostics_due:
            self._diagnostics_due = t + DIAGNOSTICS_PERIOD
            self._watch_joint_readers(t)
            self._publish_diagnostics()

    def _watch_joint_readers(self, t: float) -> None:
        """Renew a joint state reader DDS never matched with the graph's publishers."""
        if not self._watches:
            self._watches = [MatchWatch(self._node, r) for r in self._joint_readers]
        for watch in self._watches:
            warning = watch.check(t)
            if warning:
                self._node.get_logger().warning(warning)

    def _publish_status(self) -> None:
        # Only for listeners: building and converting these messages takes ~0.5 ms, a late
        # control tick at 1 kHz when nobody looks (no RViz, no ``ros2 topic echo``).
        self._journal.check_subscribers()
        want_status = self._status_pub.get_subscription_count() > 0
        want_markers = self._publish_markers and self._marker_pub.get_subscription_count() > 0
        s = self._state() if want_status or want_markers else None
        if want_status and s is not None:
            self._status_pub.publish(status_message(s))
        self._journal.flush(read_clock(self._node)[0], force=True)  # the ticks since, if stopped
        ctrl = None if s is None else s.ctrl
        if want_markers and s is not None and ctrl is not None and ctrl.has_joint_state:
            stamp = self._node.get_clock().now().to_msg()
            self._marker_pub.publish(marker_array(ctrl, s.out, stamp))

    def _publish_diagnostics(self) -> None:
        s = self._state()
        s.stats.close_window(time.monotonic())
        status = diagnostic_status(
            f"{self._node.get_name()}: controller",
            s,
            read_clock(self._node)[0],
            self._scheduling(),
            self._values(),
            [
                ("journal_subscribers", self._journal.subscribers),
                ("parameters_revision", self._journal.revision),
            ],
        )
        stamp = self._node.get_clock().now().to_msg()
        self._diag_pub.publish(diagnostic_array(status, stamp))


__all__ = [
    "DIAGNOSTICS_PERIOD",
    "LEVELS",
    "STATUS_PERIOD",
    "LoopStats",
    "NodeReports",
    "NodeState",
    "Rejections",
    "diagnostic_array",
    "diagnostic_status",
    "marker_array",
    "status_message",
]
