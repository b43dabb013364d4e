"""The parameter reference, generated from the declarations (node and constraint types).

``python -m itasc_ros.ros.parameter_docs`` prints them; ``--write doc/parameters.md`` replaces
the text between the ``<!-- parameters:begin -->`` and ``<!-- parameters:end -->`` lines. A test
checks that the page is current, so a new parameter or constraint type shows there by being
declared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rclpy.parameter import Parameter

from ..core.constraints import REGISTRY, Field
from ..core.control.settings import SETTINGS, Setting
from .parameters import type_spec

BEGIN = "<!-- parameters:begin -->"
END = "<!-- parameters:end -->"


def _value(v: Any) -> str:
    if isinstance(v, Parameter.Type):
        return "`[]`"
    if isinstance(v, str):
        return f"`{v}`" if v else "`''`"
    if isinstance(v, bool):
        return "`true`" if v else "`false`"
    return f"`{v}`"


def _range(lo: float | None, hi: float | None, choices: str) -> str:
    parts = [f"[{lo:g}, {hi:g}]"] if lo is not None and hi is not None else []
    if choices:
        parts.append(choices)
    return "; ".join(parts)


def _cells(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _setting_row(s: Setting) -> str:
    change = "live" if s.live else "read-only"
    valid = _range(s.lo, s.hi, s.valid)
    return _cells([f"`{s.name}`", _value(s.default), s.unit, change, valid, s.description])


def _field_row(f: Field) -> str:
    change = "live" if f.live else "read-only"
    valid = _range(f.lo, f.hi, f.choices)
    return _cells([f"`{f.name}`", _value(f.default), change, valid, f.description])


HEADER = "| name | default | change | valid values | meaning |\n| --- | --- | --- | --- | --- |"
NODE_HEADER = (
    "| name | default | unit | change | valid values | meaning |\n"
    "| --- | --- | --- | --- | --- | --- |"
)


def markdown() -> str:
    """The tables: the node's parameters, then each constraint type's settings."""
    out = ["## The node", "", NODE_HEADER, *(_setting_row(s) for s in SETTINGS), ""]
    t = type_spec("<name>")
    out += [
        "## Constraints",
        "",
        f"Each name in `constraint_names` has `constraints.<name>.type` ({t.constraints}; "
        "read-only) and the settings of its type as `constraints.<name>.<setting>`:",
        "",
    ]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        doc = (cls.__doc__ or "").strip().splitlines()[0].replace("``", "`")
        out += [f"`{name}`: {doc}", "", HEADER, *(_field_row(f) for f in cls.FIELDS), ""]
    return "\n".join(out).rstrip() + "\n"


def replace_section(text: str, section: str) -> str:
    """``text`` with the part between :data:`BEGIN` and :data:`END` replaced by ``section``.

    Raises:
        ValueError: the markers are missing.
    """
    head, sep, rest = text.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"the text has no {BEGIN} ... {END} section")
    return head + sep + section + sep2 + tail


def main(argv: list[str] | None = None) -> int:
    """Print the tables, or write them into a file's marked section."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", type=Path, help="replace the marked section of this file")
    args = ap.parse_args(argv)
    if args.write is None:
        sys.stdout.write(markdown())
        return 0
    args.write.write_text(replace_section(args.write.read_text(), markdown()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
