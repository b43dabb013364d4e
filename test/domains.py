"""Private ROS domain ids for the tests, free of collisions on this machine.

Shared-memory DDS reaches every process of the machine that runs in the same domain, so two test
modules, or two pytest sessions (two clones tested at once), must never share a domain while both
run. :func:`allocate_domain` hands out an id of :data:`DOMAIN_POOL` and holds an exclusive
``flock`` on ``<LOCK_DIR>/<id>.lock`` until :func:`release_domain` or the end of the process (the
kernel drops the locks of a process that ends, however it ends). Another process asks for the
same lock without waiting and moves on to the next id.

Free ids are handed out least recently used first, across processes: a lock file's modification
time says when an id was last taken or given back (by any process). The modules of one session
get distinct domains for as long as the pool lasts, a module never inherits the domain of the one
before, and a session (or the other worker of a parallel run) never takes the domain another
process has just left: processes killed in a domain can leave Fast DDS's shared-memory ports of
that domain behind, and a participant that reuses such a port may not hear, or be heard, for a
while.

This module uses the standard library only (a child process can import it quickly).
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Where the lock files are: /tmp itself, not ``$TMPDIR``: shared memory spans the machine.
LOCK_DIR = Path("/tmp/itasc_test_domains")
#: The ids handed out. Not 0 (ROS's default), nor the small ids people give their own robots,
#: nor 110-229 (where ``private_domain_id`` puts itasc-demo and itasc-bench by default); Fast DDS
#: accepts 0-232.
DOMAIN_POOL = range(20, 110)


class NoFreeDomainError(RuntimeError):
    """Every id of the pool is held (by this process or others)."""


class DomainPool:
    """Domain ids of ``ids``, each held through an exclusive lock file in ``lock_dir``."""

    def __init__(self, ids: range = DOMAIN_POOL, lock_dir: Path = LOCK_DIR) -> None:
        """Hold nothing yet.

        Args:
            ids: the ids handed out, lowest first.
            lock_dir: the folder of the lock files (created on first use, writable for all).
        """
        self.ids = ids
        self.lock_dir = lock_dir
        self._held: dict[int, int] = {}  # domain id -> the descriptor holding its lock
        self._used: set[int] = set()  # every id held so far

    def allocate(self) -> int:
        """An id that no other holder has; held until :meth:`release` or the process's end.

        Returns:
            The free id used longest ago by any process (never used first; then, among equals,
            one never held here, then the lowest).

        Raises:
            NoFreeDomainError: every id is held.
        """
        for domain in self._candidates():
            fd = self._try_lock(domain)
            if fd is not None:
                self._held[domain] = fd
                self._used.add(domain)
                self._touch(domain)
                return domain
        raise NoFreeDomainError(
            f"all {len(self.ids)} test domains ({self.ids.start}-{self.ids.stop - 1}) are held; "
            f"their holders: fuser -v {self.lock_dir}/*.lock"
        )

    def release(self, domain: int) -> None:
        """Let others have ``domain`` (its processes must have stopped). No-op if not held."""
        fd = self._held.pop(domain, None)
        if fd is not None:
            self._touch(domain)  # last used now: the back of every process's queue
            os.close(fd)  # closing the only descriptor drops the lock

    def held(self) -> list[int]:
        """The ids held now, in order."""
        return sorted(self._held)

    def _candidates(self) -> list[int]:
        """The ids not held here, least recently used (by any process) first."""
        free = [d for d in self.ids if d not in self._held]
        return sorted(free, key=lambda d: (self._last_used(d), d in self._used, d))

    def _last_used(self, domain: int) -> int:
        """When ``domain`` was last taken or released [ns since 1970]; -1 if never."""
        try:
            return (self.lock_dir / f"{domain}.lock").stat().st_mtime_ns
        except OSError:
            return -1

    def _touch(self, domain: int) -> None:
        """Mark ``domain`` used now (its lock file's modification time)."""
        now = time.time_ns()  # the kernel's own "now" for files is a few ms coarse
        try:
            os.utime(self.lock_dir / f"{domain}.lock", ns=(now, now))
        except OSError:  # another user's lock file: its order stays as it is
            pass

    def _try_lock(self, domain: int) -> int | None:
        """A descriptor holding the lock of ``domain``; None if another holder has it."""
        self._make_lock_dir()
        try:
            fd = os.open(
                self.lock_dir / f"{domain}.lock", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
        except PermissionError:  # another user's lock file that we may not open: held
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def _make_lock_dir(self) -> None:
        if not self.lock_dir.is_dir():
            self.lock_dir.mkdir(parents=True, exist_ok=True)
            try:
                self.lock_dir.chmod(0o1777)  # as /tmp: every user's sessions lock here
            except PermissionError:  # another user's, created meanwhile
                pass


_POOL = DomainPool()


def allocate_domain() -> int:
    """A ROS domain id that no other live process holds; held until this process ends.

    Returns:
        An id of :data:`DOMAIN_POOL` (see :meth:`DomainPool.allocate`).

    Raises:
        NoFreeDomainError: every id of the pool is held.
    """
    return _POOL.allocate()


def release_domain(domain: int) -> None:
    """Let other processes have ``domain`` (its processes must have stopped)."""
    _POOL.release(domain)


@contextmanager
def borrowed_domain() -> Iterator[int]:
    """A domain of :func:`allocate_domain` for the block; released when the block ends.

    Yields:
        The domain id. The processes in it must have stopped when the block ends.
    """
    domain = allocate_domain()
    try:
        yield domain
    finally:
        release_domain(domain)


def held_domains() -> list[int]:
    """The ids this process holds now, in order."""
    return _POOL.held()


__all__ = [
    "DOMAIN_POOL",
    "LOCK_DIR",
    "DomainPool",
    "NoFreeDomainError",
    "allocate_domain",
    "borrowed_domain",
    "held_domains",
    "release_domain",
]
