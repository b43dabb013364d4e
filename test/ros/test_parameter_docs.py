"""The README's parameter tables are the declarations' (node parameters, constraint types)."""

from __future__ import annotations

from pathlib import Path

import pytest

from itasc_ros.core import REGISTRY
from itasc_ros.ros.parameter_docs import BEGIN, END, markdown, replace_section

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_tables_are_current() -> None:
    text = README.read_text()
    assert replace_section(text, markdown()) == text, (
        "README.md's parameter tables are out of date: run "
        "`python -m itasc_ros.ros.parameter_docs --write README.md`"
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


def test_the_readme_params_examples_are_valid_configurations() -> None:
    """Every params-file YAML block of the README builds a controller on the Panda."""
    import re

    import yaml

    from itasc_ros.core import Controller, KinematicTree
    from itasc_ros.params import config_from_params_data

    yaml_blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)
    blocks = [b for b in yaml_blocks if "ros__parameters:" in b]
    assert blocks
    tree = KinematicTree.from_urdf_file(README.parent / "urdf" / "panda.urdf")
    for block in blocks:
        Controller(tree, config_from_params_data(yaml.safe_load(block)))
