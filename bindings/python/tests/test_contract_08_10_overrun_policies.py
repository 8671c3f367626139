"""Contract verification 8-10: SkipLateTicks, CatchUpBounded, DelayNextTick."""
import spot_timer as st
from conftest import MS, step


def _indices(ticks):
    return [(t.delivery_index, t.scheduled_index, t.skipped_ticks) for t in ticks]


def test_contract_08_skip_late_ticks_delivers_only_newest(manual):
    owner = manual.owner(1)
    ticks = []

    def handler(tick):
        ticks.append(tick)
        if tick.delivery_index == 1:
            manual.advance(35 * MS)  # late: ticks 2, 3, 4 come due meanwhile (t=20,30,40)

    owner.every(10 * MS, handler)  # policy default: SKIP_LATE_TICKS
    step(manual, 10 * MS)
    assert _indices(ticks) == [(1, 1, 0), (2, 4, 2)]
    step(manual, 5 * MS)  # t=50: tick 5
    assert _indices(ticks)[-1] == (3, 5, 0)


def test_contract_09_catch_up_bounded_delivers_at_most_n_in_order(manual):
    owner = manual.owner(1)
    ticks = []

    def handler(tick):
        ticks.append(tick)
        if tick.delivery_index == 1:
            manual.advance(95 * MS)  # t=105: ticks 2..10 are due

    owner.every(10 * MS, handler, policy=st.OverrunPolicy.CATCH_UP_BOUNDED, max_catch_up_ticks=3)
    step(manual, 10 * MS)
    # backlog 2..10: the oldest of the newest 3 is 8 -> 8, 9, 10 in order; 2..7 skipped
    assert _indices(ticks) == [(1, 1, 0), (2, 8, 6), (3, 9, 0), (4, 10, 0)]
    step(manual, 5 * MS)  # t=110: tick 11
    assert _indices(ticks)[-1] == (5, 11, 0)


def test_contract_09_catch_up_one_behaves_like_skip(manual):
    owner = manual.owner(1)
    ticks = []

    def handler(tick):
        ticks.append(tick)
        if tick.delivery_index == 1:
            manual.advance(35 * MS)

    owner.every(10 * MS, handler, policy=st.OverrunPolicy.CATCH_UP_BOUNDED, max_catch_up_ticks=1)
    step(manual, 10 * MS)
    assert _indices(ticks) == [(1, 1, 0), (2, 4, 2)]


def test_contract_10_delay_next_tick_is_one_period_after_handler_end(manual):
    owner = manual.owner(1)
    ticks = []
    ends = []

    def handler(tick):
        ticks.append((tick, manual.clock.now_ns))
        if tick.delivery_index == 1:
            manual.advance(25 * MS)  # handler ends at t=35
        ends.append(manual.clock.now_ns)

    owner.every(10 * MS, handler, policy=st.OverrunPolicy.DELAY_NEXT_TICK)
    step(manual, 10 * MS)  # t=10: tick 1, ends at t=35
    assert len(ticks) == 1
    step(manual, 9 * MS)  # t=44: not yet
    assert len(ticks) == 1
    step(manual, 1 * MS)  # t=45 = end + period
    assert len(ticks) == 2
    tick2, started_at = ticks[1]
    assert started_at == ends[0] + 10_000_000
    assert (tick2.delivery_index, tick2.scheduled_index, tick2.skipped_ticks) == (2, 2, 0)
    step(manual, 100 * MS)  # long gap: no catch-up, one tick
    assert len(ticks) == 3 and ticks[2][0].skipped_ticks == 0
