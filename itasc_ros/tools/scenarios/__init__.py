"""Demo scenarios: ``itasc-demo --scenario NAME``, ``itasc-demo --list-scenarios``.

Every module of this package whose name does not start with ``_`` is a scenario, found with
``pkgutil`` (as the constraint types are): adding a scenario is adding its module. A scenario
module defines:

* ``NAME: str`` -- the scenario's name (``itasc-demo --scenario NAME``);
* ``DESCRIPTION: str`` -- one line, shown by ``itasc-demo --list-scenarios``;
* ``def run(out_dir: pathlib.Path, quick: bool = False) -> dict[str, Any]`` -- runs the
  scenario, writes ``<NAME>.png`` into ``out_dir`` and returns JSON-able metrics
  (``itasc-demo --scenario NAME --json`` prints them as one JSON object). ``quick`` is a
  shorter run with the same checks, for the tests.

A scenario runs the real core :class:`~itasc_ros.core.control.Controller` (the object the
node runs) or :class:`~itasc_ros.core.solve.Scene` on an ideal robot that integrates the
commanded velocities (``q += q' dt``), configured from a params file in ``config/`` that
works as it is with ``ros2 launch itasc_ros itasc.launch.py params_file:=...``. ROS-free.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from ...core.errors import ConfigError


def names() -> list[str]:
    """The scenarios' names (their modules), sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def load(name: str) -> ModuleType:
    """The module of scenario ``name``.

    Raises:
        ConfigError: an unknown scenario, naming the scenarios.
    """
    if name not in names():
        raise ConfigError(f"unknown scenario {name!r}; scenarios are: " + ", ".join(names()))
    return importlib.import_module(f"{__name__}.{name}")


def descriptions() -> dict[str, str]:
    """Name -> one-line description of every scenario (a module that fails to import says so)."""
    out: dict[str, str] = {}
    for name in names():
        try:
            out[name] = str(load(name).DESCRIPTION)
        except Exception as exc:  # listing must not fail for one broken scenario
            out[name] = f"(cannot be loaded: {type(exc).__name__}: {exc})"
    return out


__all__ = ["descriptions", "load", "names"]
