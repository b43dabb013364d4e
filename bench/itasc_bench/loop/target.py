"""The moving target of a loop run: a circle in the root frame, published and tracked.

A circle of :data:`TARGET_RADIUS` at :data:`TARGET_SPEED` in the root frame's
:data:`TARGET_PLANE` plane around the home-pose effector position, ``PoseStamped`` at
:data:`TARGET_RATE` on :data:`TARGET_TOPIC`; the tracking error is the effector's distance from
it at the joint states' stamps.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from itasc_ros.core.paths import path_point
from itasc_ros.ros.realtime import demote_current_thread

if TYPE_CHECKING:  # the flooding process imports this module: no kinematics (numba) for it
    from itasc_ros.core import KinematicTree

#: Target path: radius [m], speed [m/s], plane of the root frame, publish rate [Hz].
TARGET_RADIUS = 0.1
TARGET_SPEED = 0.25
TARGET_PLANE = "yz"
TARGET_RATE = 100.0
#: The node's target topic (first pose constraint, node name itasc_node).
TARGET_TOPIC = "/itasc_node/target_pose"


def target_position(t: float, center: np.ndarray) -> np.ndarray:
    """The target's position ``t`` seconds after the path's start.

    Args:
        t: Time since the path's start [s].
        center: (3,) the circle's center in the root frame [m].

    Returns:
        (3,) the position in the root frame [m].
    """
    p, _ = path_point(t, center, TARGET_RADIUS, TARGET_SPEED, "circle", TARGET_PLANE)
    return p


def publish_targets(
    publisher: Any,
    frame_id: str,
    quat: np.ndarray,
    center: np.ndarray,
    t_path0: float,
    stop: threading.Event,
) -> None:
    """Publish the target at :data:`TARGET_RATE` until ``stop`` is set (a plain thread's body).

    Args:
        publisher: The ``PoseStamped`` publisher of :data:`TARGET_TOPIC`.
        frame_id: The root link.
        quat: (4,) the fixed orientation (x, y, z, w).
        center: (3,) the circle's center in the root frame [m].
        t_path0: Wall-clock time of the path's start [s].
        stop: Set to end the thread.
    """
    from geometry_msgs.msg import PoseStamped

    demote_current_thread()  # as the reader: on the normal scheduler, as the DDS threads
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = map(float, quat)
    next_t = time.monotonic()
    while not stop.is_set():
        now = time.time()
        p = target_position(now - t_path0, center)
        sec, frac = divmod(now, 1.0)
        msg.header.stamp.sec = int(sec)
        msg.header.stamp.nanosec = int(frac * 1e9)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, p)
        publisher.publish(msg)
        next_t += 1.0 / TARGET_RATE
        stop.wait(max(0.0, next_t - time.monotonic()))


def tracking_error(
    tree: KinematicTree,
    joints: list[str],
    effector: str,
    center: np.ndarray,
    track: list[tuple[float, np.ndarray]],
    t_path0: float,
) -> dict[str, float]:
    """RMS and max distance [mm] of the effector from the target at the joint states' stamps.

    Args:
        tree: The robot.
        joints: The names of the joint states' positions.
        effector: The effector link.
        center: (3,) the circle's center in the root frame [m].
        track: (stamp [s], (len(joints),) positions) of the kept joint states.
        t_path0: Wall-clock time of the path's start [s].

    Returns:
        ``tracking_error_rms_mm`` and ``tracking_error_max_mm`` (nan without a joint state).
    """
    if not track:
        return {"tracking_error_rms_mm": math.nan, "tracking_error_max_mm": math.nan}
    from itasc_ros.core.kinematics.home_poses import home_pose  # the caller built ``tree``

    idx = [tree.joint_index(j) for j in joints]
    q = home_pose(tree)  # joints outside ``joints`` stay at home
    errors = []
    for stamp, positions in track:
        if positions.shape != (len(joints),):
            continue
        q[idx] = positions
        p = tree.forward_kinematics(q, effector)[:3, 3]
        target = target_position(stamp - t_path0, center)
        errors.append(float(np.linalg.norm(p - target)))
    e = np.array(errors) * 1e3
    return {
        "tracking_error_rms_mm": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
        "tracking_error_max_mm": float(np.max(e)) if e.size else math.nan,
    }


__all__ = [
    "TARGET_PLANE",
    "TARGET_RADIUS",
    "TARGET_RATE",
    "TARGET_SPEED",
    "TARGET_TOPIC",
    "publish_targets",
    "target_position",
    "tracking_error",
]
