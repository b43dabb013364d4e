"""The tests' domain allocator (test/domains.py): no id is ever held twice on this machine.

Oracles: the ids themselves (distinct, within Fast DDS's range) and a second process that holds
an id: this process never gets it while that process lives, and gets it once it has died. The
exhaustive checks use a pool of their own (three ids, a lock folder in ``tmp_path``) so that they
never take ids from the pytest sessions running beside this one.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from domains import (
    DOMAIN_POOL,
    DomainPool,
    NoFreeDomainError,
    allocate_domain,
    held_domains,
    release_domain,
)

TEST_DIR = Path(__file__).resolve().parent
MAX_DOMAIN_ID = 232  # the largest ROS_DOMAIN_ID Fast DDS accepts
SMALL = range(200, 203)  # the private pool of the exhaustive checks
HOLDER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from domains import DomainPool, allocate_domain
if sys.argv[2] == "default":
    print(allocate_domain(), flush=True)
else:
    print(DomainPool(range(*map(int, sys.argv[3:5])), Path(sys.argv[2])).allocate(), flush=True)
time.sleep(120)
"""


def _holder(*args: str) -> tuple[subprocess.Popen[str], int]:
    """A process holding an id (from ``args``: "default", or a lock folder and a range)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(TEST_DIR), *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.strip().isdigit():
        _stop(proc)
        raise AssertionError(f"the holder printed {line!r} (exit {proc.returncode})")
    return proc, int(line)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)  # as a crash: the kernel drops its locks
    proc.wait(10.0)


@pytest.fixture
def small(tmp_path: Path) -> Iterator[DomainPool]:
    pool = DomainPool(SMALL, tmp_path / "locks")
    try:
        yield pool
    finally:
        for domain in pool.held():
            pool.release(domain)


def _drain(pool: DomainPool) -> list[int]:
    """Every id ``pool`` can still get, in the order it got them."""
    got = []
    with pytest.raises(NoFreeDomainError, match="are held"):
        while True:
            got.append(pool.allocate())
    return got


def test_the_pool_is_valid_and_avoids_the_ids_of_other_tools() -> None:
    assert 0 < DOMAIN_POOL.start and DOMAIN_POOL.stop - 1 <= MAX_DOMAIN_ID
    assert not set(DOMAIN_POOL) & set(range(110, 230))  # private_domain_id's: itasc-demo's
    assert len(DOMAIN_POOL) >= 60  # a few sessions at once, ~20 modules each


def test_two_allocations_differ_and_are_in_the_valid_range() -> None:
    a, b = allocate_domain(), allocate_domain()
    try:
        assert a != b
        assert a in DOMAIN_POOL and b in DOMAIN_POOL
        assert {a, b} <= set(held_domains())
    finally:
        release_domain(a)
        release_domain(b)
    assert not {a, b} & set(held_domains())


def test_an_id_another_process_holds_is_never_returned(small: DomainPool, tmp_path: Path) -> None:
    proc, theirs = _holder(str(tmp_path / "locks"), str(SMALL.start), str(SMALL.stop))
    try:
        assert theirs in SMALL
        mine = _drain(small)
        assert sorted(mine) == sorted(set(SMALL) - {theirs})  # all the others, not theirs
    finally:
        _stop(proc)
    assert small.allocate() == theirs  # its holder died: free again


def test_a_session_s_domain_is_not_returned_to_another_session() -> None:
    """The real pool and lock folder, as two pytest sessions use them."""
    proc, theirs = _holder("default")
    mine = [allocate_domain() for _ in range(3)]
    try:
        assert theirs in DOMAIN_POOL and theirs not in mine
    finally:
        for domain in mine:
            release_domain(domain)
        _stop(proc)


def test_released_ids_come_back_only_after_fresh_ones(small: DomainPool) -> None:
    first = small.allocate()
    small.release(first)
    second = small.allocate()
    assert second != first  # a fresh id: the next module never inherits the last one's
    rest = _drain(small)
    assert rest[-1] == first and len(rest) == len(SMALL) - 1  # reused once nothing else is left


def test_a_released_id_is_free_for_another_process(small: DomainPool, tmp_path: Path) -> None:
    taken = [small.allocate() for _ in SMALL]
    small.release(taken[1])
    proc, theirs = _holder(str(tmp_path / "locks"), str(SMALL.start), str(SMALL.stop))
    try:
        assert theirs == taken[1]
    finally:
        _stop(proc)


def test_an_id_another_process_left_comes_back_last(small: DomainPool, tmp_path: Path) -> None:
    """A process killed in a domain may leave its shared-memory ports: others take it last."""
    proc, theirs = _holder(str(tmp_path / "locks"), str(SMALL.start), str(SMALL.stop))
    _stop(proc)  # killed: its lock is dropped, its use is remembered
    got = _drain(small)
    assert sorted(got) == list(SMALL)
    assert got[-1] == theirs  # the ids nobody used first, though theirs is the lowest


def test_ids_come_back_least_recently_used_first(small: DomainPool) -> None:
    taken = [small.allocate() for _ in SMALL]
    for domain in (taken[2], taken[0], taken[1]):
        small.release(domain)
    assert _drain(small) == [taken[2], taken[0], taken[1]]
