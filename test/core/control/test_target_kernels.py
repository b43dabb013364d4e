"""The compiled target-stream kernels against the numpy reference in core/kinematics/spatial.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from itasc_ros.core.control._packed import T_POSE_FRESH, T_SOURCE, T_TWIST_FRESH, TARGET_SIZE
from itasc_ros.core.control._target_kernels import (
    BAD_POSITION,
    BAD_QUATERNION,
    POSE_OK,
    TWIST_ZEROED,
    ZERO_QUATERNION,
    filter_twist,
    pose_from_position_quat,
    take_stream_twist,
)
from itasc_ros.core.control.journal import TwistSource
from itasc_ros.core.kinematics import spatial

HUGE = 1e150
finite = st.floats(-1e3, 1e3, allow_nan=False)
quat_parts = st.floats(-1.0, 1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    p=st.lists(finite, min_size=3, max_size=3),
    q=st.lists(quat_parts, min_size=4, max_size=4),
    exponent=st.sampled_from([-200, -3, 0, 3, 200]),
)
def test_pose_equals_the_numpy_reference(p: list[float], q: list[float], exponent: int) -> None:
    """Same pose as spatial.pose_from_xyz_quat, for quaternions scaled by 1e-200 .. 1e200."""
    qa = np.array(q) * 10.0**exponent
    out = np.full((4, 4), np.nan)
    code = pose_from_position_quat(np.array(p), qa, HUGE, out)
    scale = float(np.max(np.abs(qa)))  # the norm without overflow, as Controller documents
    unit = qa / scale if scale > 0.0 else qa
    if scale * np.linalg.norm(unit) < 1e-6:
        assert code == ZERO_QUATERNION
        assert np.isnan(out).all()  # nothing written
        return
    assert code == POSE_OK
    ref = spatial.pose_from_xyz_quat(np.array(p), unit / np.linalg.norm(unit))
    np.testing.assert_allclose(out, ref, atol=1e-12)
    r = out[:3, :3]
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)


@pytest.mark.parametrize(
    ("p", "q", "code"),
    [
        ([math.nan, 0, 0], [0, 0, 0, 1], BAD_POSITION),
        ([0, math.inf, 0], [0, 0, 0, 1], BAD_POSITION),
        ([0, 0, 1e151], [0, 0, 0, 1], BAD_POSITION),
        ([0, 0, 0], [0, math.nan, 0, 1], BAD_QUATERNION),
        ([0, 0, 0], [0, 0, -math.inf, 1], BAD_QUATERNION),
        ([0, 0, 0], [0, 0, 0, 0], ZERO_QUATERNION),
        ([0, 0, 0], [1e-7, 0, 0, 0], ZERO_QUATERNION),
        ([0, 0, 0], [0, 0, 0, 1e-5], POSE_OK),
        ([1e150, 0, 0], [1e200, 0, 0, 1e200], POSE_OK),
    ],
)
def test_bad_values_are_named(p: list[float], q: list[float], code: int) -> None:
    out = np.eye(4)
    assert pose_from_position_quat(np.array(p, float), np.array(q, float), HUGE, out) == code


def _reference_twist(pose: np.ndarray, prev: np.ndarray, dt: float) -> np.ndarray:
    raw = np.empty(6)
    raw[:3] = (pose[:3, 3] - prev[:3, 3]) / dt
    raw[3:] = spatial.so3_log(pose[:3, :3] @ prev[:3, :3].T) / dt
    return raw


rotvec = st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=3, max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    w0=rotvec,
    w1=rotvec,
    angle=st.sampled_from([0.0, 1e-10, 1e-4, 0.5, 3.0, math.pi - 1e-9, math.pi]),
    t=st.lists(finite, min_size=3, max_size=3),
    dt=st.floats(1e-4, 0.1),
    alpha=st.floats(0.01, 1.0),
)
def test_filtered_twist_equals_the_numpy_reference(
    w0: list[float], w1: list[float], angle: float, t: list[float], dt: float, alpha: float
) -> None:
    """Rotations from 0 to pi apart (the log's two hard cases) and any filter factor."""
    prev = spatial.make_pose(spatial.so3_exp(np.array(w0)), np.zeros(3))
    axis = np.array(w1)
    n = np.linalg.norm(axis)
    axis = axis / n if n > 1e-6 else np.array([0.0, 0.0, 1.0])
    pose = spatial.make_pose(spatial.so3_exp(angle * axis) @ prev[:3, :3], np.array(t))
    estimate = np.linspace(-1.0, 1.0, 6)
    reference = _reference_twist(pose, prev, dt)
    raw = np.empty(6)
    if angle == math.pi:  # exactly half a turn: +-pi n are the same rotation, either will do
        filter_twist(pose, prev, dt, alpha, np.empty((3, 3)), raw, estimate.copy())
        if np.dot(raw[3:], reference[3:]) < 0.0:
            reference[3:] *= -1.0
    expected = estimate + alpha * (reference - estimate)
    filter_twist(pose, prev, dt, alpha, np.empty((3, 3)), raw, estimate)
    np.testing.assert_allclose(raw, reference, rtol=1e-9, atol=1e-6 / dt)
    np.testing.assert_allclose(estimate, expected, rtol=1e-9, atol=1e-6 / dt)


@pytest.mark.parametrize("twist_fresh", [False, True])
@pytest.mark.parametrize("pose_fresh", [False, True])
@pytest.mark.parametrize("applied_before", ["zero", "same", "other"])
@pytest.mark.parametrize("sent", ["zero", "moving"])
def test_a_streams_twist_comes_from_its_freshest_source(
    twist_fresh: bool, pose_fresh: bool, applied_before: str, sent: str
) -> None:
    """An explicit twist when fresh, else the estimate when a pose is, else zero; said so.

    The source goes into the stream's packed state; the code says whether the applied twist
    changed (2), whether it moves (+1), or that it was zeroed for want of a source.
    """
    twist = np.zeros(6) if sent == "zero" else np.array([0.1, 0.0, -0.2, 0.0, 0.3, 0.0])
    estimate = 2.0 * twist + np.array([0.0, 0.05, 0.0, 0.0, 0.0, 0.01])
    s = np.zeros(TARGET_SIZE)
    s[T_TWIST_FRESH], s[T_POSE_FRESH] = float(twist_fresh), float(pose_fresh)
    s[T_SOURCE] = float(TwistSource.REFERENCE)  # the last tick's: replaced
    if twist_fresh:
        source, want = TwistSource.EXPLICIT, twist
    elif pose_fresh:
        source, want = TwistSource.ESTIMATED, estimate
    else:
        source, want = TwistSource.NONE, np.zeros(6)
    before = {"zero": np.zeros(6), "same": want.copy(), "other": np.full(6, 0.7)}[applied_before]
    applied = before.copy()
    code = take_stream_twist(s, twist, estimate, applied)
    assert s[T_SOURCE] == float(source)
    assert applied.tobytes() == want.tobytes()
    changed = before.tobytes() != want.tobytes()
    if source == TwistSource.NONE:
        assert code == (TWIST_ZEROED if changed else 0)
    else:
        assert code == (2 if changed else 0) + (1 if np.any(want != 0.0) else 0)
