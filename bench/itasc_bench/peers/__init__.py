"""Peer kinematics libraries for side-by-side benchmarks: KDL, Pinocchio, TRAC-IK, PlaCo, Drake.

Every peer keeps the contract of :mod:`~itasc_bench.peers.contract` (chain-order joint
vectors, ``(4, 4)`` poses, ``(6, n)`` Jacobians, :class:`PeerUnavailable` when not installed) on
a chain read from the URDF by the solver's own reader (:mod:`~itasc_bench.peers.urdf_chain`):

* :class:`KdlPeer` (:mod:`~itasc_bench.peers.kdl`): Orocos KDL through Debian's
  ``python3-pykdl`` (:mod:`~itasc_bench.peers.kdl_import`), its chain built as the C++
  ``kdl_parser`` does (:mod:`~itasc_bench.peers.kdl_chain`): FK, Jacobian, WDLS tick.
* :class:`KdlNrJlPeer` (:mod:`~itasc_bench.peers.kdl_nr_jl`): KDL's position IK.
* :class:`PinocchioPeer` (:mod:`~itasc_bench.peers.pinocchio_peer`): Pinocchio (``pin``).
* :class:`TracIkPeer` (:mod:`~itasc_bench.peers.trac_ik`): TRAC-IK (``pytracik``).
* :class:`PlacoPeer` (:mod:`~itasc_bench.peers.placo_peer`): PlaCo's velocity IK tick with
  joint and velocity limits in its QP, run and timed in a worker process
  (:mod:`~itasc_bench.peers.placo_worker`) under the Python of PlaCo's own venv.
* :class:`DrakePeer` (:mod:`~itasc_bench.peers.drake_peer`): Drake's differential IK tick
  (``DoDifferentialInverseKinematics``) with joint and velocity limits.
* :class:`PinocchioReference` (:mod:`~itasc_bench.peers.pinocchio_collision`): Pinocchio +
  coal on the pairs of a collision constraint.
* :func:`pose_error` and :func:`rotation_to_quaternion` (:mod:`~itasc_bench.peers.poses`),
  :func:`available_peers` (:mod:`~itasc_bench.peers.availability`).
"""

from .availability import available_peers
from .contract import PeerUnavailable, joint_vector
from .drake_peer import DrakePeer, import_pydrake
from .kdl import KdlPeer
from .kdl_chain import kdl_chain_from_urdf
from .kdl_import import SYSTEM_DIST_PACKAGES, import_pykdl
from .kdl_nr_jl import KdlNrJlPeer
from .pinocchio_collision import PinocchioReference, pinocchio_reference
from .pinocchio_peer import PinocchioPeer, import_pinocchio
from .placo_peer import PlacoPeer, placo_python
from .poses import pose_error, rotation_to_quaternion
from .trac_ik import IkBenchResult, TracIkPeer, import_pytracik
from .urdf_chain import ChainJoint, urdf_chain

__all__ = [
    "SYSTEM_DIST_PACKAGES",
    "ChainJoint",
    "DrakePeer",
    "IkBenchResult",
    "KdlNrJlPeer",
    "KdlPeer",
    "PeerUnavailable",
    "PinocchioPeer",
    "PinocchioReference",
    "PlacoPeer",
    "TracIkPeer",
    "available_peers",
    "import_pinocchio",
    "import_pydrake",
    "import_pykdl",
    "import_pytracik",
    "joint_vector",
    "kdl_chain_from_urdf",
    "pinocchio_reference",
    "placo_python",
    "pose_error",
    "rotation_to_quaternion",
    "urdf_chain",
]
