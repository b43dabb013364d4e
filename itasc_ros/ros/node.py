"""``itasc_node``: the iTaSC velocity controller as a ROS 2 node (thin adapter of the core).

Subscription callbacks push joint states and targets into a
:class:`~itasc_ros.core.controller.Controller`; a wall-rate timer calls ``step`` and publishes
the command. Everything else (URDF source, parameters, diagnostics, status, markers, enable
service, a zero command on shutdown) is plumbing around those ten lines.

Run: ``ros2 run itasc_ros itasc_node --ros-args --params-file config/panda.yaml -p
robot_description:="$(cat urdf/panda.urdf)"`` (or ``python -m itasc_ros.ros.node``).
"""

from __future__ import annotations

import json
import math
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, PoseStamped, TwistStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (
    DurabilityPolicy,
    QoSProfile,
    ReliabilityPolicy,
    qos_profile_sensor_data,
)
from sensor_msgs.msg import JointState
from std_msgs.msg import ColorRGBA, String
from std_srvs.srv import SetBool
from visualization_msgs.msg import Marker, MarkerArray

from ..core import (
    ConfigError,
    Controller,
    InputError,
    ItascError,
    KinematicTree,
    StepOutput,
    spatial,
)
from ..core.controller import apply_updates
from . import parameters as P
from .conversions import (
    COMMAND_TYPES,
    JOINT_TRAJECTORY,
    CommandMessage,
    matrix_to_pose,
    pose_stamped_arrays,
    stamp_or_none,
    twist_stamped_array,
)
from .executors import make_executor
from .markers import TargetMarkers, replace_target_markers

NODE_NAME = "itasc_node"
DIAGNOSTICS_PERIOD = 0.5  # [s] /diagnostics at 2 Hz
STATUS_PERIOD = 0.1  # [s] ~/status and ~/markers at 10 Hz
REJECTION_MEMORY = 2.0  # [s] a rejected input keeps the diagnostic at WARN this long

_COLOURS = {  # status -> RGBA of the markers
    "tracking": (0.1, 0.8, 0.1, 1.0),
    "limited": (0.95, 0.8, 0.1, 1.0),
    "fault": (0.9, 0.1, 0.1, 1.0),
    "idle": (0.5, 0.5, 0.5, 1.0),
}


class _LoopStats:
    """Tick count and solve-time statistics over one diagnostics window (no allocation)."""

    def __init__(self) -> None:
        self.reset(time.monotonic())

    def reset(self, t: float) -> None:
        self.t0 = t
        self.ticks = 0
        self.solves = 0
        self.solve_sum = 0.0
        self.solve_max = 0.0

    def add(self, seconds: float, solved: bool) -> None:
        self.ticks += 1
        if solved:
            self.solves += 1
            self.solve_sum += seconds
            if seconds > self.solve_max:
                self.solve_max = seconds


class ItascNode(Node):
    """The iTaSC node: parameters -> Controller; topics in, velocity commands out.

    Args:
        **kwargs: passed to :class:`rclpy.node.Node` (e.g. ``parameter_overrides``).

    Raises:
        ConfigError: an invalid structural parameter (``command_out_type``...).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NODE_NAME, **kwargs)
        self._constraint_names = P.declare_parameters(self)
        self._kind = str(P.value(self, "command_out_type"))
        if self._kind not in COMMAND_TYPES:
            raise ConfigError(
                f"command_out_type {self._kind!r} is not one of: " + ", ".join(COMMAND_TYPES)
            )
        self._config = P.read_config(self)  # validates the constraints' settings
        self._controller: Controller | None = None
        self._command: CommandMessage | None = None
        self._urdf_source = ""
        self._last_out: StepOutput | None = None
        self._last_js: tuple[Sequence[str], Any, float | None] | None = None
        self._pending_targets: dict[str, PoseStamped] = {}
        self._target_markers: TargetMarkers | None = None
        self._enabled = True
        self._publish_markers = bool(P.value(self, "publish_markers"))
        self._last_rejection = ""
        self._last_rejection_time = -math.inf
        self._rejections = 0
        self._stats = _LoopStats()
        self._diag = {"rate": 0.0, "solve_mean": 0.0, "solve_max": 0.0}
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)

        self._cmd_pub = self.create_publisher(
            COMMAND_TYPES[self._kind],
            str(P.value(self, "command_out_topic")),
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self._status_pub = self.create_publisher(String, "~/status", 10)
        self._marker_pub = self.create_publisher(MarkerArray, "~/markers", 10)
        self.create_subscription(
            JointState,
            str(P.value(self, "joint_topic")),
            self._on_joint_state,
            qos_profile_sensor_data,
        )
        first = True
        for c in self._config.constraints:
            if not c.takes_target:
                continue
            pose_topic = c.target_topic or (
                "~/target_pose" if first else f"~/{c.name}/target_pose"
            )
            twist_topic = c.twist_topic or (
                "~/target_twist" if first else f"~/{c.name}/target_twist"
            )
            self.create_subscription(PoseStamped, pose_topic, self._target_cb(c.name), 10)
            self.create_subscription(TwistStamped, twist_topic, self._twist_cb(c.name), 10)
            first = False
        self.create_service(SetBool, "~/enable", self._on_enable)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        description = str(P.value(self, "robot_description"))
        if description:
            self._load_urdf(description, "parameter")
        else:
            self.create_subscription(
                String,
                "robot_description",
                self._on_robot_description,
                QoSProfile(
                    depth=1,
                    durability=DurabilityPolicy.TRANSIENT_LOCAL,
                    reliability=ReliabilityPolicy.RELIABLE,
                ),
            )
            path = str(P.value(self, "urdf_file"))
            if path:
                self._load_file(path)
        if self._controller is None:
            self.get_logger().info("waiting for a URDF on the robot_description topic")

        self._timer = self.create_timer(
            1.0 / self._config.control_rate, self._on_tick, clock=self._wall
        )
        self.create_timer(STATUS_PERIOD, self._on_status, clock=self._wall)
        self.create_timer(DIAGNOSTICS_PERIOD, self._on_diagnostics, clock=self._wall)

    # ------------------------------------------------------------------------- the loop
    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_tick(self) -> None:
        ctrl, cmd = self._controller, self._command
        if ctrl is None or cmd is None:
            return
        t0 = time.perf_counter()
        now = self._now()
        out = ctrl.step(now)
        if out.publish:
            self._cmd_pub.publish(cmd.fill(out.q, out.qdot, ctrl.period, now))
        self._last_out = out
        self._stats.add(time.perf_counter() - t0, out.result is not None)

    # ------------------------------------------------------------------------- URDF
    def _load_urdf(self, xml: str, source: str) -> str:
        """Build a controller for a URDF; keep the last good one on error. Returns '' or why."""
        try:
            ctrl = Controller(KinematicTree.from_urdf(xml), P.read_config(self))
        except ItascError as exc:
            reason = f"URDF from the {source} rejected, keeping the "
            reason += "current model" if self._controller else "node idle"
            self.get_logger().error(f"{reason}: {exc}")
            return f"{reason}: {exc}"
        self._install(ctrl, source)
        return ""

    def _install(self, ctrl: Controller, source: str) -> None:
        old = self._controller
        if old is not None and old.commanding and self._command is not None:
            self._publish_zero(old, wait=0.0)
        ctrl.set_enabled(self._enabled)
        if self._last_js is not None:
            try:
                ctrl.set_joint_state(
                    self._last_js[0], self._last_js[1], self._now(), self._last_js[2]
                )
            except InputError:
                pass
        if old is not None:
            for name in old.pose_constraints:
                _, target = old.poses(name)
                if target is not None and name in ctrl.pose_constraints:
                    ctrl.set_target(
                        name,
                        "",
                        target[:3, 3],
                        spatial.matrix_to_quat(target),
                        old.target_stamp(name),
                    )
        self._command = CommandMessage(self._kind, ctrl.joint_names)
        self._controller = ctrl
        pending, self._pending_targets = self._pending_targets, {}
        for name, msg in pending.items():
            self._on_marker_pose(name, msg)
        self._config = ctrl.config
        self._urdf_source = source
        self._target_markers = replace_target_markers(  # RViz drag-able targets
            self,
            ctrl,
            self._target_markers,
            bool(P.value(self, "interactive_marker")),
        )
        self.get_logger().info(
            f"model '{ctrl.tree.name}' from the {source}: joints {ctrl.joint_names}, "
            f"constraints {[c.name for c in ctrl.config.constraints]}"
        )

    def _load_file(self, path: str) -> str:
        """Load ``path`` as the URDF (the lowest-precedence source). Returns '' or why not."""
        try:
            with open(path, encoding="utf-8") as fh:
                xml = fh.read()
        except OSError as exc:
            self.get_logger().error(f"cannot read urdf_file {path!r}: {exc}")
            return f"cannot read urdf_file {path!r}: {exc}"
        return self._load_urdf(xml, "file")

    def _on_robot_description(self, msg: String) -> None:
        if str(P.value(self, "robot_description")):
            return  # the parameter wins
        self._load_urdf(msg.data, "topic")

    # ------------------------------------------------------------------------- inputs
    def _reject(self, exc: ItascError) -> None:
        self._rejections += 1
        self._last_rejection = str(exc)
        self._last_rejection_time = time.monotonic()
        self.get_logger().warning(f"input rejected: {exc}", throttle_duration_sec=1.0)

    def _on_joint_state(self, msg: JointState) -> None:
        ctrl = self._controller
        names, pos, src = msg.name, msg.position, stamp_or_none(msg.header.stamp)
        if ctrl is not None:
            try:
                ctrl.set_joint_state(names, pos, self._now(), src)
            except InputError as exc:
                self._reject(exc)
                return
        self._last_js = (names, pos, src)  # kept for a controller rebuilt on a new URDF

    def _target_cb(self, name: str) -> Callable[[PoseStamped], None]:
        def cb(msg: PoseStamped) -> None:
            self._on_marker_pose(name, msg)
            if self._target_markers is not None:  # the RViz marker follows topic targets
                self._target_markers.follow(name)

        return cb

    def _on_marker_pose(
        self, name: str, pose_stamped: PoseStamped, jump: bool = False
    ) -> None:
        """Feed a target pose to constraint ``name`` (target topics and the RViz marker)."""
        ctrl = self._controller
        if ctrl is None:
            self._pending_targets[name] = pose_stamped  # applied once a model is loaded
            return
        frame, p, q, src = pose_stamped_arrays(pose_stamped)
        try:
            ctrl.set_target(name, frame, p, q, self._now(), src, jump=jump)
        except InputError as exc:
            self._reject(exc)

    def _on_marker_snap(self, name: str, pose_stamped: PoseStamped) -> None:
        """The marker snapped back to the effector: a jump, no target velocity estimate."""
        self._on_marker_pose(name, pose_stamped, jump=True)

    def _twist_cb(self, name: str) -> Callable[[TwistStamped], None]:
        def cb(msg: TwistStamped) -> None:
            ctrl = self._controller
            if ctrl is None:
                return
            frame, tw, _ = twist_stamped_array(msg)
            try:
                ctrl.set_target_twist(name, frame, tw, self._now())
            except InputError as exc:
                self._reject(exc)

        return cb

    def _on_enable(self, request: SetBool.Request, response: SetBool.Response) -> Any:
        self._enabled = bool(request.data)
        if self._controller is not None:
            self._controller.set_enabled(self._enabled)
        response.success = True
        response.message = "enabled" if self._enabled else "disabled: zero command sent once"
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------------- parameters
    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        updates: dict[str, Any] = {}
        description: str | None = None
        urdf_file: str | None = None
        for p in params:
            if p.name == "robot_description":
                description = str(p.value or "")
            elif p.name == "urdf_file":
                urdf_file = str(p.value or "")
            elif p.name == "publish_markers":
                continue
            else:
                upd = P.live_update(p.name, p.value)
                if upd is not None:
                    updates.update(upd)
        try:  # validate everything before changing anything
            config = apply_updates(self._config, **updates) if updates else self._config
            new = Controller(KinematicTree.from_urdf(description), config) if description else None
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        except ItascError as exc:
            self.get_logger().error(f"robot_description rejected: {exc}")
            return SetParametersResult(
                successful=False, reason=f"robot_description rejected: {exc}"
            )
        if new is not None:
            self._install(new, "parameter")
        elif urdf_file and self._urdf_source in ("", "file"):
            reason = self._load_file(urdf_file)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        if updates:
            if self._controller is not None:
                self._controller.update_parameters(**updates)  # validated above
                config = self._controller.config
            self._config = config
        for p in params:
            if p.name == "publish_markers":
                self._publish_markers = bool(p.value)
            elif p.name == "control_rate":
                self._timer.timer_period_ns = int(1e9 / float(p.value))
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------------- outputs
    def _publish_zero(self, ctrl: Controller, wait: float = 0.5) -> bool:
        """Publish a zero command (JointTrajectory needs a joint state); wait for delivery."""
        cmd = self._command
        if cmd is None or (self._kind == JOINT_TRAJECTORY and not ctrl.has_joint_state):
            return False
        zeros = np.zeros(ctrl.n_joints)
        self._cmd_pub.publish(cmd.fill(ctrl.q, zeros, ctrl.period, self._now()))
        if wait > 0.0:
            try:
                self._cmd_pub.wait_for_all_acked(Duration(seconds=wait))
            except Exception:  # older rmw: give DDS a moment instead
                time.sleep(min(wait, 0.2))
        return True

    def shutdown_zero(self, wait: float = 1.0) -> bool:
        """Publish a zero command before exit (ros2_control holds the last command)."""
        if self._controller is None:
            return False
        sent = self._publish_zero(self._controller, wait)
        if sent:
            self.get_logger().info("shutdown: zero command sent")
        return sent

    def _status_colour(self, out: StepOutput | None) -> str:
        if out is None or out.status in ("waiting", "stale", "disabled"):
            return "idle"
        if out.status == "fault" or (out.result is not None and out.result.damping > 0.0):
            return "fault"
        r = out.result
        if r is not None and (r.velocity_scale < 1.0 or bool(r.locked.any())):
            return "limited"
        return "tracking"

    def _on_status(self) -> None:
        ctrl, out = self._controller, self._last_out
        now = self._now()
        info: dict[str, Any] = {
            "status": "no_model" if ctrl is None else (out.status if out else "waiting"),
            "reason": "no URDF yet" if ctrl is None else (out.reason if out else ""),
            "enabled": self._enabled,
            "loop_rate": round(self._diag["rate"], 1),
            "rejections": self._rejections,
            "last_rejection": self._last_rejection,
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
        self._status_pub.publish(String(data=json.dumps(info)))
        if self._publish_markers and ctrl is not None and ctrl.has_joint_state:
            self._marker_pub.publish(self._markers(ctrl, out, now))

    def _markers(self, ctrl: Controller, out: StepOutput | None, now: float) -> MarkerArray:
        colour = ColorRGBA()
        colour.r, colour.g, colour.b, colour.a = _COLOURS[self._status_colour(out)]
        array = MarkerArray()
        stamp = self.get_clock().now().to_msg()
        for name in ctrl.pose_constraints:
            eff, target = ctrl.poses(name)
            for i, (pose, scale) in enumerate(((eff, 0.08), (target, 0.12))):
                m = Marker(ns=name, id=i, type=Marker.ARROW, action=Marker.ADD)
                m.header.frame_id, m.header.stamp = ctrl.tree.root_link, stamp
                if pose is None:
                    m.action = Marker.DELETE
                else:
                    matrix_to_pose(pose, m.pose)
                m.scale.x, m.scale.y, m.scale.z = scale, 0.01, 0.01
                m.color = colour if i == 1 else ColorRGBA(r=0.2, g=0.4, b=1.0, a=1.0)
                array.markers.append(m)
            line = Marker(ns=name, id=2, type=Marker.LINE_LIST, action=Marker.ADD)
            line.header.frame_id, line.header.stamp = ctrl.tree.root_link, stamp
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

    def _on_diagnostics(self) -> None:
        t = time.monotonic()
        st = self._stats
        span = t - st.t0
        self._diag = {
            "rate": st.ticks / span if span > 0 else 0.0,
            "solve_mean": st.solve_sum / st.solves if st.solves else 0.0,
            "solve_max": st.solve_max,
        }
        st.reset(t)
        ctrl, out = self._controller, self._last_out
        now = self._now()
        status = DiagnosticStatus(
            name=f"{self.get_name()}: controller", hardware_id=ctrl.tree.name if ctrl else ""
        )
        values: list[tuple[str, Any]] = [
            ("loop_rate_hz", f"{self._diag['rate']:.1f}"),
            ("control_rate_hz", f"{self._config.control_rate:.1f}"),
            ("solve_time_mean_ms", f"{1e3 * self._diag['solve_mean']:.3f}"),
            ("solve_time_max_ms", f"{1e3 * self._diag['solve_max']:.3f}"),
            ("urdf_source", self._urdf_source or "none"),
            ("enabled", self._enabled),
            ("rejections", self._rejections),
            ("last_rejection", self._last_rejection),
        ]
        level, message = DiagnosticStatus.OK, "tracking"
        if ctrl is None:
            level, message = DiagnosticStatus.WARN, "no URDF yet"
        else:
            values.append(("joint_state_age_s", _age(now, ctrl.joint_state_stamp)))
            for name in ctrl.pose_constraints:
                values.append((f"target_age_s.{name}", _age(now, ctrl.target_stamp(name))))
            if out is not None:
                values.append(("status", out.status))
                message = out.status if not out.reason else f"{out.status}: {out.reason}"
                if out.status == "stale":
                    level = DiagnosticStatus.WARN
                elif out.status == "fault":
                    level = DiagnosticStatus.ERROR
                r = out.result
                if r is not None:
                    values += [
                        ("sigma_min", f"{r.sigma_min:.5f}"),
                        ("damping", f"{r.damping:.5f}"),
                        ("locked_joints", ", ".join(r.locked_joints)),
                        ("velocity_scale", f"{r.velocity_scale:.4f}"),
                    ]
            if self._diag["rate"] < 0.9 * self._config.control_rate:
                level = max(level, DiagnosticStatus.WARN)
                message += f"; loop at {self._diag['rate']:.0f} Hz"
        if t - self._last_rejection_time < REJECTION_MEMORY:
            level = max(level, DiagnosticStatus.WARN)
            message = f"input rejected: {self._last_rejection}; {message}"
        status.level = level
        status.message = message
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(array)


def _age(now: float, stamp: float) -> str:
    return "never" if not math.isfinite(stamp) else f"{now - stamp:.3f}"


def main(args: list[str] | None = None) -> int:
    """Run the node until SIGINT/SIGTERM; publish a zero command before exiting."""
    try:
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except (ImportError, TypeError):  # pragma: no cover - rclpy without the option
        rclpy.init(args=args)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    node: ItascNode | None = None
    code = 0
    try:
        node = ItascNode()
        executor = make_executor()
        executor.add_node(node)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ItascError as exc:
        rclpy.logging.get_logger(NODE_NAME).fatal(str(exc))
        code = 1
    finally:
        if node is not None:
            if rclpy.ok():
                node.shutdown_zero()
            node.destroy_node()
        rclpy.try_shutdown()
        for s, h in previous.items():
            signal.signal(s, h)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
