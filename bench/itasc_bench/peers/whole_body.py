"""Whole-body position IK peers: Pinocchio's CLIK and pink (Pinocchio), mink (MuJoCo).

Both solve the problem of ``itasc-bench ik``'s whole-body row (:mod:`~itasc_bench.
ik_whole_body`): frames placed on target poses (the feet where they stand, the hands on their
targets), the centre of mass's ground-plane coordinates kept in a band, from a seed, within a
time budget. Their model is Pinocchio's, built from the same URDF behind a free-flyer joint;
:class:`FreeFlyerMap` converts configurations to and from the order of our tree behind
:func:`~itasc_ros.core.kinematics.mobile_base.with_floating_base` (x, y, z, then yaw, pitch,
roll), so that every answer is checked by the same forward kinematics.

* :class:`PinocchioClik`: the closed-loop IK of Pinocchio's examples (damped least squares on
  the stacked frame errors ``log6(oMf^-1 oMtarget)`` in the frames' local axes, Jacobians
  ``computeFrameJacobian(..., LOCAL)``, ``pinocchio.integrate``), with the CoM's rows
  (``jacobianCenterOfMass``) while the CoM is outside its band, the joints clipped into their
  limits.
* :class:`PinkIk`: pink's differential IK (``FrameTask`` per frame, ``ComTask`` on the CoM
  while it is outside its band, the configuration limits in its QP, solved with ``daqp``)
  integrated to convergence.
* :class:`MinkIk`: mink's (the same tasks and limits on MuJoCo's model of the same URDF,
  :func:`mujoco_free_flyer`: its links as bodies, a free joint on the root; forward
  kinematics and centre of mass equal to ours to 1e-12), integrated to convergence.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.kinematics.mobile_base import FLOATING_JOINTS
from itasc_ros.core.kinematics.spatial import matrix_to_quat

from .contract import PeerUnavailable
from .mink_arm import import_mink
from .pink_arm import import_pink
from .pinocchio_peer import import_pinocchio
from .poses import pose_error

Array = NDArray[np.float64]


class FreeFlyerMap:
    """Pinocchio's free-flyer model of a URDF, and configurations in our tree's order.

    Args:
        urdf_path: the URDF file.
        joint_names: our tree's joints: :data:`FLOATING_JOINTS`, then URDF joints.

    Raises:
        PeerUnavailable: Pinocchio is not importable, or a joint is not in its model.
    """

    def __init__(self, urdf_path: str, joint_names: Sequence[str]) -> None:
        pin = import_pinocchio()
        self.pin = pin
        self.model = pin.buildModelFromUrdf(urdf_path, pin.JointModelFreeFlyer())
        self.data = self.model.createData()
        if tuple(joint_names[:6]) != FLOATING_JOINTS:
            raise PeerUnavailable(f"the tree's first joints are not {FLOATING_JOINTS}")
        self._ours = list(joint_names[6:])
        missing = [n for n in self._ours if not self.model.existJointName(n)]
        if missing:
            raise PeerUnavailable(f"Pinocchio's model has no joints {missing}")
        ids = [self.model.getJointId(n) for n in self._ours]
        self._idx_q = np.array([self.model.joints[i].idx_q for i in ids])
        self.neutral = pin.neutral(self.model)
        #: (nq,) the limits of Pinocchio's configuration, unbounded for the free flyer.
        self.lower = np.where(np.arange(self.model.nq) < 7, -np.inf, self.model.lowerPositionLimit)
        self.upper = np.where(np.arange(self.model.nq) < 7, np.inf, self.model.upperPositionLimit)

    def to_pin(self, q: Array) -> Array:
        """Our configuration (6 + k,) as Pinocchio's (nq,); its other joints neutral."""
        out = self.neutral.copy()
        x, y, z, yaw, pitch, roll = q[:6]
        out[:3] = (x, y, z)
        out[3:7] = matrix_to_quat(_rotation(yaw, pitch, roll))  # x, y, z, w
        out[self._idx_q] = q[6:]
        return out

    def from_pin(self, q: Array) -> Array:
        """Pinocchio's configuration (nq,) in our order (6 + k,)."""
        r = self.pin.Quaternion(q[6], q[3], q[4], q[5]).normalized().toRotationMatrix()
        yaw = math.atan2(r[1, 0], r[0, 0])
        pitch = math.asin(max(-1.0, min(1.0, -r[2, 0])))
        roll = math.atan2(r[2, 1], r[2, 2])
        return np.concatenate([q[:3], [yaw, pitch, roll], q[self._idx_q]])

    def frame(self, link: str) -> int:
        """The id of a link's frame.

        Raises:
            PeerUnavailable: no such frame.
        """
        if not self.model.existFrame(link):
            raise PeerUnavailable(f"Pinocchio's model has no frame {link!r}")
        return int(self.model.getFrameId(link))


def band_gap(com: Array, lo: Array, hi: Array) -> Array:
    """(2,) the move of the centre of mass ``com`` (3,) [m] along x, y into the band (0 inside).

    Every peer's success test and CoM task read it: a ``ComTask`` targets ``com`` moved by it.
    """
    xy = com[:2]
    return np.clip(xy, lo, hi) - xy


def _rotation(yaw: float, pitch: float, roll: float) -> Array:
    """Rz(yaw) Ry(pitch) Rx(roll) (3, 3)."""
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    cr, sr = math.cos(roll), math.sin(roll)
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    return rz @ ry @ rx


class _Problem:
    """Frames on targets and the CoM's band, on a :class:`FreeFlyerMap`'s model."""

    def __init__(
        self, fmap: FreeFlyerMap, links: Sequence[str], band: tuple[Array, Array], eps: float
    ) -> None:
        self.fmap, self.pin = fmap, fmap.pin
        self.frames = [fmap.frame(link) for link in links]
        self.lo, self.hi = band
        self.eps = eps
        self.targets: list[Any] = []

    def set_targets(self, poses: Sequence[Array]) -> None:
        """(4, 4) target poses of the frames, in their order."""
        self.targets = [self.pin.SE3(p[:3, :3].copy(), p[:3, 3].copy()) for p in poses]

    def com_error(self, q: Array) -> Array:
        """(2,) how far the CoM's x, y are outside the band (0 inside) [m]."""
        return band_gap(
            self.pin.centerOfMass(self.fmap.model, self.fmap.data, q), self.lo, self.hi
        )


class PinocchioClik:
    """Pinocchio's CLIK on frames and a CoM band (see the module).

    Args:
        fmap: the model.
        links: the frames placed on targets.
        band: the CoM's (lower, upper) x, y [m].
        eps: the largest error of a frame's component [m or rad] at a solution.
        timeout: the time budget [s].
        damping: the least squares' damping (1e-3: the most successes of 1e-6, 1e-3, 0.1).
    """

    def __init__(
        self,
        fmap: FreeFlyerMap,
        links: Sequence[str],
        band: tuple[Array, Array],
        eps: float,
        timeout: float,
        damping: float = 1e-3,
    ) -> None:
        self.p = _Problem(fmap, links, band, eps)
        self.timeout, self.damping = timeout, damping

    def solve(self, seed: Array, poses: Sequence[Array]) -> Array | None:
        """Our configuration placing the frames on ``poses``, or None when the budget ends."""
        p, pin = self.p, self.p.pin
        model, data = p.fmap.model, p.fmap.data
        p.set_targets(poses)
        q = p.fmap.to_pin(seed)
        deadline = time.perf_counter() + self.timeout
        while time.perf_counter() < deadline:
            pin.computeJointJacobians(model, data, q)
            pin.updateFramePlacements(model, data)
            errs, jacs = [], []
            for f, target in zip(p.frames, p.targets, strict=True):
                errs.append(pin.log6(data.oMf[f].actInv(target)).vector)
                jacs.append(pin.getFrameJacobian(model, data, f, pin.LOCAL))
            com = p.com_error(q)
            e = np.concatenate(errs)
            if np.all(np.abs(e) <= p.eps) and not com.any():
                return p.fmap.from_pin(q)
            if com.any():
                e = np.concatenate([e, com])
                jacs.append(pin.jacobianCenterOfMass(model, data, q)[:2])
            j = np.vstack(jacs)
            v = j.T @ np.linalg.solve(j @ j.T + self.damping * np.eye(j.shape[0]), e)
            q = pin.integrate(model, q, v)
            q = np.clip(q, p.fmap.lower, p.fmap.upper)
        return None


class PinkIk:
    """pink's differential IK on frames and a CoM band, integrated to convergence.

    Args:
        fmap: the model.
        links: the frames placed on targets.
        band: the CoM's (lower, upper) x, y [m].
        eps: the largest error of a frame's component [m or rad] at a solution.
        timeout: the time budget [s].
        dt: the integration step of one differential IK [s] (its tasks' gains are 1: each
            step asks for the whole error over ``dt``).
        lm_damping: the frame tasks' Levenberg-Marquardt damping (pink's advice for targets
            that may be out of reach; 1e-3: the most successes of 0, 1e-3, 0.1, with ``dt``
            1 or 0.5).

    Raises:
        PeerUnavailable: pink (``pin-pink``) or its QP solver ``daqp`` is not installed.
    """

    def __init__(
        self,
        fmap: FreeFlyerMap,
        links: Sequence[str],
        band: tuple[Array, Array],
        eps: float,
        timeout: float,
        dt: float = 1.0,
        lm_damping: float = 1e-3,
    ) -> None:
        self.pink = import_pink()
        from pink.tasks import ComTask, FrameTask

        self.p = _Problem(fmap, links, band, eps)
        self.links = list(links)
        self.tasks = [
            FrameTask(n, position_cost=1.0, orientation_cost=1.0, lm_damping=lm_damping)
            for n in links
        ]
        self.com_task = ComTask(cost=np.array([1.0, 1.0, 0.0]))
        self.timeout, self.dt = timeout, dt

    def solve(self, seed: Array, poses: Sequence[Array]) -> Array | None:
        """Our configuration placing the frames on ``poses``, or None when the budget ends."""
        p, pin, pink = self.p, self.p.pin, self.pink
        p.set_targets(poses)
        for task, target in zip(self.tasks, p.targets, strict=True):
            task.set_target(target)
        conf = pink.Configuration(p.fmap.model, p.fmap.data, p.fmap.to_pin(seed))
        model = p.fmap.model
        lower, upper = p.fmap.lower, p.fmap.upper
        deadline = time.perf_counter() + self.timeout
        while time.perf_counter() < deadline:
            e = np.concatenate(
                [pin.log6(conf.get_transform_frame_to_world(n).actInv(t)).vector
                 for n, t in zip(self.links, p.targets, strict=True)]
            )  # fmt: skip
            com = p.com_error(conf.q)
            if np.all(np.abs(e) <= p.eps) and not com.any():
                return p.fmap.from_pin(conf.q)
            tasks = list(self.tasks)
            if com.any():  # the CoM's task toward the band's nearest point while outside
                c = pin.centerOfMass(p.fmap.model, p.fmap.data, conf.q).copy()
                c[:2] += com
                self.com_task.set_target(c)
                tasks.append(self.com_task)
            try:
                v = pink.solve_ik(conf, tasks, self.dt, solver="daqp", safety_break=False)
            except pink.exceptions.NoSolutionFound:  # an infeasible QP
                return None
            q = pin.integrate(model, conf.q, v * self.dt)  # integrate_inplace, then rounding
            conf.update(np.clip(q, lower, upper))  # ~1e-6 outside a limit clipped back into it
        return None


def mujoco_free_flyer(urdf_path: str) -> tuple[Any, Any]:
    """MuJoCo's model of a URDF with a free joint on its root, and the ``mujoco`` module.

    The URDF's geometry is left out (kinematics and inertials only); a link behind a fixed
    joint stays a body of its own (``fusestatic`` off), so that every link is a frame.

    Raises:
        PeerUnavailable: MuJoCo is not installed, or it cannot read the URDF.
    """
    try:
        import mujoco
        from lxml import etree
    except ImportError as exc:
        raise PeerUnavailable(
            "MuJoCo is not importable: install it with 'make limit-peers' (pip install mink)"
        ) from exc
    doc = etree.parse(urdf_path)
    for el in doc.xpath("//visual|//collision"):
        el.getparent().remove(el)
    ext = etree.SubElement(doc.getroot(), "mujoco")
    etree.SubElement(ext, "compiler", fusestatic="false", discardvisual="true")
    try:
        spec = mujoco.MjSpec.from_string(etree.tostring(doc, encoding="unicode"))
        spec.worldbody.first_body().add_freejoint()
        return spec.compile(), mujoco
    except Exception as exc:  # MuJoCo's own errors: the peer cannot run on this URDF
        raise PeerUnavailable(f"MuJoCo cannot load {urdf_path}: {exc}") from exc


class MinkIk:
    """mink's differential IK on frames and a CoM band, integrated to convergence.

    Args:
        urdf_path: the URDF file.
        joint_names: our tree's joints: :data:`FLOATING_JOINTS`, then URDF joints.
        links: the frames placed on targets.
        band: the CoM's (lower, upper) x, y [m].
        eps: the largest error of a frame's component [m or rad] at a solution.
        timeout: the time budget [s].
        dt: the integration step of one differential IK [s] (task gains 1).
        lm_damping: the frame tasks' Levenberg-Marquardt damping (as :class:`PinkIk`'s).

    Raises:
        PeerUnavailable: mink, MuJoCo or daqp is not installed, or a joint or link is missing.
    """

    def __init__(
        self,
        urdf_path: str,
        joint_names: Sequence[str],
        links: Sequence[str],
        band: tuple[Array, Array],
        eps: float,
        timeout: float,
        dt: float = 1.0,
        lm_damping: float = 1e-3,
    ) -> None:
        mink = self.mink = import_mink()
        self.model, self.mujoco = mujoco_free_flyer(urdf_path)
        try:
            self._adr = np.array([self.model.joint(n).qposadr[0] for n in joint_names[6:]])
            for n in links:
                self.model.body(n)
        except KeyError as exc:
            raise PeerUnavailable(f"MuJoCo's model lacks {exc}") from exc
        self.links = list(links)
        self.tasks = [
            mink.FrameTask(n, "body", position_cost=1.0, orientation_cost=1.0,
                           lm_damping=lm_damping)
            for n in links
        ]  # fmt: skip
        self.com_task = mink.ComTask(cost=np.array([1.0, 1.0, 0.0]))
        self.limits = [mink.ConfigurationLimit(self.model)]
        self.lo, self.hi = band
        self.eps, self.timeout, self.dt = eps, timeout, dt

    def to_mujoco(self, q: Array) -> Array:
        """Our configuration (6 + k,) as MuJoCo's (nq,): x y z, quaternion w x y z, joints."""
        out = np.zeros(self.model.nq)
        out[:3] = q[:3]
        x, y, z, w = matrix_to_quat(_rotation(*q[3:6]))
        out[3:7] = (w, x, y, z)
        out[self._adr] = q[6:]
        return out

    def from_mujoco(self, q: Array) -> Array:
        """MuJoCo's configuration (nq,) in our order (6 + k,)."""
        w, x, y, z = q[3:7] / np.linalg.norm(q[3:7])
        r = np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])  # fmt: skip
        yaw, pitch = math.atan2(r[1, 0], r[0, 0]), math.asin(max(-1.0, min(1.0, -r[2, 0])))
        roll = math.atan2(r[2, 1], r[2, 2])
        return np.concatenate([q[:3], [yaw, pitch, roll], q[self._adr]])

    def solve(self, seed: Array, poses: Sequence[Array]) -> Array | None:
        """Our configuration placing the frames on ``poses``, or None when the budget ends."""
        mink = self.mink
        for task, pose in zip(self.tasks, poses, strict=True):
            task.set_target(mink.SE3.from_matrix(pose))
        conf = mink.Configuration(self.model, self.to_mujoco(seed))
        deadline = time.perf_counter() + self.timeout
        while time.perf_counter() < deadline:
            met = all(
                np.all(np.abs(pose_error(
                    conf.get_transform_frame_to_world(n, "body").as_matrix(), pose
                )) <= self.eps)
                for n, pose in zip(self.links, poses, strict=True)
            )  # fmt: skip
            c = conf.data.subtree_com[0]
            out = band_gap(c, self.lo, self.hi)
            if met and not out.any():
                return self.from_mujoco(conf.q)
            tasks: list[Any] = list(self.tasks)
            if out.any():  # the CoM's task toward the band's nearest point while outside
                goal = c.copy()
                goal[:2] += out
                self.com_task.set_target(goal)
                tasks.append(self.com_task)
            try:
                v = mink.solve_ik(conf, tasks, self.dt, "daqp", limits=self.limits)
            except mink.exceptions.NoSolutionFound:  # an infeasible QP
                return None
            conf.integrate_inplace(v, self.dt)
        return None


__all__ = ["FreeFlyerMap", "MinkIk", "PinkIk", "PinocchioClik", "band_gap", "mujoco_free_flyer"]
