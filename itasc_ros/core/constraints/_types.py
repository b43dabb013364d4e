"""Every constraint type, registered: importing this module imports every module of the package.

A constraint type registers itself (:data:`~itasc_ros.core.constraints.base.REGISTRY`) by being
a module of the package: adding a type is adding its module. The package exports
``REGISTRY`` from here, so that reading it (a configuration naming its types, the parameters'
documentation) finds every type, while a process that needs one constraint imports one.
"""

import importlib
import pkgutil

from . import __path__ as _package_path
from .base import REGISTRY

for _module in pkgutil.iter_modules(_package_path):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__package__}.{_module.name}")

__all__ = ["REGISTRY"]
