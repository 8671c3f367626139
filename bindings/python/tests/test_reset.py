"""`Timer.reset(delay)` from the outside: the new generation keeps the key, handler,
`on_release`, period and policy and is first due `delay` from the reset; the old one ends
SUPERSEDED (T1); `on_release` runs exactly once, when the last generation of the chain
ends, whether each reset took the slot in place or (from inside the handler) registered
beside it; and resets racing the delivering thread, cancels and a close lose nothing and
free every handler. Public API only; every wait has a deadline."""
import random
import threading
import time

import pytest

import spot_timer as st
from conftest import step

DEADLINE = 20.0


def test_a_reset_keeps_the_timer_and_moves_its_due_time(manual):
    ticks, released = [], []
    t = manual.owner(1).every(0.010, ticks.append, key="conn-7", on_release=lambda: released.append(1))
    held = manual.held_python_objects()
    new = t.reset(5.0)
    assert t.result() is st.EndReason.SUPERSEDED and not t.is_live
    assert new.is_live and new.key == "conn-7" and new.owner_id == 1
    assert manual.held_python_objects() == held, "nothing new is held for a reset"
    step(manual, 4.99)
    assert ticks == [], "nothing due before the reset's delay"
    step(manual, 0.01)
    assert [(k.delivery_index, k.key) for k in ticks] == [(1, "conn-7")], "T4: its own indexes"
    step(manual, 0.010)
    assert len(ticks) == 2, "the period was kept"
    # Resetting the reset: still one timer, one handler.
    newer = new.reset(1.0)
    assert new.result() is st.EndReason.SUPERSEDED
    assert released == [], "on_release waits for the chain's end"
    assert newer.cancel() is st.EndReason.CANCELLED
    assert released == [1], "on_release ran once, at the chain's end"
    assert manual.held_python_objects() == held - 2  # the handler and on_release went


def test_a_one_shot_reset_fires_once_at_its_new_time(manual):
    fired = []
    t = manual.owner(1).after(1.0, fired.append)
    for _ in range(300):  # past a slot's run of in-place generations
        t = t.reset(2.0)
    step(manual, 1.5)
    assert fired == []
    step(manual, 0.5)
    assert len(fired) == 1
    assert t.result() is st.EndReason.COMPLETED


def test_a_handler_resets_its_own_timer_while_it_runs():
    """The running generation cannot be moved in place: the new one is registered beside
    it and the old one ends when its handler returns; the handler and on_release stay."""
    released = threading.Event()
    runs = []
    done = threading.Event()
    box = {}

    def handler(tick):
        runs.append(tick.delivery_index)
        if len(runs) < 5:
            box["t"] = box["t"].reset(0.001)  # each reset: a new generation, index 1 again
        else:
            done.set()

    with st.Runtime() as rt:
        box["t"] = rt.owner(1).after(0.001, handler, on_release=released.set)
        assert done.wait(DEADLINE), f"the handler ran {len(runs)} times"
        assert runs == [1, 1, 1, 1, 1]
        deadline = time.monotonic() + DEADLINE
        while not released.is_set() and time.monotonic() < deadline:
            time.sleep(0.001)
        assert released.is_set(), "the last one-shot completed: the chain's on_release ran"
        assert rt.held_python_objects() == 0


def test_bad_resets_raise_readable_errors(manual):
    t = manual.owner(1).every(1.0, lambda tick: None)
    with pytest.raises(st.InvalidDurationError, match="delay"):
        t.reset(-1)
    with pytest.raises(st.ArgumentTypeError):
        t.reset("soon")
    assert t.is_live, "a refused reset changes nothing"
    t.cancel()
    with pytest.raises(st.StaleHandleError):
        t.reset(1.0)
    live = manual.owner(2).every(1.0, lambda tick: None)
    manual.close()
    with pytest.raises(st.RuntimeClosedError):
        live.reset(1.0)


def test_resets_race_delivery_cancels_and_close():
    """Many short timers; a thread resets them at varying delays, another cancels some;
    the dispatcher delivers (and some handlers reset themselves). Every chain's on_release
    runs exactly once and every handler is freed once the runtime closed."""
    rng = random.Random(11)
    total_handler_resets = 0
    for rnd in range(20):
        released = {}
        lock = threading.Lock()
        errors = []

        def on_release(n):
            def f():
                with lock:
                    released[n] = released.get(n, 0) + 1
            return f

        rt = st.Runtime()
        timers = {}
        handler_resets = [0]
        owner = rt.owner(1, gate=st.GateMode.CONCURRENT)
        for n in range(64):
            def h(tick, n=n):
                if tick.delivery_index % 3 == 0:
                    try:
                        timers[n] = timers[n].reset(0.0005)
                        handler_resets[0] += 1
                    except st.StaleHandleError:
                        pass
            timers[n] = owner.every(0.0003 + n * 0.00001, h, key=n, on_release=on_release(n))
        stop = threading.Event()

        def resetter():
            r = random.Random(rnd)
            while not stop.is_set():
                n = r.randrange(64)
                try:
                    timers[n] = timers[n].reset(r.random() * 0.001)
                except st.StaleHandleError:
                    pass
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)
                time.sleep(r.random() * 0.0002)

        def canceller():
            r = random.Random(rnd + 100)
            while not stop.is_set():
                try:
                    timers[r.randrange(64)].cancel_nowait()
                except st.StaleHandleError:
                    pass  # an old handle whose slot a later timer took
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)
                time.sleep(r.random() * 0.002)

        threads = [threading.Thread(target=resetter), threading.Thread(target=canceller)]
        for th in threads:
            th.start()
        time.sleep(0.05 + rng.random() * 0.05)
        stop.set()
        for th in threads:
            th.join(DEADLINE)
            assert not th.is_alive()
        rt.close()
        assert errors == [], errors
        assert sorted(released) == list(range(64)), f"round {rnd}: chains without a release"
        assert all(c == 1 for c in released.values()), f"round {rnd}: {released}"
        assert rt.held_python_objects() == 0
        total_handler_resets += handler_resets[0]
    assert total_handler_resets > 0, "no handler reset its own running timer"
