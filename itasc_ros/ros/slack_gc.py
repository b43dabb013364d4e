"""Python's cyclic garbage collector, run in a control loop's slack instead of at allocation.

CPython collects generation 0 whenever 700 more objects were allocated than freed, inside
whichever code allocates: in a 1 kHz loop that is the control tick, before its command is
published, about once every 100 ticks: the tail of the joint-state-to-command latency. A
:class:`SlackCollector` turns the automatic collector off and runs the collections that are due
(CPython's own thresholds) when told to: right after a command is published, with most of a
period before the next tick, and from a slow timer while the loop does not tick.
"""

from __future__ import annotations

import gc


class SlackCollector:
    """Runs due garbage collections on request; the automatic collector is off meanwhile.

    Args:
        thresholds: (gen0, gen1, gen2) as :func:`gc.set_threshold`; default: the current ones.
    """

    def __init__(self, thresholds: tuple[int, int, int] | None = None) -> None:
        t0, t1, t2 = thresholds if thresholds is not None else gc.get_threshold()
        self.thresholds = (max(1, t0), max(1, t1), max(1, t2))
        self.collections = [0, 0, 0]  # collections run, per generation
        self.active = False

    def start(self) -> None:
        """Collect everything once, freeze the survivors (start-up objects), then take over.

        The ~130k objects of a node's start-up (rclpy, numpy, message classes, the model) leave
        the collector's scans for good (:func:`gc.freeze`): a full collection of them stalls
        for ~45 ms.
        """
        gc.collect()
        gc.freeze()
        gc.disable()
        self.active = True

    def stop(self) -> None:
        """Give collection back to CPython (automatic, at allocation)."""
        gc.enable()
        self.active = False

    def collect(self) -> int:
        """Run the collection that is due, if any; returns its generation or -1.

        The oldest generation whose count reached its threshold is collected (with the
        younger ones), as CPython does at allocation. Three comparisons when nothing is due.
        """
        if not self.active:
            return -1
        c0, c1, c2 = gc.get_count()
        t0, t1, t2 = self.thresholds
        if c0 < t0:
            return -1
        gen = 2 if (c1 >= t1 and c2 >= t2) else (1 if c1 >= t1 else 0)
        gc.collect(gen)
        self.collections[gen] += 1
        return gen


__all__ = ["SlackCollector"]
