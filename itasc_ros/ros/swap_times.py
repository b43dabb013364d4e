"""How long a structural change was built beside the loop, and how long its swap held a tick.

A new model or a new scene is built while the control loop ticks on with the old one; only the
swap holds the node's lock, so only the swap can delay a tick. :class:`SwapTimes` keeps the
longest of each (``/diagnostics``: ``structural_changes``, ``longest_build_ms``,
``longest_swap_ms``), the measure that no tick waits for a build.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _timed() -> Iterator[list[float]]:
    """Yields a list whose one value is set to the block's duration [s] when it ends."""
    elapsed = [0.0]
    t0 = time.perf_counter()
    try:
        yield elapsed
    finally:
        elapsed[0] = time.perf_counter() - t0


class SwapTimes:
    """The structural changes so far: their count, the longest build and the longest swap [s]."""

    def __init__(self) -> None:
        self.changes = 0
        self.longest_build = 0.0
        self.longest_swap = 0.0

    @contextmanager
    def build(self) -> Iterator[None]:
        """Time a build (beside the loop)."""
        with _timed() as elapsed:
            yield
        self.longest_build = max(self.longest_build, elapsed[0])

    @contextmanager
    def swap(self) -> Iterator[None]:
        """Time a swap (the caller holds the node's lock around it); count the change."""
        with _timed() as elapsed:
            yield
        self.changes += 1
        self.longest_swap = max(self.longest_swap, elapsed[0])

    def values(self) -> list[tuple[str, object]]:
        """The ``/diagnostics`` key-values."""
        return [
            ("structural_changes", self.changes),
            ("longest_build_ms", f"{1e3 * self.longest_build:.3f}"),
            ("longest_swap_ms", f"{1e3 * self.longest_swap:.3f}"),
        ]


__all__ = ["SwapTimes"]
