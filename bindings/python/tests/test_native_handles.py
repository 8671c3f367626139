"""Owner and Timer are native objects: a timer handle holds no Python object that could lead
back to itself (it is not tracked by the garbage collector), keys come back as given, and a
cancel whose result is known at once needs no round trip."""
import enum
import gc
import weakref

import spot_timer as st
from conftest import MS, step


class Color(enum.IntEnum):
    RED = 1


def test_timer_handles_are_not_tracked_by_the_collector(manual):
    timer = manual.owner(1).after(10 * MS, lambda t: None)
    assert not gc.is_tracked(timer)
    assert timer.runtime is manual


def test_keys_come_back_as_given(manual):
    owner = manual.owner(1)

    class Spot:
        pass

    spot = Spot()
    keys = ["poll", b"raw", 2.5, ("a", 1), Color.RED, 7, spot, None]
    timers = [owner.every(10 * MS, lambda t: None, key=k) for k in keys]
    for k, t in zip(keys, timers):
        if k is None:
            assert isinstance(t.key, int) and t.key >= 2**63
        else:
            assert t.key is k or t.key == k
            assert type(t.key) is type(k)
    assert timers[6].key is spot
    # A re-registration of an object key supersedes the timer of that key.
    again = owner.every(10 * MS, lambda t: None, key=spot)
    assert timers[6].result() == st.EndReason.SUPERSEDED
    assert again.key is spot


def test_cycle_through_an_object_key_is_collected():
    clock = st.ManualClock()

    class Spot:
        pass

    def make():
        rt = st.Runtime(clock, dispatch="manual")
        spot = Spot()
        # spot -> timer -(key)-> spot: the key is kept by the runtime, where the collector
        # sees it.
        spot.timer = rt.owner(1).every(10 * MS, lambda tick: None, key=spot)
        spot.rt = rt
        return weakref.ref(spot), weakref.ref(rt)

    spot_ref, rt_ref = make()
    gc.collect()
    assert spot_ref() is None
    assert rt_ref() is None


def test_cancel_of_an_idle_timer_resolves_at_once(manual):
    owner = manual.owner(1)
    timer = owner.after(1.0, lambda t: None)
    fut = timer.cancel_nowait()
    assert fut.done()
    assert fut.result(timeout=0) == st.EndReason.CANCELLED
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.result()))
    assert seen == [st.EndReason.CANCELLED]
    # Every later caller sees the same terminal result (T2).
    assert timer.cancel() == st.EndReason.CANCELLED
    assert timer.cancel_nowait().result(timeout=0) == st.EndReason.CANCELLED


def test_cancel_of_a_timer_whose_record_is_held_resolves_when_it_completes(manual):
    owner = manual.owner(1)
    results = []

    def handler(tick):
        fut = timer.cancel_nowait()  # inside its own handler: ends when the handler returns
        results.append(fut.done())
        fut.add_done_callback(lambda f: results.append(f.result()))

    timer = owner.every(10 * MS, handler)
    step(manual, 10 * MS)
    step(manual, 0)
    assert results == [False, st.EndReason.CANCELLED]


def test_owner_and_timer_reprs_and_attributes(manual):
    owner = manual.owner(5, lease=1.0)
    timer = owner.every(0.5, lambda t: None, key="k")
    assert repr(owner) == f"<spot_timer.Owner id=5 epoch={owner.epoch}>"
    assert repr(timer) == "<spot_timer.Timer owner=5 key='k' live=True>"
    assert owner.runtime is manual and timer.owner_id == 5
    assert weakref.ref(timer)() is timer and weakref.ref(owner)() is owner
    timer.cancel()
    assert repr(timer) == "<spot_timer.Timer owner=5 key='k' live=False>"


def test_tick_key_is_the_key_as_given(manual):
    owner = manual.owner(1)

    class Spot:
        pass

    spot = Spot()
    seen = {}
    keys = ["poll", ("a", 1), Color.RED, 7, spot]
    for i, k in enumerate(keys):
        owner.every(10 * MS, lambda tick, i=i: seen.setdefault(i, tick), key=k)
    auto = owner.every(10 * MS, lambda tick: seen.setdefault("auto", tick))
    step(manual, 10 * MS)
    for i, k in enumerate(keys):
        assert seen[i].key is k or (seen[i].key == k and type(seen[i].key) is type(k))
    assert seen[4].key is spot
    assert seen["auto"].key == auto.key and isinstance(seen["auto"].key, int)
    # ticks compare by owner, key and indices; they hash alike
    assert seen[0] == seen[0] and hash(seen[0]) == hash(seen[0])
    assert seen[0] != seen[1]
