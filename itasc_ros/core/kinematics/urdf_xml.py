"""Reading a URDF's XML text safely: a hardened lxml parse with bounded size, markup and depth.

No DTD, no entity expansion, no network; a document over :data:`MAX_URDF_BYTES`, with more
than :data:`MAX_XML_TAGS` tags or nested deeper than :data:`MAX_XML_DEPTH` is rejected before
or while parsing, so that a hostile URDF is rejected in well under a second
(``test/data/hostile_urdfs``). The root must be ``<robot>`` (an unexpanded xacro file is named
as such). :func:`show` quotes a value read from the document in an error message, shortened.
"""

from __future__ import annotations

import re

from lxml import etree

from ..errors import UrdfSyntaxError

MAX_URDF_BYTES = 16 * 1024 * 1024
"""Largest URDF accepted [bytes] (the largest of example-robot-data's 69 robots is 0.2 MB)."""

MAX_XML_TAGS = 250_000
"""Most markup tags (``<``) accepted before the XML is parsed (real URDFs have < 7,000)."""

MAX_XML_DEPTH = 64
"""Deepest XML nesting accepted (URDF needs about 5)."""

XACRO_HINT = (
    " (this looks like an unexpanded xacro file: run `xacro robot.urdf.xacro > robot.urdf` "
    "and load the result)"
)
"""Appended to an error that an unexpanded xacro file causes."""

_XML_DECL_ENCODING = re.compile(r"""^(\ufeff?<\?xml\s[^>]*?\bencoding\s*=\s*)(["'])[^"']*\2""")

_XACRO_NS = "{http://www.ros.org/wiki/xacro}"

_DTD_MESSAGE = (
    "URDF has a <!DOCTYPE> declaration; DTDs and XML entities (<!ENTITY>) are not accepted "
    "in a URDF (they allow entity-expansion and external-file attacks)"
)

_DEPTH_MESSAGE = f"URDF nests more than {MAX_XML_DEPTH} XML elements deep (URDF needs about 5)"

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


def show(value: object, limit: int = 60) -> str:
    """``repr(value)`` for an error message, shortened when a hostile URDF makes it long.

    Args:
        value: a value read from the document.
        limit: the longest ``repr`` shown in full [characters].

    Returns:
        The ``repr``, or its first ``limit`` characters, ``...`` and the length of a str.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:limit]}...{size}"


def xml_parser() -> etree.XMLParser:
    """A hardened lxml parser: no entities, no DTD, no network, libxml2's size/depth limits."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
        load_dtd=False,
    )


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


def read_urdf_xml(xml: str | bytes, max_bytes: int = MAX_URDF_BYTES) -> etree._Element:
    """The ``<robot>`` element of a URDF document, parsed by the hardened parser.

    Args:
        xml: the URDF document (str or bytes; an XML declaration is fine).
        max_bytes: the largest document accepted [bytes].

    Returns:
        The root ``<robot>`` element.

    Raises:
        UrdfSyntaxError: not XML, not ``<robot>``, a DTD or entities, too large or too deep.
    """
    data = _to_bytes(xml)
    if len(data) > max_bytes:
        raise UrdfSyntaxError(
            f"URDF is {len(data)} bytes; the largest accepted is {max_bytes} bytes"
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
        root = etree.fromstring(data, xml_parser())
    except etree.XMLSyntaxError as exc:
        if "Excessive depth" in str(exc):
            raise UrdfSyntaxError(_DEPTH_MESSAGE) from exc
        raise UrdfSyntaxError(f"URDF is not well-formed XML: {exc}") from exc
    if root is None:
        raise UrdfSyntaxError("URDF is empty: expected a <robot> document")
    _check_root(root)
    return root


def _check_root(root: etree._Element) -> None:
    """Reject a DTD, a root other than ``<robot>``, entities and nesting over the limit."""
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise UrdfSyntaxError(_DTD_MESSAGE)
    if root.tag != "robot":
        shown = root.tag.replace(_XACRO_NS, "xacro:") if isinstance(root.tag, str) else root.tag
        raise UrdfSyntaxError(
            f"URDF root element is <{shown}>; expected <robot>"
            + (XACRO_HINT if str(root.tag).startswith(_XACRO_NS) else "")
        )
    for _ in root.iter(etree.Entity):
        raise UrdfSyntaxError("URDF uses XML entities; they are not accepted")
    if _deeper_than(root, MAX_XML_DEPTH):
        raise UrdfSyntaxError(_DEPTH_MESSAGE)


def _deeper_than(root: etree._Element, depth: int) -> bool:
    """Whether an element nests more than ``depth`` levels deep (one XPath, evaluated in C)."""
    return bool(root.xpath("boolean(" + "/*" * (depth + 1) + ")"))


__all__ = [
    "MAX_URDF_BYTES",
    "MAX_XML_DEPTH",
    "MAX_XML_TAGS",
    "XACRO_HINT",
    "read_urdf_xml",
    "show",
    "xml_parser",
]
