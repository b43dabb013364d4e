"""The root-to-link chain of one link as the compiled IK loop reads it, kept per tree.

A chain is the flat arrays of the movable joints between the root and the link (layout in
:mod:`itasc_ros.core.ik._ik_kernels`), packed with the joint box into two arrays, and the
work arrays of a solve. It is built once per tree and link (again when a joint held outside
the tree's view moved) and kept in the tree's ``solver_work``.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import NDArray

from ..kinematics.tree import KinematicTree
from . import _ik_kernels as K
from . import _pose_kernel as P
from .inputs import axis_rows
from .joint_box import JointBox
from .options import IkOptions

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

ChainArrays = tuple[IntArray, IntArray, Array, Array, Array, Array, Array]
"""The chain arrays in the kernels' order: ``(jt, col, org, ax, mult, offs, tip)``."""


class PoseChain:
    """The root-to-link chain packed for the compiled loop, and the work arrays of its solves.

    Attributes:
        link: the link placed.
        joint_names: the columns of ``q`` (the tree's joints).
        arrays: the chain arrays ``(jt, col, org, ax, mult, offs, tip)``.
        held: whether joints outside the tree's view are on the chain (held at their set
            positions, which are part of the chain's arrays).
        q_full: the tree's full joint positions the held joints were taken from.
        n: number of joints of the tree.
        reach: the largest distance [m] of the link from the root.
        box: the joint box (:class:`~itasc_ros.core.ik.joint_box.JointBox`).
        ints, flts: the chain and its box packed (:func:`~itasc_ros.core.ik._pose_kernel.
            pack_chain`).
        mut: the loop's changing arrays (:func:`~itasc_ros.core.ik._pose_kernel.mut_size`),
            seen through ``q0``, ``q``, ``best_q`` (n,) (the seed, the current and the best
            configuration of a solve) and ``state`` (S_SIZE,).
        rng: (2,) uint64: the restarts' generator state and that state at a solve's start
            (:meth:`seed_restarts`).
        seed_in, target_in: (n,) and (4, 4) the seed and target of a solve, copied in.
        mid: (n,) the tree's mid-range configuration (the default seed).
        params: the default options (:meth:`IkOptions.to_array`).
    """

    def __init__(self, tree: KinematicTree, link: str) -> None:
        self.link = link
        self.joint_names = tree.joint_names
        arrays, nk = tree.chain_arrays(link)
        self.arrays = cast(ChainArrays, arrays)
        self.q_full = tree.fixed_positions()
        self.held = bool(np.any(self.arrays[1] < 0))
        n = self.n = tree.n_joints
        self.reach = tree.reach(link)
        box = self.box = JointBox(tree)
        self.ints, self.flts = P.pack_chain(
            self.arrays, (box.lo, box.hi, box.samp_lo, box.samp_hi, box.turn_cols), self.reach
        )
        self.mut = np.zeros(P.mut_size(n, nk))
        self.q0 = self.mut[0:n]
        self.q = self.mut[n : 2 * n]
        self.best_q = self.mut[2 * n : 3 * n]
        self.state = self.mut[3 * n : 3 * n + K.S_SIZE]
        self.rng = np.zeros(2, dtype=np.uint64)
        self._random_seed = 0
        self.seed_in = np.zeros(n)
        self.target_in = np.eye(4)
        self.mid = tree.neutral()
        self.params = IkOptions().to_array()
        self._sel_cache: dict[tuple[str, str], IntArray] = {}

    def seed_restarts(self, random_seed: int) -> None:
        """Start the next solves' restarts from ``random_seed`` (any integer)."""
        if random_seed != self._random_seed:
            self.rng[1] = np.uint64(int(random_seed) & 0xFFFFFFFFFFFFFFFF)
            self._random_seed = random_seed

    def selection(self, position_axes: str, rotation_axes: str) -> IntArray:
        """(k,) the selected pose rows (see :func:`~itasc_ros.core.ik.inputs.axis_rows`)."""
        key = (position_axes, rotation_axes)
        sel = self._sel_cache.get(key)
        if sel is None:
            sel = self._sel_cache[key] = axis_rows(position_axes, rotation_axes)
        return sel


def chain_of(tree: KinematicTree, link: str) -> tuple[PoseChain, bool]:
    """The chain of ``link`` (kept in ``tree.solver_work``) and whether it was built just now.

    Raises:
        UnknownLinkError: ``link`` is not in the tree (lists the links).
    """
    per_tree = tree.solver_work.get("pose_chains")
    if per_tree is None:
        per_tree = tree.solver_work["pose_chains"] = {}
    ch = per_tree.get(link)
    if ch is None or (ch.held and not tree.holds_fixed_positions(ch.q_full)):
        ch = per_tree[link] = PoseChain(tree, link)
        return ch, True
    return ch, False


__all__ = ["ChainArrays", "PoseChain", "chain_of"]
