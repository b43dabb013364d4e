"""KinematicTree: the whole URDF tree, forward kinematics and Jacobians of any link.

The tree keeps every link of the URDF. Its *active joints* are the movable, non-mimic joints
(``joint_names``, URDF order); mimic joints follow their leader and are folded into its
Jacobian column. :meth:`KinematicTree.select_joints` restricts the active joints to a subset
(the others are held at set values), e.g. to control one arm of a two-armed robot.

Conventions: poses are (4, 4) in the root link frame; Jacobians are (6, n) with rows 0-2 the
linear velocity of the link origin and rows 3-5 the angular velocity, both in the root frame
(Pinocchio's LOCAL_WORLD_ALIGNED).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, UnknownJointError, UnknownLinkError, UrdfSyntaxError
from . import _kernels, spatial
from .urdf import JointSpec, MimicSpec, RobotSpec, parse_urdf

Array = NDArray[np.float64]

_JTYPE = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 2}


def _resolve_mimic(
    joint: JointSpec,
    by_name: dict[str, JointSpec],
    resolved: dict[str, tuple[float, float, str]],
) -> tuple[float, float, str]:
    """``(mult, offs, leader)`` with value(joint) = mult * q(leader) + offs.

    ``resolved`` memoises every joint met on the way, so that a long mimic chain costs O(n)
    in total rather than O(n) per joint. The chain is known to end (checked by the parser).
    """
    path: list[tuple[str, MimicSpec]] = []
    k = joint
    while k.mimic is not None and k.name not in resolved:
        path.append((k.name, k.mimic))
        k = by_name[k.mimic.joint]
    mult, offs, leader = resolved.get(k.name, (1.0, 0.0, k.name))
    for name, mim in reversed(path):  # value = m * (mult * q + offs) + o
        mult, offs = mim.multiplier * mult, mim.multiplier * offs + mim.offset
        resolved[name] = (mult, offs, leader)
    return mult, offs, leader


class _Model:
    """Immutable joint arrays shared by a tree and its restricted views."""

    def __init__(self, spec: RobotSpec) -> None:
        self.spec = spec
        self.xml: str | bytes | None = None  # the URDF document (collision geometry, inertials)
        children: dict[str, list[JointSpec]] = {}
        child_links = set()
        for j in spec.joints:
            children.setdefault(j.parent, []).append(j)
            child_links.add(j.child)
        root = next(n for n in spec.links if n not in child_links)
        # Parents before children (breadth first), siblings in document order.
        order: list[JointSpec] = []
        queue = deque([root])
        while queue:
            link = queue.popleft()
            for j in children.get(link, []):
                order.append(j)
                queue.append(j.child)
        self.root = root
        self.link_names = [root] + [j.child for j in order]
        self.link_index = {n: i for i, n in enumerate(self.link_names)}
        self.joints = order
        # Active joints: movable, not mimic, in URDF document order.
        self.active = [j.name for j in spec.joints if j.type != "fixed" and j.mimic is None]
        active_idx = {n: i for i, n in enumerate(self.active)}
        by_name = {j.name: j for j in spec.joints}
        resolved: dict[str, tuple[float, float, str]] = {}  # mimic chains, each walked once
        nj, nl = len(order), len(self.link_names)
        # For each link, the joints from the root down to it.
        chains: list[list[int]] = [[]]
        for j in order:
            chains.append([*chains[self.link_index[j.parent]], len(chains) - 1])
        width = max(1, max(len(c) for c in chains))
        # the constant arrays, packed (the kernels take the two buffers: model_arrays)
        n_ints, n_floats = _kernels.model_sizes(nj, nl, width)
        self.ints = np.zeros(n_ints, dtype=np.int64)
        self.ints[: _kernels.MODEL_HEAD] = nj, nl, width
        self.floats = np.zeros(n_floats)
        (
            self.parent, self.origin, self.jtype, self.axis, self.qidx, self.mult, self.offs,
            self.chain, self.chain_len, self.link_mass, self.link_com,
        ) = _kernels.model_arrays(self.ints, self.floats)  # fmt: skip
        self.qidx[:] = -1
        self.mult[:] = 1.0
        for k, j in enumerate(order):
            self.parent[k] = self.link_index[j.parent]
            self.origin[k] = j.origin
            self.jtype[k] = _JTYPE[j.type]
            self.axis[k] = j.axis
            if j.type == "fixed":
                continue
            # Resolve a mimic chain to its leader: value = mult * q_leader + offs.
            mult, offs, leader = _resolve_mimic(j, by_name, resolved)
            self.qidx[k] = active_idx[leader]
            self.mult[k], self.offs[k] = mult, offs
        for i, c in enumerate(chains):
            self.chain[i, : len(c)] = c
            self.chain_len[i] = len(c)
        specs = [by_name[n] for n in self.active]
        self.lower = np.array([s.lower if s.type != "continuous" else -math.inf for s in specs])
        self.upper = np.array([s.upper if s.type != "continuous" else math.inf for s in specs])
        self.velocity = np.array([s.velocity for s in specs])
        self.types = [s.type for s in specs]
        # Inertials: each link's mass [kg] and centre of mass in its frame [m].
        for name, inertial in spec.inertials.items():
            i = self.link_index[name]
            self.link_mass[i] = inertial.mass
            self.link_com[i] = inertial.com
        self.mass = float(self.link_mass.sum())


class KinematicTree:
    """Forward kinematics and Jacobians of every link of a URDF tree.

    Build with :meth:`from_urdf` or :meth:`from_urdf_file`. The array-returning methods
    allocate their result; the scene's control tick uses :meth:`compute`, :meth:`pose_ref`
    and :meth:`jacobian_into`, which do not.
    """

    def __init__(
        self, model: _Model, active: Sequence[str] | None = None, q_fixed: ArrayLike | None = None
    ) -> None:
        self._m = model
        names = list(model.active if active is None else active)
        full_idx = {n: i for i, n in enumerate(model.active)}
        for n in names:
            if n not in full_idx:
                raise UnknownJointError(n, model.active)
        if len(set(names)) != len(names):
            raise ConfigurationError(f"joint names repeat in {names}")
        self._names = names
        self._sel = np.array([full_idx[n] for n in names], dtype=np.int64)
        self._q_full = np.zeros(len(model.active))
        if q_fixed is not None:
            self.set_fixed_positions(q_fixed)
        self._poses = np.zeros((len(model.link_names), 4, 4))
        self._jfull = np.zeros((6, len(model.active)))
        self._com_sub = np.zeros((len(model.link_names), 4))
        self._com_jfull = np.zeros((3, len(model.active)))
        self._dirty = True
        self.solver_work: dict[str, Any] = {}
        """Work a solver keeps per tree between calls (position IK: the problems of the last
        constraint set), freed with the tree."""

    # ----------------------------------------------------------------------- construction
    @classmethod
    def from_urdf(cls, xml: str | bytes) -> KinematicTree:
        """Build the tree of a URDF document (str or bytes).

        Raises:
            UrdfError: a subclass naming what is wrong (see :mod:`itasc_ros.core.kinematics.urdf`).
        """
        model = _Model(parse_urdf(xml))
        model.xml = xml
        return cls(model)

    @classmethod
    def from_urdf_file(cls, path: str | Path) -> KinematicTree:
        """Build the tree of a URDF file.

        Raises:
            UrdfSyntaxError: the file cannot be read.
        """
        from .urdf import MAX_URDF_BYTES

        try:
            with Path(path).open("rb") as fh:
                data = fh.read(MAX_URDF_BYTES + 1)
                size = Path(path).stat().st_size
        except OSError as exc:
            raise UrdfSyntaxError(f"cannot read URDF file {str(path)!r}: {exc}") from exc
        if len(data) > MAX_URDF_BYTES:
            raise UrdfSyntaxError(
                f"URDF is {max(size, len(data))} bytes; the largest accepted is "
                f"{MAX_URDF_BYTES} bytes"
            )
        return cls.from_urdf(data)

    def select_joints(
        self, names: Sequence[str], q_fixed: ArrayLike | None = None
    ) -> KinematicTree:
        """A view of the same tree whose active joints are ``names`` (in that order).

        Args:
            names: active joints of the view; a subset of this tree's full joint list.
            q_fixed: (n_full,) positions at which the other joints are held, in the order of
                :attr:`all_joint_names` (default: zeros).

        Raises:
            UnknownJointError: a name that is not a movable, non-mimic joint.
        """
        return KinematicTree(self._m, names, self._q_full if q_fixed is None else q_fixed)

    def set_fixed_positions(self, q_full: ArrayLike) -> None:
        """Set the positions (n_full,) of the joints that are not active in this view."""
        q = np.asarray(q_full, dtype=float)
        if q.shape != self._q_full.shape or not np.all(np.isfinite(q)):
            raise ConfigurationError(
                f"fixed positions must be {self._q_full.shape[0]} finite values in the order "
                f"{self._m.active}; got shape {q.shape}"
            )
        self._q_full[:] = q
        self._dirty = True

    def fixed_positions(self) -> Array:
        """(n_full,) a copy of every joint's position the tree holds (``all_joint_names`` order).

        The joints that are not active in this view are at :meth:`set_fixed_positions`'s
        positions; the active ones at the last :meth:`compute`'s.
        """
        return self._q_full.copy()

    def holds_fixed_positions(self, q_full: Array) -> bool:
        """True when the tree holds every joint at ``q_full`` (n_full,); no copy.

        See :meth:`fixed_positions`.
        """
        return bool(np.array_equal(q_full, self._q_full))

    def chain_arrays(self, link: str) -> tuple[tuple[NDArray[Any], ...], int]:
        """The joints from the root to ``link`` as arrays, and their number ``nk``.

        Fixed joints are folded into the next joint's origin; a joint that is not active in
        this view is held at its fixed position (folded into ``offs``, column -1).

        Returns:
            ``(jt, col, org, ax, mult, offs, tip)``: each joint's type (nk,) int64, its column
            in this view's ``q`` (nk,) int64 (-1: held), its origin (nk, 3, 4) and axis (nk, 3)
            in its parent's frame, its mimic multiplier and offset (nk,) each, and the fixed
            transform (3, 4) after the last joint; then ``nk``.

        Raises:
            UnknownLinkError: ``link`` is not a link of the tree.
        """
        m = self._m
        li = self.link_index(link)
        view_col = {int(full): i for i, full in enumerate(self._sel)}
        jt, col, org, ax, mult, offs = [], [], [], [], [], []
        acc = np.eye(4)
        for k in m.chain[li, : m.chain_len[li]]:
            k = int(k)
            if m.jtype[k] == 0:
                acc = acc @ m.origin[k]
                continue
            frame = acc @ m.origin[k]
            acc = np.eye(4)
            full = int(m.qidx[k])
            jt.append(int(m.jtype[k]))
            org.append(frame[:3])
            ax.append(m.axis[k])
            if full in view_col:
                col.append(view_col[full])
                mult.append(float(m.mult[k]))
                offs.append(float(m.offs[k]))
            else:  # held at its set position in this view
                col.append(-1)
                mult.append(0.0)
                offs.append(float(m.mult[k] * self._q_full[full] + m.offs[k]))
        nk = len(jt)
        arrays = (
            np.array(jt, dtype=np.int64),
            np.array(col, dtype=np.int64),
            np.ascontiguousarray(np.array(org, dtype=float).reshape(nk, 3, 4)),
            np.ascontiguousarray(np.array(ax, dtype=float).reshape(nk, 3)),
            np.array(mult, dtype=float),
            np.array(offs, dtype=float),
            np.ascontiguousarray(acc[:3]),
        )
        return arrays, nk

    # ----------------------------------------------------------------------- description
    @property
    def joint_names(self) -> list[str]:
        """Active joints, in the column order of Jacobians and of ``q``."""
        return list(self._names)

    @property
    def all_joint_names(self) -> list[str]:
        """Every movable, non-mimic joint of the URDF (URDF order)."""
        return list(self._m.active)

    @property
    def link_names(self) -> list[str]:
        """Every link of the tree, parents before children."""
        return list(self._m.link_names)

    @property
    def root_link(self) -> str:
        """The root link: the frame of every pose and Jacobian."""
        return self._m.root

    @property
    def name(self) -> str:
        """The robot's name in the URDF."""
        return self._m.spec.name

    @property
    def free_root_joint(self) -> str:
        """The URDF's free (floating / planar) root joint left out, '' when there was none."""
        return self._m.spec.free_root_joint

    @property
    def spec(self) -> RobotSpec:
        """The robot's description the tree was built from (links, joints, inertials)."""
        return self._m.spec

    @property
    def urdf_xml(self) -> str | bytes | None:
        """The URDF document the tree was built from (None when built otherwise)."""
        return self._m.xml

    @property
    def n_joints(self) -> int:
        """Number of active joints."""
        return len(self._names)

    @property
    def joints(self) -> list[JointSpec]:
        """Every URDF joint (fixed and mimic ones too), parents before children."""
        return list(self._m.joints)

    @property
    def lower(self) -> Array:
        """(n,) position lower limits [rad or m]; -inf for continuous joints."""
        return self._m.lower[self._sel].copy()

    @property
    def upper(self) -> Array:
        """(n,) position upper limits [rad or m]; +inf for continuous joints."""
        return self._m.upper[self._sel].copy()

    @property
    def velocity_limits(self) -> Array:
        """(n,) velocity limits [rad/s or m/s]; +inf where the URDF gives none."""
        return self._m.velocity[self._sel].copy()

    @property
    def joint_types(self) -> list[str]:
        """URDF type of each active joint ('revolute', 'continuous' or 'prismatic')."""
        return [self._m.types[i] for i in self._sel]

    @property
    def mass(self) -> float:
        """Total mass of the robot [kg]: the sum of the URDF links' ``<inertial>`` masses."""
        return self._m.mass

    @property
    def bad_inertials(self) -> dict[str, str]:
        """Links whose ``<inertial>`` could not be read, with the reason (left out of the mass)."""
        return dict(self._m.spec.bad_inertials)

    def link_index(self, link: str) -> int:
        """Index of a link for :meth:`pose_ref` / :meth:`jacobian_into`.

        Raises:
            UnknownLinkError: naming the links of the tree.
        """
        try:
            return self._m.link_index[link]
        except (KeyError, TypeError):
            raise UnknownLinkError(str(link), self._m.link_names) from None

    def joint_index(self, joint: str) -> int:
        """Index of an active joint in ``q``.

        Raises:
            UnknownJointError: naming the active joints.
        """
        try:
            return self._names.index(joint)
        except ValueError:
            raise UnknownJointError(joint, self._names) from None

    def neutral(self) -> Array:
        """(n,) a configuration within limits: mid-range, or 0 for unlimited joints."""
        lo, hi = self.lower, self.upper
        limited = np.isfinite(lo) & np.isfinite(hi)
        return np.where(
            limited, 0.5 * (np.where(limited, lo, 0.0) + np.where(limited, hi, 0.0)), 0.0
        )

    # ----------------------------------------------------------------------- no-alloc API
    def compute(self, q: Array) -> None:
        """Compute every link pose for ``q`` (n,) [rad or m] into the internal buffer.

        Raises:
            ConfigurationError: wrong length or non-finite values.
        """
        if q.shape != self._sel.shape:
            raise ConfigurationError(
                f"q has shape {np.shape(q)}; expected ({len(self._names)},) for joints "
                f"{self._names}"
            )
        m = self._m
        if not _kernels.forward_selected(
            q, self._sel, 1e150, self._q_full, m.ints, m.floats, self._poses
        ):
            raise ConfigurationError(f"q has NaN, Inf or huge values: {np.asarray(q).tolist()}")
        self._dirty = False

    def pose_ref(self, link_idx: int) -> Array:
        """(4, 4) view of a link's pose from the last :meth:`compute` (do not modify)."""
        return self._poses[link_idx]

    def poses_ref(self) -> Array:
        """(n_links, 4, 4) view of every link's pose from the last :meth:`compute` (read only)."""
        return self._poses

    def kernel_arrays(self) -> tuple[NDArray[Any], ...]:
        """The tree's model and data as compiled kernels take them (read only).

        The model is constant, packed in two buffers
        (:func:`~itasc_ros.core.kinematics._kernels.model_arrays` slices its arrays); the data
        are this tree's link poses from the last :meth:`compute`, its work array and its
        active joints.

        Returns:
            ``(ints, floats, poses, full, sel)``: the model's int64 and float64 buffers, the
            poses (n_links, 4, 4), a (6, n_full) work array of the tree's and the active
            joints' columns (n,) int64 (:func:`~itasc_ros.core.kinematics._kernels.
            jacobian_selected`'s arguments but the link, the point and the output).
        """
        m = self._m
        return m.ints, m.floats, self._poses, self._jfull, self._sel

    def fk_kernel_arrays(self) -> tuple[NDArray[Any], ...]:
        """What :meth:`compute` passes to its kernel after ``q``, ``sel`` and ``bound``.

        The arguments of :func:`itasc_ros.core.kinematics._kernels.forward_selected`; the
        poses are written by it.

        Returns:
            ``(q_full, ints, floats, poses)``.
        """
        m = self._m
        return self._q_full, m.ints, m.floats, self._poses

    def jacobian_into(self, link_idx: int, out: Array, point: Array | None = None) -> Array:
        """(6, n) Jacobian of a link from the last :meth:`compute`, written into ``out``.

        Args:
            link_idx: from :meth:`link_index`.
            out: (6, n) preallocated output.
            point: (3,) root-frame point whose velocity the linear rows give (default: the
                link origin).
        """
        m = self._m
        p = self._poses[link_idx, :3, 3] if point is None else point
        _kernels.jacobian_selected(
            self._poses, link_idx, m.ints, m.floats, p, self._jfull, self._sel, out
        )
        return out

    def center_of_mass_into(self, com: Array, jac: Array) -> float:
        """Centre of mass and its Jacobian from the last :meth:`compute`; no allocation.

        Args:
            com: (3,) output: the centre of mass in the root frame [m].
            jac: (3, n) output: its velocity per unit velocity of each active joint
                [m/s per rad/s or per m/s]; held joints contribute nothing.

        Returns:
            The total mass [kg] (0: no inertials, ``com`` and ``jac`` are zero).
        """
        m = self._m
        total = _kernels.center_of_mass(
            self._poses, m.ints, m.floats, self._com_sub, com, self._com_jfull
        )
        _kernels.select_columns(self._com_jfull, self._sel, jac)
        return float(total)

    # ----------------------------------------------------------------------- convenience API
    def _q(self, q: ArrayLike) -> Array:
        arr = np.ascontiguousarray(q, dtype=np.float64)
        if arr.ndim != 1:
            arr = arr.reshape(-1)
        return arr

    def forward_kinematics(self, q: ArrayLike, link: str) -> Array:
        """(4, 4) pose of ``link`` in the root frame at configuration ``q`` (n,)."""
        idx = self.link_index(link)
        self.compute(self._q(q))
        return self._poses[idx].copy()

    def all_poses(self, q: ArrayLike) -> dict[str, Array]:
        """Pose (4, 4) of every link in the root frame, by link name."""
        self.compute(self._q(q))
        return {n: self._poses[i].copy() for i, n in enumerate(self._m.link_names)}

    def jacobian(self, q: ArrayLike, link: str) -> Array:
        """(6, n) geometric Jacobian of ``link`` (origin) in the root frame at ``q``."""
        idx = self.link_index(link)
        self.compute(self._q(q))
        return self.jacobian_into(idx, np.empty((6, len(self._names))))

    def center_of_mass(self, q: ArrayLike) -> tuple[Array, Array]:
        """(centre of mass (3,) [m], its Jacobian (3, n)) in the root frame at ``q``."""
        self.compute(self._q(q))
        com, jac = np.zeros(3), np.zeros((3, len(self._names)))
        self.center_of_mass_into(com, jac)
        return com, jac

    def relative_transform(self, q: ArrayLike, frame: str, link: str) -> Array:
        """(4, 4) pose of ``link`` expressed in ``frame`` (both links of the tree)."""
        i, j = self.link_index(frame), self.link_index(link)
        self.compute(self._q(q))
        return spatial.pose_inverse(self._poses[i]) @ self._poses[j]

    def tip_link(self) -> str:
        """The link at the end of the longest chain of movable joints (the default effector).

        Ties go to the deepest link, then to the last in URDF order (``tool0`` after
        ``ee_link``).
        """
        root = self.root_link
        movable: dict[str, int] = {root: 0}
        depth: dict[str, int] = {root: 0}
        for j in self.joints:  # parents before children
            movable[j.child] = movable.get(j.parent, 0) + (0 if j.type == "fixed" else 1)
            depth[j.child] = depth.get(j.parent, 0) + 1
        best = root
        for link in self.link_names:
            if (movable.get(link, 0), depth.get(link, 0)) >= (movable[best], depth[best]):
                best = link
        return best

    def reach(self, link: str) -> float:
        """An upper bound of the distance from the root to ``link``'s origin [m].

        The sum, down the chain of joints from the root, of each joint origin's offset and of
        each prismatic joint's largest travel; ``inf`` when a prismatic joint on the way has no
        limit. Holds for every configuration of the tree.

        Raises:
            UnknownLinkError: naming the links of the tree.
        """
        m = self._m
        i = self.link_index(link)
        total = 0.0
        for k in m.chain[i, : m.chain_len[i]]:
            total += float(np.linalg.norm(m.origin[k, :3, 3]))
            if m.jtype[k] == _JTYPE["prismatic"]:
                a = int(m.qidx[k])
                travel = max(abs(m.lower[a]), abs(m.upper[a]))
                total += abs(m.mult[k]) * travel + abs(m.offs[k])
        return total

    def clamp(self, q: ArrayLike) -> Array:
        """``q`` clipped into the position limits."""
        lo, hi = self._m.lower[self._sel], self._m.upper[self._sel]
        return np.clip(np.asarray(q, dtype=float), lo, hi)

    def random_configuration(self, rng: np.random.Generator) -> Array:
        """(n,) uniform within limits; unlimited joints in [-pi, pi]."""
        lo = np.where(np.isfinite(self.lower), self.lower, -math.pi)
        hi = np.where(np.isfinite(self.upper), self.upper, math.pi)
        return rng.uniform(lo, hi)

    def __repr__(self) -> str:
        return (
            f"KinematicTree({self.name!r}, root={self.root_link!r}, "
            f"{len(self._m.link_names)} links, {self.n_joints} active joints)"
        )


__all__ = ["KinematicTree"]
