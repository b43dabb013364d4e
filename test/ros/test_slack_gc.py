"""SlackCollector: the automatic collector off, due collections run on request."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from itasc_ros.ros.slack_gc import SlackCollector


@pytest.fixture
def collector() -> Iterator[SlackCollector]:
    c = SlackCollector(thresholds=(100, 10, 10))
    c.start()
    try:
        yield c
    finally:
        c.stop()
        gc.unfreeze()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def _garbage_cycle() -> weakref.ref[_Cycle]:
    return weakref.ref(_Cycle())  # unreachable at once, freed only by the cyclic collector


def test_start_freezes_and_disables(collector: SlackCollector) -> None:
    assert not gc.isenabled()
    assert gc.get_freeze_count() > 0
    assert collector.collect() == -1  # nothing allocated since start: nothing due


def test_cycles_wait_for_collect_and_then_go(collector: SlackCollector) -> None:
    ref = _garbage_cycle()
    for _ in range(10):  # far past the automatic threshold: nothing collects by itself
        [[] for _ in range(1000)]
        assert ref() is not None
    assert collector.collect() == 0
    assert ref() is None
    assert collector.collections[0] == 1


def test_older_generations_follow_cpython_thresholds(collector: SlackCollector) -> None:
    gens = []
    keep = []
    for _ in range(150):
        keep.append([{} for _ in range(150)])  # survivors: the young generation stays full
        gens.append(collector.collect())
    assert gens.count(1) >= 12  # every 10th gen-0 collection is a gen-1 one
    assert gens.count(2) >= 1  # every 10th gen-1 collection is a full one
    assert collector.collections == [gens.count(0), gens.count(1), gens.count(2)]


def test_inactive_collector_does_nothing() -> None:
    c = SlackCollector()
    assert gc.isenabled()
    assert c.collect() == -1
    assert c.collections == [0, 0, 0]
