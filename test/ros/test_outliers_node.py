"""Outliers in a target stream over DDS: the robot goes where the accepted inputs ask.

Processes: ``itasc_node`` (config/panda.yaml, the bundled urdf/panda.urdf as its
``robot_description`` parameter) and the simulated robot (``python -m itasc_ros.tools.sim_robot``)
over shared-memory DDS in a private domain. This process streams a good target at 50 Hz (a slow
circle around the home hand pose, orientation held) and slips hostile inputs into the stream, one
every ``SPACING`` seconds: three poses with a huge x (1e149, 1e12, 1e6 m: beyond the reach, to be
refused), the stream moved 1 m off but within reach (a jump: followed, without feed-forward,
for ``JUMP_HOLD`` stream periods) and one 1e6 m/s TwistStamped (capped to ``max_target_speed``).

Oracles: the effector position computed here with the core tree's forward kinematics from the
simulator's own ``joint_states``, against the good target at the same instant (the tracking error
must come back to its quiet baseline and the extra error stay below bounds derived from the gain,
the speed limits and the joint velocity limits); the node's ``/diagnostics`` counters; every
command checked against the URDF velocity limits; the node's exit status and log.
"""

from __future__ import annotations

import gc
import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped
from procs import (
    PANDA_URDF,
    REPO,
    SIM_ROBOT_MODULE,
    CommandChecker,
    RosTestClient,
    read_log,
    ros_client,
    start_ros,
    stop_process,
)
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from itasc_ros.core import KinematicTree
from itasc_ros.core.kinematics import home_pose, spatial
from itasc_ros.core.paths import path_point

# judged on a real-time run (millimetres of tracking, joint states and commands per second):
# make test runs it with the machine to itself
pytestmark = [pytest.mark.dds, pytest.mark.alone]

CONFIG = REPO / "config" / "panda.yaml"
NODE = "/itasc_node"
CONSTRAINT = "ee"  # the pose constraint of config/panda.yaml
EFFECTOR = "panda_hand"
ROOT = "panda_link0"
DIAG_NAME = "itasc_node: controller"
TIMEOUT = 120.0  # [s] start-up, generous: the machine is shared (a cold kernel cache: ~30 s)
SIM_RATE = 250.0  # [Hz] integration and joint_states rate of the simulated robot

STREAM_RATE = 50.0  # [Hz] the good target stream
RADIUS = 0.1  # [m] circle around the home hand position
SPEED = 0.25  # [m/s] along the circle
PLANE = "yz"  # of the root frame (as itasc-demo)
SETTLE = 2.0  # [s] at least, from the stream's start (a 0.1 m step onto the circle) to baseline
SETTLED = 0.01  # [m] the hand is on the circle: this near its target for SETTLED_FOR
SETTLED_FOR = 0.5  # [s]
SETTLE_TIMEOUT = 60.0  # [s] the longest the node may take to be seen tracking the stream
BASELINE = 1.0  # [s] quiet window before the first event: its largest error is the baseline
BASELINE_MAX = 0.02  # [m] the tracking works (not tracking: the circle's radius, 0.1 m)
MAX_STREAM_STALL = 0.08  # [s] a longer gap between two stream ticks disturbs what follows
MIN_JUDGED = 3  # events judged (not disturbed by a stall of the stream) of the five
SPACING = 2.0  # [s] between two hostile inputs (and after the last one)
RECOVERY_BAND = 0.005  # [m] above the baseline error
RECOVERY_TIME = 1.0  # [s] to get back within the band after an event
JUMP_OFFSET = 1.0  # [m] of the within-reach jump, along +x (across the circle's plane)
# [stream periods] the jump lasts: a node's tick takes it even when the node's executor
# delivers a few poses at once (one jumped pose could be replaced by the next before any tick)
JUMP_HOLD = 3
TWIST_SPEED = 1e6  # [m/s] of the hostile twist, along +x
EDGE = 0.1  # [s] an event's window ends this long before the next event


def controller_params() -> dict[str, Any]:
    """The ``ros__parameters`` of itasc_node in config/panda.yaml."""
    return dict(yaml.safe_load(CONFIG.read_text())["/**"]["ros__parameters"])


@dataclass
class Event:
    """One hostile input slipped into the good stream.

    Attributes:
        name: label of the printed table.
        kind: 'outlier' (a pose with ``position.x = value``, sent instead of the good pose of
            its stream tick), 'jump' (the good pose moved by ``value`` [m] along +x, instead of
            the good poses of its tick and the ``JUMP_HOLD - 1`` next) or 'twist' (a
            TwistStamped of ``value`` [m/s] along +x, sent besides the good pose of its tick).
        value: see ``kind``.
        due: when to send it [s] after the stream's start.
        sent: ROS time [s] it was published (NaN until then).
        next_good: ROS time [s] of the next good pose published after it (NaN until then).
    """

    name: str
    kind: str
    value: float
    due: float
    sent: float = math.nan
    next_good: float = math.nan


@dataclass
class Rig:
    """The running processes and this process's ROS side."""

    client: RosTestClient
    tree: KinematicTree
    params: dict[str, Any]
    node: Any  # subprocess.Popen
    sim: Any  # subprocess.Popen
    checker: CommandChecker
    js: list[tuple[float, JointState]]
    pose_pub: Any
    twist_pub: Any


@dataclass
class RunResult:
    """What the stream run measured (ROS times [s], errors [m])."""

    t0: float  # ROS time of the stream's start (phase 0 of the circle)
    settled: float  # ROS time the hand was seen on the circle: the baseline window's start
    end: float  # ROS time the stream stopped
    events: list[Event]
    stamps: np.ndarray  # (k,) joint state header stamps
    q: np.ndarray  # (k, n) joint positions, tree order
    effector: np.ndarray  # (k, 3) effector positions
    target: np.ndarray  # (k, 3) good target positions at the same stamps
    error: np.ndarray  # (k,) |effector - target|
    baseline: float  # largest error of the quiet window before the first event
    good_sent: list[float] = field(default_factory=list)  # ROS times of the good poses
    ticks: list[float] = field(default_factory=list)  # ROS times of every stream tick
    stream_overruns: int = 0  # stream ticks more than one period late
    stalls: list[tuple[float, float]] = field(default_factory=list)  # ticks > MAX_STREAM_STALL


def ros_now(client: RosTestClient) -> float:
    """ROS time [s] of the test client (the system clock, as the simulator's stamps)."""
    return client.node.get_clock().now().nanoseconds * 1e-9


class TargetStream(threading.Thread):
    """Publishes the good target at ``STREAM_RATE`` and the hostile events when they are due.

    Args:
        rig: the publishers and the client clock.
        center: (3,) circle centre [m] (the home hand position).
        quat: (4,) held orientation (x, y, z, w).
        t0: ROS time [s] of the circle's phase 0.
        events: sorted by ``due``.
    """

    def __init__(
        self, rig: Rig, center: np.ndarray, quat: np.ndarray, t0: float, events: list[Event]
    ) -> None:
        super().__init__(name="target_stream", daemon=True)
        self.rig = rig
        self.center = center
        self.quat = quat
        self.t0 = t0
        self.events = events
        self.good_sent: list[float] = []
        self.ticks: list[float] = []  # ROS times [s] of every tick
        self.overruns = 0
        self._stop_event = threading.Event()
        self._awaiting_good: Event | None = None
        self._jump_left = 0  # stream ticks the jump still lasts
        self._jump_offset = 0.0  # [m] along +x

    def good_position(self, t: float) -> np.ndarray:
        """(3,) the good target at ROS time ``t`` [s]."""
        return path_point(t - self.t0, self.center, RADIUS, SPEED, "circle", PLANE)[0]

    def _pose(self, position: np.ndarray, now: Any) -> PoseStamped:
        msg = PoseStamped()
        msg.header.frame_id = ROOT
        msg.header.stamp = now.to_msg()
        p, o = msg.pose.position, msg.pose.orientation
        p.x, p.y, p.z = (float(v) for v in position)
        o.x, o.y, o.z, o.w = (float(v) for v in self.quat)
        return msg

    def run(self) -> None:
        """Publish until :meth:`stop`: one message per tick on an absolute schedule."""
        period = 1.0 / STREAM_RATE
        clock = self.rig.client.node.get_clock()
        upcoming = list(self.events)
        deadline = time.monotonic()
        while not self._stop_event.is_set():
            now = clock.now()
            t = now.nanoseconds * 1e-9
            self.ticks.append(t)
            position = self.good_position(t)
            event = upcoming[0] if upcoming and t - self.t0 >= upcoming[0].due else None
            if event is not None:
                upcoming.pop(0)
                event.sent = t
            if event is not None and event.kind == "outlier":
                bad = position.copy()
                bad[0] = event.value
                self.rig.pose_pub.publish(self._pose(bad, now))
                self._awaiting_good = event  # the next good pose ends its effect too
            elif (event is not None and event.kind == "jump") or (
                event is None and self._jump_left > 0
            ):
                if event is not None:  # the jump starts
                    self._jump_left, self._jump_offset = JUMP_HOLD, float(event.value)
                    self._awaiting_good = event
                self._jump_left -= 1
                moved = position + np.array([self._jump_offset, 0.0, 0.0])
                self.rig.pose_pub.publish(self._pose(moved, now))
            else:
                self.rig.pose_pub.publish(self._pose(position, now))
                self.good_sent.append(t)
                if self._awaiting_good is not None:
                    self._awaiting_good.next_good = t
                    self._awaiting_good = None
                if event is not None:  # a twist, besides the good pose
                    tw = TwistStamped()
                    tw.header.frame_id = ROOT
                    tw.header.stamp = clock.now().to_msg()
                    tw.twist.linear.x = float(event.value)
                    self.rig.twist_pub.publish(tw)
            deadline += period
            delay = deadline - time.monotonic()
            if delay < -period:  # more than a period late: restart the schedule, no burst
                self.overruns += 1
                deadline = time.monotonic()
            elif delay > 0.0:
                time.sleep(delay)

    def stop(self) -> None:
        """Stop publishing and wait for the thread."""
        self._stop_event.set()
        self.join(2.0)


def diag_values(status: Any) -> dict[str, str]:
    """The key/value pairs of a DiagnosticStatus."""
    return {kv.key: kv.value for kv in status.values}


def controller_statuses(client: RosTestClient) -> list[tuple[float, dict[str, str]]]:
    """(header stamp [s], values) of every ``itasc_node: controller`` status received."""
    out = []
    for msg in client.received("/diagnostics"):
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        out += [(stamp, diag_values(st)) for st in msg.status if st.name == DIAG_NAME]
    return out


def hand_speed_bound(tree: KinematicTree, q: np.ndarray) -> float:
    """Largest effector speed [m/s] the joint velocity limits allow at ``q`` (n,).

    ``|J_v q'| <= sum_i |J_v[:, i]| |q'_i| <= sum_i |J_v[:, i]| vmax_i`` (the node clips each
    joint to its URDF limit, the simulator too).
    """
    jac = tree.jacobian(q, EFFECTOR)[:3]  # (3, n) linear rows
    return float(np.linalg.norm(jac, axis=0) @ tree.velocity_limits)


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, dds_domain: int) -> Iterator[Rig]:
    """Node and simulated robot running, this process subscribed and publishing."""
    tmp = tmp_path_factory.mktemp("outliers")
    description = tmp / "robot_description.yaml"  # the URDF as a launch file passes it
    doc = {"/**": {"ros__parameters": {"robot_description": PANDA_URDF.read_text()}}}
    description.write_text(json.dumps(doc))  # JSON is YAML
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    params = controller_params()
    assert params["joints"] == tree.joint_names  # the command's order is the tree's
    with ros_client(dds_domain, "outliers_test_client") as client:
        client.collect(DiagnosticArray, "/diagnostics", 100)
        js = client.collect(
            JointState,
            "/joint_states",
            QoSProfile(depth=100, reliability=ReliabilityPolicy.BEST_EFFORT),
        )
        checker = CommandChecker(client, tree.velocity_limits, params["command_out_topic"])
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        pose_pub = client.publisher(PoseStamped, f"{NODE}/target_pose", reliable)
        twist_pub = client.publisher(TwistStamped, f"{NODE}/target_twist", reliable)
        sim = start_ros(
            dds_domain,
            f"urdf_file:={PANDA_URDF}",
            f"rate:={SIM_RATE}",
            module=SIM_ROBOT_MODULE,
            name="outliers_sim_robot",
        )
        node = start_ros(
            dds_domain, params_files=[CONFIG, description], name="outliers_itasc_node"
        )
        rig_ = Rig(client, tree, params, node, sim, checker, js, pose_pub, twist_pub)
        try:
            client.wait_for_subscribers(pose_pub, 1, TIMEOUT)
            client.wait_for_subscribers(twist_pub, 1, TIMEOUT)
            client.wait_for(lambda: len(js) > 10, TIMEOUT, "the simulator's joint_states")
            client.wait_for(
                lambda: any(
                    v.get("urdf_source") == "parameter" and v.get("status") == "waiting"
                    for _, v in controller_statuses(client)
                ),
                TIMEOUT,
                "the node's diagnostics: model from the parameter, waiting for a target",
            )
            yield rig_
        except BaseException:
            print(read_log(node)[-6000:])
            print(read_log(sim)[-3000:])
            raise
        finally:
            stop_process(node)
            stop_process(sim)


@pytest.fixture(scope="module")
def run(rig: Rig) -> RunResult:
    """The stream with the five hostile inputs, and the tracking error it gave."""
    client, tree = rig.client, rig.tree
    home = tree.forward_kinematics(home_pose(tree), EFFECTOR)  # (4, 4)
    quat = spatial.matrix_to_quat(home)
    events = [  # due once the hand is seen on the circle (below)
        Event("x = 1e149 m", "outlier", 1e149, math.inf),
        Event("x = 1e12 m", "outlier", 1e12, math.inf),
        Event("x = 1e6 m", "outlier", 1e6, math.inf),
        Event(f"jump {JUMP_OFFSET:g} m", "jump", JUMP_OFFSET, math.inf),
        Event(f"twist {TWIST_SPEED:g} m/s", "twist", TWIST_SPEED, math.inf),
    ]
    t0 = ros_now(client)
    stream = TargetStream(rig, home[:3, 3].copy(), quat, t0, events)
    gc.collect()  # not in the middle of the stream: a full collection here stalls it
    gc.freeze()
    stream.start()
    try:
        # The baseline window starts once the hand is seen on the circle, not a fixed time
        # after the stream's start: the node's target reader may match this process's
        # writer seconds after the writer matched it (a discovery announcement lost when
        # participants start together, doc/replay.md "Start the recorder once the node
        # runs"), and the targets sent before are lost: the hand then stayed at the
        # circle's centre, a "baseline" of 100 mm (the radius).
        settled = _wait_on_the_circle(rig, stream, t0 + SETTLE)
        first = settled - t0 + BASELINE
        for i, ev in enumerate(events):
            ev.due = first + i * SPACING
        duration = events[-1].due + SPACING
        while ros_now(client) - t0 < duration:
            assert rig.node.poll() is None, read_log(rig.node)[-6000:]
            time.sleep(0.1)
    finally:
        stream.stop()
        gc.unfreeze()
    end = ros_now(client)
    time.sleep(2.0 * 0.5 + 0.2)  # two more /diagnostics (2 Hz) with the final counters
    # This process's publisher thread descheduled (2 shared cores) for longer than a few
    # periods: the pose stamped before the stall arrives late and the node rightly holds the
    # target meanwhile, while the circle moves on. The stream is not rerun: the joint states
    # from such a stall until RECOVERY_TIME after it measure the rig, not the node, and are
    # left out of the judgement (:func:`disturbed`).
    gaps = np.diff(stream.ticks)
    stalls = [
        (stream.ticks[k], stream.ticks[k + 1]) for k in np.flatnonzero(gaps > MAX_STREAM_STALL)
    ]
    names = tree.joint_names
    rows = []
    for _, msg in list(rig.js):
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if settled <= stamp <= end:
            index = {n: i for i, n in enumerate(msg.name)}
            rows.append((stamp, [msg.position[index[n]] for n in names]))
    rows.sort(key=lambda r: r[0])
    stamps = np.array([r[0] for r in rows])  # (k,)
    q = np.array([r[1] for r in rows])  # (k, n)
    effector = np.array([tree.forward_kinematics(qi, EFFECTOR)[:3, 3] for qi in q])
    target = np.array([stream.good_position(t) for t in stamps])
    error = np.linalg.norm(effector - target, axis=1)
    quiet = (stamps >= settled) & (stamps < t0 + first)
    assert np.count_nonzero(quiet) > 0.5 * SIM_RATE * BASELINE, "too few joint states"
    calm = quiet & ~_disturbed(stamps, stalls)
    assert np.any(calm), f"the target stream stalled over the whole quiet window: {stalls}"
    return RunResult(
        t0=t0,
        settled=settled,
        end=end,
        events=events,
        stamps=stamps,
        q=q,
        effector=effector,
        target=target,
        error=error,
        baseline=float(error[calm].max()),
        good_sent=stream.good_sent,
        ticks=stream.ticks,
        stream_overruns=stream.overruns,
        stalls=stalls,
    )


def _disturbed(stamps: np.ndarray, stalls: list[tuple[float, float]]) -> np.ndarray:
    """(k,) True where a stall of the stream (ROS times [s] of the ticks around it) still acts
    at ``stamps`` (k,): from the stall until ``RECOVERY_TIME`` after it."""
    out = np.zeros(stamps.shape, dtype=bool)
    for before, after in stalls:
        out |= (stamps >= before) & (stamps <= after + RECOVERY_TIME)
    return out


def disturbed(r: RunResult) -> np.ndarray:
    """(k,) True at the run's joint states that a stall of the target stream disturbed."""
    return _disturbed(r.stamps, r.stalls)


def _wait_on_the_circle(rig: Rig, stream: TargetStream, earliest: float) -> float:
    """ROS time [s] from which the hand stayed within ``SETTLED`` of the stream's target for
    ``SETTLED_FOR`` (the joint states' stamps; not before ``earliest``).

    Raises:
        AssertionError: not within ``SETTLE_TIMEOUT`` (the node's log shows why).
    """
    client, tree = rig.client, rig.tree
    names = tree.joint_names
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        assert rig.node.poll() is None, read_log(rig.node)[-6000:]
        now = ros_now(client)
        since = max(earliest, now - SETTLED_FOR)
        recent = []
        for _, msg in list(rig.js)[-int(2 * SIM_RATE * SETTLED_FOR) :]:
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            if stamp >= since:
                index = {n: i for i, n in enumerate(msg.name)}
                q = np.array([msg.position[index[n]] for n in names])
                hand = tree.forward_kinematics(q, EFFECTOR)[:3, 3]
                recent.append(float(np.linalg.norm(hand - stream.good_position(stamp))))
        if (
            now >= earliest + SETTLED_FOR
            and len(recent) > 0.5 * SIM_RATE * SETTLED_FOR
            and max(recent) < SETTLED
        ):
            return now
        assert time.monotonic() < deadline, (
            f"the hand was not on the target's circle within {SETTLE_TIMEOUT:g} s (last "
            f"{len(recent)} joint states: up to {max(recent, default=math.nan) * 1e3:.1f} mm "
            f"off); the node's log:\n{read_log(rig.node)[-3000:]}"
        )
        time.sleep(0.1)


# --------------------------------------------------------------------------- analysis
def event_window(r: RunResult, i: int) -> tuple[float, float]:
    """ROS times [s] of event ``i``'s window: from its sending to shortly before the next."""
    ev = r.events[i]
    stop = r.events[i + 1].sent if i + 1 < len(r.events) else r.end
    return ev.sent, stop - EDGE


def event_bound(r: RunResult, rig: Rig, ev: Event) -> tuple[float, str]:
    """The largest extra tracking error [m] event ``ev`` may cause, and how it is derived.

    K is the constraint's gain, d = 1/control_rate + 1/SIM_RATE the loop's delay (a node tick
    and a simulator tick), v = SPEED the good target's speed.

    * outlier (refused): the node keeps the previous good target and its twist estimate; one
      good pose is missing, so the held target lags one more stream period: at most
      v / STREAM_RATE (5 mm).
    * jump (accepted, no feed-forward): the arm is pulled toward it from its arrival until the
      next good pose, T = the measured gap between the two publications, plus d; no faster than
      the joint velocity limits allow (:func:`hand_speed_bound`, largest over the window);
      then the twist estimate restarts from zero (the return is a jump too), which costs at
      most the feedback-only lag v / K: ``vmax_hand (T + d) + v / K``.
    * twist (capped to max_target_speed): a wrong feed-forward of at most
      dv = max_target_speed + v, in force for input_timeout T_in (then the estimate from the
      good poses takes over again), against the gain K: the first-order error
      ``e' = dv - K e`` reaches at most ``dv / K (1 - exp(-K T_in))``; the loop's delay
      (K d = 0.16 < 1/e: the delayed loop does not overshoot) adds at most dv d.
    """
    p = rig.params
    gain = float(p["constraints"][CONSTRAINT]["gain"])
    d = 1.0 / float(p["control_rate"]) + 1.0 / SIM_RATE
    if ev.kind == "outlier":
        return SPEED / STREAM_RATE, "v/rate"
    if ev.kind == "jump":
        t_gap = ev.next_good - ev.sent
        sel = (r.stamps >= ev.sent - 0.1) & (r.stamps <= ev.next_good + 0.2)
        vmax = max(hand_speed_bound(rig.tree, qi) for qi in r.q[sel])
        bound = vmax * (t_gap + d) + SPEED / gain
        return bound, f"vmax_hand {vmax:.2f} m/s x (T {t_gap * 1e3:.1f} + d {d * 1e3:.0f} ms)"
    dv = float(p["max_target_speed"]) + SPEED
    t_in = float(p["input_timeout"])
    bound = dv / gain * (1.0 - math.exp(-gain * t_in)) + dv * d
    return bound, f"dv/K (1 - exp(-K T_in)) + dv d; dv {dv:g} m/s, K {gain:g}, T_in {t_in:g} s"


def recovery(r: RunResult, i: int) -> tuple[float, float, float]:
    """(extra error [m], recovery time [s], x displacement [m]) of event ``i``.

    The extra error is the largest ``error - baseline`` in the event's window; the recovery
    time is from the event until the error stays within ``baseline + RECOVERY_BAND`` for the
    rest of the window (inf if it never does); the x displacement is the effector's largest
    (signed) offset from the good target along x, across the circle's plane, where the jump and
    the twist push it.
    """
    start, stop = event_window(r, i)
    sel = (r.stamps >= start) & (r.stamps <= stop)
    t, e = r.stamps[sel], r.error[sel]
    assert len(t) > 0.5 * SIM_RATE * (stop - start), f"few joint states for {r.events[i].name}"
    outside = np.flatnonzero(e > r.baseline + RECOVERY_BAND)
    back = 0.0  # never outside the band
    if outside.size:
        after = outside[-1] + 1  # the first joint state of the last stretch within the band
        back = float(t[after] - start) if after < len(t) else math.inf
    ex = r.effector[sel, 0] - r.target[sel, 0]  # (k,) error along x, across the circle
    dx = float(ex[np.argmax(np.abs(ex))])
    return float(e.max() - r.baseline), float(back), dx


# --------------------------------------------------------------------------- tests
def test_the_robot_goes_where_the_accepted_inputs_ask(run: RunResult, rig: Rig) -> None:
    """Each hostile input: back within the band in time, extra error below its bound."""
    r = run
    assert all(math.isfinite(ev.sent) for ev in r.events), [ev.sent for ev in r.events]
    assert all(math.isfinite(ev.next_good) for ev in r.events if ev.kind in ("outlier", "jump"))
    gaps = np.diff(r.ticks)
    print(
        f"\nstream: {len(r.good_sent)} good poses, period {np.median(gaps) * 1e3:.1f} ms median"
        f" / {gaps.max() * 1e3:.1f} ms max, {r.stream_overruns} overruns; joint states "
        f"{len(r.stamps)}; baseline (max error over {BASELINE:g} s before the first event) "
        f"{r.baseline * 1e3:.2f} mm"
    )
    # Without the tracking itself working, nothing below would mean anything.
    assert r.baseline < BASELINE_MAX, f"baseline tracking error {r.baseline * 1e3:.1f} mm"
    print(
        f"{'event':<18}{'t [s]':>7}{'extra [mm]':>12}{'bound [mm]':>12}{'back in [s]':>13}"
        f"{'dx [mm]':>10}  bound from"
    )
    failures = []
    whole_bound = 0.0
    stalled = disturbed(r)
    judged = 0
    for i, ev in enumerate(r.events):
        extra, back, dx = recovery(r, i)
        bound, how = event_bound(r, rig, ev)
        whole_bound = max(whole_bound, bound)
        start, stop = event_window(r, i)
        if np.any(stalled[(r.stamps >= start) & (r.stamps <= stop)]):
            print(f"{ev.name:<18}{ev.sent - r.t0:>7.2f}  not judged: the target stream stalled")
            continue
        judged += 1
        print(
            f"{ev.name:<18}{ev.sent - r.t0:>7.2f}{extra * 1e3:>12.2f}{bound * 1e3:>12.1f}"
            f"{back:>13.3f}{dx * 1e3:>10.1f}  {how}"
        )
        if back > RECOVERY_TIME:
            failures.append(f"{ev.name}: back within the band after {back:.3f} s")
        if extra > bound:
            failures.append(f"{ev.name}: extra error {extra * 1e3:.2f} > {bound * 1e3:.1f} mm")
        # Refused: the robot does not go toward it; accepted (jump, twist along +x): it does.
        if ev.kind == "outlier" and abs(dx) > RECOVERY_BAND:
            failures.append(f"{ev.name}: refused, yet moved {dx * 1e3:.1f} mm along +x")
        # (A jump acts for JUMP_HOLD stream periods only, and less when the next good pose is
        # delivered early: its acceptance is shown by the target_jumps count in /diagnostics.
        # The capped twist acts for input_timeout: ~75 mm.)
        if ev.kind == "twist" and dx < RECOVERY_BAND:
            failures.append(f"{ev.name}: accepted, yet only {dx * 1e3:.1f} mm along +x")
    assert judged >= MIN_JUDGED, f"{judged} events judged: the stream stalled {r.stalls}"
    during = (r.stamps >= r.events[0].sent) & ~stalled
    whole = float(r.error[during].max() - r.baseline)
    print(
        f"whole run: largest extra error {whole * 1e3:.2f} mm (bound {whole_bound * 1e3:.1f} mm, "
        f"the largest event bound); stream stalls (> {MAX_STREAM_STALL * 1e3:.0f} ms) "
        + (", ".join(f"{(b - a) * 1e3:.0f} ms at {a - r.t0:.2f} s" for a, b in r.stalls) or "none")
    )
    assert whole <= whole_bound, f"largest extra error {whole * 1e3:.2f} mm"
    assert not failures, failures


def test_diagnostics_report_refusals_jumps_and_capped_twists(run: RunResult, rig: Rig) -> None:
    """/diagnostics counts the three refusals (with their reasons), the jump, the capped twist."""
    statuses = controller_statuses(rig.client)
    before = [v for t, v in statuses if t < run.events[0].sent]
    assert before, "no /diagnostics before the first event"
    last_before, final = before[-1], statuses[-1][1]
    key_jumps, key_capped = f"target_jumps.{CONSTRAINT}", f"target_twists_capped.{CONSTRAINT}"
    zero = {"rejections": "0", key_jumps: "0", key_capped: "0"}
    start = ([v for t, v in statuses if t < run.t0] or [zero])[-1]  # counters before the stream
    rejections = int(final["rejections"]) - int(last_before["rejections"])
    jumps = int(final[key_jumps]) - int(last_before[key_jumps])
    capped = int(final[key_capped]) - int(last_before[key_capped])
    reasons = sorted({v["last_rejection"] for _, v in statuses if v["last_rejection"]})
    print(
        f"\ndiagnostics: rejections +{rejections}, {key_jumps} {final[key_jumps]} "
        f"(+{jumps}), {key_capped} {final[key_capped]} (+{capped}); last_rejection seen:"
    )
    for reason in reasons:
        print(f"  {reason}")
    # The good stream is never refused nor read as a jump; the three outliers are refused. An
    # input waits as the latest of its topic until a tick takes it: on a starved machine a tick
    # may come after the next good pose replaced an outlier (20 ms later), which is then never
    # taken (counted in inputs_replaced_before_taken; never applied: the tracking oracles show
    # where the robot went). So each outlier is refused, or was replaced unseen.
    for key in ("rejections", key_jumps, key_capped):
        assert int(last_before[key]) == int(start[key]), (key, last_before["last_rejection"])
    key_replaced = "inputs_replaced_before_taken"
    if final[key_replaced].startswith("unknown"):  # rclpy without publisher ids (Jazzy)
        replaced = 3 - rejections  # not counted: each outlier refused, or replaced unseen
    else:
        replaced = int(final[key_replaced]) - int(last_before[key_replaced])
    refused = [
        x for x in ("1e+149", "1e+12", "1e+06")
        if any(f"{x} m from '{ROOT}' is beyond the robot's reach" in r for r in reasons)
    ]  # fmt: skip
    print(f"  outliers refused {refused}; inputs replaced before taken +{replaced}")
    assert rejections == len(refused), reasons
    assert rejections == 3 or (rejections < 3 and replaced >= 3 - rejections), (replaced, reasons)
    assert int(final[key_jumps]) >= 1  # the jump (and the return from it)
    assert int(final[key_capped]) >= 1  # the 1e6 m/s twist


def test_every_command_is_finite_and_within_the_velocity_limits(rig: Rig, run: RunResult) -> None:
    """Every command the node published, from start-up on, is finite and within the limits."""
    total, zeros, bad = rig.checker.snapshot()
    seconds = run.end - run.t0
    print(f"\ncommands: {total} ({zeros} zero) since start-up ({seconds:.1f} s stream), {bad} bad")
    assert rig.checker.bad == [] and bad == 0
    assert total > 0.5 * float(rig.params["control_rate"]) * seconds


def test_the_node_survives_and_exits_cleanly_on_sigint(rig: Rig, run: RunResult) -> None:
    """Still running after the run; SIGINT: exit status 0, no Traceback in its log."""
    assert rig.node.poll() is None, read_log(rig.node)[-6000:]
    code = stop_process(rig.node)
    log = read_log(rig.node)
    assert code == 0, log[-6000:]
    assert "Traceback" not in log, log[-6000:]
