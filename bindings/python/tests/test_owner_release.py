"""Owner.release(): ends the authority like revoke() and lets the runtime forget the owner
once its timers have ended (hosts whose owners come and go - actors, sessions)."""
import threading
import time

import pytest

import spot_timer as st
from conftest import MS, step


def test_released_owners_are_forgotten_once_their_timers_end(manual):
    n = 500
    ticks = []
    owners = [manual.owner(i) for i in range(n)]
    timers = [o.every(10 * MS, ticks.append, key="poll") for o in owners]
    assert step(manual, 10 * MS) == n
    assert len(ticks) == n
    s = manual.stats()
    assert (s.owners, s.live_timers) == (n, n)
    assert manual.held_python_objects() == n

    for o in owners:
        o.release()
    manual.advance(0)  # the scheduler has applied every release
    s = manual.stats()
    assert s.owners == 0, s
    assert s.live_timers == 0, s
    for t in timers:
        assert not t.is_live
        assert t.result() is st.EndReason.REVOKED
        assert t.stats().delivered == 1
    for o in owners:
        assert not o.is_valid()
    # Nothing of theirs runs any more, and the runtime holds none of their handlers.
    assert step(manual, 50 * MS) == 0
    assert len(ticks) == n
    assert manual.held_python_objects() == 0
    s = manual.stats()
    assert s.ticks_due == (
        s.completed_ok
        + s.completed_failed
        + s.ticks_skipped
        + s.ticks_dropped_authority
        + s.ticks_discarded
    ), s


def test_release_twice_or_registering_after_release_raises_revoked(manual):
    owner = manual.owner(3)
    timer = owner.every(10 * MS, lambda t: None)
    owner.release()
    with pytest.raises(st.RevokedError):
        owner.release()
    with pytest.raises(st.RevokedError):
        owner.every(10 * MS, lambda t: None)
    with pytest.raises(st.RevokedError):
        owner.after(10 * MS, lambda t: None, key="once")
    with pytest.raises(st.RevokedError):
        owner.revoke()
    with pytest.raises(st.RevokedError):
        owner.renew()
    assert not owner.is_valid()
    manual.advance(0)
    assert timer.result() is st.EndReason.REVOKED
    assert manual.stats().owners == 0
    # Still an error (not a silent no-op) once the owner is forgotten.
    with pytest.raises(st.RevokedError):
        owner.release()


def test_release_of_a_superseded_or_revoked_authority_raises_revoked(manual):
    ticks = []
    old = manual.owner(4)
    new = manual.owner(4)  # takes over: the old authority is no longer current
    assert new.epoch > old.epoch
    with pytest.raises(st.RevokedError):
        old.release()
    # The failed release did not touch the current authority.
    timer = new.every(10 * MS, ticks.append)
    assert step(manual, 10 * MS) == 1
    assert timer.is_live
    assert manual.stats().owners == 1

    new.revoke()
    with pytest.raises(st.RevokedError):
        new.release()
    manual.advance(0)
    assert timer.result() is st.EndReason.REVOKED
    # A revoked (not released) owner stays known to the runtime.
    assert manual.stats().owners == 1


def test_release_after_close_raises_runtime_closed():
    rt = st.Runtime(st.ManualClock(), dispatch="manual")
    owner = rt.owner(1)
    rt.close()
    with pytest.raises(st.RuntimeClosedError):
        owner.release()


def test_reacquiring_a_released_id_starts_a_new_owner_with_a_larger_epoch(manual):
    old_ticks = []
    old = manual.owner(9)
    old_timer = old.every(10 * MS, old_ticks.append, key="poll")
    assert step(manual, 10 * MS) == 1
    old_epoch = old.epoch
    old.release()
    manual.advance(0)
    assert manual.stats().owners == 0

    new = manual.owner(9)
    assert new.epoch > old_epoch + 1, (new.epoch, old_epoch)
    assert new.is_valid()
    assert manual.stats().owners == 1
    ticks = []
    timer = new.every(10 * MS, ticks.append, key="poll")
    assert step(manual, 10 * MS) == 1
    assert [(t.owner_id, t.delivery_index) for t in ticks] == [(9, 1)]
    assert timer.is_live
    # The same (string) key of the new owner still names one timer: re-registering it
    # supersedes the first.
    ticks2 = []
    timer2 = new.every(10 * MS, ticks2.append, key="poll")
    manual.advance(0)
    assert timer.result() is st.EndReason.SUPERSEDED
    assert step(manual, 10 * MS) == 1
    assert len(ticks) == 1 and len(ticks2) == 1
    assert timer2.is_live
    # The old incarnation's timer never ran again and its handle stays harmless.
    assert len(old_ticks) == 1
    assert old_timer.result() is st.EndReason.REVOKED
    with pytest.raises(st.RevokedError):
        old.release()
    with pytest.raises(st.RevokedError):
        old.revoke()
    assert new.is_valid()
    assert step(manual, 10 * MS) == 1
    assert len(ticks2) == 2


def test_handler_releasing_its_own_owner_finishes_first_manual(manual):
    seen = []
    box = {}

    def handler(tick):
        box["owner"].release()
        manual.advance(0)  # the scheduler has applied the release
        # This callback is still out: the timer has not ended, the owner is still known.
        seen.append((box["timer"].result(), manual.stats().owners, box["timer"].is_live))
        seen.append("handler finished")

    box["owner"] = manual.owner(5)
    box["timer"] = box["owner"].every(10 * MS, handler)
    assert step(manual, 10 * MS) == 1
    assert seen == [(None, 1, False), "handler finished"]
    manual.advance(0)
    timer = box["timer"]
    assert timer.result() is st.EndReason.REVOKED
    assert timer.stats().delivered == 1
    assert manual.stats().owners == 0
    assert manual.stats().live_timers == 0
    assert step(manual, 50 * MS) == 0
    assert len(seen) == 2


def test_release_while_handler_runs_on_dispatcher_thread():
    clock = st.ManualClock()
    rt = st.Runtime(clock, dispatch="thread")
    try:
        started = threading.Event()
        go_on = threading.Event()
        finished = []
        owner = rt.owner(6)

        def handler(tick):
            started.set()
            assert go_on.wait(10)
            finished.append(tick.delivery_index)

        timer = owner.every(10 * MS, handler)
        rt.advance(0)
        rt.advance(10 * MS)
        assert started.wait(10)
        owner.release()  # from another thread while the callback runs
        rt.advance(0)
        assert timer.result() is None
        assert rt.stats().owners == 1
        assert finished == []
        go_on.set()
        deadline = time.monotonic() + 10
        while timer.result() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert finished == [1]
        assert timer.result() is st.EndReason.REVOKED
        rt.advance(0)
        assert rt.stats().owners == 0
        assert rt.stats().live_timers == 0
        assert timer.stats().delivered == 1
        rt.advance(50 * MS)
        assert finished == [1]
    finally:
        rt.close()


def test_reacquire_inside_handler_after_release_keeps_the_owner(manual):
    ticks = []
    box = {}

    def handler(tick):
        box["old"].release()
        box["new"] = manual.owner(7)  # taken over before the released owner was forgotten
        box["new"].every(10 * MS, ticks.append, key="b")

    box["old"] = manual.owner(7)
    old_timer = box["old"].every(10 * MS, handler, key="a")
    assert step(manual, 10 * MS) == 1
    manual.advance(0)
    assert old_timer.result() is st.EndReason.REVOKED
    assert manual.stats().owners == 1, "taken over, not forgotten"
    assert box["new"].epoch > box["old"].epoch
    assert step(manual, 10 * MS) == 1
    assert [t.owner_id for t in ticks] == [7]
    box["new"].release()
    manual.advance(0)
    assert manual.stats().owners == 0


def test_a_record_of_a_released_owner_never_expires_the_next_owner_of_its_index():
    """Contract T6: an owner released while its records are in flight gives its index to
    the next owner; the dispatcher's look at the released authority (ended at its
    release) must not end the timers of the owner that took the index. Real clock and a
    dispatcher thread; the window moves with the number of records in flight."""
    rounds = 20_000
    ran = []
    far_ran = []
    with st.Runtime() as rt:
        deadline = time.monotonic() + 120
        kept = []
        for r in range(rounds):
            assert time.monotonic() < deadline, f"no progress: round {r}"
            gone = rt.owner(2 * r + 1)
            for k in range(r % 8 + 1):
                gone.after(0, ran.append, key=k)
            # A varying wait lets the dispatcher receive some of them before the release.
            until = time.perf_counter() + (r % 41) * 1e-6
            while time.perf_counter() < until:
                pass
            gone.release()
            # The next owner, no lease: whatever index it gets, nothing may end it.
            nxt = rt.owner(2 * r + 2)
            kept.append((r, nxt.after(3600, far_ran.append, key=0), nxt))
            if len(kept) > 64:
                old_round, timer, owner = kept.pop(0)
                assert timer.is_live, (old_round, timer.result())
                owner.release()
                assert timer.result() is st.EndReason.REVOKED
        for old_round, timer, _ in kept:
            assert timer.is_live, (old_round, timer.result())
        assert far_ran == []
        print("records of released owners that ran:", len(ran))
        assert rt.stats().owners >= len(kept)
