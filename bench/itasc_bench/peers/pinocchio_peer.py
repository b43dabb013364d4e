"""Pinocchio (``pin`` wheel) on the chain of a URDF: the tip's FK and Jacobian.

The model holds the whole URDF (``pinocchio.buildModelFromXML``); the chain's joints are mapped
into Pinocchio's configuration vector, a continuous joint's angle into its ``(cos, sin)`` pair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from itasc_ros.core.errors import UnsupportedJointError
from itasc_ros.core.kinematics.urdf import parse_urdf

from .contract import FloatArray, PeerUnavailable, check_q
from .urdf_chain import root_link, spec_chain


def import_pinocchio() -> Any:
    """The ``pinocchio`` module.

    Raises:
        PeerUnavailable: If Pinocchio is not importable; the message has the install hint.
    """
    try:
        import pinocchio
    except ImportError as exc:
        raise PeerUnavailable(
            "Pinocchio is not importable: install it with 'pip install pin' "
            "(or the 'bench' extra of itasc_ros)"
        ) from exc
    return pinocchio


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
        pin = import_pinocchio()
        self._pin = pin
        spec = parse_urdf(urdf_xml)
        if root is None:
            root = root_link(spec)
        chain = spec_chain(spec, urdf_xml, root, tip)
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
        self._map_joints(model)
        self._lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def _map_joints(self, model: Any) -> None:
        """Where each chain joint sits in Pinocchio's q (a value, or a (cos, sin) pair) and v."""
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
        q = check_q(q, self.n)
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
        q = check_q(q, self.n)
        qp = self.to_pinocchio_q(q)
        jac = pin.computeFrameJacobian(self.model, self.data, qp, self._tip_id, self._lwa)
        jac = np.array(jac[:, self._v_cols])  # (6, n)
        if not self._root_is_world:
            pin.framesForwardKinematics(self.model, self.data, qp)
            rot_t = self.data.oMf[self._root_id].rotation.T  # (3, 3)
            jac[:3] = rot_t @ jac[:3]
            jac[3:] = rot_t @ jac[3:]
        return jac


__all__ = ["PinocchioPeer", "import_pinocchio"]
