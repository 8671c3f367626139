"""Contract verification 1: re-registering a key: pending ticks of the previous generation
never run."""
import spot_timer as st
from conftest import MS, step


def test_contract_01_pending_tick_of_old_generation_never_runs(manual):
    owner = manual.owner(1)
    old_calls, new_calls = [], []
    old = owner.every(10 * MS, old_calls.append, key="k")
    manual.advance(10 * MS)  # a tick of the old generation is now pending (ready, not started)
    new = owner.every(10 * MS, new_calls.append, key="k")
    manual.dispatch()
    assert old_calls == []
    assert old.result() is st.EndReason.SUPERSEDED
    assert not old.is_live and new.is_live
    step(manual, 10 * MS)
    assert old_calls == []
    assert [t.delivery_index for t in new_calls] == [1]


def test_contract_01_reregister_from_inside_handler_drops_queued_record(manual):
    """Re-registration while the old generation's record sits in the same batch."""
    a, b = manual.owner(1), manual.owner(2)
    ran = []
    timers = {}

    def first(tick):
        ran.append("first")
        timers["b"] = b.every(10 * MS, lambda t: ran.append("new-b"), key="x")

    a.every(10 * MS, first, key="x", first_due=5 * MS)  # due before old-b: first in the batch
    timers["b"] = b.every(10 * MS, lambda t: ran.append("old-b"), key="x")
    manual.dispatch()  # (nothing due) waits until the scheduler applied both registrations
    manual.advance(10 * MS)
    manual.dispatch()
    # Delivery order within a batch follows due order: a first, then the stale old-b record.
    assert ran[0] == "first"
    assert "old-b" not in ran
