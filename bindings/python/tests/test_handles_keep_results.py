"""A `Timer` keeps its generation's result as long as it lives, from the outside: timers end
every way there is (cancelled, completed, superseded by a registration and by a reset,
their owner released, the runtime closed), then 100,000 registrations and cancels on this
thread and on another reuse every free slot, and each old `Timer` still reads its original
end. Public API only; every wait has a deadline."""
import threading

import spot_timer as st
from conftest import step

CHURN = 100_000


def churn(rt, first_owner):
    """CHURN registrations and cancels, half here and half on another thread."""

    def run(owner_id):
        o = rt.owner(owner_id)
        for i in range(CHURN // 2):
            assert o.after(3600.0, lambda _t: None, key=i).cancel() is st.EndReason.CANCELLED
        o.release()

    other = threading.Thread(target=run, args=(first_owner + 1,))
    other.start()
    run(first_owner)
    other.join(timeout=120)
    assert not other.is_alive(), "the other thread's churn did not finish in 120 s"


def test_every_timer_reads_its_original_end_after_a_hundred_thousand_registrations(manual):
    expected = []
    o = manual.owner(1)
    t = o.after(3600.0, lambda _t: None, key="cancelled")
    assert t.cancel() is st.EndReason.CANCELLED
    expected.append(("cancelled", t, st.EndReason.CANCELLED))
    t = o.after(0.001, lambda _t: None, key="completed")
    step(manual, 0.002)
    expected.append(("completed", t, st.EndReason.COMPLETED))
    t = o.after(3600.0, lambda _t: None, key="again")
    again = o.after(3600.0, lambda _t: None, key="again")
    expected.append(("superseded by a registration", t, st.EndReason.SUPERSEDED))
    t = o.every(60.0, lambda _t: None, key="reset")
    moved = t.reset(30.0)
    expected.append(("superseded by a reset", t, st.EndReason.SUPERSEDED))
    assert moved.cancel() is st.EndReason.CANCELLED
    expected.append(("the reset's generation, cancelled", moved, st.EndReason.CANCELLED))
    assert again.cancel() is st.EndReason.CANCELLED
    gone = manual.owner(2)
    t = gone.every(60.0, lambda _t: None)
    gone.revoke()
    expected.append(("revoked", t, st.EndReason.REVOKED))

    churn(manual, 100)
    for how, timer, reason in expected:
        assert timer.result() is reason, f"{how}: {timer.result()!r}"
        assert timer.cancel() is reason, f"{how}: a cancel answers the same"


def test_a_timer_keeps_its_result_after_its_runtime_closed():
    rt = st.Runtime(st.ManualClock(), dispatch="manual")
    t = rt.owner(1).after(3600.0, lambda _t: None)
    rt.close()
    assert t.result() is st.EndReason.RUNTIME_CLOSED
    assert t.cancel() is st.EndReason.RUNTIME_CLOSED

