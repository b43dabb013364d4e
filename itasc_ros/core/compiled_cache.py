"""Where numba keeps the core's compiled kernels: one directory per version of the core's sources.

numba checks a cached kernel against its own source file only (modification time and size): a
kernel that calls a kernel of another module, or reads a constant of one, keeps the old code
after that module changed (an edit, a ``git pull``), silently. The core's kernels are therefore
cached under a directory named after the size and modification time of every source file of
the core: any change to the core starts a fresh cache (the first calls compile again), and the
caches of the older versions of the same installation, and of installations whose core
directory is gone (a deleted clone), are removed.

The directories live under ``NUMBA_CACHE_DIR`` when it is set, else under
``$XDG_CACHE_HOME/itasc_ros/numba`` (``~/.cache/itasc_ros/numba``); one per installation (its
path), one version in each. :func:`use_versioned_cache` runs when :mod:`itasc_ros.core` is
imported, before any kernel is compiled or loaded; processes started from it inherit the
choice.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent
"""The core's source directory (every kernel, and every constant a kernel reads, is in it)."""

#: Set by :func:`use_versioned_cache` for the processes it starts: the directory it chose and
#: the base it chose it under (so that a child does not take the first for a user's base).
CHOSEN_DIR = "ITASC_ROS_NUMBA_CACHE_DIR"
CHOSEN_BASE = "ITASC_ROS_NUMBA_CACHE_BASE"


def sources_version(core: Path = CORE) -> str:
    """A name for the current state of ``core``'s sources (16 hex digits).

    The hash of each ``.py`` file's path, size and modification time.
    """
    h = hashlib.sha1()
    for path in sorted(core.rglob("*.py")):
        st = path.stat()
        h.update(f"{path.relative_to(core)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def default_base() -> Path:
    """``$XDG_CACHE_HOME/itasc_ros/numba``, else ``~/.cache/itasc_ros/numba``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "itasc_ros" / "numba"


def versioned_dir(base: Path, core: Path = CORE) -> Path:
    """``base/<installation>/<version>``: the cache directory of ``core`` as it is now."""
    install = hashlib.sha1(str(core).encode()).hexdigest()[:12]
    return base / install / sources_version(core)


#: The file in an installation's directory that names the core directory it caches.
SOURCE_MARK = "source"


def remove_orphans(base: Path) -> None:
    """Remove the installations under ``base`` whose core directory is gone (best effort).

    A deleted clone's kernels are not left behind. Only directories marked as an
    installation's (:data:`SOURCE_MARK`) are considered: anything else is left alone.
    """
    try:
        installs = [p for p in base.iterdir() if p.is_dir()]
    except OSError:
        return
    for install in installs:
        try:
            core = (install / SOURCE_MARK).read_text().strip()
        except OSError:
            continue  # not an installation's directory
        if core and not Path(core).is_dir():
            shutil.rmtree(install, ignore_errors=True)


def remove_older_versions(current: Path) -> None:
    """Remove the other version directories beside ``current`` (best effort)."""
    try:
        siblings = [p for p in current.parent.iterdir() if p != current and p.is_dir()]
    except OSError:
        return
    for p in siblings:
        shutil.rmtree(p, ignore_errors=True)


def use_versioned_cache() -> Path:
    """Point numba's cache at the directory of this version of the core; returns it.

    Sets ``NUMBA_CACHE_DIR`` (read by numba when it is imported; ``numba.core.config`` too
    when numba is imported already) and the two markers of the choice.
    """
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user and user == os.environ.get(CHOSEN_DIR):  # inherited from the process that chose it
        base = Path(os.environ.get(CHOSEN_BASE) or default_base())
    elif user:
        base = Path(user)
    else:
        base = default_base()
    chosen = versioned_dir(base)
    if not chosen.is_dir():  # a new version: the older ones and deleted installations go
        remove_older_versions(chosen)
        remove_orphans(base)
    mark = chosen.parent / SOURCE_MARK
    if not mark.is_file():
        try:
            chosen.mkdir(parents=True, exist_ok=True)
            mark.write_text(str(CORE))
        except OSError:
            pass  # a read-only place: numba says so when it caches
    os.environ["NUMBA_CACHE_DIR"] = os.environ[CHOSEN_DIR] = str(chosen)
    os.environ[CHOSEN_BASE] = str(base)
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = str(chosen)  # type: ignore[attr-defined]
    return chosen


__all__ = [
    "CHOSEN_BASE",
    "CHOSEN_DIR",
    "CORE",
    "SOURCE_MARK",
    "default_base",
    "remove_older_versions",
    "remove_orphans",
    "sources_version",
    "use_versioned_cache",
    "versioned_dir",
]
