"""A ``KDL.Chain`` built from a URDF exactly as the C++ ``kdl_parser`` builds it.

PyKDL has no ``kdl_parser`` in Python, so :func:`kdl_chain_from_urdf` builds the chain from the
URDF as read by the solver's own reader (:func:`~itasc_bench.peers.urdf_chain.urdf_chain`):
the KDL peers and the solver see the same joints. :class:`KdlChainPeer` is what every KDL peer
starts from: PyKDL, the chain and its joints.
"""

from __future__ import annotations

from typing import Any

from .kdl_import import import_pykdl
from .urdf_chain import urdf_chain


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


class KdlChainPeer:
    """The base of the KDL peers: PyKDL and the chain ``root -> tip``.

    Attributes:
        kdl: The PyKDL module.
        chain: The ``PyKDL.Chain``.
        joint_names: Movable joints in chain order.
        n: Number of movable joints.
    """

    def __init__(self, urdf_xml: str, root: str, tip: str) -> None:
        """Build the chain.

        Args:
            urdf_xml: URDF document.
            root: Base link of the chain.
            tip: Tip link of the chain.

        Raises:
            PeerUnavailable: If PyKDL is not importable.
        """
        self.kdl = import_pykdl()
        self.chain, self.joint_names = kdl_chain_from_urdf(urdf_xml, root, tip)
        self.n = int(self.chain.getNrOfJoints())


__all__ = ["KdlChainPeer", "kdl_chain_from_urdf"]
