"""The shape of a URDF: element counts, names, one tree of links, mimic chains that end.

Checks on the raw elements (at most :data:`MAX_LINKS` links and joints, every name present,
at most :data:`MAX_NAME_LENGTH` characters and unique) and on the checked :class:`RobotSpec`
(every joint between two existing links, one root, no cycle, each mimic chain ending at a
movable joint without ``<mimic>``).
"""

from __future__ import annotations

from collections.abc import Sequence

from lxml import etree

from ..errors import (
    DuplicateNameError,
    InvalidJointError,
    UrdfStructureError,
    UrdfSyntaxError,
    _choices,
)
from .robot_spec import RobotSpec
from .urdf_xml import show

MAX_LINKS = 1000
"""Most ``<link>`` (and ``<joint>``) elements accepted (real robots have < 150)."""

MAX_NAME_LENGTH = 256
"""Longest robot, link or joint name accepted [characters]."""


def check_counts(links: Sequence[etree._Element], joints: Sequence[etree._Element]) -> None:
    """Reject more than :data:`MAX_LINKS` ``<link>`` or ``<joint>`` elements.

    Raises:
        UrdfStructureError: naming the count and the limit.
    """
    for kind, found in (("link", links), ("joint", joints)):
        if len(found) > MAX_LINKS:
            raise UrdfStructureError(
                f"URDF has {len(found)} <{kind}> elements; the most accepted is {MAX_LINKS} "
                "(a real robot has fewer than 150)"
            )


def check_name_length(kind: str, name: str) -> None:
    """Reject a robot, link or joint name over :data:`MAX_NAME_LENGTH` characters.

    Raises:
        UrdfSyntaxError: naming the kind, the length and the limit.
    """
    if len(name) > MAX_NAME_LENGTH:
        raise UrdfSyntaxError(
            f"a {kind} name has {len(name)} characters ({show(name, 40)}); the longest "
            f"accepted is {MAX_NAME_LENGTH}"
        )


def element_names(kind: str, elements: Sequence[etree._Element]) -> list[str]:
    """The ``name`` attributes of the ``<link>`` or ``<joint>`` elements, checked.

    Args:
        kind: ``"link"`` or ``"joint"``.
        elements: the elements, in document order.

    Returns:
        Their names, in document order.

    Raises:
        UrdfSyntaxError: a missing or too long name.
        DuplicateNameError: two elements share a name.
    """
    names: list[str] = [str(el.get("name") or "") for el in elements]
    if "" in names:
        raise UrdfSyntaxError(f"a <{kind}> has no name attribute")
    for n in names:
        check_name_length(kind, n)
    _check_unique(kind, names)
    return names


def _check_unique(kind: str, names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise DuplicateNameError(f"two {kind}s are named {n!r}; {kind} names must be unique")
        seen.add(n)


def check_structure(spec: RobotSpec) -> None:
    """Check that the joints connect the links into one tree and that mimic chains end.

    Raises:
        UrdfStructureError: no link, a joint naming a missing link or joining a link to itself,
            a link with two parents, several roots, a cycle.
        InvalidJointError: a joint mimicking a missing or fixed joint, a mimic loop.
    """
    links = set(spec.links)
    if not links:
        who = f"robot {spec.name!r}" if spec.name else "the <robot>"
        raise UrdfStructureError(f"{who} has no <link>; a URDF needs at least one")
    root = _root_link(spec, links)
    _check_reachable(spec, links, root)
    _check_mimic_chains(spec)


def _root_link(spec: RobotSpec, links: set[str]) -> str:
    """The one link without a parent joint, after checking each joint's two links."""
    parent_of: dict[str, str] = {}
    for j in spec.joints:
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in links:
                raise UrdfStructureError(
                    f"joint {j.name!r} names {role} link {show(link)}, which is not a <link>; "
                    f"links are: {_choices(spec.links)}"
                )
        if j.parent == j.child:
            raise UrdfStructureError(f"joint {j.name!r} connects link {j.child!r} to itself")
        if j.child in parent_of:
            raise UrdfStructureError(
                f"link {j.child!r} is the child of two joints ({parent_of[j.child]!r} and "
                f"{j.name!r}); a URDF is a tree"
            )
        parent_of[j.child] = j.name
    roots = [n for n in spec.links if n not in parent_of]
    if not roots:
        raise UrdfStructureError("the joints form a cycle: every link has a parent, no root")
    if len(roots) > 1:
        raise UrdfStructureError(
            f"URDF has {len(roots)} root links ({', '.join(repr(r) for r in roots[:10])}); "
            "exactly one link must have no parent joint"
        )
    return roots[0]


def _check_reachable(spec: RobotSpec, links: set[str], root: str) -> None:
    """Reachability from the root: links left over sit on a cycle."""
    children: dict[str, list[str]] = {}
    for j in spec.joints:
        children.setdefault(j.parent, []).append(j.child)
    seen = {root}
    stack = [root]
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in seen:
                seen.add(c)
                stack.append(c)
    if len(seen) != len(links):
        cyc = sorted(links - seen)
        raise UrdfStructureError(
            f"the joints form a cycle through links {', '.join(repr(c) for c in cyc[:10])}"
        )


def _check_mimic_chains(spec: RobotSpec) -> None:
    """Each mimic chain ends at a movable joint without ``<mimic>`` (each walked once)."""
    by_name = {j.name: j for j in spec.joints}
    checked: set[str] = set()  # joints whose mimic chain ends well: each chain is walked once
    for j in spec.joints:
        if j.mimic is None or j.name in checked:
            continue
        path = [j.name]
        on_path = {j.name}
        k = j
        while k.mimic is not None and k.name not in checked:
            lead = by_name.get(k.mimic.joint)
            if lead is None or lead.type == "fixed":
                movable = [n for n, s in by_name.items() if s.type != "fixed" and n != k.name]
                raise InvalidJointError(
                    f"joint {k.name!r} mimics {show(k.mimic.joint)}, which is not a movable "
                    f"joint; movable joints are: {_choices(movable)}"
                )
            if lead.name in on_path:
                loop = [*path[path.index(lead.name) :], lead.name]
                shown = loop if len(loop) <= 12 else [*loop[:5], "...", *loop[-5:]]
                raise InvalidJointError(
                    "mimic joints form a loop: "
                    + " -> ".join(n if n == "..." else repr(n) for n in shown)
                    + "; a mimic chain must end at a joint without <mimic>"
                )
            path.append(lead.name)
            on_path.add(lead.name)
            k = lead
        checked.update(path)


__all__ = [
    "MAX_LINKS",
    "MAX_NAME_LENGTH",
    "check_counts",
    "check_name_length",
    "check_structure",
    "element_names",
]
