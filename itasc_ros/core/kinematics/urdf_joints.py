"""URDF joints: the checks of a raw ``<joint>`` element and its checked :class:`JointSpec`.

:func:`check_joint_element` checks what ``urdf_parser_py`` is lenient about (the type, one
parent and one child, an axis with xyz); :func:`joint_spec` turns the joint ``urdf_parser_py``
read into a :class:`JointSpec`: finite origin within :data:`MAX_ORIGIN_OFFSET`, unit axis,
finite ordered limits, finite mimic multiplier and offset.
"""

from __future__ import annotations

import math

import numpy as np
from lxml import etree

from ..errors import InvalidJointError, UnsupportedJointError, UrdfStructureError
from . import spatial
from .robot_spec import SUPPORTED_JOINT_TYPES, JointSpec, MimicSpec
from .urdf_xml import show

MAX_ORIGIN_OFFSET = 1.0e6
"""Largest joint origin offset accepted along an axis [m]."""


def check_joint_element(el: etree._Element) -> None:
    """Check a raw ``<joint>``: a supported type, one parent and one child, a numeric axis.

    Args:
        el: the ``<joint>`` element.

    Raises:
        UnsupportedJointError: floating, planar, unknown or missing type.
        UrdfStructureError: a missing or repeated ``<parent>``/``<child>``.
        InvalidJointError: an ``<axis>`` without xyz, or not three finite numbers.
    """
    jname = el.get("name")
    jtype = el.get("type")
    if jtype not in SUPPORTED_JOINT_TYPES:
        has = f"has type {show(jtype)}" if jtype is not None else "has no type attribute"
        raise UnsupportedJointError(
            f"joint {jname!r} {has}; supported types are: "
            + ", ".join(SUPPORTED_JOINT_TYPES)
            + (
                " (a floating base is supported only as the joint that holds the whole robot"
                " to a world link: the root's pose then comes from odometry, world_frame)"
                if jtype in ("floating", "planar")
                else ""
            )
        )
    for tag in ("parent", "child"):
        subs = el.findall(tag)
        if not subs or not subs[0].get("link"):
            raise UrdfStructureError(f"joint {jname!r} has no <{tag} link=...>")
        if len(subs) > 1:
            raise UrdfStructureError(
                f"joint {jname!r} has {len(subs)} <{tag}> elements; a joint has exactly one"
            )
    axis_el = el.find("axis")
    if axis_el is not None:
        xyz = axis_el.get("xyz")
        if xyz is None:
            raise InvalidJointError(f"joint {jname!r} has an <axis> without xyz=...")
        _finite_vec(xyz.split(), f"joint {jname!r} axis")


def _finite_vec(values: object, what: str, n: int = 3) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float).reshape(n)
    except (TypeError, ValueError) as exc:
        raise InvalidJointError(f"{what} must be {n} numbers, got {values!r}") from exc
    if not np.all(np.isfinite(v)):
        raise InvalidJointError(f"{what} has a non-finite value: {v.tolist()}")
    return v


def _origin(origin: object, what: str) -> np.ndarray:
    if origin is None:
        return np.eye(4)
    xyz = _finite_vec(getattr(origin, "xyz", None) or [0.0, 0.0, 0.0], f"{what} origin xyz")
    if np.abs(xyz).max() > MAX_ORIGIN_OFFSET:
        raise InvalidJointError(
            f"{what} origin xyz {xyz.tolist()} is more than {MAX_ORIGIN_OFFSET:g} m from its "
            "parent (URDF lengths are in metres)"
        )
    rpy = _finite_vec(getattr(origin, "rpy", None) or [0.0, 0.0, 0.0], f"{what} origin rpy")
    return spatial.make_pose(spatial.rpy_to_matrix(*rpy), xyz)


def _float_or(value: object, default: float) -> float:
    if value is None:
        return default
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def _axis(axis_raw: object, name: str, jtype: str) -> np.ndarray:
    """The joint's (3,) axis, normalised unless the joint is fixed."""
    axis = _finite_vec(
        axis_raw if axis_raw is not None else [1.0, 0.0, 0.0], f"joint {name!r} axis"
    )
    if jtype != "fixed":
        scale = float(np.abs(axis).max())  # scaled first: (1e200, 1e200, 0) must not overflow
        norm = scale * float(np.linalg.norm(axis / scale)) if scale > 0.0 else 0.0
        if norm < 1e-9:
            raise InvalidJointError(f"joint {name!r} has a zero-length axis {axis.tolist()}")
        axis = (axis / scale) / (norm / scale)
    return axis


def _limits(lim: object, name: str, jtype: str) -> tuple[float, float, float]:
    """``(lower, upper, velocity)`` [rad or m, rad/s or m/s] of a ``<limit>`` (or None)."""
    lower, upper, velocity = -math.inf, math.inf, math.inf
    if lim is not None:
        vel = _float_or(getattr(lim, "velocity", None), math.inf)
        if not math.isfinite(vel) or vel < 0:
            raise InvalidJointError(
                f"joint {name!r} has velocity limit {vel}; expected a finite number >= 0"
            )
        velocity = vel if vel > 0 else math.inf
        if jtype in ("revolute", "prismatic"):
            lower = _float_or(getattr(lim, "lower", None), 0.0)
            upper = _float_or(getattr(lim, "upper", None), 0.0)
            if math.isnan(lower) or math.isnan(upper) or lower > upper:
                raise InvalidJointError(
                    f"joint {name!r} has limits lower={lower}, upper={upper}; "
                    "expected lower <= upper"
                )
            if math.isinf(lower) or math.isinf(upper):
                raise InvalidJointError(
                    f"joint {name!r} has limits lower={lower}, upper={upper}; limits must be "
                    "finite (a revolute joint without limits is type 'continuous')"
                )
    elif jtype in ("revolute", "prismatic"):
        raise InvalidJointError(f"{jtype} joint {name!r} has no <limit>; URDF requires one")
    return lower, upper, velocity


def _mimic(m: object, name: str, jtype: str) -> MimicSpec | None:
    """The mimic relation of a movable joint's ``<mimic>`` (None: none, or a fixed joint)."""
    if m is None or jtype == "fixed":
        return None
    mult = _float_or(getattr(m, "multiplier", None), 1.0)
    off = _float_or(getattr(m, "offset", None), 0.0)
    if not (math.isfinite(mult) and math.isfinite(off)):
        raise InvalidJointError(f"joint {name!r} has a non-finite mimic multiplier/offset")
    return MimicSpec(str(getattr(m, "joint", "")), mult, off)


def joint_spec(j: object) -> JointSpec:
    """The checked description of a joint read by ``urdf_parser_py``.

    Args:
        j: a ``urdf_parser_py.urdf.Joint``.

    Returns:
        Its :class:`JointSpec`: origin (4, 4) [m], unit axis (3,), limits [rad or m] and
        velocity limit [rad/s or m/s] (infinite when absent), mimic relation.

    Raises:
        InvalidJointError: non-finite or too distant origin, zero or non-finite axis, bad
            limits, missing ``<limit>`` of a revolute or prismatic joint, non-finite mimic.
    """
    name = str(getattr(j, "name", ""))
    jtype = str(getattr(j, "type", ""))
    origin = _origin(getattr(j, "origin", None), f"joint {name!r}")
    axis = _axis(getattr(j, "axis", None), name, jtype)
    lower, upper, velocity = _limits(getattr(j, "limit", None), name, jtype)
    mimic = _mimic(getattr(j, "mimic", None), name, jtype)
    return JointSpec(
        name=name,
        type=jtype,
        parent=str(j.parent),  # type: ignore[attr-defined]
        child=str(j.child),  # type: ignore[attr-defined]
        origin=origin,
        axis=axis,
        lower=lower,
        upper=upper,
        velocity=velocity,
        mimic=mimic,
    )


__all__ = ["MAX_ORIGIN_OFFSET", "check_joint_element", "joint_spec"]
