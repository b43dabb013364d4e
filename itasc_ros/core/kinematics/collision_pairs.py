"""Which pairs of link shapes are checked for self-collision, and an SRDF's disabled pairs.

Every pair of links that both have geometry, minus pairs of the same rigid body (links joined
by fixed joints), pairs of bodies joined directly by one joint (adjacent), pairs that no
active joint moves relative to each other, and the ``<disable_collisions>`` pairs of an SRDF
when one is given (example-robot-data ships SRDFs).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

from lxml import etree

from .collision_shape import CollisionGeometryError, CollisionShape
from .tree import KinematicTree
from .urdf_xml import xml_parser


def read_srdf_disabled(path: str | Path) -> set[frozenset[str]]:
    """The ``<disable_collisions link1 link2>`` pairs of an SRDF file.

    Args:
        path: the SRDF file.

    Raises:
        CollisionGeometryError: the file cannot be read or is not an SRDF.
    """
    try:
        data = Path(path).read_bytes()
        root = etree.fromstring(data, xml_parser())
    except (OSError, etree.XMLSyntaxError) as exc:
        raise CollisionGeometryError(f"cannot read SRDF {str(path)!r}: {exc}") from None
    if root is None or root.tag != "robot":
        raise CollisionGeometryError(f"SRDF {str(path)!r}: root element must be <robot>")
    out = set()
    for e in root.iter("disable_collisions"):
        a, b = e.get("link1"), e.get("link2")
        if a and b:
            out.add(frozenset((a, b)))
    return out


def _bodies(tree: KinematicTree) -> dict[str, str]:
    """Each link's rigid body: the nearest link at or above it reached by a movable joint."""
    body = {tree.root_link: tree.root_link}
    for j in tree.joints:  # parents before children
        body[j.child] = body[j.parent] if j.type == "fixed" else j.child
    return body


def moving_joints(tree: KinematicTree) -> dict[str, frozenset[str]]:
    """For each link, the active joints between the root and it (mimic joints: their leader).

    Args:
        tree: the kinematic tree (its active joints).

    Returns:
        Link name -> the names of the active joints that move it (empty: it never moves).
    """
    active = set(tree.joint_names)
    leader = {}
    for j in tree.joints:
        leader[j.name] = j.mimic.joint if j.mimic is not None else j.name
    out = {tree.root_link: frozenset[str]()}
    for j in tree.joints:
        lead = leader.get(j.name, j.name)
        while lead in leader and leader[lead] != lead:  # a mimic chain ends at its leader
            lead = leader[lead]
        extra = {lead} if j.type != "fixed" and lead in active else set()
        out[j.child] = out[j.parent] | extra
    return out


def self_collision_pairs(
    tree: KinematicTree,
    shapes: Sequence[CollisionShape],
    disabled: Collection[frozenset[str]] = (),
    links: Sequence[str] = (),
    between: Sequence[str] = (),
) -> list[tuple[int, int]]:
    """Pairs of link shapes to check (see the module docstring for what is left out).

    Args:
        tree: the tree (its active joints decide which pairs can move).
        shapes: the link shapes (obstacles are ignored here).
        disabled: link pairs never checked (an SRDF's ``disable_collisions``).
        links: when not empty, only pairs with at least one link in it.
        between: when not empty, link-name prefixes of groups (several robots' ``a_``,
            ``b_``): only pairs of links of two different groups.

    Returns:
        (i, k) indices into ``shapes``, i < k.
    """
    body = _bodies(tree)
    parent_body: dict[str, str] = {}
    for j in tree.joints:
        if j.type != "fixed":
            parent_body[j.child] = body[j.parent]
    moving = moving_joints(tree)
    keep = set(links)
    pairs = []
    for i in range(len(shapes)):
        a = shapes[i].link
        if not a:
            continue
        for k in range(i + 1, len(shapes)):
            b = shapes[k].link
            if not b or a == b:
                continue
            ba, bb = body[a], body[b]
            if ba == bb or parent_body.get(ba) == bb or parent_body.get(bb) == ba:
                continue
            if frozenset((a, b)) in disabled or moving[a] == moving[b]:
                continue
            if keep and a not in keep and b not in keep:
                continue
            if between and not _across(a, b, between):
                continue
            pairs.append((i, k))
    return pairs


def _across(a: str, b: str, groups: Sequence[str]) -> bool:
    """True when links ``a`` and ``b`` are in two different groups (by name prefix)."""
    ga = next((g for g in groups if a.startswith(g)), None)
    gb = next((g for g in groups if b.startswith(g)), None)
    return ga is not None and gb is not None and ga != gb


__all__ = ["moving_joints", "read_srdf_disabled", "self_collision_pairs"]
