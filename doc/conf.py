"""Sphinx configuration of the itasc_ros documentation (the layout rosdoc2 builds)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

project = "itasc_ros"
author = "itasc_ros developers"
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_*.md"]
myst_heading_anchors = 3
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"
html_theme = "sphinx_rtd_theme"
html_title = "itasc_ros"
