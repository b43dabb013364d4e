"""``itasc-bench kinematics``: FK + tip Jacobian beside Orocos KDL (PyKDL) and Pinocchio.

The Panda (7 DOF) and Talos (all joints, where example-robot-data is installed): itasc_ros
computes every link pose and the tip Jacobian, KDL the chain root -> tip, Pinocchio the chain's
joints in the whole model; key ``fk_jac_ratio_vs_pykdl`` (Panda, ours / KDL).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from itasc_ros.core import KinematicTree
from itasc_ros.tools.resources import robot_urdf

from .harness import TALOS_URDF, erd_urdf, time_interleaved
from .peers import KdlPeer, PeerUnavailable, PinocchioPeer, import_pinocchio
from .report import print_table


def _pinocchio_class() -> type[PinocchioPeer] | None:
    """:class:`PinocchioPeer` where Pinocchio imports, else None."""
    try:
        import_pinocchio()
    except Exception:
        return None
    return PinocchioPeer


def bench_kinematics(number: int, repeats: int) -> dict[str, Any]:
    """FK + tip Jacobian: Panda and Talos, ours vs PyKDL vs Pinocchio.

    Args:
        number: Calls per timing block.
        repeats: Timing blocks (median taken).

    Returns:
        Per robot, ``<implementation>_us`` [us per call], the ratios and ``notes``; and
        ``fk_jac_ratio_vs_pykdl`` where KDL ran on the Panda.
    """
    pin_cls = _pinocchio_class()
    out: dict[str, Any] = {}
    cases = [("panda", robot_urdf("panda"), "panda_link0", "panda_link8")]
    talos = erd_urdf(TALOS_URDF)
    if talos is not None:
        cases.append(("talos", talos, "base_link", "arm_right_7_link"))
    for name, path, root, tip in cases:
        out[name] = _case(path.read_text(), root, tip, pin_cls, number, repeats)
    if "ratio_vs_pykdl" in out.get("panda", {}):
        out["fk_jac_ratio_vs_pykdl"] = out["panda"]["ratio_vs_pykdl"]
    return out


def _case(
    xml: str,
    root: str,
    tip: str,
    pin_cls: type[PinocchioPeer] | None,
    number: int,
    repeats: int,
) -> dict[str, Any]:
    """One robot's row: the implementations timed side by side at one random configuration."""
    tree = KinematicTree.from_urdf(xml)
    rng = np.random.default_rng(0)
    q = tree.random_configuration(rng)
    idx = tree.link_index(tip)
    jac = np.empty((6, tree.n_joints))

    def ours(
        tree: KinematicTree = tree, q: np.ndarray = q, idx: int = idx, jac: np.ndarray = jac
    ) -> None:
        tree.compute(q)
        tree.jacobian_into(idx, jac)

    funcs: dict[str, Callable[[], Any]] = {"itasc_ros": ours}
    notes = [f"itasc_ros: all {tree.n_joints} joints, every link pose + {tip} Jacobian"]
    try:
        kdl = KdlPeer(xml, root, tip)
        qk = np.array([q[tree.joint_index(j)] for j in kdl.joint_names])
        funcs["pykdl"] = functools.partial(kdl.fk_jac, qk)
        notes.append(f"pykdl: chain {root}->{tip} ({kdl.n} joints)")
    except (PeerUnavailable, TypeError) as exc:
        notes.append(f"pykdl unavailable: {exc}")
    if pin_cls is not None:
        pp = pin_cls(xml, tip)
        qp = np.array([q[tree.joint_index(j)] for j in pp.joint_names])
        funcs["pinocchio"] = functools.partial(pp.fk_jac, qp)
        notes.append(f"pinocchio: whole model, chain joints set ({pp.n})")
    t = time_interleaved(funcs, number, repeats)
    row: dict[str, Any] = {f"{k}_us": v * 1e6 for k, v in t.items()}
    if "pykdl" in t:
        row["ratio_vs_pykdl"] = t["itasc_ros"] / t["pykdl"]
    if "pinocchio" in t:
        row["ratio_vs_pinocchio"] = t["itasc_ros"] / t["pinocchio"]
    row["notes"] = notes
    return row


def kinematics_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench kinematics``; the figures for the JSON line.

    Args:
        args: The parsed command line (``number``, ``repeats``).
    """
    r = bench_kinematics(args.number, args.repeats)
    print_table("FK + tip Jacobian [us per call, median]", r)
    out: dict[str, Any] = {"kinematics": r}
    if "fk_jac_ratio_vs_pykdl" in r:
        out["fk_jac_ratio_vs_pykdl"] = r["fk_jac_ratio_vs_pykdl"]
    return out


__all__ = ["bench_kinematics", "kinematics_command"]
