"""Contract verification 5-7: delivery_index +1 per callback; scheduled_index increasing and
>= delivery_index; skipped_ticks = scheduled_index - 1 first, then scheduled - previous - 1."""
import random

import pytest

import spot_timer as st
from conftest import MS, step


def _run(manual, policy, n=1):
    owner = manual.owner(1)
    rng = random.Random(1234)
    ticks = []

    def handler(tick):
        ticks.append(tick)
        # sometimes late: the handler takes up to 4.5 periods
        if rng.random() < 0.4:
            manual.advance(rng.choice([3, 12, 25, 45]) * MS)

    owner.every(10 * MS, handler, policy=policy, max_catch_up_ticks=n, first_due=20 * MS)
    for _ in range(60):
        step(manual, rng.choice([1, 5, 10, 30]) * MS)
    assert len(ticks) > 20
    return ticks


POLICIES = [
    (st.OverrunPolicy.SKIP_LATE_TICKS, 1),
    (st.OverrunPolicy.CATCH_UP_BOUNDED, 3),
    (st.OverrunPolicy.DELAY_NEXT_TICK, 1),
]


@pytest.mark.parametrize("policy,n", POLICIES)
def test_contract_05_delivery_index_increases_by_one(manual, policy, n):
    ticks = _run(manual, policy, n)
    assert [t.delivery_index for t in ticks] == list(range(1, len(ticks) + 1))


@pytest.mark.parametrize("policy,n", POLICIES)
def test_contract_06_scheduled_index_monotonic_and_at_least_delivery(manual, policy, n):
    ticks = _run(manual, policy, n)
    for prev, cur in zip(ticks, ticks[1:]):
        assert cur.scheduled_index > prev.scheduled_index
    assert all(t.scheduled_index >= t.delivery_index for t in ticks)


@pytest.mark.parametrize("policy,n", POLICIES)
def test_contract_07_skipped_ticks_formula(manual, policy, n):
    ticks = _run(manual, policy, n)
    assert ticks[0].skipped_ticks == ticks[0].scheduled_index - 1
    for prev, cur in zip(ticks, ticks[1:]):
        assert cur.skipped_ticks == cur.scheduled_index - prev.scheduled_index - 1
    if policy is not st.OverrunPolicy.DELAY_NEXT_TICK:
        assert any(t.skipped_ticks > 0 for t in ticks)


def test_contract_07_first_tick_skips_when_first_delivery_is_late(manual):
    owner = manual.owner(1)
    ticks = []
    owner.every(10 * MS, ticks.append)
    step(manual, 45 * MS)  # ticks 1..4 are due at once
    assert [(t.delivery_index, t.scheduled_index, t.skipped_ticks) for t in ticks] == [(1, 4, 3)]


def test_contract_05_one_shot_indices(manual):
    owner = manual.owner(1)
    ticks = []
    timer = owner.after(5 * MS, ticks.append)
    step(manual, 50 * MS)
    assert [(t.delivery_index, t.scheduled_index, t.skipped_ticks) for t in ticks] == [(1, 1, 0)]
    assert timer.result() is st.EndReason.COMPLETED
