"""The parameter reference (doc/parameters.md) is the declarations' (node, constraint types)."""

from __future__ import annotations

from pathlib import Path

import pytest

from itasc_ros.core import REGISTRY
from itasc_ros.ros.parameter_docs import BEGIN, END, markdown, replace_section

PAGE = Path(__file__).resolve().parents[2] / "doc" / "parameters.md"


def test_the_parameter_page_is_current() -> None:
    text = PAGE.read_text()
    assert replace_section(text, markdown()) == text, (
        "doc/parameters.md is out of date: run "
        "`python -m itasc_ros.ros.parameter_docs --write doc/parameters.md`"
    )


def test_every_registered_type_and_setting_has_a_row() -> None:
    section = markdown()
    for name, cls in REGISTRY.items():
        assert f"`{name}`: " in section
        for f in cls.FIELDS:
            assert f"| `{f.name}` |" in section


def test_a_text_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match=BEGIN):
        replace_section("no markers", "x")
    assert replace_section(f"a\n{BEGIN}\nold\n{END}\nb", "new\n") == f"a\n{BEGIN}\nnew\n{END}\nb"
