"""Python's garbage collector kept out of a stretch whose timing is the point.

A tool that republishes a bag, streams a demo's targets or stands in for an operator in a test
also stores what it hears: tens of thousands of objects. CPython's full collection of them
stops every thread of the process (the GIL) for a long moment on a busy machine: the
node on the other side sees its inputs go silent, holds or stops, and the run no longer
shows what it was meant to. :func:`no_collector_pauses` collects once, freezes what exists out
of later scans (:func:`gc.freeze`) and lets the collector run again at the end.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_collector_pauses(unfreeze: bool = True) -> Iterator[None]:
    """No automatic garbage collection inside the block.

    Args:
        unfreeze: give the frozen objects back to the collector at the end (a long-lived
            process that will free them); False leaves them frozen, which keeps later
            collections short (a test process between its tests).
    """
    gc.collect()
    gc.freeze()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        if unfreeze:
            gc.unfreeze()


__all__ = ["no_collector_pauses"]
