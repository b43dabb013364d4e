"""Lazy exports of a package: its names imported from their modules on first use (PEP 562).

A package's ``__init__`` that imports its modules eagerly makes every process that imports any
one of them pay for all: a process that only publishes targets, or a console script that only
prints a usage mistake, compiles the kinematics (numba, about a second). With
:func:`lazy_exports` the package lists where each name lives, and a name is imported when it is
first read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(package: str, where: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name from its module.

    Args:
        package: The package's ``__name__``.
        where: Relative module name (``".run"``) -> the names it exports.

    Returns:
        The function to assign to the package's ``__getattr__``; a name it imports is then
        stored in the package's namespace (the next read is a plain attribute).
    """
    module_of = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


__all__ = ["lazy_exports"]
