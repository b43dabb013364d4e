"""How a loop run that cannot finish ends: :class:`BenchError`."""

from __future__ import annotations


class BenchError(RuntimeError):
    """The benchmark could not run (a process died, no command arrived)."""


__all__ = ["BenchError"]
