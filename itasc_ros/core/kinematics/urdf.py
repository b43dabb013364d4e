"""URDF -> joint/link description, with clear errors for bad or hostile URDFs.

Parsing uses ``urdf_parser_py`` (PyPI ``urdfdom-py``) on an XML tree that was first read by a
hardened lxml parser (no DTD, no entity expansion, no network; bounded size, markup, depth,
link count and name length, so that a hostile URDF is rejected in well under a second:
``test/data/hostile_urdfs``). Only the
kinematic part is handed to ``urdf_parser_py``: link names and the joints' parent, child,
origin, axis, limit and mimic. Each link's ``<inertial>`` mass and centre of mass are read
from the XML (:class:`InertialSpec`; an unreadable one is listed in
``RobotSpec.bad_inertials``, for the centre-of-mass constraint to refuse, and otherwise
ignored). Visuals, collisions, materials, transmissions and
unknown tags or attributes are accepted silently (as robot_state_publisher and RViz accept
them), even where ``urdf_parser_py`` alone would reject them (e.g. old-style transmissions, a
texture without a file name, a ``<robot>`` without a name).
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from ..errors import (
    DuplicateNameError,
    InvalidJointError,
    UnsupportedJointError,
    UrdfStructureError,
    UrdfSyntaxError,
    _choices,
)
from . import spatial

MAX_URDF_BYTES = 16 * 1024 * 1024
"""Largest URDF accepted [bytes] (the largest of example-robot-data's 69 robots is 0.2 MB)."""

MAX_XML_TAGS = 250_000
"""Most markup tags (``<``) accepted before the XML is parsed (real URDFs have < 7,000)."""

MAX_XML_DEPTH = 64
"""Deepest XML nesting accepted (URDF needs about 5)."""

MAX_LINKS = 1000
"""Most ``<link>`` (and ``<joint>``) elements accepted (real robots have < 150)."""

MAX_NAME_LENGTH = 256
"""Longest robot, link or joint name accepted [characters]."""

MAX_ORIGIN_OFFSET = 1.0e6
"""Largest joint origin offset accepted along an axis [m]."""

SUPPORTED_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
"""Joint types the kinematic tree represents; mimic joints of the movable ones too."""


@dataclass(frozen=True)
class MimicSpec:
    """A mimic relation: value = multiplier * value(joint) + offset."""

    joint: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class JointSpec:
    """One URDF joint, checked.

    Attributes:
        name: joint name.
        type: one of :data:`SUPPORTED_JOINT_TYPES`.
        parent: parent link name.
        child: child link name.
        origin: (4, 4) pose of the joint frame in the parent link frame.
        axis: (3,) unit axis in the joint frame.
        lower: position lower limit [rad or m] (-inf when unlimited).
        upper: position upper limit [rad or m] (+inf when unlimited).
        velocity: velocity limit [rad/s or m/s] (+inf when the URDF gives none).
        mimic: mimic relation, or None.
    """

    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray = field(repr=False)
    axis: np.ndarray = field(repr=False)
    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    mimic: MimicSpec | None = None


@dataclass(frozen=True)
class InertialSpec:
    """A link's ``<inertial>``: its mass and the centre of mass in the link frame.

    Attributes:
        mass: [kg] (>= 0).
        com: (3,) the centre of mass in the link frame [m] (the inertial origin's xyz).
    """

    mass: float
    com: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class RobotSpec:
    """A checked URDF: its name, links, joints (in document order) and inertials.

    Attributes:
        inertials: link name -> its mass and centre of mass (links with an ``<inertial>``).
        bad_inertials: links whose ``<inertial>`` cannot be read (mass missing, negative,
            non-finite; origin not three finite numbers), with the reason.
    """

    name: str
    links: list[str]
    joints: list[JointSpec]
    inertials: dict[str, InertialSpec] = field(default_factory=dict)
    bad_inertials: dict[str, str] = field(default_factory=dict)


def _inertials(links: list[etree._Element]) -> tuple[dict[str, InertialSpec], dict[str, str]]:
    """The links' ``<inertial>`` masses and centres of mass, and the unreadable ones."""
    good: dict[str, InertialSpec] = {}
    bad: dict[str, str] = {}
    for el in links:
        name = str(el.get("name") or "")
        inertial = el.find("inertial")
        if inertial is None:
            continue
        mass_el = inertial.find("mass")
        try:
            if mass_el is None:
                raise ValueError("<inertial> without <mass>")
            mass = float(mass_el.get("value") or "nan")
            if not (math.isfinite(mass) and mass >= 0.0):
                raise ValueError(f"mass {mass_el.get('value')!r} is not a finite number >= 0")
            origin = inertial.find("origin")
            xyz = (origin.get("xyz") if origin is not None else None) or "0 0 0"
            com = np.array([float(v) for v in xyz.split()])
            if com.shape != (3,) or not np.all(np.isfinite(com)):
                raise ValueError(f"origin xyz {xyz!r} is not three finite numbers")
            rpy = (origin.get("rpy") if origin is not None else None) or "0 0 0"
            if len(rpy.split()) != 3 or not all(math.isfinite(float(v)) for v in rpy.split()):
                raise ValueError(f"origin rpy {rpy!r} is not three finite numbers")
        except ValueError as exc:
            bad[name] = str(exc)
            continue
        good[name] = InertialSpec(mass, com)
    return good, bad


def _xml_parser() -> etree.XMLParser:
    """A hardened lxml parser: no entities, no DTD, no network, libxml2's size/depth limits."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        load_dtd=False,
    )


_XML_DECL_ENCODING = re.compile(r"""^(\ufeff?<\?xml\s[^>]*?\bencoding\s*=\s*)(["'])[^"']*\2""")

_XACRO_NS = "{http://www.ros.org/wiki/xacro}"

_XACRO_HINT = (
    " (this looks like an unexpanded xacro file: run `xacro robot.urdf.xacro > robot.urdf` "
    "and load the result)"
)

_DTD_MESSAGE = (
    "URDF has a <!DOCTYPE> declaration; DTDs and XML entities (<!ENTITY>) are not accepted "
    "in a URDF (they allow entity-expansion and external-file attacks)"
)

_DEPTH_MESSAGE = f"URDF nests more than {MAX_XML_DEPTH} XML elements deep (URDF needs about 5)"

_urdf_parser_lock = threading.Lock()

# The attributes of the kinematic elements handed to urdf_parser_py (everything else is dropped
# first, so that thousands of unknown attributes cannot slow it down).
_KINEMATIC_ATTRIBUTES = {
    "parent": ("link",),
    "child": ("link",),
    "origin": ("xyz", "rpy"),
    "axis": ("xyz",),
    "limit": ("lower", "upper", "effort", "velocity"),
    "mimic": ("joint", "multiplier", "offset"),
}


def _show(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error message, shortened when a hostile URDF makes it long."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:limit]}...{size}"


def _to_bytes(xml: str | bytes) -> bytes:
    if isinstance(xml, bytes):
        return xml
    if isinstance(xml, str):
        # A str is already decoded: its XML declaration's encoding no longer applies.
        text = _XML_DECL_ENCODING.sub(r"\1\2UTF-8\2", xml, count=1)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates: not text any XML parser reads
            raise UrdfSyntaxError(
                f"URDF is not valid Unicode text: {exc.reason} at character {exc.start}"
            ) from None
    raise UrdfSyntaxError(f"URDF must be str or bytes, got {type(xml).__name__}")


# XML spec, appendix F: the first bytes of a document without a byte-order mark.
_WIDE_ENCODINGS = (
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\xfe\xff", "utf-16"),
    (b"\xff\xfe", "utf-16"),
    (b"\x00\x00\x00<", "utf-32-be"),
    (b"<\x00\x00\x00", "utf-32-le"),
    (b"\x00<\x00?", "utf-16-be"),
    (b"<\x00?\x00", "utf-16-le"),
)

# One item of a prolog that may come before a DOCTYPE: whitespace, a PI/XML declaration, a
# comment. Each is matched in C (a lazy match up to a literal terminator: linear time).
_PROLOG_ITEM = re.compile(rb"\s+|<\?.*?\?>|<!--.*?-->", re.DOTALL)


def _has_doctype(data: bytes) -> bool:
    """Whether the prolog (before the root element) has a ``<!DOCTYPE``.

    Skips whitespace, processing instructions and comments from the start and looks at what
    comes next, without parsing the document: no entity is declared or expanded, and the time
    does not depend on what follows the prolog (expat took 1.5 s on a root element with a
    million attributes). UTF-16/32 documents are decoded first. Anything undecidable gives
    False and is left to lxml, which rejects DTDs too (checked again after parsing).
    """
    for mark, codec in _WIDE_ENCODINGS:
        if data.startswith(mark):
            data = data.decode(codec, errors="replace").encode("utf-8")
            break
    data = data.removeprefix(b"\xef\xbb\xbf")
    pos = 0
    while (m := _PROLOG_ITEM.match(data, pos)) is not None:
        pos = m.end()
    return data.startswith(b"<!DOCTYPE", pos)


def _parse_xml(xml: str | bytes) -> etree._Element:
    data = _to_bytes(xml)
    if len(data) > MAX_URDF_BYTES:
        raise UrdfSyntaxError(
            f"URDF is {len(data)} bytes; the largest accepted is {MAX_URDF_BYTES} bytes"
        )
    if not data.strip():
        raise UrdfSyntaxError("URDF is empty: expected a <robot> document")
    tags = data.count(b"<")
    if tags > MAX_XML_TAGS:
        raise UrdfSyntaxError(
            f"URDF has {tags} markup tags ('<'); the most accepted is {MAX_XML_TAGS} (the "
            "URDF of a real robot has a few thousand)"
        )
    if _has_doctype(data):
        raise UrdfSyntaxError(_DTD_MESSAGE)
    try:
        root = etree.fromstring(data, _xml_parser())
    except etree.XMLSyntaxError as exc:
        if "Excessive depth" in str(exc):
            raise UrdfSyntaxError(_DEPTH_MESSAGE) from exc
        raise UrdfSyntaxError(f"URDF is not well-formed XML: {exc}") from exc
    if root is None:
        raise UrdfSyntaxError("URDF is empty: expected a <robot> document")
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise UrdfSyntaxError(_DTD_MESSAGE)
    if root.tag != "robot":
        shown = root.tag.replace(_XACRO_NS, "xacro:") if isinstance(root.tag, str) else root.tag
        raise UrdfSyntaxError(
            f"URDF root element is <{shown}>; expected <robot>"
            + (_XACRO_HINT if str(root.tag).startswith(_XACRO_NS) else "")
        )
    for _ in root.iter(etree.Entity):
        raise UrdfSyntaxError("URDF uses XML entities; they are not accepted")
    if _deeper_than(root, MAX_XML_DEPTH):
        raise UrdfSyntaxError(_DEPTH_MESSAGE)
    return root


def _deeper_than(root: etree._Element, depth: int) -> bool:
    """Whether an element nests more than ``depth`` levels deep (one XPath, evaluated in C)."""
    return bool(root.xpath("boolean(" + "/*" * (depth + 1) + ")"))


@contextlib.contextmanager
def _quiet_urdf_parser() -> Iterator[list[str]]:
    """Silence urdf_parser_py's per-attribute warnings on stderr; collect them instead.

    ``on_error`` is a module global of urdf_parser_py, so concurrent parses are serialized.
    """
    from urdf_parser_py.xml_reflection import core

    messages: list[str] = []
    with _urdf_parser_lock:
        saved = core.on_error
        core.on_error = messages.append
        try:
            yield messages
        finally:
            core.on_error = saved


def _finite_vec(values: object, what: str, n: int = 3) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float).reshape(n)
    except (TypeError, ValueError) as exc:
        raise InvalidJointError(f"{what} must be {n} numbers, got {values!r}") from exc
    if not np.all(np.isfinite(v)):
        raise InvalidJointError(f"{what} has a non-finite value: {v.tolist()}")
    return v


def _origin(origin: object, what: str) -> np.ndarray:
    if origin is None:
        return np.eye(4)
    xyz = _finite_vec(getattr(origin, "xyz", None) or [0.0, 0.0, 0.0], f"{what} origin xyz")
    if np.abs(xyz).max() > MAX_ORIGIN_OFFSET:
        raise InvalidJointError(
            f"{what} origin xyz {xyz.tolist()} is more than {MAX_ORIGIN_OFFSET:g} m from its "
            "parent (URDF lengths are in metres)"
        )
    rpy = _finite_vec(getattr(origin, "rpy", None) or [0.0, 0.0, 0.0], f"{what} origin rpy")
    return spatial.make_pose(spatial.rpy_to_matrix(*rpy), xyz)


def _float_or(value: object, default: float) -> float:
    if value is None:
        return default
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def parse_urdf(xml: str | bytes) -> RobotSpec:
    """Parse and check a URDF.

    Args:
        xml: the URDF document (str or bytes; an XML declaration is fine).

    Returns:
        The checked description of links and joints.

    Raises:
        UrdfSyntaxError: not XML, not ``<robot>``, entities, too large or too deep.
        DuplicateNameError: two links or two joints share a name.
        UnsupportedJointError: floating, planar or unknown joint type.
        InvalidJointError: zero/non-finite axis, non-finite origin or limits, bad mimic.
        UrdfStructureError: missing link, cycle, several roots.
    """
    root = _parse_xml(xml)
    # Check names and types on the raw XML first: urdf_parser_py is lenient about them.
    raw_links = root.findall("link")
    raw_joints = root.findall("joint")
    for kind, found in (("link", raw_links), ("joint", raw_joints)):
        if len(found) > MAX_LINKS:
            raise UrdfStructureError(
                f"URDF has {len(found)} <{kind}> elements; the most accepted is {MAX_LINKS} "
                "(a real robot has fewer than 150)"
            )
    _check_name_length("robot", str(root.get("name") or ""))
    link_names: list[str] = [str(el.get("name") or "") for el in raw_links]
    if "" in link_names:
        raise UrdfSyntaxError("a <link> has no name attribute")
    for n in link_names:
        _check_name_length("link", n)
    _check_unique("link", link_names)
    joint_names: list[str] = [str(el.get("name") or "") for el in raw_joints]
    if "" in joint_names:
        raise UrdfSyntaxError("a <joint> has no name attribute")
    for n in joint_names:
        _check_name_length("joint", n)
    _check_unique("joint", joint_names)
    for el in raw_joints:
        jname = el.get("name")
        jtype = el.get("type")
        if jtype not in SUPPORTED_JOINT_TYPES:
            has = f"has type {_show(jtype)}" if jtype is not None else "has no type attribute"
            raise UnsupportedJointError(
                f"joint {jname!r} {has}; supported types are: "
                + ", ".join(SUPPORTED_JOINT_TYPES)
                + (
                    " (a floating base is not part of the arm's tree: give the root link a"
                    " fixed pose instead)"
                    if jtype in ("floating", "planar")
                    else ""
                )
            )
        for tag in ("parent", "child"):
            subs = el.findall(tag)
            if not subs or not subs[0].get("link"):
                raise UrdfStructureError(f"joint {jname!r} has no <{tag} link=...>")
            if len(subs) > 1:
                raise UrdfStructureError(
                    f"joint {jname!r} has {len(subs)} <{tag}> elements; a joint has exactly one"
                )
        axis_el = el.find("axis")
        if axis_el is not None:
            xyz = axis_el.get("xyz")
            if xyz is None:
                raise InvalidJointError(f"joint {jname!r} has an <axis> without xyz=...")
            _finite_vec(xyz.split(), f"joint {jname!r} axis")

    from urdf_parser_py import urdf as up
    from urdf_parser_py.xml_reflection.core import Path

    kin = _kinematic_part(root)
    with _quiet_urdf_parser():
        try:
            robot = up.URDF.from_xml(kin, Path(up.URDF.XML_REFL.tag, tree=etree.ElementTree(kin)))
        except Exception as exc:  # urdf_parser_py raises many kinds for bad values
            msg = " ".join(str(exc).split())
            if len(msg) > 500:
                msg = msg[:500] + "..."
            hint = _XACRO_HINT if ("${" in msg or "$(" in msg) else ""
            raise UrdfSyntaxError(f"URDF could not be read: {msg}{hint}") from exc

    joints = [_joint_spec(j) for j in robot.joints]
    inertials, bad_inertials = _inertials(raw_links)
    spec = RobotSpec(
        name=str(root.get("name") or ""),
        links=list(link_names),
        joints=joints,
        inertials=inertials,
        bad_inertials=bad_inertials,
    )
    _check_structure(spec)
    return spec


_KINEMATIC_JOINT_TAGS = ("parent", "child", "origin", "axis", "limit", "mimic")


def _kinematic_part(root: etree._Element) -> etree._Element:
    """A copy of ``<robot>`` with bare ``<link name>`` and the joints' kinematic elements only."""
    kin = etree.Element("robot", name=root.get("name") or "unnamed")
    for el in root:
        if el.tag == "link":
            etree.SubElement(kin, "link", name=el.get("name") or "")
        elif el.tag == "joint":
            joint = etree.SubElement(kin, "joint", name=el.get("name") or "")
            joint.set("type", el.get("type") or "")
            for sub in el:
                if sub.tag in _KINEMATIC_JOINT_TAGS:
                    attrs = {
                        k: v
                        for k in _KINEMATIC_ATTRIBUTES[sub.tag]
                        if (v := sub.get(k)) is not None
                    }
                    etree.SubElement(joint, sub.tag, attrs)
    return kin


def _check_name_length(kind: str, name: str) -> None:
    if len(name) > MAX_NAME_LENGTH:
        raise UrdfSyntaxError(
            f"a {kind} name has {len(name)} characters ({_show(name, 40)}); the longest "
            f"accepted is {MAX_NAME_LENGTH}"
        )


def _check_unique(kind: str, names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise DuplicateNameError(f"two {kind}s are named {n!r}; {kind} names must be unique")
        seen.add(n)


def _joint_spec(j: object) -> JointSpec:
    name = str(getattr(j, "name", ""))
    jtype = str(getattr(j, "type", ""))
    origin = _origin(getattr(j, "origin", None), f"joint {name!r}")
    axis_raw = getattr(j, "axis", None)
    axis = _finite_vec(
        axis_raw if axis_raw is not None else [1.0, 0.0, 0.0], f"joint {name!r} axis"
    )
    if jtype != "fixed":
        scale = float(np.abs(axis).max())  # scaled first: (1e200, 1e200, 0) must not overflow
        norm = scale * float(np.linalg.norm(axis / scale)) if scale > 0.0 else 0.0
        if norm < 1e-9:
            raise InvalidJointError(f"joint {name!r} has a zero-length axis {axis.tolist()}")
        axis = (axis / scale) / (norm / scale)
    lower, upper, velocity = -math.inf, math.inf, math.inf
    lim = getattr(j, "limit", None)
    if lim is not None:
        vel = _float_or(getattr(lim, "velocity", None), math.inf)
        if not math.isfinite(vel) or vel < 0:
            raise InvalidJointError(
                f"joint {name!r} has velocity limit {vel}; expected a finite number >= 0"
            )
        velocity = vel if vel > 0 else math.inf
        if jtype in ("revolute", "prismatic"):
            lower = _float_or(getattr(lim, "lower", None), 0.0)
            upper = _float_or(getattr(lim, "upper", None), 0.0)
            if math.isnan(lower) or math.isnan(upper) or lower > upper:
                raise InvalidJointError(
                    f"joint {name!r} has limits lower={lower}, upper={upper}; "
                    "expected lower <= upper"
                )
            if math.isinf(lower) or math.isinf(upper):
                raise InvalidJointError(
                    f"joint {name!r} has limits lower={lower}, upper={upper}; limits must be "
                    "finite (a revolute joint without limits is type 'continuous')"
                )
    elif jtype in ("revolute", "prismatic"):
        raise InvalidJointError(f"{jtype} joint {name!r} has no <limit>; URDF requires one")
    mimic = None
    m = getattr(j, "mimic", None)
    if m is not None and jtype != "fixed":
        mult = _float_or(getattr(m, "multiplier", None), 1.0)
        off = _float_or(getattr(m, "offset", None), 0.0)
        if not (math.isfinite(mult) and math.isfinite(off)):
            raise InvalidJointError(f"joint {name!r} has a non-finite mimic multiplier/offset")
        mimic = MimicSpec(str(getattr(m, "joint", "")), mult, off)
    return JointSpec(
        name=name,
        type=jtype,
        parent=str(j.parent),  # type: ignore[attr-defined]
        child=str(j.child),  # type: ignore[attr-defined]
        origin=origin,
        axis=axis,
        lower=lower,
        upper=upper,
        velocity=velocity,
        mimic=mimic,
    )


def _check_structure(spec: RobotSpec) -> None:
    links = set(spec.links)
    if not links:
        who = f"robot {spec.name!r}" if spec.name else "the <robot>"
        raise UrdfStructureError(f"{who} has no <link>; a URDF needs at least one")
    parent_of: dict[str, str] = {}
    for j in spec.joints:
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in links:
                raise UrdfStructureError(
                    f"joint {j.name!r} names {role} link {_show(link)}, which is not a <link>; "
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
    # Reachability from the root: links left over sit on a cycle.
    children: dict[str, list[str]] = {}
    for j in spec.joints:
        children.setdefault(j.parent, []).append(j.child)
    seen = {roots[0]}
    stack = [roots[0]]
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
                    f"joint {k.name!r} mimics {_show(k.mimic.joint)}, which is not a movable "
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
    "MAX_ORIGIN_OFFSET",
    "MAX_URDF_BYTES",
    "MAX_XML_DEPTH",
    "MAX_XML_TAGS",
    "SUPPORTED_JOINT_TYPES",
    "InertialSpec",
    "JointSpec",
    "MimicSpec",
    "RobotSpec",
    "parse_urdf",
]
