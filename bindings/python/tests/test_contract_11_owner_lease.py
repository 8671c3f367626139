"""Contract verification 11: after the lease expires no new tick starts; a process paused past
its lease and then resumed does not run the backlog."""
import pytest

import spot_timer as st
from conftest import MS, step


def test_contract_11_no_tick_after_lease_expiry(manual):
    owner = manual.owner(1, lease=50 * MS)
    ticks = []
    timer = owner.every(10 * MS, ticks.append)
    for _ in range(4):
        step(manual, 10 * MS)
    assert len(ticks) == 4
    step(manual, 10 * MS)  # t=50: lease deadline reached
    step(manual, 100 * MS)
    assert len(ticks) == 4
    assert timer.result() is st.EndReason.LEASE_EXPIRED
    assert not owner.is_valid()
    with pytest.raises(st.LeaseExpiredError):
        owner.renew()
    with pytest.raises(st.LeaseExpiredError):
        owner.every(10 * MS, ticks.append)


def test_contract_11_pause_past_lease_runs_no_backlog(manual):
    owner = manual.owner(1, lease=50 * MS)
    ticks = []
    timer = owner.every(10 * MS, ticks.append)
    step(manual, 10 * MS)
    assert len(ticks) == 1
    # The process is "paused" for a second: the clock jumps past the lease at once.
    manual.advance(1.0)
    assert manual.dispatch() == 0 or ticks == ticks[:1]
    assert len(ticks) == 1
    assert timer.result() is st.EndReason.LEASE_EXPIRED
    assert manual.stats().ticks_dropped_authority >= 0


def test_contract_11_renewal_extends_lease(manual):
    owner = manual.owner(1, lease=50 * MS)
    ticks = []
    owner.every(10 * MS, ticks.append)
    for _ in range(10):
        step(manual, 10 * MS)
        owner.renew()
    assert len(ticks) == 10


def test_contract_11_revoked_authority_never_runs(manual):
    owner = manual.owner(1)
    ticks = []
    timer = owner.every(10 * MS, ticks.append)
    manual.advance(10 * MS)  # ready, not started
    owner.revoke()
    manual.dispatch()
    assert ticks == []
    assert timer.result() is st.EndReason.REVOKED
    new = manual.owner(1)  # a new authority re-registers
    new.every(10 * MS, ticks.append)
    step(manual, 10 * MS)
    assert len(ticks) == 1
