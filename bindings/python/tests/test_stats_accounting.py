"""Contract T7/T10 tick accounting through Runtime.stats(): once every generation has ended,
ticks_due == completed_ok + completed_failed + ticks_skipped + ticks_dropped_authority
+ ticks_discarded."""
import dataclasses
import time

import spot_timer as st
from conftest import MS


def _identity_holds(s: st.Stats) -> bool:
    return s.ticks_due == (
        s.completed_ok
        + s.completed_failed
        + s.ticks_skipped
        + s.ticks_dropped_authority
        + s.ticks_discarded
    )


def test_stats_has_every_runtime_counter():
    names = [f.name for f in dataclasses.fields(st.Stats)]
    assert names[-5:] == [
        "ticks_due",
        "ticks_discarded",
        "records_taken_back",
        "records_abandoned",
        "scheduler_wakes_by_hosts",
    ]
    clock = st.ManualClock()
    with st.Runtime(clock, dispatch="manual") as rt:
        s = rt.stats()
        assert (s.ticks_due, s.ticks_discarded, s.records_taken_back) == (0, 0, 0)


def test_stats_tick_accounting_identity():
    clock = st.ManualClock()
    errors = []
    rt = st.Runtime(clock, dispatch="manual", exception_handler=lambda e, t: errors.append(e))
    try:
        o1 = rt.owner(1, gate=st.GateMode.CONCURRENT)
        o2 = rt.owner(2, gate=st.GateMode.CONCURRENT)
        runs = {}

        def note(name, tick):
            runs.setdefault(name, []).append(
                (tick.delivery_index, tick.scheduled_index, tick.skipped_ticks)
            )

        def handler_b(tick):
            note("b", tick)
            if tick.delivery_index == 1:
                raise ValueError("b's first tick fails")

        def handler_c(tick):
            note("c", tick)
            if tick.delivery_index == 2:
                c.cancel_nowait()  # its own record is the one running
                raise ValueError("c's second tick fails")

        pair = {}

        def pair_handler(name, other):
            def handler(tick):
                note(name, tick)
                if other not in runs and pair[other].is_live:
                    # the other's record of this batch is in the host's hands, not started
                    pair[other].cancel_nowait()

            return handler

        a = o1.every(10 * MS, lambda t: note("a", t), key=1)
        catch_up = st.OverrunPolicy.CATCH_UP_BOUNDED
        b = o1.every(10 * MS, handler_b, key=2, policy=catch_up, max_catch_up_ticks=2)
        c = o1.every(10 * MS, handler_c, key=3, policy=st.OverrunPolicy.DELAY_NEXT_TICK)
        d = o1.every(10 * MS, lambda t: note("d", t), key=4)
        o1.after(5 * MS, lambda t: note("e", t), key=5)
        f = o2.every(10 * MS, lambda t: note("f", t), key=1)
        pair["x"] = o1.every(10 * MS, pair_handler("x", "y"), key=7)
        pair["y"] = o1.every(10 * MS, pair_handler("y", "x"), key=8)

        # t=35: A (3, skips 2), B (2, skips 1), C (1), D (3), E, F (3), X and Y (3) ready
        rt.advance(35 * MS)
        assert d.cancel(timeout=1) is st.EndReason.CANCELLED  # D: 3 due ticks discarded
        o2.revoke()  # F: 3 due ticks dropped with the authority
        rt.dispatch()
        assert runs["a"] == [(1, 3, 2)]
        assert runs["b"] == [(1, 2, 1), (2, 3, 0)]  # B's backlog follows at once
        assert runs["c"] == [(1, 1, 0)]
        assert runs["e"] == [(1, 1, 0)]
        assert "d" not in runs and "f" not in runs
        ran = [n for n in ("x", "y") if n in runs]
        assert len(ran) == 1  # the first of the pair cancelled the other's record
        survivor, victim = pair[ran[0]], pair["y" if ran[0] == "x" else "x"]
        assert runs[ran[0]] == [(1, 3, 2)]
        assert victim.cancel(timeout=1) is st.EndReason.CANCELLED
        assert f.cancel(timeout=1) is st.EndReason.REVOKED
        assert len(errors) == 1

        g = o1.every(10 * MS, lambda t: note("g", t), key=6)  # first due at t=45
        rt.advance(10 * MS)  # t=45: A 4, B 4, C 2, G 1, survivor 4 ready
        g2 = o1.every(10 * MS, lambda t: note("g", t), key=6)  # G: 1 due tick discarded
        assert g.cancel(timeout=1) is st.EndReason.SUPERSEDED  # its recorded result
        rt.dispatch()
        assert "g" not in runs
        # C ended when its failed tick completed: cancel gives the recorded result
        assert c.cancel(timeout=1) is st.EndReason.CANCELLED
        assert runs["c"] == [(1, 1, 0), (2, 2, 0)]
        assert len(errors) == 2

        mid = rt.stats()
        assert mid.live_timers == 4  # A, B, survivor, G2
        assert mid.ticks_due == 3 + 3 + 3 + 1 + 2 + 1  # D, F, victim, G, C, E
        assert mid.completed_ok == 8 and mid.completed_failed == 2

        rt.advance(10 * MS)  # t=55: A 5, B 5, survivor 5, G2 1 ready, never dispatched
        assert (a.is_live, b.is_live, survivor.is_live, g2.is_live) == (True,) * 4
    finally:
        rt.close()

    s = rt.stats()  # readable after close: every generation has ended
    assert s.live_timers == 0
    assert s.registered == 10
    assert s.ended == s.registered
    assert _identity_holds(s), s
    assert s.ticks_due > 0
    assert s.ticks_discarded > 0
    assert s.ticks_skipped > 0
    assert s.ticks_dropped_authority > 0
    # A 5 + B 5 + C 2 + D 3 + E 1 + F 3 + X/Y 3 + 5 + G 1 + G2 1
    assert s.ticks_due == 29
    assert s.completed_ok == 8  # A3 C1 E1 B3 pair3 | A4 B4 pair4
    assert s.completed_failed == 2  # B2 | C2
    assert s.ticks_skipped == 5  # A 2, B 1, survivor 2
    assert s.ticks_dropped_authority == 3  # F
    assert s.ticks_discarded == 11  # D 3, victim 3, G 1 | closed: A, B, survivor, G2
    per_timer = [t.stats() for t in (a, b, c, survivor)]
    assert sum(t.skipped_ticks for t in per_timer) == s.ticks_skipped
    assert sum(t.failed for t in per_timer) == s.completed_failed


def test_blocking_cancel_of_an_idle_timer_never_wakes_the_scheduler():
    # Real clock: the scheduler sleeps until the earliest deadline, an hour away.
    with st.Runtime() as rt:
        owner = rt.owner(1)
        timers = [owner.after(3600, lambda tick: None, key=k) for k in range(200)]
        # the first registration woke the scheduler (an earlier deadline); let it settle
        before = rt.stats()
        for _ in range(100):
            time.sleep(0.02)
            settled, before = before, rt.stats()
            if settled.wakeups == before.wakeups:
                break
        for t in timers:
            assert t.cancel(timeout=10) is st.EndReason.CANCELLED
        after = rt.stats()
        assert after.ended - before.ended == 200
        # each cancel ended its timer on the calling thread
        assert after.wakeups == before.wakeups
        assert after.scheduler_wakes_by_hosts == before.scheduler_wakes_by_hosts
