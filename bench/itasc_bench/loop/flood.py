"""Floods beside a loop run: a process publishing one input of the node as fast as asked.

A jog flood (``TwistStamped`` on ``~/delta_twist_cmds``, zero twists: hold), an IK flood
(``PoseStamped`` requests of the home pose on ``~/ik_request``), a target flood (the run's circle
as ``PoseStamped`` on ``~/target_pose``, in place of the run's own 100 Hz target) or an *unread*
flood (``TwistStamped`` on a topic nobody subscribes to: the same publisher's load on the
machine without the node doing anything for it, the baseline the others are compared with).
:func:`main` is the flooding process (``python -m itasc_bench.loop.flood``); it paces itself
by deadlines, prints ``flooding`` once its first message is out (the run waits for that line
before its warm-up) and how many messages it sent when it is stopped (SIGINT).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .target import target_position


@dataclass(frozen=True)
class Flood:
    """One kind of flood.

    Attributes:
        topic: The topic it publishes (node name ``itasc_node``).
        rate: Its default rate [Hz].
    """

    topic: str
    rate: float


#: The line a flooding process prints once its first message is out.
STARTED = "flooding"

#: The floods by name (see the module).
FLOODS: dict[str, Flood] = {
    "jog": Flood("/itasc_node/delta_twist_cmds", 5000.0),
    "ik": Flood("/itasc_node/ik_request", 2000.0),
    "target": Flood("/itasc_node/target_pose", 5000.0),
    "unread": Flood("/itasc_bench/unread_flood", 5000.0),
}


def flood_command(
    kind: str, rate: float, frame: str, center: np.ndarray, quat: np.ndarray, t_path0: float
) -> list[str]:
    """The command line of a flooding process.

    Args:
        kind: A key of :data:`FLOODS`.
        rate: Messages per second [Hz].
        frame: The root link (the poses' frame).
        center: (3,) the target circle's center, root frame [m].
        quat: (4,) the home-pose effector orientation (x, y, z, w).
        t_path0: Wall-clock time of the target path's start [s].
    """
    pose = {"frame": frame, "center": list(map(float, center)), "quat": list(map(float, quat))}
    return [
        sys.executable,
        "-m",
        "itasc_bench.loop.flood",
        kind,
        f"{rate:g}",
        json.dumps(pose),
        repr(float(t_path0)),
    ]


def _message(kind: str, pose: dict[str, Any]) -> Any:
    """The message the flood publishes (its stamp and, for a target, its position change)."""
    from geometry_msgs.msg import PoseStamped, TwistStamped

    if kind in ("jog", "unread"):
        return TwistStamped()  # zero twist in the root frame: hold
    msg = PoseStamped()
    msg.header.frame_id = pose["frame"]
    x, y, z = pose["center"]
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = pose["quat"]
    return msg


def main(argv: list[str] | None = None) -> int:
    """Publish one flood until SIGINT/SIGTERM; print the count sent (``sent <n>``)."""
    ap = argparse.ArgumentParser(prog="python -m itasc_bench.loop.flood")
    ap.add_argument("kind", choices=sorted(FLOODS))
    ap.add_argument("rate", type=float)
    ap.add_argument("pose", type=json.loads)
    ap.add_argument("t_path0", type=float)
    args = ap.parse_args(argv)
    import rclpy

    stop = [False]

    def on_signal(signum: int, frame: object) -> None:
        stop[0] = True

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, on_signal)
    rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node("itasc_bench_flood")
    msg = _message(args.kind, args.pose)
    pub = node.create_publisher(type(msg), FLOODS[args.kind].topic, 10)
    sent = _publish(pub, msg, args, stop)
    print(f"sent {sent}", flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


def _publish(pub: Any, msg: Any, args: argparse.Namespace, stop: list[bool]) -> int:
    """Publish ``msg`` at ``args.rate``, stamped now (a target: on its circle) until ``stop``."""
    period = 1.0 / args.rate
    center = np.array(args.pose["center"])
    is_target = args.kind == "target"
    sent = 0
    next_t = time.monotonic()
    while not stop[0]:
        if sent == 1:
            print(STARTED, flush=True)
        now = time.time()
        sec, frac = divmod(now, 1.0)
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(sec), int(frac * 1e9)
        if is_target:
            p = target_position(now - args.t_path0, center)
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
        pub.publish(msg)
        sent += 1
        next_t += period
        wait = next_t - time.monotonic()
        if wait > 0.0005:
            time.sleep(wait - 0.0003)  # the rest spun: sleep alone is too coarse at 5 kHz
        while time.monotonic() < next_t:
            pass
        if wait < -0.1:
            next_t = time.monotonic()  # far behind (preempted): no burst to catch up
    return sent


if __name__ == "__main__":
    raise SystemExit(main())
