"""Peer kinematics libraries for side-by-side benchmarks: Orocos KDL, Pinocchio, TRAC-IK.

Each peer is wrapped so that the benchmark (``itasc-bench``) calls the same unit of work on every
library with the same joint vector and the same URDF:

* :class:`KdlPeer` -- Orocos KDL through Debian's ``python3-pykdl`` (PyKDL). PyKDL has no
  ``kdl_parser`` in Python, so :func:`kdl_chain_from_urdf` builds the ``KDL.Chain`` exactly as
  the C++ ``kdl_parser`` does, from the URDF as read by the solver's own reader
  (:func:`itasc_ros.core.kinematics.parse_urdf`): the peers and the solver see the same joints.
* :class:`PinocchioPeer` -- Pinocchio (``pin`` wheel), ``pinocchio.buildModelFromXML``.
* :class:`TracIkPeer` -- TRAC-IK through the ``pytracik`` wheel (a pybind11 module).

Conventions shared by all peers:

* Joint vectors ``q`` are in chain order (root to tip, movable joints only), as returned in
  ``joint_names``; continuous joints are a single angle [rad] (Pinocchio's ``(cos, sin)`` pair is
  handled inside :class:`PinocchioPeer`).
* Poses are ``(4, 4)`` homogeneous matrices of the tip link in the root link frame.
* Jacobians are ``(6, n)``: rows 0-2 the linear velocity [m/s] of the tip origin, rows 3-5 the
  angular velocity [rad/s], both expressed in the root frame. That is KDL's ``ChainJntToJacSolver``
  output and Pinocchio's ``LOCAL_WORLD_ALIGNED`` frame Jacobian.

Import notes:

* PyKDL is not a wheel: :func:`import_pykdl` puts the system ``dist-packages`` directory on
  ``sys.path`` only for the duration of ``import PyKDL`` and removes it again, so no other system
  package can shadow the venv's packages. A subprocess fallback under ``/usr/bin/python3`` is not
  provided: the Debian module is built for the same CPython (3.11) as the venv and imports
  directly.
* ``pytracik`` (0.0.3) takes the URDF as a string (``pytracik.TRAC_IK(base, tip, urdf_xml,
  timeout, eps, solve_type)``), so no temporary file is needed. Its bundled URDF reader reads the
  joint limits wrongly (e.g. every Panda joint gets ``[0, 0]``), which would make every IK call
  fail; :class:`TracIkPeer` therefore sets the limits from the URDF ``<limit>`` (and
  ``<safety_controller>`` soft limits, as the ROS TRAC-IK does) with ``pytracik.set_joint_limits``.
  Its ``fk``/``ik`` functions are module-level functions taking the solver object.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import math
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from lxml import etree

from itasc_ros.core.errors import UnknownLinkError, UnknownNameError, UnsupportedJointError
from itasc_ros.core.kinematics.urdf import JointSpec, RobotSpec, parse_urdf

FloatArray = npt.NDArray[np.float64]

#: Where Debian/Ubuntu install ``python3-pykdl``.
SYSTEM_DIST_PACKAGES = "/usr/lib/python3/dist-packages"

_PYKDL_GLOBS = (
    "/usr/lib/python3*/dist-packages/PyKDL*.so",
    "/usr/local/lib/python3*/dist-packages/PyKDL*.so",
    "/opt/ros/*/lib/python3*/site-packages/PyKDL*.so",
    "/opt/ros/*/local/lib/python3*/dist-packages/PyKDL*.so",
)

_MOVABLE_TYPES = ("revolute", "continuous", "prismatic")


class PeerUnavailable(Exception):
    """A peer library is not installed or cannot be used; the message says how to install it."""


# --------------------------------------------------------------------------------------------
# Imports
# --------------------------------------------------------------------------------------------

_pykdl: Any = None


def _pykdl_dirs() -> list[str]:
    """Candidate directories holding a PyKDL extension module, most likely first."""
    dirs = [SYSTEM_DIST_PACKAGES]
    for pattern in _PYKDL_GLOBS:
        for so in sorted(glob.glob(pattern)):
            d = os.path.dirname(so)
            if d not in dirs:
                dirs.append(d)
    return dirs


def import_pykdl() -> Any:
    """Import PyKDL, from the venv if it is there, else from the system ``dist-packages``.

    The system directory is appended to ``sys.path`` only for the ``import PyKDL`` statement and
    removed right after, so it cannot shadow packages of the venv.

    Returns:
        The ``PyKDL`` module.

    Raises:
        PeerUnavailable: If no importable PyKDL is found; the message has the install hint.
    """
    global _pykdl
    if _pykdl is not None:
        return _pykdl
    try:
        import PyKDL
    except ImportError as first:
        errors = [f"venv: {first}"]
        for d in _pykdl_dirs():
            if not os.path.isdir(d):
                continue
            added = d not in sys.path
            if added:
                sys.path.append(d)
            try:
                import PyKDL
            except ImportError as exc:
                errors.append(f"{d}: {exc}")
                continue
            finally:
                if added:
                    with contextlib.suppress(ValueError):
                        sys.path.remove(d)
            break
        else:
            raise PeerUnavailable(
                "PyKDL (Orocos KDL) is not importable: install it with "
                "'apt-get install python3-pykdl' (it must be built for Python "
                f"{sys.version_info.major}.{sys.version_info.minor}); tried " + "; ".join(errors)
            ) from first
    _pykdl = PyKDL
    return PyKDL


def _import_pinocchio() -> Any:
    try:
        import pinocchio
    except ImportError as exc:
        raise PeerUnavailable(
            "Pinocchio is not importable: install it with 'pip install pin' "
            "(or the 'bench' extra of itasc_ros)"
        ) from exc
    return pinocchio


def _import_pytracik() -> Any:
    try:
        import pytracik
    except ImportError as exc:
        raise PeerUnavailable(
            "TRAC-IK is not importable: install it with 'pip install pytracik' "
            "(or the 'bench' extra of itasc_ros)"
        ) from exc
    return pytracik


# --------------------------------------------------------------------------------------------
# URDF helpers
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _native_stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null, for C++ code that prints to ``std::cout``."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        libc.fflush(None)  # whatever the C/C++ runtime buffered goes to /dev/null too
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


@dataclass(frozen=True)
class ChainJoint:
    """One URDF joint on the root-to-tip path.

    Attributes:
        name: Joint name.
        type: URDF type: 'revolute', 'continuous', 'prismatic' or 'fixed'.
        child: Child link name.
        xyz: Origin translation [m], parent link frame.
        rotation: Origin rotation matrix, row by row (9 values), parent link frame.
        axis: Unit joint axis in the joint frame.
        lower: Lower position limit [rad] or [m]; -inf for continuous joints.
        upper: Upper position limit [rad] or [m]; +inf for continuous joints.
    """

    name: str
    type: str
    child: str
    xyz: tuple[float, float, float]
    rotation: tuple[float, ...]
    axis: tuple[float, float, float]
    lower: float
    upper: float

    @property
    def movable(self) -> bool:
        """Whether the joint has a degree of freedom."""
        return self.type in _MOVABLE_TYPES


_XML_DECLARATION = re.compile(r"^\ufeff?<\?xml\s[^>]*\?>")


def _soft_limits(urdf_xml: str) -> dict[str, tuple[float, float]]:
    """``<safety_controller>`` soft limits by joint name (URDF default 0 for a missing one).

    The solver's URDF reader keeps only the kinematic elements, so these are read here, from a
    document :func:`~itasc_ros.core.kinematics.parse_urdf` has already accepted (bounded, no DTD).
    """
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    # lxml refuses a str with an XML encoding declaration; the str is decoded already.
    root = etree.fromstring(_XML_DECLARATION.sub("", urdf_xml, count=1), parser)
    out: dict[str, tuple[float, float]] = {}
    for joint in root.iterfind("joint"):
        safety = joint.find("safety_controller")
        if safety is not None:
            out[str(joint.get("name"))] = (
                float(safety.get("soft_lower_limit", 0.0)),
                float(safety.get("soft_upper_limit", 0.0)),
            )
    return out


def _root_link(spec: RobotSpec) -> str:
    """The link without a parent joint (:func:`parse_urdf` checked that there is one)."""
    children = {j.child for j in spec.joints}
    return next(link for link in spec.links if link not in children)


def _chain_joint(joint: JointSpec, soft: tuple[float, float] | None) -> ChainJoint:
    origin = joint.origin  # (4, 4)
    if joint.type == "fixed":
        lower, upper = 0.0, 0.0
    else:
        lower, upper = joint.lower, joint.upper  # +-inf for continuous joints
        if soft is not None and joint.type != "continuous":  # as ROS TRAC-IK and MoveIt do
            lower, upper = max(lower, soft[0]), min(upper, soft[1])
    return ChainJoint(
        name=joint.name,
        type=joint.type,
        child=joint.child,
        xyz=(float(origin[0, 3]), float(origin[1, 3]), float(origin[2, 3])),
        rotation=tuple(float(v) for v in origin[:3, :3].ravel()),
        axis=(float(joint.axis[0]), float(joint.axis[1]), float(joint.axis[2])),
        lower=lower,
        upper=upper,
    )


def _spec_chain(spec: RobotSpec, urdf_xml: str, root: str, tip: str) -> list[ChainJoint]:
    """:func:`urdf_chain` on a parsed URDF (``urdf_xml`` only for the soft limits)."""
    for name in (root, tip):
        if name not in spec.links:
            raise UnknownLinkError(name, spec.links)
    parent_joint = {j.child: j for j in spec.joints}
    path: list[JointSpec] = []
    link = tip
    while link != root:
        if link not in parent_joint:
            ancestors, up = [], tip
            while up in parent_joint:
                up = parent_joint[up].parent
                ancestors.append(up)
            raise UnknownNameError(f"ancestor link of {tip!r}", root, ancestors)
        joint = parent_joint[link]
        if joint.mimic is not None:
            raise UnsupportedJointError(
                f"joint {joint.name!r} mimics {joint.mimic.joint!r}; the peer chains do not "
                "support mimic joints"
            )
        path.append(joint)
        link = joint.parent
    path.reverse()
    limited = any(j.type in ("revolute", "prismatic") for j in path)
    soft = _soft_limits(urdf_xml) if limited else {}
    return [_chain_joint(j, soft.get(j.name)) for j in path]


def urdf_chain(urdf_xml: str, root: str, tip: str) -> list[ChainJoint]:
    """The URDF joints from ``root`` to ``tip`` (all types, root first).

    The URDF is read by the solver's reader, :func:`itasc_ros.core.kinematics.parse_urdf`: origins,
    axes, types and limits are the ones :class:`~itasc_ros.core.KinematicTree` uses. The limits
    of revolute and prismatic joints are narrowed to the ``<safety_controller>`` soft limits, as
    ROS TRAC-IK and MoveIt do.

    Args:
        urdf_xml: URDF document.
        root: Name of the base link of the chain.
        tip: Name of the tip link of the chain.

    Returns:
        The joints on the path, in order from ``root`` to ``tip``.

    Raises:
        UnknownLinkError: If ``root`` or ``tip`` is not a link.
        UnknownNameError: If ``root`` is not an ancestor of ``tip`` (lists the ancestors).
        UnsupportedJointError: For a floating or planar joint in the URDF, or a mimic joint on
            the path.
        ItascError: For any other URDF that :func:`~itasc_ros.core.kinematics.parse_urdf` refuses.
    """
    return _spec_chain(parse_urdf(urdf_xml), urdf_xml, root, tip)


def kdl_chain_from_urdf(urdf_xml: str, root: str, tip: str) -> tuple[Any, list[str]]:
    """Build a ``KDL.Chain`` from ``root`` to ``tip`` the way the C++ ``kdl_parser`` does.

    Per URDF joint ``j`` with origin frame ``F = (p, M)`` a segment
    ``Segment(child_link, Joint(name, p, M * axis, type), F)`` is added: the KDL joint sits at
    the segment root with position ``p`` and axis ``M * axis`` (both in the parent link frame),
    and ``F`` is the tip frame at ``q = 0``. KDL's ``Segment`` constructor stores
    ``joint.pose(0).Inverse() * F`` internally, so ``segment.pose(q) = F * Rot(axis, q)``.

    Args:
        urdf_xml: URDF document.
        root: Base link of the chain.
        tip: Tip link of the chain.

    Returns:
        ``(chain, joint_names)``: the ``PyKDL.Chain`` and the names of its movable joints in
        chain order (root to tip).

    Raises:
        PeerUnavailable: If PyKDL is not importable.
        UnknownLinkError: If a link is missing.
        UnknownNameError: If ``root`` is not an ancestor of ``tip``.
        UnsupportedJointError: For a floating or planar joint, or a mimic joint on the path.
    """
    kdl = import_pykdl()
    fixed = getattr(kdl.Joint, "Fixed", None) or getattr(kdl.Joint, "None")
    chain = kdl.Chain()
    names: list[str] = []
    for j in urdf_chain(urdf_xml, root, tip):
        frame = kdl.Frame(kdl.Rotation(*j.rotation), kdl.Vector(*j.xyz))
        if j.type == "fixed":
            joint = kdl.Joint(j.name, fixed)
        else:
            jtype = kdl.Joint.TransAxis if j.type == "prismatic" else kdl.Joint.RotAxis
            joint = kdl.Joint(j.name, frame.p, frame.M * kdl.Vector(*j.axis), jtype)
            names.append(j.name)
        chain.addSegment(kdl.Segment(j.child, joint, frame))
    return chain, names


def _check_q(q: Any, n: int) -> FloatArray:
    arr = np.asarray(q, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"q must have shape ({n},), got {arr.shape}")
    return arr


def rotation_to_quaternion(rot: FloatArray) -> tuple[float, float, float, float]:
    """Unit quaternion ``(x, y, z, w)`` of a rotation matrix (Shepperd's method).

    Args:
        rot: Rotation matrix, shape (3, 3).

    Returns:
        ``(x, y, z, w)`` with ``w >= 0``.
    """
    m = np.asarray(rot, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(tr + 1.0)
        w, x = 0.25 * s, (m[2, 1] - m[1, 2]) / s
        y, z = (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        w, x = (m[2, 1] - m[1, 2]) / s, 0.25 * s
        y, z = (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        w, x = (m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s
        y, z = 0.25 * s, (m[1, 2] + m[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        w, x = (m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s
        y, z = (m[1, 2] + m[2, 1]) / s, 0.25 * s
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    return float(x), float(y), float(z), float(w)


def pose_error(current: FloatArray, target: FloatArray) -> FloatArray:
    """Error twist from ``current`` to ``target``, both ``(4, 4)`` in the same base frame.

    Args:
        current: Current pose, shape (4, 4).
        target: Target pose, shape (4, 4).

    Returns:
        ``(6,)``: position difference [m] then rotation vector [rad] of
        ``R_target R_current^T``, both in the base frame (KDL's ``diff(current, target)``).
    """
    dp = target[:3, 3] - current[:3, 3]  # (3,)
    r = target[:3, :3] @ current[:3, :3].T  # (3, 3)
    cos = max(-1.0, min(1.0, 0.5 * (r[0, 0] + r[1, 1] + r[2, 2] - 1.0)))
    angle = math.acos(cos)
    axis_sin = 0.5 * np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-9:
        rotvec = axis_sin
    elif math.pi - angle < 1e-6:
        # Near pi: axis from the symmetric part (sign is irrelevant at pi).
        sym = 0.5 * (r + np.eye(3))
        k = int(np.argmax(np.diag(sym)))
        axis = sym[:, k] / math.sqrt(max(sym[k, k], 1e-300))
        rotvec = axis * angle
    else:
        rotvec = axis_sin * (angle / math.sin(angle))
    return np.concatenate([dp, rotvec])


# --------------------------------------------------------------------------------------------
# KDL
# --------------------------------------------------------------------------------------------


class KdlPeer:
    """Orocos KDL on one chain, with all KDL objects allocated once.

    Attributes:
        chain: The ``PyKDL.Chain``.
        joint_names: Movable joints in chain order.
        n: Number of movable joints.
    """

    def __init__(self, urdf_xml: str, root: str, tip: str, *, lam: float = 0.0) -> None:
        """Build the chain and the solvers.

        Args:
            urdf_xml: URDF document.
            root: Base link of the chain.
            tip: Tip link of the chain.
            lam: Damping ``lambda`` of ``ChainIkSolverVel_wdls`` (KDL's default is 0); see
                :meth:`set_lambda` for when KDL applies it.

        Raises:
            PeerUnavailable: If PyKDL is not importable.
        """
        kdl = import_pykdl()
        self._kdl = kdl
        self.chain, self.joint_names = kdl_chain_from_urdf(urdf_xml, root, tip)
        self.n = int(self.chain.getNrOfJoints())
        n = self.n
        self._q = kdl.JntArray(n)
        self._qdot = kdl.JntArray(n)
        self._frame = kdl.Frame()
        self._jac = kdl.Jacobian(n)
        self._fk_solver = kdl.ChainFkSolverPos_recursive(self.chain)
        self._jac_solver = kdl.ChainJntToJacSolver(self.chain)
        self._wdls = kdl.ChainIkSolverVel_wdls(self.chain)
        self._wdls.setLambda(float(lam))
        self._target: Any = kdl.Frame()
        self._target_key = b""
        self._zero_twist = kdl.Twist()
        self._twist = kdl.Twist()
        self._rng6 = range(6)
        self._rngn = range(n)

    def set_lambda(self, lam: float, eps: float | None = None) -> None:
        """Set the damping of the WDLS velocity solver.

        KDL (1.5) applies the damping only near a singularity: ``lambda_scaled =
        lambda * sqrt(1 - (sigma_min / eps)^2)`` when more than ``n - 6`` singular values are
        below ``eps`` (default 1e-5), else 0 -- i.e. away from singularities the solver is the
        plain pseudo-inverse whatever ``lambda`` is. Raise ``eps`` to widen the damped region.

        Args:
            lam: Damping ``lambda`` (>= 0) of ``ChainIkSolverVel_wdls``.
            eps: Singular-value threshold (> 0) below which damping applies; None keeps it.
        """
        if not lam >= 0.0:
            raise ValueError(f"lambda must be >= 0, got {lam}")
        if eps is not None:
            if not eps > 0.0:
                raise ValueError(f"eps must be > 0, got {eps}")
            self._wdls.setEps(float(eps))
        self._wdls.setLambda(float(lam))

    def _load_q(self, q: Any) -> None:
        arr = self._q
        for i, v in enumerate(np.asarray(q, dtype=np.float64).tolist()):
            arr[i] = v

    def _frame_to_np(self) -> FloatArray:
        rot, pos = self._frame.M, self._frame.p
        out = np.eye(4)  # (4, 4)
        for i in range(3):
            out[i, 0], out[i, 1], out[i, 2], out[i, 3] = rot[i, 0], rot[i, 1], rot[i, 2], pos[i]
        return out

    def _jac_to_np(self) -> FloatArray:
        jac = self._jac
        return np.array([[jac[r, c] for c in self._rngn] for r in self._rng6])  # (6, n)

    def fk_jac(self, q: FloatArray) -> None:
        """Tip pose and tip Jacobian into KDL's preallocated objects (the kinematics unit).

        Args:
            q: Joint positions [rad | m], shape (n,).
        """
        self._load_q(q)
        self._fk_solver.JntToCart(self._q, self._frame)
        self._jac_solver.JntToJac(self._q, self._jac)

    def fk(self, q: FloatArray) -> FloatArray:
        """Tip pose in the root frame.

        Args:
            q: Joint positions [rad | m], shape (n,).

        Returns:
            Homogeneous transform, shape (4, 4).
        """
        _check_q(q, self.n)
        self._load_q(q)
        self._fk_solver.JntToCart(self._q, self._frame)
        return self._frame_to_np()

    def jacobian(self, q: FloatArray) -> FloatArray:
        """Tip Jacobian, reference point at the tip origin, expressed in the root frame.

        Args:
            q: Joint positions [rad | m], shape (n,).

        Returns:
            Rows 0-2 linear [m/s], rows 3-5 angular [rad/s] per unit joint velocity, shape (6, n).
        """
        _check_q(q, self.n)
        self._load_q(q)
        self._jac_solver.JntToJac(self._q, self._jac)
        return self._jac_to_np()

    def _solve(self, twist: Any) -> FloatArray:
        self._wdls.CartToJnt(self._q, twist, self._qdot)
        qdot = self._qdot
        return np.array([qdot[i] for i in self._rngn])

    def wdls_step(self, q: FloatArray, twist6: FloatArray) -> FloatArray:
        """Joint velocities for a tip twist with ``ChainIkSolverVel_wdls``.

        Args:
            q: Joint positions [rad | m], shape (n,).
            twist6: Tip twist in the root frame, (vx, vy, vz) [m/s] then (wx, wy, wz) [rad/s],
                shape (6,).

        Returns:
            Joint velocities [rad/s | m/s], shape (n,).
        """
        twist = self._twist
        tw = np.asarray(twist6, dtype=np.float64)
        if tw.shape != (6,):
            raise ValueError(f"twist6 must have shape (6,), got {tw.shape}")
        for i, v in enumerate(tw.tolist()):
            twist[i] = v
        self._load_q(q)
        return self._solve(twist)

    def tick(self, q: FloatArray, target_pose: FloatArray, gain: float) -> FloatArray:
        """One proportional pose-control tick done with KDL (the unit of the tick benchmark).

        FK of the tip (``ChainFkSolverPos_recursive``), error twist ``KDL.diff(current,
        target)`` (position difference and rotation vector in the root frame) times ``gain``,
        then ``ChainIkSolverVel_wdls.CartToJnt``, which computes the tip Jacobian itself with its
        internal ``ChainJntToJacSolver`` and solves it by SVD. So one tick = one FK + one
        Jacobian + one damped least-squares solve, like one iTaSC control tick.

        Args:
            q: Joint positions [rad | m], shape (n,).
            target_pose: Target tip pose in the root frame, shape (4, 4).
            gain: Proportional gain [1/s].

        Returns:
            Joint velocities [rad/s | m/s], shape (n,).
        """
        kdl = self._kdl
        t = np.asarray(target_pose, dtype=np.float64)
        key = t.tobytes()
        if key != self._target_key:  # a new target: convert it once, as a KDL node would
            r = t[:3, :3].ravel().tolist()
            p = t[:3, 3].tolist()
            self._target = kdl.Frame(kdl.Rotation(*r), kdl.Vector(p[0], p[1], p[2]))
            self._target_key = key
        self._load_q(q)
        self._fk_solver.JntToCart(self._q, self._frame)
        if gain == 0.0:
            return self._solve(self._zero_twist)
        # diff(a, b, dt) = (b - a) / dt, so dt = 1 / gain scales the error by the gain. (Passing
        # dt explicitly also avoids PyKDL's slow default-argument overload resolution.)
        return self._solve(kdl.diff(self._frame, self._target, 1.0 / float(gain)))


class KdlNrJlPeer:
    """Orocos KDL's position IK ``ChainIkSolverPos_NR_JL`` with a time budget.

    As TRAC-IK's own benchmark runs it: Newton-Raphson on ``ChainIkSolverVel_pinv`` with the
    joints clipped into their limits, called repeatedly from its last result until it reports
    success or the budget is spent (``iterations_per_call`` iterations per call, so that the
    clock is read between calls; no random restarts).

    Attributes:
        joint_names: Movable chain joints, root to tip.
        n: Number of chain joints.
        lower: Lower joint limits [rad | m], shape (n,).
        upper: Upper joint limits [rad | m], shape (n,).
        timeout: Time budget per IK call [s].
        eps: Convergence tolerance of every component of KDL's pose difference.
    """

    def __init__(
        self,
        urdf_xml: str,
        root: str,
        tip: str,
        *,
        timeout: float = 0.005,
        eps: float = 1e-5,
        iterations_per_call: int = 10,
    ) -> None:
        """Build the chain and the solvers.

        Args:
            urdf_xml: URDF document.
            root: Base link of the chain.
            tip: Tip link of the chain.
            timeout: Time budget per IK call [s] (TRAC-IK protocol: 5 ms).
            eps: Convergence tolerance (TRAC-IK protocol: 1e-5).
            iterations_per_call: Newton iterations of one ``CartToJnt`` call.

        Raises:
            PeerUnavailable: If PyKDL is not importable.
        """
        kdl = import_pykdl()
        self._kdl = kdl
        self.chain, self.joint_names = kdl_chain_from_urdf(urdf_xml, root, tip)
        self.n = int(self.chain.getNrOfJoints())
        chain = [j for j in urdf_chain(urdf_xml, root, tip) if j.movable]
        big = float(np.finfo(np.float32).max)
        self.lower = np.array([max(j.lower, -big) for j in chain])
        self.upper = np.array([min(j.upper, big) for j in chain])
        self.timeout = float(timeout)
        self.eps = float(eps)
        q_min, q_max = kdl.JntArray(self.n), kdl.JntArray(self.n)
        for i in range(self.n):
            q_min[i], q_max[i] = float(self.lower[i]), float(self.upper[i])
        self._fk = kdl.ChainFkSolverPos_recursive(self.chain)
        self._vel = kdl.ChainIkSolverVel_pinv(self.chain)
        self._solver = kdl.ChainIkSolverPos_NR_JL(
            self.chain, q_min, q_max, self._fk, self._vel, int(iterations_per_call), self.eps
        )
        self._q_in = kdl.JntArray(self.n)
        self._q_out = kdl.JntArray(self.n)

    def ik(self, seed: FloatArray, pose: FloatArray) -> FloatArray | None:
        """Solve the position IK within the time budget.

        Args:
            seed: Initial joint positions [rad | m], shape (n,).
            pose: Target tip pose in the root frame, shape (4, 4).

        Returns:
            Joint positions, shape (n,), or None if no solution was found in time.
        """
        kdl = self._kdl
        deadline = time.perf_counter() + self.timeout
        seed = _check_q(seed, self.n)
        r = pose[:3, :3].ravel().tolist()
        p = pose[:3, 3].tolist()
        target = kdl.Frame(kdl.Rotation(*r), kdl.Vector(p[0], p[1], p[2]))
        q_in, q_out = self._q_in, self._q_out
        for i, v in enumerate(seed.tolist()):
            q_in[i] = v
        while True:
            rc = self._solver.CartToJnt(q_in, target, q_out)
            if rc >= 0:
                return np.array([q_out[i] for i in range(self.n)])
            if time.perf_counter() >= deadline:
                return None
            q_in, q_out = q_out, q_in  # go on from the last iterate


# --------------------------------------------------------------------------------------------
# Pinocchio
# --------------------------------------------------------------------------------------------


class PinocchioPeer:
    """Pinocchio on the chain ``root -> tip`` of a URDF (the model holds the whole URDF).

    Joints of the model that are not on the chain stay at their neutral position.

    Attributes:
        model: The ``pinocchio.Model``.
        data: Its ``pinocchio.Data``.
        joint_names: Movable chain joints, root to tip (same order as :class:`KdlPeer`).
        n: Number of chain joints.
    """

    def __init__(self, urdf_xml: str, tip: str, root: str | None = None) -> None:
        """Build the Pinocchio model.

        Args:
            urdf_xml: URDF document.
            tip: Tip link of the chain.
            root: Base link of the chain; default: the URDF root link. Poses and Jacobians are
                expressed in this link's frame.

        Raises:
            PeerUnavailable: If Pinocchio is not importable.
            UnknownLinkError: If a link is missing.
            UnknownNameError: If ``root`` is not an ancestor of ``tip``.
        """
        pin = _import_pinocchio()
        self._pin = pin
        spec = parse_urdf(urdf_xml)
        if root is None:
            root = _root_link(spec)
        chain = _spec_chain(spec, urdf_xml, root, tip)
        self.joint_names = [j.name for j in chain if j.movable]
        self.n = len(self.joint_names)
        self.model = pin.buildModelFromXML(urdf_xml)
        self.data = self.model.createData()
        model = self.model
        self._tip_id = int(model.getFrameId(tip))
        self._root_id = int(model.getFrameId(root))
        # A root frame other than the universe: express results in it.
        self._root_is_world = bool(
            model.frames[self._root_id].parentJoint == 0
            and np.allclose(model.frames[self._root_id].placement.homogeneous, np.eye(4))
        )
        self._q_pin = pin.neutral(model)
        lin_idx, lin_src, cs_idx, cs_src, v_cols = [], [], [], [], []
        for i, name in enumerate(self.joint_names):
            jm = model.joints[model.getJointId(name)]
            if jm.nq == 1:
                lin_idx.append(jm.idx_q)
                lin_src.append(i)
            elif jm.nq == 2:  # continuous joint: (cos, sin)
                cs_idx.append(jm.idx_q)
                cs_src.append(i)
            else:
                raise UnsupportedJointError(
                    f"joint {name!r} has nq={jm.nq} in Pinocchio; supported: 1 or 2 (continuous)"
                )
            v_cols.append(jm.idx_v)
        self._lin_idx = np.array(lin_idx, dtype=np.intp)
        self._lin_src = np.array(lin_src, dtype=np.intp)
        self._cs_idx = np.array(cs_idx, dtype=np.intp)
        self._cs_src = np.array(cs_src, dtype=np.intp)
        self._v_cols = np.array(v_cols, dtype=np.intp)
        self._lin_slice: slice | None = None
        if not cs_idx and lin_idx and lin_idx == list(range(lin_idx[0], lin_idx[0] + self.n)):
            self._lin_slice = slice(lin_idx[0], lin_idx[0] + self.n)
        self._lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def to_pinocchio_q(self, q: FloatArray) -> FloatArray:
        """Chain joint vector to Pinocchio's configuration vector.

        Args:
            q: Chain joint positions [rad | m], shape (n,).

        Returns:
            Pinocchio configuration, shape (model.nq,).
        """
        qp = self._q_pin
        if self._lin_slice is not None:  # chain joints are one block of Pinocchio's q
            qp[self._lin_slice] = q
        else:
            qp[self._lin_idx] = q[self._lin_src]
        if self._cs_idx.size:
            qc = q[self._cs_src]
            qp[self._cs_idx] = np.cos(qc)
            qp[self._cs_idx + 1] = np.sin(qc)
        return qp

    def fk_jac(self, q: FloatArray) -> None:
        """Tip pose and tip Jacobian into ``data`` (the kinematics unit).

        ``computeFrameJacobian`` runs the forward kinematics of the joints supporting the tip and
        returns the frame Jacobian; ``updateFramePlacement`` gives the tip pose.

        Args:
            q: Chain joint positions [rad | m], shape (n,).
        """
        pin = self._pin
        qp = self.to_pinocchio_q(q)
        pin.computeFrameJacobian(self.model, self.data, qp, self._tip_id, self._lwa)
        pin.updateFramePlacement(self.model, self.data, self._tip_id)

    def fk(self, q: FloatArray) -> FloatArray:
        """Tip pose in the root frame.

        Args:
            q: Chain joint positions [rad | m], shape (n,).

        Returns:
            Homogeneous transform, shape (4, 4).
        """
        pin = self._pin
        q = _check_q(q, self.n)
        pin.framesForwardKinematics(self.model, self.data, self.to_pinocchio_q(q))
        o_m_tip = self.data.oMf[self._tip_id]
        if self._root_is_world:
            return np.array(o_m_tip.homogeneous)
        return np.array((self.data.oMf[self._root_id].actInv(o_m_tip)).homogeneous)

    def jacobian(self, q: FloatArray) -> FloatArray:
        """Tip Jacobian, reference point at the tip origin, expressed in the root frame.

        Args:
            q: Chain joint positions [rad | m], shape (n,).

        Returns:
            Rows 0-2 linear [m/s], rows 3-5 angular [rad/s] per unit joint velocity, shape (6, n).
        """
        pin = self._pin
        q = _check_q(q, self.n)
        qp = self.to_pinocchio_q(q)
        jac = pin.computeFrameJacobian(self.model, self.data, qp, self._tip_id, self._lwa)
        jac = np.array(jac[:, self._v_cols])  # (6, n)
        if not self._root_is_world:
            pin.framesForwardKinematics(self.model, self.data, qp)
            rot_t = self.data.oMf[self._root_id].rotation.T  # (3, 3)
            jac[:3] = rot_t @ jac[:3]
            jac[3:] = rot_t @ jac[3:]
        return jac


# --------------------------------------------------------------------------------------------
# TRAC-IK
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IkBenchResult:
    """Outcome of :meth:`TracIkPeer.benchmark_ik`.

    Attributes:
        n: Number of targets.
        success_rate: Fraction of targets solved, in [0, 1].
        mean_time_s: Mean time per target [s]; a failure counts at least the full timeout.
        mean_success_time_s: Mean time of the solved targets [s] (nan if none).
        max_pose_error: Largest error norm (position [m] + rotation [rad], KDL ``diff``) of a
            returned solution, checked with TRAC-IK's own FK.
    """

    n: int
    success_rate: float
    mean_time_s: float
    mean_success_time_s: float
    max_pose_error: float


class TracIkPeer:
    """TRAC-IK (``pytracik``) on the chain ``root -> tip``.

    Attributes:
        joint_names: Movable chain joints, root to tip.
        n: Number of chain joints.
        lower: Lower joint limits used by the solver [rad | m], shape (n,).
        upper: Upper joint limits used by the solver [rad | m], shape (n,).
        timeout: Time budget per IK call [s].
        eps: Convergence tolerance.
    """

    SOLVE_TYPES = ("Speed", "Distance", "Manip1", "Manip2")

    def __init__(
        self,
        urdf_xml: str,
        root: str,
        tip: str,
        *,
        timeout: float = 0.005,
        eps: float = 1e-5,
        solve_type: str = "Speed",
    ) -> None:
        """Create the TRAC-IK solver.

        Args:
            urdf_xml: URDF document (passed to TRAC-IK as a string).
            root: Base link of the chain.
            tip: Tip link of the chain.
            timeout: Time budget per IK call [s] (TRAC-IK protocol: 5 ms).
            eps: Convergence tolerance (TRAC-IK protocol: 1e-5).
            solve_type: One of 'Speed', 'Distance', 'Manip1', 'Manip2'.

        Raises:
            PeerUnavailable: If pytracik is not importable or cannot build the chain.
            ValueError: For an unknown ``solve_type``.
        """
        tracik = _import_pytracik()
        self._tracik = tracik
        if solve_type not in self.SOLVE_TYPES:
            raise ValueError(
                f"unknown solve_type {solve_type!r}; valid choices: {', '.join(self.SOLVE_TYPES)}"
            )
        chain = [j for j in urdf_chain(urdf_xml, root, tip) if j.movable]
        self.joint_names = [j.name for j in chain]
        self.n = len(chain)
        self.timeout = float(timeout)
        self.eps = float(eps)
        # TRAC-IK prints a warning about the root link's inertia to std::cout: silence it.
        with _native_stdout_silenced():
            self._solver = tracik.TRAC_IK(
                root, tip, urdf_xml, self.timeout, self.eps, getattr(tracik.SolveType, solve_type)
            )
        n_trac = int(tracik.get_num_joints(self._solver))
        if n_trac != self.n:
            raise PeerUnavailable(
                f"pytracik built a chain of {n_trac} joints from {root!r} to {tip!r}, the URDF "
                f"has {self.n}; the chain cannot be benchmarked"
            )
        # pytracik's URDF reader gets the limits wrong: set them from the URDF.
        big = float(np.finfo(np.float32).max)  # what ROS TRAC-IK uses for continuous joints
        self.lower = np.array([max(j.lower, -big) for j in chain])
        self.upper = np.array([min(j.upper, big) for j in chain])
        tracik.set_joint_limits(self._solver, self.lower.tolist(), self.upper.tolist())
        finite = (
            np.isfinite(self.lower) & np.isfinite(self.upper) & (self.upper - self.lower < 1e6)
        )
        self._sample_lo = np.where(finite, self.lower, -math.pi)
        self._sample_hi = np.where(finite, self.upper, math.pi)

    def mid_range(self) -> FloatArray:
        """Middle of the joint limits (0 for continuous joints), shape (n,)."""
        return 0.5 * (self._sample_lo + self._sample_hi)

    def random_q(self, rng: np.random.Generator) -> FloatArray:
        """A uniformly random joint vector within the limits ([-pi, pi] if unlimited), (n,)."""
        return rng.uniform(self._sample_lo, self._sample_hi)

    def fk(self, q: FloatArray) -> FloatArray:
        """Tip pose in the root frame with TRAC-IK's own KDL chain.

        Args:
            q: Joint positions [rad | m], shape (n,).

        Returns:
            Homogeneous transform, shape (4, 4).
        """
        q = _check_q(q, self.n)
        return np.array(self._tracik.fk(self._solver, q))

    def ik(self, seed: FloatArray, pose: FloatArray) -> FloatArray | None:
        """Solve the position IK.

        Args:
            seed: Initial joint positions [rad | m], shape (n,).
            pose: Target tip pose in the root frame, shape (4, 4).

        Returns:
            Joint positions, shape (n,), or None if TRAC-IK found no solution in time.
        """
        seed = _check_q(seed, self.n)
        x, y, z = (float(v) for v in pose[:3, 3])
        qx, qy, qz, qw = rotation_to_quaternion(pose[:3, :3])
        r = self._tracik.ik(self._solver, seed, x, y, z, qx, qy, qz, qw)
        if r[0] < 0:
            return None
        return np.array(r[1:])

    def benchmark_ik(self, n: int = 10_000, seed: int = 0) -> IkBenchResult:
        """TRAC-IK benchmark protocol on this chain.

        ``n`` random reachable targets (FK of uniformly random joint vectors within the limits),
        each solved from the mid-range seed with the solver's tolerance and timeout (5 ms and
        1e-5 by default). A failure counts at least the full timeout in the mean time.

        Args:
            n: Number of targets.
            seed: Seed of the random generator of the targets.

        Returns:
            Success rate, mean times and the largest pose error of a returned solution.
        """
        rng = np.random.default_rng(seed)
        q_seed = self.mid_range()
        targets = [self.fk(self.random_q(rng)) for _ in range(n)]
        times = np.empty(n)
        ok = np.zeros(n, dtype=bool)
        max_err = 0.0
        clock = time.perf_counter
        for k, target in enumerate(targets):
            t0 = clock()
            sol = self.ik(q_seed, target)
            dt = clock() - t0
            if sol is None:
                times[k] = max(dt, self.timeout)
            else:
                times[k] = dt
                ok[k] = True
                max_err = max(max_err, float(np.linalg.norm(pose_error(self.fk(sol), target))))
        return IkBenchResult(
            n=n,
            success_rate=float(ok.mean()) if n else math.nan,
            mean_time_s=float(times.mean()) if n else math.nan,
            mean_success_time_s=float(times[ok].mean()) if ok.any() else math.nan,
            max_pose_error=max_err,
        )


def available_peers() -> dict[str, str | None]:
    """Which peers can be used here.

    Returns:
        Peer name ('kdl', 'pinocchio', 'trac_ik') -> None if usable, else the reason.
    """
    out: dict[str, str | None] = {}
    for name, fn in (
        ("kdl", import_pykdl),
        ("pinocchio", _import_pinocchio),
        ("trac_ik", _import_pytracik),
    ):
        try:
            fn()
            out[name] = None
        except PeerUnavailable as exc:
            out[name] = str(exc)
    return out


def joint_vector(names: Sequence[str], values: dict[str, float]) -> FloatArray:
    """Joint vector in the order ``names`` from a name -> value mapping.

    Args:
        names: Joint names in the wanted order.
        values: Joint positions [rad | m] by name.

    Returns:
        Shape (len(names),).
    """
    return np.array([float(values[n]) for n in names])


__all__ = [
    "SYSTEM_DIST_PACKAGES",
    "ChainJoint",
    "IkBenchResult",
    "KdlNrJlPeer",
    "KdlPeer",
    "PeerUnavailable",
    "PinocchioPeer",
    "TracIkPeer",
    "available_peers",
    "import_pykdl",
    "joint_vector",
    "kdl_chain_from_urdf",
    "pose_error",
    "rotation_to_quaternion",
    "urdf_chain",
]
