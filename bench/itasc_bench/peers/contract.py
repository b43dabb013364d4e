"""The contract every peer keeps: what it takes and returns, and how it says it cannot run.

Each peer is wrapped so that the benchmark (``itasc-bench``) calls the same unit of work on every
library with the same joint vector and the same URDF:

* Joint vectors ``q`` are in chain order (root to tip, movable joints only), as returned in
  ``joint_names``; continuous joints are a single angle [rad] (Pinocchio's ``(cos, sin)`` pair is
  handled inside :class:`~itasc_bench.peers.pinocchio_peer.PinocchioPeer`).
* Poses are ``(4, 4)`` homogeneous matrices of the tip link in the root link frame.
* Jacobians are ``(6, n)``: rows 0-2 the linear velocity [m/s] of the tip origin, rows 3-5 the
  angular velocity [rad/s], both expressed in the root frame. That is KDL's ``ChainJntToJacSolver``
  output and Pinocchio's ``LOCAL_WORLD_ALIGNED`` frame Jacobian.
* A peer library that is not installed raises :class:`PeerUnavailable` with the install hint.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class PeerUnavailable(Exception):
    """A peer library is not installed or cannot be used; the message says how to install it."""


def check_q(q: Any, n: int) -> FloatArray:
    """``q`` as a float array, checked to be a joint vector of the chain.

    Args:
        q: Joint positions [rad | m], shape (n,).
        n: Number of chain joints.

    Returns:
        Shape (n,), float64.

    Raises:
        ValueError: For another shape.
    """
    arr = np.asarray(q, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"q must have shape ({n},), got {arr.shape}")
    return arr


def joint_vector(names: Sequence[str], values: dict[str, float]) -> FloatArray:
    """Joint vector in the order ``names`` from a name -> value mapping.

    Args:
        names: Joint names in the wanted order.
        values: Joint positions [rad | m] by name.

    Returns:
        Shape (len(names),).
    """
    return np.array([float(values[n]) for n in names])


def import_peer(module: str, hint: str) -> Any:
    """The peer library ``module``.

    Raises:
        PeerUnavailable: If it is not importable; the message says so and gives ``hint``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise PeerUnavailable(f"{module} is not importable: {hint}") from exc


__all__ = ["FloatArray", "PeerUnavailable", "check_q", "import_peer", "joint_vector"]
