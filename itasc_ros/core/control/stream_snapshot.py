"""A target stream as SNAPSHOT values, and back (:data:`~.journal.STREAM` layout; ROS-free)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .journal import STREAM
from .streams import TargetStream

Array = NDArray[np.float64]


def stream_into(st: TargetStream, out: Array) -> None:
    """Write one target stream's (:data:`~.journal.STREAM_SIZE`,) SNAPSHOT values to ``out``."""
    f = STREAM
    out[f["has_pose"]] = st.has_pose
    out[f["pose"]] = st.pose.reshape(16)
    out[f["stamp"]], out[f["header"]] = st.stamp, st.header
    st.order.state_into(out[f["order"]])
    out[f["estimate"]], out[f["twist"]] = st.estimate, st.twist
    out[f["twist_stamp"]] = st.twist_stamp
    st.twist_order.state_into(out[f["twist_order"]])
    out[f["applied"]] = st.applied
    out[f["jumps"]], out[f["capped"]], out[f["source"]] = st.jumps, st.capped, st.source
    out[f["ref_active"]], out[f["ref_jogging"]] = st.ref.active, st.ref.jogging
    out[f["ref_pose"]], out[f["ref_twist"]] = st.ref.pose.reshape(16), st.ref.twist
    out[f["jog"]], out[f["jog_stamp"]] = st.jog, st.jog_stamp
    st.jog_order.state_into(out[f["jog_order"]])
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
    st.order.state_from(v[f["order"]])
    st.estimate[:], st.twist[:] = v[f["estimate"]], v[f["twist"]]
    st.twist_stamp = float(v[f["twist_stamp"]][0])
    st.twist_order.state_from(v[f["twist_order"]])
    st.applied[:] = v[f["applied"]]
    st.jumps, st.capped = int(v[f["jumps"]][0]), int(v[f["capped"]][0])
    st.source = int(v[f["source"]][0])
    st.ref.restore(
        bool(v[f["ref_active"]][0]), bool(v[f["ref_jogging"]][0]),
        v[f["ref_pose"]].reshape(4, 4), v[f["ref_twist"]],
    )  # fmt: skip
    st.jog[:], st.jog_stamp = v[f["jog"]], float(v[f["jog_stamp"]][0])
    st.jog_order.state_from(v[f["jog_order"]])
    st.jog_valid = float(v[f["jog_valid"]][0])
    st.jog_period = float(v[f["jog_period"]][0])
    st.jog_budget = float(v[f["jog_budget"]][0])
    st.jog_start, st.jog_count = float(v[f["jog_start"]][0]), int(v[f["jog_count"]][0])
    st.twist_time, st.accel[:] = float(v[f["twist_time"]][0]), v[f["accel"]]
    st.given_twist[:], st.aiming = v[f["given_twist"]], bool(v[f["aiming"]][0])
    st.world = bool(v[f["world"]][0])
    st.world_target[:] = v[f["world_target"]].reshape(4, 4)
    st.world_twist[:] = v[f["world_twist"]]


__all__ = ["stream_from", "stream_into"]
