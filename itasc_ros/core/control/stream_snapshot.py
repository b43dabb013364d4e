"""A target stream as SNAPSHOT values, and back (:data:`~.journal.STREAM` layout; ROS-free)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .journal import STREAM, stamp_of, stamp_value
from .odometry import Odometry
from .streams import StampOrder, TargetStream

Array = NDArray[np.float64]


def order_into(order: StampOrder, out: Array) -> None:
    """Write a stamp order's (3,) SNAPSHOT values to ``out``.

    Args:
        order: the stream's stamp order.
        out: (3,) receives the last accepted header stamp [s] (NaN: none), its reception
            time [s] and the smallest delivery offset [s] (inf: none).
    """
    out[0], out[1], out[2] = stamp_value(order.source), order.received, order.offset


def order_from(order: StampOrder, v: Array) -> None:
    """Set a stamp order from its (3,) SNAPSHOT values ``v`` (the inverse of :func:`order_into`).

    Args:
        order: the stream's stamp order.
        v: (3,) the values :func:`order_into` wrote.
    """
    order.source, order.received, order.offset = stamp_of(v[0]), float(v[1]), float(v[2])


def stream_into(st: TargetStream, out: Array) -> None:
    """Write one target stream's (:data:`~.journal.STREAM_SIZE`,) SNAPSHOT values to ``out``."""
    f = STREAM
    out[f["has_pose"]] = st.has_pose
    out[f["pose"]] = st.pose.reshape(16)
    out[f["stamp"]], out[f["header"]] = st.stamp, st.header
    order_into(st.order, out[f["order"]])
    out[f["estimate"]], out[f["twist"]] = st.estimate, st.twist
    out[f["twist_stamp"]] = st.twist_stamp
    order_into(st.twist_order, out[f["twist_order"]])
    out[f["applied"]] = st.applied
    out[f["jumps"]], out[f["capped"]], out[f["source"]] = st.jumps, st.capped, st.source
    out[f["ref_active"]], out[f["ref_jogging"]] = st.ref.active, st.ref.jogging
    out[f["ref_pose"]], out[f["ref_twist"]] = st.ref.pose.reshape(16), st.ref.twist
    out[f["jog"]], out[f["jog_stamp"]] = st.jog, st.jog_stamp
    order_into(st.jog_order, out[f["jog_order"]])
    out[f["jog_valid"]], out[f["jog_period"]] = st.jog_valid, st.jog_period
    out[f["jog_budget"]] = st.jog_budget
    out[f["jog_start"]], out[f["jog_count"]] = st.jog_start, st.jog_count
    out[f["twist_time"]], out[f["accel"]] = st.twist_time, st.accel
    out[f["given_twist"]], out[f["aiming"]] = st.given_twist, st.aiming
    out[f["world"]], out[f["world_target"]] = st.world, st.world_target.reshape(16)
    out[f["world_twist"]] = st.world_twist


def stream_from(st: TargetStream, v: Array) -> None:
    """Set a target stream from its SNAPSHOT values ``v`` (the inverse of :func:`stream_into`)."""
    f = STREAM
    st.has_pose = bool(v[f["has_pose"]][0])
    st.pose[:] = v[f["pose"]].reshape(4, 4)
    st.stamp, st.header = float(v[f["stamp"]][0]), float(v[f["header"]][0])
    order_from(st.order, v[f["order"]])
    st.estimate[:], st.twist[:] = v[f["estimate"]], v[f["twist"]]
    st.twist_stamp = float(v[f["twist_stamp"]][0])
    order_from(st.twist_order, v[f["twist_order"]])
    st.applied[:] = v[f["applied"]]
    st.jumps, st.capped = int(v[f["jumps"]][0]), int(v[f["capped"]][0])
    st.source = int(v[f["source"]][0])
    ref = st.ref
    ref.active, ref.jogging = bool(v[f["ref_active"]][0]), bool(v[f["ref_jogging"]][0])
    ref.pose[:], ref.twist[:] = v[f["ref_pose"]].reshape(4, 4), v[f["ref_twist"]]
    ref.speed = float(np.linalg.norm(ref.twist[:3]))
    ref.angular_speed = float(np.linalg.norm(ref.twist[3:]))
    st.jog[:], st.jog_stamp = v[f["jog"]], float(v[f["jog_stamp"]][0])
    order_from(st.jog_order, v[f["jog_order"]])
    st.jog_valid = float(v[f["jog_valid"]][0])
    st.jog_period = float(v[f["jog_period"]][0])
    st.jog_budget = float(v[f["jog_budget"]][0])
    st.jog_start, st.jog_count = float(v[f["jog_start"]][0]), int(v[f["jog_count"]][0])
    st.twist_time, st.accel[:] = float(v[f["twist_time"]][0]), v[f["accel"]]
    st.given_twist[:], st.aiming = v[f["given_twist"]], bool(v[f["aiming"]][0])
    st.world = bool(v[f["world"]][0])
    st.world_target[:] = v[f["world_target"]].reshape(4, 4)
    st.world_twist[:] = v[f["world_twist"]]


def odometry_into(odom: Odometry, out: Array) -> None:
    """Write the odometry's (:data:`~.journal.ODOMETRY_SIZE`,) SNAPSHOT values to ``out``."""
    out[0], out[1], out[2] = odom.has_state, odom.stamp, odom.header
    order_into(odom.order, out[3:6])
    out[6:22] = odom.pose.reshape(16)
    out[22:28] = odom.twist
    out[28] = odom.jumps


def odometry_from(odom: Odometry, v: Array) -> None:
    """Set the odometry from its SNAPSHOT values (the inverse of :func:`odometry_into`)."""
    odom.has_state, odom.stamp, odom.header = bool(v[0]), float(v[1]), float(v[2])
    order_from(odom.order, v[3:6])
    odom.pose[:] = v[6:22].reshape(4, 4)
    odom.twist[:] = v[22:28]
    odom.jumps = int(v[28])


__all__ = [
    "odometry_from",
    "odometry_into",
    "order_from",
    "order_into",
    "stream_from",
    "stream_into",
]
