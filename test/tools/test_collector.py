"""no_collector_pauses: no automatic collection inside, the collector as it was after."""

from __future__ import annotations

import gc

import pytest

from itasc_ros.tools.collector import no_collector_pauses


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def _cycles_alive() -> int:
    return sum(isinstance(o, _Cycle) for o in gc.get_objects())


@pytest.mark.parametrize("unfreeze", [True, False])
def test_no_collection_inside_and_the_collector_back_after(unfreeze: bool) -> None:
    assert gc.isenabled()
    frozen_before = gc.get_freeze_count()
    try:
        with no_collector_pauses(unfreeze=unfreeze):
            assert not gc.isenabled()
            assert gc.get_freeze_count() >= frozen_before
            for _ in range(20 * gc.get_threshold()[0]):  # many generation-0 thresholds' worth
                _Cycle()
            assert _cycles_alive() == 20 * gc.get_threshold()[0]  # none collected meanwhile
        assert gc.isenabled()
        assert (gc.get_freeze_count() == 0) if unfreeze else gc.get_freeze_count() > 0
        gc.collect()
        assert _cycles_alive() == 0  # the block's garbage, collected once allowed
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with no_collector_pauses():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
