"""The hostile URDF corpus: documents built to exhaust, confuse or crash a URDF consumer.

``test/data/bad_urdfs/`` holds plain *malformed* URDFs (one mistake each). This corpus holds
*hostile* ones: sizes at and beyond the parser's limits, deep nesting, entity expansion,
external entities and DTDs, long cycles and mimic chains, NaN/Inf/overflowing numbers,
duplicate and over-long names, non-UTF-8 and binary garbage, the empty string.

Every case is generated here from its name (deterministic bytes). :data:`CASES` is read by
``test/core/kinematics/test_hostile_urdfs.py`` (core level, node start-up, the
robot_description topic at run time). The small cases are also stored next to this script as
``<name>.urdf`` for manual use (``ros2 topic pub``, other tools); the large ones exist only at
test time (files in git stay small). Run ``python test/data/hostile_urdfs/make_hostile.py`` to
rewrite the stored files; the test checks that they match.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from itasc_ros.core.kinematics import urdf as _limits  # noqa: E402  (the limits the corpus aims at)

STORED_MAX_BYTES = 8192
"""Cases up to this size are stored as files; larger ones are only generated."""


@dataclass(frozen=True)
class Case:
    """One hostile document and what the parser must say about it.

    Attributes:
        name: file stem.
        make: builds the document (bytes; deterministic).
        error: the ItascError subclass name raised, or '' when the document is accepted
            (hostile but harmless, e.g. an XInclude that must stay unprocessed).
        parts: substrings of the error message (what is wrong, the valid limit or choices).
        what: one line on why the case is hostile.
        links: for accepted cases, the link names the tree must have (nothing more).
    """

    name: str
    make: Callable[[], bytes]
    error: str
    parts: tuple[str, ...]
    what: str
    links: tuple[str, ...] = field(default=())

    @property
    def stored(self) -> bool:
        """Whether the case is small enough to be kept as a file in git."""
        return len(self.make()) <= STORED_MAX_BYTES


# ----------------------------------------------------------------------------- building blocks
def _joint(
    name: str,
    parent: str,
    child: str,
    *,
    jtype: str = "revolute",
    xyz: str = "0 0 0.1",
    rpy: str = "0 0 0",
    axis: str = "0 0 1",
    limit: str = 'lower="-1" upper="1" effort="10" velocity="1"',
    extra: str = "",
) -> str:
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/><limit {limit}/>{extra}</joint>'
    )


def _arm(**joint2: str) -> bytes:
    """A 3-link arm whose second joint gets ``joint2`` (keyword arguments of :func:`_joint`)."""
    return (
        '<?xml version="1.0"?>\n<robot name="hostile">\n'
        '  <link name="base"/><link name="upper"/><link name="tip"/>\n'
        f"  {_joint('j1', 'base', 'upper')}\n"
        f"  {_joint('j2', 'upper', 'tip', **joint2)}\n"
        "</robot>\n"
    ).encode()


def _chain(n: int, mimic: bool = False) -> str:
    """Links l0..ln and joints j1..jn in a chain (each joint mimicking the previous one)."""
    links = "".join(f'<link name="l{i}"/>' for i in range(n + 1))
    joints = "".join(
        _joint(
            f"j{i}",
            f"l{i - 1}",
            f"l{i}",
            extra=f'<mimic joint="j{i - 1}" multiplier="1.0001"/>' if mimic and i > 1 else "",
        )
        for i in range(1, n + 1)
    )
    return links + joints


def _robot(body: str, name: str = "hostile") -> bytes:
    return f'<robot name="{name}">{body}</robot>'.encode()


def _pad_to(doc: bytes, size: int) -> bytes:
    """``doc`` with a comment after the root element making it exactly ``size`` bytes."""
    filler = size - len(doc) - len("<!---->")
    return doc + b"<!--" + b"x" * filler + b"-->"


_GOOD_SMALL = _robot('<link name="base"/><link name="tip"/>' + _joint("j1", "base", "tip"))


# ----------------------------------------------------------------------------- size and count
def _over_size_cap() -> bytes:
    return _pad_to(_GOOD_SMALL, _limits.MAX_URDF_BYTES + 1)


def _many_links_below_size_cap() -> bytes:
    head, tail = b'<robot name="hostile">', b"</robot>"
    room = _limits.MAX_URDF_BYTES - len(head) - len(tail) - 64
    one = len(b'<link name="l0000000"/>')
    links = b"".join(b'<link name="l%07d"/>' % i for i in range(room // one))
    return head + links + tail


def _links_over_count_cap() -> bytes:
    return _robot(_chain(_limits.MAX_LINKS))  # MAX_LINKS + 1 links


def _million_attributes() -> bytes:
    head = b'<robot name="hostile" '
    room = _limits.MAX_URDF_BYTES - 200
    attrs = b" ".join(b'a%07d="1"' % i for i in range(room // 13))
    return head + attrs + b'><link name="base"/></robot>'


def _long_link_name() -> bytes:
    return _robot(f'<link name="{"n" * 1_000_000}"/>')


def _long_parent_reference() -> bytes:
    return _robot('<link name="base"/><link name="tip"/>' + _joint("j1", "p" * 500_000, "tip"))


def _unknown_attribute_flood() -> bytes:
    """Accepted: 500 joints, each element with 200 unknown attributes (dropped unread)."""
    flood = " ".join(f'x{i}="{i}"' for i in range(200))
    links = "".join(f'<link name="l{i}"/>' for i in range(501))
    joints = "".join(
        f'<joint name="j{i}" type="revolute" {flood}><parent link="l{i - 1}" {flood}/>'
        f'<child link="l{i}" {flood}/><origin xyz="0 0 0.1" {flood}/><axis xyz="0 0 1" {flood}/>'
        f'<limit lower="-1" upper="1" effort="1" velocity="1" {flood}/></joint>'
        for i in range(1, 501)
    )
    return _robot(links + joints)


# ----------------------------------------------------------------------------- nesting
def _nested(levels: int, where: str = "link") -> bytes:
    inner = "<v>" * levels + "</v>" * levels
    if where == "link":
        return _robot(f'<link name="base"><visual>{inner}</visual></link>')
    return _robot(f'<link name="base"/><gazebo>{inner}</gazebo>')


# ----------------------------------------------------------------------------- entities, DTDs
_LAUGHS = "".join(
    f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' if i else '<!ENTITY l0 "lol">'
    for i in range(10)
)


def _laughs_in_attribute() -> bytes:
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE robot [{_LAUGHS}]>\n'
        '<robot name="r"><link name="&l9;"/></robot>\n'
    ).encode()


def _parameter_entities() -> bytes:
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY % p0 "<!ENTITY x \'lol\'>">'
        b'<!ENTITY % p1 "%p0;%p0;%p0;%p0;%p0;%p0;%p0;%p0;">%p1;]>\n'
        b'<robot name="r"><link name="&x;"/></robot>\n'
    )


def _quadratic_blowup() -> bytes:
    big = "A" * 50_000
    refs = "&a;" * 2_000
    return (
        f'<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY a "{big}">]>'
        f'<robot name="r"><link name="base"/><gazebo>{refs}</gazebo></robot>'
    ).encode()


def _doctype_after_comments_and_pis() -> bytes:
    return (
        '\ufeff<?xml version="1.0" encoding="UTF-8"?>\n<!-- a comment -->\n'
        '<?pi with="attributes"?>\n<!-- <robot> in a comment -->\n'
        f"<!DOCTYPE robot [{_LAUGHS}]>\n"
        '<robot name="&l9;"><link name="base"/></robot>\n'
    ).encode()


def _doctype_utf16_without_bom() -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-16LE"?><!DOCTYPE robot [<!ENTITY x "y">]>'
        '<robot name="&x;"><link name="base"/></robot>'
    ).encode("utf-16-le")


def _undeclared_entity() -> bytes:
    return b'<robot name="r"><link name="&xxe;"/></robot>'


def _external_dtd_dev_zero() -> bytes:
    return b'<?xml version="1.0"?>\n<!DOCTYPE robot SYSTEM "file:///dev/zero">\n' + _GOOD_SMALL


def _external_entity_dev_urandom() -> bytes:
    return (
        b'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY r SYSTEM "file:///dev/urandom">]>\n'
        b'<robot name="r"><link name="base"/><gazebo>&r;</gazebo></robot>\n'
    )


def _network_entity() -> bytes:
    return (
        b'<?xml version="1.0"?>\n'
        b'<!DOCTYPE robot [<!ENTITY r SYSTEM "http://198.51.100.7/robot.urdf">]>\n'
        b'<robot name="r"><link name="base"/>&r;</robot>\n'
    )


def _xinclude_dev_zero() -> bytes:
    """Accepted: XInclude is never processed (nothing is read from /dev/zero)."""
    return (
        b'<robot name="r" xmlns:xi="http://www.w3.org/2001/XInclude"><link name="base"/>'
        b'<xi:include href="file:///dev/zero" parse="text"/>'
        b'<xi:include href="file:///etc/hostname"/></robot>'
    )


# ----------------------------------------------------------------------------- graph structure
def _long_cycle() -> bytes:
    n = _limits.MAX_LINKS
    links = "".join(f'<link name="l{i}"/>' for i in range(n))
    joints = "".join(_joint(f"j{i}", f"l{i}", f"l{(i + 1) % n}") for i in range(n))
    return _robot(links + joints)


def _cycle_beside_a_tree() -> bytes:
    return _robot(
        '<link name="base"/><link name="arm"/><link name="a"/><link name="b"/><link name="c"/>'
        + _joint("j_arm", "base", "arm")
        + _joint("ab", "a", "b")
        + _joint("bc", "b", "c")
        + _joint("ca", "c", "a")
    )


def _long_mimic_chain() -> bytes:
    """Accepted: each joint mimics the previous one (was O(n^3): 5 s for 1000 joints)."""
    return _robot(_chain(_limits.MAX_LINKS - 1, mimic=True))


def _long_mimic_loop() -> bytes:
    n = _limits.MAX_LINKS - 1
    body = _chain(n, mimic=True).replace(  # the first joint (j1) mimics the last one
        '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>',
        f'<limit lower="-1" upper="1" effort="10" velocity="1"/><mimic joint="j{n}"/></joint>',
        1,
    )
    return _robot(body)


def _links_with_late_duplicate() -> bytes:
    n = _limits.MAX_LINKS - 1
    links = "".join(f'<link name="l{i}"/>' for i in range(n)) + '<link name="l3"/>'
    return _robot(links)


def _duplicate_joint_names() -> bytes:
    return _robot(
        '<link name="a"/><link name="b"/><link name="c"/>'
        + _joint("j", "a", "b")
        + _joint("j", "b", "c")
    )


# ----------------------------------------------------------------------------- numbers
def _random_garbage() -> bytes:
    return random.Random(7).randbytes(4096)


CASES: dict[str, Case] = {
    c.name: c
    for c in [
        # size and count
        Case(
            "over_size_cap",
            _over_size_cap,
            "UrdfSyntaxError",
            (f"URDF is {_limits.MAX_URDF_BYTES + 1} bytes", "largest accepted is"),
            "one byte over the size cap",
        ),
        Case(
            "many_links_below_size_cap",
            _many_links_below_size_cap,
            "UrdfSyntaxError",
            ("markup tags", f"the most accepted is {_limits.MAX_XML_TAGS}"),
            "just below the size cap, ~700,000 links (was minutes and GBs in lxml/urdf_parser_py)",
        ),
        Case(
            "links_over_count_cap",
            _links_over_count_cap,
            "UrdfStructureError",
            (f"{_limits.MAX_LINKS + 1} <link> elements", f"most accepted is {_limits.MAX_LINKS}"),
            "a valid chain with one link too many",
        ),
        Case(
            "million_attributes",
            _million_attributes,
            "UrdfSyntaxError",
            ("not well-formed XML",),
            "a root element with 1.4 million attributes (expat took 1.5 s on it)",
        ),
        Case(
            "long_link_name",
            _long_link_name,
            "UrdfSyntaxError",
            ("link name has 1000000 characters", f"longest accepted is {_limits.MAX_NAME_LENGTH}"),
            "a 1 MB link name (would be echoed in every error message and diagnostic)",
        ),
        Case(
            "long_parent_reference",
            _long_parent_reference,
            "UrdfStructureError",
            ("names parent link 'ppppp", "(500000 characters)", "links are: 'base', 'tip'"),
            "a joint naming a 500 kB parent link: the message shows it shortened",
        ),
        Case(
            "unknown_attribute_flood",
            _unknown_attribute_flood,
            "",
            (),
            "accepted: 500 joints x 6 elements x 200 unknown attributes, dropped unread",
            tuple(f"l{i}" for i in range(501)),
        ),
        # nesting
        Case(
            "deep_nesting_300",
            lambda: _nested(300),
            "UrdfSyntaxError",
            (f"more than {_limits.MAX_XML_DEPTH}", "deep"),
            "300 levels in a <visual> (libxml2's own limit is 256)",
        ),
        Case(
            "deep_nesting_100k",
            lambda: _nested(100_000, "gazebo"),
            "UrdfSyntaxError",
            (f"more than {_limits.MAX_XML_DEPTH}", "deep"),
            "100,000 levels (700 kB; deeper ones exceed the markup tag cap)",
        ),
        # entities and DTDs
        Case(
            "laughs_in_attribute",
            _laughs_in_attribute,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "billion laughs expanding into a link name",
        ),
        Case(
            "parameter_entities",
            _parameter_entities,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "parameter entities declaring entities",
        ),
        Case(
            "quadratic_blowup",
            _quadratic_blowup,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "a 50 kB entity referenced 2,000 times (100 MB if expanded)",
        ),
        Case(
            "doctype_after_comments_and_pis",
            _doctype_after_comments_and_pis,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "a BOM, comments and PIs hiding the DOCTYPE from a naive prolog check",
        ),
        Case(
            "doctype_utf16_without_bom",
            _doctype_utf16_without_bom,
            "UrdfSyntaxError",
            ("<!DOCTYPE>",),
            "UTF-16LE without a byte-order mark (XML appendix F detection)",
        ),
        Case(
            "undeclared_entity",
            _undeclared_entity,
            "UrdfSyntaxError",
            ("not well-formed XML",),
            "an entity reference without any DTD",
        ),
        Case(
            "external_dtd_dev_zero",
            _external_dtd_dev_zero,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "an external DTD that never ends if read",
        ),
        Case(
            "external_entity_dev_urandom",
            _external_entity_dev_urandom,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "an external entity on an endless device",
        ),
        Case(
            "network_entity",
            _network_entity,
            "UrdfSyntaxError",
            ("<!DOCTYPE>", "not accepted"),
            "an entity fetched over the network (TEST-NET address)",
        ),
        Case(
            "xinclude_dev_zero",
            _xinclude_dev_zero,
            "",
            (),
            "accepted: XInclude elements are inert (never processed)",
            ("base",),
        ),
        # graph structure
        Case(
            "long_cycle",
            _long_cycle,
            "UrdfStructureError",
            ("cycle", "no root"),
            f"{_limits.MAX_LINKS} links in one ring",
        ),
        Case(
            "cycle_beside_a_tree",
            _cycle_beside_a_tree,
            "UrdfStructureError",
            ("cycle", "'a', 'b', 'c'"),
            "a detached 3-link ring next to a valid tree",
        ),
        Case(
            "long_mimic_chain",
            _long_mimic_chain,
            "",
            (),
            "accepted: 998 joints each mimicking the previous one",
            tuple(f"l{i}" for i in range(_limits.MAX_LINKS)),
        ),
        Case(
            "long_mimic_loop",
            _long_mimic_loop,
            "InvalidJointError",
            ("mimic joints form a loop", "'j1'", "...", "must end at a joint without <mimic>"),
            "a mimic loop through 999 joints (the message stays short)",
        ),
        Case(
            "links_with_late_duplicate",
            _links_with_late_duplicate,
            "DuplicateNameError",
            ("two links are named 'l3'",),
            "a duplicate link name after 999 others",
        ),
        Case(
            "duplicate_joint_names",
            _duplicate_joint_names,
            "DuplicateNameError",
            ("two joints are named 'j'",),
            "two joints with the same name in a valid chain",
        ),
        # numbers
        Case(
            "nan_origin_rpy",
            lambda: _arm(rpy="0 NaN 0"),
            "InvalidJointError",
            ("joint 'j2' origin rpy", "non-finite", "nan"),
            "NaN in an origin",
        ),
        Case(
            "overflowing_origin",
            lambda: _arm(xyz="1e400 0 0"),
            "InvalidJointError",
            ("joint 'j2' origin xyz", "non-finite", "inf"),
            "an origin that overflows to Inf when read",
        ),
        Case(
            "huge_origin",
            lambda: _arm(xyz="1e308 0 1e308"),
            "InvalidJointError",
            ("joint 'j2' origin xyz", "more than 1e+06 m"),
            "a finite origin whose forward kinematics overflow (LinAlgError crashed the node)",
        ),
        Case(
            "inf_velocity_limit",
            lambda: _arm(limit='lower="-1" upper="1" effort="1" velocity="inf"'),
            "InvalidJointError",
            ("joint 'j2'", "velocity limit inf", "finite number >= 0"),
            "an infinite velocity limit (was silently 'no limit')",
        ),
        Case(
            "nan_velocity_limit",
            lambda: _arm(limit='lower="-1" upper="1" effort="1" velocity="nan"'),
            "InvalidJointError",
            ("joint 'j2'", "velocity limit nan"),
            "a NaN velocity limit",
        ),
        Case(
            "inf_position_limits",
            lambda: _arm(limit='lower="-inf" upper="inf" effort="1" velocity="1"'),
            "InvalidJointError",
            ("joint 'j2'", "lower=-inf, upper=inf", "must be finite", "'continuous'"),
            "infinite position limits on a revolute joint",
        ),
        Case(
            "nan_position_limit",
            lambda: _arm(limit='lower="nan" upper="1" effort="1" velocity="1"'),
            "InvalidJointError",
            ("joint 'j2'", "lower=nan"),
            "a NaN position limit",
        ),
        Case(
            "zero_axis",
            lambda: _arm(axis="0 0 0"),
            "InvalidJointError",
            ("joint 'j2'", "zero-length axis"),
            "a zero-length axis",
        ),
        Case(
            "subnormal_axis",
            lambda: _arm(axis="1e-320 0 0"),
            "InvalidJointError",
            ("joint 'j2'", "zero-length axis"),
            "an axis of subnormal length",
        ),
        Case(
            "nan_axis",
            lambda: _arm(axis="NaN 0 1"),
            "InvalidJointError",
            ("joint 'j2' axis", "non-finite"),
            "NaN in an axis",
        ),
        Case(
            "inf_mimic_multiplier",
            lambda: _arm(extra='<mimic joint="j1" multiplier="inf"/>'),
            "InvalidJointError",
            ("joint 'j2'", "non-finite mimic"),
            "an infinite mimic multiplier",
        ),
        # garbage
        Case(
            "empty_string",
            lambda: b"",
            "UrdfSyntaxError",
            ("URDF is empty",),
            "the empty string (an unset robot_description)",
        ),
        Case(
            "whitespace_megabytes",
            lambda: b" \n\t" * 1_000_000,
            "UrdfSyntaxError",
            ("URDF is empty",),
            "3 MB of whitespace",
        ),
        Case(
            "non_utf8_link_name",
            lambda: (
                b'<?xml version="1.0" encoding="UTF-8"?><robot name="r"><link name="b\xff\xfe'
                b'"/></robot>'
            ),
            "UrdfSyntaxError",
            ("not well-formed XML",),
            "invalid UTF-8 bytes in a name",
        ),
        Case(
            "random_bytes",
            _random_garbage,
            "UrdfSyntaxError",
            ("not well-formed XML",),
            "4 kB of random bytes",
        ),
        Case(
            "nul_bytes",
            lambda: b'<robot name="r">\x00\x00<link name="base"/></robot>',
            "UrdfSyntaxError",
            ("not well-formed XML",),
            "NUL bytes inside the document",
        ),
        Case(
            "unknown_joint_type_flood",
            lambda: _arm(jtype="T" * 100_000),
            "UnsupportedJointError",
            ("joint 'j2' has type 'TTTT", "(100000 characters)", "revolute, continuous"),
            "a 100 kB joint type: the message shows it shortened",
        ),
    ]
}


def write_stored(directory: Path = HERE) -> list[Path]:
    """Write the small cases as ``<name>.urdf`` files (and remove stale ones)."""
    written = []
    keep = set()
    for case in CASES.values():
        if case.stored:
            path = directory / f"{case.name}.urdf"
            path.write_bytes(case.make())
            written.append(path)
            keep.add(path.name)
    for old in directory.glob("*.urdf"):
        if old.name not in keep:
            old.unlink()
    return written


if __name__ == "__main__":
    for p in write_stored():
        print(p.relative_to(REPO))
